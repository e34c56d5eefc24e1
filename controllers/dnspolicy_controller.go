package controllers

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/metrics"
)

// DNSPolicyReconciler computes status.active and status.activeControllers of each DNSPolicy from
// the ClusterIdentity and the DNSConfiguration. ServiceRoutes act on that status.
type DNSPolicyReconciler struct {
	base
}

// +kubebuilder:rbac:groups=routing.router.io,resources=dnspolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups=routing.router.io,resources=dnspolicies/status,verbs=patch

// Reconcile computes a DNSPolicy's status.active and status.activeControllers (decide.Policy) for
// users and dashboards, and writes its status; it writes nothing else. ServiceRoutes evaluate the
// policy in force themselves, against the same current inputs, so a stale policy status never
// removes a record.
func (r *DNSPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pol := &routingv1alpha1.DNSPolicy{}
	if ok, err := fetch(ctx, r, req.NamespacedName, pol); !ok {
		return ctrl.Result{}, err
	}
	original := pol.DeepCopy()
	in, err := r.gather(ctx, pol)
	if err != nil {
		return r.end(ctx, pol, original, decide.Outcome{}, requeue{}, err)
	}
	p := decide.Policy(in)
	pol.Status = decide.DNSPolicyStatus(pol.Status, p, time.Now())
	return r.end(ctx, pol, original, p.Outcome, requeue{}, nil)
}

func (r *DNSPolicyReconciler) gather(ctx context.Context, pol *routingv1alpha1.DNSPolicy) (decide.PolicyInputs, error) {
	in := decide.PolicyInputs{Policy: pol}
	var err error
	if in.Identity, in.Configuration, err = getSingletons(ctx, r); err != nil {
		return in, err
	}
	in.InForce, err = policyInForce(ctx, r, pol.Namespace)
	return in, err
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
