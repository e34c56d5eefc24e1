package decide

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

func readyCondition(status metav1.ConditionStatus, reason string, generation int64) metav1.Condition {
	return metav1.Condition{Type: routingv1alpha1.ConditionReady, Status: status, Reason: reason, Message: reason, ObservedGeneration: generation}
}

// routeAtGeneration is a ServiceRoute at generation 3 whose status describes generation 2.
func routeAtGeneration() *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "api", UID: "route-uid", ResourceVersion: "10", Generation: 3},
		Status: routingv1alpha1.ServiceRouteStatus{Phase: routingv1alpha1.PhaseActive, ObservedGeneration: 2,
			Conditions: []metav1.Condition{readyCondition(metav1.ConditionTrue, "ReconciliationSucceeded", 2)}},
	}
}

func TestSetOutcome_StampsTheGenerationOnlyOnSuccess(t *testing.T) {
	published := metav1.Condition{Type: routingv1alpha1.ConditionPublished, Status: metav1.ConditionTrue, Reason: "AllZonesAnswer"}
	tests := []struct {
		name          string
		outcome       Outcome
		err           error
		wantPhase     routingv1alpha1.Phase
		wantObserved  int64
		wantCondition metav1.Condition
	}{
		{"ready", Outcome{Phase: "Active", Ready: true, Reason: "ReconciliationSucceeded", Message: "ReconciliationSucceeded"}, nil,
			routingv1alpha1.PhaseActive, 3, readyCondition(metav1.ConditionTrue, "ReconciliationSucceeded", 3)},
		{"not ready", Outcome{Phase: "Pending", Reason: "GatewayNotFound", Message: "GatewayNotFound"}, nil,
			routingv1alpha1.PhasePending, 3, readyCondition(metav1.ConditionFalse, "GatewayNotFound", 3)},
		{"an error keeps the phase and observedGeneration of the last success", Outcome{Phase: "Failed"}, errors.New("reading Gateway: timeout"),
			routingv1alpha1.PhaseActive, 2, metav1.Condition{Type: routingv1alpha1.ConditionReady, Status: metav1.ConditionUnknown, Reason: routingv1alpha1.ReasonReconcileError,
				Message: "reading Gateway: timeout", ObservedGeneration: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			route := routeAtGeneration()
			route.Status.Conditions = append([]metav1.Condition{published}, route.Status.Conditions...)
			SetOutcome(route, tt.outcome, tt.err)
			assert.Equal(t, tt.wantPhase, route.Status.Phase)
			assert.Equal(t, tt.wantObserved, route.Status.ObservedGeneration)
			require.Len(t, route.Status.Conditions, 2)
			got := route.Status.Conditions[0]
			got.LastTransitionTime = metav1.Time{}
			assert.Equal(t, tt.wantCondition, got, "Ready first, where people and scripts look")
			assert.Equal(t, published, route.Status.Conditions[1])
		})
	}
}
