// Package core holds the reconcile orchestrations of the kinds whose reconcile writes generated
// objects: a ServiceRoute's DNSEndpoints (Route), an entry point's address DNSEndpoints
// (Addresses) and a Gateway's Istio Gateway or Gateway API objects (Gateway). Each runs gather →
// plan → ordered writes → status as one function over two narrow interfaces: what it reads and
// how it writes. Two drivers run them: the controllers, with the informer cache, the memory of
// the operator's own writes and the mass-deletion guard; `kubectl router plan`
// (internal/routerplan), with its in-memory world, recording the writes. Every decision is
// internal/decide's; what exists and what changes is internal/apply's.
package core

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/decide"
)

// Apply makes the objects of one kind match desired: apply.Diff against current decides the
// creates, updates and deletes; the driver executes them (the operator against the API server,
// preview in its world). Errors of single objects do not stop the others.
type Apply[T client.Object] func(ctx context.Context, k apply.Kind[T], desired, current []T, n Notice[T]) (Written[T], error)

// Notice says where a write's Events go and how they read (the operator records them; preview
// has none).
type Notice[T client.Object] struct {
	// Target receives the events; none are emitted when it is nil.
	Target runtime.Object
	Reason string
	// Describe summarises an object for the event note.
	Describe func(T) string
}

// Written says what an Apply did.
type Written[T client.Object] struct {
	// Applied are the desired objects that now exist as desired.
	Applied []T
	// Conflicts are desired objects whose name is taken by a foreign object, left untouched.
	Conflicts []apply.Conflict
	// HeldUntil is when the earliest deletion held back by the mass-deletion guard may proceed
	// (zero when none was held). The objects still exist.
	HeldUntil time.Time
}

// Result is what the write found, for the owner's outcome (decide.AfterWrite): kind names the
// generated objects and owner the kind whose status reports them.
func (w Written[T]) Result(kind, owner string) decide.Written {
	keys := make([]string, len(w.Conflicts))
	for i, c := range w.Conflicts {
		keys[i] = c.Key
	}
	return decide.Written{Kind: kind, Owner: owner, Conflicts: keys, HeldUntil: w.HeldUntil}
}
