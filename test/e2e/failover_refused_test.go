//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestFailover_ARefusedTakeoverMovesNothingUntilTheZoneTakesIt is the zone refusing the stand-in's
// ownership write at takeover, in the AKS world (the Azure stand-in, both clusters' real
// ExternalDNS with the chart's arguments): aks02's operator authenticates as a principal of its
// own, whose role on the zone is cut to Reader just before aks01 is lost, so that Resource Manager
// answers its writes 403 AuthorizationFailed, as when a role assignment is removed.
//
//  1. Refused: aks02 judges weu Lost and tries to move the name every round. Nothing is half done:
//     the intermediate's CNAME stays aks01's. aks02's dns-config says, in weu's
//     status, that the zone refused the write and why, and an OwnershipPassRefused Event does.
//  2. The role restored: the next round's write rewrites the intermediate's CNAME record set in
//     place; the status no longer speaks of a refusal.
func TestFailover_ARefusedTakeoverMovesNothingUntilTheZoneTakesIt(t *testing.T) {
	ctx := t.Context()
	const controller = failoverController
	const operator02, secret02 = "aks02-service-router", "aks02-secret"
	z := startAzureExampleZone(t, controller)
	az, sub, group, domain := z.az, z.sub, z.group, z.domain
	az.AddServicePrincipal(operator02, secret02)
	file02, err := az.AzureJSONAs(sub, group, operator02, secret02)
	if err != nil {
		t.Fatal(err)
	}
	w := startFailoverWorld(t, domain, func(m *failoverMember) (clusterv1alpha1.ExternalDNSController, framework.ExternalDNSOptions) {
		if m.cluster == "aks02" {
			return z.failoverZone(controller, m, file02)
		}
		return z.failoverZone(controller, m, z.file)
	})
	aks01, aks02 := w.aks01, w.aks02
	diag := func() []func() string { return append(w.diagnostics(), az.Diagnostics) }
	// The team's name goes through its policy's intermediate name: that is what moves.
	label := strings.TrimSuffix(naming.IntermediateName("internal", failoverNS, "weu", domain), "."+domain)
	// The operators write it: no ExternalDNS ownership record may appear for it.
	records := func() (cname, owner string) {
		r := az.Records(sub, group, domain)
		return strings.Join(r[label+" CNAME"], ","), strings.Join(r[z.prefix+"cname-"+label+" TXT"], ",")
	}
	gw1, gw2 := aks01.target(domain), aks02.target(domain)

	at := w.publish(aks01)
	err = framework.Poll(ctx, convergeTimeout, 100*time.Millisecond, "aks01 to publish", func(context.Context) (bool, string, error) {
		cname, owner := records()
		return cname == gw1 && owner == "", cname + " " + owner, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	w.publish(aks02)
	waitSyncs(ctx, t, at, aks01.ed, aks02.ed)

	// 1. Refused.
	az.SetReadOnly(operator02, true)
	w.lose()
	waitRegion(ctx, t, aks02, "weu", "Lost", "HeartbeatStale", diag)
	waitDNSConfigEvent(ctx, t, aks02, "OwnershipPassRefused")
	var said string
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "aks02's status to say the zone refused", func(ctx context.Context) (bool, string, error) {
		r, err := regionStatusOf(ctx, aks02, "weu")
		said = r.Message
		return err == nil && strings.Contains(r.Message, "zone "+controller+" refused 1 ownership write(s)") && strings.Contains(r.Message, "403 AuthorizationFailed"),
			fmt.Sprintf("%s (%v)", r.Message, err), nil
	})
	if err != nil {
		t.Error(err)
	}
	t.Logf("1. refused: aks02's dns-config says of weu: %s", said)
	// Several rounds (1 s each) of refused writes: nothing of the name changed.
	for range 5 {
		if cname, owner := records(); cname != gw1 || owner != "" {
			t.Fatalf("1. refused, yet the zone changed: CNAME %s, ownership %s", cname, owner)
		}
		time.Sleep(time.Second)
	}
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
		t.Fatal(err)
	}
	if got := takenNames(cfg, "weu", controller); got != 0 {
		t.Errorf("1. aks02 says it took %d names, want 0: the zone refused", got)
	}

	// 2. The role restored.
	restored := time.Now()
	az.SetReadOnly(operator02, false)
	var seen []string
	err = framework.Poll(ctx, 2*convergeTimeout, 50*time.Millisecond, "the CNAME to point at aks02", func(context.Context) (bool, string, error) {
		cname, _ := records()
		if len(seen) == 0 || seen[len(seen)-1] != cname {
			seen = append(seen, cname)
		}
		return cname == gw2, strings.Join(seen, " -> "), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2. the role restored: %s CNAME %s, %s later", label, strings.Join(seen, " -> "), time.Since(restored).Round(time.Millisecond))
	if len(seen) != 2 {
		t.Errorf("2. want the CNAME record set rewritten in place from %s to %s, seen %v (\"\" is absent)", gw1, gw2, seen)
	}
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "aks02's status to hold the name and speak of no refusal", func(ctx context.Context) (bool, string, error) {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
			return false, "", err
		}
		r, err := regionStatusOf(ctx, aks02, "weu")
		if err != nil {
			return false, err.Error(), nil
		}
		n := takenNames(cfg, "weu", controller)
		return n == 1 && !strings.Contains(r.Message, "refused"), fmt.Sprintf("%d taken: %s", n, r.Message), nil
	})
	if err != nil {
		t.Error(err)
	}
}

// regionStatusOf is what m's dns-config says of region, or why it cannot be read.
func regionStatusOf(ctx context.Context, m *failoverMember, region string) (clusterv1alpha1.RegionFailoverStatus, error) {
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if err := m.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
		return clusterv1alpha1.RegionFailoverStatus{}, err
	}
	for _, r := range cfg.Status.Failover {
		if r.Region == region {
			return r, nil
		}
	}
	return clusterv1alpha1.RegionFailoverStatus{}, fmt.Errorf("no status of region %s: %+v", region, cfg.Status.Failover)
}
