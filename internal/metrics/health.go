package metrics

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Per-controller health, set by Instrument.
var (
	lastReconcileSuccess   = newGaugeVec(LastReconcileSuccessName)
	lastReconcileTimestamp = newGaugeVec(LastReconcileTimestampName)
	lastSuccessTimestamp   = newGaugeVec(LastSuccessTimestampName)
	failingRequests        = newGaugeVec(FailingRequestsName)
)

// Instrument wraps a reconciler so that every reconcile updates the health metrics of the named
// controller: the outcome and time of the last reconcile, the time of the last success, and how
// many requests currently fail. A request counts as failing from a reconcile that returns an
// error until one that does not (a deleted object's last reconcile finds it gone and succeeds).
// Panics are not observed here; controller-runtime recovers them and counts them in
// controller_runtime_reconcile_panics_total.
func Instrument[R comparable](controller string, r reconcile.TypedReconciler[R]) reconcile.TypedReconciler[R] {
	failingRequests.WithLabelValues(controller).Set(0)
	return &instrumented[R]{controller: controller, inner: r, failing: map[R]struct{}{}}
}

type instrumented[R comparable] struct {
	controller string
	inner      reconcile.TypedReconciler[R]

	mu      sync.Mutex // reconciles of one controller may run in parallel
	failing map[R]struct{}
}

func (i *instrumented[R]) Reconcile(ctx context.Context, req R) (reconcile.Result, error) {
	result, err := i.inner.Reconcile(ctx, req)
	i.observe(req, err == nil)
	return result, err
}

func (i *instrumented[R]) observe(req R, ok bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if ok {
		delete(i.failing, req)
		lastReconcileSuccess.WithLabelValues(i.controller).Set(1)
		lastSuccessTimestamp.WithLabelValues(i.controller).SetToCurrentTime()
	} else {
		i.failing[req] = struct{}{}
		lastReconcileSuccess.WithLabelValues(i.controller).Set(0)
	}
	lastReconcileTimestamp.WithLabelValues(i.controller).SetToCurrentTime()
	failingRequests.WithLabelValues(i.controller).Set(float64(len(i.failing)))
}
