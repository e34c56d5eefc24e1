package failover

import "time"

// ZoneBackoff keeps a zone that did not answer out of the next rounds for a while. A zone's reads
// and writes are bounded by a timeout (5 s for RFC 2136); a zone cut off the network spends all
// of it on every read and every heartbeat write, and a round that waits for it spends the sum:
// measured, one unreachable zone of three stretched a takeover in the other two from 8 s to 42 s.
// Skipped, the zone says nothing (it counts as unread, as it would after its timeout) and the round
// goes on at its pace with the zones that answer. The first wait is one probe interval, or as long
// as the failed attempt took when that is longer (a zone that costs a round its timeout is then
// tried in at most every other stretch of that length); each failure after it doubles the wait,
// up to the heartbeat's stale bound: a zone that comes back has this cluster's heartbeat again
// within about that bound, and one zone where it is stale for a while is no majority.
type ZoneBackoff struct {
	// Until is when the zone is tried again; Wait how long it was skipped for last.
	Until time.Time
	Wait  time.Duration
	// Err is the failure that started the wait.
	Err error
}

// Skip says the zone is left out of the round at now.
func (b ZoneBackoff) Skip(now time.Time) bool { return now.Before(b.Until) }

// After is the backoff after the zone was tried, its answer (or its failure) come at now after
// took: none when it answered (err nil); else skipped for first or took, whichever is longer, or
// for twice the last wait, at most most (and never less than took).
func (b ZoneBackoff) After(err error, now time.Time, took, first, most time.Duration) ZoneBackoff {
	if err == nil {
		return ZoneBackoff{}
	}
	wait := max(first, took)
	if b.Wait > 0 {
		wait = max(min(2*b.Wait, most), took)
	}
	return ZoneBackoff{Until: now.Add(wait), Wait: wait, Err: err}
}
