package routerplan

import (
	"context"
	"maps"
	"slices"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/verify"
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
	// DeletedGateways are the Gateways the manifests delete (Overlay), by themselves or with their
	// namespace: the operator hears of each deletion and removes, by the Gateway's key, what it
	// left that the garbage collector cannot see (core.ForgetGateway). A World read from a
	// cluster has none.
	DeletedGateways []types.NamespacedName
}

// Namespace is what the operator reads of a namespace: its labels (Gateways' allowedRoutes) and
// annotations (the applications it owns).
type Namespace struct {
	Labels, Annotations map[string]string
}

// DeepCopy returns a copy that can be changed without changing w.
func (w *World) DeepCopy() *World {
	out := *w // the flags of the optional APIs; every object and namespace is copied below
	out.Identity, out.Configuration = w.Identity.DeepCopy(), w.Configuration.DeepCopy()
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
	out.DeletedGateways = slices.Clone(w.DeletedGateways)
	out.Namespaces = make(map[string]Namespace, len(w.Namespaces))
	for name, ns := range w.Namespaces {
		out.Namespaces[name] = Namespace{Labels: maps.Clone(ns.Labels), Annotations: maps.Clone(ns.Annotations)}
	}
	return &out
}

var (
	identityGK      = clusterv1alpha1.GroupVersion.WithKind("ClusterIdentity").GroupKind()
	configurationGK = clusterv1alpha1.GroupVersion.WithKind("DNSConfiguration").GroupKind()
	policyGK        = routingv1alpha1.GroupVersion.WithKind("DNSPolicy").GroupKind()
	routeGK         = routingv1alpha1.GroupVersion.WithKind("ServiceRoute").GroupKind()
	gatewayGK       = routingv1alpha1.GroupVersion.WithKind("Gateway").GroupKind()
	namespaceGK     = schema.GroupKind{Kind: "Namespace"}
	serviceGK       = schema.GroupKind{Kind: "Service"}
)

// Object is the world's object of a kind, namespace and name (nil: none), and whether the world
// holds every object of that kind and name, so that nil means it does not exist (admission asks
// the cluster otherwise).
func (w *World) Object(gk schema.GroupKind, namespace, name string) (client.Object, bool) {
	switch gk {
	case identityGK: // the operator reads no ClusterIdentity of another name
		if name != clusterv1alpha1.ClusterIdentityName || w.Identity == nil {
			return nil, name == clusterv1alpha1.ClusterIdentityName
		}
		return w.Identity, true
	case configurationGK:
		if name != clusterv1alpha1.DNSConfigurationName || w.Configuration == nil {
			return nil, name == clusterv1alpha1.DNSConfigurationName
		}
		return w.Configuration, true
	case policyGK:
		return find(w.Policies, namespace, name), true
	case routeGK:
		return find(w.Routes, namespace, name), true
	case gatewayGK:
		return find(w.Gateways, namespace, name), true
	case namespaceGK:
		if _, ok := w.Namespaces[name]; ok {
			return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, true
		}
		return nil, true
	case serviceGK:
		// The world holds only the Services labelled istio.
		svc := find(w.Services, namespace, name)
		return svc, svc != nil
	}
	return nil, false
}

func find[P client.Object](list []P, ns, name string) client.Object {
	for _, o := range list {
		if o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	return nil
}

// IngressService is the ingress LoadBalancer Service of controller in namespace (see
// ingress.SelectService); nil when there is none.
func (w *World) IngressService(namespace, controller string) *corev1.Service {
	var candidates []corev1.Service
	for _, svc := range w.Services {
		if svc.Namespace == namespace && svc.Labels[naming.IngressServiceSelector] == controller {
			candidates = append(candidates, *svc)
		}
	}
	return ingress.SelectService(candidates)
}

func copyAll[T any](in []*T, deepCopy func(*T) *T) []*T {
	out := make([]*T, len(in))
	for i, o := range in {
		out[i] = deepCopy(o)
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

// worldReads is what the reconcile cores read (internal/core), from the world and its index: the
// reads of the operator's informer cache, which never fail here.
type worldReads struct {
	w  *World
	ix *index
	// What the prediction has changed so far: the live Gateways, the DNSEndpoints, the Gateway
	// API objects and the Istio Gateways (for the Gateways' and entry points' reconciles, which
	// follow the routes').
	gateways  []*routingv1alpha1.Gateway
	endpoints map[string]*externaldnsv1alpha1.DNSEndpoint
	api       *gatewayAPIObjects
	istio     map[string]*istionetworkingv1.Gateway
}

// scratch is r reading endpoints, with Istio Gateways and Gateway API objects of its own: what
// its reconciles write there is discarded.
func (r worldReads) scratch(endpoints map[string]*externaldnsv1alpha1.DNSEndpoint) worldReads {
	r.endpoints, r.api, r.istio = endpoints, r.api.clone(), maps.Clone(r.istio)
	return r
}

var _ core.RouteReads = worldReads{}

func (r worldReads) Singletons(context.Context) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error) {
	return r.w.Identity, r.w.Configuration, nil
}

func (r worldReads) EndpointsServed() bool { return !r.w.EndpointsAPIMissing }

func (r worldReads) PolicyInForce(_ context.Context, namespace string) (*routingv1alpha1.DNSPolicy, error) {
	return r.ix.policies[namespace], nil
}

// NamespaceMetadata of a namespace the world does not hold is empty: a world read from a cluster
// holds every namespace, and one built from manifests alone knows none.
func (r worldReads) NamespaceMetadata(_ context.Context, name string) (labels, annotations map[string]string, err error) {
	ns := r.w.Namespaces[name]
	return ns.Labels, ns.Annotations, nil
}

func (r worldReads) NamespacesListing(_ context.Context, application string) ([]string, error) {
	return r.ix.listedBy[application], nil
}

func (r worldReads) GatewayNamed(_ context.Context, key types.NamespacedName) (*routingv1alpha1.Gateway, error) {
	return r.ix.gateways[key], nil
}

func (r worldReads) Claimants(_ context.Context, route *routingv1alpha1.ServiceRoute, _ *clusterv1alpha1.ClusterIdentity) ([]*routingv1alpha1.ServiceRoute, error) {
	return r.ix.claims[r.ix.sourceLabel(route)], nil
}

func (r worldReads) RouteEndpoints(_ context.Context, route *routingv1alpha1.ServiceRoute) ([]*externaldnsv1alpha1.DNSEndpoint, error) {
	return r.ix.endpointsByRoute[key(route)], nil
}

// RouteZone: a prediction has no prober results.
func (r worldReads) RouteZone(*routingv1alpha1.ServiceRoute, string) *verify.Observation { return nil }

// Forms is nil: a preview reads no zone, so a failover name keeps the form its DNSEndpoint has.
func (r worldReads) Forms() decide.Forms { return nil }

var _ core.AddressReads = worldReads{}

func (r worldReads) IngressService(_ context.Context, namespace, controller string) (*corev1.Service, error) {
	return r.w.IngressService(namespace, controller), nil
}

func (r worldReads) GatewayAPIServed() bool { return !r.w.GatewayAPIMissing }

// GatewayAPIGateway is the Gateway API Gateway as the cluster has it now: one the operator is
// about to create has no address yet.
func (r worldReads) GatewayAPIGateway(_ context.Context, key types.NamespacedName) ([]*gwv1.Gateway, error) {
	if g, ok := r.api.gateways[key.String()]; ok {
		return []*gwv1.Gateway{g}, nil
	}
	return nil, nil
}

func (r worldReads) GatewaysOfEntryPoint(_ context.Context, pair desired.Ingress) ([]*routingv1alpha1.Gateway, error) {
	var out []*routingv1alpha1.Gateway
	for _, gw := range r.gateways {
		if desired.IngressOfGateway(gw) == pair {
			out = append(out, gw)
		}
	}
	return out, nil
}

func (r worldReads) AddressEndpoints(_ context.Context, pair desired.Ingress) ([]*externaldnsv1alpha1.DNSEndpoint, error) {
	var out []*externaldnsv1alpha1.DNSEndpoint
	for _, ep := range r.endpoints {
		if got, ok := desired.IngressOfLabels(ep.Labels); ok && got == pair {
			out = append(out, ep)
		}
	}
	return out, nil
}

var _ core.GatewayReads = worldReads{}

func (r worldReads) IstioServed() bool { return !r.w.IstioAPIMissing }

func (r worldReads) RoutesOfGateway(_ context.Context, gw *routingv1alpha1.Gateway) ([]*routingv1alpha1.ServiceRoute, error) {
	return r.ix.routesByGateway[gatewayKey(gw)], nil
}

func (r worldReads) IstioGateway(_ context.Context, key types.NamespacedName) ([]*istionetworkingv1.Gateway, error) {
	if ig, ok := r.istio[key.String()]; ok {
		return []*istionetworkingv1.Gateway{ig}, nil
	}
	return nil, nil
}

func (r worldReads) ListenerSets(_ context.Context, namespace string) ([]*gwv1.ListenerSet, error) {
	return InNamespace(sortedValues(r.api.sets), namespace), nil
}

func (r worldReads) HTTPRoutes(_ context.Context, namespace string) ([]*gwv1.HTTPRoute, error) {
	return InNamespace(sortedValues(r.api.routes), namespace), nil
}

func (r worldReads) ReferenceGrants(_ context.Context, namespace, name string) ([]*gwv1.ReferenceGrant, error) {
	return r.api.grantsOf(namespace, name), nil
}

// TargetZone: a prediction has no prober results.
func (r worldReads) TargetZone(string) *verify.Observation { return nil }
