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
	// BytesPerSecond stretches MaxWait for large objects: during a steady stream an object of n
	// bytes is written at most every n / BytesPerSecond seconds, so that the bytes written (and
	// sent to every watcher of the object) per second stay bounded however large it grows. The
	// quiet period is not stretched: the last state of a burst is still written Quiet after its
	// last change. 0: no stretching.
	BytesPerSecond int
}

// DefaultSettings: a burst is written 500 ms after its last change, and a steady stream at least
// every 3 s, or every size / 32 KiB seconds for an object larger than 96 KiB (an Istio Gateway
// with 10,000 namespace-scoped hosts, 450 KB, about every 14 s).
var DefaultSettings = Settings{Quiet: 500 * time.Millisecond, MaxWait: 3 * time.Second, BytesPerSecond: 32 << 10}

// maxWait is the maximum wait for an object of the given size.
func (s Settings) maxWait(bytes int) time.Duration {
	if s.BytesPerSecond <= 0 || bytes <= 0 {
		return s.MaxWait
	}
	return max(s.MaxWait, time.Duration(bytes)*time.Second/time.Duration(s.BytesPerSecond))
}

// Pending are the changes of one key not written yet: when the first and the last came, and the
// size of the object they feed as last written (0: unknown).
type Pending struct {
	First, Last time.Time
	Bytes       int
}

// Due is when pending changes should be written: a quiet period after the last one, or the
// maximum wait (for the object's size) after the first, whichever comes first.
func (s Settings) Due(p Pending) time.Time {
	due := p.Last.Add(s.Quiet)
	if limit := p.First.Add(s.maxWait(p.Bytes)); limit.Before(due) {
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
	sizes    map[K]int
}

// New returns an empty window.
func New[K comparable](s Settings) *Window[K] {
	return &Window[K]{settings: s, pending: map[K]Pending{}, sizes: map[K]int{}}
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
	p.Last, p.Bytes = now, w.sizes[key]
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

// Sized records the size of key's object as it is about to be written, which stretches the
// maximum wait of its next changes (Settings.BytesPerSecond).
func (w *Window[K]) Sized(key K, bytes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sizes[key] = bytes
}

// Forget drops what the window knows of key (its object is gone).
func (w *Window[K]) Forget(key K) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, key)
	delete(w.sizes, key)
}

// Len is the number of keys with pending changes.
func (w *Window[K]) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}
