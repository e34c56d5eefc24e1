package core

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
)

// AddressSourceReads is what an entry point's address is read from.
type AddressSourceReads interface {
	// IngressService is the ingress LoadBalancer Service of controller in namespace (see
	// ingress.SelectService); nil when there is none. Services of other namespaces are never read.
	IngressService(ctx context.Context, namespace, controller string) (*corev1.Service, error)
	// GatewayAPIServed says the Gateway API's Gateway kind is served.
	GatewayAPIServed() bool
	// GatewayAPIGateway is the managed Gateway API Gateway of that name: none, or one.
	GatewayAPIGateway(ctx context.Context, key types.NamespacedName) ([]*gwv1.Gateway, error)
}

// AddressReads is what an entry point's reconcile reads (see RouteReads for the rules).
type AddressReads interface {
	AddressSourceReads
	Singletons(ctx context.Context) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error)
	EndpointsServed() bool
	// GatewaysOfEntryPoint are the Gateways of the (controller, targetPostfix) pair, but those
	// being deleted.
	GatewaysOfEntryPoint(ctx context.Context, pair desired.Ingress) ([]*routingv1alpha1.Gateway, error)
	// AddressEndpoints are the pair's address DNSEndpoints, in every namespace.
	AddressEndpoints(ctx context.Context, pair desired.Ingress) ([]*externaldnsv1alpha1.DNSEndpoint, error)
}

// AddressResult is what an entry point's reconcile did.
type AddressResult struct {
	// Synced says the records follow the decision (false: left alone, Written is empty).
	Synced bool
	// Written is what the write found.
	Written decide.Written
	// Oldest is the pair's oldest Gateway, which hears of its conflicts; nil when none is left.
	Oldest *routingv1alpha1.Gateway
}

// Addresses is an entry point's reconcile: the address records of the gateway target hostname
// {cluster}-{region}-{targetPostfix}.{domain} of a (controller, targetPostfix) pair, one
// DNSEndpoint per ExternalDNS controller, in the ingress namespace, with the addresses of the
// pair's load balancer (EntryPointAddress) — decide.Ingress decides, endpoints writes. With no
// Gateway left the records go; with no address yet they are kept.
func Addresses(ctx context.Context, rd AddressReads, endpoints Apply[*externaldnsv1alpha1.DNSEndpoint], pair desired.Ingress) (AddressResult, error) {
	if !rd.EndpointsServed() {
		return AddressResult{}, nil // reconciled again when the API appears
	}
	in := decide.IngressInputs{Ingress: pair}
	var err error
	if in.Gateways, err = rd.GatewaysOfEntryPoint(ctx, pair); err != nil {
		return AddressResult{}, err
	}
	// The oldest Gateway decides the address source and hears of the pair's conflicts.
	decider, found := decide.IngressDecider(in.Gateways)
	res := AddressResult{}
	if found {
		res.Oldest = decider
	}
	if in.Identity, in.Configuration, err = rd.Singletons(ctx); err != nil {
		return res, err
	}
	if found {
		if in.Service, _, err = EntryPointAddress(ctx, rd, decider); err != nil {
			return res, err
		}
	}
	p := decide.Ingress(in)
	if !p.Sync {
		return res, nil
	}
	current, err := rd.AddressEndpoints(ctx, pair)
	if err != nil {
		return res, fmt.Errorf("listing address DNSEndpoints: %w", err)
	}
	n := Notice[*externaldnsv1alpha1.DNSEndpoint]{Reason: routingv1alpha1.ReasonGatewayCreated, Describe: DescribeRecords}
	if res.Oldest != nil {
		n.Target = res.Oldest // with no Gateway left there is nobody to tell
	}
	w, err := endpoints(ctx, desired.AddressEndpointKind(pair), p.Endpoints, current, n)
	res.Synced, res.Written = true, w.Result("DNSEndpoint", "")
	return res, err
}

// EntryPointAddress is where the addresses of an entry point come from; the pair's oldest Gateway
// (decide.IngressDecider) decides for all of them, and nothing a later Gateway says changes it.
// With backend GatewayAPI: its Gateway API Gateway's status.addresses; otherwise
// entryPointService. nil when there is none yet: the records are kept.
func EntryPointAddress(ctx context.Context, rd AddressSourceReads, decider *routingv1alpha1.Gateway) (addrs *decide.IngressService, serviceName string, err error) {
	if decide.UsesGatewayAPI(decider) {
		if !rd.GatewayAPIServed() {
			return nil, "", nil
		}
		current, err := rd.GatewayAPIGateway(ctx, types.NamespacedName{Namespace: decider.Namespace, Name: decider.Name})
		if err != nil {
			return nil, "", err
		}
		if a := decide.GatewayAPIAddresses(decider, current); a != nil {
			return &decide.IngressService{Namespace: decide.IngressNamespace(decider), Addresses: *a}, "", nil
		}
		return nil, "", nil
	}
	return entryPointService(ctx, rd, decider)
}

// entryPointService is the classic backend's address source: the ingress LoadBalancer Service of
// the decider's ingress namespace (serviceName: its namespace/name); nil when there is none.
func entryPointService(ctx context.Context, rd AddressSourceReads, decider *routingv1alpha1.Gateway) (addrs *decide.IngressService, serviceName string, err error) {
	svc, err := rd.IngressService(ctx, decide.IngressNamespace(decider), decider.Spec.Controller)
	if err != nil || svc == nil {
		return nil, "", err
	}
	return &decide.IngressService{Namespace: svc.Namespace, Addresses: ingress.ServiceAddresses(svc)}, svc.Namespace + "/" + svc.Name, nil
}
