// Package coalesce decides when a burst of changes feeding one aggregate object (the Istio Gateway
// listing every route's host, the Gateway status counting them) has settled enough to be written:
// once no change came for a quiet period, but never later than a maximum wait after the first
// change still pending. Times are passed in, so every rule is table-tested without a clock.
package coalesce

import (
	"sync"
	"time"
)

// Settings are the two durations of the window. A zero Quiet disables coalescing: every change is
// due at once.
type Settings struct {
	// Quiet is how long no change must come before the pending ones are written.
	Quiet time.Duration
	// MaxWait bounds the delay of the first pending change during a steady stream of changes.
	MaxWait time.Duration
}

// DefaultSettings: a burst is written 500 ms after its last change, and a steady stream at least
// every 3 s.
var DefaultSettings = Settings{Quiet: 500 * time.Millisecond, MaxWait: 3 * time.Second}

// Pending are the changes of one key not written yet: when the first and the last came.
type Pending struct {
	First, Last time.Time
}

// Due is when pending changes should be written: a quiet period after the last one, or the
// maximum wait after the first, whichever comes first.
func (s Settings) Due(p Pending) time.Time {
	due := p.Last.Add(s.Quiet)
	if limit := p.First.Add(s.MaxWait); limit.Before(due) {
		due = limit
	}
	return due
}

// Window tracks the pending changes of many keys. It is safe for concurrent use: event handlers
// record changes while reconcilers take them.
type Window[K comparable] struct {
	settings Settings
	mu       sync.Mutex
	pending  map[K]Pending
}

// New returns an empty window.
func New[K comparable](s Settings) *Window[K] {
	return &Window[K]{settings: s, pending: map[K]Pending{}}
}

// Changed records a change of key at now and returns how long until the key's pending changes are
// due (0: now).
func (w *Window[K]) Changed(key K, now time.Time) time.Duration {
	if w.settings.Quiet <= 0 {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[key]
	if !ok {
		p.First = now
	}
	p.Last = now
	w.pending[key] = p
	return max(w.settings.Due(p).Sub(now), 0)
}

// Take is asked when key is about to be written. It returns 0 when the write may go ahead — no
// change is pending, the pending ones are due, or urgent says the write must not wait (a spec
// change) — and then forgets the pending changes: the caller reads the current state after this
// call, so the changes recorded so far are in what it writes, and later ones start a new window.
// Otherwise it returns how long to wait, and keeps them.
func (w *Window[K]) Take(key K, now time.Time, urgent bool) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pending[key]
	if !ok {
		return 0
	}
	if due := w.settings.Due(p); !urgent && now.Before(due) {
		return due.Sub(now)
	}
	delete(w.pending, key)
	return 0
}

// Len is the number of keys with pending changes.
func (w *Window[K]) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}
