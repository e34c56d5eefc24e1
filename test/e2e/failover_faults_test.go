//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestFailover_AKilledRegionMovesOnlyOnAHeartbeatItCanRead is a region's sudden death with its
// heartbeat overwritten, with the real ExternalDNS and BIND (TSIG) and both operators; the two
// clusters' probes of each other fail throughout (a partition), so only the zone's witness decides.
//
//  1. Killed: aks01's operator, ExternalDNS and gateway are killed at once with SIGKILL (no
//     shutdown, no lease released), and its heartbeat record is overwritten at once with a value
//     that is not a heartbeat, as a hand edit or another tool might. The zone holds no heartbeat
//     aks02 can read, which is not the same as none: aks02 says weu Unreachable
//     (HeartbeatMalformed), its message names the record, and nothing moves while the stale bound
//     passes three times over, watched with dig every 50 ms.
//  2. The edit reverted (aks01's last heartbeat written back): the zone holds a heartbeat aks02
//     can read, and it is stale; aks02 judges weu Lost (HeartbeatStale) and takes the name, a
//     direct switch. The DNSEndpoints keep their UIDs.
func TestFailover_AKilledRegionMovesOnlyOnAHeartbeatItCanRead(t *testing.T) {
	ctx := t.Context()
	w, zone, diag := startPartitionedBindWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	name, chain := w.hostname(failoverNS), w.chain
	q := zone.Query(name, "A")
	uids := endpointUIDs(ctx, t, aks01, aks02)

	// 1. Killed, its heartbeat overwritten.
	beat := failover.HeartbeatName(aks01.cluster, aks01.region, w.domain) + "."
	const garbage = "maintenance window: do not touch"
	killed := w.kill()
	last, err := zone.Dig(ctx, beat, "TXT")
	if err != nil || len(last.Records) != 1 {
		t.Fatalf("1. aks01's last heartbeat: %v %+v", err, last)
	}
	if err := zone.Update(ctx, "update delete "+beat+" TXT", "update add "+beat+` 10 TXT "`+garbage+`"`); err != nil {
		t.Fatal(err)
	}
	t.Logf("1. aks01 killed and its heartbeat overwritten in %s", time.Since(killed).Round(time.Millisecond))
	waitRegion(ctx, t, aks02, "weu", "Unreachable", failover.ReasonHeartbeatMalformed, diag)
	if msg := regionStatus(ctx, t, aks02, "weu").Message; !strings.Contains(msg, garbage) || !strings.Contains(msg, "not a heartbeat") {
		t.Errorf("1. aks02's status does not say which record keeps it from deciding: %q", msg)
	}
	// The heartbeat aks02 saw last would be stale 5 s after the kill: watch well past it.
	for time.Since(killed) < 3*5*time.Second {
		stable(t, "1. killed, its heartbeat malformed: nothing moves", []framework.Query{q}, [][]string{chain(aks01)}, aks02.ed)
	}
	assertRegion(ctx, t, aks02, "weu", "Unreachable")

	// 2. The edit reverted: aks01's last heartbeat, readable and stale, a definite answer.
	reverted := time.Now()
	if err := zone.Update(ctx, "update delete "+beat+" TXT", "update add "+beat+" 10 TXT "+last.Records[0].Data); err != nil {
		t.Fatal(err)
	}
	directSwitch(t, "2. the edit reverted", q, chain(aks01), chain(aks02), reverted, diag)
	waitRegion(ctx, t, aks02, "weu", "Lost", "HeartbeatStale", diag)
	if after := endpointUIDs(ctx, t, aks01, aks02); !slices.Equal(after, uids) {
		t.Errorf("the DNSEndpoints were replaced: UIDs %v, then %v", uids, after)
	}
}

// TestFailover_AZoneUnreachableHoldsBackOnlyItself is a region lost while one of three zones does
// not answer anyone (its named stopped with SIGSTOP: every query, update and transfer times out),
// in the multi-region world (three BIND zones, both clusters publishing every name into each).
//
//  1. frc unreachable, aks01 killed (SIGKILL): weu and neu, a majority of the three, say its
//     heartbeat is stale; aks02 judges weu Lost, its message counting the zone it could not read,
//     and the name moves in weu and neu, a direct switch in each; in frc nothing is written (aks02
//     counts no name taken there).
//  2. frc answers again: the heartbeat there is stale too, and the name follows in frc.
//
// aks02 leaves frc out of its rounds for a while after each time it did not answer
// (failover.ZoneBackoff): without that, every round waited out frc's 5-second timeout on each
// read and heartbeat write, and the takeover in weu and neu took 42 s instead of about 8. The
// test holds the takeover to backedOffTakeover, which only the backoff meets.
func TestFailover_AZoneUnreachableHoldsBackOnlyItself(t *testing.T) {
	// The world's settings: a heartbeat stale after 5 s, 3 probes 1 s apart; a zone's reads and
	// writes time out after 5 s. With the backoff, the takeover meets frc's timeout at most three
	// times (a read and a heartbeat write in the round that first meets it, one retry after the
	// backoff): 5 + 3 + 3 × 5 s. Measured: about 8 s on an idle machine, 13 s at load 14.
	const backedOffTakeover = 23 * time.Second
	ctx := t.Context()
	w, zones := startEveryZoneWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	name := w.hostname(failoverNS)
	diag := func() []func() string { return zonesDiagnostics(w, zones) }
	w.publishBoth(diag, inRegionOrder(zones)...)
	// aks02's ExternalDNS instances run on events alone (startEveryZoneWorld): wait out the run its
	// own status writes cause, so that the zones are settled before frc stops.
	waitSyncs(ctx, t, waitProcessed(ctx, t, aks02), aks02.eds...)
	waitRegion(ctx, t, aks02, "weu", "Unreachable", "WitnessSaysAlive", diag)
	frcController := framework.RegionalControllerName("frc")

	// 1. frc cut off, aks01 killed.
	frc := zones["frc"]
	if err := frc.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = frc.Resume()
		}
	})
	killed := w.kill()
	traces := followZones(t, zones, []string{"weu", "neu"}, name, func(r string) []string { return w.teamIn(r, aks02) }, diag)
	for _, r := range []string{"weu", "neu"} {
		tr := traces[r]
		t.Logf("1. zone %s: %s answers aks02's gateway %s after aks01 was killed, frc unreachable; seen: %s", r, name, tr.Took.Round(time.Millisecond), tr)
		if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, w.teamIn(r, aks01)) {
			t.Errorf("1. zone %s: want a direct switch from aks01's gateway to aks02's, seen: %s", r, tr)
		}
		if tr.Took > backedOffTakeover {
			t.Errorf("1. zone %s: the name moved %s after the kill, more than the %s the backoff from the unreachable zone allows (42 s without it)", r, tr.Took.Round(time.Millisecond), backedOffTakeover)
		}
	}
	waitRegion(ctx, t, aks02, "weu", "Lost", "HeartbeatStale", diag)
	if msg := regionStatus(ctx, t, aks02, "weu").Message; !strings.Contains(msg, "of 3 zones, 2 hold no fresh heartbeat of it and 1 could not be read") {
		t.Errorf("1. aks02's status does not count the zone it could not read: %q", msg)
	}
	if got := takenNames(dnsConfig(ctx, t, aks02), "weu", frcController); got != 0 {
		t.Errorf("1. aks02 says it took %d names in the unreachable zone frc, want 0", got)
	}

	// 2. frc answers again.
	back := time.Now()
	if err := frc.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	tr := followZones(t, zones, []string{"frc"}, name, func(r string) []string { return w.teamIn(r, aks02) }, diag)["frc"]
	t.Logf("2. zone frc answers again: %s answers aks02's gateway there %s later (%s after the kill); seen: %s", name, time.Since(back).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, w.teamIn("frc", aks01)) {
		t.Errorf("2. zone frc: want a direct switch from aks01's gateway to aks02's, seen: %s", tr)
	}
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "aks02 to count the name taken in frc", func(ctx context.Context) (bool, string, error) {
		n := takenNames(dnsConfig(ctx, t, aks02), "weu", frcController)
		return n == 1, fmt.Sprintf("%d taken", n), nil
	})
	if err != nil {
		t.Error(err)
	}
}

// dnsConfig is m's dns-config as it is now.
func dnsConfig(ctx context.Context, t testing.TB, m *failoverMember) *clusterv1alpha1.DNSConfiguration {
	t.Helper()
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if err := m.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestFailover_TwoStandInsRaceForOneName is a lost region with two clusters that each believe
// they stand in for it: aks02 (neu), whose team's policy lists neu, and aks03 (frc, a third
// cluster adopting weu), whose team's policy in that cluster lists frc. Every gateway answers
// every probe until aks01 (weu) is killed; then both judge weu Lost in the same second and pass the
// name's ownership. The pass is one conditional write (the value read is its prerequisite), so
// exactly one wins: the zone, watched with dig every 50 ms, switches once, directly from aks01's
// gateway to the winner's, and stays; the ownership record holds the winner's owner alone; the
// winner counts the name taken, the loser counts nothing and its route's status says who serves
// the name (served by cluster <winner>, of region <its region>, for region weu).
//
// Left to their rounds, the second stand-in to judge reads the zone after the first one's write
// and never tries (seen: 0 writes refused): the stand-ins reach the zone through a
// framework.DNSProxy that holds their conditional writes until both have arrived, as a slow
// network may, so that the zone decides between two writes of the same value read. Both tried: the
// proxy relays two conditional writes, and each stand-in's
// service_router_failover_ownership_writes_total shows its own: passed for the winner, changed
// (refused by the prerequisite) for the loser, exactly one of each; the intermediate's CNAME ends
// pointing at the winner's gateway alone.
func TestFailover_TwoStandInsRaceForOneName(t *testing.T) {
	ctx := t.Context()
	const controller = failoverController
	var path *framework.DNSProxy
	w, zone := startBindFailoverWorldVia(t, nil, func(zone *framework.BindServer, m *failoverMember) (int, int) {
		if m.cluster != "aks02" { // aks03's zone entry is aks02's, below
			return 0, 0
		}
		var err error
		if path, err = framework.StartDNSProxy(t, zone.Port); err != nil {
			t.Fatal(err)
		}
		return path.Port, 0
	})
	aks01, aks02 := w.aks01, w.aks02
	// No partition: everyone probes where every gateway listens.
	for _, m := range []*failoverMember{aks01, aks02} {
		updateConfig(ctx, t, m, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.ProbePort = ptr.To(int32(w.port)) })
	}
	aks03 := &failoverMember{cluster: "aks03", region: "frc", lbIP: "127.0.0.13", owner: "external-dns-weu-aks03"}
	var err error
	if aks03.cl, err = framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "aks03-frc"}); err != nil {
		t.Fatal(err)
	}
	createNamespace(ctx, t, aks03.cl.Client, failoverNS)
	gateway3 := listenGateway(t, net.JoinHostPort(aks03.lbIP, strconv.Itoa(w.port)))
	t.Cleanup(gateway3.close)
	// aks03's zone entry and ExternalDNS are aks02's with its own owner ID.
	controllers := slices.Clone(dnsConfig(ctx, t, aks02).Spec.ExternalDNSControllers)
	fo := *controllers[0].Failover
	fo.OwnerID, controllers[0].Failover = aks03.owner, &fo
	edOpts := aks02.edOpts[0]
	edOpts.OwnerID, edOpts.Kubeconfig = aks03.owner, ""
	w.startMember(aks03, w.settings(w.port), []string{"weu"}, controllers, []framework.ExternalDNSOptions{edOpts})
	diag := func() []func() string {
		return append(w.diagnostics(), aks03.op.Diagnostics, aks03.ed.Diagnostics, zone.Diagnostics)
	}

	name, chain := w.hostname(failoverNS), w.chain
	q := zone.Query(name, "A")
	at := w.publish(aks01)
	waitAnswer(ctx, t, at, q, chain(aks01), diag()...)
	at = w.publish(aks02)
	create(ctx, t, aks03.cl.Client, failoverPolicy(failoverNS, &routingv1alpha1.PolicyFailover{StandIns: []string{"frc"}}))
	create(ctx, t, aks03.cl.Client, apiRoute(failoverNS, failoverNS))
	waitThrough(ctx, t, aks03, failoverNS, "api-route", naming.IntermediateName("internal", failoverNS, "weu", w.domain))
	waitAnswer(ctx, t, at, zone.Query(aks03.target(w.domain), "A"), []string{"A " + aks03.lbIP}, diag()...)
	waitSyncs(ctx, t, at, aks01.ed, aks02.ed, aks03.ed)
	for _, m := range []*failoverMember{aks02, aks03} {
		waitRegion(ctx, t, m, "weu", "Serving", "GatewayAnswers", diag)
	}

	// The loss: both stand-ins judge it, and race.
	path.HoldConditionalUpdates(2, 15*time.Second)
	killed := w.kill()
	var seen []string
	var winner, loser *failoverMember
	err = framework.Poll(ctx, 2*convergeTimeout, 50*time.Millisecond, "the name to leave aks01's gateway", func(ctx context.Context) (bool, string, error) {
		ans, err := zone.Dig(ctx, name, "A")
		if err != nil {
			return false, "", err
		}
		if shown := strings.Join(ans.Shorts(), " | "); len(seen) == 0 || seen[len(seen)-1] != shown {
			seen = append(seen, shown)
		}
		for _, m := range []*failoverMember{aks02, aks03} {
			if framework.SameRecords(ans, chain(m)) {
				winner = m
			}
		}
		return winner != nil, strings.Join(seen, " -> "), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	loser = aks03
	if winner == aks03 {
		loser = aks02
	}
	t.Logf("%s won the race %s after the kill; seen: %s", winner.cluster, time.Since(killed).Round(time.Millisecond), strings.Join(seen, " -> "))
	// Both tried, and the zone's prerequisite refused exactly one: the loser's writes are counted
	// when they return, a moment after the winner's.
	writes := func(m *failoverMember, result string) float64 {
		return m.metrics(ctx, t)[fmt.Sprintf(`service_router_failover_ownership_writes_total{result=%q,zone=%q}`, result, controller)]
	}
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "both stand-ins' ownership writes counted", func(context.Context) (bool, string, error) {
		got := fmt.Sprintf("%s passed %v changed %v; %s passed %v changed %v", winner.cluster, writes(winner, "passed"), writes(winner, "changed"),
			loser.cluster, writes(loser, "passed"), writes(loser, "changed"))
		return writes(winner, "passed") == 1 && writes(loser, "changed") == 1, got, nil
	})
	if err != nil {
		t.Errorf("want one write passed by the winner and one refused by the zone's prerequisite for the loser: %v", err)
	}
	if n := writes(winner, "changed") + writes(loser, "passed") + writes(winner, "refused") + writes(loser, "refused"); n != 0 {
		t.Errorf("%v other ownership writes counted, want none", n)
	}
	if n := path.ConditionalUpdates(); n != 2 {
		t.Errorf("the stand-ins sent %d conditional writes to the zone, want 2 (one each)", n)
	}
	if len(seen) != 2 {
		t.Errorf("want one switch, from aks01's gateway straight to the winner's; seen: %s", strings.Join(seen, " -> "))
	}
	for _, m := range []*failoverMember{aks02, aks03} {
		waitRegion(ctx, t, m, "weu", "Lost", "HeartbeatStale", diag)
	}
	stable(t, "the winner keeps the name", []framework.Query{q}, [][]string{chain(winner)}, aks02.ed, aks03.ed)
	recs := framework.LogZone(ctx, t, "after the race", zone)
	var targets []string
	intermediate := naming.IntermediateName("internal", failoverNS, "weu", w.domain) + "."
	for _, r := range recs {
		// One write moves the name: its intermediate's CNAME, which no ExternalDNS owns.
		switch {
		case r.Name == intermediate && r.Type == "CNAME":
			targets = append(targets, r.Data)
		case r.Name == "weu-d-cname-"+intermediate && r.Type == "TXT":
			t.Errorf("an ownership record for the intermediate: %s", r.Data)
		}
	}
	if len(targets) != 1 || targets[0] != winner.target(w.domain)+"." {
		t.Errorf("the intermediate points at %q, want the winner's gateway %s alone", targets, winner.target(w.domain))
	}
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "the winner to count the name, the loser nothing", func(ctx context.Context) (bool, string, error) {
		won, lost := takenNames(dnsConfig(ctx, t, winner), "weu", controller), takenNames(dnsConfig(ctx, t, loser), "weu", controller)
		return won == 1 && lost == 0, fmt.Sprintf("%s took %d, %s took %d", winner.cluster, won, loser.cluster, lost), nil
	})
	if err != nil {
		t.Error(err)
	}
	says := fmt.Sprintf("served by cluster %s, of region %s, for region weu", winner.cluster, winner.region)
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, loser.cluster+"'s route to say who serves the name", func(ctx context.Context) (bool, string, error) {
		r := &routingv1alpha1.ServiceRoute{}
		if err := loser.cl.Client.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: "api-route"}, r); err != nil {
			return false, "", err
		}
		for _, z := range r.Status.Zones {
			if z.Controller == controller {
				return strings.Contains(z.Answer, says), fmt.Sprintf("%s: %s", z.State, z.Answer), nil
			}
		}
		return false, "no zone " + controller, nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestFailover_TheStandInsAPIServerRestartsMidFailover is a takeover while the stand-in's own
// control plane fails: aks01 (weu) is killed, and a second later aks02's kube-apiserver is killed
// with SIGKILL and started again apiServerDown later (etcd keeps everything), so that aks02's
// judgement of the loss and its pass of the name fall into its API server's absence, and the test
// asserts they did: the name switched before the API server was started again. The pass needs
// only the zone; what needs the API server (the DNSEndpoint's marks, the dns-config's status, the
// route's) follows once it is back. The name switches directly to aks02's gateway; aks02 counts it taken
// and its DNSEndpoint says from which region; the route says this cluster serves the name; the
// operator kept running and the DNSEndpoints kept their UIDs.
func TestFailover_TheStandInsAPIServerRestartsMidFailover(t *testing.T) {
	ctx := t.Context()
	const controller = failoverController
	w, zone, diag := startPartitionedBindWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	name, chain := w.hostname(failoverNS), w.chain
	q := zone.Query(name, "A")
	uids := endpointUIDs(ctx, t, aks01, aks02)

	// The world's settings judge a silent region lost once its heartbeat is 5 s stale and 3 probes
	// 1 s apart have failed: about 5-11 s after the kill (heartbeats are read every second), the
	// pass right after. The API server is away for twice the latest of that.
	const apiServerDown = 20 * time.Second
	killed := w.kill()
	time.Sleep(time.Second)
	type restart struct {
		err      error
		down, up time.Time
	}
	restarted := make(chan restart, 1)
	go func() {
		// RestartAPIServer kills it at once and returns once the new one serves.
		down := time.Now()
		err := aks02.cl.Env.RestartAPIServer(ctx, apiServerDown)
		restarted <- restart{err, down, time.Now()}
	}()
	watching := time.Now()
	tr := directSwitch(t, fmt.Sprintf("aks01 killed, aks02's API server down from 1 s to %s after", apiServerDown+time.Second), q, chain(aks01), chain(aks02), killed, diag)
	switched := watching.Add(tr.Seen[len(tr.Seen)-1].At)
	r := <-restarted
	if r.err != nil {
		t.Fatal(r.err)
	}
	// The switch is when dig first saw the new answer (every 50 ms), once it had seen the old one.
	if len(tr.Seen) < 2 {
		t.Errorf("the name had switched before the watch began: when cannot be told")
	}
	since := func(at time.Time) string { return at.Sub(killed).Round(time.Millisecond).String() }
	t.Logf("after the kill: the API server down at %s, the name switched at %s, the API server serving again at %s", since(r.down), since(switched), since(r.up))
	if !switched.After(r.down) || !switched.Before(r.up) {
		t.Errorf("the name switched at %s after the kill, outside the API server's absence (%s to %s): the pass did not happen while it was away",
			since(switched), since(r.down), since(r.up))
	}
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "aks02 to count the name and mark its DNSEndpoint", func(ctx context.Context) (bool, string, error) {
		n, mark := takenNames(dnsConfig(ctx, t, aks02), "weu", controller), endpointAnnotation(ctx, t, aks02, failoverNS, "api-route-"+controller, naming.AnnotationTakenFrom)
		return n == 1 && mark == "weu", fmt.Sprintf("%d taken, marked as taken from %q", n, mark), nil
	})
	if err != nil {
		t.Error(err)
	}
	waitRouteZone(ctx, t, aks02, controller, routingv1alpha1.ZonePublished, "served by this cluster, of region neu, for region weu")
	if !aks02.op.Running() {
		t.Errorf("aks02's operator exited while its API server was away\n%s", aks02.op.Diagnostics())
	}
	if after := endpointUIDs(ctx, t, aks01, aks02); !slices.Equal(after, uids) {
		t.Errorf("the DNSEndpoints were replaced: UIDs %v, then %v", uids, after)
	}
}

// startPartitionedBindWorld starts the BIND failover world, publishes the routes from both
// clusters (publishBoth) and waits until aks02 judges weu as the world's partition leaves it:
// Unreachable, its heartbeat vouching for it (WitnessSaysAlive). It returns the diagnostics of
// the operators, the ExternalDNS instances and the zone.
func startPartitionedBindWorld(t *testing.T) (*failoverWorld, *framework.BindServer, func() []func() string) {
	t.Helper()
	w, zone := startBindFailoverWorld(t)
	diag := func() []func() string { return append(w.diagnostics(), zone.Diagnostics) }
	w.publishBoth(diag, zone)
	waitRegion(t.Context(), t, w.aks02, "weu", "Unreachable", "WitnessSaysAlive", diag)
	return w, zone, diag
}

// directSwitch watches q with dig every 50 ms until it answers to, logs how long after since that
// took, and fails the test unless the answer went from from to to directly: no NXDOMAIN, nothing
// between.
func directSwitch(t testing.TB, title string, q framework.Query, from, to []string, since time.Time, diag func() []func() string) framework.Trace {
	t.Helper()
	tr, err := framework.Converge(t.Context(), q, framework.Resolves(to...), 2*convergeTimeout, 50*time.Millisecond, diag()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s answers %s %s later; seen: %s", title, q, strings.Join(to, " | "), time.Since(since).Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, from) {
		t.Errorf("%s: want a direct switch from %s to %s, seen: %s", title, strings.Join(from, " | "), strings.Join(to, " | "), tr)
	}
	return tr
}

// TestFailover_AnIsolatedClusterIsTakenOver is the cluster cut off from its peer and from the
// zones (docs/ARCHITECTURE.md, "A cluster cut off from its peers and from the zones"): aks01
// reaches the weu zone through a path of its own (a framework.DNSProxy for its operator and its
// ExternalDNS), and the two clusters' probes of each other fail throughout (the world's
// partition), while aks01's gateway keeps answering its own probes.
//
//  1. Cut off: aks01's heartbeat can no longer be written; aks02 finds it stale and its probes
//     failing, judges weu Lost and takes the name, a direct switch. That is decided, not an
//     accident: the zones are what clients resolve, and aks01 can no longer write them. aks01,
//     which reads no zone, judges nothing lost (neu: WitnessUnreadable) and moves nothing.
//  2. Back: the path heals and aks01 writes its heartbeat again; aks02 judges weu Unreachable
//     (WitnessSaysAlive: a partition, as before). The ownership record fences aks01's
//     ExternalDNS and, the team's failback Manual, the name stays with aks02: no swing back
//     and forth while the link flaps.
func TestFailover_AnIsolatedClusterIsTakenOver(t *testing.T) {
	ctx := t.Context()
	var path *framework.DNSProxy
	w, zone := startBindFailoverWorldVia(t, nil, func(zone *framework.BindServer, m *failoverMember) (int, int) {
		if m.cluster != "aks01" {
			return 0, 0
		}
		var err error
		if path, err = framework.StartDNSProxy(t, zone.Port); err != nil {
			t.Fatal(err)
		}
		return path.Port, path.Port
	})
	aks01, aks02 := w.aks01, w.aks02
	diag := func() []func() string { return append(w.diagnostics(), zone.Diagnostics) }
	name, chain := w.hostname(failoverNS), w.chain
	q := zone.Query(name, "A")
	w.publishBoth(diag, zone)
	waitRegion(ctx, t, aks02, "weu", "Unreachable", "WitnessSaysAlive", diag)
	waitRegion(ctx, t, aks01, "neu", "Unreachable", "WitnessSaysAlive", diag)

	// 1. Cut off.
	cut := time.Now()
	path.Cut()
	directSwitch(t, "1. aks01 cut off", q, chain(aks01), chain(aks02), cut, diag)
	waitRegion(ctx, t, aks02, "weu", "Lost", "HeartbeatStale", diag)
	waitRegion(ctx, t, aks01, "neu", "Unreachable", "WitnessUnreadable", diag)

	// 2. Back.
	healed := time.Now()
	path.Heal()
	waitRegion(ctx, t, aks02, "weu", "Unreachable", "WitnessSaysAlive", diag)
	t.Logf("2. the path healed: aks02 finds weu alive again %s later", time.Since(healed).Round(time.Millisecond))
	waitSyncs(ctx, t, time.Now(), aks01.ed)
	stable(t, "2. back, fenced: the name stays with aks02", []framework.Query{q}, [][]string{chain(aks02)}, aks01.ed, aks02.ed)
	if got := takenNames(dnsConfig(ctx, t, aks02), "weu", failoverController); got != 1 {
		t.Errorf("2. aks02 says it holds %d names of weu, want 1", got)
	}
}

// TestFailover_AStaleTSIGKeyMovesNothingUntilTheSecretFollows is a takeover that meets a key the
// zone no longer takes: the zone's TSIG key was rotated and aks02's Secret (its mounted key file)
// still holds the one before. aks01 (weu) is killed while the clusters' probes of each other fail;
// aks02's signed reads and writes are refused, so the zone says nothing to it: weu stays
// Unreachable and the name aks01's, with nothing half done, while aks02's status says which zone
// did not answer it and why. Once the Secret holds the zone's key (the operator reads the file
// every round, as the kubelet updates a mounted Secret), the name moves: a direct switch.
func TestFailover_AStaleTSIGKeyMovesNothingUntilTheSecretFollows(t *testing.T) {
	ctx := t.Context()
	w, zone, diag := startPartitionedBindWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	name, chain := w.hostname(failoverNS), w.chain
	q := zone.Query(name, "A")

	keyFile := dnsConfig(ctx, t, aks02).Spec.ExternalDNSControllers[0].Failover.TSIG.SecretFile
	current, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	stale := make([]byte, 32)
	if _, err := rand.Read(stale); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(stale)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	killed := w.kill()
	// The heartbeat aks02 saw last would be stale 5 s after the kill: watch well past it.
	for time.Since(killed) < 3*5*time.Second {
		stable(t, "aks02's key stale: nothing moves", []framework.Query{q}, [][]string{chain(aks01)}, aks02.ed)
	}
	st := regionStatus(ctx, t, aks02, "weu")
	if st.State != "Unreachable" || !strings.Contains(st.Message, "zone "+failoverController+" did not answer this cluster: ") {
		t.Errorf("aks02's status does not say the zone did not answer: %s (%s): %s", st.State, st.Reason, st.Message)
	}
	t.Logf("aks02's status with the stale key: %s (%s): %s", st.State, st.Reason, st.Message)

	updated := time.Now()
	if err := os.WriteFile(keyFile, current, 0o600); err != nil {
		t.Fatal(err)
	}
	directSwitch(t, "the Secret updated", q, chain(aks01), chain(aks02), updated, diag)
	waitRegion(ctx, t, aks02, "weu", "Lost", "HeartbeatStale", diag)
}
