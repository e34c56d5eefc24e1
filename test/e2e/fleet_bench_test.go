//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkFleet_AzureBudget measures what a fleet's operators ask of Azure Resource Manager at
// rest (`make bench`), against the stand-in's enforced limits: for each fleet size (FLEET_CLUSTERS,
// default 2,4,6 clusters) the fleet world with 10 regional zones (r0 … r9) of 3,000 names each
// (about 6,000 record sets: a CNAME and its ownership TXT record set per name), every cluster a
// real operator process against its own control plane with a service principal of its own, and
// the real ExternalDNS for zone r0 of aks01 (the other cluster-zones' ExternalDNS modelled from
// its counts, not run). Once the fleet has settled (every gateway Published in every zone, every
// other region judged Serving, every zone read), the stand-in's usage starts anew and a
// steady-state window (FLEET_WINDOW, default 6m) is counted: per cluster and zone, per principal
// and per subscription, against 10,000 reads and 1,000 writes per 5 minutes and the token
// buckets, and per zone against Private DNS's per-zone limits (100 lists, 200 gets, 60 creates,
// updates and deletes a minute), then extrapolated to 20 clusters × the zones, each cluster's
// ExternalDNS at the interval that keeps a zone within its lists (budget.ExternalDNSInterval, as
// the operator guide recommends). The benchmark fails when a request is throttled (429) or held,
// an operator sends a zone more than the documented schedule's bound (restSchedule.zoneBound) or
// any delete, or a documented limit is crossed, measured or extrapolated. Last, the first cluster
// is lost at once (its gateway stops answering, its operator stops) and the time every other
// cluster takes to judge its region Lost is reported against the design's bound for the heartbeat
// interval the fleet's size sets (s-to-lost: the slowest), with the survivors' list requests per
// zone meanwhile (loss-lists/zone/min); a 429 then, or those listings extrapolated to 19
// survivors above a zone's 100 a minute, fails it too.
func BenchmarkFleet_AzureBudget(b *testing.B) {
	sizes, err := fleetSizes(os.Getenv("FLEET_CLUSTERS"))
	if err != nil {
		b.Fatal(err)
	}
	window := 6 * time.Minute
	if v := os.Getenv("FLEET_WINDOW"); v != "" {
		if window, err = time.ParseDuration(v); err != nil || window <= 0 {
			b.Fatalf("FLEET_WINDOW=%q: want a duration such as 6m", v)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			for range b.N {
				opts := fleetOptions{clusters: n, zones: 10, names: 3000, externalDNS: true}
				f := startFleet(b, opts)
				b.Logf("settled in %s", f.settle().Round(time.Second))
				w := f.measure(window)
				fig := f.log(b, w)
				over, throttled, held := 0, fig.subscription.Total().Throttled, 0
				for _, m := range f.members {
					reads, writes := documentedRest.zoneBound(m.started, w.from, w.to, w.pages, opts.clusters, opts.zones)
					for _, r := range f.regions {
						z := w.zones[m.cluster][r]
						held += z.held
						if z.reads > reads || z.writes > writes || z.deletes > 0 {
							over++
							b.Errorf("%s, zone %s: %d reads, %d writes and %d deletes, beyond the documented schedule's %d, %d and none for this window", m.cluster, r, z.reads, z.writes, z.deletes, reads, writes)
						}
					}
				}
				b.Logf("%d cluster-zones beyond the documented schedule; %d requests throttled (429), %d held by the operators", over, throttled, held)
				// A documented limit crossed, measured or extrapolated, fails the benchmark: the
				// figures are a claim the operator guide makes.
				if throttled > 0 || held > 0 {
					b.Errorf("%d requests throttled (429) and %d held in the window: the fleet does not fit the limits at rest%s", throttled, held, f.diagnostics())
				}
				for _, finding := range append(f.zoneLimitFindings(w), fig.crossings...) {
					b.Error(finding)
				}
				minutes := w.minutes()
				sub := fig.subscription
				b.ReportMetric(fig.operatorReads, "reads/zone/min")
				b.ReportMetric(fig.operatorWrites, "writes/zone/min")
				b.ReportMetric(float64(sub.Read.Admitted+sub.Read.Throttled)/minutes*5, "sub-reads/5min")
				b.ReportMetric(float64(sub.Write.Admitted+sub.Write.Throttled+sub.Delete.Admitted+sub.Delete.Throttled)/minutes*5, "sub-writes/5min")
				b.ReportMetric(fig.edReads, "externaldns-reads/min")
				b.ReportMetric(float64(throttled), "429s")
				// Then the time to fail over at this size: how long the others take to judge a
				// region lost.
				l := f.lose()
				b.Log(l)
				for _, finding := range l.findings(f) {
					b.Error(finding)
				}
				b.ReportMetric(l.slowest().Seconds(), "s-to-lost")
				b.ReportMetric(l.survivorLists, "loss-lists/zone/min")
			}
		})
	}
}

// fleetSizes reads FLEET_CLUSTERS ("2,4,6" when empty).
func fleetSizes(v string) ([]int, error) {
	if v == "" {
		v = "2,4,6"
	}
	var out []int
	for s := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 || n > 250 {
			return nil, fmt.Errorf("FLEET_CLUSTERS=%q: want comma-separated cluster counts from 2 to 250", v)
		}
		out = append(out, n)
	}
	return out, nil
}
