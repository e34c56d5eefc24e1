package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/ownwrite"
	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
)

// The write step is tested on ConfigMaps judged by a label: "owner: us" is ours, "adopt: yes" is
// marked for adoption, anything else is somebody else's.
var configMapKind = apply.Kind[*corev1.ConfigMap]{
	Name: "ConfigMap",
	Ownership: func(cm *corev1.ConfigMap) apply.Ownership {
		switch {
		case cm.Labels["owner"] == "us":
			return apply.Owned
		case cm.Labels["adopt"] == "yes":
			return apply.Adoptable
		}
		return apply.Foreign
	},
	UpToDate: func(current, desired *corev1.ConfigMap) bool { return current.Data["v"] == desired.Data["v"] },
	Merge: func(current, desired *corev1.ConfigMap) *corev1.ConfigMap {
		merged := current.DeepCopy()
		merged.Labels = desired.Labels
		merged.Data = desired.Data
		return merged
	},
}

func configMap(name, value string, labels map[string]string) *corev1.ConfigMap {
	// The API server gives every object a UID; the fake one keeps the one it is given.
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, UID: types.UID(name + "-" + value), Labels: labels},
		Data: map[string]string{"v": value}}
}

func ours(name, value string) *corev1.ConfigMap {
	return configMap(name, value, map[string]string{"owner": "us"})
}

// clientWriter sends the write step's creates and updates through a client, as ownwrite.Writer
// does through the API server.
type clientWriter struct{ client.Client }

func (w clientWriter) Create(ctx context.Context, obj client.Object) error {
	return w.Client.Create(ctx, obj)
}
func (w clientWriter) Update(ctx context.Context, obj client.Object) error {
	return w.Client.Update(ctx, obj)
}
func (w clientWriter) PatchStatus(context.Context, client.Object, any, any, string) (string, error) {
	panic("the write step writes no status")
}

// writeWorld is a fake API server holding objs, with the write step's dependencies around it.
func writeWorld(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) (base, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(operatorscheme.New()).WithObjects(objs...).WithInterceptorFuncs(funcs).Build()
	return base{Client: c, APIReader: c, Writer: clientWriter{c}, Recorder: &eventLog{}, Versions: ownwrite.NewVersions(), Cached: cacheOver(c)}, c
}

// live reads what the fake API server holds (nil: nothing of that name).
func live(t *testing.T, c client.Client, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: name}, cm); apierrors.IsNotFound(err) {
		return nil
	} else {
		require.NoError(t, err)
	}
	return cm
}

// current is what the cache would hold: the API server's copies.
func current(t *testing.T, c client.Client, names ...string) []*corev1.ConfigMap {
	var out []*corev1.ConfigMap
	for _, n := range names {
		out = append(out, live(t, c, n))
	}
	return out
}

// silent is the notice of a write step whose events go nowhere.
var silent = core.Notice[*corev1.ConfigMap]{Describe: func(*corev1.ConfigMap) string { return "" }}

func TestApplyChanges_CreatesUpdatesAndDeletesOnlyWhatIsOurs(t *testing.T) {
	w, c := writeWorld(t, interceptor.Funcs{}, ours("changed", "old"), ours("stale", "x"), ours("same", "1"))
	before := live(t, c, "changed")
	want := []*corev1.ConfigMap{ours("new", "1"), ours("changed", "new"), ours("same", "1")}
	out, err := applyChanges(context.Background(), w, configMapKind, want, current(t, c, "changed", "stale", "same"),
		core.Notice[*corev1.ConfigMap]{Target: &corev1.Namespace{}, Reason: "Test", Describe: func(cm *corev1.ConfigMap) string { return cm.Data["v"] }})
	require.NoError(t, err)
	assert.Len(t, out.Applied, 3)
	assert.Empty(t, out.Conflicts)
	assert.NotNil(t, live(t, c, "new"))
	after := live(t, c, "changed")
	assert.Equal(t, "new", after.Data["v"])
	assert.Equal(t, before.UID, after.UID, "updated in place")
	assert.Nil(t, live(t, c, "stale"), "ours and no longer wanted")
	assert.Equal(t, []recordedEvent{
		{"Normal", "Test", "Update", "updated ConfigMap app/changed: new"},
		{"Normal", "Test", "Create", "created ConfigMap app/new: 1"},
		{"Normal", "Test", "Delete", "deleted ConfigMap app/stale: x"},
	}, w.Recorder.(*eventLog).events)
}

func TestApplyChanges_ANameTakenByAnotherIsAConflictAndLeftAlone(t *testing.T) {
	foreign := configMap("api", "theirs", map[string]string{"team": "b"})
	w, c := writeWorld(t, interceptor.Funcs{}, foreign)
	// The cache holds only managed objects: the foreign one is not among the current ones.
	out, err := applyChanges(context.Background(), w, configMapKind, []*corev1.ConfigMap{ours("api", "1")}, nil, silent)
	require.NoError(t, err)
	assert.Equal(t, []apply.Conflict{{Key: "app/api", Why: "ConfigMap exists and is not managed by this owner"}}, out.Conflicts)
	assert.Empty(t, out.Applied)
	assert.Equal(t, "theirs", live(t, c, "api").Data["v"], "untouched")
	assert.Equal(t, requeue{conflict: true}, requeueOf(out.Result("ConfigMap", "Test")), "looked at again: the foreign object's deletion raises no event")
}

func TestApplyChanges_AnObjectMarkedForAdoptionIsTakenOverInPlace(t *testing.T) {
	marked := configMap("api", "theirs", map[string]string{"adopt": "yes"})
	w, c := writeWorld(t, interceptor.Funcs{}, marked)
	uid := live(t, c, "api").UID
	out, err := applyChanges(context.Background(), w, configMapKind, []*corev1.ConfigMap{ours("api", "1")}, nil, silent)
	require.NoError(t, err)
	assert.Empty(t, out.Conflicts)
	adopted := live(t, c, "api")
	assert.Equal(t, uid, adopted.UID, "the same object, no record gap")
	assert.Equal(t, "us", adopted.Labels["owner"])
}

func TestApplyChanges_CacheLagIsARetryNotAConflict(t *testing.T) {
	t.Run("our own object the cache does not show yet", func(t *testing.T) {
		w, c := writeWorld(t, interceptor.Funcs{}, ours("api", "1"))
		out, err := applyChanges(context.Background(), w, configMapKind, []*corev1.ConfigMap{ours("api", "1")}, nil, silent)
		assert.ErrorIs(t, err, errCacheLag)
		assert.Empty(t, out.Conflicts)
		assert.NotNil(t, live(t, c, "api"))
	})
	t.Run("an update meeting a newer version", func(t *testing.T) {
		conflict := interceptor.Funcs{Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			return conflictError()
		}}
		w, c := writeWorld(t, conflict, ours("api", "old"))
		_, err := applyChanges(context.Background(), w, configMapKind, []*corev1.ConfigMap{ours("api", "new")}, current(t, c, "api"), silent)
		assert.True(t, isOnly(err, errCacheLag), "a short retry, not a failure: %v", err)
	})
	t.Run("a copy our last write replaced", func(t *testing.T) {
		writes := 0
		counting := interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				writes++
				return c.Create(ctx, obj, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				writes++
				return c.Delete(ctx, obj, opts...)
			},
		}
		w, c := writeWorld(t, counting, ours("api", "old"))
		stale := current(t, c, "api")
		w.Versions.Writing(stale[0].UID, stale[0].ResourceVersion)
		w.Versions.Wrote(stale[0].UID, stale[0].ResourceVersion, stale[0].ResourceVersion+"0") // our write made a newer one
		_, err := applyChanges(context.Background(), w, configMapKind, []*corev1.ConfigMap{ours("web", "1")}, stale, silent)
		assert.ErrorIs(t, err, errCacheLag)
		assert.Zero(t, writes, "nothing decided from a copy the API server no longer has")
	})
	t.Run("a copy the cache no longer holds, as desired", func(t *testing.T) {
		w, c := writeWorld(t, interceptor.Funcs{}, ours("api", "1"))
		read := current(t, c, "api")
		// Our previous write's event arrives meanwhile and is dropped as an echo: nothing will
		// run this reconcile again, and the copy it read says the object is already as desired.
		moved := live(t, c, "api")
		moved.Data["v"] = "2"
		require.NoError(t, c.Update(context.Background(), moved))
		_, err := applyChanges(context.Background(), w, configMapKind, []*corev1.ConfigMap{ours("api", "1")}, read, silent)
		assert.ErrorIs(t, err, errCacheLag, "looked at again, not left as it is")
		assert.Equal(t, "2", live(t, c, "api").Data["v"])
	})
}

func TestApplyChanges_HeldDeletionsKeepTheObject(t *testing.T) {
	w, c := writeWorld(t, interceptor.Funcs{}, ours("stale", "x"))
	w.Deletions = guard.New(guard.Settings{Share: 1, Window: time.Minute, Observe: time.Minute, Grace: time.Minute}, func() int { return 1 }, nil)
	out, err := applyChanges(context.Background(), w, configMapKind, nil, current(t, c, "stale"), silent)
	require.NoError(t, err)
	assert.NotNil(t, live(t, c, "stale"), "held, not deleted")
	assert.WithinDuration(t, time.Now().Add(time.Minute), out.HeldUntil, 5*time.Second)
	assert.Equal(t, requeue{at: out.HeldUntil}, requeueOf(out.Result("ConfigMap", "Test")), "looked at again when the deletion may proceed")
}
