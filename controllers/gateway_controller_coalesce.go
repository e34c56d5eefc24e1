package controllers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/coalesce"
	"github.com/service-router/service-router-operator/internal/decide"
)

// A Gateway's Istio Gateway lists the host of every route that publishes through it, and its
// status counts them: one object written for thousands of routes. Written on every route change,
// a burst of route changes (a GitOps sync, a domain change reaching every route) would rewrite it
// — 100 KB at 3,000 hosts — once per route. Instead route changes are coalesced per Gateway: the
// Gateway's reconcile runs once no route change came for a quiet period, or a maximum wait after
// the first pending one, and writes the Istio Gateway and the status once for all of them.

// gatewayWindow holds the route changes not yet written, per Gateway.
type gatewayWindow = coalesce.Window[types.NamespacedName]

// routeChangesOfGateways is the Gateway controller's watch on ServiceRoutes. A change that can
// alter a Gateway's hosts (decide.HostInputChanged) is recorded in the window, and the Gateway is
// queued for when its window is due; other route changes are ignored.
func routeChangesOfGateways(window *gatewayWindow) handler.EventHandler {
	changed := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], routes ...*routingv1alpha1.ServiceRoute) {
		seen := map[types.NamespacedName]bool{}
		for _, r := range routes {
			key := decide.GatewayRef(r)
			if seen[key] {
				continue
			}
			seen[key] = true
			q.AddAfter(reconcile.Request{NamespacedName: key}, window.Changed(key, time.Now()))
		}
	}
	route := func(o client.Object) *routingv1alpha1.ServiceRoute {
		r, _ := o.(*routingv1alpha1.ServiceRoute)
		return r
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if r := route(e.Object); r != nil && decide.HostInputChanged(nil, r) {
				changed(q, r)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if old, r := route(e.ObjectOld), route(e.ObjectNew); old != nil && r != nil && decide.HostInputChanged(old, r) {
				changed(q, old, r)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if r := route(e.Object); r != nil && decide.HostInputChanged(r, nil) {
				changed(q, r)
			}
		},
	}
}

// coalesced returns how long a Gateway's reconcile must wait for route changes still coming (0:
// go ahead now, and the pending changes are taken: the reconcile reads them from the cache). A
// change of the Gateway's own spec never waits.
func (r *GatewayReconciler) coalesced(gw *routingv1alpha1.Gateway) time.Duration {
	specChanged := gw.Generation != gw.Status.ObservedGeneration
	return r.Window.Take(client.ObjectKeyFromObject(gw), time.Now(), specChanged)
}
