package metrics

import "sync"

// ConflictSet remembers which keys are currently in conflict. The IngressDNS reconciler records
// its gateway entry points in one: their conflicts appear in no object's status, so the state
// collector cannot read them from the cache. A nil ConflictSet records nothing.
type ConflictSet struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

// NewConflictSet returns an empty set.
func NewConflictSet() *ConflictSet {
	return &ConflictSet{keys: map[string]struct{}{}}
}

// Set records whether key is in conflict.
func (s *ConflictSet) Set(key string, conflict bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if conflict {
		s.keys[key] = struct{}{}
	} else {
		delete(s.keys, key)
	}
}

// Len is the number of keys in conflict.
func (s *ConflictSet) Len() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}
