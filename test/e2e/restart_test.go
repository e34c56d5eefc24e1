//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestExternalDNSRestart_KeepsTheZoneWithEitherFilter: ExternalDNS restarted while the cluster holds
// DNSEndpoints annotated for other controllers (every cluster of the architecture does: one per
// regional zone) keeps the zone as it is, whether it selects its DNSEndpoints by annotation alone
// or by label. Publication verification found that v0.22.0 started with only --annotation-filter
// in that situation read none of its own DNSEndpoints and, with --policy=sync, deleted every record
// it owned (they came back only when their DNSEndpoints changed); v0.23.0 fixed it
// (kubernetes-sigs/external-dns#6728). --label-filter=router.io/controller=<name> stays recommended:
// the API server then sends each instance only its own DNSEndpoints, and it is what every version
// needs. The test fails with v0.22.0 (E2E_EXTERNAL_DNS_BINARY pointing at it): the record is deleted.
func TestExternalDNSRestart_KeepsTheZoneWithEitherFilter(t *testing.T) {
	ctx := t.Context()
	zones, err := framework.StartRegionalZones(ctx, t, worldDomain, "frc")
	if err != nil {
		t.Fatal(err)
	}
	zone := zones["frc"]
	cl, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "restart"})
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(ctx, t, cl.Client, "central")
	mine := dnsEndpoint("central", "portal-frc", "external-dns-frc", "portal.example.com", "A", "10.0.0.1")
	other := dnsEndpoint("central", "portal-neu", "external-dns-neu", "portal.example.com", "A", "10.0.0.2")
	labelled := framework.ExternalDNSOptions{Name: "external-dns-frc", OwnerID: "external-dns-frc-aks01", TXTPrefix: "frc-d-"}.ForBind(zone)
	annotationOnly := labelled
	annotationOnly.AnnotationFilterOnly = true
	published := []string{"A 10.0.0.1"}

	// restart stops ed and starts ExternalDNS with opts; it returns once the new instance has
	// completed a synchronization, i.e. acted on what it saw.
	restart := func(ed *framework.ExternalDNS, opts framework.ExternalDNSOptions) *framework.ExternalDNS {
		t.Helper()
		if err := ed.Stop(); err != nil {
			t.Fatal(err)
		}
		ed, err := cl.StartExternalDNS(ctx, t, opts)
		if err != nil {
			t.Fatal(err)
		}
		return ed
	}

	ed, err := cl.StartExternalDNS(ctx, t, annotationOnly)
	if err != nil {
		t.Fatal(err)
	}
	at := create(ctx, t, cl.Client, mine)
	create(ctx, t, cl.Client, other)
	waitAnswer(ctx, t, at, zone.Query("portal.example.com", "A"), published, ed.Diagnostics)

	ed = restart(ed, annotationOnly)
	if err := ed.WaitForSyncSince(ctx, time.Now(), syncTimeout); err != nil {
		t.Fatal(err)
	}
	if ans := framework.MustDig(ctx, t, zone.Query("portal.example.com", "A")); !framework.SameRecords(ans, published) {
		t.Errorf("restarted with only --annotation-filter: want the record kept, the zone answers %s\n%s", ans, ed.Diagnostics())
	}

	ed = restart(ed, labelled)
	waitAnswer(ctx, t, time.Now(), zone.Query("portal.example.com", "A"), published, ed.Diagnostics)
	ed = restart(ed, labelled)
	since := time.Now()
	if err := ed.WaitForSyncSince(ctx, since, syncTimeout); err != nil {
		t.Fatal(err)
	}
	if ans := framework.MustDig(ctx, t, zone.Query("portal.example.com", "A")); !framework.SameRecords(ans, published) {
		t.Errorf("restarted with --label-filter: want the record kept, the zone answers %s\n%s", ans, ed.Diagnostics())
	}
}
