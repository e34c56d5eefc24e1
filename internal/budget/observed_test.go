package budget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
)

var t0 = time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)

func TestDue_OneFigureAWindow(t *testing.T) {
	start := Sample{At: t0, Counts: Counts{Reads: 10, Writes: 5}}
	later := func(d time.Duration, c Counts) Sample { return Sample{At: t0.Add(d), Counts: c} }
	for _, tc := range []struct {
		name string
		prev Sample
		ok   bool
		cur  Sample
		keep Sample
		due  bool
	}{
		{"the first sample starts a window", Sample{}, false, start, start, false},
		{"within the window: keep its start", start, true, later(30*time.Second, Counts{Reads: 12, Writes: 6}), start, false},
		{"just before the window ends", start, true, later(RateWindow-time.Second, Counts{Reads: 50, Writes: 5}), start, false},
		{"the window has passed: report, start the next", start, true, later(RateWindow+20*time.Second, Counts{Reads: 52, Writes: 35}),
			later(RateWindow+20*time.Second, Counts{Reads: 52, Writes: 35}), true},
		{"counters that went back start again", start, true, later(RateWindow, Counts{Reads: 3}), later(RateWindow, Counts{Reads: 3}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keep, due := Due(tc.prev, tc.ok, tc.cur)
			assert.Equal(t, tc.keep, keep)
			assert.Equal(t, tc.due, due)
		})
	}
}

func TestRequests_RatesThrottlesAndTheQuotaLastSeen(t *testing.T) {
	prev := Sample{At: t0, Counts: Counts{Reads: 100, Writes: 40, Throttled: 1}}
	cur := Sample{At: t0.Add(5*time.Minute + 300*time.Millisecond), Counts: Counts{Reads: 121, Writes: 70, Throttled: 3}}
	seenReads, seenWrites := t0.Add(4*time.Minute+100*time.Millisecond), t0.Add(4*time.Minute+30*time.Second+900*time.Millisecond)
	for _, tc := range []struct {
		name  string
		quota Quota
		want  *clusterv1alpha1.ZoneRequests
	}{
		{"with both figures: seen is the later one", Quota{Reads: 249, Writes: 198, ReadsSeen: seenReads, WritesSeen: seenWrites},
			&clusterv1alpha1.ZoneRequests{ReadsPerMinute: "4.2", WritesPerMinute: "6.0", Throttled: 2, RemainingReads: ptr.To[int32](249), RemainingWrites: ptr.To[int32](198),
				RemainingSeen: ptr.To(metav1.NewTime(t0.Add(4*time.Minute + 30*time.Second))), Window: metav1.Duration{Duration: 5 * time.Minute},
				MeasuredAt: metav1.NewTime(t0.Add(5 * time.Minute))}},
		{"no answer yet: no remaining figure", Quota{},
			&clusterv1alpha1.ZoneRequests{ReadsPerMinute: "4.2", WritesPerMinute: "6.0", Throttled: 2, Window: metav1.Duration{Duration: 5 * time.Minute},
				MeasuredAt: metav1.NewTime(t0.Add(5 * time.Minute))}},
		{"reads only", Quota{Reads: 0, ReadsSeen: seenReads},
			&clusterv1alpha1.ZoneRequests{ReadsPerMinute: "4.2", WritesPerMinute: "6.0", Throttled: 2, RemainingReads: ptr.To[int32](0),
				RemainingSeen: ptr.To(metav1.NewTime(t0.Add(4 * time.Minute))), Window: metav1.Duration{Duration: 5 * time.Minute},
				MeasuredAt: metav1.NewTime(t0.Add(5 * time.Minute))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Requests(prev, cur, tc.quota))
		})
	}
}

// A rate rounds to one decimal: windows of slightly different lengths with the same requests
// give the same figure.
func TestRequests_OneDecimal(t *testing.T) {
	prev := Sample{At: t0}
	for _, d := range []time.Duration{5 * time.Minute, 5*time.Minute + 10*time.Second} {
		r := Requests(prev, Sample{At: t0.Add(d), Counts: Counts{Reads: 1}}, Quota{})
		assert.Equal(t, "0.2", r.ReadsPerMinute)
		assert.Equal(t, "0.0", r.WritesPerMinute)
	}
}
