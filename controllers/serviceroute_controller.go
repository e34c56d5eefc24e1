package controllers

import (
	"cmp"
	"context"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/ownwrite"
)

// DefaultServiceRouteWorkers reconcile ServiceRoutes in parallel: routes are independent of each
// other and a reconcile mostly waits on API round-trips (--serviceroute-workers; see
// DEVELOPMENT.md for the measurements behind the default).
const DefaultServiceRouteWorkers = 8

// ServiceRouteReconciler maintains one DNSEndpoint (a CNAME to the gateway target hostname) per
// ExternalDNS controller the namespace's DNSPolicy activates.
type ServiceRouteReconciler struct {
	base
	APIs *OptionalAPIs
	// Workers is the number of routes reconciled in parallel (0: DefaultServiceRouteWorkers).
	Workers int
	// Zones are the verification results (nil: none, every zone is reported Unverified or Pending).
	Zones zoneResults
	// ZoneChanges fire when a route's state in a zone changed, or who serves its answer there
	// (failoverloop.Loop.reattribute) (nil: none).
	ZoneChanges <-chan event.GenericEvent
	// Servers attribute a zone's answer to the cluster serving it under regional failover (nil:
	// answers are reported as they are).
	Servers answerServers
}

// +kubebuilder:rbac:groups=routing.router.io,resources=serviceroutes;gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=routing.router.io,resources=serviceroutes/status,verbs=patch
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile makes a ServiceRoute's DNSEndpoints (one CNAME per active ExternalDNS controller,
// named {route}-{controller}, controlled by the route) match what decide.Route decides, through
// core.Route over the informer cache, and writes the route's status once. Records are removed
// only on a definite answer.
func (r *ServiceRouteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// original is the cache's copy (read only); route is the one the reconcile fills in.
	original := &routingv1alpha1.ServiceRoute{}
	if ok, err := fetch(ctx, r.Cached, req.NamespacedName, original); !ok {
		return ctrl.Result{}, err
	}
	route := original.DeepCopy()
	res, err := core.Route(ctx, cacheReads{base: r.base, apis: r.APIs, zones: r.Zones, servers: r.Servers}, applyWith[*externaldnsv1alpha1.DNSEndpoint](r.base), route)
	return r.end(ctx, route, original, res.Outcome, requeueOf(res.Written), err)
}

// SetupWithManager registers the controller with the watches of the architecture's "What
// Triggers Reconciliation" table, plus DNSConfiguration (controller regions label the endpoints),
// other routes claiming the same hostname (promotion when the winner goes), and the DNSEndpoint
// API appearing. The watch on the route's own DNSEndpoints starts once that API is served.
func (r *ServiceRouteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allRoutes := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return requestsForAll(ctx, r.Cached.Cache, newRoute, newRouteList, "")
	})
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("serviceroute").
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.Workers, DefaultServiceRouteWorkers)}).
		// Every change but the echoes of the operator's own status writes (ownwrite.EchoFilter): a route
		// is reconciled once per change, not once more per write. A reconcile that started
		// from a cached copy older than its last status write skips its write and asks for
		// that write's echo, which then runs it again on the fresh copy.
		For(&routingv1alpha1.ServiceRoute{}, builder.WithPredicates(ownwrite.EchoFilter(r.Versions))).
		Watches(&routingv1alpha1.ServiceRoute{}, r.claimantsHandler(), createOrDeleteOrSpec).
		Watches(&routingv1alpha1.DNSPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return requestsForAll(ctx, r.Cached.Cache, newRoute, newRouteList, o.GetNamespace())
		}), specChanges).
		Watches(&routingv1alpha1.Gateway{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			routes, err := r.Lookups.routesByGateway.Get(client.ObjectKeyFromObject(o).String())
			return requestsOf(ctx, routes, err)
		}), specChanges).
		Watches(&routingv1alpha1.Gateway{}, r.hostLimitChanges()).
		Watches(&routingv1alpha1.Gateway{}, r.listenerConflictChanges()).
		Watches(&clusterv1alpha1.ClusterIdentity{}, allRoutes, specChanges).
		Watches(&clusterv1alpha1.DNSConfiguration{}, allRoutes, specChanges).
		// Namespaces as metadata only: their labels (Gateways' allowedRoutes) and the applications
		// they own decide whether routes may publish.
		WatchesMetadata(&corev1.Namespace{}, r.namespaceHandler()).
		WatchesRawSource(apiChanges(r.APIs, allRoutes)).
		WatchesRawSource(source.Channel(r.ZoneChanges, &handler.EnqueueRequestForObject{})).
		Build(metrics.Instrument("serviceroute", r))
	if err != nil {
		return err
	}
	return watchOwnedWhenServed(mgr, r.APIs, c, dnsEndpointKind, &externaldnsv1alpha1.DNSEndpoint{}, routingGK("ServiceRoute"), r.Versions)
}
