// Package controllers holds the operator's six reconcilers. Each gathers its inputs from the
// informer cache (inputs.go, indexes.go), asks internal/decide what should exist and what its status
// should say, executes the writes with the one write step (reconciler_apply.go: internal/apply
// decides them) and ends with the one status write (end, below). Every decision — what to
// publish, which outcome a write conflict or a held deletion gives, which Events a status change
// announces — lives in internal/decide and internal/apply; this package is wiring and I/O.
//
// Files are named for what they hold: this file and reconciler_apply.go are the reconciler kit
// every reconciler uses; <kind>_controller.go holds one reconciler (its Reconcile, inputs and
// SetupWithManager) and <kind>_controller_<topic>.go more of its methods; watches.go the watch
// helpers and mappers all reconcilers share; indexes.go every cache index.
package controllers

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/ownwrite"
)

// conditionReady is the condition type every kind carries (identical in both API groups).
const conditionReady = clusterv1alpha1.ConditionReady

// reasonReconcileError is the Ready reason of a reconcile that failed (identical in both groups).
const reasonReconcileError = clusterv1alpha1.ReasonReconcileError

// cacheLagRetry is how soon a reconcile that met cache lag runs again.
const cacheLagRetry = 500 * time.Millisecond

// errCacheLag asks for a retry: the API server has a newer version of an object than the cache.
var errCacheLag = errors.New("the object changed since the cache last saw it; retrying")

// fieldOwner names the operator in managedFields of everything it writes.
const fieldOwner = client.FieldOwner("service-router-operator")

// base is what every reconciler shares: the cached client, the API reader for taken names, the
// event recorder and the retry interval of ownership conflicts.
type base struct {
	client.Client
	// APIReader reads past the cache, only to check who owns an object whose name is taken.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// ConflictRetry is how soon an ownership conflict is checked again (the foreign object is
	// not in the cache, so its deletion raises no event).
	ConflictRetry time.Duration
	// Deletions holds back mass deletions of DNS records (nil: none is held).
	Deletions *guard.Guard
	// Versions remembers what the operator's own writes replaced (ownwrite.Versions), so that a
	// reconcile that read the cache before its previous write arrived does not write again and
	// meet an optimistic-lock conflict (nil: not remembered).
	Versions *ownwrite.Versions
	// Lookups are the cache indexes read in place (indexes.go).
	Lookups *lookups
	// Cached reads inputs a reconcile never changes as shallow copies of the cache's objects
	// (cacheview.Reader): no deep copy of the singletons, policy, namespace and Gateway on each
	// of thousands of route reconciles.
	Cached cacheview.Reader
	// Writer sends the creates and updates of generated objects and the status patches
	// (ownwrite.Writer: answered with metadata only).
	Writer objectWriter
}

// objectWriter sends the operator's creates, updates and status patches (ownwrite.Writer).
type objectWriter interface {
	Create(ctx context.Context, obj client.Object) error
	Update(ctx context.Context, obj client.Object) error
	PatchStatus(ctx context.Context, obj client.Object, originalStatus, status any, originalVersion string) (string, error)
}

// requeue says when a reconcile that succeeded must run again although nothing changes.
type requeue struct {
	// conflict: an ownership conflict is checked again after ConflictRetry.
	conflict bool
	// at: a deletion held by the mass-deletion guard may proceed then.
	at time.Time
	// wait: changes feeding an aggregate object are still coming (gateway_controller_coalesce.go);
	// the write waits this long so that one write covers them all.
	wait time.Duration
	// refresh: the status summarises something that raises no event (the zones' verification);
	// it is computed again after this long.
	refresh time.Duration
}

// requeueOf is the requeue a write step asks for: conflicts and held deletions.
func requeueOf(w decide.Written) requeue {
	return requeue{conflict: len(w.Conflicts) > 0, at: w.HeldUntil}
}

// and is the requeue asking for both: a conflict retry if either has one, the earliest time.
func (q requeue) and(o requeue) requeue {
	out := q
	out.conflict = q.conflict || o.conflict
	if out.at.IsZero() || (!o.at.IsZero() && o.at.Before(out.at)) {
		out.at = o.at
	}
	return out
}

// end is the one ending of every reconcile of an object with status, in three steps: it sets the
// outcome into obj's status (decide.SetOutcome), writes the status once, only when it changed, with an
// optimistic lock (writeStatus), and records the Events of the change once the write succeeded
// (recordStatusEvents). Then it maps the result to a requeue (finish). Cache lag is a retry, not
// a failure: it writes no status.
func (b base) end(ctx context.Context, obj, original client.Object, o decide.Outcome, rq requeue, err error) (ctrl.Result, error) {
	if err != nil && isOnly(err, errCacheLag) {
		return b.finish(rq, err)
	}
	decide.SetOutcome(obj, o, err)
	wrote, writeErr := b.writeStatus(ctx, obj, original)
	if wrote {
		recordStatusEvents(b.Recorder, obj, original)
	}
	return b.finish(rq, errors.Join(err, writeErr))
}

// writeStatus writes obj's status when it differs from original's (the cache's copy), as a merge
// patch locked to original's resourceVersion; ownwrite's Next decides. wrote says whether the API
// server took it. A copy our previous status write replaced is not written again: the API server
// has what that write sent, and that write's own event runs the reconcile again on the fresh
// copy, whether this one found the status changed or not. A copy the cache no longer holds, an
// optimistic-lock conflict, or an event of somebody else's change that went by unseen while the
// write was in flight, comes back as errCacheLag: the cache is behind, and a short retry settles
// it.
func (b base) writeStatus(ctx context.Context, obj, original client.Object) (wrote bool, err error) {
	before, after := decide.StatusOf(original).Value, decide.StatusOf(obj).Value
	cached, err := b.Cached.Version(ctx, original)
	if err != nil {
		return false, err
	}
	switch b.Versions.Next(original, cached, !equality.Semantic.DeepEqual(before, after)).For(ownwrite.StatusWrite) {
	case ownwrite.Leave:
		return false, nil
	case ownwrite.LookAgain:
		return false, errCacheLag
	}
	uid, replaced := original.GetUID(), original.GetResourceVersion()
	b.Versions.Writing(uid, replaced)
	produced, err := b.Writer.PatchStatus(ctx, obj, before, after, replaced)
	lookAgain := b.Versions.Answered(uid, replaced, produced, err != nil)
	switch {
	case apierrors.IsConflict(err):
		return false, errCacheLag
	case err != nil:
		return false, err
	case lookAgain:
		return true, errCacheLag // somebody else's change went by unseen: look again
	}
	return true, nil
}

// finish maps the end of a reconcile to its result: errors go to the rate-limited queue, cache
// lag retries shortly, ownership conflicts are checked again after ConflictRetry, held deletions
// when their time comes, coalesced writes when their window is due and summaries when they are
// to be counted again. No reconciler sets
// RequeueAfter itself, and a RequeueAfter never goes out with an error (controller-runtime
// ignores it then).
func (b base) finish(rq requeue, err error) (ctrl.Result, error) {
	switch {
	case err != nil && isOnly(err, errCacheLag):
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	var after time.Duration
	if rq.conflict {
		after = b.ConflictRetry
	}
	if !rq.at.IsZero() {
		held := max(time.Until(rq.at), cacheLagRetry)
		if after == 0 || held < after {
			after = held
		}
	}
	for _, d := range []time.Duration{rq.wait, rq.refresh} {
		if d > 0 && (after == 0 || d < after) {
			after = d
		}
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// isOnly reports whether err consists of target alone (possibly joined several times).
func isOnly(err, target error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if !isOnly(e, target) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, target)
}

// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// recordStatusEvents records the Events that the written status change of obj from original
// announces (decide.StatusEvents). It runs only after a successful write, so that a failed write
// and its retry announce a change once.
func recordStatusEvents(rec events.EventRecorder, obj, original client.Object) {
	for _, e := range decide.StatusEvents(*decide.StatusOf(original).Conditions, *decide.StatusOf(obj).Conditions) {
		rec.Eventf(obj, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
	}
}
