package decide

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// DNSPolicyStatus is a DNSPolicy's status as p (Policy) decides it, from the status it holds:
// the activation (active, activeControllers, recordTTL and the StandIn condition), or the one it
// holds when p keeps it (an input is missing: what is not known is not changed). Ready and the
// phase are p's Outcome, which SetOutcome writes with it. now stamps a StandIn condition that changes.
func DNSPolicyStatus(current routingv1alpha1.DNSPolicyStatus, p PolicyPlan, now time.Time) routingv1alpha1.DNSPolicyStatus {
	st := *current.DeepCopy()
	if p.KeepActivation {
		return st
	}
	st.Active = p.Active
	st.ActiveControllers = p.ActiveControllers
	st.RecordTTL = int32(p.RecordTTL)
	var standIn *metav1.Condition
	if p.StandIn != nil {
		c := *p.StandIn
		c.LastTransitionTime = metav1.NewTime(now)
		standIn = &c
	}
	SetOrRemoveCondition(&st.Conditions, routingv1alpha1.ConditionStandIn, standIn)
	return st
}
