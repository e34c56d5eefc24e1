package bench

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSummarize_EveryRunAndTheMedianBesideTheGoals(t *testing.T) {
	t.Setenv("SCALE_CONTROL_PLANE_CPUS", "1")
	run := func(cold, fanOut time.Duration, rss int64) *report {
		floor := floorRun{cold: 20 * time.Second, fanOut: 20 * time.Second}
		return &report{routes: judgedRoutes, load: "1.00 1.00 1.00", floorBefore: floor, floorAfter: floor, cold: cold, fanOut: fanOut, peakRSS: rss << 20}
	}
	var out bytes.Buffer
	got := summarize(&out, []*report{run(22*time.Second, 19*time.Second, 50), run(19*time.Second, 26*time.Second, 59), run(26*time.Second, 20*time.Second, 55)})
	assert.InDelta(t, 1.10, got["cold/floor"], 1e-9, "the median, not the mean (1.12) nor the last run")
	assert.InDelta(t, 1.00, got["fanout/floor"], 1e-9)
	assert.Equal(t, 59.0, got["peak-MiB"], "the peak of any run")
	assert.Contains(t, out.String(), "| 2 | 0.95 | 1.30 | 1.00 1.00 1.00 |")
	assert.Contains(t, out.String(), "| **median** | **1.10** (goal missed) | **1.00** (goal met) | |")
	assert.NotContains(t, out.String(), "not the judged setting")

	out.Reset()
	summarize(&out, []*report{run(20*time.Second, 20*time.Second, 50)})
	assert.Contains(t, out.String(), "not the judged setting", "one run is reported, and said not to be the judged one")

	// Everything on the same cores: judged by the goals of that setting.
	t.Setenv("SCALE_CONTROL_PLANE_CPUS", "")
	out.Reset()
	summarize(&out, []*report{run(28*time.Second, 19*time.Second, 50), run(31*time.Second, 26*time.Second, 59), run(26*time.Second, 33*time.Second, 55)})
	assert.Contains(t, out.String(), "goals: cold ≤ 1.50, fan-out ≤ 1.50, median of the runs at 3,000 routes with everything on the same cores")
	assert.Contains(t, out.String(), "| **median** | **1.40** (goal met) | **1.30** (goal met) | |")
	assert.NotContains(t, out.String(), "not the judged setting")
}

func TestHistogramQuantile_InterpolatesInsideBuckets(t *testing.T) {
	buckets := map[float64]float64{1: 0, 2: 10, 5: 90, 10: 100, math.Inf(1): 100}
	assert.InDelta(t, 2+3*40.0/80, histogramQuantile(0.5, buckets), 1e-9, "rank 50 lies 40 of 80 into (2, 5]")
	assert.InDelta(t, 5+5*5.0/10, histogramQuantile(0.95, buckets), 1e-9)
	assert.Zero(t, histogramQuantile(0.5, map[float64]float64{1: 0, math.Inf(1): 0}), "nothing observed")
}

func TestPercentile_NearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 20; i++ {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	assert.Equal(t, 10*time.Second, percentile(ds, 0.5))
	assert.Equal(t, 19*time.Second, percentile(ds, 0.95))
	assert.Zero(t, percentile(nil, 0.5))
}
