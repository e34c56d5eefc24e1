package decide

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
)

func TestDrainedCondition(t *testing.T) {
	tests := []struct {
		name       string
		drain      Drain
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"no drain, nothing away: no condition", Drain{Known: true, Here: 3}, "", ""},
		{"no drain, names away from an earlier failover: no condition (failback decides)", Drain{Known: true, Here: 1, Away: 2}, "", ""},
		{"draining, the zones not read yet", Drain{Draining: true}, metav1.ConditionTrue, clusterv1alpha1.ReasonDrainInProgress},
		{"draining, names still here", Drain{Draining: true, Known: true, Here: 1, Away: 2}, metav1.ConditionTrue, clusterv1alpha1.ReasonDrainInProgress},
		{"drained: nothing here", Drain{Draining: true, Known: true, Away: 3}, metav1.ConditionTrue, clusterv1alpha1.ReasonDrainComplete},
		{"the drain ended, names away", Drain{Returning: true, Known: true, Here: 1, Away: 2}, metav1.ConditionFalse, clusterv1alpha1.ReasonNamesReturning},
		{"the drain ended, the zones not read yet: not known to be back", Drain{Returning: true}, metav1.ConditionFalse, clusterv1alpha1.ReasonNamesReturning},
		{"the drain ended and every name is back: the condition goes", Drain{Returning: true, Known: true, Here: 3}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DrainedCondition(tt.drain, 4)
			if tt.wantStatus == "" {
				if c != nil {
					t.Fatalf("got %+v, want no condition", c)
				}
				return
			}
			if c == nil || c.Status != tt.wantStatus || c.Reason != tt.wantReason || c.ObservedGeneration != 4 || c.Message == "" {
				t.Fatalf("got %+v, want %s %s with a message", c, tt.wantStatus, tt.wantReason)
			}
		})
	}
}
