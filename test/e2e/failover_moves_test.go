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

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
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
// (heartbeats aside) are the 10 policies' intermediate names' CNAMEs, which the operators write,
// and nothing of the 300 names: the move costs one record write per policy, whatever the names. A
// move through intermediates ExternalDNS wrote changed 20 (their CNAME and ownership record), and
// one that passed each name (the design before intermediates) 600.
func TestFailover_AMoveWritesAConstantPerPolicy(t *testing.T) {
	m := measureMoves(t, bindMoveZone(t), moveNamespaces, moveRoutes, false)
	if want := m.intermediateSets(); !slices.Equal(m.takeover, want) {
		t.Errorf("the move changed %d record sets, want the %d CNAMEs of the 10 intermediates and nothing else:\n got %v\nwant %v",
			len(m.takeover), len(want), m.takeover, want)
	}
}

// moves are the measured moves of a region's names: the takeover of a lost region's names and,
// when measured, their failback.
type moves struct {
	names, policies int
	// intermediates are the policies' intermediate names in the zone.
	intermediates []string
	// published is how long aks01's names took to go through their intermediates from the first
	// create; judged how long aks02 took to judge weu lost after the loss; moved how long from
	// the judgement until every name answered aks02. takeover are the record sets the takeover
	// changed (changedRecordSets).
	published, judged, moved time.Duration
	takeover                 []string
	// back is how long from aks01's return until every name answered aks01 again; failback the
	// record sets that changed (zero: failback not measured).
	back     time.Duration
	failback []string
	// drained is how long from aks01's dns-config asking for a drain until every name answered
	// aks02, undrained from the drain's end until every name answered aks01 again; drain and
	// undrain the record sets each changed (measured with the failback).
	drained, undrained time.Duration
	drain, undrain     []string
	// writes are the zone's record writes during the takeover, as the zone counts them, requests
	// all its requests then ("" for BIND, which counts none).
	writes   int
	requests string
}

// moveZone is the weu zone of a failover world a move is measured in: the world, the zone's
// records as a transfer lists them, its diagnostics; limit turns on the zone's documented
// request limits at the start of the measurement, and requests says what the zone was asked since
// (both nil for BIND, which has none).
type moveZone struct {
	w        *failoverWorld
	records  func(context.Context) ([]framework.Record, error)
	diag     func() string
	limit    func()
	requests func() (writes int, summary string)
	// timeout bounds a move.
	timeout time.Duration
}

// bindMoveZone is the BIND failover world's zone (TSIG, fast settings, ExternalDNS every 500 ms).
func bindMoveZone(tb testing.TB) moveZone {
	w, zone := startBindFailoverWorld(tb)
	return moveZone{w: w, records: zone.ZoneRecords, diag: zone.Diagnostics, timeout: 2 * convergeTimeout}
}

// intermediateSets are the record sets a move should change: each intermediate's CNAME, which the
// operators write.
func (m moves) intermediateSets() []string {
	var want []string
	for _, i := range m.intermediates {
		want = append(want, i+" CNAME")
	}
	slices.Sort(want)
	return want
}

// measureMoves publishes perPolicy names for each of policies teams, from aks01 (weu) and aks02
// (neu, each team's policy's stand-in) into the weu zone (BIND, TSIG), loses aks01 and measures the
// takeover; with failback, the policies fail back automatically, aks01 comes back and the failback
// is measured too, then a drain of aks01 and its end.
func measureMoves(tb testing.TB, zone moveZone, policies, perPolicy int, failback bool) moves {
	ctx := tb.Context()
	w := zone.w
	aks01, aks02 := w.aks01, w.aks02
	diag := func() []func() string { return append(w.diagnostics(), zone.diag) }
	m := moves{names: policies * perPolicy, policies: policies}
	var names []string
	intermediates := map[string]string{} // the team's intermediate name, by namespace
	for i := range policies {
		ns := fmt.Sprintf("team%02d", i)
		intermediates[ns] = naming.IntermediateName("internal", ns, "weu", w.domain) + "."
		m.intermediates = append(m.intermediates, intermediates[ns])
		for j := range perPolicy {
			names = append(names, fmt.Sprintf("svc%03d-ns-%s-dev-%s.%s.", j, worldEnvLetter, ns, w.domain))
		}
	}
	mode := routingv1alpha1.FailbackManual
	if failback {
		mode = routingv1alpha1.FailbackAutomatic
	}
	publish := func(member *failoverMember) time.Time {
		at := time.Now()
		for ns := range intermediates {
			createNamespace(ctx, tb, member.cl.Client, ns)
			create(ctx, tb, member.cl.Client, failoverPolicy(ns, &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}, Failback: mode}))
			for j := range perPolicy {
				create(ctx, tb, member.cl.Client, &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("svc%03d", j)},
					Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: fmt.Sprintf("svc%03d", j), GatewayName: gatewayName, GatewayNamespace: gatewayNamespace,
						Environment: "dev", Application: ns}})
			}
		}
		return at
	}
	// served waits until every name goes through its team's intermediate name and every
	// intermediate points at by's gateway, and returns the zone then.
	served := func(step string, by *failoverMember, timeout time.Duration) []framework.Record {
		tb.Helper()
		var recs []framework.Record
		err := framework.Poll(ctx, timeout, 250*time.Millisecond, step, func(ctx context.Context) (bool, string, error) {
			var err error
			if recs, err = zone.records(ctx); err != nil {
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
			tb.Fatalf("%v%s", err, diagnose(diag()))
		}
		return recs
	}
	// Publication grows with the names (ExternalDNS's batches, the zone transfers); the moves
	// must not.
	publishing := time.Duration(max(3, m.names/100)) * convergeTimeout

	at := publish(aks01)
	served(fmt.Sprintf("aks01 publishes %d names", m.names), aks01, publishing)
	m.published = time.Since(at)
	tb.Logf("aks01's %d names through %d intermediates %s after the first create", m.names, policies, m.published.Round(time.Millisecond))
	at = publish(aks02)
	// A synchronization of thousands of DNSEndpoints and a zone of thousands of record sets takes
	// a while itself: the waits grow with the names, as publication does.
	for _, since := range []time.Time{at, time.Now()} {
		for _, ed := range []*framework.ExternalDNS{aks01.ed, aks02.ed} {
			if err := ed.WaitForSyncSince(ctx, since, publishing); err != nil {
				tb.Fatal(err)
			}
		}
	}
	waitRegion(ctx, tb, aks02, "weu", "Unreachable", "WitnessSaysAlive", diag)
	before := served("both publish", aks01, publishing)
	if zone.limit != nil {
		zone.limit()
	}

	lost := w.lose()
	waitRegion(ctx, tb, aks02, "weu", "Lost", "HeartbeatStale", diag)
	judged := time.Now()
	after := served("every name to answer aks02", aks02, zone.timeout)
	m.judged, m.moved, m.takeover = judged.Sub(lost), time.Since(judged), changedRecordSets(before, after)
	if zone.requests != nil {
		m.writes, m.requests = zone.requests()
	}
	tb.Logf("aks01 lost: judged lost %s after, every one of the %d names answers aks02 %s after the judgement; record sets changed in the zone: %d (%s) %s",
		m.judged.Round(time.Millisecond), m.names, m.moved.Round(time.Millisecond), len(m.takeover), strings.Join(m.takeover, ", "), m.requests)
	if !failback {
		return m
	}
	back := time.Now()
	w.comeBack()
	home := served("every name to answer aks01 again", aks01, zone.timeout)
	m.back, m.failback = time.Since(back), changedRecordSets(after, home)
	tb.Logf("aks01 back: every one of the %d names answers aks01 %s after its return; record sets changed: %d",
		m.names, m.back.Round(time.Millisecond), len(m.failback))

	// A drain and its end, aks01 serving throughout: the same moves, asked for.
	drain := time.Now()
	updateConfig(ctx, tb, aks01, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.Drain = true })
	drained := served("every name to answer aks02 while aks01 is drained", aks02, zone.timeout)
	m.drained, m.drain = time.Since(drain), changedRecordSets(home, drained)
	undrain := time.Now()
	updateConfig(ctx, tb, aks01, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.Drain = false })
	undrained := served("every name to answer aks01 once the drain ends", aks01, zone.timeout)
	m.undrained, m.undrain = time.Since(undrain), changedRecordSets(drained, undrained)
	tb.Logf("aks01 drained: every one of the %d names answers aks02 %s after the drain was asked for (record sets changed: %d), and aks01 again %s after it ended (%d)",
		m.names, m.drained.Round(time.Millisecond), len(m.drain), m.undrained.Round(time.Millisecond), len(m.undrain))
	return m
}

// checkMoves fails b when a measured move changed more than the policies' intermediates' CNAMEs,
// and reports each move's time and record sets.
func checkMoves(b *testing.B, m moves) {
	want := m.intermediateSets()
	for _, move := range []struct {
		name string
		took time.Duration
		sets []string
	}{{"takeover", m.moved, m.takeover}, {"failback", m.back, m.failback}, {"drain", m.drained, m.drain}, {"undrain", m.undrained, m.undrain}} {
		if !slices.Equal(move.sets, want) {
			b.Errorf("%d names: the %s changed %d record sets, want the %d of the intermediates: %v", m.names, move.name, len(move.sets), len(want), move.sets)
		}
		b.ReportMetric(move.took.Seconds(), move.name+"-s")
		b.ReportMetric(float64(len(move.sets)), move.name+"-sets")
	}
}

// BenchmarkFailover_AMoveAtScale is the time and the record writes of a takeover, a failback, a
// drain and its end in the BIND failover world (fast settings: stale after 5 s, failback after 3 s) at 300, 3,000
// and 10,000 names in 30 policies (FAILOVER_MOVE_NAMES: a comma-separated list): both must stay
// flat as the names grow. Each run fails when a move changes more than the policies'
// intermediates' CNAMEs (one record set each).
func BenchmarkFailover_AMoveAtScale(b *testing.B) {
	const policies = 30
	for _, n := range framework.EnvInts("FAILOVER_MOVE_NAMES", 300, 3000, 10000) {
		b.Run(fmt.Sprintf("names=%d", n), func(b *testing.B) {
			for range b.N {
				m := measureMoves(b, bindMoveZone(b), policies, n/policies, true)
				checkMoves(b, m)
				b.ReportMetric(m.published.Seconds(), "publish-s")
			}
		})
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
