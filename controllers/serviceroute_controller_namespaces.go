package controllers

import (
	"context"
	"maps"
	"slices"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/naming"
)

// namespaceHandler enqueues the routes a namespace change affects: a change of its labels
// affects its own routes (Gateways' allowedRoutes); a change of the applications it lists affects
// its own routes and, in every namespace, the routes using an application added or removed, and
// the routes claiming the same hostnames as any of those (a route whose application is no longer
// allowed stops claiming, and the next claimant is promoted).
func (r *ServiceRouteReconciler) namespaceHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, old, new client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		ns := new
		if ns == nil {
			ns = old
		}
		oldApps, oldListed := applicationsOf(old)
		newApps, newListed := applicationsOf(new)
		appsChanged := oldListed != newListed || !slices.Equal(oldApps, newApps)
		if old != nil && new != nil && !appsChanged && maps.Equal(old.GetLabels(), new.GetLabels()) {
			return // no change the routes depend on
		}
		// Read in place: every namespace arrives as created when the operator starts.
		affected, err := cacheview.All(ctx, r.Cached.Cache, newRoute, newRouteList, ns.GetName())
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the ServiceRoutes of a namespace", "namespace", ns.GetName())
			return
		}
		if !appsChanged {
			for _, route := range affected {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(route)})
			}
			return
		}
		for _, app := range symmetricDifference(oldApps, newApps) {
			list := &routingv1alpha1.ServiceRouteList{}
			if err := r.Cached.List(ctx, list, client.MatchingFields{indexRouteApplication: app}); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "listing the ServiceRoutes of an application", "application", app)
				continue
			}
			affected = append(affected, listItems(list.Items)...)
		}
		ci, err := getIdentity(ctx, r.Cached)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "reading the ClusterIdentity")
		}
		for _, route := range affected {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(route)})
			if ci == nil {
				continue
			}
			claimants, err := claimants(r.Lookups, route, ci)
			if err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "listing hostname claimants")
				continue
			}
			for _, c := range claimants {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, nil, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectOld, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, nil, q)
		},
	}
}

// applicationsOf returns the applications a namespace lists, sorted (none for a nil namespace).
func applicationsOf(ns client.Object) ([]string, bool) {
	if ns == nil {
		return nil, false
	}
	apps, listed := naming.Applications(ns.GetAnnotations())
	slices.Sort(apps)
	return apps, listed
}

// symmetricDifference returns the names in exactly one of two sorted lists. A list set or unset
// as a whole changes what its own routes may use, which the caller handles; other namespaces
// are affected only by the names added or removed.
func symmetricDifference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}
