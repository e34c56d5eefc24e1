//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestExternalDNSRegionalZones proves the harness end to end: one cluster, two regional zones of
// the same domain (two named servers), one ExternalDNS per region selecting DNSEndpoints by the
// controller annotation. DNSEndpoints for external-dns-weu appear in the weu zone only, resolve as
// CNAME -> A, and disappear when deleted.
func TestExternalDNSRegionalZones(t *testing.T) {
	ctx := t.Context()
	const (
		zone    = "example.com"
		ns      = "myapp"
		service = "api-ns-d-dev-myapp.example.com"
		gateway = "aks01-weu-internal.example.com"
		lbIP    = "10.1.2.3"
	)

	cluster, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "aks01-weu"})
	if err != nil {
		t.Fatal(err)
	}
	zones, err := framework.StartRegionalZones(ctx, t, zone, "weu", "neu")
	if err != nil {
		t.Fatal(err)
	}
	weu, neu := zones["weu"], zones["neu"]
	eds, err := cluster.StartRegionalExternalDNS(ctx, t, zones, func(region string) string { return region + "-p-aks01-" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	edWEU, edNEU := eds["weu"], eds["neu"]
	t.Logf("named weu on 127.0.0.1#%d, named neu on 127.0.0.1#%d", weu.Port, neu.Port)
	t.Logf("external-dns-weu: %s", strings.Join(edWEU.Args, " "))
	diag := []func() string{edWEU.Diagnostics, edNEU.Diagnostics, weu.Diagnostics, neu.Diagnostics}

	createNamespace(ctx, t, cluster.Client, ns)
	cname := dnsEndpoint(ns, "api-external-dns-weu", "external-dns-weu", service, "CNAME", gateway)
	arec := dnsEndpoint(ns, "gateway-external-dns-weu", "external-dns-weu", gateway, "A", lbIP)
	created := create(ctx, t, cluster.Client, cname)
	create(ctx, t, cluster.Client, arec)

	// The authoritative server returns the CNAME and, its target being in the zone, the A record.
	waitAnswer(ctx, t, created, weu.Query(service, "A"), []string{"CNAME " + gateway + ".", "A " + lbIP}, diag...)
	waitAnswer(ctx, t, created, weu.Query(gateway, "A"), []string{"A " + lbIP}, diag...)
	if got := framework.MustDig(ctx, t, weu.Query(service, "CNAME")); !framework.SameRecords(got, []string{"CNAME " + gateway}) {
		t.Errorf("weu %s CNAME = %s, want the CNAME alone", service, got)
	}

	// external-dns-neu must have ignored both: once it has completed a synchronization that
	// started after the DNSEndpoints existed, its zone must still be empty.
	if err := edNEU.WaitForSyncSince(ctx, time.Now(), syncTimeout); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{service, gateway} {
		if got := framework.MustDig(ctx, t, neu.Query(name, "A")); len(got.Records) != 0 || got.Status != "NXDOMAIN" {
			t.Errorf("neu zone answers %s A with %s, want NXDOMAIN: the annotation filter let external-dns-neu publish external-dns-weu's record", name, got)
		}
	}
	if recs := framework.LogZone(ctx, t, "after create", neu); len(recs) != 0 {
		t.Errorf("neu zone has %d records, want none", len(recs))
	}

	// Ownership records: one TXT per managed record, named <prefix><type>-<name>.
	recs := framework.LogZone(ctx, t, "after create", weu)
	for _, txt := range []string{"weu-p-aks01-cname-api-ns-d-dev-myapp.example.com.", "weu-p-aks01-a-aks01-weu-internal.example.com."} {
		if !framework.HasRecord(recs, txt, "TXT", "external-dns/owner=external-dns-weu") {
			t.Errorf("weu zone lacks ownership TXT %s with owner external-dns-weu", txt)
		}
	}

	// Deleting the CNAME's DNSEndpoint removes the CNAME (policy sync) and its TXT, and leaves
	// the A record.
	deleted := remove(ctx, t, cluster.Client, cname)
	waitAnswer(ctx, t, deleted, weu.Query(service, "A"), nil, diag...)
	if got := framework.MustDig(ctx, t, weu.Query(service, "A")); got.Status != "NXDOMAIN" {
		t.Errorf("weu %s A after delete = %s, want NXDOMAIN", service, got)
	}
	waitAnswer(ctx, t, deleted, weu.Query("weu-p-aks01-cname-api-ns-d-dev-myapp.example.com", "TXT"), nil, diag...)
	if got := framework.MustDig(ctx, t, weu.Query(gateway, "A")); !framework.SameRecords(got, []string{"A " + lbIP}) {
		t.Errorf("weu %s A after deleting the CNAME = %s, want A %s", gateway, got, lbIP)
	}
	framework.LogZone(ctx, t, "after deleting the CNAME DNSEndpoint", weu)
}

// TestOperatorStartsAndStops checks that the harness runs the operator binary against a cluster:
// it becomes ready and shuts down cleanly on SIGTERM.
func TestOperatorStartsAndStops(t *testing.T) {
	ctx := t.Context()
	cluster, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	op, err := cluster.StartOperator(ctx, nil, framework.OperatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("operator ready on 127.0.0.1:%d/readyz in %s", op.HealthPort, time.Since(start).Round(time.Millisecond))
	if err := op.Stop(); err != nil {
		t.Fatalf("stopping the operator: %v\n%s", err, op.Diagnostics())
	}
	if op.Running() {
		t.Fatal("operator still running after Stop")
	}
}
