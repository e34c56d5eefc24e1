// Package guard holds back mass deletions of DNS records. ExternalDNS users lose whole zones to
// one mistaken edit (a controller removed from a configuration, a policy deleted in a busy
// namespace); with the guard, when one change asks for more than a share of the operator's
// records to go at once, each of those deletions waits for a grace period first. Reverting the
// edit within that period cancels them, and the records never leave the zone.
//
// The guard keeps its state in memory: a restarted operator starts with no deletion held, which
// errs on the side of the architecture's immediate deletion rather than blocking forever.
package guard

import (
	"sync"
	"time"
)

// Settings tune the guard. A zero Grace disables it.
type Settings struct {
	// Share is the fraction of all managed records (0-1) that, requested for deletion within
	// Window, trips the guard.
	Share float64
	// Minimum is the number of deletions within Window below which the guard never trips, so
	// that small clusters behave as the architecture describes.
	Minimum int
	// Window is how close together deletions must be requested to count as one change.
	Window time.Duration
	// Observe is how long every deletion waits while the guard counts the others the same
	// change asks for (the reconciles of one change finish within seconds of each other).
	Observe time.Duration
	// Grace is how long a deletion waits once the guard has tripped.
	Grace time.Duration
}

// DefaultSettings: a change asking for at least 10 records and more than a quarter of all of
// them to go within 30 seconds waits 2 minutes; any other deletion happens 5 seconds after it was
// decided.
var DefaultSettings = Settings{Share: 0.25, Minimum: 10, Window: 30 * time.Second, Observe: 5 * time.Second, Grace: 2 * time.Minute}

// Guard decides whether a deletion may proceed now. It is safe for concurrent use; a nil *Guard
// lets every deletion proceed.
type Guard struct {
	settings Settings
	// total counts the managed records that exist; it is called only when enough deletions
	// are requested to possibly trip the guard.
	total    func() int
	onChange func(tripped bool)

	mu sync.Mutex
	// pending maps each record waiting to be deleted to when its deletion was first asked for.
	pending map[string]time.Time
	// done maps records deleted within the window to when they went, so that a change deleting
	// many records one reconcile at a time is seen as one change.
	done    map[string]time.Time
	tripped bool
}

// New returns a guard. total counts the managed records; onChange is called (outside the lock)
// whenever the guard trips (true) or settles (false), so that status and metrics can follow.
func New(s Settings, total func() int, onChange func(tripped bool)) *Guard {
	if onChange == nil {
		onChange = func(bool) {}
	}
	return &Guard{settings: s, total: total, onChange: onChange, pending: map[string]time.Time{}, done: map[string]time.Time{}}
}

// Hold records that key is to be deleted and reports whether the deletion must wait, and until
// when. Every deletion first waits the short Observe delay, in which the guard sees how many
// others the same change asks for; when they are too many, each waits the Grace period from
// when it was first asked for. A held deletion proceeds when asked again after its time, if it
// is still wanted then.
func (g *Guard) Hold(key string, now time.Time) (until time.Time, held bool) {
	if g == nil || g.settings.Grace <= 0 {
		return time.Time{}, false
	}
	g.mu.Lock()
	g.expire(now)
	settled := g.settle()
	if _, allowed := g.done[key]; allowed {
		// Already allowed within the window: a retry (a failed or conflicting delete) is not held
		// again, and does not count twice.
		g.mu.Unlock()
		if settled {
			g.onChange(false)
		}
		return now, false
	}
	first, seen := g.pending[key]
	if !seen {
		first = now
		g.pending[key] = now
	}
	tripped := g.trip(len(g.done) + len(g.pending))
	wait := g.settings.Observe
	if g.tripped {
		wait = g.settings.Grace
	}
	until = first.Add(wait)
	held = now.Before(until)
	if !held {
		delete(g.pending, key)
		g.done[key] = now
	}
	settled = g.settle() || settled
	g.mu.Unlock()
	if tripped || settled {
		g.onChange(tripped)
	}
	return until, held
}

// Forget cancels a held deletion: the record is wanted again (the edit was reverted).
func (g *Guard) Forget(key string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	_, seen := g.pending[key]
	delete(g.pending, key)
	settled := seen && g.settle()
	g.mu.Unlock()
	if settled {
		g.onChange(false)
	}
}

// State is what status and metrics show.
type State struct {
	// Tripped says deletions are being held.
	Tripped bool
	// Held is how many deletions wait.
	Held int
	// Until is when the last of them may proceed.
	Until time.Time
	// Recheck is when State will have forgotten any of them nobody asked for again.
	Recheck time.Time
}

// State reports the guard's state at now, forgetting abandoned deletions first. Call it again
// at Recheck to see the guard settle even when no deletion is asked for any more.
func (g *Guard) State(now time.Time) State {
	if g == nil {
		return State{}
	}
	g.mu.Lock()
	g.expire(now)
	settled := g.settle()
	s := g.state()
	g.mu.Unlock()
	if settled {
		g.onChange(false)
	}
	return s
}

func (g *Guard) state() State {
	s := State{Tripped: g.tripped}
	if !g.tripped {
		return s
	}
	s.Held = len(g.pending)
	for _, first := range g.pending {
		if until := first.Add(g.settings.Grace); until.After(s.Until) {
			s.Until = until
		}
	}
	s.Recheck = s.Until.Add(abandonAfter + time.Second)
	return s
}

// abandonAfter is how long after its time a waiting deletion that nobody asked for again is
// forgotten. Every holder asks again when its time comes; one that does not had its object
// removed by someone else (a route deleted, so the garbage collector took its records). Should a
// slow holder ask later after all, its deletion just starts waiting afresh: the error is safe.
const abandonAfter = 15 * time.Second

// expire forgets deletions done longer ago than the window, and abandoned waiting ones.
func (g *Guard) expire(now time.Time) {
	for k, at := range g.done {
		if now.Sub(at) > g.settings.Window {
			delete(g.done, k)
		}
	}
	wait := g.settings.Observe
	if g.tripped {
		wait = g.settings.Grace
	}
	for k, first := range g.pending {
		if now.Sub(first) > wait+abandonAfter {
			delete(g.pending, k)
		}
	}
}

// trip trips the guard when requested deletions within the window reach the minimum and exceed
// the share of all records; it reports whether it tripped now.
func (g *Guard) trip(requested int) bool {
	if g.tripped || requested < g.settings.Minimum {
		return false
	}
	if float64(requested) <= g.settings.Share*float64(g.total()) {
		return false
	}
	g.tripped = true
	return true
}

// settle resets a tripped guard once nothing is held any more; it reports whether it did.
func (g *Guard) settle() bool {
	if g.tripped && len(g.pending) == 0 {
		g.tripped = false
		return true
	}
	return false
}
