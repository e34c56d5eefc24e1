package controllers

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
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
}

// +kubebuilder:rbac:groups=routing.router.io,resources=serviceroutes;gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=routing.router.io,resources=serviceroutes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete

// Reconcile makes a ServiceRoute's DNSEndpoints (one CNAME per active ExternalDNS controller,
// named {route}-{controller}, controlled by the route) match what plan.Route decides from the
// route, the ClusterIdentity, the DNSConfiguration, the namespace's DNSPolicy in force and the
// Gateway, and writes the route's status once. Records are removed only on a definite answer.
func (r *ServiceRouteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	route := &routingv1alpha1.ServiceRoute{}
	if err := r.Get(ctx, req.NamespacedName, route); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !route.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes the DNSEndpoints it controls
	}
	original := route.DeepCopy()
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
	if in.Identity, err = getIdentity(ctx, r); err != nil {
		return in, err
	}
	if in.Configuration, err = getConfiguration(ctx, r); err != nil {
		return in, err
	}
	in.EndpointsAPIMissing = !r.APIs.Served(dnsEndpointKind)
	if in.Policy, err = policyInForce(ctx, r, route.Namespace); err != nil {
		return in, err
	}
	gw := &routingv1alpha1.Gateway{}
	switch err := r.Get(ctx, plan.GatewayRef(route), gw); {
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
// hostname as route; nil when route is the oldest claimant.
func (r *ServiceRouteReconciler) hostnameWinner(ctx context.Context, route *routingv1alpha1.ServiceRoute, ci *clusterv1alpha1.ClusterIdentity) (*routingv1alpha1.ServiceRoute, error) {
	claimants, err := r.claimants(ctx, route, ci)
	if err != nil {
		return nil, err
	}
	oldest, found := plan.Oldest(append(claimants, route))
	if !found || oldest.UID == route.UID {
		return nil, nil
	}
	return oldest, nil
}

// claimants lists the ServiceRoutes whose hostname equals route's, route included. They are the
// cache's own objects: read them, never change them.
func (r *ServiceRouteReconciler) claimants(ctx context.Context, route *routingv1alpha1.ServiceRoute, ci *clusterv1alpha1.ClusterIdentity) ([]*routingv1alpha1.ServiceRoute, error) {
	label := naming.SourceLabel(route.Spec.ServiceName, ci.Spec.EnvironmentLetter, route.Spec.Environment, route.Spec.Application)
	var out []*routingv1alpha1.ServiceRoute
	for _, key := range naming.ClaimKeys(label, ci.Spec.EnvironmentLetter) {
		list := &routingv1alpha1.ServiceRouteList{}
		// Read-only: claimants are compared and named, never changed.
		if err := r.List(ctx, list, client.MatchingFields{indexRouteHostnameKey: key}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing ServiceRoutes claiming %s: %w", label, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// syncEndpoints writes the plan's DNSEndpoints: the route's current ones come from the cache
// (by the route label index), the changes from apply.Diff.
func (r *ServiceRouteReconciler) syncEndpoints(ctx context.Context, route *routingv1alpha1.ServiceRoute, p plan.RoutePlan) (written[*externaldnsv1alpha1.DNSEndpoint], error) {
	list := &externaldnsv1alpha1.DNSEndpointList{}
	if err := r.List(ctx, list, client.InNamespace(route.Namespace), client.MatchingFields{indexEndpointRoute: route.Namespace + "/" + route.Name}); err != nil {
		return written[*externaldnsv1alpha1.DNSEndpoint]{}, fmt.Errorf("listing DNSEndpoints of the route: %w", err)
	}
	kind := desired.RouteEndpointKind(route.Name)
	changes := apply.Diff(kind, p.Endpoints, listItems(list.Items))
	return applyChanges(ctx, r.base, kind, changes, notice[*externaldnsv1alpha1.DNSEndpoint]{target: route, reason: p.Reason, describe: describeRecords})
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
		return requestsFor(ctx, r, &routingv1alpha1.ServiceRouteList{})
	})
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("serviceroute").
		WithOptions(controller.Options{MaxConcurrentReconciles: cmp.Or(r.Workers, defaultRouteWorkers)}).
		// Every change, its own status writes included: a reconcile that started from a cached
		// copy older than the last status write may find nothing to write; the write's own
		// event then runs it again on the fresh copy, so a status never stays stale.
		For(&routingv1alpha1.ServiceRoute{}).
		Watches(&routingv1alpha1.ServiceRoute{}, r.claimantsHandler(), createOrDeleteOrSpec).
		Watches(&routingv1alpha1.DNSPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return requestsFor(ctx, r, &routingv1alpha1.ServiceRouteList{}, client.InNamespace(o.GetNamespace()))
		}), specChanges).
		Watches(&routingv1alpha1.Gateway{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return requestsFor(ctx, r, &routingv1alpha1.ServiceRouteList{}, client.MatchingFields{indexRouteGateway: client.ObjectKeyFromObject(o).String()})
		}), specChanges).
		Watches(&routingv1alpha1.Gateway{}, r.hostLimitChanges()).
		Watches(&clusterv1alpha1.ClusterIdentity{}, allRoutes, specChanges).
		Watches(&clusterv1alpha1.DNSConfiguration{}, allRoutes, specChanges).
		WatchesRawSource(apiChanges(r.APIs, allRoutes)).
		Build(metrics.Instrument("serviceroute", r))
	if err != nil {
		return err
	}
	return r.APIs.WhenServed(dnsEndpointKind, func() error {
		return c.Watch(source.Kind(mgr.GetCache(), client.Object(&externaldnsv1alpha1.DNSEndpoint{}),
			controllerOwner(routingGK("ServiceRoute"))))
	})
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
		ci, err := getIdentity(ctx, r)
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
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectOld, q)
			enqueue(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}
