package controllers

import (
	"context"
	"fmt"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/plan"
)

// GatewayReconciler generates the Istio Gateway of each Gateway, with the hostnames of the
// ServiceRoutes that publish through it, and reports the ingress load balancer address.
type GatewayReconciler struct {
	base
	APIs *OptionalAPIs
	// Window coalesces the route changes feeding each Gateway (gateway_controller_coalesce.go;
	// required: Setup makes it from Options.GatewayCoalesce).
	Window *gatewayWindow
	// HostBudget is the byte budget of one Istio Gateway (gateway_controller_hostlimit.go).
	HostBudget int
	// Zones are the verification results (nil: none).
	Zones zoneResults
	// ZoneChanges fire when the address records of an entry point changed state in a zone; the
	// object is a Gateway carrying the entry point's controller and targetPostfix (nil: none).
	ZoneChanges <-chan event.GenericEvent
}

// The write step creates, updates (with the resourceVersion read) and deletes generated objects,
// and status is written with a merge patch (status.go): no other verb is needed.
// +kubebuilder:rbac:groups=routing.router.io,resources=gateways/status,verbs=patch
// +kubebuilder:rbac:groups=networking.istio.io,resources=gateways,verbs=get;list;watch;create;update;delete

// Reconcile makes the Istio Gateway of a Gateway (same name and namespace, controlled by it)
// match plan.Gateway — one HTTPS server whose hosts are the hostnames of the routes that publish
// through the gateway — and writes the Gateway's status once. Without the Istio API it generates
// nothing and says so.
func (r *GatewayReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gw := &routingv1alpha1.Gateway{}
	if ok, err := fetch(ctx, r, req.NamespacedName, gw); !ok {
		if err == nil {
			r.Window.Forget(req.NamespacedName)
			err = r.forgetGatewayAPI(ctx, req.Namespace, req.Name)
		}
		return ctrl.Result{}, err
	}
	if wait := r.coalesced(gw); wait > 0 {
		return r.finish(requeue{wait: wait}, nil) // route changes still coming: one write for all
	}
	original := gw.DeepCopy()
	in, err := r.gather(ctx, gw)
	if err != nil {
		return r.end(ctx, gw, original, plan.Outcome{}, requeue{}, err)
	}
	p := plan.Gateway(in)
	var rq requeue
	if p.Outcome, rq, err = r.syncBackends(ctx, gw, p); err != nil {
		return r.end(ctx, gw, original, p.Outcome, rq, err)
	}
	if !p.Keep {
		gw.Status.TargetHostname, gw.Status.LoadBalancerIP, gw.Status.Hosts = p.Target, p.LoadBalancerIP, int32(len(p.Hosts))
		setHostLimit(gw, in.HostLimit)
		gw.Status.ListenerConflicts = p.ListenerConflicts
		if err := r.gatewayPublication(ctx, gw, p.Target); err != nil {
			return r.end(ctx, gw, original, p.Outcome, rq, err)
		}
	}
	return r.end(ctx, gw, original, p.Outcome, rq, nil)
}

func (r *GatewayReconciler) gather(ctx context.Context, gw *routingv1alpha1.Gateway) (plan.GatewayInputs, error) {
	in := plan.GatewayInputs{Gateway: gw, IstioAPIMissing: !r.APIs.Served(istioGatewayKind), GatewayAPIMissing: !r.APIs.gatewayAPIServed()}
	useAPI := plan.UsesGatewayAPI(gw)
	var err error
	if in.Identity, err = getIdentity(ctx, r); err != nil {
		return in, err
	}
	// The cache's own objects, read in place: thousands of routes, only their hostnames are used.
	routes, err := r.Lookups.routesByGateway.Get(client.ObjectKeyFromObject(gw).String())
	if err != nil {
		return in, fmt.Errorf("listing ServiceRoutes of the gateway: %w", err)
	}
	admitted := plan.GatewayHosts(gw, routes, r.HostBudget)
	in.Hosts, in.HostLimit, in.RouteHosts = admitted.Hosts, admitted.Limit, admitted.RouteHosts
	r.Window.Sized(client.ObjectKeyFromObject(gw), admitted.Bytes*max(plan.IstioHostLists(gw), 1))
	// The oldest Gateway of the (controller, targetPostfix) pair decides the ingress namespace:
	// only its Services can be the pair's load balancer.
	pair := &routingv1alpha1.GatewayList{}
	if err := r.List(ctx, pair, client.MatchingFields{indexGatewayIngress: ingressKey(ingressOf(gw))}); err != nil {
		return in, fmt.Errorf("listing the Gateways sharing the target hostname: %w", err)
	}
	decider, found := plan.IngressDecider(listItems(pair.Items))
	if !found {
		decider = gw // not in the cache yet: it is the only one the reconcile knows of
	}
	in.IngressDecider = decider
	if useAPI {
		return r.gatherGatewayAPI(ctx, in)
	}
	svc, err := ingressService(ctx, r, plan.IngressNamespace(decider), gw.Spec.Controller)
	if err != nil || svc == nil {
		return in, err
	}
	addrs := ingress.ServiceAddresses(svc)
	in.Service, in.ServiceName = &addrs, client.ObjectKeyFromObject(svc).String()
	return in, nil
}

// backendStep is the write step of one backend.
type backendStep struct {
	sync bool
	run  func() (plan.Written, requeue, error)
}

// syncBackends writes the generated objects of the backend in use, then removes the other's.
func (r *GatewayReconciler) syncBackends(ctx context.Context, gw *routingv1alpha1.Gateway, p plan.GatewayPlan) (plan.Outcome, requeue, error) {
	istio := backendStep{sync: p.SyncIstio, run: func() (plan.Written, requeue, error) {
		w, err := r.syncIstioGateway(ctx, gw, p)
		written := w.Result("Istio Gateway", "Gateway")
		return written, requeueOf(written), err
	}}
	api := backendStep{sync: p.SyncGatewayAPI, run: func() (plan.Written, requeue, error) {
		return r.syncGatewayAPI(ctx, gw, p.GatewayAPI)
	}}
	order := []backendStep{istio, api}
	if plan.UsesGatewayAPI(gw) {
		order = []backendStep{api, istio}
	}
	outcome, rq := p.Outcome, requeue{}
	for _, step := range order {
		if !step.sync {
			continue
		}
		w, q, err := step.run()
		rq = rq.and(q)
		if err != nil {
			return outcome, rq, err
		}
		outcome = plan.AfterWrite(outcome, w)
		if len(w.Conflicts) > 0 {
			break // the other backend's objects stay until this one's are all in place
		}
	}
	return outcome, rq, nil
}

// syncIstioGateway makes the generated Istio Gateway match the plan (none when it has no hosts).
// The current one comes from the cache, which holds only Istio Gateways with the managed-by label.
func (r *GatewayReconciler) syncIstioGateway(ctx context.Context, gw *routingv1alpha1.Gateway, p plan.GatewayPlan) (core.Written[*istionetworkingv1.Gateway], error) {
	var current, want []*istionetworkingv1.Gateway
	existing := &istionetworkingv1.Gateway{}
	switch err := r.Get(ctx, client.ObjectKeyFromObject(gw), existing); {
	case err == nil:
		current = append(current, existing)
	case !apierrors.IsNotFound(err):
		return core.Written[*istionetworkingv1.Gateway]{}, fmt.Errorf("reading Istio Gateway: %w", err)
	}
	if len(p.Hosts) > 0 && !plan.UsesGatewayAPI(gw) {
		want = append(want, desired.IstioGateway(gw, p.Hosts))
	}
	kind := desired.IstioGatewayKind(gw.Name)
	return applyChanges(ctx, r.base, kind, want, current, core.Notice[*istionetworkingv1.Gateway]{Target: gw, Reason: p.Reason, Describe: describeHosts})
}

// describeHosts summarises an Istio Gateway for events: "3 host(s)".
func describeHosts(g *istionetworkingv1.Gateway) string {
	n := 0
	for _, s := range g.Spec.Servers {
		n += len(s.Hosts)
	}
	return fmt.Sprintf("%d host(s)", n)
}

// SetupWithManager registers the controller: the hosts follow the referencing ServiceRoutes
// (status included: only publishing routes count), the address follows the ingress Services, the
// target hostname follows the ClusterIdentity, and the Istio Gateway watch starts once the Istio
// API is served.
func (r *GatewayReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allGateways := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		return requestsFor(ctx, r, &routingv1alpha1.GatewayList{})
	})
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("gateway").
		// Every change, its own status writes included: a reconcile that started from a cached
		// copy older than the last status write may find nothing to write; the write's own
		// event then runs it again on the fresh copy, so a status never stays stale.
		For(&routingv1alpha1.Gateway{}).
		WatchesRawSource(apiChanges(r.APIs, allGateways)).
		Watches(&routingv1alpha1.ServiceRoute{}, routeChangesOfGateways(r.Window)).
		// Only the Gateways that trust the Service's namespace: a Service elsewhere wakes nothing.
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			controller := o.GetLabels()[ingressLabel]
			if controller == "" {
				return nil
			}
			return requestsFor(ctx, r, &routingv1alpha1.GatewayList{}, client.MatchingFields{indexGatewayIngressService: ingressServiceKey(o.GetNamespace(), controller)})
		})).
		// The other Gateways of a pair: which one decides the ingress namespace can change.
		Watches(&routingv1alpha1.Gateway{}, r.pairPeers(), createOrDeleteOrSpec).
		Watches(&clusterv1alpha1.ClusterIdentity{}, allGateways, specChanges).
		Watches(&clusterv1alpha1.DNSConfiguration{}, allGateways, specChanges).
		WatchesRawSource(source.Channel(r.ZoneChanges, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return requestsFor(ctx, r, &routingv1alpha1.GatewayList{}, client.MatchingFields{indexGatewayIngress: ingressKey(ingressOf(o.(*routingv1alpha1.Gateway)))})
		}))).
		Build(metrics.Instrument("gateway", r))
	if err != nil {
		return err
	}
	if err := r.APIs.WhenServed(dnsEndpointKind, func() error {
		return c.Watch(source.Kind(mgr.GetCache(), client.Object(&externaldnsv1alpha1.DNSEndpoint{}), handler.EnqueueRequestsFromMapFunc(r.gatewaysOfAddressRecords)))
	}); err != nil {
		return err
	}
	if err := watchOwnedWhenServed(mgr, r.APIs, c, istioGatewayKind, &istionetworkingv1.Gateway{}, routingGK("Gateway"), r.Versions); err != nil {
		return err
	}
	return r.watchGatewayAPI(mgr, c)
}

// pairPeers enqueues the Gateways sharing the (controller, targetPostfix) pair of a Gateway that
// was created, deleted or changed (before and after the change): the oldest of a pair decides the
// ingress namespace of all of them.
func (r *GatewayReconciler) pairPeers() handler.EventHandler {
	enqueue := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		gw, ok := obj.(*routingv1alpha1.Gateway)
		if !ok {
			return
		}
		for _, req := range requestsFor(ctx, r, &routingv1alpha1.GatewayList{}, client.MatchingFields{indexGatewayIngress: ingressKey(ingressOf(gw))}) {
			if req.NamespacedName != client.ObjectKeyFromObject(gw) {
				q.Add(req)
			}
		}
	}
	return eachObjectOf(enqueue)
}
