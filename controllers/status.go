package controllers

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/plan"
)

// conditionReady is the condition type every kind carries (identical in both API groups).
const conditionReady = clusterv1alpha1.ConditionReady

// reasonReconcileError is the Ready reason of a reconcile that failed (identical in both groups).
const reasonReconcileError = clusterv1alpha1.ReasonReconcileError

// cacheLagRetry is how soon a reconcile that met cache lag runs again.
const cacheLagRetry = 500 * time.Millisecond

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
	// Versions remembers what the operator's own writes replaced (versions.go), so that a
	// reconcile that read the cache before its previous write arrived does not write again and
	// meet an optimistic-lock conflict (nil: not remembered).
	Versions *writtenVersions
	// Lookups are the cache indexes read in place (lookup.go).
	Lookups *lookups
	// Cached reads inputs a reconcile never changes as shallow copies of the cache's objects
	// (cacheview.Reader): no deep copy of the singletons, policy, namespace and Gateway on each
	// of thousands of route reconciles.
	Cached cacheview.Reader
	// Writer sends the creates and updates of generated objects and the status patches, answered
	// with metadata only (writer.go).
	Writer writer
}

// requeue says when a reconcile that succeeded must run again although nothing changes.
type requeue struct {
	// conflict: an ownership conflict is checked again after ConflictRetry.
	conflict bool
	// at: a deletion held by the mass-deletion guard may proceed then.
	at time.Time
	// wait: changes feeding an aggregate object are still coming (coalesce.go); the write waits
	// this long so that one write covers them all.
	wait time.Duration
}

// after is the requeue of written: conflicts and held deletions.
func requeueOf[T client.Object](w written[T]) requeue {
	return requeue{conflict: len(w.Conflicts) > 0, at: w.HeldUntil}
}

// end is the one ending of every reconcile of an object with status. It writes the status once,
// only when it changed, with an optimistic lock: on success the outcome's phase and Ready
// condition for the current generation; on an error Ready=Unknown, reason ReconcileError, with
// observedGeneration left where it was so that nobody takes the old status for the new spec.
// Then it maps the result to a requeue.
func (b base) end(ctx context.Context, obj, original client.Object, o plan.Outcome, rq requeue, err error) (ctrl.Result, error) {
	if err != nil && isOnly(err, errCacheLag) {
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil // a retry, not a failure: no status
	}
	s := statusFieldsOf(obj)
	condition := metav1.Condition{Type: conditionReady, Reason: o.Reason, Message: o.Message, ObservedGeneration: obj.GetGeneration()}
	switch {
	case err != nil:
		condition = metav1.Condition{Type: conditionReady, Status: metav1.ConditionUnknown, Reason: reasonReconcileError, Message: err.Error(),
			ObservedGeneration: *s.observedGeneration}
	case o.Ready:
		condition.Status = metav1.ConditionTrue
		s.setPhase(o.Phase)
		*s.observedGeneration = obj.GetGeneration()
	default:
		condition.Status = metav1.ConditionFalse
		s.setPhase(o.Phase)
		*s.observedGeneration = obj.GetGeneration()
	}
	previous := meta.FindStatusCondition(*s.conditions, conditionReady)
	if previous != nil {
		previous = previous.DeepCopy()
	}
	meta.SetStatusCondition(s.conditions, condition)
	readyFirst(*s.conditions)
	if b.Versions.superseded(original) {
		// Our previous status write replaced this very copy: the cache is behind, and that
		// write's own event runs this reconcile again on the fresh copy, whether this one found
		// the status changed or not (the API server has the written one, not this copy's).
		return b.finish(rq, err)
	}
	if !equality.Semantic.DeepEqual(statusFieldsOf(original).status, s.status) {
		b.Versions.writing(original.GetUID(), original.GetResourceVersion())
		produced, patchErr := b.Writer.patchStatus(ctx, obj, statusFieldsOf(original).status, s.status, original.GetResourceVersion())
		if patchErr != nil {
			b.Versions.failed(original.GetUID())
		}
		switch {
		case apierrors.IsConflict(patchErr):
			return ctrl.Result{RequeueAfter: cacheLagRetry}, err
		case patchErr != nil:
			return ctrl.Result{}, errors.Join(err, patchErr)
		}
		if !b.Versions.wrote(original.GetUID(), original.GetResourceVersion(), produced) {
			err = errors.Join(err, errCacheLag) // somebody else's change went by unseen: look again
		}
		recordTransition(b.Recorder, obj, previous, condition)
		recordPublishedTransition(b.Recorder, obj, original)
	}
	return b.finish(rq, err)
}

// finish maps the end of a reconcile to its result: errors go to the rate-limited queue, cache
// lag retries shortly, ownership conflicts are checked again after ConflictRetry, held
// deletions when their time comes and coalesced writes when their window is due. No reconciler sets RequeueAfter itself.
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
	if rq.wait > 0 && (after == 0 || rq.wait < after) {
		after = rq.wait
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

// readyFirst moves the Ready condition to the front, where people and scripts look for it, when
// another condition (Published) was set before the first Ready.
func readyFirst(conditions []metav1.Condition) {
	for i := range conditions {
		if conditions[i].Type == conditionReady {
			ready := conditions[i]
			copy(conditions[1:i+1], conditions[:i])
			conditions[0] = ready
			return
		}
	}
}

// recordTransition emits an Event when the Ready condition changed status or reason. The Event
// reason is the condition reason, so `kubectl describe` and the conditions tell the same story.
func recordTransition(rec events.EventRecorder, obj client.Object, previous *metav1.Condition, now metav1.Condition) {
	if previous != nil && previous.Status == now.Status && previous.Reason == now.Reason {
		return
	}
	eventType := "Warning"
	if now.Status == metav1.ConditionTrue {
		eventType = "Normal"
	}
	rec.Eventf(obj, nil, eventType, now.Reason, "Reconcile", "%s", now.Message)
}

// statusFields points into the status every kind has: phase, observedGeneration, conditions.
type statusFields struct {
	status             any
	conditions         *[]metav1.Condition
	observedGeneration *int64
	setPhase           func(string)
}

func statusFieldsOf(obj client.Object) statusFields {
	switch o := obj.(type) {
	case *clusterv1alpha1.ClusterIdentity:
		return statusFields{&o.Status, &o.Status.Conditions, &o.Status.ObservedGeneration, func(p string) { o.Status.Phase = clusterv1alpha1.Phase(p) }}
	case *clusterv1alpha1.DNSConfiguration:
		return statusFields{&o.Status, &o.Status.Conditions, &o.Status.ObservedGeneration, func(p string) { o.Status.Phase = clusterv1alpha1.Phase(p) }}
	case *routingv1alpha1.DNSPolicy:
		return statusFields{&o.Status, &o.Status.Conditions, &o.Status.ObservedGeneration, func(p string) { o.Status.Phase = routingv1alpha1.Phase(p) }}
	case *routingv1alpha1.Gateway:
		return statusFields{&o.Status, &o.Status.Conditions, &o.Status.ObservedGeneration, func(p string) { o.Status.Phase = routingv1alpha1.Phase(p) }}
	case *routingv1alpha1.ServiceRoute:
		return statusFields{&o.Status, &o.Status.Conditions, &o.Status.ObservedGeneration, func(p string) { o.Status.Phase = routingv1alpha1.Phase(p) }}
	}
	panic("statusFieldsOf: not a router.io kind") // the six reconcilers pass only these
}
