package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/coalesce"
	"github.com/service-router/service-router-operator/internal/eventrecorder"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
	"github.com/service-router/service-router-operator/internal/prober"
	"github.com/service-router/service-router-operator/internal/verify"
)

// CacheOptions restricts the informer caches to what the operator manages, so that memory follows
// the operator's objects rather than the cluster's size: DNSEndpoints and Istio Gateways carrying
// the managed-by label (objects of others never enter the cache; a name collision with one is
// detected at create time), Services carrying an istio label (ingress gateways), and Namespaces
// as metadata with only their labels and the router.io/applications annotation. Managed fields
// are stripped from every cached object, and kubectl's last-applied-configuration (a full copy of
// the object) from the objects the operator reads but never writes whole.
func CacheOptions() cache.Options {
	managed := labels.SelectorFromSet(labels.Set{naming.LabelManagedBy: naming.ManagedByValue})
	hasIstioLabel, err := labels.NewRequirement(naming.IngressServiceSelector, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant requirement; cannot fail
	}
	// The generated objects are updated whole from their cached copy: every annotation stays, so
	// that an update never drops one somebody else set.
	generated := trimGenerated
	return cache.Options{
		DefaultTransform: trimForCache,
		ByObject: map[client.Object]cache.ByObject{
			&externaldnsv1alpha1.DNSEndpoint{}: {Label: managed, Transform: generated},
			&istionetworkingv1.Gateway{}:       {Label: managed, Transform: generated},
			&corev1.Service{}:                  {Label: labels.NewSelector().Add(*hasIstioLabel)},
			&corev1.Namespace{}:                {Transform: namespaceTransform},
		},
	}
}

// namespaceTransform keeps of a cached Namespace what the operator reads: its name, labels (the
// Gateways' allowedRoutes selectors) and the applications it owns. Other annotations (a
// last-applied configuration, for instance) can be large and are dropped, as are managed fields,
// owner references, finalizers, spec and status.
func namespaceTransform(obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok {
		return obj, nil // a tombstone: passed on as it is
	}
	var kept map[string]string
	if apps, ok := o.GetAnnotations()[naming.AnnotationApplications]; ok {
		kept = map[string]string{naming.AnnotationApplications: apps}
	}
	o.SetAnnotations(kept)
	o.SetManagedFields(nil)
	o.SetOwnerReferences(nil)
	o.SetFinalizers(nil)
	if ns, ok := o.(*corev1.Namespace); ok {
		ns.Spec, ns.Status = corev1.NamespaceSpec{}, corev1.NamespaceStatus{}
	}
	return o, nil
}

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
	// plan.DefaultIstioGatewayBudget.
	IstioGatewayMaxBytes int
	// ServiceRouteWorkers is the number of ServiceRoutes reconciled in parallel. Zero: 8.
	ServiceRouteWorkers int
	// Verification tunes when zones are checked (zero fields take verify.DefaultSettings);
	// VerificationLimits bound the queries to each zone (zero fields take prober.DefaultLimits).
	Verification       verify.Settings
	VerificationLimits prober.Limits
	// Events bounds the event recorder. Zero: eventrecorder.DefaultSettings.
	Events eventrecorder.Settings
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
		opts.IstioGatewayMaxBytes = plan.DefaultIstioGatewayBudget
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
	w, err := newWriter(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetRESTMapper(), mgr.GetScheme())
	if err != nil {
		return err
	}
	b := base{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: recorder,
		ConflictRetry: opts.ConflictRetryInterval, Deletions: deletions, Versions: newWrittenVersions(), Lookups: lookups,
		Cached: cacheview.Reader{Cache: mgr.GetCache()}, Writer: w}
	ingressConflicts := metrics.NewConflictSet()
	zones := newVerification(mgr.GetClient(), mgr.GetCache(), apis, opts.Verification, opts.VerificationLimits, metrics.ObservePublished, metrics.CountQuery)
	if err := mgr.Add(zones); err != nil {
		return fmt.Errorf("adding the publication verification: %w", err)
	}
	setups := []struct {
		name  string
		setup func(ctrl.Manager) error
	}{
		{"clusteridentity", (&ClusterIdentityReconciler{base: b}).SetupWithManager},
		{"dnsconfiguration", func(mgr ctrl.Manager) error {
			return (&DNSConfigurationReconciler{base: b, APIs: apis}).SetupWithManager(mgr, guardChanges)
		}},
		{"dnspolicy", (&DNSPolicyReconciler{base: b}).SetupWithManager},
		{"serviceroute", (&ServiceRouteReconciler{base: b, APIs: apis, Workers: opts.ServiceRouteWorkers,
			Zones: zones.tracker, ZoneChanges: zones.routeEvents}).SetupWithManager},
		{"gateway", (&GatewayReconciler{base: b, APIs: apis, HostBudget: opts.IstioGatewayMaxBytes,
			Window: coalesce.New[types.NamespacedName](opts.GatewayCoalesce), Zones: zones.tracker, ZoneChanges: zones.gatewayEvents}).SetupWithManager},
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
		n, err := l.endpointsByRoute.size()
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
