//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestFailover_RandomFaultSchedule drives the BIND failover world (two clusters, the real
// ExternalDNS, fast failover settings, every probe answering at the start, each operator reaching
// the zone through a path of its own) through a seeded random schedule of faults and repairs —
// aks01's loss and return, a partition between the clusters and its healing, a new leader in
// either cluster, a drain of weu and its end, one cluster's path to the zone cut and healed (its
// operator's and its ExternalDNS's, as a cluster's network fails), and
// one operator's clock set 60 s ahead or behind and back (--failover-clock-offset) — and checks
// invariants throughout by zone transfer every 200 ms:
//   - a name never has two owners: its ownership record holds exactly one value;
//   - a name never goes without an answer: its CNAME is always there (the team's, which may move,
//     and another team's, whose policy lists no stand-ins, which must stay aks01's);
//   - no record a cluster publishes for its gateway is ever removed.
//
// Safety alone would pass a failover that never moves anything, so the schedule ends with
// liveness, whatever its faults left behind: every fault is repaired and the team's name (failback
// Automatic) must be home with aks01 within two minutes; then aks01 is lost and the name must
// answer aks02's gateway within liveTakeoverBound of the loss; then aks01 comes back and the name
// must be home again within two minutes. The zone must have been read throughout: a transfer that fails is
// counted, and more than one in ten failing, or fewer readings than one every two seconds, fails
// the run (invariants not checked are not invariants kept).
// A cut reaches ExternalDNS's transfers too: v0.22.0 took every name of a zone whose transfer failed
// in the middle, v0.23.0 leaves them (TestExternalDNS_ATransferTimeoutTakesNoName). The seed is logged, and
// printed with every violation; FAULT_SEED=<n> replays a schedule, FAULT_STEPS=<n> sets its length
// (default 8; `make bench` runs BenchmarkFailover_FaultSchedules, longer ones).
func TestFailover_RandomFaultSchedule(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("FAULT_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("FAULT_SEED=%q: %v", v, err)
		}
		seed = n
	}
	steps := 8
	if v := os.Getenv("FAULT_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FAULT_STEPS=%q: want a positive number", v)
		}
		steps = n
	}
	// Logged first: a run that stops on a fatal error still says how to replay it.
	t.Logf("seed %d, %d steps (FAULT_SEED=%d FAULT_STEPS=%d replays it)", seed, steps, seed, steps)
	r := runFaultSchedule(t, seed, steps)
	t.Logf("seed %d: %d steps (%s); %d zone readings (%d failed), %d moves of the team's name; liveness: taken over in %s, home again in %s; %d violations",
		seed, steps, strings.Join(r.events, ", "), r.readings, r.failedReadings, r.moves, r.takeover.Round(100*time.Millisecond), r.failback.Round(100*time.Millisecond), len(r.violations))
}

// BenchmarkFailover_FaultSchedules runs FAULT_SCHEDULES (default 3) schedules of FAULT_STEPS
// (default 20) steps and reports schedules, events and violations (goal: 0).
func BenchmarkFailover_FaultSchedules(b *testing.B) {
	schedules, steps := 3, 20
	if n, err := strconv.Atoi(os.Getenv("FAULT_SCHEDULES")); err == nil && n > 0 {
		schedules = n
	}
	if n, err := strconv.Atoi(os.Getenv("FAULT_STEPS")); err == nil && n > 0 {
		steps = n
	}
	for range b.N {
		var events, violations int
		for i := range schedules {
			seed := uint64(time.Now().UnixNano()) + uint64(i)
			r := runFaultSchedule(b, seed, steps)
			events += len(r.events)
			violations += len(r.violations)
			b.Logf("seed %d: %s; %d violations", seed, strings.Join(r.events, ", "), len(r.violations))
		}
		b.ReportMetric(float64(schedules), "schedules")
		b.ReportMetric(float64(events), "events")
		b.ReportMetric(float64(violations), "violations")
	}
}

// liveTakeoverBound is how long the liveness phase waits for the team's name to answer aks02's
// gateway once only aks01's loss is left: the takeover's design bound in this world
// (TestFailover_OperatorTakesOverALostRegion: the heartbeat stale after 5 s, a round, the write,
// a synchronization: 10 s), plus a new leader's start if the repairs restarted aks02's operator,
// plus a loaded machine's slack.
const liveTakeoverBound = 30 * time.Second

// scheduleRun is what one schedule did and saw.
type scheduleRun struct {
	events []string
	// readings are the zone transfers that answered, failedReadings those that did not; moves the
	// changes of the team's intermediate from one gateway to another that the readings saw.
	readings, failedReadings, moves int
	// takeover and failback are the liveness phase's times: aks01 lost until the name answered
	// aks02, aks01 back until it answered aks01 again.
	takeover, failback time.Duration
	violations         []string
}

// cnameOf is name's CNAME target in recs, "" if it has none (or several).
func cnameOf(recs []framework.Record, name string) string {
	found := ""
	for _, r := range recs {
		if r.Name == name+"." && r.Type == "CNAME" {
			if found != "" {
				return ""
			}
			found = r.Data
		}
	}
	return found
}

// faultWorld is the state of the failover world's faults during a schedule.
type faultWorld struct {
	w                          *failoverWorld
	lost, partitioned, drained bool
	// paths are each cluster's path to the zone (its operator's and its ExternalDNS's), cut those
	// cut; skews the clock offset
	// each cluster's operator runs with.
	paths map[string]*framework.DNSProxy
	cut   map[string]bool
	skews map[string]time.Duration
}

// runFaultSchedule runs one schedule of steps random steps from seed and checks the invariants.
func runFaultSchedule(tb testing.TB, seed uint64, steps int) scheduleRun {
	tb.Helper()
	ctx := tb.Context()
	paths := map[string]*framework.DNSProxy{}
	w, zone := startBindFailoverWorldVia(tb, nil, func(zone *framework.BindServer, m *failoverMember) (int, int) {
		p, err := framework.StartDNSProxy(tb, zone.Port)
		if err != nil {
			tb.Fatal(err)
		}
		paths[m.cluster] = p
		return p.Port, p.Port
	})
	aks01, aks02 := w.aks01, w.aks02
	// The team's policy takes its names back automatically: after the repairs, home is where they
	// belong. Every probe answers (both clusters probe each other where both gateways listen).
	for _, m := range []*failoverMember{aks01, aks02} {
		updateConfig(ctx, tb, m, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.ProbePort = ptr.To(int32(w.port)) })
	}
	name, otherName := w.hostname(failoverNS), w.hostname(failoverOtherNS)
	chain := w.chain
	at := w.publish(aks01)
	waitAnswer(ctx, tb, at, zone.Query(name, "A"), chain(aks01))
	waitAnswer(ctx, tb, at, zone.Query(otherName, "A"), w.direct(aks01))
	at = w.publish(aks02)
	waitAnswer(ctx, tb, at, zone.Query(aks02.target(w.domain), "A"), []string{"A " + aks02.lbIP})
	waitSyncs(ctx, tb, at, aks01.ed, aks02.ed)
	for _, m := range []*failoverMember{aks01, aks02} {
		setFailback(ctx, tb, m, routingv1alpha1.FailbackAutomatic)
	}

	run := scheduleRun{}
	var mu sync.Mutex
	began := time.Now()
	violate := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(run.violations) < 20 {
			run.violations = append(run.violations, fmt.Sprintf("at %s, after %d step(s): ", time.Since(began).Round(100*time.Millisecond), len(run.events))+fmt.Sprintf(format, args...))
		}
	}
	intermediate := naming.IntermediateName("internal", failoverNS, "weu", w.domain)
	watchCtx, stopWatching := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		serving := ""
		for watchCtx.Err() == nil {
			recs, err := zone.ZoneRecords(watchCtx)
			mu.Lock()
			if err != nil && watchCtx.Err() == nil {
				run.failedReadings++
			} else if err == nil {
				run.readings++
				// A move is the intermediate's CNAME changing gateway (a failover, a failback).
				if now := cnameOf(recs, intermediate); now != "" && now != serving {
					if serving != "" {
						run.moves++
					}
					serving = now
				}
			}
			mu.Unlock()
			if err == nil {
				checkFaultInvariants(recs, []string{name, intermediate, otherName}, otherName, aks01, []string{aks01.target(w.domain), aks02.target(w.domain)}, w.domain, violate)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()

	rng := rand.New(rand.NewPCG(seed, seed>>1|1))
	f := &faultWorld{w: w, paths: paths, cut: map[string]bool{}, skews: map[string]time.Duration{}}
	record := func(event string) {
		mu.Lock()
		defer mu.Unlock()
		run.events = append(run.events, fmt.Sprintf("%s (at %s)", event, time.Since(began).Round(100*time.Millisecond)))
	}
	for range steps {
		record(f.step(ctx, tb, rng))
		time.Sleep(time.Duration(2000+rng.IntN(6000)) * time.Millisecond)
	}
	// Liveness, whatever the schedule left behind: every fault repaired, the team's name comes
	// home; then aks01 is lost, and the name moves to aks02 within liveTakeoverBound of the loss;
	// then aks01 comes back, and the name comes home again.
	home := func(what string) time.Duration {
		since := time.Now()
		if _, err := framework.Converge(ctx, zone.Query(name, "A"), framework.Resolves(chain(aks01)...), 2*convergeTimeout, 200*time.Millisecond); err != nil {
			violate("%s, %s did not come home to aks01 within %s: %v", what, name, 2*convergeTimeout, err)
		}
		return time.Since(since)
	}
	record(f.repair(ctx, tb))
	home("after the repairs")
	lostAt := w.lose()
	f.lost = true
	record("aks01 lost (liveness)")
	if _, err := framework.Converge(ctx, zone.Query(name, "A"), framework.Resolves(chain(aks02)...), liveTakeoverBound, 200*time.Millisecond); err != nil {
		violate("liveness: aks01 lost, %s did not move to aks02 within %s: %v", name, liveTakeoverBound, err)
	} else {
		run.takeover = time.Since(lostAt)
	}
	record(f.repair(ctx, tb))
	run.failback = home("aks01 back")
	stopWatching()
	<-watched
	if elapsed := time.Since(began); run.failedReadings*10 > run.readings+run.failedReadings || run.readings < int(elapsed/(2*time.Second)) {
		violate("the zone was read %d times in %s and %d transfers failed: too few readings to have checked the invariants", run.readings, elapsed.Round(time.Second), run.failedReadings)
	}
	for _, v := range run.violations {
		tb.Errorf("seed %d (FAULT_SEED=%d replays it), after %s: %s", seed, seed, strings.Join(run.events, ", "), v)
	}
	return run
}

// checkFaultInvariants checks one reading of the zone: every name of names has exactly one CNAME
// and one ownership value (an intermediate none: the operators write it), fixed (whose policy lists no stand-in) still points at home's gateway,
// and every gateway target has its A record.
func checkFaultInvariants(recs []framework.Record, names []string, fixed string, home *failoverMember, targets []string, domain string, violate func(string, ...any)) {
	count := func(name, rtype string) (n int, data []string) {
		for _, r := range recs {
			if r.Name == name+"." && r.Type == rtype {
				n++
				data = append(data, r.Data)
			}
		}
		return n, data
	}
	for _, n := range names {
		if c, data := count(n, "CNAME"); c != 1 {
			violate("%s has %d CNAMEs %v: a name without an answer, or with two", n, c, data)
		} else if n == fixed && data[0] != home.target(domain)+"." {
			violate("%s, whose policy lists no stand-in, points at %s", n, data[0])
		}
		c, data := count("weu-d-cname-"+n, "TXT")
		switch {
		case naming.IsIntermediate(n) && c != 0:
			violate("%s, an intermediate the operators write, has %d ownership values %v: want none", n, c, data)
		case !naming.IsIntermediate(n) && c != 1:
			violate("%s has %d ownership values %v: want exactly one owner", n, c, data)
		}
	}
	for _, target := range targets {
		if c, _ := count(target, "A"); c == 0 {
			violate("the gateway target %s lost its A record", target)
		}
	}
}

// step makes one random change of the world and says which.
func (f *faultWorld) step(ctx context.Context, tb testing.TB, rng *rand.Rand) string {
	w := f.w
	m := []*failoverMember{w.aks01, w.aks02}[rng.IntN(2)]
	switch rng.IntN(7) {
	case 0:
		if f.lost {
			// Its ExternalDNS's start waits for a synchronization, which needs the zone.
			healed := ""
			if f.cut[w.aks01.cluster] {
				f.paths[w.aks01.cluster].Heal()
				f.cut[w.aks01.cluster] = false
				healed = " (its path to the zone healed)"
			}
			w.comeBack()
			f.lost, f.skews[w.aks01.cluster] = false, 0
			return "aks01 back" + healed
		}
		w.lose()
		f.lost = true
		return "aks01 lost"
	case 1:
		f.partitioned = !f.partitioned
		port := w.port
		if f.partitioned {
			port = w.probePort02 // only aks02's own gateway listens there: its probes of aks01 fail
		}
		updateConfig(ctx, tb, w.aks02, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.ProbePort = ptr.To(int32(port)) })
		if f.partitioned {
			return "partition (aks02 cannot reach aks01's gateway)"
		}
		return "partition healed"
	case 2:
		f.restart(ctx, tb, w.aks02)
		return "aks02's operator restarted (a new leader)"
	case 3:
		if f.lost {
			return "nothing (aks01 is lost: its operator cannot restart)"
		}
		f.restart(ctx, tb, w.aks01)
		return "aks01's operator restarted (a new leader)"
	case 4:
		if f.cut[m.cluster] = !f.cut[m.cluster]; f.cut[m.cluster] {
			f.paths[m.cluster].Cut()
			return m.cluster + " cut from the zone (its operator and its ExternalDNS)"
		}
		f.paths[m.cluster].Heal()
		return m.cluster + "'s path to the zone healed"
	case 5:
		if m == w.aks01 && f.lost {
			return "nothing (aks01 is lost: its clock does not matter)"
		}
		skew := time.Duration(0)
		if f.skews[m.cluster] == 0 {
			skew = time.Minute * time.Duration(1-2*rng.IntN(2))
		}
		f.skews[m.cluster] = skew
		f.restart(ctx, tb, m)
		if skew == 0 {
			return m.cluster + "'s operator restarted with its clock right again"
		}
		return fmt.Sprintf("%s's operator restarted with its clock %s off", m.cluster, skew)
	default:
		f.drained = !f.drained
		updateConfig(ctx, tb, w.aks01, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.Drain = f.drained })
		if f.drained {
			return "aks01 drained"
		}
		return "aks01's drain ended"
	}
}

// repair undoes every fault still in force.
func (f *faultWorld) repair(ctx context.Context, tb testing.TB) string {
	w := f.w
	// The paths first: a cluster that comes back starts its ExternalDNS, which must reach the zone
	// to complete the synchronization its start waits for.
	for cluster, p := range f.paths {
		p.Heal()
		f.cut[cluster] = false
	}
	if f.lost {
		w.comeBack() // with its clock right
		f.skews[w.aks01.cluster] = 0
	}
	if f.partitioned {
		updateConfig(ctx, tb, w.aks02, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.ProbePort = ptr.To(int32(w.port)) })
	}
	if f.drained {
		updateConfig(ctx, tb, w.aks01, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.Drain = false })
	}
	for _, m := range []*failoverMember{w.aks01, w.aks02} {
		if f.skews[m.cluster] != 0 {
			f.skews[m.cluster] = 0
			f.restart(ctx, tb, m)
		}
	}
	f.lost, f.partitioned, f.drained = false, false, false
	return "every fault repaired"
}

// restart stops m's operator and starts a new one (a new leader), its clock as far off as the
// schedule has set it.
func (f *faultWorld) restart(ctx context.Context, tb testing.TB, m *failoverMember) {
	tb.Helper()
	var args []string
	if skew := f.skews[m.cluster]; skew != 0 {
		args = []string{"--failover-clock-offset=" + skew.String()}
	}
	restartOperator(ctx, tb, m, framework.OperatorOptions{ExtraArgs: args})
}

// restartOperator stops m's operator and starts a new one with opts: a new leader.
func restartOperator(ctx context.Context, tb testing.TB, m *failoverMember, opts framework.OperatorOptions) {
	tb.Helper()
	if err := m.op.Stop(); err != nil {
		tb.Fatal(err)
	}
	var err error
	if m.op, err = m.cl.StartOperator(ctx, tb, opts); err != nil {
		tb.Fatal(err)
	}
}
