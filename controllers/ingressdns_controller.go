package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/metrics"
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
// ExternalDNS controller, in the ingress Service's namespace — match decide.Ingress, through
// core.Addresses over the informer cache. It has no status of its own: the Gateways report the
// address, and conflicts go to the oldest Gateway of the pair as events and to the metrics.
func (r *IngressDNSReconciler) Reconcile(ctx context.Context, pair desired.Ingress) (ctrl.Result, error) {
	res, err := core.Addresses(ctx, cacheReads{base: r.base, apis: r.APIs}, applyWith[*externaldnsv1alpha1.DNSEndpoint](r.base), pair)
	if err != nil || !res.Synced {
		return r.finish(requeue{}, err)
	}
	r.Conflicts.Set(ingressKey(pair), len(res.Written.Conflicts) > 0)
	if len(res.Written.Conflicts) > 0 && res.Oldest != nil {
		e := decide.IngressConflictEvent(res.Written.Conflicts)
		r.Recorder.Eventf(res.Oldest, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
	}
	return r.finish(requeueOf(res.Written), nil)
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
			return []desired.Ingress{desired.IngressOfGateway(o.(*routingv1alpha1.Gateway))}
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
		if pair := desired.IngressOfGateway(&list.Items[i]); !seen[pair] {
			seen[pair] = true
			out = append(out, pair)
		}
	}
	return out
}

// allPairs are the entry points (desired.EntryPoints): every pair with a Gateway plus every pair
// that still has address records (whose records must go).
func (r *IngressDNSReconciler) allPairs(ctx context.Context) []desired.Ingress {
	list := &routingv1alpha1.GatewayList{}
	if err := r.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Gateways to reconcile")
		return nil
	}
	gateways := make([]*routingv1alpha1.Gateway, len(list.Items))
	for i := range list.Items {
		gateways[i] = &list.Items[i]
	}
	if !r.APIs.Served(dnsEndpointKind) {
		return desired.EntryPoints(gateways, nil)
	}
	// In place: a domain change runs this over every route's DNSEndpoint too.
	endpoints, err := cacheview.All(ctx, r.Cached.Cache, newEndpoint, newEndpointList, "")
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing address DNSEndpoints to reconcile")
	}
	return desired.EntryPoints(gateways, endpoints)
}

// ensure the reconciler satisfies the typed interface.
var _ reconcile.TypedReconciler[desired.Ingress] = &IngressDNSReconciler{}

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
				return []desired.Ingress{desired.IngressOfGateway(gw)}
			})))
	})
}
