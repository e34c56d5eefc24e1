package controllers

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/verify"
)

// DNSConfigurationReconciler reports the DNSConfiguration in status. Admission already enforces
// its rules (at least one controller, unique DNS-label names); the DNSPolicy and ServiceRoute
// controllers read it from the shared informer cache.
type DNSConfigurationReconciler struct {
	base
	APIs *OptionalAPIs
	// Zones count the routes of each verified zone by state (nil: none are counted).
	Zones zoneCounter
	// Failover is regional failover's view of the other regions (nil: none is reported).
	Failover regionViews
	// VerificationRefresh is how often they are counted again while a zone is verified: the
	// counts change with every check of every route, too often to be written on each.
	VerificationRefresh time.Duration
	// requests measure the Resource Manager requests of each zone read through it, for its
	// verification entry (dnsconfiguration_controller_budget.go).
	requests requestRates
}

// regionViews is regional failover's view of the other regions (Failover).
type regionViews interface {
	Regions() (regions []clusterv1alpha1.RegionFailoverStatus, known bool)
	Drain() (d decide.Drain, known bool)
}

// zoneCounter counts a zone's routes by their state there (verify.Tracker).
type zoneCounter interface {
	Zone(controller string) verify.ZoneCounts
}

// +kubebuilder:rbac:groups=cluster.router.io,resources=dnsconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.router.io,resources=dnsconfigurations/status,verbs=patch

// Reconcile reports the DNSConfiguration in status (decide.DNSConfigurationStatus): its controllers,
// whether the DNSEndpoint API is installed (Ready), whether the mass-deletion guard holds deletions
// (DeletionsHeld), what each verified zone answers (verification) with, for a zone read through
// Azure Resource Manager, the requests sent to it (requests), whether this cluster's planned
// requests fit its share of Resource Manager's limits (OverRequestBudget), and regional failover's
// view (failover, Drained). It gathers those inputs and writes nothing else.
func (r *DNSConfigurationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if ok, err := fetch(ctx, r, req.NamespacedName, cfg); !ok {
		return ctrl.Result{}, err
	}
	original := cfg.DeepCopy()
	now := time.Now()
	held := r.Deletions.State(now)
	in := decide.DNSConfigurationInputs{Configuration: cfg, EndpointsAPIMissing: !r.APIs.Served(dnsEndpointKind),
		Held: held.Held, HeldUntil: held.Until, Counts: r.counts(cfg), Now: now}
	// Refreshed with the counts, once a window: no status write of their own in between.
	in.Requests = r.requests.lastFigures(cfg)
	if r.Failover != nil {
		in.Regions, in.RegionsKnown = r.Failover.Regions()
		in.Drain, in.DrainKnown = r.Failover.Drain()
	}
	// DeletionsHeld is announced by end once the status is written (a Warning when the guard starts
	// holding deletions, a Normal event when it no longer does: decide.StatusEvents).
	var outcome decide.Outcome
	cfg.Status, outcome = decide.DNSConfigurationStatus(in)
	// Looked at again once every held deletion has had its turn, so that the condition clears
	// even when the last of them needed no reconcile (its object was deleted by someone else),
	// and while zones are verified, to count them again.
	rq := requeue{at: held.Recheck}
	if len(cfg.Status.Verification) > 0 {
		rq.refresh = r.VerificationRefresh
	}
	return r.end(ctx, cfg, original, outcome, rq, nil)
}

// counts are the verified zones' routes by state; nil when they are not counted.
func (r *DNSConfigurationReconciler) counts(cfg *clusterv1alpha1.DNSConfiguration) map[string]verify.ZoneCounts {
	if r.Zones == nil {
		return nil
	}
	out := map[string]verify.ZoneCounts{}
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if decide.Verified(cfg, c.Name) {
			out[c.Name] = r.Zones.Zone(c.Name)
		}
	}
	return out
}

// SetupWithManager registers the controller: the DNSConfiguration itself, the DNSEndpoint API
// appearing, and the mass-deletion guard tripping or settling.
func (r *DNSConfigurationReconciler) SetupWithManager(mgr ctrl.Manager, guardChanges, failoverChanges <-chan event.GenericEvent) error {
	singleton := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("dnsconfiguration").
		For(&clusterv1alpha1.DNSConfiguration{}).
		WatchesRawSource(apiChanges(r.APIs, singleton)).
		WatchesRawSource(source.Channel(guardChanges, singleton)).
		WatchesRawSource(source.Channel(failoverChanges, singleton)).
		Complete(metrics.Instrument("dnsconfiguration", r))
}
