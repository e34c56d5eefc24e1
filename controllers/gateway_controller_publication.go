package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
)

// gatewaysOfAddressRecords maps a gateway address DNSEndpoint (created, changed — ExternalDNS
// processing it included — or deleted) to the Gateways of its entry point, whose zones it feeds.
func (r *GatewayReconciler) gatewaysOfAddressRecords(ctx context.Context, o client.Object) []reconcile.Request {
	pair, ok := desired.IngressOfLabels(o.GetLabels())
	if !ok {
		return nil
	}
	return requestsFor(ctx, r, &routingv1alpha1.GatewayList{}, client.MatchingFields{indexGatewayIngress: ingressKey(pair)})
}
