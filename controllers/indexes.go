package controllers

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
)

// Field indexes on the informer cache. Every cross-resource lookup goes through one of these or
// one of the lookups read in place (below), so a reconcile costs what it touches, not what the
// cluster holds.
const (
	// indexGatewayIngress: Gateways by "controller/targetPostfix".
	indexGatewayIngress = "gateway.ingress"
	// indexGatewayIngressService: Gateways by "ingress namespace/controller" (the only Services
	// they trust), for ingress Service events.
	indexGatewayIngressService = "gateway.ingressService"
	// indexServiceIstio: Services by "namespace/value of their istio label".
	indexServiceIstio = "service.istioLabel"
	// indexRouteApplication: ServiceRoutes by spec.application, for changes of the namespaces'
	// application lists.
	indexRouteApplication = "serviceroute.application"
	// indexNamespaceApplication: Namespaces (metadata) by each application their
	// router.io/applications annotation lists.
	indexNamespaceApplication = "namespace.application"
	// indexEndpointIngress: managed gateway address DNSEndpoints by "controller/targetPostfix".
	indexEndpointIngress = "dnsendpoint.ingress"
)

// ingressKey is the index value of a (controller, targetPostfix) pair; both are DNS labels, so
// "/" cannot occur in either.
func ingressKey(i desired.Ingress) string { return i.Controller + "/" + i.TargetPostfix }

// ingressServiceKey is the index value of the Services labelled istio=controller in namespace.
func ingressServiceKey(namespace, controller string) string { return namespace + "/" + controller }

// ingressLabel is the label selecting ingress gateway pods and their LoadBalancer Service.
const ingressLabel = naming.IngressServiceSelector

// namespaceMetadata is an empty Namespace as the cache holds it: metadata only (labels and the
// router.io/applications annotation, see CacheOptions).
func namespaceMetadata() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
}

type indexer interface {
	IndexField(ctx context.Context, obj client.Object, field string, extractValue client.IndexerFunc) error
}

// addIndexes registers every field index on the manager's cache. The indexes on DNSEndpoints are
// registered once their API is served: registering one creates the informer, and an informer of
// a kind that does not exist never syncs, which would hold the whole cache (and the manager) back.
func addIndexes(ctx context.Context, idx indexer, apis *OptionalAPIs) error {
	type index struct {
		obj   client.Object
		field string
		fn    client.IndexerFunc
	}
	register := func(indexes ...index) error {
		for _, i := range indexes {
			if err := idx.IndexField(ctx, i.obj, i.field, i.fn); err != nil {
				return err
			}
		}
		return nil
	}
	err := register(
		index{&routingv1alpha1.Gateway{}, indexGatewayIngress, func(o client.Object) []string {
			return []string{ingressKey(desired.IngressOfGateway(o.(*routingv1alpha1.Gateway)))}
		}},
		index{&routingv1alpha1.Gateway{}, indexGatewayIngressService, func(o client.Object) []string {
			gw := o.(*routingv1alpha1.Gateway)
			return []string{ingressServiceKey(decide.IngressNamespace(gw), gw.Spec.Controller)}
		}},
		index{&corev1.Service{}, indexServiceIstio, func(o client.Object) []string {
			if v := o.GetLabels()[naming.IngressServiceSelector]; v != "" {
				return []string{ingressServiceKey(o.GetNamespace(), v)}
			}
			return nil
		}},
		index{&routingv1alpha1.ServiceRoute{}, indexRouteApplication, func(o client.Object) []string {
			return []string{o.(*routingv1alpha1.ServiceRoute).Spec.Application}
		}},
		index{namespaceMetadata(), indexNamespaceApplication, func(o client.Object) []string {
			apps, _ := naming.Applications(o.GetAnnotations())
			return apps
		}},
	)
	if err != nil {
		return err
	}
	return apis.WhenServed(dnsEndpointKind, func() error {
		return register(
			index{&externaldnsv1alpha1.DNSEndpoint{}, indexEndpointIngress, func(o client.Object) []string {
				if pair, ok := desired.IngressOfLabels(o.GetLabels()); ok {
					return []string{ingressKey(pair)}
				}
				return nil
			}},
		)
	})
}

// lookups are the indexes read in place (cacheview.Index): those that run for every route (its
// DNSEndpoints, the routes claiming its hostname) or over every route of a Gateway. They return
// the cache's own objects: read them, never change them.
type lookups struct {
	// routesByGateway: ServiceRoutes by the namespace/name of the Gateway they reference.
	routesByGateway cacheview.Index[*routingv1alpha1.ServiceRoute]
	// routesByHostname: ServiceRoutes by naming.HostnameKey, for hostname claims.
	routesByHostname cacheview.Index[*routingv1alpha1.ServiceRoute]
	// endpointsByRoute: managed DNSEndpoints by the namespace/name of their ServiceRoute.
	endpointsByRoute cacheview.Index[*externaldnsv1alpha1.DNSEndpoint]
}

func newLookups() *lookups {
	return &lookups{
		routesByGateway: cacheview.Index[*routingv1alpha1.ServiceRoute]{Name: "serviceroute.gatewayRef", NewList: newRouteList, Keys: func(r *routingv1alpha1.ServiceRoute) []string {
			return []string{decide.GatewayRef(r).String()}
		}},
		routesByHostname: cacheview.Index[*routingv1alpha1.ServiceRoute]{Name: "serviceroute.hostnameKey", NewList: newRouteList, Keys: func(r *routingv1alpha1.ServiceRoute) []string {
			return []string{naming.HostnameKey(r.Spec.ServiceName, r.Spec.Environment, r.Spec.Application)}
		}, Has: func(r *routingv1alpha1.ServiceRoute, key string) bool {
			return naming.IsHostnameKey(key, r.Spec.ServiceName, r.Spec.Environment, r.Spec.Application)
		}},
		endpointsByRoute: cacheview.Index[*externaldnsv1alpha1.DNSEndpoint]{Name: "dnsendpoint.serviceRoute", NewList: newEndpointList, Keys: func(ep *externaldnsv1alpha1.DNSEndpoint) []string {
			if route := ep.Labels[naming.LabelServiceRoute]; route != "" {
				return []string{routeKey(ep.Namespace, route)}
			}
			return nil
		}, Has: func(ep *externaldnsv1alpha1.DNSEndpoint, key string) bool {
			namespace, route, _ := strings.Cut(key, "/")
			return ep.Namespace == namespace && ep.Labels[naming.LabelServiceRoute] == route
		}},
	}
}

// register adds the indexes to the manager's cache; those on DNSEndpoints once their API is
// served (see addIndexes).
func (l *lookups) register(ctx context.Context, c ctrlcache.Cache, apis *OptionalAPIs) error {
	if err := l.routesByGateway.Register(ctx, c, &routingv1alpha1.ServiceRoute{}); err != nil {
		return err
	}
	if err := l.routesByHostname.Register(ctx, c, &routingv1alpha1.ServiceRoute{}); err != nil {
		return err
	}
	return apis.WhenServed(dnsEndpointKind, func() error {
		return l.endpointsByRoute.Register(ctx, c, &externaldnsv1alpha1.DNSEndpoint{})
	})
}

func newRoute() *routingv1alpha1.ServiceRoute { return &routingv1alpha1.ServiceRoute{} }

func newRouteList() client.ObjectList { return &routingv1alpha1.ServiceRouteList{} }

func newEndpoint() *externaldnsv1alpha1.DNSEndpoint { return &externaldnsv1alpha1.DNSEndpoint{} }

func newEndpointList() client.ObjectList { return &externaldnsv1alpha1.DNSEndpointList{} }

// routeKey is the index value of the objects of the route namespace/name.
func routeKey(namespace, name string) string { return namespace + "/" + name }
