package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
)

// hostLimitChanges is the ServiceRoute controller's watch on the cutoff of Gateways: when a
// Gateway's status.hostLimit moves, the routes on either side of the move are reconciled (the
// ones now left off withdraw their records, the ones admitted again publish).
func (r *ServiceRouteReconciler) hostLimitChanges() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, okOld := e.ObjectOld.(*routingv1alpha1.Gateway)
			gw, okNew := e.ObjectNew.(*routingv1alpha1.Gateway)
			if !okOld || !okNew || equality.Semantic.DeepEqual(old.Status.HostLimit, gw.Status.HostLimit) {
				return
			}
			routes, err := r.Lookups.routesByGateway.Get(client.ObjectKeyFromObject(gw).String())
			if err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "listing the routes of a Gateway whose host limit moved")
				return
			}
			for _, route := range routes {
				if decide.LeftOff(old.Status.HostLimit, route) != decide.LeftOff(gw.Status.HostLimit, route) {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(route)})
				}
			}
		},
	}
}
