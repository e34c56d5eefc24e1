package metrics

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// fakeReconciler fails the requests listed in fail.
type fakeReconciler struct{ fail map[string]bool }

func (f fakeReconciler) Reconcile(_ context.Context, req string) (reconcile.Result, error) {
	if f.fail[req] {
		return reconcile.Result{}, errors.New("boom")
	}
	return reconcile.Result{RequeueAfter: time.Minute}, nil
}

// TestInstrument_TracksOutcomeTimestampsAndFailingRequests walks a controller through failures and
// recoveries and reads its health series after each reconcile.
func TestInstrument_TracksOutcomeTimestampsAndFailingRequests(t *testing.T) {
	const name = "test-controller"
	fake := fakeReconciler{fail: map[string]bool{}}
	r := Instrument(name, reconcile.TypedReconciler[string](fake))
	success := func() float64 { return testutil.ToFloat64(lastReconcileSuccess.WithLabelValues(name)) }
	failing := func() float64 { return testutil.ToFloat64(failingRequests.WithLabelValues(name)) }
	lastSuccess := func() float64 { return testutil.ToFloat64(lastSuccessTimestamp.WithLabelValues(name)) }
	last := func() float64 { return testutil.ToFloat64(lastReconcileTimestamp.WithLabelValues(name)) }

	assert.Equal(t, 0.0, failing(), "a new controller has no failing request")
	start := float64(time.Now().Unix())

	res, err := r.Reconcile(context.Background(), "a")
	assert.NoError(t, err)
	assert.Equal(t, time.Minute, res.RequeueAfter, "the result passes through")
	assert.Equal(t, 1.0, success())
	assert.GreaterOrEqual(t, lastSuccess(), start)
	okAt := lastSuccess()

	fake.fail["a"], fake.fail["b"] = true, true
	_, err = r.Reconcile(context.Background(), "a")
	assert.Error(t, err, "the error passes through")
	_, _ = r.Reconcile(context.Background(), "b")
	_, _ = r.Reconcile(context.Background(), "a")
	assert.Equal(t, 0.0, success())
	assert.Equal(t, 2.0, failing(), "a request failing twice counts once")
	assert.Equal(t, okAt, lastSuccess(), "failures do not move the last success")
	assert.GreaterOrEqual(t, last(), okAt)

	fake.fail["a"] = false
	_, _ = r.Reconcile(context.Background(), "a")
	assert.Equal(t, 1.0, success())
	assert.Equal(t, 1.0, failing(), "b still fails")

	fake.fail["b"] = false
	_, _ = r.Reconcile(context.Background(), "b")
	assert.Equal(t, 0.0, failing())
}

func TestConflictSet(t *testing.T) {
	s := NewConflictSet()
	s.Set("a", true)
	s.Set("a", true)
	s.Set("b", true)
	s.Set("b", false)
	assert.Equal(t, 1, s.Len())
	var none *ConflictSet
	none.Set("a", true)
	assert.Equal(t, 0, none.Len(), "a nil set records nothing")
}
