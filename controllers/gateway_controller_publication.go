package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
)

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

// addressName is the target hostname of a gateway address DNSEndpoint, "" for other objects.
func addressName(ep *externaldnsv1alpha1.DNSEndpoint) string {
	if _, ok := desired.IngressOfLabels(ep.Labels); !ok || len(ep.Spec.Endpoints) == 0 || ep.Spec.Endpoints[0] == nil {
		return ""
	}
	return ep.Spec.Endpoints[0].DNSName
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
