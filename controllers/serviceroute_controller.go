package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
)

// cacheLagRetry is how soon a reconcile that met cache lag runs again.
const cacheLagRetry = 500 * time.Millisecond

// routeWorkers reconcile ServiceRoutes in parallel: routes are independent of each other and a
// reconcile mostly waits on API round-trips (BenchmarkOperator_ConvergeRoutes: 1000 routes
// converge 1.5x faster with 4 workers than with 1 on 2 cores).
const routeWorkers = 4

// ServiceRouteReconciler maintains one DNSEndpoint (a CNAME to the gateway target hostname) per
// ExternalDNS controller the namespace's DNSPolicy activates.
type ServiceRouteReconciler struct {
	client.Client
	// APIReader reads past the cache, only to check who owns an object whose name is taken.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// ConflictRetry is how soon an ownership conflict is checked again.
	ConflictRetry time.Duration
}

// +kubebuilder:rbac:groups=routing.router.io,resources=serviceroutes;gateways,verbs=get;list;watch
// +kubebuilder:rbac:groups=routing.router.io,resources=serviceroutes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=externaldns.k8s.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete

func (r *ServiceRouteReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	route := &routingv1alpha1.ServiceRoute{}
	if err := r.Get(ctx, req.NamespacedName, route); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !route.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector removes the DNSEndpoints it controls
	}
	in, err := r.gather(ctx, route)
	if err != nil {
		return ctrl.Result{}, err // nothing is deleted on a failed read
	}
	p := plan.Route(in)

	original := route.DeepCopy()
	var result ctrl.Result
	if p.Sync {
		res, err := r.syncEndpoints(ctx, route, p)
		if err != nil {
			return finish(ctrl.Result{}, err)
		}
		route.Status.Endpoints, route.Status.DNSEndpoint = managedEndpoints(res.Applied)
		if len(res.Conflicts) > 0 {
			result.RequeueAfter = r.ConflictRetry
			p.Outcome = plan.Outcome{Phase: string(routingv1alpha1.PhaseFailed), Reason: routingv1alpha1.ReasonOwnershipConflict,
				Message: fmt.Sprintf("DNSEndpoint(s) %s exist and are not managed by this ServiceRoute; they were left untouched", strings.Join(res.Conflicts, ", "))}
		}
	}
	if p.Hostname != "" {
		route.Status.Hostname, route.Status.TargetHostname = p.Hostname, p.Target
	}
	route.Status.Phase = routingv1alpha1.Phase(p.Phase)
	route.Status.ObservedGeneration = route.Generation
	previous := setReady(&route.Status.Conditions, route.Generation, p.Outcome)
	changed := !equality.Semantic.DeepEqual(original.Status, route.Status)
	return finish(result, writeStatus(ctx, r.Client, r.Recorder, route, original, changed, previous, p.Outcome))
}

func (r *ServiceRouteReconciler) gather(ctx context.Context, route *routingv1alpha1.ServiceRoute) (plan.RouteInputs, error) {
	in := plan.RouteInputs{Route: route}
	var err error
	if in.Identity, err = getIdentity(ctx, r); err != nil {
		return in, err
	}
	cfg, err := getConfiguration(ctx, r)
	if err != nil {
		return in, err
	}
	in.Controllers = plan.ControllersOf(cfg)
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

// claimants lists the ServiceRoutes whose hostname equals route's, route included.
func (r *ServiceRouteReconciler) claimants(ctx context.Context, route *routingv1alpha1.ServiceRoute, ci *clusterv1alpha1.ClusterIdentity) ([]*routingv1alpha1.ServiceRoute, error) {
	label := naming.SourceLabel(route.Spec.ServiceName, ci.Spec.EnvironmentLetter, route.Spec.Environment, route.Spec.Application)
	var out []*routingv1alpha1.ServiceRoute
	for _, key := range naming.ClaimKeys(label, ci.Spec.EnvironmentLetter) {
		list := &routingv1alpha1.ServiceRouteList{}
		if err := r.List(ctx, list, client.MatchingFields{indexRouteHostnameKey: key}); err != nil {
			return nil, fmt.Errorf("listing ServiceRoutes claiming %s: %w", label, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

func (r *ServiceRouteReconciler) syncEndpoints(ctx context.Context, route *routingv1alpha1.ServiceRoute, p plan.RoutePlan) (syncResult, error) {
	list := &externaldnsv1alpha1.DNSEndpointList{}
	if err := r.List(ctx, list, client.InNamespace(route.Namespace), client.MatchingFields{indexEndpointRoute: route.Namespace + "/" + route.Name}); err != nil {
		return syncResult{}, fmt.Errorf("listing DNSEndpoints of the route: %w", err)
	}
	current := make([]*externaldnsv1alpha1.DNSEndpoint, len(list.Items))
	for i := range list.Items {
		current[i] = &list.Items[i]
	}
	syncer := endpointSyncer{client: r.Client, apiReader: r.APIReader, recorder: r.Recorder}
	return syncer.sync(ctx, p.Endpoints, current, func(ep *externaldnsv1alpha1.DNSEndpoint) bool {
		return desired.OwnedBy(ep, "ServiceRoute", route.Name)
	}, route, p.Reason)
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
// Triggers Reconciliation" table, plus DNSConfiguration (controller regions label the endpoints)
// and other routes claiming the same hostname (promotion when the winner goes).
func (r *ServiceRouteReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allRoutes := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return requestsFor(ctx, r, &routingv1alpha1.ServiceRouteList{})
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("serviceroute").
		WithOptions(controller.Options{MaxConcurrentReconciles: routeWorkers}).
		For(&routingv1alpha1.ServiceRoute{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&externaldnsv1alpha1.DNSEndpoint{}).
		Watches(&routingv1alpha1.ServiceRoute{}, r.claimantsHandler(), createOrDeleteOrSpec).
		Watches(&routingv1alpha1.DNSPolicy{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return requestsFor(ctx, r, &routingv1alpha1.ServiceRouteList{}, client.InNamespace(o.GetNamespace()))
		})).
		Watches(&routingv1alpha1.Gateway{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return requestsFor(ctx, r, &routingv1alpha1.ServiceRouteList{}, client.MatchingFields{indexRouteGateway: client.ObjectKeyFromObject(o).String()})
		}), specChanges).
		Watches(&clusterv1alpha1.ClusterIdentity{}, allRoutes, specChanges).
		Watches(&clusterv1alpha1.DNSConfiguration{}, allRoutes, specChanges).
		Complete(metrics.Instrument("serviceroute", r))
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
