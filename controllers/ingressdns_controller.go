package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/plan"
)

// IngressDNSReconciler publishes the address records of every gateway target hostname
// {cluster}-{region}-{targetPostfix}.{domain}: one DNSEndpoint per ExternalDNS controller for
// each distinct (controller, targetPostfix) pair among the Gateways, with the addresses of the
// ingress LoadBalancer Service. Its unit of work is that pair, not a single object: several
// Gateways may share one entry point.
type IngressDNSReconciler struct {
	base
	APIs *OptionalAPIs
	// Conflicts records the pairs in an ownership conflict, for the metrics (no status has them).
	Conflicts *metrics.ConflictSet
}

// Reconcile makes the address DNSEndpoints of one (controller, targetPostfix) pair — one per
// ExternalDNS controller, in the ingress Service's namespace — match plan.Ingress. It has no
// status of its own: the Gateways report the address, and conflicts go to the oldest Gateway of
// the pair as events and to the metrics.
func (r *IngressDNSReconciler) Reconcile(ctx context.Context, pair desired.Ingress) (ctrl.Result, error) {
	if !r.APIs.Served(dnsEndpointKind) {
		return ctrl.Result{}, nil // reconciled again when the API appears
	}
	in, err := r.gather(ctx, pair)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := plan.Ingress(in)
	if !p.Sync {
		return ctrl.Result{}, nil
	}
	list := &externaldnsv1alpha1.DNSEndpointList{}
	if err := r.List(ctx, list, client.MatchingFields{indexEndpointIngress: ingressKey(pair)}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing address DNSEndpoints: %w", err)
	}
	// Events go to the oldest Gateway of the pair; when none is left there is nobody to tell.
	var eventTarget runtime.Object
	if oldest, ok := plan.Oldest(in.Gateways); ok {
		eventTarget = oldest
	}
	kind := desired.AddressEndpointKind(pair)
	w, err := applyChanges(ctx, r.base, kind, p.Endpoints, listItems(list.Items),
		notice[*externaldnsv1alpha1.DNSEndpoint]{target: eventTarget, reason: routingv1alpha1.ReasonGatewayCreated, describe: describeRecords})
	if err != nil {
		return r.finish(requeue{}, err)
	}
	r.Conflicts.Set(ingressKey(pair), len(w.Conflicts) > 0)
	if conflicts := w.result("DNSEndpoint", "").Conflicts; len(conflicts) > 0 && eventTarget != nil {
		e := plan.IngressConflictEvent(conflicts)
		r.Recorder.Eventf(eventTarget, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
	}
	return r.finish(requeueOf(w), nil)
}

func (r *IngressDNSReconciler) gather(ctx context.Context, pair desired.Ingress) (plan.IngressInputs, error) {
	in := plan.IngressInputs{Ingress: pair}
	gateways := &routingv1alpha1.GatewayList{}
	if err := r.List(ctx, gateways, client.MatchingFields{indexGatewayIngress: ingressKey(pair)}); err != nil {
		return in, fmt.Errorf("listing Gateways of %s: %w", ingressKey(pair), err)
	}
	for i := range gateways.Items {
		if gateways.Items[i].DeletionTimestamp.IsZero() {
			in.Gateways = append(in.Gateways, &gateways.Items[i])
		}
	}
	var err error
	if in.Identity, in.Configuration, err = getSingletons(ctx, r); err != nil {
		return in, err
	}
	// Only the ingress namespace the oldest Gateway of the pair names is trusted; with no
	// Gateway left the records go whatever Services exist.
	decider, found := plan.IngressDecider(in.Gateways)
	if !found {
		return in, nil
	}
	if plan.UsesGatewayAPI(decider) {
		return r.gatherGatewayAPI(ctx, in, decider)
	}
	svc, err := ingressService(ctx, r, plan.IngressNamespace(decider), pair.Controller)
	if err != nil || svc == nil {
		return in, err
	}
	in.Service = &plan.IngressService{Namespace: svc.Namespace, Addresses: ingress.ServiceAddresses(svc)}
	return in, nil
}

// SetupWithManager registers the controller. Its requests are (controller, targetPostfix) pairs,
// mapped from Gateways, their address DNSEndpoints, ingress Services, and — for every pair — the
// ClusterIdentity and DNSConfiguration.
func (r *IngressDNSReconciler) SetupWithManager(mgr ctrl.Manager) error {
	allPairs := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []desired.Ingress {
		return r.allPairs(ctx)
	})
	c, err := builder.TypedControllerManagedBy[desired.Ingress](mgr).
		Named("ingressdns").
		WatchesRawSource(apiChanges(r.APIs, allPairs)).
		Watches(&routingv1alpha1.Gateway{}, handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []desired.Ingress {
			return []desired.Ingress{ingressOf(o.(*routingv1alpha1.Gateway))}
		}), specChanges).
		Watches(&corev1.Service{}, handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []desired.Ingress {
			controller := o.GetLabels()[ingressLabel]
			if controller == "" {
				return nil
			}
			return r.pairs(ctx, client.MatchingFields{indexGatewayIngressService: ingressServiceKey(o.GetNamespace(), controller)})
		})).
		Watches(&clusterv1alpha1.ClusterIdentity{}, allPairs, specChanges).
		Watches(&clusterv1alpha1.DNSConfiguration{}, allPairs, specChanges).
		Build(metrics.Instrument("ingressdns", r))
	if err != nil {
		return err
	}
	if err := r.watchGatewayAPI(mgr, c); err != nil {
		return err
	}
	return r.APIs.WhenServed(dnsEndpointKind, func() error {
		return c.Watch(source.TypedKind(mgr.GetCache(), client.Object(&externaldnsv1alpha1.DNSEndpoint{}),
			handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []desired.Ingress {
				if pair, ok := desired.IngressOfLabels(o.GetLabels()); ok {
					return []desired.Ingress{pair}
				}
				return nil
			})))
	})
}

// pairs lists the distinct pairs of the Gateways matching opts.
func (r *IngressDNSReconciler) pairs(ctx context.Context, opts ...client.ListOption) []desired.Ingress {
	list := &routingv1alpha1.GatewayList{}
	if err := r.List(ctx, list, opts...); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Gateways to reconcile")
		return nil
	}
	seen := map[desired.Ingress]bool{}
	var out []desired.Ingress
	for i := range list.Items {
		if pair := ingressOf(&list.Items[i]); !seen[pair] {
			seen[pair] = true
			out = append(out, pair)
		}
	}
	return out
}

// allPairs is every pair with a Gateway plus every pair that still has address records (whose
// Gateways are gone and whose records must be collected).
func (r *IngressDNSReconciler) allPairs(ctx context.Context) []desired.Ingress {
	out := r.pairs(ctx)
	seen := map[desired.Ingress]bool{}
	for _, p := range out {
		seen[p] = true
	}
	if !r.APIs.Served(dnsEndpointKind) {
		return out
	}
	// In place: a domain change runs this over every route's DNSEndpoint too.
	endpoints, err := cacheview.All(ctx, r.Cached.Cache, newEndpoint, newEndpointList, "")
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing address DNSEndpoints to reconcile")
		return out
	}
	for _, ep := range endpoints {
		if pair, ok := desired.IngressOfLabels(ep.Labels); ok && !seen[pair] {
			seen[pair] = true
			out = append(out, pair)
		}
	}
	return out
}

// ensure the reconciler satisfies the typed interface.
var _ reconcile.TypedReconciler[desired.Ingress] = &IngressDNSReconciler{}

// gatherGatewayAPI reads the address of a pair whose deciding Gateway has backend GatewayAPI: its
// Gateway API Gateway's status.addresses. The records go to the same namespace as the classic
// backend's (the decider's ingress namespace), under the same names, so a switch between backends
// updates them in place. No Gateway API Gateway or no address yet: no Service, and the records
// are kept.
func (r *IngressDNSReconciler) gatherGatewayAPI(ctx context.Context, in plan.IngressInputs, decider *routingv1alpha1.Gateway) (plan.IngressInputs, error) {
	if !r.APIs.gatewayAPIServed() {
		return in, nil
	}
	addrs, err := gatewayAPIAddresses(ctx, r, decider)
	if err != nil || addrs == nil {
		return in, err
	}
	in.Service = &plan.IngressService{Namespace: plan.IngressNamespace(decider), Addresses: *addrs}
	return in, nil
}

// watchGatewayAPI follows the address of the Gateway API Gateways (their status) once the API is
// served: a change maps to the pair of the Gateway that generated it.
func (r *IngressDNSReconciler) watchGatewayAPI(mgr ctrl.Manager, c controller.TypedController[desired.Ingress]) error {
	return r.APIs.WhenServed(gatewayAPIGatewayKind, func() error {
		return c.Watch(source.TypedKind(mgr.GetCache(), client.Object(&gwv1.Gateway{}),
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []desired.Ingress {
				owner := metav1.GetControllerOfNoCopy(o)
				if owner == nil || owner.Kind != "Gateway" || owner.APIVersion != routingv1alpha1.GroupVersion.String() {
					return nil
				}
				gw := &routingv1alpha1.Gateway{}
				if err := r.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: owner.Name}, gw); err != nil {
					return nil // deleted: its pair was queued by the Gateway's own deletion
				}
				return []desired.Ingress{ingressOf(gw)}
			})))
	})
}
