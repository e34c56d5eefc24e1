package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/coalesce"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/eventrecorder"
	"github.com/service-router/service-router-operator/internal/failoverloop"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/ownwrite"
	"github.com/service-router/service-router-operator/internal/prober"
	"github.com/service-router/service-router-operator/internal/verify"
	"github.com/service-router/service-router-operator/internal/verifyloop"
)

// Options tune the controllers.
type Options struct {
	// ConflictRetryInterval is how often an object blocked by an ownership conflict checks
	// again whether the foreign object is gone (it is not in the cache, so its deletion raises no
	// event). Default one minute.
	ConflictRetryInterval time.Duration
	// DeletionGuard tunes the mass-deletion guard; the zero value disables it (main sets
	// guard.DefaultSettings unless flags say otherwise).
	DeletionGuard guard.Settings
	// GatewayCoalesce is the window in which route changes are coalesced into one write of a
	// Gateway's Istio Gateway and status. Zero: coalesce.DefaultSettings; a zero Quiet with a
	// non-zero MaxWait disables coalescing.
	GatewayCoalesce coalesce.Settings
	// IstioGatewayMaxBytes is the byte budget of one generated Istio Gateway. Zero:
	// decide.DefaultIstioGatewayBudget.
	IstioGatewayMaxBytes int
	// ServiceRouteWorkers is the number of ServiceRoutes reconciled in parallel. Zero:
	// DefaultServiceRouteWorkers.
	ServiceRouteWorkers int
	// Verification tunes when zones are checked (zero fields take verify.DefaultSettings);
	// VerificationLimits bound the queries to each zone (zero fields take prober.DefaultLimits).
	Verification       verify.Settings
	VerificationLimits prober.Limits
	// Events bounds the event recorder. Zero: eventrecorder.DefaultSettings.
	Events eventrecorder.Settings
	// FailoverClockOffset runs regional failover's clock this far off the node's: the times its
	// heartbeats state and its judgement of the others'. A fault the tests inject (a node whose
	// clock is off); zero in any real cluster.
	FailoverClockOffset time.Duration
}

// Setup registers the field indexes and the six controllers with the manager, each instrumented
// for the per-controller health metrics, the collector of the resource-state metrics, and the
// watcher of the optional APIs (DNSEndpoint, Istio Gateway).
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.ConflictRetryInterval <= 0 {
		opts.ConflictRetryInterval = time.Minute
	}
	if opts.GatewayCoalesce == (coalesce.Settings{}) {
		opts.GatewayCoalesce = coalesce.DefaultSettings
	}
	if opts.IstioGatewayMaxBytes <= 0 {
		opts.IstioGatewayMaxBytes = decide.DefaultIstioGatewayBudget
	}
	apis := NewOptionalAPIs(mgr.GetRESTMapper())
	if err := mgr.Add(apis); err != nil {
		return fmt.Errorf("adding the optional API watcher: %w", err)
	}
	if err := addIndexes(ctx, mgr.GetFieldIndexer(), apis); err != nil {
		return fmt.Errorf("registering field indexes: %w", err)
	}
	lookups := newLookups()
	if err := lookups.register(ctx, mgr.GetCache(), apis); err != nil {
		return fmt.Errorf("registering cache indexes: %w", err)
	}
	guardChanges := make(chan event.GenericEvent, 1)
	deletions := guard.New(opts.DeletionGuard, managedEndpointCount(lookups), func(tripped bool) {
		if tripped {
			metrics.DeletionGuardTripped()
		}
		select {
		case guardChanges <- event.GenericEvent{Object: &clusterv1alpha1.DNSConfiguration{}}:
		default: // one pending notification is enough
		}
	})
	if opts.Events == (eventrecorder.Settings{}) {
		opts.Events = eventrecorder.DefaultSettings
	}
	recorder, err := newRecorder(mgr, opts.Events)
	if err != nil {
		return err
	}
	w, err := ownwrite.NewWriter(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetRESTMapper(), mgr.GetScheme(), fieldOwner)
	if err != nil {
		return err
	}
	b := base{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder,
		ConflictRetry: opts.ConflictRetryInterval, Deletions: deletions, Versions: ownwrite.NewVersions(), Lookups: lookups,
		Cached: cacheview.Reader{Cache: mgr.GetCache()}, Writer: w}
	ingressConflicts := metrics.NewConflictSet()
	zones := verifyloop.New(mgr.GetClient(), mgr.GetCache(), cacheReads{base: b}, apis, opts.Verification, opts.VerificationLimits, metrics.ObservePublished, metrics.CountQuery)
	if err := mgr.Add(zones); err != nil {
		return fmt.Errorf("adding the publication verification: %w", err)
	}
	fo := failoverloop.New(mgr.GetClient(), cacheReads{base: b}, recorder, zones.Tracker, zones.RouteEvents, opts.FailoverClockOffset)
	// A zone both verify and fail over is listed once: failover takes verification's listings.
	zones.Prober.Listed = fo.Listed
	if err := mgr.Add(fo); err != nil {
		return fmt.Errorf("adding regional failover: %w", err)
	}
	setups := []struct {
		name  string
		setup func(ctrl.Manager) error
	}{
		{"clusteridentity", (&ClusterIdentityReconciler{base: b}).SetupWithManager},
		{"dnsconfiguration", func(mgr ctrl.Manager) error {
			return (&DNSConfigurationReconciler{base: b, APIs: apis, Zones: zones.Tracker, Failover: fo,
				VerificationRefresh: opts.Verification.WithDefaults().SummaryInterval}).SetupWithManager(mgr, guardChanges, fo.Changes())
		}},
		{"dnspolicy", (&DNSPolicyReconciler{base: b}).SetupWithManager},
		{"serviceroute", (&ServiceRouteReconciler{base: b, APIs: apis, Workers: opts.ServiceRouteWorkers,
			Zones: zones.Tracker, ZoneChanges: zones.RouteEvents, Servers: fo}).SetupWithManager},
		{"gateway", (&GatewayReconciler{base: b, APIs: apis, HostBudget: opts.IstioGatewayMaxBytes,
			Window: coalesce.New[types.NamespacedName](opts.GatewayCoalesce), Zones: zones.Tracker, ZoneChanges: zones.GatewayEvents}).SetupWithManager},
		{"ingressdns", (&IngressDNSReconciler{base: b, APIs: apis, Conflicts: ingressConflicts}).SetupWithManager},
	}
	for _, s := range setups {
		if err := s.setup(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", s.name, err)
		}
	}
	metrics.RegisterDeletionsHeld(func() int { return deletions.State(time.Now()).Held })
	metrics.RegisterEventsDropped(recorder.Dropped)
	collector := metrics.NewStateCollector(mgr.GetCache(), ingressConflicts, func(l client.ObjectList) bool {
		switch l.(type) {
		case *externaldnsv1alpha1.DNSEndpointList:
			return apis.Served(dnsEndpointKind)
		case *istionetworkingv1.GatewayList:
			return apis.Served(istioGatewayKind)
		}
		return true
	})
	if err := mgr.Add(collector); err != nil {
		return fmt.Errorf("adding the state metrics collector: %w", err)
	}
	return nil
}

// managedEndpointCount counts the DNSEndpoints the operator manages (the cache holds no others),
// for the mass-deletion guard's share. The guard asks on every deletion of a large change, so the
// count is taken from the store's keys and reused for a second.
func managedEndpointCount(l *lookups) func() int {
	var (
		mu    sync.Mutex
		count int
		at    time.Time
	)
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) < time.Second {
			return count
		}
		n, err := l.endpointsByRoute.Size()
		if err != nil {
			return 0 // unknown: every request counts against an empty total, so the guard trips
		}
		count, at = n, time.Now()
		return count
	}
}

// newRecorder is the operator's event recorder: bounded in memory and goroutines, unlike the
// manager's (see internal/eventrecorder), which a burst over thousands of routes would inflate.
func newRecorder(mgr ctrl.Manager, s eventrecorder.Settings) (*eventrecorder.Recorder, error) {
	client, err := eventsv1client.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("creating the events client: %w", err)
	}
	recorder := eventrecorder.New(client, mgr.GetScheme(), "service-router-operator", s)
	if err := mgr.Add(recorder); err != nil {
		return nil, fmt.Errorf("adding the event recorder: %w", err)
	}
	return recorder, nil
}
