package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/metrics"
)

// ClusterIdentityReconciler validates the ClusterIdentity against the DNSConfiguration and reports
// it in status. The other controllers read the identity from the shared informer cache, so its
// values reach them without an API call.
type ClusterIdentityReconciler struct {
	base
}

// +kubebuilder:rbac:groups=cluster.router.io,resources=clusteridentities,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.router.io,resources=clusteridentities/status,verbs=patch

// Reconcile validates the ClusterIdentity against the DNSConfiguration (decide.ClusterIdentity) and
// writes its status; it writes nothing else.
func (r *ClusterIdentityReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &clusterv1alpha1.ClusterIdentity{}
	if ok, err := fetch(ctx, r, req.NamespacedName, ci); !ok {
		return ctrl.Result{}, err
	}
	original := ci.DeepCopy()
	cfg, err := getConfiguration(ctx, r)
	if err != nil {
		return r.end(ctx, ci, original, decide.Outcome{}, requeue{}, err)
	}
	return r.end(ctx, ci, original, decide.ClusterIdentity(ci, cfg), requeue{}, nil)
}

// SetupWithManager registers the controller: a DNSConfiguration change re-validates the identity.
func (r *ClusterIdentityReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("clusteridentity").
		For(&clusterv1alpha1.ClusterIdentity{}).
		Watches(&clusterv1alpha1.DNSConfiguration{}, handler.EnqueueRequestsFromMapFunc(
			func(context.Context, client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: clusterv1alpha1.ClusterIdentityName}}}
			})).
		Complete(metrics.Instrument("clusteridentity", r))
}
