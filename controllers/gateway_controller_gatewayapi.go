package controllers

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	"github.com/service-router/service-router-operator/internal/plan"
)

// The two backends of a Gateway (spec.backend): the classic Istio Gateway and the Gateway API
// objects (internal/desired/gatewayapi.go). The backend in use is written first; the other one's
// objects are removed only once that write left nothing undone, so a switch never leaves the hosts
// unserved, and the DNS records, which do not depend on the backend, are never touched by it.

// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=gateways;listenersets;httproutes;referencegrants,verbs=get;list;watch;create;update;delete

// syncGatewayAPI makes the Gateway API objects of a Gateway match want (all removed when nil):
// the Gateway API Gateway first, so that the ListenerSets and the redirect route have a parent,
// then the ListenerSets, the redirect HTTPRoute and the ReferenceGrant.
func (r *GatewayReconciler) syncGatewayAPI(ctx context.Context, gw *routingv1alpha1.Gateway, want *desired.GatewayAPIObjects) (plan.Written, requeue, error) {
	if want == nil {
		want = &desired.GatewayAPIObjects{}
	}
	total := plan.Written{Kind: "Gateway API object", Owner: "Gateway"}
	var rq requeue
	add := func(w plan.Written) {
		if len(w.Conflicts) > 0 && len(total.Conflicts) == 0 {
			total.Kind = w.Kind // the message names the kind of the first conflict
		}
		total.Conflicts = append(total.Conflicts, w.Conflicts...)
		if total.HeldUntil.IsZero() || (!w.HeldUntil.IsZero() && w.HeldUntil.Before(total.HeldUntil)) {
			total.HeldUntil = w.HeldUntil
		}
		rq = rq.and(requeueOf(w))
	}

	var gateways []*gwv1.Gateway
	if want.Gateway != nil {
		gateways = append(gateways, want.Gateway)
	}
	current, err := cachedGatewayAPIGateway(ctx, r, client.ObjectKeyFromObject(gw))
	if err != nil {
		return total, rq, err
	}
	wg, err := applyChanges(ctx, r.base, desired.GatewayAPIGatewayKind(gw.Name), gateways, current,
		core.Notice[*gwv1.Gateway]{Target: gw, Reason: routingv1alpha1.ReasonGatewayCreated, Describe: describeListeners[*gwv1.Gateway]})
	add(wg.Result("Gateway API Gateway", "Gateway"))
	if err != nil || len(wg.Conflicts) > 0 {
		return total, rq, err // no ListenerSet without its parent
	}

	sets := &gwv1.ListenerSetList{}
	if err := r.List(ctx, sets, client.InNamespace(gw.Namespace)); err != nil {
		return total, rq, fmt.Errorf("listing ListenerSets: %w", err)
	}
	ws, err := applyChanges(ctx, r.base, desired.ListenerSetKind(gw.Name), want.ListenerSets, listItems(sets.Items),
		core.Notice[*gwv1.ListenerSet]{Target: gw, Reason: routingv1alpha1.ReasonGatewayCreated, Describe: describeListeners[*gwv1.ListenerSet]})
	add(ws.Result("ListenerSet", "Gateway"))
	if err != nil {
		return total, rq, err
	}

	routes := &gwv1.HTTPRouteList{}
	if err := r.List(ctx, routes, client.InNamespace(gw.Namespace)); err != nil {
		return total, rq, fmt.Errorf("listing HTTPRoutes: %w", err)
	}
	wr, err := applyChanges(ctx, r.base, desired.HTTPRouteKind(gw.Name), want.HTTPRoutes, listItems(routes.Items),
		core.Notice[*gwv1.HTTPRoute]{Target: gw, Reason: routingv1alpha1.ReasonGatewayCreated, Describe: func(*gwv1.HTTPRoute) string { return "redirect to HTTPS" }})
	add(wr.Result("HTTPRoute", "Gateway"))
	if err != nil {
		return total, rq, err
	}

	wgr, err := r.syncReferenceGrants(ctx, gw.Namespace, gw.Name, want.ReferenceGrants, gw)
	add(wgr.Result("ReferenceGrant", "Gateway"))
	return total, rq, err
}

// syncReferenceGrants makes the ReferenceGrants written for the Gateway namespace/name match
// want. They live in the Secret's namespace, where no owner reference can point to the Gateway:
// they are found by their label, and removed here when the Gateway is deleted.
func (r *GatewayReconciler) syncReferenceGrants(ctx context.Context, namespace, name string, want []*gwv1.ReferenceGrant, eventTarget *routingv1alpha1.Gateway) (core.Written[*gwv1.ReferenceGrant], error) {
	grants := &gwv1.ReferenceGrantList{}
	if err := r.List(ctx, grants, client.MatchingLabels{desired.LabelGateway: desired.GatewayLabelValue(namespace, name)}); err != nil {
		return core.Written[*gwv1.ReferenceGrant]{}, fmt.Errorf("listing ReferenceGrants: %w", err)
	}
	n := core.Notice[*gwv1.ReferenceGrant]{Reason: routingv1alpha1.ReasonGatewayCreated, Describe: func(g *gwv1.ReferenceGrant) string { return "TLS Secret for " + namespace }}
	if eventTarget != nil {
		n.Target = eventTarget
	}
	return applyChanges(ctx, r.base, desired.ReferenceGrantKind(namespace, name), want, listItems(grants.Items), n)
}

// forgetGatewayAPI removes what a deleted Gateway left that the garbage collector cannot see: the
// ReferenceGrants in other namespaces (everything in its own namespace is owned and collected).
func (r *GatewayReconciler) forgetGatewayAPI(ctx context.Context, namespace, name string) error {
	if !r.APIs.Served(referenceGrantKind) {
		return nil
	}
	_, err := r.syncReferenceGrants(ctx, namespace, name, nil, nil)
	return err
}

// cachedGatewayAPIGateway is the Gateway API Gateway of that name from the cache (which holds only
// managed ones): none, or one.
func cachedGatewayAPIGateway(ctx context.Context, c client.Reader, key client.ObjectKey) ([]*gwv1.Gateway, error) {
	existing := &gwv1.Gateway{}
	switch err := c.Get(ctx, key, existing); {
	case err == nil:
		return []*gwv1.Gateway{existing}, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("reading the Gateway API Gateway %s: %w", key, err)
	}
}

// describeListeners summarises a Gateway or ListenerSet for events: "3 listener(s)".
func describeListeners[T client.Object](o T) string {
	return fmt.Sprintf("%d listener(s)", desired.ListenerCount(o))
}

// gatherGatewayAPI reads what the GatewayAPI backend needs besides the routes: the ListenerSets
// the Gateway owns (hostnames stay where they are) and the address of its Gateway API Gateway.
func (r *GatewayReconciler) gatherGatewayAPI(ctx context.Context, in plan.GatewayInputs) (plan.GatewayInputs, error) {
	if in.GatewayAPIMissing {
		return in, nil
	}
	gw := in.Gateway
	sets := &gwv1.ListenerSetList{}
	if err := r.List(ctx, sets, client.InNamespace(gw.Namespace)); err != nil {
		return in, fmt.Errorf("listing ListenerSets: %w", err)
	}
	current, err := cachedGatewayAPIGateway(ctx, r, client.ObjectKeyFromObject(gw))
	if err != nil {
		return in, err
	}
	return plan.WithGatewayAPI(in, listItems(sets.Items), current), nil
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
			return out
		}), ownwrite.EchoFilter(r.Versions)))
	})
}
