//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
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
	w, zone := startBindFailoverWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	diag := func() []func() string { return append(w.diagnostics(), zone.Diagnostics) }
	name := w.hostname(failoverNS)
	chain := func(m *failoverMember) []string { return []string{"CNAME " + m.target(w.domain) + ".", "A " + m.lbIP} }
	q := zone.Query(name, "A")
	at := w.publish(aks01)
	waitAnswer(ctx, t, at, q, chain(aks01), diag()...)
	at = w.publish(aks02)
	waitAnswer(ctx, t, at, zone.Query(aks02.target(w.domain), "A"), []string{"A " + aks02.lbIP}, diag()...)
	waitSyncs(ctx, t, at, aks01.ed, aks02.ed)
	waitRegion(ctx, t, aks02, "weu", "Unreachable", "WitnessSaysAlive", diag)
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
	tr, err := framework.Converge(ctx, q, framework.Resolves(chain(aks02)...), 2*convergeTimeout, 50*time.Millisecond, diag()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2. the edit reverted: %s answers aks02's gateway %s later; seen: %s", name, time.Since(reverted).Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, chain(aks01)) {
		t.Errorf("2. want a direct switch from aks01's gateway to aks02's, seen: %s", tr)
	}
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
// read and heartbeat write, and the takeover in weu and neu took 42 s instead of about 8.
func TestFailover_AZoneUnreachableHoldsBackOnlyItself(t *testing.T) {
	ctx := t.Context()
	w, zones := startEveryZoneWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	name := w.hostname(failoverNS)
	chain := func(m *failoverMember) []string { return []string{"CNAME " + m.target(w.domain) + ".", "A " + m.lbIP} }
	diag := func() []func() string { return zonesDiagnostics(w, zones) }
	at := w.publish(aks01)
	for _, r := range worldRegions {
		waitAnswer(ctx, t, at, zones[r].Query(name, "A"), chain(aks01), diag()...)
	}
	at = w.publish(aks02)
	for _, r := range worldRegions {
		waitAnswer(ctx, t, at, zones[r].Query(aks02.target(w.domain), "A"), []string{"A " + aks02.lbIP}, diag()...)
	}
	waitSyncs(ctx, t, at, append(slices.Clone(aks01.eds), aks02.eds...)...)
	// aks02's ExternalDNS instances run on events alone (startEveryZoneWorld): wait out the run its
	// own status writes cause, so that none transfers frc while it is stopped. One that did would
	// meet ExternalDNS's own fault (TestExternalDNS_ATransferTimeoutTakesEveryName), not ours.
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
	traces := followZones(t, zones, []string{"weu", "neu"}, name, chain(aks02), diag)
	for _, r := range []string{"weu", "neu"} {
		tr := traces[r]
		t.Logf("1. zone %s: %s answers aks02's gateway %s after aks01 was killed, frc unreachable; seen: %s", r, name, tr.Took.Round(time.Millisecond), tr)
		if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, chain(aks01)) {
			t.Errorf("1. zone %s: want a direct switch from aks01's gateway to aks02's, seen: %s", r, tr)
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
	tr := followZones(t, zones, []string{"frc"}, name, chain(aks02), diag)["frc"]
	t.Logf("2. zone frc answers again: %s answers aks02's gateway there %s later (%s after the kill); seen: %s", name, time.Since(back).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, chain(aks01)) {
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
