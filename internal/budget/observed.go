package budget

import (
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
)

// RateWindow is the least time a zone's observed rates are measured over: 5 minutes, the period
// at which a settled zone's requests repeat (one whole reading, one verification listing, ten
// heartbeat listings and thirty heartbeat writes with the defaults), so that the rates at rest
// are about the same window after window, and the status carrying them is written at most once a
// window for them.
const RateWindow = 5 * time.Minute

// Counts are a zone's requests since the operator started (azureprivatedns.ZoneUsage): the reads,
// and the writes and deletes, that reached Resource Manager, and those it answered with 429.
type Counts struct {
	Reads, Writes, Throttled int64
}

// Sample is a zone's counts at a time.
type Sample struct {
	At     time.Time
	Counts Counts
}

// Quota is what Resource Manager last said was left of the tokens of a zone's principal in its
// subscription (azureprivatedns.QuotaState), each figure with when it was seen (zero: never).
type Quota struct {
	Reads, Writes         int
	ReadsSeen, WritesSeen time.Time
}

// Due decides on a zone's sample at a reconcile: given the sample the window started with (ok
// false: none yet) and the counts now, it returns the sample to keep and whether a window has
// passed, so that the zone's requests are reported for prev to cur (Requests). A first sample,
// or counts that went back (the counters started again), start a window.
func Due(prev Sample, ok bool, cur Sample) (keep Sample, due bool) {
	c, p := cur.Counts, prev.Counts
	switch {
	case !ok, c.Reads < p.Reads, c.Writes < p.Writes, c.Throttled < p.Throttled:
		return cur, false
	case cur.At.Sub(prev.At) < RateWindow:
		return prev, false
	}
	return cur, true
}

// Requests is a zone's status block for the window from prev to cur (Due said it passed) and
// the quota last seen: the rates a minute with one decimal, the 429s of the window, the
// remaining tokens. Times are whole seconds, as the API stores them.
func Requests(prev, cur Sample, q Quota) *clusterv1alpha1.ZoneRequests {
	window := max(cur.At.Sub(prev.At).Round(time.Second), time.Second)
	perMinute := func(n int64) string {
		return strconv.FormatFloat(float64(n)/window.Minutes(), 'f', 1, 64)
	}
	r := &clusterv1alpha1.ZoneRequests{
		ReadsPerMinute:  perMinute(cur.Counts.Reads - prev.Counts.Reads),
		WritesPerMinute: perMinute(cur.Counts.Writes - prev.Counts.Writes),
		Throttled:       int32(min(cur.Counts.Throttled-prev.Counts.Throttled, 1<<31-1)),
		Window:          metav1.Duration{Duration: window},
		MeasuredAt:      metav1.NewTime(cur.At.Truncate(time.Second)),
	}
	seen := time.Time{}
	if !q.ReadsSeen.IsZero() {
		r.RemainingReads, seen = ptr.To(int32(q.Reads)), q.ReadsSeen
	}
	if !q.WritesSeen.IsZero() {
		r.RemainingWrites = ptr.To(int32(q.Writes))
		if q.WritesSeen.After(seen) {
			seen = q.WritesSeen
		}
	}
	if !seen.IsZero() {
		t := metav1.NewTime(seen.Truncate(time.Second))
		r.RemainingSeen = &t
	}
	return r
}
