//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestExternalDNS_ATransferTimeoutTakesNoName: a zone transfer that times out in the middle (the
// zone's server stalled, the network dropped) leaves every other owner's name as it was. ExternalDNS
// v0.22.0's RFC 2136 provider read such a transfer as an empty zone and added every record it
// publishes, names another owner ID holds included (the CNAME replaced, the ownership TXT record
// given a second value): one cluster taking every name of a zone from the others, outside the
// ownership protocol failover relies on (kubernetes-sigs/external-dns#2071). v0.23.0 (#6652) treats
// the failed transfer as a soft error and skips the synchronization, which is why it is the minimum
// version docs/EXTERNALDNS-INTEGRATION.md ("A zone that stalls") states. The test fails with
// v0.22.0 (E2E_EXTERNAL_DNS_BINARY pointing at it): the name is taken.
func TestExternalDNS_ATransferTimeoutTakesNoName(t *testing.T) {
	ctx := t.Context()
	zone, err := framework.StartBind(ctx, t, framework.BindOptions{Name: "frc", Zone: worldDomain})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "axfr"})
	if err != nil {
		t.Fatal(err)
	}
	const controller, prefix, otherOwner = "external-dns-frc", "frc-d-", "external-dns-frc-aks01"
	name := "portal." + worldDomain
	ownershipName := prefix + "cname-" + name
	// Another cluster's instance holds the name: its CNAME and its ownership record.
	if err := zone.Update(ctx, "update add "+name+". 300 CNAME aks01-weu-internal."+worldDomain+".",
		"update add "+ownershipName+`. 300 TXT "heritage=external-dns,external-dns/owner=`+otherOwner+`,external-dns/resource=crd/central/portal-frc"`); err != nil {
		t.Fatal(err)
	}
	createNamespace(ctx, t, cl.Client, "central")
	create(ctx, t, cl.Client, dnsEndpoint("central", "portal-frc", controller, name, "CNAME", "aks02-neu-internal."+worldDomain))
	ed, err := cl.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: controller, OwnerID: "external-dns-frc-aks02", TXTPrefix: prefix}.ForBind(zone))
	if err != nil {
		t.Fatal(err)
	}
	theirs := []string{"CNAME aks01-weu-internal." + worldDomain + "."}
	waitSyncs(ctx, t, time.Now(), ed)
	if ans := framework.MustDig(ctx, t, zone.Query(name, "CNAME")); !framework.SameRecords(ans, theirs) {
		t.Fatalf("before the stall, the other owner's name is not left alone: %s\n%s", ans, ed.Diagnostics())
	}

	// The zone's server stalls for longer than a transfer may take, and answers again.
	if err := zone.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(8 * time.Second)
	if err := zone.Resume(); err != nil {
		t.Fatal(err)
	}
	waitSyncs(ctx, t, time.Now(), ed)
	cname := framework.MustDig(ctx, t, zone.Query(name, "CNAME"))
	txt := framework.MustDig(ctx, t, zone.Query(ownershipName, "TXT"))
	t.Logf("after the stall: %s -> %s; %s -> %s", name, cname, ownershipName, txt)
	if !strings.Contains(ed.Log(), "AXFR error") {
		t.Fatalf("no transfer failed during the stall: the test did not test anything\n%s", ed.Diagnostics())
	}
	if !framework.SameRecords(cname, theirs) || len(txt.Records) != 1 {
		t.Errorf("a transfer that timed out made ExternalDNS take the other owner's name: want %s with one ownership value, the zone answers %s and %s\n%s",
			theirs, cname, txt, ed.Diagnostics())
	}
}
