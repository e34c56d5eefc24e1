package controllers

import (
	"context"
	"fmt"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/prober"
	"github.com/service-router/service-router-operator/internal/verify"
)

// CacheOptions restricts the informer caches to what the operator manages, so that memory follows
// the operator's objects rather than the cluster's size: DNSEndpoints and Istio Gateways carrying
// the managed-by label (objects of others never enter the cache; a name collision with one is
// detected at create time), and Services carrying an istio label (ingress gateways). Managed
// fields are stripped from every cached object.
func CacheOptions() cache.Options {
	managed := labels.SelectorFromSet(labels.Set{naming.LabelManagedBy: naming.ManagedByValue})
	hasIstioLabel, err := labels.NewRequirement(naming.IngressServiceSelector, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant requirement; cannot fail
	}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&externaldnsv1alpha1.DNSEndpoint{}: {Label: managed},
			&istionetworkingv1.Gateway{}:       {Label: managed},
			&corev1.Service{}:                  {Label: labels.NewSelector().Add(*hasIstioLabel)},
		},
	}
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
	// Verification tunes when zones are checked (zero fields take verify.DefaultSettings);
	// VerificationLimits bound the queries to each zone (zero fields take prober.DefaultLimits).
	Verification       verify.Settings
	VerificationLimits prober.Limits
}

// Setup registers the field indexes and the six controllers with the manager, each instrumented
// for the per-controller health metrics, the collector of the resource-state metrics, and the
// watcher of the optional APIs (DNSEndpoint, Istio Gateway).
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.ConflictRetryInterval <= 0 {
		opts.ConflictRetryInterval = time.Minute
	}
	if err := addIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("registering field indexes: %w", err)
	}
	apis := NewOptionalAPIs(mgr.GetRESTMapper())
	if err := mgr.Add(apis); err != nil {
		return fmt.Errorf("adding the optional API watcher: %w", err)
	}
	guardChanges := make(chan event.GenericEvent, 1)
	deletions := guard.New(opts.DeletionGuard, managedEndpointCount(mgr.GetClient(), apis), func(tripped bool) {
		if tripped {
			metrics.DeletionGuardTripped()
		}
		select {
		case guardChanges <- event.GenericEvent{Object: &clusterv1alpha1.DNSConfiguration{}}:
		default: // one pending notification is enough
		}
	})
	b := base{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("service-router-operator"),
		ConflictRetry: opts.ConflictRetryInterval, Deletions: deletions}
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
		{"serviceroute", (&ServiceRouteReconciler{base: b, APIs: apis, Zones: zones.tracker, ZoneChanges: zones.routeEvents}).SetupWithManager},
		{"gateway", (&GatewayReconciler{base: b, APIs: apis, Zones: zones.tracker, ZoneChanges: zones.gatewayEvents}).SetupWithManager},
		{"ingressdns", (&IngressDNSReconciler{base: b, APIs: apis, Conflicts: ingressConflicts}).SetupWithManager},
	}
	for _, s := range setups {
		if err := s.setup(mgr); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", s.name, err)
		}
	}
	metrics.RegisterDeletionsHeld(func() int { return deletions.State(time.Now()).Held })
	collector := metrics.NewStateCollector(mgr.GetClient(), ingressConflicts, func(l client.ObjectList) bool {
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

// managedEndpointCount counts the DNSEndpoints the operator manages, from the cache, for the
// mass-deletion guard's share.
func managedEndpointCount(c client.Reader, apis *OptionalAPIs) func() int {
	return func() int {
		if !apis.Served(dnsEndpointKind) {
			return 0
		}
		list := &externaldnsv1alpha1.DNSEndpointList{}
		if err := c.List(context.Background(), list, client.UnsafeDisableDeepCopy); err != nil {
			return 0 // unknown: every request counts against an empty total, so the guard trips
		}
		return len(list.Items)
	}
}
