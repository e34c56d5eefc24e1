// Package cacheview reads controller-runtime's informer cache without copying it.
//
// A read through the cache's client copies: Get deep-copies the object, List builds a new slice
// of object structs (and deep-copies each one unless told not to). A reader that walks every
// route at once (a metrics scrape, a domain change fanning out) or reads the same few objects on
// every reconcile (the singletons, the namespace's policy, the Gateway) spends most of its
// allocations on those copies, and while a copy of every route is being built it is live heap:
// at 10,000 routes a scrape built about 12 MB. The readers here hand out the cache's own objects
// or shallow copies of them, which share their maps and slices with the cache: read them, never
// change them.
//
// A cache restricted to a set of namespaces keeps one store per namespace behind an informer
// that exposes none; there every read falls back to the cache's client, with its copies.
package cacheview

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// store returns the single store behind the informer of obj's kind, once it has synced; nil
// when the cache has none (restricted to namespaces). Like the cache's client, it waits for the
// informer to sync (bounded by ctx).
func store(ctx context.Context, c ctrlcache.Cache, obj client.Object) (toolscache.Indexer, error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, err
	}
	shared, ok := inf.(toolscache.SharedIndexInformer)
	if !ok {
		return nil, nil
	}
	return shared.GetIndexer(), nil
}

// All returns every cached object of T's kind, in namespace when it is not empty. They are the
// cache's own objects: read them, never change them. newObj and newList make an empty object
// and list of the kind.
func All[T client.Object](ctx context.Context, c ctrlcache.Cache, newObj func() T, newList func() client.ObjectList, namespace string) ([]T, error) {
	s, err := store(ctx, c, newObj())
	if err != nil {
		return nil, err
	}
	if s == nil {
		var opts []client.ListOption
		if namespace != "" {
			opts = append(opts, client.InNamespace(namespace))
		}
		return List[T](ctx, c, newList(), opts...)
	}
	var items []any
	if namespace == "" {
		items = s.List()
	} else if items, err = s.ByIndex(toolscache.NamespaceIndex, namespace); err != nil {
		return nil, fmt.Errorf("reading the namespace index: %w", err)
	}
	out := make([]T, 0, len(items))
	for _, item := range items {
		if o, ok := item.(T); ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// List lists the cached objects matching opts through the cache's client, without deep copies,
// and returns pointers to the list's items: shallow copies whose maps and slices are the cache's.
func List[T client.Object](ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) ([]T, error) {
	if err := c.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil, err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// Reader is a client.Reader over the cache whose Get fills obj with a shallow copy of the cached
// object: its maps, slices and pointers are the cache's (read obj, never change it), and only
// the top-level struct is copied. List reads without deep copies the same way. Use it for
// inputs a reconcile only reads; read what it changes through the cache's client.
type Reader struct {
	Cache ctrlcache.Cache
}

// Get fills obj with a shallow copy of the cached object named key. A missing object is a
// NotFound error, as from the cache's client.
func (r Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, err := store(ctx, r.Cache, obj)
	if err != nil {
		return err
	}
	if s == nil {
		return r.Cache.Get(ctx, key, obj, opts...)
	}
	item, exists, err := s.GetByKey(storeKey(key))
	if err != nil {
		return fmt.Errorf("reading %s from the cache: %w", storeKey(key), err)
	}
	if !exists {
		return apierrors.NewNotFound(schema.GroupResource{Resource: fmt.Sprintf("%T", obj)}, key.Name)
	}
	dst, src := reflect.ValueOf(obj), reflect.ValueOf(item)
	if dst.Type() != src.Type() {
		return fmt.Errorf("the cache holds %T for %s, not %T", item, storeKey(key), obj)
	}
	// The GVK the object was asked as is kept: cached objects carry no type metadata.
	gvk := obj.GetObjectKind().GroupVersionKind()
	dst.Elem().Set(src.Elem())
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// Version returns the resourceVersion of the object the cache now holds under obj's namespace and
// name, read in place; "" when it holds none. It tells whether a copy read earlier is still the
// cache's.
func (r Reader) Version(ctx context.Context, obj client.Object) (string, error) {
	key := client.ObjectKeyFromObject(obj)
	s, err := store(ctx, r.Cache, obj)
	if err != nil {
		return "", err
	}
	if s == nil {
		cached := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(client.Object)
		if err := r.Cache.Get(ctx, key, cached); err != nil {
			return "", client.IgnoreNotFound(err)
		}
		return cached.GetResourceVersion(), nil
	}
	item, exists, err := s.GetByKey(storeKey(key))
	if err != nil || !exists {
		return "", err
	}
	cached, ok := item.(metav1.Object)
	if !ok {
		return "", fmt.Errorf("the cache holds %T for %s, not an object", item, storeKey(key))
	}
	return cached.GetResourceVersion(), nil
}

// storeKey is the key of the object named key in an informer's store.
func storeKey(key client.ObjectKey) string {
	if key.Namespace == "" {
		return key.Name
	}
	return key.Namespace + "/" + key.Name
}

// List reads the cached objects matching opts into list without deep copies (see Reader).
func (r Reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Cache.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...)
}

var _ client.Reader = Reader{}
