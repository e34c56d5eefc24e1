//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestFailover_DrainMovesNamesAndBringsThemBack is a planned failover, as OPERATOR-GUIDE's
// "Draining a region" does it, with the real ExternalDNS and BIND (TSIG) and both operators: every
// gateway answers every probe throughout. aks01 (weu) owns the team's name and another team's,
// whose policy lists no stand-ins; the team's policy keeps the default failback, Manual.
//
//  1. Drain: aks01's dns-config says spec.failover.drain: true. aks02 judges weu Drained
//     (DrainRequested) and takes the team's name, a direct switch watched with dig every 50 ms;
//     the other team's name stays. aks01's Drained condition says DrainComplete; both clusters
//     record Events.
//  2. Undrain: drain back to false. aks01 takes the name back, though the policy's failback is
//     Manual (a drain, not a loss, moved it): a direct switch again; aks01's condition goes (Event
//     DrainEnded), aks02 says weu Serving and holds nothing, its mark gone.
//
// The DNSEndpoints keep their UIDs throughout, and the zone keeps every record.
func TestFailover_DrainMovesNamesAndBringsThemBack(t *testing.T) {
	ctx := t.Context()
	const controller = failoverController
	w, zone := startBindFailoverWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	diag := func() []func() string { return append(w.diagnostics(), zone.Diagnostics) }
	// Both clusters probe each other where both gateways listen: no partition, every region serves.
	for _, m := range []*failoverMember{aks01, aks02} {
		updateConfig(ctx, t, m, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.ProbePort = ptr.To(int32(w.port)) })
	}
	name, otherName := w.hostname(failoverNS), w.hostname(failoverOtherNS)
	chain, direct := w.chain, w.direct
	q, otherQ := zone.Query(name, "A"), zone.Query(otherName, "A")
	at := w.publish(aks01)
	waitAnswer(ctx, t, at, q, chain(aks01), diag()...)
	at = w.publish(aks02)
	waitSyncs(ctx, t, at, aks01.ed, aks02.ed)
	waitRegion(ctx, t, aks02, "weu", "Serving", "GatewayAnswers", diag)
	uids := endpointUIDs(ctx, t, aks01, aks02)

	// 1. Drain.
	drained := time.Now()
	updateConfig(ctx, t, aks01, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.Drain = true })
	tr, err := framework.Converge(ctx, q, framework.Resolves(chain(aks02)...), 2*convergeTimeout, 50*time.Millisecond, diag()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1. drain: %s answers aks02's gateway %s after aks01's dns-config asked for the drain; seen: %s", name, time.Since(drained).Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, chain(aks01)) {
		t.Errorf("1. want a direct switch from aks01's gateway to aks02's, seen: %s", tr)
	}
	waitRegion(ctx, t, aks02, "weu", "Drained", "DrainRequested", diag)
	waitDrainedCondition(ctx, t, aks01, clusterv1alpha1.ReasonDrainComplete)
	waitDNSConfigEvent(ctx, t, aks02, "RegionDrained")
	waitDNSConfigEvent(ctx, t, aks02, "NameTakenOver")
	waitDNSConfigEvent(ctx, t, aks01, clusterv1alpha1.ReasonDrainComplete)
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
		t.Fatal(err)
	}
	if got := takenNames(cfg, "weu", controller); got != 1 {
		t.Errorf("1. aks02's dns-config says it took %d names in %s from weu, want 1: %+v", got, controller, cfg.Status.Failover)
	}
	stable(t, "1. drained: the team's name with aks02, the other team's (no stand-ins) with aks01",
		[]framework.Query{q, otherQ}, [][]string{chain(aks02), direct(aks01)}, aks01.ed, aks02.ed)

	// 2. Undrain: the names come back, the policy's failback Manual notwithstanding.
	undrained := time.Now()
	updateConfig(ctx, t, aks01, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.Drain = false })
	tr, err = framework.Converge(ctx, q, framework.Resolves(chain(aks01)...), 2*convergeTimeout, 50*time.Millisecond, diag()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2. undrain: %s answers aks01's gateway again %s after the drain ended; seen: %s", name, time.Since(undrained).Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, chain(aks02)) {
		t.Errorf("2. want a direct switch back from aks02's gateway to aks01's, seen: %s", tr)
	}
	waitDrainedCondition(ctx, t, aks01, "")
	waitDNSConfigEvent(ctx, t, aks01, "DrainEnded")
	waitRegion(ctx, t, aks02, "weu", "Serving", "GatewayAnswers", diag)
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "aks02 to hold nothing and its mark to go", func(ctx context.Context) (bool, string, error) {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
			return false, "", err
		}
		n, mark := takenNames(cfg, "weu", controller), endpointAnnotation(ctx, t, aks02, failoverNS, "api-route-"+controller, naming.AnnotationTakenFrom)
		return n == 0 && mark == "", fmt.Sprintf("%d taken, marked as taken from %q", n, mark), nil
	})
	if err != nil {
		t.Error(err)
	}
	stable(t, "2. back home", []framework.Query{q, otherQ}, [][]string{chain(aks01), direct(aks01)}, aks01.ed, aks02.ed)
	if after := endpointUIDs(ctx, t, aks01, aks02); !slices.Equal(after, uids) {
		t.Errorf("the DNSEndpoints were replaced: UIDs %v, then %v", uids, after)
	}
	w.assertAllHome(t, "2. at the end", zone)
}

// updateConfig changes m's dns-config, retrying on conflicts (the operator writes its status).
func updateConfig(ctx context.Context, t testing.TB, m *failoverMember, change func(*clusterv1alpha1.DNSConfiguration)) {
	t.Helper()
	if err := framework.Change(ctx, m.cl.Client, &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dns-config"}}, change); err != nil {
		t.Fatalf("updating %s's dns-config: %v", m.cluster, err)
	}
}

// setFailback sets m's failover policy's failback, retrying on conflicts (the operator writes its
// status).
func setFailback(ctx context.Context, t testing.TB, m *failoverMember, failback routingv1alpha1.FailbackMode) {
	t.Helper()
	p := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: failoverNS, Name: "dns"}}
	if err := framework.Change(ctx, m.cl.Client, p, func(p *routingv1alpha1.DNSPolicy) { p.Spec.Failover.Failback = failback }); err != nil {
		t.Fatalf("setting %s's failback to %s: %v", m.cluster, failback, err)
	}
}

// endpointUIDs are the UIDs of the api route's DNSEndpoints of the team's namespace in each member.
func endpointUIDs(ctx context.Context, t testing.TB, members ...*failoverMember) []types.UID {
	t.Helper()
	var out []types.UID
	for _, m := range members {
		// The operator writes a member's DNSEndpoint once it has reconciled the route: a test
		// that reads the UIDs right after publishing may come first, so wait for it to exist.
		ep := &externaldnsv1alpha1.DNSEndpoint{}
		err := framework.Poll(ctx, convergeTimeout, 100*time.Millisecond, m.cluster+"'s DNSEndpoint of the api route", func(ctx context.Context) (bool, string, error) {
			err := m.cl.Client.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: "api-route-" + failoverController}, ep)
			if apierrors.IsNotFound(err) {
				return false, err.Error(), nil
			}
			return err == nil, "", err
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ep.UID)
	}
	return out
}

// waitDrainedCondition waits until m's dns-config has the Drained condition of reason ("": none).
func waitDrainedCondition(ctx context.Context, t testing.TB, m *failoverMember, reason string) {
	t.Helper()
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, fmt.Sprintf("%s's Drained condition to be %q", m.cluster, reason), func(ctx context.Context) (bool, string, error) {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		if err := m.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
			return false, "", err
		}
		c := meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionDrained)
		if c == nil {
			return reason == "", "no Drained condition", nil
		}
		return c.Reason == reason, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitDNSConfigEvent waits for an Event of reason regarding m's dns-config.
func waitDNSConfigEvent(ctx context.Context, t testing.TB, m *failoverMember, reason string) {
	t.Helper()
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, fmt.Sprintf("an Event %s on %s's dns-config", reason, m.cluster), func(ctx context.Context) (bool, string, error) {
		list := &eventsv1.EventList{}
		if err := m.cl.Client.List(ctx, list); err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "DNSConfiguration" && e.Regarding.Name == "dns-config" {
				if e.Reason == reason {
					return true, "", nil
				}
				seen = append(seen, e.Reason)
			}
		}
		return false, fmt.Sprintf("seen: %v", seen), nil
	})
	if err != nil {
		t.Error(err)
	}
}
