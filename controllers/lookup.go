package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/plan"
)

// The lookups that run for every route (its DNSEndpoints, the routes claiming its hostname) or
// over every route of a Gateway read informer indexes in place instead of going through
// controller-runtime's field indexes. Those store each value twice (per namespace and
// cluster-wide), so that a route with a unique value costs four one-element sets, and a List
// through them copies every object into a new slice (a Gateway's 10,000 routes on each of its
// reconciles). An index here holds each object under one key, and a lookup returns the cache's
// own objects: callers read them and never change them.
//
// Keys that are unique to one object (a route's hostname, a route's DNSEndpoints) are filed under
// one of uniqueKeyBuckets hashes of the key instead: client-go keeps a set per index value, and
// a set of one costs about 200 bytes, 2 MB per such index at 10,000 routes. A bucket's set is
// shared by the objects whose keys hash alike, and a lookup keeps those that have the key.

// errIndexNotReady: the informer behind a lookup has not filled yet (its API just appeared). An
// empty answer would look like "nothing exists"; the reconcile retries instead.
var errIndexNotReady = errors.New("the cache of this kind is still filling; retrying")

// objectIndex is one informer index of kind T.
type objectIndex[T client.Object] struct {
	name string
	// keys are the values an object is found under.
	keys func(T) []string
	// has, when set, files objects under the bucket of each key and says whether an object of
	// a bucket has the key asked for; for keys that are (nearly) unique to an object.
	has func(o T, key string) bool
	// newList makes an empty list of T, for a cache restricted to namespaces (see register).
	newList func() client.ObjectList
	source  atomic.Pointer[indexSource[T]]
}

// indexSource answers an index's questions once it is registered.
type indexSource[T client.Object] struct {
	get  func(key string) ([]T, error)
	size func() (int, error)
}

// register adds the index to the cache's informer of T (creating the informer when needed). A
// cache restricted to namespaces (as the integration tests that share an API server use) has one
// store per namespace behind an informer that exposes none; there the index is a field index,
// read through the cache without copies.
func (x *objectIndex[T]) register(ctx context.Context, c ctrlcache.Cache, prototype T) error {
	inf, err := c.GetInformer(ctx, prototype)
	if err != nil {
		return fmt.Errorf("getting the informer for index %s: %w", x.name, err)
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return x.registerField(ctx, c, prototype)
	}
	err = inf.AddIndexers(toolscache.Indexers{x.name: func(obj any) ([]string, error) {
		if o, ok := obj.(T); ok {
			return x.values(o), nil
		}
		return nil, nil
	}})
	if err != nil {
		return fmt.Errorf("adding index %s: %w", x.name, err)
	}
	store := shared.GetIndexer()
	x.source.Store(&indexSource[T]{
		get: func(key string) ([]T, error) {
			if !inf.HasSynced() {
				return nil, errIndexNotReady
			}
			items, err := store.ByIndex(x.name, x.value(key))
			if err != nil {
				return nil, fmt.Errorf("reading index %s: %w", x.name, err)
			}
			var out []T
			for _, item := range items {
				if o, ok := item.(T); ok && (x.has == nil || x.has(o, key)) {
					out = append(out, o)
				}
			}
			return out, nil
		},
		size: func() (int, error) {
			if !inf.HasSynced() {
				return 0, errIndexNotReady
			}
			return len(store.ListKeys()), nil
		},
	})
	return nil
}

func (x *objectIndex[T]) registerField(ctx context.Context, c ctrlcache.Cache, prototype T) error {
	err := c.IndexField(ctx, prototype, x.name, func(o client.Object) []string { return x.values(o.(T)) })
	if err != nil {
		return fmt.Errorf("adding index %s: %w", x.name, err)
	}
	list := func(opts ...client.ListOption) ([]T, error) {
		return cacheview.List[T](ctx, c, x.newList(), opts...)
	}
	x.source.Store(&indexSource[T]{
		get: func(key string) ([]T, error) {
			objs, err := list(client.MatchingFields{x.name: x.value(key)})
			if x.has != nil {
				objs = slices.DeleteFunc(objs, func(o T) bool { return !x.has(o, key) })
			}
			return objs, err
		},
		size: func() (int, error) {
			all, err := list()
			return len(all), err
		},
	})
	return nil
}

// uniqueKeyBuckets is the number of buckets of an index with has: at 10,000 routes about 40
// objects share one, which a lookup compares in a microsecond.
const uniqueKeyBuckets = 256

// bucketNames are the index values of the buckets, made once.
var bucketNames = func() []string {
	names := make([]string, uniqueKeyBuckets)
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	return names
}()

// value is the index value key is filed under: the key, or its bucket (FNV-1a).
func (x *objectIndex[T]) value(key string) string {
	if x.has == nil {
		return key
	}
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return bucketNames[h%uniqueKeyBuckets]
}

// values are the index values of o.
func (x *objectIndex[T]) values(o T) []string {
	keys := x.keys(o)
	for i, k := range keys {
		keys[i] = x.value(k)
	}
	return keys
}

// get returns the cache's objects indexed under key. They are shared: read them, never change
// them.
func (x *objectIndex[T]) get(key string) ([]T, error) {
	src := x.source.Load()
	if src == nil {
		return nil, errIndexNotReady
	}
	return src.get(key)
}

// size is the number of objects of kind T in the cache.
func (x *objectIndex[T]) size() (int, error) {
	src := x.source.Load()
	if src == nil {
		return 0, errIndexNotReady
	}
	return src.size()
}

// lookups are the per-manager indexes read in place.
type lookups struct {
	// routesByGateway: ServiceRoutes by the namespace/name of the Gateway they reference.
	routesByGateway objectIndex[*routingv1alpha1.ServiceRoute]
	// routesByHostname: ServiceRoutes by naming.HostnameKey, for hostname claims.
	routesByHostname objectIndex[*routingv1alpha1.ServiceRoute]
	// endpointsByRoute: managed DNSEndpoints by the namespace/name of their ServiceRoute.
	endpointsByRoute objectIndex[*externaldnsv1alpha1.DNSEndpoint]
}

func newLookups() *lookups {
	return &lookups{
		routesByGateway: objectIndex[*routingv1alpha1.ServiceRoute]{name: "serviceroute.gatewayRef", newList: newRouteList, keys: func(r *routingv1alpha1.ServiceRoute) []string {
			return []string{plan.GatewayRef(r).String()}
		}},
		routesByHostname: objectIndex[*routingv1alpha1.ServiceRoute]{name: "serviceroute.hostnameKey", newList: newRouteList, keys: func(r *routingv1alpha1.ServiceRoute) []string {
			return []string{naming.HostnameKey(r.Spec.ServiceName, r.Spec.Environment, r.Spec.Application)}
		}, has: func(r *routingv1alpha1.ServiceRoute, key string) bool {
			return naming.IsHostnameKey(key, r.Spec.ServiceName, r.Spec.Environment, r.Spec.Application)
		}},
		endpointsByRoute: objectIndex[*externaldnsv1alpha1.DNSEndpoint]{name: "dnsendpoint.serviceRoute", newList: newEndpointList, keys: func(ep *externaldnsv1alpha1.DNSEndpoint) []string {
			if route := ep.Labels[naming.LabelServiceRoute]; route != "" {
				return []string{routeKey(ep.Namespace, route)}
			}
			return nil
		}, has: func(ep *externaldnsv1alpha1.DNSEndpoint, key string) bool {
			namespace, route, _ := strings.Cut(key, "/")
			return ep.Namespace == namespace && ep.Labels[naming.LabelServiceRoute] == route
		}},
	}
}

// register adds the indexes to the manager's cache; those on DNSEndpoints once their API is
// served (see addIndexes).
func (l *lookups) register(ctx context.Context, c ctrlcache.Cache, apis *OptionalAPIs) error {
	if err := l.routesByGateway.register(ctx, c, &routingv1alpha1.ServiceRoute{}); err != nil {
		return err
	}
	if err := l.routesByHostname.register(ctx, c, &routingv1alpha1.ServiceRoute{}); err != nil {
		return err
	}
	return apis.WhenServed(dnsEndpointKind, func() error {
		return l.endpointsByRoute.register(ctx, c, &externaldnsv1alpha1.DNSEndpoint{})
	})
}

func newRoute() *routingv1alpha1.ServiceRoute       { return &routingv1alpha1.ServiceRoute{} }
func newRouteList() client.ObjectList               { return &routingv1alpha1.ServiceRouteList{} }
func newEndpoint() *externaldnsv1alpha1.DNSEndpoint { return &externaldnsv1alpha1.DNSEndpoint{} }
func newEndpointList() client.ObjectList            { return &externaldnsv1alpha1.DNSEndpointList{} }

// routeKey is the index value of the objects of the route namespace/name.
func routeKey(namespace, name string) string { return namespace + "/" + name }
