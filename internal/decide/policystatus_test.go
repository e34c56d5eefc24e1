package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

func TestDNSPolicyStatus(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	standIn := metav1.Condition{Type: routingv1alpha1.ConditionStandIn, Status: metav1.ConditionTrue, Reason: routingv1alpha1.ReasonStandsIn, LastTransitionTime: earlier}
	active := routingv1alpha1.DNSPolicyStatus{Active: true, ActiveControllers: []string{"external-dns-weu"}, RecordTTL: 60,
		Conditions: []metav1.Condition{standIn}}
	tests := []struct {
		name    string
		current routingv1alpha1.DNSPolicyStatus
		plan    PolicyPlan
		want    routingv1alpha1.DNSPolicyStatus
	}{
		{"an input missing keeps the activation as it is", active, PolicyPlan{KeepActivation: true}, active},
		{"activated, a stand-in", routingv1alpha1.DNSPolicyStatus{},
			PolicyPlan{Active: true, ActiveControllers: []string{"external-dns-weu"}, RecordTTL: 60, StandIn: &metav1.Condition{Type: routingv1alpha1.ConditionStandIn,
				Status: metav1.ConditionTrue, Reason: routingv1alpha1.ReasonStandsIn}},
			routingv1alpha1.DNSPolicyStatus{Active: true, ActiveControllers: []string{"external-dns-weu"}, RecordTTL: 60,
				Conditions: []metav1.Condition{{Type: routingv1alpha1.ConditionStandIn, Status: metav1.ConditionTrue, Reason: routingv1alpha1.ReasonStandsIn,
					LastTransitionTime: metav1.NewTime(now)}}}},
		{"still a stand-in: the condition keeps its time", active,
			PolicyPlan{Active: true, ActiveControllers: []string{"external-dns-weu"}, RecordTTL: 60, StandIn: &metav1.Condition{Type: routingv1alpha1.ConditionStandIn,
				Status: metav1.ConditionTrue, Reason: routingv1alpha1.ReasonStandsIn}},
			active},
		{"inactive: no controllers, no stand-in", active, PolicyPlan{RecordTTL: 60},
			routingv1alpha1.DNSPolicyStatus{RecordTTL: 60, Conditions: []metav1.Condition{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := *tt.current.DeepCopy()
			assert.Equal(t, tt.want, DNSPolicyStatus(current, tt.plan, now))
			assert.Equal(t, tt.current, current, "the status read is not changed")
		})
	}
}
