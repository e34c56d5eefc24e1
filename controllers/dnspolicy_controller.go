package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/plan"
)

// DNSPolicyReconciler computes status.active and status.activeControllers of each DNSPolicy from
// the ClusterIdentity and the DNSConfiguration. ServiceRoutes act on that status.
type DNSPolicyReconciler struct {
	client.Client
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=routing.router.io,resources=dnspolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=routing.router.io,resources=dnspolicies/status,verbs=get;update;patch

func (r *DNSPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pol := &routingv1alpha1.DNSPolicy{}
	if err := r.Get(ctx, req.NamespacedName, pol); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pol.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	in, err := r.gather(ctx, pol)
	if err != nil {
		return ctrl.Result{}, err
	}

	p := plan.Policy(in)
	original := pol.DeepCopy()
	pol.Status.Phase = routingv1alpha1.Phase(p.Phase)
	if !p.KeepActivation {
		pol.Status.Active = p.Active
		pol.Status.ActiveControllers = p.ActiveControllers
	}
	pol.Status.ObservedGeneration = pol.Generation
	previous := setReady(&pol.Status.Conditions, pol.Generation, p.Outcome)
	changed := !equality.Semantic.DeepEqual(original.Status, pol.Status)
	return finish(ctrl.Result{}, writeStatus(ctx, r.Client, r.Recorder, pol, original, changed, previous, p.Outcome))
}

func (r *DNSPolicyReconciler) gather(ctx context.Context, pol *routingv1alpha1.DNSPolicy) (plan.PolicyInputs, error) {
	in := plan.PolicyInputs{Policy: pol}
	var err error
	if in.Identity, err = getIdentity(ctx, r); err != nil {
		return in, err
	}
	if in.Configuration, err = getConfiguration(ctx, r); err != nil {
		return in, err
	}
	in.InForce, err = policyInForce(ctx, r, pol.Namespace)
	return in, err
}

// policyInForce returns the oldest DNSPolicy of a namespace, nil when there is none. A namespace
// should have one policy; when it has several, the oldest decides and the others report
// DuplicatePolicy.
func policyInForce(ctx context.Context, c client.Reader, namespace string) (*routingv1alpha1.DNSPolicy, error) {
	list := &routingv1alpha1.DNSPolicyList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing DNSPolicies in %s: %w", namespace, err)
	}
	policies := make([]*routingv1alpha1.DNSPolicy, len(list.Items))
	for i := range list.Items {
		policies[i] = &list.Items[i]
	}
	oldest, _ := plan.Oldest(policies)
	return oldest, nil
}

// SetupWithManager registers the controller. A ClusterIdentity or DNSConfiguration change
// re-evaluates every policy; a policy created or deleted re-evaluates its namespace's others (the
// one in force may change).
func (r *DNSPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allPolicies := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return requestsFor(ctx, r, &routingv1alpha1.DNSPolicyList{})
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("dnspolicy").
		For(&routingv1alpha1.DNSPolicy{}).
		Watches(&clusterv1alpha1.ClusterIdentity{}, allPolicies, specChanges).
		Watches(&clusterv1alpha1.DNSConfiguration{}, allPolicies, specChanges).
		Watches(&routingv1alpha1.DNSPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return requestsFor(ctx, r, &routingv1alpha1.DNSPolicyList{}, client.InNamespace(o.GetNamespace()))
		}), createOrDelete).
		Complete(metrics.Instrument("dnspolicy", r))
}
