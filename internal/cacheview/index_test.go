package cacheview

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// storeOf backs an index with a client-go store, as Register does with the informer's.
func storeOf(t *testing.T, x *Index[*corev1.ConfigMap], synced *bool, objs ...*corev1.ConfigMap) toolscache.Indexer {
	t.Helper()
	store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{})
	for _, o := range objs {
		require.NoError(t, store.Add(o))
	}
	informer := &fillingInformer{SharedIndexInformer: toolscache.NewSharedIndexInformer(nil, &corev1.ConfigMap{}, 0, toolscache.Indexers{}), store: store, synced: synced}
	require.NoError(t, x.Register(context.Background(), oneInformerCache{informer: informer}, &corev1.ConfigMap{}))
	return store
}

// fillingInformer is an informer over a store the test fills, which says whether it has synced
// and takes the indexes an Index adds.
type fillingInformer struct {
	toolscache.SharedIndexInformer
	store  toolscache.Indexer
	synced *bool
}

func (s *fillingInformer) GetIndexer() toolscache.Indexer { return s.store }
func (s *fillingInformer) HasSynced() bool                { return *s.synced }
func (s *fillingInformer) AddIndexers(indexers toolscache.Indexers) error {
	return s.store.AddIndexers(indexers)
}

// ownerIndex files ConfigMaps under "namespace/owner label", a key nearly unique to each owner,
// as the operator files DNSEndpoints under their route.
func ownerIndex() *Index[*corev1.ConfigMap] {
	return &Index[*corev1.ConfigMap]{Name: "configmap.owner", NewList: func() client.ObjectList { return &corev1.ConfigMapList{} },
		Keys: func(cm *corev1.ConfigMap) []string {
			if owner := cm.Labels["owner"]; owner != "" {
				return []string{cm.Namespace + "/" + owner}
			}
			return nil
		},
		Has: func(cm *corev1.ConfigMap, key string) bool {
			namespace, owner, _ := strings.Cut(key, "/")
			return cm.Namespace == namespace && cm.Labels["owner"] == owner
		}}
}

func TestIndex_ReturnsTheCachedObjectsOfOneKeyOnlyOnceFilled(t *testing.T) {
	object := func(ns, name, owner string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"owner": owner}}}
	}
	x := ownerIndex()
	// An owner whose key shares the bucket of app/api: its object is filed with api's.
	sharing := ""
	for i := 0; sharing == ""; i++ {
		if name := fmt.Sprintf("r%d", i); x.Value("app/"+name) == x.Value("app/api") {
			sharing = name
		}
	}
	weu, neu := object("app", "api-weu", "api"), object("app", "api-neu", "api")
	other, elsewhere := object("app", "web-weu", "web"), object("team", "api-weu", "api")
	sameBucket := object("app", sharing+"-weu", sharing)

	_, err := x.Get("app/api")
	assert.ErrorIs(t, err, ErrIndexNotReady, "not registered yet (the kind's API is not served)")

	synced := false
	store := storeOf(t, x, &synced, weu, neu, other, elsewhere, sameBucket)
	_, err = x.Get("app/api")
	assert.ErrorIs(t, err, ErrIndexNotReady, "an empty answer from a filling cache would read as 'nothing exists'")
	_, err = x.Size()
	assert.ErrorIs(t, err, ErrIndexNotReady)

	synced = true
	got, err := x.Get("app/api")
	require.NoError(t, err)
	assert.ElementsMatch(t, []*corev1.ConfigMap{weu, neu}, got, "the cache's own objects, not copies, of that owner in that namespace, not of another owner of its bucket")
	shared, err := x.Get("app/" + sharing)
	require.NoError(t, err)
	assert.Equal(t, []*corev1.ConfigMap{sameBucket}, shared)
	none, err := x.Get("app/missing")
	require.NoError(t, err)
	assert.Empty(t, none)
	n, err := x.Size()
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	values := store.ListIndexFuncValues(x.Name)
	assert.LessOrEqual(t, len(values), 4, "at most one index value per owner, none doubled per namespace")
	for _, v := range values {
		assert.Contains(t, bucketNames, v, "owners are filed under buckets, not a set of their own each")
	}
}

func TestIndex_WithoutHasFilesEveryKeyUnderItself(t *testing.T) {
	x := &Index[*corev1.ConfigMap]{Name: "configmap.team", Keys: func(cm *corev1.ConfigMap) []string { return []string{cm.Labels["team"]} }}
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "a", Labels: map[string]string{"team": "blue"}}}
	b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "y", Name: "b", Labels: map[string]string{"team": "blue"}}}
	synced := true
	store := storeOf(t, x, &synced, a, b)
	got, err := x.Get("blue")
	require.NoError(t, err)
	assert.ElementsMatch(t, []*corev1.ConfigMap{a, b}, got, "a shared key finds every object, across namespaces")
	assert.Equal(t, []string{"blue"}, store.ListIndexFuncValues(x.Name), "the key itself is the index value")
}
