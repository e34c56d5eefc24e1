package controllers

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// listenerConflictChanges is the ServiceRoute controller's watch on the listener conflicts of
// Gateways with backend GatewayAPI: when a Gateway's status.listenerConflicts changes, the routes
// whose hostname entered or left it are reconciled (their Ready condition says so).
func (r *ServiceRouteReconciler) listenerConflictChanges() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*routingv1alpha1.Gateway)
			gw, okNew := e.ObjectNew.(*routingv1alpha1.Gateway)
			if !okOld || !okNew {
				return
			}
			changed := map[routingv1alpha1.ListenerConflict]int{}
			for _, c := range old.Status.ListenerConflicts {
				changed[c]++
			}
			for _, c := range gw.Status.ListenerConflicts {
				changed[c]--
			}
			hosts := map[[2]string]bool{}
			for c, n := range changed {
				if n != 0 {
					hosts[[2]string{c.Namespace, c.Hostname}] = true
				}
			}
			if len(hosts) == 0 {
				return
			}
			routes, err := r.Lookups.routesByGateway.Get(client.ObjectKeyFromObject(gw).String())
			if err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "listing the routes of a Gateway whose listener conflicts changed")
				return
			}
			for _, route := range routes {
				if hosts[[2]string{route.Namespace, route.Status.Hostname}] {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(route)})
				}
			}
		},
	}
}
