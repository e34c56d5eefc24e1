package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/plan"
	"github.com/service-router/service-router-operator/internal/policy"
)

// DNSConfigurationReconciler reports the DNSConfiguration in status. Admission already enforces
// its rules (at least one controller, unique DNS-label names); the DNSPolicy and ServiceRoute
// controllers read it from the shared informer cache.
type DNSConfigurationReconciler struct {
	client.Client
	Recorder events.EventRecorder
}

func (r *DNSConfigurationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if err := r.Get(ctx, req.NamespacedName, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	outcome := plan.DNSConfiguration(cfg)
	original := cfg.DeepCopy()
	cfg.Status.Phase = clusterv1alpha1.Phase(outcome.Phase)
	cfg.Status.Controllers = policy.Names(plan.ControllersOf(cfg))
	cfg.Status.ObservedGeneration = cfg.Generation
	previous := setReady(&cfg.Status.Conditions, cfg.Generation, outcome)
	changed := !equality.Semantic.DeepEqual(original.Status, cfg.Status)
	return finish(ctrl.Result{}, writeStatus(ctx, r.Client, r.Recorder, cfg, original, changed, previous, outcome))
}

// SetupWithManager registers the controller.
func (r *DNSConfigurationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("dnsconfiguration").
		For(&clusterv1alpha1.DNSConfiguration{}).
		Complete(metrics.Instrument("dnsconfiguration", r))
}
