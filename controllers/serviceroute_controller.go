package controllers

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/ownwrite"
	"github.com/service-router/service-router-operator/internal/plan"
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
	// ZoneChanges fire when a route's state in a zone changed (nil: none).
	ZoneChanges <-chan event.GenericEvent
}

// +kubebuilder:rbac:groups=routing.router.io,resources=serviceroutes;gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=routing.router.io,resources=serviceroutes/status,verbs=patch
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile makes a ServiceRoute's DNSEndpoints (one CNAME per active ExternalDNS controller,
// named {route}-{controller}, controlled by the route) match what plan.Route decides from the
// route, the ClusterIdentity, the DNSConfiguration, the namespace's DNSPolicy in force, the
// Gateway, and what the platform says about namespaces (labels for the Gateway's allowedRoutes,
// the applications they own), and writes the route's status once. Records are removed only on a definite answer.
func (r *ServiceRouteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// original is the cache's copy (read only); route is the one the reconcile fills in.
	original := &routingv1alpha1.ServiceRoute{}
	if ok, err := fetch(ctx, r.Cached, req.NamespacedName, original); !ok {
		return ctrl.Result{}, err
	}
	route := original.DeepCopy()
	in, err := r.gather(ctx, route)
	if err != nil {
		return r.end(ctx, route, original, plan.Outcome{}, requeue{}, err) // nothing is deleted on a failed read
	}
	p := plan.Route(in)
	var rq requeue
	if p.Sync {
		w, err := r.syncEndpoints(ctx, route, p)
		if err != nil {
			return r.end(ctx, route, original, p.Outcome, rq, err)
		}
		route.Status.Endpoints, route.Status.DNSEndpoint = plan.ManagedEndpoints(w.Applied)
		route.Status.Hostname, route.Status.TargetHostname = p.Hostname, p.Target
		p.Outcome = plan.AfterWrite(p.Outcome, w.result("DNSEndpoint", "ServiceRoute"))
		rq = requeueOf(w)
		if err := r.routePublication(ctx, route, in.Configuration, w.Applied); err != nil {
			return r.end(ctx, route, original, p.Outcome, rq, err)
		}
	}
	return r.end(ctx, route, original, p.Outcome, rq, nil)
}

func (r *ServiceRouteReconciler) gather(ctx context.Context, route *routingv1alpha1.ServiceRoute) (plan.RouteInputs, error) {
	in := plan.RouteInputs{Route: route}
	var err error
	// Every input is read only: shallow copies of the cache's objects (base.Cached).
	if in.Identity, in.Configuration, err = getSingletons(ctx, r.Cached); err != nil {
		return in, err
	}
	in.EndpointsAPIMissing = !r.APIs.Served(dnsEndpointKind)
	if in.Policy, err = policyInForce(ctx, r.Cached, route.Namespace); err != nil {
		return in, err
	}
	ns, err := getNamespace(ctx, r.Cached, route.Namespace)
	if err != nil {
		return in, err
	}
	in.NamespaceLabels, in.NamespaceAnnotations = ns.Labels, ns.Annotations
	if in.ApplicationListedBy, err = namespacesListing(ctx, r.Cached, route.Spec.Application); err != nil {
		return in, err
	}
	gw := &routingv1alpha1.Gateway{}
	switch err := r.Cached.Get(ctx, plan.GatewayRef(route), gw); {
	case err == nil:
		in.Gateway = gw
	case !apierrors.IsNotFound(err):
		return in, fmt.Errorf("reading Gateway: %w", err)
	}
	if in.Identity != nil {
		in.Winner, err = r.hostnameWinner(ctx, route, in.Identity)
	}
	return in, err
}

// syncEndpoints writes the plan's DNSEndpoints: the route's current ones come from the cache
// (by the route label index), the changes from apply.Diff in applyChanges.
func (r *ServiceRouteReconciler) syncEndpoints(ctx context.Context, route *routingv1alpha1.ServiceRoute, p plan.RoutePlan) (written[*externaldnsv1alpha1.DNSEndpoint], error) {
	current, err := r.Lookups.endpointsByRoute.Get(routeKey(route.Namespace, route.Name))
	if err != nil {
		return written[*externaldnsv1alpha1.DNSEndpoint]{}, fmt.Errorf("listing DNSEndpoints of the route: %w", err)
	}
	kind := desired.RouteEndpointKind(route.Name)
	return applyChanges(ctx, r.base, kind, p.Endpoints, current, notice[*externaldnsv1alpha1.DNSEndpoint]{target: route, reason: p.Reason, describe: describeRecords})
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
