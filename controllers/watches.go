package controllers

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/ownwrite"
)

// enqueuer queues the requests one object of an event affects.
type enqueuer = func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request])

// eachObjectOf is the event handler that calls enqueue with every object an event carries: the
// created or deleted object, and both the old and the new one of an update (what the object
// affected before the change may differ from what it affects after).
func eachObjectOf(enqueue enqueuer) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectOld, q)
			enqueue(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}

// Watch filters. Status writes bump no generation, so specChanges ignores them: a cluster-wide
// watch must not fan out to every object on each status update.
var (
	specChanges    = builder.WithPredicates(predicate.GenerationChangedPredicate{})
	createOrDelete = builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})
	// createOrDeleteOrSpec also passes spec changes and the start of a deletion.
	createOrDeleteOrSpec = builder.WithPredicates(predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
	}})
)

// requestsFor lists the objects of list's kind that match opts (from the cache) and returns a
// reconcile request for each: the mapping of every "this change affects those objects" watch.
func requestsFor(ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) []reconcile.Request {
	// Read-only: only the keys are taken. (Every route: requestsForAll, which copies nothing.)
	objs, err := cacheview.List[client.Object](ctx, c, list, opts...)
	return requestsOf(ctx, objs, err)
}

// requestsForAll returns a request for every cached object of T's kind, in namespace when it is
// not empty. It reads the cache in place (cacheview.All): a ClusterIdentity change maps to every
// route, and a list would copy each of them only to take its key.
func requestsForAll[T client.Object](ctx context.Context, c ctrlcache.Cache, newObj func() T, newList func() client.ObjectList, namespace string) []reconcile.Request {
	objs, err := cacheview.All(ctx, c, newObj, newList, namespace)
	return requestsOf(ctx, objs, err)
}

// requestsOf returns a request for each of objs, read in place (nothing when the read failed).
func requestsOf[T client.Object](ctx context.Context, objs []T, err error) []reconcile.Request {
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing objects to reconcile")
		return nil
	}
	reqs := make([]reconcile.Request, len(objs))
	for i, o := range objs {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)}
	}
	return reqs
}

// controllerOwner maps a generated object to its controlling owner of kind gk in the same
// namespace: what handler.EnqueueRequestForOwner does with OnlyControllerOwner, without asking the
// REST mapper on every event (at start-up with 10,000 DNSEndpoints that lookup alone allocated
// about 90 MB).
func controllerOwner(gk schema.GroupKind) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return controllerOwnerOf(gk, o)
	})
}

func controllerOwnerOf(gk schema.GroupKind, o client.Object) []reconcile.Request {
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil || ref.Kind != gk.Kind {
		return nil
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != gk.Group {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}}}
}

// routingGK is the GroupKind of a routing.router.io kind.
func routingGK(kind string) schema.GroupKind {
	return schema.GroupKind{Group: routingv1alpha1.GroupVersion.Group, Kind: kind}
}

// watchOwnedWhenServed starts, once the optional kind of generated is served, c's watch on the
// generated objects controlled by an owner of kind owner: the Owns() of the builder, deferred, and
// mapped without the REST mapper (controllerOwner). The echoes of the operator's own writes of
// them are dropped (ownwrite.EchoFilter).
func watchOwnedWhenServed(mgr ctrl.Manager, apis *OptionalAPIs, c controller.Controller, gvk schema.GroupVersionKind, generated client.Object, owner schema.GroupKind, written *ownwrite.Versions) error {
	return apis.WhenServed(gvk, func() error {
		return c.Watch(source.Kind(mgr.GetCache(), generated, controllerOwner(owner), ownwrite.EchoFilter(written)))
	})
}
