package controllers

import (
	"context"
	"fmt"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/verify"
)

// cacheReads is what the reconcile cores (internal/core) read, from the informer cache: shallow
// copies of the cache's objects (base.Cached) and its indexes read in place, never changed.
type cacheReads struct {
	base
	apis  *OptionalAPIs
	zones zoneResults // nil: no verification
	// servers says who serves a zone's answer under regional failover (nil: nobody says).
	servers answerServers
}

// zoneResults is what the reconcilers read of the verification (verify.Tracker): the last
// result per zone.
type zoneResults interface {
	Route(verify.RouteKey) (verify.Observation, bool)
	Target(source string) (verify.Observation, bool)
}

// answerServers attributes a zone's answer to the cluster serving it (failoverloop.Loop.Attribute)
// and says how failover names are published there (failoverloop.Loop.Forms).
type answerServers interface {
	Attribute(controller, answer string) string
	Forms() decide.Forms
}

var _ core.RouteReads = cacheReads{}

func (c cacheReads) Singletons(ctx context.Context) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error) {
	return getSingletons(ctx, c.Cached)
}

// Configuration is the DNSConfiguration, for the verification loop (internal/verifyloop).
func (c cacheReads) Configuration(ctx context.Context) (*clusterv1alpha1.DNSConfiguration, error) {
	return getConfiguration(ctx, c.Cached)
}

func (c cacheReads) EndpointsServed() bool { return c.apis.Served(dnsEndpointKind) }

func (c cacheReads) PolicyInForce(ctx context.Context, namespace string) (*routingv1alpha1.DNSPolicy, error) {
	return policyInForce(ctx, c.Cached, namespace)
}

func (c cacheReads) NamespaceMetadata(ctx context.Context, name string) (labels, annotations map[string]string, err error) {
	ns, err := getNamespace(ctx, c.Cached, name)
	if err != nil {
		return nil, nil, err
	}
	return ns.Labels, ns.Annotations, nil
}

func (c cacheReads) NamespacesListing(ctx context.Context, application string) ([]string, error) {
	return namespacesListing(ctx, c.Cached, application)
}

func (c cacheReads) GatewayNamed(ctx context.Context, key types.NamespacedName) (*routingv1alpha1.Gateway, error) {
	gw := &routingv1alpha1.Gateway{}
	switch err := c.Cached.Get(ctx, key, gw); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Gateway: %w", err)
	}
	return gw, nil
}

func (c cacheReads) Claimants(ctx context.Context, route *routingv1alpha1.ServiceRoute, ci *clusterv1alpha1.ClusterIdentity) ([]*routingv1alpha1.ServiceRoute, error) {
	return claimants(c.Lookups, route, ci)
}

func (c cacheReads) RouteEndpoints(_ context.Context, route *routingv1alpha1.ServiceRoute) ([]*externaldnsv1alpha1.DNSEndpoint, error) {
	return c.Lookups.endpointsByRoute.Get(routeKey(route.Namespace, route.Name))
}

func (c cacheReads) Forms() decide.Forms {
	if c.servers == nil {
		return nil
	}
	return c.servers.Forms()
}

func (c cacheReads) RouteZone(route *routingv1alpha1.ServiceRoute, controller string) *verify.Observation {
	if c.zones == nil {
		return nil
	}
	if o, ok := c.zones.Route(verify.RouteKey{Namespace: route.Namespace, Name: route.Name, Controller: controller}); ok {
		if c.servers != nil {
			if note := c.servers.Attribute(controller, o.Answer); note != "" {
				o.Answer += " (" + note + ")"
			}
		}
		return &o
	}
	return nil
}

// claimants lists the ServiceRoutes whose hostname equals route's, route included. They are the
// cache's own objects: read them, never change them.
func claimants(l *lookups, route *routingv1alpha1.ServiceRoute, ci *clusterv1alpha1.ClusterIdentity) ([]*routingv1alpha1.ServiceRoute, error) {
	label := naming.SourceLabel(route.Spec.ServiceName, ci.Spec.EnvironmentLetter, route.Spec.Environment, route.Spec.Application)
	var out []*routingv1alpha1.ServiceRoute
	for _, key := range naming.ClaimKeys(label, ci.Spec.EnvironmentLetter) {
		claiming, err := l.routesByHostname.Get(key)
		if err != nil {
			return nil, fmt.Errorf("listing ServiceRoutes claiming %s: %w", label, err)
		}
		out = append(out, claiming...)
	}
	return out, nil
}

var _ core.AddressReads = cacheReads{}

func (c cacheReads) IngressService(ctx context.Context, namespace, controller string) (*corev1.Service, error) {
	return ingressService(ctx, c.Client, namespace, controller)
}

func (c cacheReads) GatewayAPIServed() bool { return c.apis.gatewayAPIServed() }

func (c cacheReads) GatewayAPIGateway(ctx context.Context, key types.NamespacedName) ([]*gwv1.Gateway, error) {
	existing := &gwv1.Gateway{}
	switch err := c.Get(ctx, key, existing); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the Gateway API Gateway %s: %w", key, err)
	}
	return []*gwv1.Gateway{existing}, nil
}

func (c cacheReads) GatewaysOfEntryPoint(ctx context.Context, pair desired.Ingress) ([]*routingv1alpha1.Gateway, error) {
	gateways := &routingv1alpha1.GatewayList{}
	if err := c.List(ctx, gateways, client.MatchingFields{indexGatewayIngress: ingressKey(pair)}); err != nil {
		return nil, fmt.Errorf("listing Gateways of %s: %w", ingressKey(pair), err)
	}
	var out []*routingv1alpha1.Gateway
	for i := range gateways.Items {
		if gateways.Items[i].DeletionTimestamp.IsZero() {
			out = append(out, &gateways.Items[i])
		}
	}
	return out, nil
}

func (c cacheReads) AddressEndpoints(ctx context.Context, pair desired.Ingress) ([]*externaldnsv1alpha1.DNSEndpoint, error) {
	list := &externaldnsv1alpha1.DNSEndpointList{}
	if err := c.List(ctx, list, client.MatchingFields{indexEndpointIngress: ingressKey(pair)}); err != nil {
		return nil, err
	}
	return listItems(list.Items), nil
}

var _ core.GatewayReads = cacheReads{}

func (c cacheReads) IstioServed() bool { return c.apis.Served(istioGatewayKind) }

func (c cacheReads) RoutesOfGateway(_ context.Context, gw *routingv1alpha1.Gateway) ([]*routingv1alpha1.ServiceRoute, error) {
	return c.Lookups.routesByGateway.Get(client.ObjectKeyFromObject(gw).String())
}

func (c cacheReads) IstioGateway(ctx context.Context, key types.NamespacedName) ([]*istionetworkingv1.Gateway, error) {
	existing := &istionetworkingv1.Gateway{}
	switch err := c.Get(ctx, key, existing); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading Istio Gateway: %w", err)
	}
	return []*istionetworkingv1.Gateway{existing}, nil
}

func (c cacheReads) ListenerSets(ctx context.Context, namespace string) ([]*gwv1.ListenerSet, error) {
	sets := &gwv1.ListenerSetList{}
	if err := c.List(ctx, sets, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return listItems(sets.Items), nil
}

func (c cacheReads) HTTPRoutes(ctx context.Context, namespace string) ([]*gwv1.HTTPRoute, error) {
	routes := &gwv1.HTTPRouteList{}
	if err := c.List(ctx, routes, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return listItems(routes.Items), nil
}

func (c cacheReads) ReferenceGrants(ctx context.Context, namespace, name string) ([]*gwv1.ReferenceGrant, error) {
	grants := &gwv1.ReferenceGrantList{}
	if err := c.List(ctx, grants, client.MatchingLabels{desired.LabelGateway: desired.GatewayLabelValue(namespace, name)}); err != nil {
		return nil, err
	}
	return listItems(grants.Items), nil
}

func (c cacheReads) TargetZone(source string) *verify.Observation {
	if c.zones == nil {
		return nil
	}
	if o, ok := c.zones.Target(source); ok {
		return &o
	}
	return nil
}
