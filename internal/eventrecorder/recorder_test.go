package eventrecorder

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
)

func service(name string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", UID: "uid-" + types.UID(name)}}
}

// drain sends everything queued (the senders are not started in these tests).
func drain(r *Recorder) {
	for {
		select {
		case ev := <-r.queue:
			r.send(context.Background(), ev)
		default:
			return
		}
	}
}

func newRecorder(t *testing.T, s Settings) (*Recorder, *fake.Clientset, *time.Time) {
	cs := fake.NewClientset()
	r := New(cs.EventsV1(), clientgoscheme.Scheme, "service-router-operator", s)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	r.now = func() time.Time { return now }
	return r, cs, &now
}

func actions(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		out = append(out, a.GetVerb())
	}
	return out
}

func TestRecorder_EventSaysWhatAndAboutWhat(t *testing.T) {
	r, cs, _ := newRecorder(t, DefaultSettings)
	r.Eventf(service("api"), service("related"), "Normal", "GatewayCreated", "Create", "created %s", "it")
	drain(r)
	list, err := cs.EventsV1().Events("app").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	ev := list.Items[0]
	assert.Equal(t, "Normal", ev.Type)
	assert.Equal(t, "GatewayCreated", ev.Reason)
	assert.Equal(t, "Create", ev.Action)
	assert.Equal(t, "created it", ev.Note)
	assert.Equal(t, "api", ev.Regarding.Name)
	assert.Equal(t, "Service", ev.Regarding.Kind)
	assert.Equal(t, "related", ev.Related.Name)
	assert.Equal(t, "service-router-operator", ev.ReportingController)
	assert.NotEmpty(t, ev.ReportingInstance)
}

func TestRecorder_ClusterScopedObjectsGetEventsInDefault(t *testing.T) {
	r, cs, _ := newRecorder(t, DefaultSettings)
	r.Eventf(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", UID: "u"}}, nil, "Warning", "Reason", "Reconcile", "note")
	drain(r)
	list, err := cs.EventsV1().Events("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1)
}

func TestRecorder_RepeatWithinTheWindowExtendsTheSeries(t *testing.T) {
	r, cs, now := newRecorder(t, DefaultSettings)
	r.Eventf(service("api"), nil, "Warning", "OwnershipConflict", "Reconcile", "first")
	drain(r)
	*now = now.Add(time.Minute)
	r.Eventf(service("api"), nil, "Warning", "OwnershipConflict", "Reconcile", "again")
	r.Eventf(service("api"), nil, "Warning", "OwnershipConflict", "Reconcile", "and again")
	drain(r)
	assert.Equal(t, []string{"create", "patch", "patch"}, actions(cs))
	patch := cs.Actions()[2].(k8stesting.PatchAction)
	assert.JSONEq(t, `{"series":{"count":3,"lastObservedTime":"2025-01-01T00:01:00.000000Z"}}`, string(patch.GetPatch()))

	*now = now.Add(DefaultSettings.SeriesWindow)
	r.Eventf(service("api"), nil, "Warning", "OwnershipConflict", "Reconcile", "much later")
	drain(r)
	assert.Equal(t, []string{"create", "patch", "patch", "create"}, actions(cs), "after the window a repeat is a new event")
}

func TestRecorder_DifferentEventsAreNotASeries(t *testing.T) {
	r, cs, _ := newRecorder(t, DefaultSettings)
	r.Eventf(service("api"), nil, "Normal", "GatewayCreated", "Create", "x")
	r.Eventf(service("api"), nil, "Normal", "GatewayCreated", "Delete", "x")
	r.Eventf(service("web"), nil, "Normal", "GatewayCreated", "Create", "x")
	drain(r)
	assert.Equal(t, []string{"create", "create", "create"}, actions(cs))
}

func TestRecorder_FullQueueDropsInsteadOfBlocking(t *testing.T) {
	r, cs, _ := newRecorder(t, Settings{Queue: 2, Senders: 1, Series: 10, SeriesWindow: time.Minute})
	for range 5 {
		r.Eventf(service("api"), nil, "Normal", "R", "A", "x")
	}
	assert.Equal(t, int64(3), r.Dropped())
	drain(r)
	assert.Len(t, cs.Actions(), 2)
}

func TestRecorder_RemembersABoundedNumberOfEvents(t *testing.T) {
	r, cs, _ := newRecorder(t, Settings{Queue: 100, Senders: 1, Series: 2, SeriesWindow: time.Hour})
	for _, name := range []string{"a", "b", "c", "a"} {
		r.Eventf(service(name), nil, "Normal", "R", "A", "x")
		drain(r)
	}
	assert.Equal(t, 2, r.recent.Len())
	assert.Equal(t, []string{"create", "create", "create", "create"}, actions(cs), "a was forgotten: its repeat is a new event")
}

func TestRecorder_StartSendsUntilStopped(t *testing.T) {
	r, cs, _ := newRecorder(t, DefaultSettings)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	r.Eventf(service("api"), nil, "Normal", "R", "A", "x")
	require.Eventually(t, func() bool { return len(cs.Actions()) == 1 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done
}

func TestRecorder_SendsNoFasterThanItsRate(t *testing.T) {
	r, cs, _ := newRecorder(t, Settings{Queue: 10, Senders: 2, Series: 10, SeriesWindow: time.Minute, PerSecond: 0.01, Burst: 2})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	for _, name := range []string{"a", "b", "c", "d"} {
		r.Eventf(service(name), nil, "Normal", "R", "A", "x")
	}
	require.Eventually(t, func() bool { return len(cs.Actions()) == 2 }, 10*time.Second, 10*time.Millisecond, "the burst goes at once")
	time.Sleep(300 * time.Millisecond)
	assert.Len(t, cs.Actions(), 2, "the rest waits for the rate (one per 100 s)")
	cancel()
	<-done
}
