package coalesce

import (
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestDue_QuietAfterLastChangeButNeverPastMaxWait(t *testing.T) {
	s := Settings{Quiet: 500 * time.Millisecond, MaxWait: 3 * time.Second}
	cases := []struct {
		name        string
		first, last int
		want        int
	}{
		{"one change: quiet period after it", 0, 0, 500},
		{"a short burst: quiet period after the last change", 0, 1200, 1700},
		{"a steady stream: the maximum wait after the first change", 0, 2800, 3000},
		{"a stream past the maximum wait: due already", 0, 5000, 3000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := s.Due(Pending{First: at(c.first), Last: at(c.last)}); !got.Equal(at(c.want)) {
				t.Errorf("Due = %v, want %v", got.Sub(t0), at(c.want).Sub(t0))
			}
		})
	}
}

// TestWindow_SteadyStreamIsWrittenAtMostOncePerMaxWait replays change and write attempts as a
// reconciler sees them and checks when writes go ahead.
func TestWindow_SteadyStreamIsWrittenAtMostOncePerMaxWait(t *testing.T) {
	type step struct {
		ms     int
		change bool // a change arrives; otherwise a write is attempted
		urgent bool
		want   time.Duration // Changed: delay until due; Take: wait (0: write now)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	cases := []struct {
		name  string
		steps []step
	}{
		{"nothing pending: write at once", []step{{ms: 0, want: 0}}},
		{"one change: written after the quiet period", []step{
			{ms: 0, change: true, want: ms(500)},
			{ms: 100, want: ms(400)},
			{ms: 500, want: 0},
			{ms: 600, want: 0}, // taken: nothing pending any more
		}},
		{"each change pushes the write back, up to the maximum wait", []step{
			{ms: 0, change: true, want: ms(500)},
			{ms: 400, change: true, want: ms(500)},
			{ms: 800, change: true, want: ms(500)},
			{ms: 1000, want: ms(300)},
			{ms: 2700, change: true, want: ms(300)},
			{ms: 2900, change: true, want: ms(100)},
			{ms: 3000, want: 0},
		}},
		{"a change after a write starts a new window", []step{
			{ms: 0, change: true, want: ms(500)},
			{ms: 500, want: 0},
			{ms: 510, change: true, want: ms(500)},
			{ms: 600, want: ms(410)},
			{ms: 1010, want: 0},
		}},
		{"an urgent write does not wait and takes the pending changes", []step{
			{ms: 0, change: true, want: ms(500)},
			{ms: 100, urgent: true, want: 0},
			{ms: 200, want: 0},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := New[string](Settings{Quiet: 500 * time.Millisecond, MaxWait: 3 * time.Second})
			for _, s := range c.steps {
				var got time.Duration
				if s.change {
					got = w.Changed("gw", at(s.ms))
				} else {
					got = w.Take("gw", at(s.ms), s.urgent)
				}
				if got != s.want {
					t.Fatalf("at %d ms (change %v): got %v, want %v", s.ms, s.change, got, s.want)
				}
			}
		})
	}
}

func TestWindow_KeysAreIndependent(t *testing.T) {
	w := New[string](DefaultSettings)
	w.Changed("a", at(0))
	if got := w.Take("b", at(10), false); got != 0 {
		t.Errorf("b has nothing pending, got wait %v", got)
	}
	if got := w.Take("a", at(10), false); got != 490*time.Millisecond {
		t.Errorf("a: got wait %v, want 490ms", got)
	}
	if w.Len() != 1 {
		t.Errorf("Len = %d, want 1", w.Len())
	}
}

func TestWindow_ZeroQuietDisablesCoalescing(t *testing.T) {
	w := New[string](Settings{})
	if got := w.Changed("a", at(0)); got != 0 {
		t.Errorf("Changed: got %v, want 0", got)
	}
	if got := w.Take("a", at(0), false); got != 0 {
		t.Errorf("Take: got %v, want 0", got)
	}
}

func TestDue_LargeObjectsStretchTheMaximumWaitNotTheQuietPeriod(t *testing.T) {
	s := Settings{Quiet: 500 * time.Millisecond, MaxWait: 3 * time.Second, BytesPerSecond: 32 << 10}
	cases := []struct {
		name        string
		bytes       int
		first, last int
		want        int
	}{
		{"size unknown: the maximum wait", 0, 0, 2800, 3000},
		{"small object: the maximum wait", 50_000, 0, 2800, 3000},
		{"at the threshold (96 KiB): the maximum wait", 96 << 10, 0, 2800, 3000},
		{"380 KB (10,000 hosts): stretched to size / rate", 380_000, 0, 11_300, 11_596},
		{"380 KB, burst over: the quiet period after its last change", 380_000, 0, 4000, 4500},
		{"1 MB: stretched", 1_000_000, 0, 40_000, 30_517},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := s.Due(Pending{First: at(c.first), Last: at(c.last), Bytes: c.bytes})
			if d := got.Sub(at(c.want)); d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("Due = %v, want %v", got.Sub(t0), at(c.want).Sub(t0))
			}
		})
	}
}

// TestWindow_SizedStretchesLaterChangesAndForgetDropsAll: the size recorded at a write applies
// to the changes that come after it, and a forgotten key has nothing pending and no size.
func TestWindow_SizedStretchesLaterChangesAndForgetDropsAll(t *testing.T) {
	w := New[string](Settings{Quiet: 500 * time.Millisecond, MaxWait: 3 * time.Second, BytesPerSecond: 32 << 10})
	w.Sized("gw", 655_360) // 20 s at 32 KiB/s
	firstWrite := -1
	for ms := 0; ms <= 25_000 && firstWrite < 0; ms += 100 {
		w.Changed("gw", at(ms))
		if w.Take("gw", at(ms), false) == 0 {
			firstWrite = ms
		}
	}
	if firstWrite != 20_000 {
		t.Errorf("steady stream on a 640 KiB object: first write at %d ms, want 20000 (20 s after the first change, not 3 s)", firstWrite)
	}
	w.Changed("gw", at(20_100))
	if wait := w.Take("gw", at(20_600), false); wait != 0 {
		t.Errorf("burst over: wait %v, want 0 (the quiet period is not stretched)", wait)
	}
	w.Forget("gw")
	if got := w.Changed("gw", at(20_000)); got != 500*time.Millisecond {
		t.Errorf("after Forget: due in %v, want the quiet period", got)
	}
	for ms := 20_000; ms <= 23_000; ms += 100 {
		w.Changed("gw", at(ms))
	}
	if wait := w.Take("gw", at(23_000), false); wait != 0 {
		t.Errorf("after Forget the size is unknown: wait %v, want 0 at the 3 s maximum wait", wait)
	}
}
