package controllers

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
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
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
)

// defaultRouteWorkers reconcile ServiceRoutes in parallel: routes are independent of each other
// and a reconcile mostly waits on API round-trips (--serviceroute-workers; see DEVELOPMENT.md
// for the measurements behind the default).
const defaultRouteWorkers = 8

// ServiceRouteReconciler maintains one DNSEndpoint (a CNAME to the gateway target hostname) per
// ExternalDNS controller the namespace's DNSPolicy activates.
type ServiceRouteReconciler struct {
	base
	APIs *OptionalAPIs
	// Workers is the number of routes reconciled in parallel (0: defaultRouteWorkers).
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
		route.Status.Endpoints, route.Status.DNSEndpoint = managedEndpoints(w.Applied)
		route.Status.Hostname, route.Status.TargetHostname = p.Hostname, p.Target
		p.Outcome = routeOutcome(p.Outcome, w)
		rq = requeueOf(w)
		if err := r.routePublication(ctx, route, in.Configuration, w.Applied); err != nil {
			return r.end(ctx, route, original, p.Outcome, rq, err)
		}
	}
	return r.end(ctx, route, original, p.Outcome, rq, nil)
}

// routeOutcome adds what the write step found to the plan's outcome: ownership conflicts fail
// the route, deletions held by the mass-deletion guard are announced.
func routeOutcome(o plan.Outcome, w written[*externaldnsv1alpha1.DNSEndpoint]) plan.Outcome {
	if len(w.Conflicts) > 0 {
		keys := make([]string, len(w.Conflicts))
		for i, c := range w.Conflicts {
			keys[i] = c.Key
		}
		return plan.Outcome{Phase: string(routingv1alpha1.PhaseFailed), Reason: routingv1alpha1.ReasonOwnershipConflict,
			Message: fmt.Sprintf("DNSEndpoint(s) %s exist and are not managed by this ServiceRoute; they were left untouched", strings.Join(keys, ", "))}
	}
	if !w.HeldUntil.IsZero() {
		o.Message += fmt.Sprintf("; the deletion of its other DNSEndpoint(s) waits until %s (mass-deletion guard)", w.HeldUntil.UTC().Format(time.RFC3339))
	}
	return o
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

// hostnameWinner returns the oldest other ServiceRoute, in any namespace, that generates the same
// hostname as route and may use its application (plan.HostnameWinner); nil when route is the
// oldest such claimant.
func (r *ServiceRouteReconciler) hostnameWinner(ctx context.Context, route *routingv1alpha1.ServiceRoute, ci *clusterv1alpha1.ClusterIdentity) (*routingv1alpha1.ServiceRoute, error) {
	claimants, err := r.claimants(ctx, route, ci)
	if err != nil {
		return nil, err
	}
	allowed := make(map[types.UID]bool, len(claimants))
	for _, c := range claimants {
		if c.UID == route.UID {
			continue
		}
		if allowed[c.UID], err = applicationAllowed(ctx, r.Cached, c); err != nil {
			return nil, err
		}
	}
	return plan.HostnameWinner(route, claimants, func(c *routingv1alpha1.ServiceRoute) bool { return allowed[c.UID] }), nil
}

// claimants lists the ServiceRoutes whose hostname equals route's, route included. They are the
// cache's own objects: read them, never change them.
func (r *ServiceRouteReconciler) claimants(ctx context.Context, route *routingv1alpha1.ServiceRoute, ci *clusterv1alpha1.ClusterIdentity) ([]*routingv1alpha1.ServiceRoute, error) {
	label := naming.SourceLabel(route.Spec.ServiceName, ci.Spec.EnvironmentLetter, route.Spec.Environment, route.Spec.Application)
	var out []*routingv1alpha1.ServiceRoute
	for _, key := range naming.ClaimKeys(label, ci.Spec.EnvironmentLetter) {
		claiming, err := r.Lookups.routesByHostname.get(key)
		if err != nil {
			return nil, fmt.Errorf("listing ServiceRoutes claiming %s: %w", label, err)
		}
		out = append(out, claiming...)
	}
	return out, nil
}

// syncEndpoints writes the plan's DNSEndpoints: the route's current ones come from the cache
// (by the route label index), the changes from apply.Diff in applyChanges.
func (r *ServiceRouteReconciler) syncEndpoints(ctx context.Context, route *routingv1alpha1.ServiceRoute, p plan.RoutePlan) (written[*externaldnsv1alpha1.DNSEndpoint], error) {
	current, err := r.Lookups.endpointsByRoute.get(routeKey(route.Namespace, route.Name))
	if err != nil {
		return written[*externaldnsv1alpha1.DNSEndpoint]{}, fmt.Errorf("listing DNSEndpoints of the route: %w", err)
	}
	kind := desired.RouteEndpointKind(route.Name)
	return applyChanges(ctx, r.base, kind, p.Endpoints, current, notice[*externaldnsv1alpha1.DNSEndpoint]{target: route, reason: p.Reason, describe: describeRecords})
}

func managedEndpoints(applied []*externaldnsv1alpha1.DNSEndpoint) ([]routingv1alpha1.ManagedEndpoint, string) {
	if len(applied) == 0 {
		return nil, ""
	}
	out := make([]routingv1alpha1.ManagedEndpoint, len(applied))
	for i, ep := range applied {
		out[i] = routingv1alpha1.ManagedEndpoint{Name: ep.Name, Controller: ep.Labels[naming.LabelController], Region: ep.Labels[naming.LabelRegion]}
	}
	return out, out[0].Name
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
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.Workers, defaultRouteWorkers)}).
		// Every change but the echoes of the operator's own status writes (ownEchoes): a route
		// is reconciled once per change, not once more per write. A reconcile that started
		// from a cached copy older than its last status write skips its write and asks for
		// that write's echo, which then runs it again on the fresh copy.
		For(&routingv1alpha1.ServiceRoute{}, builder.WithPredicates(ownEchoes(r.Versions))).
		Watches(&routingv1alpha1.ServiceRoute{}, r.claimantsHandler(), createOrDeleteOrSpec).
		Watches(&routingv1alpha1.DNSPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return requestsForAll(ctx, r.Cached.Cache, newRoute, newRouteList, o.GetNamespace())
		}), specChanges).
		Watches(&routingv1alpha1.Gateway{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			routes, err := r.Lookups.routesByGateway.get(client.ObjectKeyFromObject(o).String())
			return requestsOf(ctx, routes, err)
		}), specChanges).
		Watches(&routingv1alpha1.Gateway{}, r.hostLimitChanges()).
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

// namespaceHandler enqueues the routes a namespace change affects: a change of its labels
// affects its own routes (Gateways' allowedRoutes); a change of the applications it lists affects
// its own routes and, in every namespace, the routes using an application added or removed, and
// the routes claiming the same hostnames as any of those (a route whose application is no longer
// allowed stops claiming, and the next claimant is promoted).
func (r *ServiceRouteReconciler) namespaceHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, old, new client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		ns := new
		if ns == nil {
			ns = old
		}
		oldApps, oldListed := applicationsOf(old)
		newApps, newListed := applicationsOf(new)
		appsChanged := oldListed != newListed || !slices.Equal(oldApps, newApps)
		if old != nil && new != nil && !appsChanged && maps.Equal(old.GetLabels(), new.GetLabels()) {
			return // no change the routes depend on
		}
		// Read in place: every namespace arrives as created when the operator starts.
		affected, err := cacheview.All(ctx, r.Cached.Cache, newRoute, newRouteList, ns.GetName())
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the ServiceRoutes of a namespace", "namespace", ns.GetName())
			return
		}
		if !appsChanged {
			for _, route := range affected {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(route)})
			}
			return
		}
		for _, app := range symmetricDifference(oldApps, newApps) {
			list := &routingv1alpha1.ServiceRouteList{}
			if err := r.Cached.List(ctx, list, client.MatchingFields{indexRouteApplication: app}); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "listing the ServiceRoutes of an application", "application", app)
				continue
			}
			affected = append(affected, listItems(list.Items)...)
		}
		ci, err := getIdentity(ctx, r.Cached)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "reading the ClusterIdentity")
		}
		for _, route := range affected {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(route)})
			if ci == nil {
				continue
			}
			claimants, err := r.claimants(ctx, route, ci)
			if err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "listing hostname claimants")
				continue
			}
			for _, c := range claimants {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, nil, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectOld, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, nil, q)
		},
	}
}

// applicationsOf returns the applications a namespace lists, sorted (none for a nil namespace).
func applicationsOf(ns client.Object) ([]string, bool) {
	if ns == nil {
		return nil, false
	}
	apps, listed := naming.Applications(ns.GetAnnotations())
	slices.Sort(apps)
	return apps, listed
}

// symmetricDifference returns the names in exactly one of two sorted lists. A list set or unset
// as a whole changes what its own routes may use, which the caller handles; other namespaces
// are affected only by the names added or removed.
func symmetricDifference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}

// claimantsHandler enqueues the other routes claiming the hostname of a route that was created,
// deleted or changed, so that a conflict is detected at once and the next claimant is promoted
// when the winner goes away.
func (r *ServiceRouteReconciler) claimantsHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		route, ok := obj.(*routingv1alpha1.ServiceRoute)
		if !ok {
			return
		}
		ci, err := getIdentity(ctx, r.Cached)
		if err != nil || ci == nil {
			return
		}
		claimants, err := r.claimants(ctx, route, ci)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing hostname claimants")
			return
		}
		for _, c := range claimants {
			if c.UID != route.UID {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
			}
		}
	}
	return eachObjectOf(enqueue)
}
