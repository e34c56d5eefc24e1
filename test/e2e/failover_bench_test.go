//go:build e2e

package e2e

import (
	"cmp"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/zonewriter"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// BenchmarkFailover_TimeToFailOver measures the time to fail over (`make bench`) in the BIND
// failover world (1 s probes, threshold 3, heartbeats every 1 s, stale after 5 s, ExternalDNS
// --interval=500ms), as a ratio to its floor measured in the same run: the same loss with the
// takeover done by hand at the instant of loss (one conditional rewrite of the intermediate's
// CNAME). Both are timed from the loss to the zone answering the survivor's gateway; the
// difference is the operator's detection, which the heartbeat's staleness bounds on purpose. With
// FAILOVER_SETTINGS=defaults the operators run with the default settings (5 s probes, heartbeats
// every 10 s, stale after 30 s).
func BenchmarkFailover_TimeToFailOver(b *testing.B) {
	for range b.N {
		w, zone := startBindFailoverWorld(b)
		ctx := b.Context()
		name := w.hostname(failoverNS)
		chain := w.chain
		q := zone.Query(name, "A")
		at := w.publish(w.aks01)
		waitAnswer(ctx, b, at, q, chain(w.aks01))
		at = w.publish(w.aks02)
		waitSyncs(ctx, b, at, w.aks01.ed, w.aks02.ed)

		writer := zonewriter.RFC2136{Server: fmt.Sprintf("127.0.0.1:%d", zone.Port), Zone: zone.Zone,
			TSIGName: zone.TSIG.Name, TSIGAlgorithm: zone.TSIG.Algorithm, TSIGSecret: zone.TSIG.Secret}
		byHand := func(from, to *failoverMember) {
			b.Helper()
			// The floor moves what the operator moves: the name's intermediate, one CNAME.
			intermediate := naming.IntermediateName("internal", failoverNS, "weu", w.domain)
			if err := writer.WriteIntermediate(ctx, intermediate, 300, from.target(w.domain), to.target(w.domain)); err != nil {
				b.Fatal(err)
			}
		}
		timeTo := func(want []string, since time.Time) time.Duration {
			b.Helper()
			if _, err := framework.Converge(ctx, q, framework.Resolves(want...), 2*convergeTimeout, 50*time.Millisecond); err != nil {
				b.Fatal(err)
			}
			return time.Since(since)
		}

		// The floor: the loss, and at once the takeover by hand.
		lost := w.lose()
		byHand(w.aks01, w.aks02)
		floor := timeTo(chain(w.aks02), lost)
		// Back to the start: the name passed back by hand, aks01 running again and vouched for.
		byHand(w.aks02, w.aks01)
		w.comeBack()
		timeTo(chain(w.aks01), time.Now())
		waitRegion(ctx, b, w.aks02, "weu", "Unreachable", "WitnessSaysAlive", w.diagnostics)

		// The operator: the same loss, nobody at the keyboard.
		lost = w.lose()
		took := timeTo(chain(w.aks02), lost)
		b.ReportMetric(floor.Seconds(), "floor-s")
		b.ReportMetric(took.Seconds(), "failover-s")
		b.ReportMetric(took.Seconds()/floor.Seconds(), "ratio")
		b.Logf("settings %q: time to fail over %s, floor (takeover by hand at the loss) %s: %.1f times the floor",
			cmp.Or(os.Getenv("FAILOVER_SETTINGS"), "fast"), took.Round(time.Millisecond), floor.Round(time.Millisecond), took.Seconds()/floor.Seconds())
	}
}
