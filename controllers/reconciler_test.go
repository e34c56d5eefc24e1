package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/ownwrite"
	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
)

// recordedEvent is one Event a test recorder received.
type recordedEvent struct{ Type, Reason, Action, Note string }

// eventLog records Events in memory.
type eventLog struct{ events []recordedEvent }

func (l *eventLog) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	l.events = append(l.events, recordedEvent{eventtype, reason, action, fmt.Sprintf(note, args...)})
}

// statusPatcher stands in for ownwrite.Writer's status patches: it answers each patch with the
// next resourceVersion, or with err.
type statusPatcher struct {
	objectWriter // creates and updates: unused by end
	err          error
	patches      int
}

func (p *statusPatcher) PatchStatus(_ context.Context, _ client.Object, _, _ any, originalVersion string) (string, error) {
	p.patches++
	if p.err != nil {
		return "", p.err
	}
	return originalVersion + "+1", nil
}

// readerCache is the informer cache as the reconcilers read it (base.Cached), holding what a
// client reads: the tests' fake API server stands in for the cache a watch keeps in step with it.
type readerCache struct {
	ctrlcache.Cache // only the reads below are used
	reader          client.Reader
}

// GetInformer hands out no informer store: cacheview then reads through Get.
func (c readerCache) GetInformer(context.Context, client.Object, ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	return nil, nil
}

func (c readerCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

func cacheOver(c client.Reader) cacheview.Reader {
	return cacheview.Reader{Cache: readerCache{reader: c}}
}

func conflictError() error {
	return apierrors.NewConflict(schema.GroupResource{Group: "routing.router.io", Resource: "serviceroutes"}, "api", errors.New("the object has been modified"))
}

func readyCondition(status metav1.ConditionStatus, reason string, generation int64) metav1.Condition {
	return metav1.Condition{Type: conditionReady, Status: status, Reason: reason, Message: reason, ObservedGeneration: generation}
}

// routeAtGeneration is a ServiceRoute at generation 3 whose status describes generation 2.
func routeAtGeneration() *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "api", UID: "route-uid", ResourceVersion: "10", Generation: 3},
		Status: routingv1alpha1.ServiceRouteStatus{Phase: routingv1alpha1.PhaseActive, ObservedGeneration: 2,
			Conditions: []metav1.Condition{readyCondition(metav1.ConditionTrue, "ReconciliationSucceeded", 2)}},
	}
}

func TestEnd_WritesTheStatusOnceAndAnnouncesItOnlyAfterTheWrite(t *testing.T) {
	ready := decide.Outcome{Phase: "Active", Ready: true, Reason: "ReconciliationSucceeded", Message: "published"}
	notReady := decide.Outcome{Phase: "Pending", Reason: "GatewayNotFound", Message: "Gateway gw not found"}
	tests := []struct {
		name       string
		outcome    decide.Outcome
		err        error
		patchErr   error
		superseded bool
		// cachedVersion is the route's resourceVersion in the cache when the reconcile ends
		// (default: the copy's own, "10").
		cachedVersion string
		// unchanged: the route's status already says what the outcome says.
		unchanged   bool
		wantResult  ctrl.Result
		wantErr     bool
		wantPatches int
		wantEvents  []recordedEvent
	}{
		{name: "a change is written once and announced", outcome: notReady, wantPatches: 1,
			wantEvents: []recordedEvent{{"Warning", "GatewayNotFound", "Reconcile", "Gateway gw not found"}}},
		{name: "an unchanged status is not written", outcome: ready, unchanged: true},
		{name: "cache lag alone: a silent retry, no status", err: errCacheLag, wantResult: ctrl.Result{RequeueAfter: cacheLagRetry}},
		{name: "an error is written as Ready=Unknown and goes to the rate-limited queue", err: errors.New("listing DNSPolicies: timeout"),
			wantErr: true, wantPatches: 1,
			wantEvents: []recordedEvent{{"Warning", reasonReconcileError, "Reconcile", "listing DNSPolicies: timeout"}}},
		{name: "a write conflict is a short retry, announced by nobody", outcome: notReady, patchErr: conflictError(),
			wantResult: ctrl.Result{RequeueAfter: cacheLagRetry}, wantPatches: 1},
		{name: "a write conflict after a failed reconcile returns the error, without a RequeueAfter controller-runtime would ignore",
			err: errors.New("listing DNSPolicies: timeout"), patchErr: conflictError(), wantErr: true, wantPatches: 1},
		{name: "a failed write is an error and announces nothing", outcome: notReady, patchErr: errors.New("connection refused"),
			wantErr: true, wantPatches: 1},
		{name: "a copy our last write replaced is not written again", outcome: notReady, superseded: true},
		{name: "an unchanged status compared with a copy the cache no longer holds is a short retry (the event that moved it may have been our own write's, dropped as an echo)",
			outcome: ready, unchanged: true, cachedVersion: "11", wantResult: ctrl.Result{RequeueAfter: cacheLagRetry}},
		{name: "a changed status compared with a copy the cache no longer holds is a short retry, not sent (it could only meet a conflict)",
			outcome: notReady, cachedVersion: "11", wantResult: ctrl.Result{RequeueAfter: cacheLagRetry}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			original := routeAtGeneration()
			if tt.unchanged {
				original.Status.ObservedGeneration = 3
				original.Status.Conditions = []metav1.Condition{readyCondition(metav1.ConditionTrue, "ReconciliationSucceeded", 3)}
				original.Status.Conditions[0].Message = "published"
			}
			versions := ownwrite.NewVersions()
			if tt.superseded {
				versions.Writing(original.UID, original.ResourceVersion)
				versions.Wrote(original.UID, original.ResourceVersion, "11")
			}
			cached := original.DeepCopy()
			cached.ResourceVersion = cmp.Or(tt.cachedVersion, original.ResourceVersion)
			patcher, log := &statusPatcher{err: tt.patchErr}, &eventLog{}
			b := base{Writer: patcher, Recorder: log, Versions: versions, Cached: cacheOver(fakeClientWith(cached))}
			result, err := b.end(context.Background(), original.DeepCopy(), original, tt.outcome, requeue{}, tt.err)
			assert.Equal(t, tt.wantResult, result)
			assert.Equal(t, tt.wantErr, err != nil, "error: %v", err)
			assert.Equal(t, tt.wantPatches, patcher.patches, "status writes")
			assert.Equal(t, tt.wantEvents, log.events)
		})
	}
}

// fakeClientWith is a fake API server of the operator's kinds (its own scheme) holding objs, at
// their own resourceVersions.
func fakeClientWith(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(operatorscheme.New()).WithObjects(objs...).Build()
}

// The DeletionsHeld condition is announced with the status that carries it: a write that fails
// announces nothing, and its retry announces the change once.
func TestEnd_DeletionsHeldIsAnnouncedOnceTheStatusIsWritten(t *testing.T) {
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName, UID: "cfg", ResourceVersion: "5", Generation: 1},
		Status: clusterv1alpha1.DNSConfigurationStatus{ObservedGeneration: 1, Phase: clusterv1alpha1.PhaseActive,
			Conditions: []metav1.Condition{readyCondition(metav1.ConditionTrue, "ConfigurationValid", 1)}}}
	cfg.Status.Conditions[0].Message = "valid"
	valid := decide.Outcome{Phase: "Active", Ready: true, Reason: "ConfigurationValid", Message: "valid"}
	held := decide.DeletionsHeldCondition(12, time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), 1)
	withHeld := func() *clusterv1alpha1.DNSConfiguration {
		c := cfg.DeepCopy()
		c.Status.Conditions = append(c.Status.Conditions, held)
		return c
	}

	patcher, log := &statusPatcher{err: errors.New("connection refused")}, &eventLog{}
	b := base{Writer: patcher, Recorder: log, Versions: ownwrite.NewVersions(), Cached: cacheOver(fakeClientWith(cfg.DeepCopy()))}
	_, err := b.end(context.Background(), withHeld(), cfg, valid, requeue{}, nil)
	require.Error(t, err)
	assert.Empty(t, log.events, "the write failed: nothing changed, nothing to announce")

	patcher.err = nil
	_, err = b.end(context.Background(), withHeld(), cfg, valid, requeue{}, nil)
	require.NoError(t, err)
	assert.Equal(t, []recordedEvent{{"Warning", clusterv1alpha1.ReasonMassDeletionHeld, "Reconcile", held.Message}}, log.events)
}

func TestFinish_TheEarliestReasonToLookAgainWins(t *testing.T) {
	b := base{ConflictRetry: time.Minute}
	soon := time.Now().Add(20 * time.Second)
	tests := []struct {
		name      string
		rq        requeue
		err       error
		wantAfter time.Duration // upper bound; 0: no requeue
		wantErr   bool
	}{
		{name: "nothing to wait for", rq: requeue{}},
		{name: "ownership conflict", rq: requeue{conflict: true}, wantAfter: time.Minute},
		{name: "held deletion before the conflict retry", rq: requeue{conflict: true, at: soon}, wantAfter: 20 * time.Second},
		{name: "a held deletion already due waits at least the cache-lag retry", rq: requeue{at: time.Now().Add(-time.Second)}, wantAfter: cacheLagRetry},
		{name: "a coalescing window shorter than both", rq: requeue{conflict: true, at: soon, wait: time.Second}, wantAfter: time.Second},
		{name: "a summary counted again", rq: requeue{conflict: true, refresh: 30 * time.Second}, wantAfter: 30 * time.Second},
		{name: "cache lag", rq: requeue{conflict: true}, err: errors.Join(errCacheLag, errCacheLag), wantAfter: cacheLagRetry},
		{name: "an error goes to the rate-limited queue alone", rq: requeue{conflict: true}, err: errors.Join(errCacheLag, errors.New("boom")), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result, err := b.finish(tt.rq, tt.err)
			assert.Equal(t, tt.wantErr, err != nil)
			if tt.wantErr {
				assert.Zero(t, result)
				return
			}
			assert.LessOrEqual(t, result.RequeueAfter, tt.wantAfter)
			assert.Greater(t, result.RequeueAfter, tt.wantAfter-2*time.Second)
			if tt.wantAfter == 0 {
				assert.Zero(t, result.RequeueAfter)
			}
		})
	}
}

func TestRequeueOf_ConflictsAndHeldDeletions(t *testing.T) {
	until := time.Now().Add(time.Minute)
	assert.Equal(t, requeue{}, requeueOf(decide.Written{}))
	assert.Equal(t, requeue{conflict: true, at: until}, requeueOf(decide.Written{Conflicts: []string{"app/api"}, HeldUntil: until}))
}

// Two write steps in one reconcile (a Gateway's two backends) ask for both of their retries.
func TestRequeueAnd_KeepsTheConflictAndTheEarliestTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		a, b requeue
		want requeue
	}{
		{"nothing", requeue{}, requeue{}, requeue{}},
		{"a conflict on either side", requeue{}, requeue{conflict: true}, requeue{conflict: true}},
		{"the earliest held deletion", requeue{at: t0.Add(time.Minute)}, requeue{at: t0}, requeue{at: t0}},
		{"a time on one side only", requeue{at: t0}, requeue{}, requeue{at: t0}},
		{"the first's wait and refresh stay", requeue{wait: time.Second, refresh: time.Minute}, requeue{conflict: true}, requeue{wait: time.Second, refresh: time.Minute, conflict: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.a.and(c.b))
		})
	}
}
