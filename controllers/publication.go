package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
	"github.com/service-router/service-router-operator/internal/verify"
)

// routePublication sets a route's zones, PUBLISHED column and Published condition from the
// DNSEndpoints it now publishes (applied), the cached copies (what ExternalDNS has processed) and
// the prober's results. It writes nothing: the status goes out with the reconcile's one write.
func (r *ServiceRouteReconciler) routePublication(ctx context.Context, route *routingv1alpha1.ServiceRoute, cfg *clusterv1alpha1.DNSConfiguration,
	applied []*externaldnsv1alpha1.DNSEndpoint) error {
	cached, err := r.Lookups.endpointsByRoute.get(routeKey(route.Namespace, route.Name))
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

// gatewayPublication sets a Gateway's zones, PUBLISHED column and Published condition from the
// address DNSEndpoints of its entry point (written by the IngressDNS controller) and the
// prober's results for its target hostname.
func (r *GatewayReconciler) gatewayPublication(ctx context.Context, gw *routingv1alpha1.Gateway, target string) error {
	cfg, err := getConfiguration(ctx, r)
	if err != nil {
		return err
	}
	var zones []plan.ZoneInput
	if target != "" && r.APIs.Served(dnsEndpointKind) {
		list := &externaldnsv1alpha1.DNSEndpointList{}
		if err := r.List(ctx, list, client.MatchingFields{indexEndpointIngress: ingressKey(ingressOf(gw))}); err != nil {
			return fmt.Errorf("listing address DNSEndpoints: %w", err)
		}
		byController := map[string]*externaldnsv1alpha1.DNSEndpoint{}
		for i := range list.Items {
			ep := &list.Items[i]
			if addressName(ep) == target {
				byController[ep.Labels[naming.LabelController]] = ep
			}
		}
		for _, c := range plan.ControllersOf(cfg) { // DNSConfiguration order
			ep := byController[c.Name]
			if ep == nil {
				continue
			}
			z := plan.ZoneInput{Controller: c.Name, Region: c.Region, Verified: plan.Verified(cfg, c.Name), Desired: ep, Current: ep}
			if r.Zones != nil {
				if o, ok := r.Zones.Target(ep.Namespace + "/" + ep.Name); ok {
					z.Observation = &o
				}
			}
			zones = append(zones, z)
		}
	}
	p := plan.Publish(zones, gw.Status.Zones, gw.Generation, "no address record is published for the gateway's target hostname; the Ready condition says why")
	gw.Status.Zones, gw.Status.Published = p.Zones, p.Published
	meta.SetStatusCondition(&gw.Status.Conditions, p.Condition)
	return nil
}

// gatewaysOfAddressRecords maps a gateway address DNSEndpoint (created, changed — ExternalDNS
// processing it included — or deleted) to the Gateways of its entry point, whose zones it feeds.
func (r *GatewayReconciler) gatewaysOfAddressRecords(ctx context.Context, o client.Object) []reconcile.Request {
	pair, ok := desired.IngressOfLabels(o.GetLabels())
	if !ok {
		return nil
	}
	return requestsFor(ctx, r, &routingv1alpha1.GatewayList{}, client.MatchingFields{indexGatewayIngress: ingressKey(pair)})
}

// recordPublishedTransition emits an Event when the Published condition of obj changed reason
// against original: Normal when every zone answers, Warning when a zone drifted or does not
// answer. Pending zones, expected for a moment after every change, emit nothing.
func recordPublishedTransition(rec events.EventRecorder, obj, original client.Object) {
	now := meta.FindStatusCondition(*statusFieldsOf(obj).conditions, routingv1alpha1.ConditionPublished)
	if now == nil {
		return
	}
	if before := meta.FindStatusCondition(*statusFieldsOf(original).conditions, routingv1alpha1.ConditionPublished); before != nil && before.Reason == now.Reason {
		return
	}
	switch {
	case now.Status == metav1.ConditionTrue:
		rec.Eventf(obj, nil, "Normal", now.Reason, "Verify", "%s", now.Message)
	case now.Reason == routingv1alpha1.ReasonZonesDrifted || now.Reason == routingv1alpha1.ReasonZonesUnreachable:
		rec.Eventf(obj, nil, "Warning", now.Reason, "Verify", "%s", now.Message)
	}
}
