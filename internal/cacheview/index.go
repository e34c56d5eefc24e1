package cacheview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Index is an informer index read in place, for lookups that run for every object (an object's
// generated objects, the objects claiming the same name) or over thousands of objects at once.
// controller-runtime's field indexes store each value twice (per namespace and cluster-wide), so
// that an object with a unique value costs four one-element sets, and a List through them copies
// every object into a new slice. An Index holds each object under one key, and a lookup returns
// the cache's own objects: callers read them and never change them.
//
// Keys that are unique to one object are filed under one of uniqueKeyBuckets hashes of the key
// instead (Has set): client-go keeps a set per index value, and a set of one costs about 200
// bytes, 2 MB per such index at 10,000 objects. A bucket's set is shared by the objects whose keys
// hash alike, and a lookup keeps those that have the key.

// ErrIndexNotReady: the informer behind a lookup has not filled yet (its API just appeared). An
// empty answer would look like "nothing exists"; the reconcile retries instead.
var ErrIndexNotReady = errors.New("the cache of this kind is still filling; retrying")

// Index is one informer index of kind T (see above). Its zero value with the exported fields set
// is ready to Register.
type Index[T client.Object] struct {
	// Name names the index on the informer.
	Name string
	// Keys are the values an object is found under.
	Keys func(T) []string
	// Has, when set, files objects under the bucket of each key and says whether an object of
	// a bucket has the key asked for; for keys that are (nearly) unique to an object.
	Has func(o T, key string) bool
	// NewList makes an empty list of T, for a cache restricted to namespaces (see Register).
	NewList func() client.ObjectList
	source  atomic.Pointer[indexSource[T]]
}

// indexSource answers an index's questions once it is registered.
type indexSource[T client.Object] struct {
	get  func(key string) ([]T, error)
	size func() (int, error)
}

// Register adds the index to the cache's informer of T (creating the informer when needed). A
// cache restricted to namespaces (as the integration tests that share an API server use) has one
// store per namespace behind an informer that exposes none; there the index is a field index,
// read through the cache without copies.
func (x *Index[T]) Register(ctx context.Context, c ctrlcache.Cache, prototype T) error {
	inf, err := c.GetInformer(ctx, prototype)
	if err != nil {
		return fmt.Errorf("getting the informer for index %s: %w", x.Name, err)
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return x.registerField(ctx, c, prototype)
	}
	err = inf.AddIndexers(toolscache.Indexers{x.Name: func(obj any) ([]string, error) {
		if o, ok := obj.(T); ok {
			return x.values(o), nil
		}
		return nil, nil
	}})
	if err != nil {
		return fmt.Errorf("adding index %s: %w", x.Name, err)
	}
	store := shared.GetIndexer()
	x.source.Store(&indexSource[T]{
		get: func(key string) ([]T, error) {
			if !inf.HasSynced() {
				return nil, ErrIndexNotReady
			}
			items, err := store.ByIndex(x.Name, x.Value(key))
			if err != nil {
				return nil, fmt.Errorf("reading index %s: %w", x.Name, err)
			}
			var out []T
			for _, item := range items {
				if o, ok := item.(T); ok && (x.Has == nil || x.Has(o, key)) {
					out = append(out, o)
				}
			}
			return out, nil
		},
		size: func() (int, error) {
			if !inf.HasSynced() {
				return 0, ErrIndexNotReady
			}
			return len(store.ListKeys()), nil
		},
	})
	return nil
}

func (x *Index[T]) registerField(ctx context.Context, c ctrlcache.Cache, prototype T) error {
	err := c.IndexField(ctx, prototype, x.Name, func(o client.Object) []string { return x.values(o.(T)) })
	if err != nil {
		return fmt.Errorf("adding index %s: %w", x.Name, err)
	}
	list := func(opts ...client.ListOption) ([]T, error) {
		return List[T](ctx, c, x.NewList(), opts...)
	}
	x.source.Store(&indexSource[T]{
		get: func(key string) ([]T, error) {
			objs, err := list(client.MatchingFields{x.Name: x.Value(key)})
			if x.Has != nil {
				objs = slices.DeleteFunc(objs, func(o T) bool { return !x.Has(o, key) })
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

// uniqueKeyBuckets is the number of buckets of an index with Has: at 10,000 objects about 40
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

// Value is the index value key is filed under: the key, or its bucket (FNV-1a).
func (x *Index[T]) Value(key string) string {
	if x.Has == nil {
		return key
	}
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * 16777619
	}
	return bucketNames[h%uniqueKeyBuckets]
}

// values are the index values of o.
func (x *Index[T]) values(o T) []string {
	keys := x.Keys(o)
	for i, k := range keys {
		keys[i] = x.Value(k)
	}
	return keys
}

// Get returns the cache's objects indexed under key. They are shared: read them, never change
// them.
func (x *Index[T]) Get(key string) ([]T, error) {
	src := x.source.Load()
	if src == nil {
		return nil, ErrIndexNotReady
	}
	return src.get(key)
}

// Size is the number of objects of kind T in the cache.
func (x *Index[T]) Size() (int, error) {
	src := x.source.Load()
	if src == nil {
		return 0, ErrIndexNotReady
	}
	return src.size()
}
