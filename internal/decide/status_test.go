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
		wantProgress  *metav1.Condition
	}{
		{"ready", Outcome{Phase: "Active", Ready: true, Reason: "ReconciliationSucceeded", Message: "ReconciliationSucceeded"}, nil,
			routingv1alpha1.PhaseActive, 3, readyCondition(metav1.ConditionTrue, "ReconciliationSucceeded", 3), nil},
		{"waiting", Outcome{Phase: "Pending", Reason: "GatewayNotFound", Message: "GatewayNotFound"}, nil,
			routingv1alpha1.PhasePending, 3, readyCondition(metav1.ConditionFalse, "GatewayNotFound", 3),
			&metav1.Condition{Type: routingv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: "GatewayNotFound", Message: "GatewayNotFound", ObservedGeneration: 3}},
		{"needs a person", Outcome{Phase: "Failed", Reason: "HostnameConflict", Message: "HostnameConflict"}, nil,
			routingv1alpha1.PhaseFailed, 3, readyCondition(metav1.ConditionFalse, "HostnameConflict", 3),
			&metav1.Condition{Type: routingv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "HostnameConflict", Message: "HostnameConflict", ObservedGeneration: 3}},
		{"not published here on purpose", Outcome{Phase: "Pending", Reason: "DNSPolicyInactive", Message: "DNSPolicyInactive"}, nil,
			routingv1alpha1.PhasePending, 3, readyCondition(metav1.ConditionFalse, "DNSPolicyInactive", 3), nil},
		{"an error keeps the phase and observedGeneration of the last success", Outcome{Phase: "Failed"}, errors.New("reading Gateway: timeout"),
			routingv1alpha1.PhaseActive, 2, metav1.Condition{Type: routingv1alpha1.ConditionReady, Status: metav1.ConditionUnknown, Reason: routingv1alpha1.ReasonReconcileError,
				Message: "reading Gateway: timeout", ObservedGeneration: 2},
			&metav1.Condition{Type: routingv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: routingv1alpha1.ReasonReconcileError,
				Message: "reading Gateway: timeout", ObservedGeneration: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			route := routeAtGeneration()
			// Left by an earlier reconcile: each outcome sets its own and removes the other.
			stale := []metav1.Condition{{Type: routingv1alpha1.ConditionReconciling, Status: metav1.ConditionTrue, Reason: "LoadBalancerNotFound"},
				{Type: routingv1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "OwnershipConflict"}}
			route.Status.Conditions = append(append([]metav1.Condition{published}, route.Status.Conditions...), stale...)
			SetOutcome(route, tt.outcome, tt.err)
			assert.Equal(t, tt.wantPhase, route.Status.Phase)
			assert.Equal(t, tt.wantObserved, route.Status.ObservedGeneration)
			want := 2
			if tt.wantProgress != nil {
				want = 3
			}
			require.Len(t, route.Status.Conditions, want)
			got := route.Status.Conditions[0]
			got.LastTransitionTime = metav1.Time{}
			assert.Equal(t, tt.wantCondition, got, "Ready first, where people and scripts look")
			assert.Equal(t, published, route.Status.Conditions[1])
			if tt.wantProgress != nil {
				progress := route.Status.Conditions[2]
				progress.LastTransitionTime = metav1.Time{}
				assert.Equal(t, *tt.wantProgress, progress)
			}
		})
	}
}
