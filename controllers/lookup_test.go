package controllers

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	"github.com/service-router/service-router-operator/internal/naming"
)

// storeOf backs an index with a client-go store, as register does with the informer's.
func storeOf(t *testing.T, x *objectIndex[*externaldnsv1alpha1.DNSEndpoint], synced *bool, objs ...*externaldnsv1alpha1.DNSEndpoint) toolscache.Indexer {
	t.Helper()
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	for _, o := range objs {
		require.NoError(t, store.Add(o))
	}
	informer := &storeInformer{SharedIndexInformer: toolscache.NewSharedIndexInformer(nil, &externaldnsv1alpha1.DNSEndpoint{}, 0, toolscache.Indexers{}), store: store, synced: synced}
	require.NoError(t, x.register(context.Background(), informerCache{informer: informer}, &externaldnsv1alpha1.DNSEndpoint{}))
	return store
}

// storeInformer is an informer over a store filled by the test.
type storeInformer struct {
	toolscache.SharedIndexInformer
	store  toolscache.Indexer
	synced *bool
}

func (s *storeInformer) GetIndexer() toolscache.Indexer { return s.store }
func (s *storeInformer) HasSynced() bool                { return *s.synced }
func (s *storeInformer) AddIndexers(indexers toolscache.Indexers) error {
	return s.store.AddIndexers(indexers)
}

// informerCache hands out one informer.
type informerCache struct {
	ctrlcache.Cache
	informer ctrlcache.Informer
}

func (c informerCache) GetInformer(context.Context, client.Object, ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	return c.informer, nil
}

func TestObjectIndex_ReturnsTheCachedObjectsOfOneKeyOnlyOnceFilled(t *testing.T) {
	endpoint := func(ns, name, route string) *externaldnsv1alpha1.DNSEndpoint {
		return &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{naming.LabelServiceRoute: route}}}
	}
	x := &newLookups().endpointsByRoute
	// A route whose key shares the bucket of app/api: its DNSEndpoint is filed with api's.
	sharing := ""
	for i := 0; sharing == ""; i++ {
		if name := fmt.Sprintf("r%d", i); x.value(routeKey("app", name)) == x.value("app/api") {
			sharing = name
		}
	}
	weu, neu := endpoint("app", "api-weu", "api"), endpoint("app", "api-neu", "api")
	other, elsewhere := endpoint("app", "web-weu", "web"), endpoint("team", "api-weu", "api")
	sameBucket := endpoint("app", sharing+"-weu", sharing)

	_, err := x.get("app/api")
	assert.ErrorIs(t, err, errIndexNotReady, "not registered yet (the DNSEndpoint API is not served)")

	synced := false
	store := storeOf(t, x, &synced, weu, neu, other, elsewhere, sameBucket)
	_, err = x.get("app/api")
	assert.ErrorIs(t, err, errIndexNotReady, "an empty answer from a filling cache would read as 'no records'")
	_, err = x.size()
	assert.ErrorIs(t, err, errIndexNotReady)

	synced = true
	got, err := x.get("app/api")
	require.NoError(t, err)
	assert.ElementsMatch(t, []*externaldnsv1alpha1.DNSEndpoint{weu, neu}, got, "the cache's own objects, not copies, of that route in that namespace, not of another route of its bucket")
	shared, err := x.get(routeKey("app", sharing))
	require.NoError(t, err)
	assert.Equal(t, []*externaldnsv1alpha1.DNSEndpoint{sameBucket}, shared)
	none, err := x.get("app/missing")
	require.NoError(t, err)
	assert.Empty(t, none)
	n, err := x.size()
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	values := store.ListIndexFuncValues(x.name)
	assert.LessOrEqual(t, len(values), 4, "at most one index value per route, none doubled per namespace")
	for _, v := range values {
		assert.Contains(t, bucketNames, v, "routes are filed under buckets, not a set of their own each")
	}
}
