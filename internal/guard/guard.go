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

// Trips reports whether requested deletions within one window, out of total managed records,
// trip the guard: at least Minimum of them, and more than Share of all. A disabled guard (Grace 0)
// never trips. It is the guard's own rule, and what `kubectl router plan` predicts with.
func (s Settings) Trips(requested, total int) bool {
	return s.Grace > 0 && requested >= s.Minimum && float64(requested) > s.Share*float64(total)
}

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
	// permits holds the records whose wait is over: their deletion proceeds when asked for.
	permits map[string]permit
	// recent maps records allowed to go within the window to when, so that a change deleting
	// many records one reconcile at a time is seen as one change.
	recent  map[string]time.Time
	tripped bool
	// nextExpiry is the earliest time at which expire has something to do (zero: now).
	nextExpiry time.Time
}

// New returns a guard. total counts the managed records; onChange is called (outside the lock)
// whenever the guard trips (true) or settles (false), so that status and metrics can follow.
func New(s Settings, total func() int, onChange func(tripped bool)) *Guard {
	if onChange == nil {
		onChange = func(bool) {}
	}
	return &Guard{settings: s, total: total, onChange: onChange, pending: map[string]time.Time{}, permits: map[string]permit{}, recent: map[string]time.Time{}}
}

// Hold records that key is to be deleted and reports whether the deletion must wait, and until
// when. Every deletion first waits the short Observe delay, in which the guard sees how many
// others the same change asks for; when they are too many, each waits the Grace period from
// when it was first asked for. Once its time has come the deletion holds a permit: asked again
// then or later (a busy queue can bring the retry minutes late), it proceeds at once instead of
// waiting afresh.
func (g *Guard) Hold(key string, now time.Time) (until time.Time, held bool) {
	if g == nil || g.settings.Grace <= 0 {
		return time.Time{}, false
	}
	g.mu.Lock()
	g.expire(now)
	settled := g.settle()
	if p, allowed := g.permits[key]; allowed {
		// Its wait is over: a late or repeated request (a failed or conflicting delete) is not
		// held again, and does not count twice.
		p.used = true
		g.permits[key] = p
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
	tripped := g.trip(len(g.recent) + len(g.pending))
	until = first.Add(g.wait())
	held = now.Before(until)
	if held {
		g.soonest(until)
	} else {
		g.permit(key, permit{first: first, at: now, used: true})
	}
	settled = g.settle() || settled
	g.mu.Unlock()
	if tripped || settled {
		g.onChange(tripped)
	}
	return until, held
}

// Forget cancels a held deletion, or the permit of one whose time has come: the record is
// wanted again (the edit was reverted), and a later deletion of it waits afresh.
func (g *Guard) Forget(key string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	_, seen := g.pending[key]
	delete(g.pending, key)
	delete(g.permits, key)
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
	// Recheck is when State will next change without any deletion being asked for: when the
	// last held deletion's time comes and the guard settles.
	Recheck time.Time
}

// State reports the guard's state at now. Call it again at Recheck to see the guard settle even
// when nobody asks for the held deletions again (their routes were deleted).
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
	s.Recheck = s.Until
	return s
}

// permitLifetime is how long a deletion whose time has come may still proceed without waiting
// again. It covers any retry backlog; a deletion asked for after it waits afresh, which is safe.
const permitLifetime = 15 * time.Minute

// wait is how long a deletion waits from its first request.
func (g *Guard) wait() time.Duration {
	if g.tripped {
		return g.settings.Grace
	}
	return g.settings.Observe
}

// permit says a deletion's wait is over.
type permit struct {
	// first is when the deletion was first asked for; at is when its wait ended.
	first, at time.Time
	// used says its holder was told it may proceed. A permit nobody used yet is taken back when
	// the guard trips, so that a record whose deletion belongs to the mass change waits too.
	used bool
}

// permit lets key's deletion proceed, and counts it among the recent deletions of the window.
func (g *Guard) permit(key string, p permit) {
	delete(g.pending, key)
	g.permits[key] = p
	g.recent[key] = p.at
	g.soonest(p.at.Add(g.settings.Window))
}

// soonest notes a time at which expire has work to do.
func (g *Guard) soonest(t time.Time) {
	if g.nextExpiry.IsZero() || t.Before(g.nextExpiry) {
		g.nextExpiry = t
	}
}

// expire turns waiting deletions whose time has come into permits (whether or not their holder
// has asked again yet), forgets deletions older than the window for counting, and forgets old
// permits. It scans only when something is due, so that a mass deletion costs linear time.
func (g *Guard) expire(now time.Time) {
	if now.Before(g.nextExpiry) {
		return
	}
	g.nextExpiry = time.Time{}
	wait := g.wait()
	for k, first := range g.pending {
		if until := first.Add(wait); now.Before(until) {
			g.soonest(until)
		} else {
			g.permit(k, permit{first: first, at: until})
		}
	}
	for k, at := range g.recent {
		if now.Sub(at) > g.settings.Window {
			delete(g.recent, k)
		} else {
			g.soonest(at.Add(g.settings.Window))
		}
	}
	for k, p := range g.permits {
		if now.Sub(p.at) > permitLifetime {
			delete(g.permits, k)
		} else {
			g.soonest(p.at.Add(permitLifetime))
		}
	}
}

// trip trips the guard when requested deletions within the window reach the minimum and exceed
// the share of all records; it reports whether it tripped now. Deletions of the window whose
// short wait ended but whose holders have not come back for them wait the grace period too.
func (g *Guard) trip(requested int) bool {
	if g.tripped || requested < g.settings.Minimum || !g.settings.Trips(requested, g.total()) {
		return false
	}
	g.tripped = true
	for k, p := range g.permits {
		if _, inWindow := g.recent[k]; inWindow && !p.used {
			delete(g.permits, k)
			delete(g.recent, k)
			g.pending[k] = p.first
			g.soonest(p.first.Add(g.settings.Grace))
		}
	}
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
