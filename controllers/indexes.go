package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
)

// Field indexes on the informer cache. Every cross-resource lookup goes through one of these or
// one of the lookups read in place (lookup.go), so a reconcile costs what it touches, not what the
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

func ingressOf(gw *routingv1alpha1.Gateway) desired.Ingress {
	return desired.Ingress{Controller: gw.Spec.Controller, TargetPostfix: gw.Spec.TargetPostfix}
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
			return []string{ingressKey(ingressOf(o.(*routingv1alpha1.Gateway)))}
		}},
		index{&routingv1alpha1.Gateway{}, indexGatewayIngressService, func(o client.Object) []string {
			gw := o.(*routingv1alpha1.Gateway)
			return []string{ingressServiceKey(plan.IngressNamespace(gw), gw.Spec.Controller)}
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
