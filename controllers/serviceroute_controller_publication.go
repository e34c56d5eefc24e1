package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
	"github.com/service-router/service-router-operator/internal/verify"
)

// routePublication sets a route's zones, PUBLISHED column and Published condition from the
// DNSEndpoints it now publishes (applied), the cached copies (what ExternalDNS has processed) and
// the prober's results. It writes nothing: the status goes out with the reconcile's one write.
func (r *ServiceRouteReconciler) routePublication(ctx context.Context, route *routingv1alpha1.ServiceRoute, cfg *clusterv1alpha1.DNSConfiguration,
	applied []*externaldnsv1alpha1.DNSEndpoint) error {
	cached, err := r.Lookups.endpointsByRoute.Get(routeKey(route.Namespace, route.Name))
	if err != nil {
		return fmt.Errorf("listing DNSEndpoints of the route: %w", err)
	}
	current := make(map[string]*externaldnsv1alpha1.DNSEndpoint, len(cached))
	for _, ep := range cached {
		current[ep.Name] = ep
	}
	zones := make([]plan.ZoneInput, 0, len(applied))
	for _, ep := range applied {
		controller := ep.Labels[naming.LabelController]
		z := plan.ZoneInput{Controller: controller, Region: ep.Labels[naming.LabelRegion], Verified: plan.Verified(cfg, controller),
			Desired: ep, Current: current[ep.Name]}
		if r.Zones != nil {
			if o, ok := r.Zones.Route(verify.RouteKey{Namespace: route.Namespace, Name: route.Name, Controller: controller}); ok {
				z.Observation = &o
			}
		}
		zones = append(zones, z)
	}
	p := plan.Publish(zones, route.Status.Zones, route.Generation, "the route publishes no DNS record; the Ready condition says why")
	route.Status.Zones, route.Status.Published = p.Zones, p.Published
	meta.SetStatusCondition(&route.Status.Conditions, p.Condition)
	return nil
}
