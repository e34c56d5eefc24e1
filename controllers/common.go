// Package controllers holds the operator's six reconcilers. Each gathers its inputs from the
// informer cache, asks internal/plan what should exist, applies the difference and writes its
// status once. Decisions live in internal/plan; this package is wiring and I/O.
package controllers

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
)

// conditionReady is the condition type every kind carries (identical in both API groups).
const conditionReady = clusterv1alpha1.ConditionReady

// fieldOwner names the operator in managedFields of everything it writes.
const fieldOwner = client.FieldOwner("service-router-operator")

// Watch filters. Status writes bump no generation, so specChanges ignores them: a cluster-wide
// watch must not fan out to every object on each status update.
var (
	specChanges    = builder.WithPredicates(predicate.GenerationChangedPredicate{})
	createOrDelete = builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})
	// createOrDeleteOrSpec also passes spec changes and the start of a deletion.
	createOrDeleteOrSpec = builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
	}})
)

// getIdentity reads the ClusterIdentity singleton from the cache; nil when it does not exist.
func getIdentity(ctx context.Context, c client.Reader) (*clusterv1alpha1.ClusterIdentity, error) {
	ci := &clusterv1alpha1.ClusterIdentity{}
	if err := c.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.ClusterIdentityName}, ci); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading ClusterIdentity: %w", err)
	}
	return ci, nil
}

// getConfiguration reads the DNSConfiguration singleton from the cache; nil when it does not exist.
func getConfiguration(ctx context.Context, c client.Reader) (*clusterv1alpha1.DNSConfiguration, error) {
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading DNSConfiguration: %w", err)
	}
	return cfg, nil
}

// setReady records an outcome as the Ready condition, stamped with the generation it was
// computed for. It returns the previous Ready condition (nil when there was none).
func setReady(conditions *[]metav1.Condition, generation int64, o plan.Outcome) *metav1.Condition {
	var previous *metav1.Condition
	if c := meta.FindStatusCondition(*conditions, conditionReady); c != nil {
		previous = c.DeepCopy()
	}
	status := metav1.ConditionFalse
	if o.Ready {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conditions, metav1.Condition{
		Type: conditionReady, Status: status, Reason: o.Reason, Message: o.Message, ObservedGeneration: generation,
	})
	return previous
}

// writeStatus patches obj's status when it changed, then records the Ready transition. The patch
// carries an optimistic lock: a reconcile that started from a stale cached copy gets errCacheLag
// instead of overwriting a newer status (and announcing the same transition twice).
func writeStatus(ctx context.Context, c client.Client, rec events.EventRecorder, obj, original client.Object,
	changed bool, previous *metav1.Condition, o plan.Outcome) error {
	if !changed {
		return nil
	}
	err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{}), fieldOwner)
	if apierrors.IsConflict(err) {
		return errCacheLag
	}
	if err != nil {
		return err
	}
	recordTransition(rec, obj, previous, o)
	return nil
}

// finish turns the outcome of a reconcile's last step into its result: errCacheLag retries
// shortly, any other error goes to the rate-limited requeue, success keeps result.
func finish(result ctrl.Result, err error) (ctrl.Result, error) {
	switch {
	case errors.Is(err, errCacheLag):
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	return result, nil
}

// recordTransition emits an Event when the Ready condition changed status or reason. The Event
// reason is the condition reason, so `kubectl describe` and the conditions tell the same story.
func recordTransition(rec events.EventRecorder, obj runtime.Object, previous *metav1.Condition, o plan.Outcome) {
	status := metav1.ConditionFalse
	if o.Ready {
		status = metav1.ConditionTrue
	}
	if previous != nil && previous.Status == status && previous.Reason == o.Reason {
		return
	}
	eventType := "Warning"
	if o.Ready {
		eventType = "Normal"
	}
	rec.Eventf(obj, nil, eventType, o.Reason, "Reconcile", "%s", o.Message)
}

// ingressLabel is the label selecting ingress gateway pods and their LoadBalancer Service.
const ingressLabel = naming.IngressServiceSelector

// requestsFor lists the objects of list's kind that match opts (from the cache) and returns a
// reconcile request for each: the mapping of every "this change affects those objects" watch.
func requestsFor(ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) []reconcile.Request {
	if err := c.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing objects to reconcile")
		return nil
	}
	var reqs []reconcile.Request
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o.(client.Object))})
		return nil
	})
	return reqs
}
