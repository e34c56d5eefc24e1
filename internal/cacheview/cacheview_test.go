package cacheview

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// storeInformer is an informer over a store the test fills, as the manager's informers are.
type storeInformer struct {
	toolscache.SharedIndexInformer
	store toolscache.Indexer
}

func (s storeInformer) GetIndexer() toolscache.Indexer { return s.store }

// oneInformerCache hands out one informer; its client reads fail, so that a read that went
// through them (with their copies) shows.
type oneInformerCache struct {
	ctrlcache.Cache
	informer ctrlcache.Informer
}

func (c oneInformerCache) GetInformer(context.Context, client.Object, ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	return c.informer, nil
}

func (c oneInformerCache) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return assert.AnError
}

func (c oneInformerCache) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return assert.AnError
}

func route(namespace, name string) *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
		Labels: map[string]string{"team": namespace}}, Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: name}}
}

func cacheOf(t *testing.T, objs ...*routingv1alpha1.ServiceRoute) ctrlcache.Cache {
	t.Helper()
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		require.NoError(t, store.Add(o))
	}
	informer := storeInformer{SharedIndexInformer: toolscache.NewSharedIndexInformer(nil, &routingv1alpha1.ServiceRoute{}, 0, toolscache.Indexers{}), store: store}
	return oneInformerCache{informer: informer}
}

func newRoute() *routingv1alpha1.ServiceRoute { return &routingv1alpha1.ServiceRoute{} }
func newRouteList() client.ObjectList         { return &routingv1alpha1.ServiceRouteList{} }
func newGatewayList() client.ObjectList       { return &routingv1alpha1.GatewayList{} }
func newGateway() *routingv1alpha1.Gateway    { return &routingv1alpha1.Gateway{} }
func keysOf(objs []*routingv1alpha1.ServiceRoute) (keys []string) {
	for _, o := range objs {
		keys = append(keys, o.Namespace+"/"+o.Name)
	}
	return keys
}

func TestAll_ReturnsTheCachedObjectsThemselves(t *testing.T) {
	api, web, other := route("app", "api"), route("app", "web"), route("team", "api")
	c := cacheOf(t, api, web, other)

	all, err := All(context.Background(), c, newRoute, newRouteList, "")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"app/api", "app/web", "team/api"}, keysOf(all))
	for _, o := range all {
		assert.Contains(t, []*routingv1alpha1.ServiceRoute{api, web, other}, o, "the cache's own object, not a copy")
	}

	inApp, err := All(context.Background(), c, newRoute, newRouteList, "app")
	require.NoError(t, err)
	assert.ElementsMatch(t, []*routingv1alpha1.ServiceRoute{api, web}, inApp, "one namespace, through its index")

	gateways, err := All(context.Background(), c, newGateway, newGatewayList, "")
	require.NoError(t, err)
	assert.Empty(t, gateways, "objects of another kind are never handed out as T")
}

func TestReader_GetFillsAShallowCopyOrNotFound(t *testing.T) {
	api := route("app", "api")
	r := Reader{Cache: cacheOf(t, api)}

	got := &routingv1alpha1.ServiceRoute{}
	require.NoError(t, r.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "api"}, got))
	assert.Equal(t, api, got)
	assert.NotSame(t, api, got, "the struct is copied: the caller's object is its own")
	api.Labels["shared"] = "yes"
	assert.Equal(t, "yes", got.Labels["shared"], "its maps are the cache's (no deep copy): read them, never change them")

	err := r.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "missing"}, &routingv1alpha1.ServiceRoute{})
	assert.True(t, apierrors.IsNotFound(err), "a missing object is NotFound, as from the cache's client: %v", err)

	err = r.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "api"}, &routingv1alpha1.Gateway{})
	assert.Error(t, err, "an object of another type is not filled")
}

func TestReader_VersionIsTheCachedObjectsOwn(t *testing.T) {
	api := route("app", "api")
	api.ResourceVersion = "7"
	r := Reader{Cache: cacheOf(t, api)}

	earlier := api.DeepCopy()
	earlier.ResourceVersion = "6"
	version, err := r.Version(context.Background(), earlier)
	require.NoError(t, err)
	assert.Equal(t, "7", version, "the version the cache holds now, not the copy's")

	version, err = r.Version(context.Background(), route("app", "missing"))
	require.NoError(t, err)
	assert.Empty(t, version, "none held")
}

// A cache restricted to namespaces has no single store: reads go through its client.
func TestReadsFallBackToTheCacheClientWithoutASingleStore(t *testing.T) {
	c := oneInformerCache{informer: nil}
	_, err := All(context.Background(), c, newRoute, newRouteList, "")
	assert.ErrorIs(t, err, assert.AnError)
	err = Reader{Cache: c}.Get(context.Background(), client.ObjectKey{Name: "x"}, &routingv1alpha1.ServiceRoute{})
	assert.ErrorIs(t, err, assert.AnError)
	_, err = Reader{Cache: c}.Version(context.Background(), route("app", "x"))
	assert.ErrorIs(t, err, assert.AnError)
}
