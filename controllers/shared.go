// Package controllers holds the operator's six reconcilers. Each gathers its inputs from the
// informer cache, asks internal/plan what should exist, lets internal/apply compute the writes,
// executes them with the one write step (write.go) and ends with the one status write (status.go).
// Decisions live in internal/plan and internal/apply; this package is wiring and I/O.
package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/ingress"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
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

// fieldOwner names the operator in managedFields of everything it writes.
const fieldOwner = client.FieldOwner("service-router-operator")

// ingressLabel is the label selecting ingress gateway pods and their LoadBalancer Service.
const ingressLabel = naming.IngressServiceSelector

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

// fetch reads the object a request names from the cache. ok is false when it is gone or being
// deleted: there is nothing to reconcile (the garbage collector removes what it controls).
func fetch[T client.Object](ctx context.Context, c client.Reader, key client.ObjectKey, obj T) (ok bool, err error) {
	if err := c.Get(ctx, key, obj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return obj.GetDeletionTimestamp().IsZero(), nil
}

// getSingletons reads the ClusterIdentity and the DNSConfiguration; nil for one that does not exist.
func getSingletons(ctx context.Context, c client.Reader) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error) {
	identity, err := getIdentity(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	configuration, err := getConfiguration(ctx, c)
	return identity, configuration, err
}

// getIdentity reads the ClusterIdentity singleton from the cache; nil when it does not exist.
func getIdentity(ctx context.Context, c client.Reader) (*clusterv1alpha1.ClusterIdentity, error) {
	ci := &clusterv1alpha1.ClusterIdentity{}
	return getOptional(ctx, c, clusterv1alpha1.ClusterIdentityName, ci)
}

// getConfiguration reads the DNSConfiguration singleton from the cache; nil when it does not exist.
func getConfiguration(ctx context.Context, c client.Reader) (*clusterv1alpha1.DNSConfiguration, error) {
	cfg := &clusterv1alpha1.DNSConfiguration{}
	return getOptional(ctx, c, clusterv1alpha1.DNSConfigurationName, cfg)
}

// getOptional reads a cluster-scoped singleton; nil (not an error) when it does not exist. A
// failed read is an error, never "absent": nothing may be removed on an unreadable input.
func getOptional[T client.Object](ctx context.Context, c client.Reader, name string, obj T) (T, error) {
	var none T
	if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return none, nil
		}
		return none, fmt.Errorf("reading %T %s: %w", obj, name, err)
	}
	return obj, nil
}

// policyInForce returns the oldest DNSPolicy of a namespace, nil when there is none. A namespace
// should have one policy; when it has several, the oldest decides and the others report
// DuplicatePolicy.
func policyInForce(ctx context.Context, c client.Reader, namespace string) (*routingv1alpha1.DNSPolicy, error) {
	list := &routingv1alpha1.DNSPolicyList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing DNSPolicies in %s: %w", namespace, err)
	}
	policies := make([]*routingv1alpha1.DNSPolicy, len(list.Items))
	for i := range list.Items {
		policies[i] = &list.Items[i]
	}
	oldest, _ := plan.Oldest(policies)
	return oldest, nil
}

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch

// ingressService finds the ingress LoadBalancer Service of an Istio ingress controller in the
// ingress namespace a platform chose (see package ingress for the rule); nil when there is none.
// Services of other namespaces are never read.
func ingressService(ctx context.Context, c client.Reader, namespace, controller string) (*corev1.Service, error) {
	list := &corev1.ServiceList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{indexServiceIstio: ingressServiceKey(namespace, controller)}); err != nil {
		return nil, fmt.Errorf("listing ingress Services labelled istio=%s in %s: %w", controller, namespace, err)
	}
	return ingress.SelectService(list.Items), nil
}

// namespaceMetadata is an empty Namespace as the cache holds it: metadata only (labels and the
// router.io/applications annotation, see CacheOptions).
func namespaceMetadata() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
}

// getNamespace reads a namespace's metadata from the cache. A namespace that holds an object the
// operator reconciles exists: when the cache does not show it yet, that is cache lag, never an
// empty set of labels or annotations (which could remove records).
func getNamespace(ctx context.Context, c client.Reader, name string) (*metav1.PartialObjectMetadata, error) {
	ns := namespaceMetadata()
	switch err := c.Get(ctx, client.ObjectKey{Name: name}, ns); {
	case apierrors.IsNotFound(err):
		return nil, errCacheLag
	case err != nil:
		return nil, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	return ns, nil
}

// namespacesListing returns the names of the namespaces whose router.io/applications annotation
// lists application.
func namespacesListing(ctx context.Context, c client.Reader, application string) ([]string, error) {
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NamespaceList"}}
	if err := c.List(ctx, list, client.MatchingFields{indexNamespaceApplication: application}); err != nil {
		return nil, fmt.Errorf("listing namespaces that own application %s: %w", application, err)
	}
	names := make([]string, len(list.Items))
	for i := range list.Items {
		names[i] = list.Items[i].Name
	}
	return names, nil
}

// applicationAllowed reports whether route may use its application in its namespace
// (plan.ApplicationAllowed), with the namespaces read from the cache.
func applicationAllowed(ctx context.Context, c client.Reader, route *routingv1alpha1.ServiceRoute) (bool, error) {
	ns, err := getNamespace(ctx, c, route.Namespace)
	if err != nil {
		return false, err
	}
	listedBy, err := namespacesListing(ctx, c, route.Spec.Application)
	if err != nil {
		return false, err
	}
	allowed, _ := plan.ApplicationAllowed(route.Namespace, route.Spec.Application, ns.Annotations, listedBy)
	return allowed, nil
}

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
