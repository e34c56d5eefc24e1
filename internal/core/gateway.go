package core

import (
	"context"
	"fmt"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/verify"
)

// GatewayReads is what a Gateway's reconcile reads (see RouteReads for the rules).
type GatewayReads interface {
	AddressReads
	// IstioServed says the Istio Gateway API is served.
	IstioServed() bool
	// RoutesOfGateway are the ServiceRoutes referencing gw (only their hostnames and times are
	// read: they may be the reader's own objects).
	RoutesOfGateway(ctx context.Context, gw *routingv1alpha1.Gateway) ([]*routingv1alpha1.ServiceRoute, error)
	// IstioGateway is the managed Istio Gateway of that name: none, or one.
	IstioGateway(ctx context.Context, key types.NamespacedName) ([]*istionetworkingv1.Gateway, error)
	// ListenerSets and HTTPRoutes are the managed ones of a namespace.
	ListenerSets(ctx context.Context, namespace string) ([]*gwv1.ListenerSet, error)
	HTTPRoutes(ctx context.Context, namespace string) ([]*gwv1.HTTPRoute, error)
	// ReferenceGrants are those labelled for the Gateway namespace/name, in every namespace.
	ReferenceGrants(ctx context.Context, namespace, name string) ([]*gwv1.ReferenceGrant, error)
	// TargetZone is the prober's last result for the address DNSEndpoint source
	// (namespace/name); nil when there is none.
	TargetZone(source string) *verify.Observation
}

// GatewayWriters write a Gateway's generated objects, one Apply per kind.
type GatewayWriters struct {
	Istio           Apply[*istionetworkingv1.Gateway]
	Gateways        Apply[*gwv1.Gateway]
	ListenerSets    Apply[*gwv1.ListenerSet]
	HTTPRoutes      Apply[*gwv1.HTTPRoute]
	ReferenceGrants Apply[*gwv1.ReferenceGrant]
}

// GatewayResult is what a Gateway's reconcile decided and did; its status is in the Gateway.
type GatewayResult struct {
	// Plan is decide.Gateway's decision, its outcome updated by what the writes found.
	Plan decide.GatewayPlan
	// Written is what each backend's write found, in the order they ran.
	Written []decide.Written
	// HostBytes is the size of the admitted hosts in one Istio Gateway (for the operator's
	// coalescing window: a larger object waits longer for more changes).
	HostBytes int
}

// Gateway is a Gateway's reconcile: gather → decide.Gateway → the backend in use written first,
// then the other one's objects removed, unless the first write met a foreign object → its whole
// status (decide.GatewayStatus), set into gw but for the outcome (the driver ends with
// decide.SetOutcome). Everything the status needs is read before any write.
func Gateway(ctx context.Context, rd GatewayReads, wr GatewayWriters, gw *routingv1alpha1.Gateway, budget int) (GatewayResult, error) {
	read, err := gatherGateway(ctx, rd, gw)
	if err != nil {
		return GatewayResult{}, err
	}
	in := read.inputs
	admitted := decide.GatewayHosts(gw, read.routes, budget)
	in.Hosts, in.HostLimit, in.RouteHosts = admitted.Hosts, admitted.Limit, admitted.RouteHosts
	res := GatewayResult{Plan: decide.Gateway(in), HostBytes: admitted.Bytes * max(decide.IstioHostLists(gw), 1)}
	if res.Plan.Outcome, res.Written, err = writeBackends(ctx, rd, wr, gw, res.Plan, read.istio); err != nil {
		return res, err
	}
	if !res.Plan.Keep {
		zones := decide.GatewayZones(read.configuration, res.Plan.Target, read.addresses, rd.TargetZone)
		gw.Status = decide.GatewayStatus(gw, res.Plan, in.HostLimit, read.analysed(), zones)
	}
	return res, nil
}

// gatewayRead is everything a Gateway's reconcile reads, before it decides anything: decide.Gateway's
// inputs but the admitted hosts, the routes they are admitted from, and what the status needs
// besides (the DNSConfiguration and the entry point's address DNSEndpoints, which the IngressDNS
// reconcile writes, not this one).
type gatewayRead struct {
	inputs        decide.GatewayInputs
	routes        []*routingv1alpha1.ServiceRoute
	configuration *clusterv1alpha1.DNSConfiguration
	addresses     []*externaldnsv1alpha1.DNSEndpoint
	// istio is the managed Istio Gateway of gw's name as read (none, or one; nothing read while
	// its API is not served), for the Istio write (syncIstio) and, with the Istio backend, for
	// istiod's analysis of it (the status).
	istio []*istionetworkingv1.Gateway
}

// analysed is the generated Istio Gateway whose istiod analysis the status shows: the one read,
// with the Istio backend only (nil: none).
func (r gatewayRead) analysed() *istionetworkingv1.Gateway {
	if len(r.istio) != 1 || decide.UsesGatewayAPI(r.inputs.Gateway) {
		return nil
	}
	return r.istio[0]
}

// gatherGateway reads a Gateway's inputs.
func gatherGateway(ctx context.Context, rd GatewayReads, gw *routingv1alpha1.Gateway) (gatewayRead, error) {
	read := gatewayRead{inputs: decide.GatewayInputs{Gateway: gw, IstioAPIMissing: !rd.IstioServed(), GatewayAPIMissing: !rd.GatewayAPIServed()}}
	in := &read.inputs
	var err error
	if in.Identity, read.configuration, err = rd.Singletons(ctx); err != nil {
		return read, err
	}
	if read.routes, err = rd.RoutesOfGateway(ctx, gw); err != nil {
		return read, fmt.Errorf("listing ServiceRoutes of the gateway: %w", err)
	}
	pair := desired.IngressOfGateway(gw)
	if rd.EndpointsServed() {
		if read.addresses, err = rd.AddressEndpoints(ctx, pair); err != nil {
			return read, fmt.Errorf("listing address DNSEndpoints: %w", err)
		}
	}
	// The oldest Gateway of the entry point decides where its address comes from.
	peers, err := rd.GatewaysOfEntryPoint(ctx, pair)
	if err != nil {
		return read, fmt.Errorf("listing the Gateways sharing the target hostname: %w", err)
	}
	decider, found := decide.IngressDecider(peers)
	if !found {
		decider = gw // not read yet: it is the only one the reconcile knows of
	}
	in.IngressDecider = decider
	if !in.IstioAPIMissing {
		if read.istio, err = rd.IstioGateway(ctx, keyOf(gw)); err != nil {
			return read, err
		}
	}
	if !decide.UsesGatewayAPI(gw) {
		addrs, serviceName, err := entryPointService(ctx, rd, decider)
		if addrs != nil {
			in.Service, in.ServiceName = &addrs.Addresses, serviceName
		}
		return read, err
	}
	if in.GatewayAPIMissing {
		return read, nil
	}
	// Backend GatewayAPI: the ListenerSets it owns (hostnames stay where they are) and the
	// address of its own Gateway API Gateway.
	sets, err := rd.ListenerSets(ctx, gw.Namespace)
	if err != nil {
		return read, fmt.Errorf("listing ListenerSets: %w", err)
	}
	current, err := rd.GatewayAPIGateway(ctx, keyOf(gw))
	if err != nil {
		return read, err
	}
	read.inputs = decide.WithGatewayAPI(*in, sets, current)
	return read, nil
}

// writeBackends writes the objects of the backend in use, then removes the other's, unless the
// first write met a foreign object: a switch never leaves the hosts unserved. istioCurrent is the
// Istio Gateway gatherGateway read.
func writeBackends(ctx context.Context, rd GatewayReads, wr GatewayWriters, gw *routingv1alpha1.Gateway, p decide.GatewayPlan,
	istioCurrent []*istionetworkingv1.Gateway) (decide.Outcome, []decide.Written, error) {
	type backend struct {
		sync  bool
		write func() (decide.Written, error)
	}
	istio := backend{p.SyncIstio, func() (decide.Written, error) { return syncIstio(ctx, wr.Istio, gw, p, istioCurrent) }}
	api := backend{p.SyncGatewayAPI, func() (decide.Written, error) { return syncGatewayAPI(ctx, rd, wr, gw, p.GatewayAPI) }}
	order := []backend{istio, api}
	if decide.UsesGatewayAPI(gw) {
		order = []backend{api, istio}
	}
	outcome := p.Outcome
	var written []decide.Written
	for _, b := range order {
		if !b.sync {
			continue
		}
		w, err := b.write()
		written = append(written, w)
		if err != nil {
			return outcome, written, err
		}
		outcome = decide.AfterWrite(outcome, w)
		if len(w.Conflicts) > 0 {
			break // the other backend's objects stay until this one's are all in place
		}
	}
	return outcome, written, nil
}

// syncIstio makes the generated Istio Gateway, current as read, match the plan (none when it has
// no hosts or the backend is the Gateway API).
func syncIstio(ctx context.Context, istio Apply[*istionetworkingv1.Gateway], gw *routingv1alpha1.Gateway, p decide.GatewayPlan,
	current []*istionetworkingv1.Gateway) (decide.Written, error) {
	var want []*istionetworkingv1.Gateway
	if len(p.Hosts) > 0 && !decide.UsesGatewayAPI(gw) {
		want = append(want, desired.IstioGateway(gw, p.Hosts))
	}
	w, err := istio(ctx, desired.IstioGatewayKind(gw.Name), want, current,
		Notice[*istionetworkingv1.Gateway]{Target: gw, Reason: p.Reason, Describe: describeHosts})
	return w.Result("Istio Gateway", "Gateway"), err
}

// syncGatewayAPI makes the Gateway API objects of a Gateway match want (all removed when nil):
// the Gateway API Gateway first, so that the ListenerSets and the redirect route have a parent,
// then the ListenerSets, the redirect HTTPRoute and the ReferenceGrant. The result names the kind
// of the first conflict, and the earliest deletion held.
func syncGatewayAPI(ctx context.Context, rd GatewayReads, wr GatewayWriters, gw *routingv1alpha1.Gateway, want *desired.GatewayAPIObjects) (decide.Written, error) {
	if want == nil {
		want = &desired.GatewayAPIObjects{}
	}
	total := decide.Written{Kind: "Gateway API object", Owner: "Gateway"}
	add := func(w decide.Written) {
		if len(w.Conflicts) > 0 && len(total.Conflicts) == 0 {
			total.Kind = w.Kind
		}
		total.Conflicts = append(total.Conflicts, w.Conflicts...)
		if total.HeldUntil.IsZero() || (!w.HeldUntil.IsZero() && w.HeldUntil.Before(total.HeldUntil)) {
			total.HeldUntil = w.HeldUntil
		}
	}
	var gateways []*gwv1.Gateway
	if want.Gateway != nil {
		gateways = append(gateways, want.Gateway)
	}
	current, err := rd.GatewayAPIGateway(ctx, keyOf(gw))
	if err != nil {
		return total, err
	}
	wg, err := wr.Gateways(ctx, desired.GatewayAPIGatewayKind(gw.Name), gateways, current, createdFor(gw, describeListeners[*gwv1.Gateway]))
	add(wg.Result("Gateway API Gateway", "Gateway"))
	if err != nil || len(wg.Conflicts) > 0 {
		return total, err // no ListenerSet without its parent
	}
	sets, err := rd.ListenerSets(ctx, gw.Namespace)
	if err != nil {
		return total, fmt.Errorf("listing ListenerSets: %w", err)
	}
	ws, err := wr.ListenerSets(ctx, desired.ListenerSetKind(gw.Name), want.ListenerSets, sets, createdFor(gw, describeListeners[*gwv1.ListenerSet]))
	add(ws.Result("ListenerSet", "Gateway"))
	if err != nil {
		return total, err
	}
	routes, err := rd.HTTPRoutes(ctx, gw.Namespace)
	if err != nil {
		return total, fmt.Errorf("listing HTTPRoutes: %w", err)
	}
	wh, err := wr.HTTPRoutes(ctx, desired.HTTPRouteKind(gw.Name), want.HTTPRoutes, routes, createdFor(gw, func(*gwv1.HTTPRoute) string { return "redirect to HTTPS" }))
	add(wh.Result("HTTPRoute", "Gateway"))
	if err != nil {
		return total, err
	}
	grants, err := syncReferenceGrants(ctx, rd, wr.ReferenceGrants, gw.Namespace, gw.Name, want.ReferenceGrants, gw)
	add(grants)
	return total, err
}

// ForgetGateway removes what a deleted Gateway left that the garbage collector cannot see: the
// ReferenceGrants it had in other namespaces (everything in its own namespace is owned and
// collected).
func ForgetGateway(ctx context.Context, rd GatewayReads, grants Apply[*gwv1.ReferenceGrant], namespace, name string) error {
	_, err := syncReferenceGrants(ctx, rd, grants, namespace, name, nil, nil)
	return err
}

// syncReferenceGrants makes the ReferenceGrants written for the Gateway namespace/name match want.
// They live in the Secret's namespace, where no owner reference can point to the Gateway: they
// are found by their label. Events go to eventTarget (none when nil: the Gateway is gone).
func syncReferenceGrants(ctx context.Context, rd GatewayReads, grants Apply[*gwv1.ReferenceGrant], namespace, name string,
	want []*gwv1.ReferenceGrant, eventTarget *routingv1alpha1.Gateway) (decide.Written, error) {
	current, err := rd.ReferenceGrants(ctx, namespace, name)
	if err != nil {
		return decide.Written{}, fmt.Errorf("listing ReferenceGrants: %w", err)
	}
	n := Notice[*gwv1.ReferenceGrant]{Reason: routingv1alpha1.ReasonGatewayCreated, Describe: func(*gwv1.ReferenceGrant) string { return "TLS Secret for " + namespace }}
	if eventTarget != nil {
		n.Target = eventTarget
	}
	w, err := grants(ctx, desired.ReferenceGrantKind(namespace, name), want, current, n)
	return w.Result("ReferenceGrant", "Gateway"), err
}

func createdFor[T client.Object](gw *routingv1alpha1.Gateway, describe func(T) string) Notice[T] {
	return Notice[T]{Target: gw, Reason: routingv1alpha1.ReasonGatewayCreated, Describe: describe}
}

func keyOf(gw *routingv1alpha1.Gateway) types.NamespacedName {
	return types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
}

// describeHosts summarises an Istio Gateway for events: "3 host(s)".
func describeHosts(g *istionetworkingv1.Gateway) string {
	n := 0
	for _, s := range g.Spec.Servers {
		n += len(s.Hosts)
	}
	return fmt.Sprintf("%d host(s)", n)
}

// describeListeners summarises a Gateway or ListenerSet for events: "3 listener(s)".
func describeListeners[T client.Object](o T) string {
	return fmt.Sprintf("%d listener(s)", desired.ListenerCount(o))
}
