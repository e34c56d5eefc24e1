package controllers

import (
	"context"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/metrics"
)

// GatewayReconciler generates the Istio Gateway of each Gateway, with the hostnames of the
// ServiceRoutes that publish through it, and reports the ingress load balancer address.
type GatewayReconciler struct {
	base
	APIs *OptionalAPIs
	// Window coalesces the route changes feeding each Gateway (gateway_controller_coalesce.go;
	// required: Setup makes it from Options.GatewayCoalesce).
	Window *gatewayWindow
	// HostBudget is the byte budget of one Istio Gateway (decide.GatewayHosts admits the oldest
	// routes within it; the others report GatewayHostLimit).
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

// Reconcile makes the Istio Gateway of a Gateway (same name and namespace, controlled by it), or
// with backend GatewayAPI its Gateway API objects, match decide.Gateway — the hostnames of the
// routes that publish through the gateway — through core.Gateway over the informer cache, and
// writes the Gateway's status once. Route changes are coalesced first (gateway_controller_coalesce.go).
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
	res, err := core.Gateway(ctx, cacheReads{base: r.base, apis: r.APIs, zones: r.Zones}, gatewayWriters(r.base), gw, r.HostBudget)
	var rq requeue
	for _, w := range res.Written {
		rq = rq.and(requeueOf(w))
	}
	if err == nil {
		r.Window.Sized(client.ObjectKeyFromObject(gw), res.HostBytes) // a larger Istio Gateway waits longer
	}
	return r.end(ctx, gw, original, res.Plan.Outcome, rq, err)
}

// gatewayWriters are the operator's writers of a Gateway's generated objects.
func gatewayWriters(b base) core.GatewayWriters {
	return core.GatewayWriters{Istio: applyWith[*istionetworkingv1.Gateway](b), Gateways: applyWith[*gwv1.Gateway](b),
		ListenerSets: applyWith[*gwv1.ListenerSet](b), HTTPRoutes: applyWith[*gwv1.HTTPRoute](b), ReferenceGrants: applyWith[*gwv1.ReferenceGrant](b)}
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
			return requestsFor(ctx, r, &routingv1alpha1.GatewayList{}, client.MatchingFields{indexGatewayIngress: ingressKey(desired.IngressOfGateway(o.(*routingv1alpha1.Gateway)))})
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
		for _, req := range requestsFor(ctx, r, &routingv1alpha1.GatewayList{}, client.MatchingFields{indexGatewayIngress: ingressKey(desired.IngressOfGateway(gw))}) {
			if req.NamespacedName != client.ObjectKeyFromObject(gw) {
				q.Add(req)
			}
		}
	}
	return eachObjectOf(enqueue)
}
