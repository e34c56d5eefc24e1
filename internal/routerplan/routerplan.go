// Package routerplan is what `kubectl router plan` computes: the objects the operator reads, taken as
// one snapshot (World, which `kubectl router status` diagnoses too: internal/diagnosis), overlaid
// with manifests the API server would admit (internal/manifestcheck) but that are not applied yet, and
// run through the operator's own reconciles (internal/core) to the state the operator converges to
// (Predict). Compare turns the prediction into what changes per zone. Nothing here writes to a
// cluster; only Load reads one.
package routerplan

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/service-router/service-router-operator/internal/manifestcheck"
)

// PlanFor is `kubectl router plan` without the printing: the cluster's objects read through c,
// objs admitted as the API server would (an *manifestcheck.RefusedError when it would refuse one) and overlaid
// (deleted when del), the operator's decisions run, and the difference. It writes nothing.
func PlanFor(ctx context.Context, c client.Reader, objs []*unstructured.Unstructured, del bool, namespace string, s Settings) (Result, error) {
	r, _, err := PredictFor(ctx, c, objs, del, namespace, s)
	return r, err
}

// PredictFor is PlanFor returning the prediction as well: the full state the operator
// converges to (what the integration test compares with the cluster after applying).
func PredictFor(ctx context.Context, c client.Reader, objs []*unstructured.Unstructured, del bool, namespace string, s Settings) (Result, Prediction, error) {
	current, err := Load(ctx, c)
	if err != nil {
		return Result{}, Prediction{}, err
	}
	admitted, err := manifestcheck.Admit(ctx, c, current, objs, del, namespace)
	if err != nil {
		return Result{}, Prediction{}, err
	}
	next := current.DeepCopy()
	changes, err := Overlay(next, admitted, del, namespace, time.Now())
	if err != nil {
		return Result{}, Prediction{}, err
	}
	p := Predict(next, s)
	return Compare(current, p, s, changes), p, nil
}
