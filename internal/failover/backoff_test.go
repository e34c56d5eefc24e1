package failover

import (
	"errors"
	"testing"
	"time"
)

func TestZoneBackoff(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	timeout := errors.New("i/o timeout")
	const first, most = 5 * time.Second, 15 * time.Second
	tests := []struct {
		name     string
		before   ZoneBackoff
		err      error
		took     time.Duration
		wantWait time.Duration
	}{
		{"answered: no backoff", ZoneBackoff{}, nil, time.Millisecond, 0},
		{"answered after failing: the backoff ends", ZoneBackoff{Until: now, Wait: 10 * time.Second, Err: timeout}, nil, time.Millisecond, 0},
		{"first failure, at once (refused): one probe interval", ZoneBackoff{}, timeout, time.Millisecond, first},
		{"first failure after a timeout longer than the interval: as long as it took", ZoneBackoff{}, timeout, 8 * time.Second, 8 * time.Second},
		{"failed again: twice the last wait", ZoneBackoff{Until: now, Wait: first, Err: timeout}, timeout, time.Millisecond, 10 * time.Second},
		{"at most the stale bound", ZoneBackoff{Until: now, Wait: 10 * time.Second, Err: timeout}, timeout, time.Millisecond, most},
		{"stays at the most", ZoneBackoff{Until: now, Wait: most, Err: timeout}, timeout, time.Millisecond, most},
		{"never less than the failure took", ZoneBackoff{Until: now, Wait: most, Err: timeout}, timeout, 20 * time.Second, 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.before.After(tt.err, now, tt.took, first, most)
			if got.Wait != tt.wantWait || !got.Until.Equal(now.Add(tt.wantWait)) && tt.wantWait > 0 {
				t.Errorf("After = %+v, want a wait of %s", got, tt.wantWait)
			}
			if got.Skip(now.Add(tt.wantWait-time.Millisecond)) != (tt.wantWait > 0) {
				t.Errorf("Skip just before the wait ends = %v, want %v", !(tt.wantWait > 0), tt.wantWait > 0)
			}
			if got.Skip(now.Add(tt.wantWait)) {
				t.Error("still skipped once the wait is over")
			}
		})
	}
}
