package controllers

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

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
		claimants, err := claimants(r.Lookups, route, ci)
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
