package routerplan

import (
	"context"
	"errors"
	"fmt"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
)

// Load reads from the cluster what the operator's cache holds (controllers.CacheOptions, with the
// same selectors: desired.ManagedSelector, desired.IngressServiceSelector): reads
// only (list and get), cluster-wide, so a user with the view role everywhere can run it. An
// optional API that is not served (DNSEndpoint, Istio Gateway, the Gateway API kinds) is recorded
// as missing, as the operator does; any other failed read is an error, never an empty input.
func Load(ctx context.Context, c client.Reader) (*World, error) {
	w := &World{Namespaces: map[string]Namespace{}}
	var err error
	if w.Identity, err = getOptional(ctx, c, clusterv1alpha1.ClusterIdentityName, &clusterv1alpha1.ClusterIdentity{}); err != nil {
		return nil, err
	}
	if w.Configuration, err = getOptional(ctx, c, clusterv1alpha1.DNSConfigurationName, &clusterv1alpha1.DNSConfiguration{}); err != nil {
		return nil, err
	}
	policies := &routingv1alpha1.DNSPolicyList{}
	if err := listRequired(ctx, c, policies, "DNSPolicies"); err != nil {
		return nil, err
	}
	w.Policies = pointers(policies.Items)
	routes := &routingv1alpha1.ServiceRouteList{}
	if err := listRequired(ctx, c, routes, "ServiceRoutes"); err != nil {
		return nil, err
	}
	w.Routes = pointers(routes.Items)
	gateways := &routingv1alpha1.GatewayList{}
	if err := listRequired(ctx, c, gateways, "Gateways"); err != nil {
		return nil, err
	}
	w.Gateways = pointers(gateways.Items)
	namespaces := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NamespaceList"}}
	if err := list(ctx, c, namespaces, "Namespaces"); err != nil {
		return nil, err
	}
	for _, ns := range namespaces.Items {
		w.Namespaces[ns.Name] = Namespace{Labels: ns.Labels, Annotations: ns.Annotations}
	}
	services := &corev1.ServiceList{}
	if err := list(ctx, c, services, "Services labelled istio", client.MatchingLabelsSelector{Selector: desired.IngressServiceSelector()}); err != nil {
		return nil, err
	}
	w.Services = pointers(services.Items)
	endpoints := &externaldnsv1alpha1.DNSEndpointList{}
	if w.EndpointsAPIMissing, err = listOptional(ctx, c, endpoints, "DNSEndpoints"); err != nil {
		return nil, err
	}
	w.Endpoints = pointers(endpoints.Items)
	istio := &istionetworkingv1.GatewayList{}
	if w.IstioAPIMissing, err = listOptional(ctx, c, istio, "Istio Gateways"); err != nil {
		return nil, err
	}
	w.IstioGateways = istio.Items
	if err := loadGatewayAPI(ctx, c, w); err != nil {
		return nil, err
	}
	return w, nil
}

// loadGatewayAPI reads the managed Gateway API objects of the GatewayAPI backend. The operator
// uses that backend only when all four kinds are served (controllers.OptionalAPIs); one missing
// kind makes the API missing, and the kinds that are served are still read (what exists is kept).
func loadGatewayAPI(ctx context.Context, c client.Reader, w *World) error {
	gateways, sets, routes, grants := &gwv1.GatewayList{}, &gwv1.ListenerSetList{}, &gwv1.HTTPRouteList{}, &gwv1.ReferenceGrantList{}
	for _, l := range []struct {
		list client.ObjectList
		what string
	}{{gateways, "Gateway API Gateways"}, {sets, "ListenerSets"}, {routes, "HTTPRoutes"}} {
		missing, err := listOptional(ctx, c, l.list, l.what)
		if err != nil {
			return err
		}
		w.GatewayAPIMissing = w.GatewayAPIMissing || missing
	}
	var err error
	if w.ReferenceGrantAPIMissing, err = listOptional(ctx, c, grants, "ReferenceGrants"); err != nil {
		return err
	}
	w.GatewayAPIMissing = w.GatewayAPIMissing || w.ReferenceGrantAPIMissing
	w.GatewayAPIGateways, w.ListenerSets = pointers(gateways.Items), pointers(sets.Items)
	w.HTTPRoutes, w.ReferenceGrants = pointers(routes.Items), pointers(grants.Items)
	return nil
}

// listOptional lists the objects of an optional API (DNSEndpoint, Istio Gateway, the Gateway API
// kinds) that the operator manages (managed-by label): missing, and no error, when the API is not
// served, as the operator records it.
func listOptional(ctx context.Context, c client.Reader, l client.ObjectList, what string) (missing bool, err error) {
	switch err := list(ctx, c, l, what, client.MatchingLabelsSelector{Selector: desired.ManagedSelector()}); {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, nil
}

// ErrNotInstalled says the operator's own APIs are not served: there is nothing to preview.
var ErrNotInstalled = errors.New("the Service Router Operator's APIs (cluster.router.io, routing.router.io) are not installed in this cluster: install the operator's CRDs first (docs/INSTALLATION.md)")

func getOptional[T client.Object](ctx context.Context, c client.Reader, name string, obj T) (T, error) {
	var none T
	if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		switch {
		case meta.IsNoMatchError(err):
			return none, ErrNotInstalled
		case apierrors.IsNotFound(err):
			return none, nil
		}
		return none, fmt.Errorf("reading %s: %w", name, err)
	}
	return obj, nil
}

// list lists in every namespace. A kind whose API is not served comes back as the NoMatch error
// itself (the caller decides: the operator's own kinds are required, the optional APIs are not).
func list(ctx context.Context, c client.Reader, l client.ObjectList, what string, opts ...client.ListOption) error {
	if err := c.List(ctx, l, opts...); err != nil {
		if meta.IsNoMatchError(err) {
			return err
		}
		return fmt.Errorf("listing %s in every namespace: %w", what, err)
	}
	return nil
}

// listRequired lists one of the operator's own kinds: not served means not installed.
func listRequired(ctx context.Context, c client.Reader, l client.ObjectList, what string) error {
	if err := list(ctx, c, l, what); meta.IsNoMatchError(err) {
		return ErrNotInstalled
	} else if err != nil {
		return err
	}
	return nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
