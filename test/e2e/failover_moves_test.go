//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// moveNamespaces and moveRoutes size TestFailover_AMoveWritesAConstantPerPolicy: 300 names in 10
// policies.
const moveNamespaces, moveRoutes = 10, 30

// TestFailover_AMoveWritesAConstantPerPolicy is the cost of a takeover as the zone sees it: 300
// names of 10 teams, each team's policy listing neu as stand-in, published by aks01 (weu) and
// aks02 (neu) into the weu zone (BIND, TSIG). aks01 is lost; every name must answer aks02's
// gateway, and between the zone before the loss and after the move the record sets that changed
// (heartbeats aside) are the 10 policies' intermediate names — their CNAME and their ownership
// record — and nothing of the 300 names: the move costs two record writes per policy, whatever
// the names. A move that passed each name (the design before intermediates) changes 600.
func TestFailover_AMoveWritesAConstantPerPolicy(t *testing.T) {
	ctx := t.Context()
	w, zone := startBindFailoverWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	diag := func() []func() string { return append(w.diagnostics(), zone.Diagnostics) }
	var names []string
	intermediates := map[string]string{} // the team's intermediate name, by namespace
	for i := range moveNamespaces {
		ns := fmt.Sprintf("team%02d", i)
		intermediates[ns] = naming.IntermediateName("internal", ns, "weu", w.domain) + "."
		for j := range moveRoutes {
			names = append(names, fmt.Sprintf("svc%02d-ns-%s-dev-%s.%s.", j, worldEnvLetter, ns, w.domain))
		}
	}
	publish := func(m *failoverMember) time.Time {
		at := time.Now()
		for ns := range intermediates {
			createNamespace(ctx, t, m.cl.Client, ns)
			create(ctx, t, m.cl.Client, failoverPolicy(ns, &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}))
			for j := range moveRoutes {
				create(ctx, t, m.cl.Client, &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("svc%02d", j)},
					Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: fmt.Sprintf("svc%02d", j), GatewayName: gatewayName, GatewayNamespace: gatewayNamespace,
						Environment: "dev", Application: ns}})
			}
		}
		return at
	}
	// served waits until every name goes through its team's intermediate name and every
	// intermediate points at m's gateway, and returns the zone then.
	served := func(step string, m *framework.BindServer, by *failoverMember, timeout time.Duration) []framework.Record {
		t.Helper()
		var recs []framework.Record
		err := framework.Poll(ctx, timeout, 250*time.Millisecond, step, func(ctx context.Context) (bool, string, error) {
			var err error
			if recs, err = m.ZoneRecords(ctx); err != nil {
				return false, err.Error(), nil
			}
			cnames := map[string]string{}
			for _, r := range recs {
				if r.Type == "CNAME" {
					cnames[r.Name] = r.Data
				}
			}
			wrong := 0
			for _, n := range names {
				ns := n[strings.LastIndex(n[:len(n)-len(w.domain)-2], "-")+1 : len(n)-len(w.domain)-2]
				if cnames[n] != intermediates[ns] || cnames[intermediates[ns]] != by.target(w.domain)+"." {
					wrong++
				}
			}
			return wrong == 0, fmt.Sprintf("%d of %d names not through their intermediate to %s", wrong, len(names), by.cluster), nil
		})
		if err != nil {
			t.Fatalf("%v%s", err, diagnose(diag()))
		}
		return recs
	}

	at := publish(aks01)
	served("aks01 publishes 300 names", zone, aks01, 3*convergeTimeout)
	t.Logf("aks01's 300 names through 10 intermediates %s after the first create", time.Since(at).Round(time.Millisecond))
	at = publish(aks02)
	waitSyncs(ctx, t, at, aks01.ed, aks02.ed)
	waitSyncs(ctx, t, time.Now(), aks01.ed, aks02.ed)
	waitRegion(ctx, t, aks02, "weu", "Unreachable", "WitnessSaysAlive", diag)
	before := served("both publish", zone, aks01, convergeTimeout)

	lost := w.lose()
	waitRegion(ctx, t, aks02, "weu", "Lost", "HeartbeatStale", diag)
	judged := time.Now()
	after := served("every name to answer aks02", zone, aks02, 2*convergeTimeout)
	moved := time.Now()
	changed := changedRecordSets(before, after)
	t.Logf("aks01 lost: judged lost %s after, every one of the 300 names answers aks02 %s after the judgement; record sets changed in the zone: %d (%s)",
		judged.Sub(lost).Round(time.Millisecond), moved.Sub(judged).Round(time.Millisecond), len(changed), strings.Join(changed, ", "))
	var want []string
	for _, i := range intermediates {
		want = append(want, i+" CNAME", "weu-d-cname-"+i+" TXT")
	}
	slices.Sort(want)
	if !slices.Equal(changed, want) {
		t.Errorf("the move changed %d record sets, want the %d of the 10 intermediates (their CNAME and ownership record) and nothing else:\n got %v\nwant %v",
			len(changed), len(want), changed, want)
	}
}

// convergeAll digs every query every 50 ms at once until each answers want, and returns what each
// answered on the way.
func convergeAll(t testing.TB, queries []framework.Query, want []string, diag func() []func() string) []framework.Trace {
	t.Helper()
	traces := make([]framework.Trace, len(queries))
	var watches []func() error
	for i, q := range queries {
		watches = append(watches, func() error {
			var err error
			traces[i], err = framework.Converge(t.Context(), q, framework.Resolves(want...), 2*convergeTimeout, 50*time.Millisecond, diag()...)
			return err
		})
	}
	if err := parallel(watches...); err != nil {
		t.Fatal(err)
	}
	return traces
}

// changedRecordSets lists the record sets ("name TYPE") that differ between two readings of a
// zone, sorted, leaving out the heartbeats (rewritten every interval) and the SOA.
func changedRecordSets(before, after []framework.Record) []string {
	sets := func(recs []framework.Record) map[string][]string {
		out := map[string][]string{}
		for _, r := range recs {
			if r.Type == "SOA" || strings.Contains(r.Name, "._router-heartbeat.") {
				continue
			}
			k := r.Name + " " + r.Type
			out[k] = append(out[k], r.Data)
		}
		for k := range out {
			slices.Sort(out[k])
		}
		return out
	}
	b, a := sets(before), sets(after)
	var changed []string
	for k, v := range a {
		if !slices.Equal(b[k], v) {
			changed = append(changed, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	return changed
}

// diagnose joins diagnostics for a failure message.
func diagnose(diags []func() string) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString("\n" + d())
	}
	return b.String()
}

// TestFailover_NamesPublishedDirectlyGoThroughTheIntermediateWithoutAGap is the upgrade from
// direct names as the zone sees it: aks01 publishes the team's names the way a release before
// intermediates did (its policy without failover yet: each name a CNAME to its gateway, owned by
// aks01), aks02 publishes the same names; then the team's policy gains failover in both clusters.
// dig asks for every name every 50 ms from before the change until every name goes through the
// intermediate: each name switches once, from its gateway to the intermediate that answers with
// the same gateway, never NXDOMAIN nor an empty answer in between, and the intermediate exists
// before any name points at it. Then a loss moves them all with the intermediate.
func TestFailover_NamesPublishedDirectlyGoThroughTheIntermediateWithoutAGap(t *testing.T) {
	ctx := t.Context()
	w, zone := startBindFailoverWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	diag := func() []func() string { return append(w.diagnostics(), zone.Diagnostics) }
	routes := []string{"api", "web", "shop"}
	var queries []framework.Query
	for _, svc := range routes {
		queries = append(queries, zone.Query(fmt.Sprintf("%s-ns-%s-dev-%s.%s", svc, worldEnvLetter, failoverNS, w.domain), "A"))
	}
	publish := func(m *failoverMember) time.Time {
		at := create(ctx, t, m.cl.Client, failoverPolicy(failoverNS, nil))
		for _, svc := range routes {
			create(ctx, t, m.cl.Client, &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: failoverNS, Name: svc},
				Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: svc, GatewayName: gatewayName, GatewayNamespace: gatewayNamespace, Environment: "dev", Application: failoverNS}})
		}
		return at
	}
	at := publish(aks01)
	for _, q := range queries {
		waitAnswer(ctx, t, at, q, w.direct(aks01), diag()...)
	}
	at = publish(aks02)
	waitSyncs(ctx, t, at, aks01.ed, aks02.ed)

	// Failover turned on (as an upgrade turns the intermediates on): every name watched.
	on := time.Now()
	for _, m := range []*failoverMember{aks02, aks01} {
		p := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: failoverNS, Name: "dns"}}
		err := framework.Change(ctx, m.cl.Client, p, func(p *routingv1alpha1.DNSPolicy) {
			p.Spec.Failover = &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	traces := convergeAll(t, queries, w.chain(aks01), diag)
	for i, tr := range traces {
		t.Logf("%s goes through the intermediate %s after failover was turned on; seen: %s", queries[i].Name, tr.Took.Round(time.Millisecond), tr)
		if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, w.direct(aks01)) {
			t.Errorf("%s: want one switch, from its gateway straight to the intermediate answering the same gateway; seen: %s", queries[i].Name, tr)
		}
	}
	stable(t, "through the intermediate", queries, [][]string{w.chain(aks01), w.chain(aks01), w.chain(aks01)}, aks01.ed, aks02.ed)
	t.Logf("every name through the intermediate %s after failover was turned on", time.Since(on).Round(time.Millisecond))

	// The loss: one move, every name, once aks02's routes publish the intermediate too.
	for _, svc := range routes {
		waitThrough(ctx, t, aks02, failoverNS, svc, naming.IntermediateName("internal", failoverNS, "weu", w.domain))
	}
	lost := w.lose()
	traces = convergeAll(t, queries, w.chain(aks02), diag)
	for i, tr := range traces {
		if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, w.chain(aks01)) {
			t.Errorf("%s: want a direct switch from aks01's gateway to aks02's, seen: %s", queries[i].Name, tr)
		}
	}
	t.Logf("every name answers aks02 %s after aks01 stopped", time.Since(lost).Round(time.Millisecond))
}
