// Package preview is what `kubectl router plan` and `kubectl router status` compute: the objects
// the operator reads, taken as one snapshot (World), overlaid with manifests that are not applied
// yet, and run through the operator's own decisions (internal/plan, internal/apply,
// internal/guard) to the state the operator converges to (Predict). Compare turns the prediction
// into what changes per zone. Nothing here writes to a cluster; only Load reads one.
package preview

import (
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// World is everything the operator's reconcilers read, as one snapshot: what the operator's
// informer cache holds (the singletons, every DNSPolicy, ServiceRoute and Gateway, the Namespaces'
// labels and annotations, the Services labelled istio, and the DNSEndpoints and Istio Gateways
// carrying the managed-by label), and which optional APIs are served.
type World struct {
	Identity      *clusterv1alpha1.ClusterIdentity  // nil when missing
	Configuration *clusterv1alpha1.DNSConfiguration // nil when missing
	Policies      []*routingv1alpha1.DNSPolicy
	Routes        []*routingv1alpha1.ServiceRoute
	Gateways      []*routingv1alpha1.Gateway
	// Namespaces are the labels and annotations of every namespace, by name.
	Namespaces map[string]Namespace
	// Services are the Services carrying an istio label (the ingress load balancers).
	Services []*corev1.Service
	// Endpoints are the DNSEndpoints the operator manages (managed-by label).
	Endpoints []*externaldnsv1alpha1.DNSEndpoint
	// IstioGateways are the Istio Gateways the operator manages (managed-by label).
	IstioGateways []*istionetworkingv1.Gateway
	// EndpointsAPIMissing and IstioAPIMissing say the DNSEndpoint or Istio Gateway API is not
	// served.
	EndpointsAPIMissing, IstioAPIMissing bool
	// The Gateway API objects the operator manages (managed-by label; backend GatewayAPI): Gateway
	// API Gateways, ListenerSets and the redirect HTTPRoutes beside their Gateway, and the
	// ReferenceGrants in the TLS Secrets' namespaces.
	GatewayAPIGateways []*gwv1.Gateway
	ListenerSets       []*gwv1.ListenerSet
	HTTPRoutes         []*gwv1.HTTPRoute
	ReferenceGrants    []*gwv1.ReferenceGrant
	// GatewayAPIMissing says one of those four Gateway API kinds is not served (the operator then
	// generates none and keeps what exists); ReferenceGrantAPIMissing says the ReferenceGrant kind
	// is not (the operator then cannot remove a deleted Gateway's grants).
	GatewayAPIMissing, ReferenceGrantAPIMissing bool
}

// Namespace is what the operator reads of a namespace: its labels (Gateways' allowedRoutes) and
// annotations (the applications it owns).
type Namespace struct {
	Labels, Annotations map[string]string
}

// DeepCopy returns a copy that can be changed without changing w.
func (w *World) DeepCopy() *World {
	out := &World{EndpointsAPIMissing: w.EndpointsAPIMissing, IstioAPIMissing: w.IstioAPIMissing, Namespaces: make(map[string]Namespace, len(w.Namespaces)),
		GatewayAPIMissing: w.GatewayAPIMissing, ReferenceGrantAPIMissing: w.ReferenceGrantAPIMissing}
	if w.Identity != nil {
		out.Identity = w.Identity.DeepCopy()
	}
	if w.Configuration != nil {
		out.Configuration = w.Configuration.DeepCopy()
	}
	out.Policies = copyAll(w.Policies, (*routingv1alpha1.DNSPolicy).DeepCopy)
	out.Routes = copyAll(w.Routes, (*routingv1alpha1.ServiceRoute).DeepCopy)
	out.Gateways = copyAll(w.Gateways, (*routingv1alpha1.Gateway).DeepCopy)
	out.Services = copyAll(w.Services, (*corev1.Service).DeepCopy)
	out.Endpoints = copyAll(w.Endpoints, (*externaldnsv1alpha1.DNSEndpoint).DeepCopy)
	out.IstioGateways = copyAll(w.IstioGateways, (*istionetworkingv1.Gateway).DeepCopy)
	out.GatewayAPIGateways = copyAll(w.GatewayAPIGateways, (*gwv1.Gateway).DeepCopy)
	out.ListenerSets = copyAll(w.ListenerSets, (*gwv1.ListenerSet).DeepCopy)
	out.HTTPRoutes = copyAll(w.HTTPRoutes, (*gwv1.HTTPRoute).DeepCopy)
	out.ReferenceGrants = copyAll(w.ReferenceGrants, (*gwv1.ReferenceGrant).DeepCopy)
	for name, ns := range w.Namespaces {
		out.Namespaces[name] = Namespace{Labels: cloneMap(ns.Labels), Annotations: cloneMap(ns.Annotations)}
	}
	return out
}

func copyAll[T any](in []*T, deepCopy func(*T) *T) []*T {
	out := make([]*T, len(in))
	for i, o := range in {
		out[i] = deepCopy(o)
	}
	return out
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// key is namespace/name of an object.
func key(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
