package controllers

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ownwrite"
)

// The two backends of a Gateway (spec.backend): the classic Istio Gateway and the Gateway API
// objects (internal/desired/gatewayapi.go). The backend in use is written first; the other one's
// objects are removed only once that write left nothing undone, so a switch never leaves the hosts
// unserved, and the DNS records, which do not depend on the backend, are never touched by it.

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways;listenersets;httproutes;referencegrants,verbs=get;list;watch;create;update;delete

// forgetGatewayAPI removes what a deleted Gateway left that the garbage collector cannot see: the
// ReferenceGrants in other namespaces (core.ForgetGateway).
func (r *GatewayReconciler) forgetGatewayAPI(ctx context.Context, namespace, name string) error {
	if !r.APIs.Served(referenceGrantKind) {
		return nil
	}
	return core.ForgetGateway(ctx, cacheReads{base: r.base, apis: r.APIs}, applyWith[*gwv1.ReferenceGrant](r.base), namespace, name)
}

// watchGatewayAPI starts the watches on the generated Gateway API objects once the API is served:
// the owned ones through their controller reference (the Gateway API Gateway's status brings the
// address), the ReferenceGrants through their label.
func (r *GatewayReconciler) watchGatewayAPI(mgr ctrl.Manager, c controller.Controller) error {
	owned := []struct {
		gvk schema.GroupVersionKind
		obj client.Object
	}{{gatewayAPIGatewayKind, &gwv1.Gateway{}}, {listenerSetKind, &gwv1.ListenerSet{}}, {httpRouteKind, &gwv1.HTTPRoute{}}}
	for _, o := range owned {
		if err := watchOwnedWhenServed(mgr, r.APIs, c, o.gvk, o.obj, routingGK("Gateway"), r.Versions); err != nil {
			return err
		}
	}
	return r.APIs.WhenServed(referenceGrantKind, func() error {
		return c.Watch(source.Kind(mgr.GetCache(), client.Object(&gwv1.ReferenceGrant{}), handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			v := o.GetLabels()[desired.LabelGateway]
			if v == "" {
				return nil
			}
			// The label holds namespace.name: the Gateways of that namespace whose label value
			// matches (every namespace when a long value was shortened before its dot).
			var opts []client.ListOption
			if ns, _, found := strings.Cut(v, "."); found {
				opts = append(opts, client.InNamespace(ns))
			}
			var out []reconcile.Request
			for _, req := range requestsFor(ctx, r, &routingv1alpha1.GatewayList{}, opts...) {
				if desired.GatewayLabelValue(req.Namespace, req.Name) == v {
					out = append(out, req)
				}
			}
			// No Gateway of that name: it was deleted while the operator was down (the
			// informer's first list brings the grant here) or its deletion went by. A request for
			// it finds it gone, and forgetGatewayAPI removes the grant.
			if ns, name, ok := desired.OrphanedGrantOwner(o); ok && len(out) == 0 {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
			}
			return out
		}), ownwrite.EchoFilter(r.Versions)))
	})
}
