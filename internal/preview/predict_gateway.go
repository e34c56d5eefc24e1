package preview

import (
	"maps"
	"slices"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
	"github.com/service-router/service-router-operator/internal/plan"
)

// predictGateway is the Gateway reconcile (GatewayReconciler.gather, plan.Gateway, syncBackends):
// its hosts (plan.GatewayHosts over its routes' statuses), its load balancer (the ingress Service,
// or with backend GatewayAPI its owned ListenerSets and Gateway API Gateway through
// plan.WithGatewayAPI), plan.Gateway, then the backend in use written first and the other one's
// objects removed through apply.Diff, unless the first write met a foreign object. hosts is nil
// when the Gateway has no Istio Gateway afterwards; deletes are the deletions asked for.
func predictGateway(w *World, gw *routingv1alpha1.Gateway, gateways []*routingv1alpha1.Gateway, routes []*routingv1alpha1.ServiceRoute,
	budget int, api *gatewayAPIObjects, out *Prediction) (hosts []string, deletes []string) {
	admitted := plan.GatewayHosts(gw, routes, budget)
	in := plan.GatewayInputs{Gateway: gw, Identity: w.Identity, Hosts: admitted.Hosts, HostLimit: admitted.Limit, RouteHosts: admitted.RouteHosts,
		IstioAPIMissing: w.IstioAPIMissing, GatewayAPIMissing: w.GatewayAPIMissing}
	decider, found := plan.IngressDecider(pairOf(gateways, ingressOf(gw)))
	if !found {
		decider = gw
	}
	in.IngressDecider = decider
	if plan.UsesGatewayAPI(gw) {
		if !w.GatewayAPIMissing {
			in = plan.WithGatewayAPI(in, inNamespace(slices.Collect(maps.Values(api.sets)), gw.Namespace), api.current(gw))
		}
	} else if svc := ingressService(w, plan.IngressNamespace(decider), gw.Spec.Controller); svc != nil {
		addrs := ingress.ServiceAddresses(svc)
		in.Service, in.ServiceName = &addrs, key(svc)
	}
	p := plan.Gateway(in)

	var current []*istionetworkingv1.Gateway
	for _, ig := range w.IstioGateways {
		if ig.Namespace == gw.Namespace && ig.Name == gw.Name {
			current = append(current, ig)
		}
	}
	if len(current) > 0 {
		hosts = istioHosts(current[0]) // left as it is unless the Istio step runs
	}
	istio := backendStep{sync: p.SyncIstio, run: func() plan.Written {
		var want []*istionetworkingv1.Gateway
		if len(p.Hosts) > 0 && !plan.UsesGatewayAPI(gw) {
			want = append(want, desired.IstioGateway(gw, p.Hosts))
		}
		ch := apply.Diff(desired.IstioGatewayKind(gw.Name), want, current)
		for _, obj := range ch.Delete {
			deletes = append(deletes, "Istio Gateway "+key(obj))
		}
		if len(want) == 0 {
			hosts = nil
		} else if len(ch.Conflicts) == 0 {
			hosts = slices.Clone(p.Hosts)
		}
		return plan.Written{Kind: "Istio Gateway", Owner: "Gateway", Conflicts: conflictKeys(ch.Conflicts)}
	}}
	gatewayAPI := backendStep{sync: p.SyncGatewayAPI, run: func() plan.Written {
		return api.sync(gw, p.GatewayAPI, &deletes)
	}}
	order := []backendStep{istio, gatewayAPI}
	if plan.UsesGatewayAPI(gw) {
		order = []backendStep{gatewayAPI, istio}
	}
	for _, step := range order {
		if !step.sync {
			continue
		}
		written := step.run()
		p.Outcome = plan.AfterWrite(p.Outcome, written)
		if len(written.Conflicts) > 0 {
			break // the other backend's objects stay until this one's are all in place
		}
	}
	out.Gateways[key(gw)] = p
	return hosts, deletes
}

// backendStep is the write step of one backend (GatewayReconciler.syncBackends).
type backendStep struct {
	sync bool
	run  func() plan.Written
}

// gatewayAPIObjects are the managed Gateway API objects as the prediction changes them, by
// namespace/name.
type gatewayAPIObjects struct {
	gateways map[string]*gwv1.Gateway
	sets     map[string]*gwv1.ListenerSet
	routes   map[string]*gwv1.HTTPRoute
	grants   map[string]*gwv1.ReferenceGrant
}

func newGatewayAPIObjects(w *World) *gatewayAPIObjects {
	return &gatewayAPIObjects{gateways: byKeyOf(w.GatewayAPIGateways), sets: byKeyOf(w.ListenerSets), routes: byKeyOf(w.HTTPRoutes), grants: byKeyOf(w.ReferenceGrants)}
}

func byKeyOf[T client.Object](objs []T) map[string]T {
	out := make(map[string]T, len(objs))
	for _, o := range objs {
		out[key(o)] = o
	}
	return out
}

// current is the managed Gateway API Gateway of gw's name, if any (cachedGatewayAPIGateway).
func (a *gatewayAPIObjects) current(gw *routingv1alpha1.Gateway) []*gwv1.Gateway {
	if g, ok := a.gateways[gw.Namespace+"/"+gw.Name]; ok {
		return []*gwv1.Gateway{g}
	}
	return nil
}

// sync is GatewayReconciler.syncGatewayAPI: the Gateway API Gateway first (no ListenerSet without
// its parent), then the ListenerSets, the redirect HTTPRoute and the ReferenceGrant, each through
// apply.Diff against the managed objects the controller reads; want nil removes them all.
func (a *gatewayAPIObjects) sync(gw *routingv1alpha1.Gateway, want *desired.GatewayAPIObjects, deletes *[]string) plan.Written {
	if want == nil {
		want = &desired.GatewayAPIObjects{}
	}
	total := plan.Written{Kind: "Gateway API object", Owner: "Gateway"}
	add := func(kind string, conflicts []apply.Conflict) {
		if len(conflicts) > 0 && len(total.Conflicts) == 0 {
			total.Kind = kind // the message names the kind of the first conflict
		}
		total.Conflicts = append(total.Conflicts, conflictKeys(conflicts)...)
	}
	var gateways []*gwv1.Gateway
	if want.Gateway != nil {
		gateways = append(gateways, want.Gateway)
	}
	ch := apply.Diff(desired.GatewayAPIGatewayKind(gw.Name), gateways, a.current(gw))
	writeChanges("Gateway API Gateway", ch, a.gateways, deletes)
	add("Gateway API Gateway", ch.Conflicts)
	if len(ch.Conflicts) > 0 {
		return total
	}
	sets := apply.Diff(desired.ListenerSetKind(gw.Name), want.ListenerSets, inNamespace(slices.Collect(maps.Values(a.sets)), gw.Namespace))
	writeChanges("ListenerSet", sets, a.sets, deletes)
	add("ListenerSet", sets.Conflicts)
	routes := apply.Diff(desired.HTTPRouteKind(gw.Name), want.HTTPRoutes, inNamespace(slices.Collect(maps.Values(a.routes)), gw.Namespace))
	writeChanges("HTTPRoute", routes, a.routes, deletes)
	add("HTTPRoute", routes.Conflicts)
	grants := apply.Diff(desired.ReferenceGrantKind(gw.Namespace, gw.Name), want.ReferenceGrants, a.grantsOf(gw.Namespace, gw.Name))
	writeChanges("ReferenceGrant", grants, a.grants, deletes)
	add("ReferenceGrant", grants.Conflicts)
	return total
}

// grantsOf are the ReferenceGrants labelled for the Gateway namespace/name, in every namespace.
func (a *gatewayAPIObjects) grantsOf(namespace, name string) []*gwv1.ReferenceGrant {
	var out []*gwv1.ReferenceGrant
	for _, g := range a.grants {
		if g.Labels[desired.LabelGateway] == desired.GatewayLabelValue(namespace, name) {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(x, y *gwv1.ReferenceGrant) int { return compareKeys(key(x), key(y)) })
	return out
}

// collect removes the objects the garbage collector (or the namespace controller) removes: those
// controlled by a Gateway that no longer exists, and those in a deleted namespace.
func (a *gatewayAPIObjects) collect(w *World, gateways []*routingv1alpha1.Gateway) []string {
	var gone []string
	gone = append(gone, collectGone(w, "Gateway API Gateway", a.gateways, gateways)...)
	gone = append(gone, collectGone(w, "ListenerSet", a.sets, gateways)...)
	gone = append(gone, collectGone(w, "HTTPRoute", a.routes, gateways)...)
	for k, g := range a.grants {
		if namespaceGone(w, g) {
			delete(a.grants, k)
			gone = append(gone, "ReferenceGrant "+k)
		}
	}
	return gone
}

func collectGone[T client.Object](w *World, kind string, objs map[string]T, gateways []*routingv1alpha1.Gateway) []string {
	var gone []string
	for k, o := range objs {
		if ownerGone(o, "Gateway", gateways) || namespaceGone(w, o) {
			delete(objs, k)
			gone = append(gone, kind+" "+k)
		}
	}
	return gone
}

// forget is GatewayReconciler.forgetGatewayAPI for the Gateways that no longer exist: their
// ReferenceGrants, in other namespaces, are the operator's to remove (no owner reference can
// reach them).
func (a *gatewayAPIObjects) forget(w *World, gateways []*routingv1alpha1.Gateway) []string {
	if w.ReferenceGrantAPIMissing {
		return nil
	}
	exists := map[string]bool{}
	for _, gw := range gateways {
		exists[desired.GatewayLabelValue(gw.Namespace, gw.Name)] = true
	}
	var deletes []string
	for _, g := range slices.SortedFunc(maps.Values(a.grants), func(x, y *gwv1.ReferenceGrant) int { return compareKeys(key(x), key(y)) }) {
		v := g.Labels[desired.LabelGateway]
		if v == "" || exists[v] || !desired.IsManaged(g) {
			continue
		}
		delete(a.grants, key(g))
		deletes = append(deletes, "ReferenceGrant "+key(g))
	}
	return deletes
}

// into puts the objects as the prediction leaves them into out, sorted.
func (a *gatewayAPIObjects) into(out *Prediction) {
	out.GatewayAPIGateways = sortedValues(a.gateways)
	out.ListenerSets = sortedValues(a.sets)
	out.HTTPRoutes = sortedValues(a.routes)
	out.ReferenceGrants = sortedValues(a.grants)
}

func sortedValues[T client.Object](m map[string]T) []T {
	return slices.SortedFunc(maps.Values(m), func(x, y T) int { return compareKeys(key(x), key(y)) })
}
