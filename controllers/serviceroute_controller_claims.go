package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
)

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
		claiming, err := r.Lookups.routesByHostname.Get(key)
		if err != nil {
			return nil, fmt.Errorf("listing ServiceRoutes claiming %s: %w", label, err)
		}
		out = append(out, claiming...)
	}
	return out, nil
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
