package decide

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// SetOutcome sets the outcome of a reconcile into obj's status, the last step of every reconcile
// of an object with status (the operator's and the one preview predicts): on success the
// outcome's phase and Ready condition, stamped with the current generation; on an error
// Ready=Unknown, reason ReconcileError, with observedGeneration and the phase left where they
// were, so that nobody takes the old status for the new spec. Beside Ready, Reconciling or
// Stalled says whether the object waits or needs a person (ProgressOf). Ready stays the first
// condition.
func SetOutcome(obj client.Object, o Outcome, err error) {
	s := StatusOf(obj)
	condition := metav1.Condition{Type: clusterv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: o.Reason, Message: o.Message,
		ObservedGeneration: obj.GetGeneration()}
	if err != nil {
		condition = metav1.Condition{Type: clusterv1alpha1.ConditionReady, Status: metav1.ConditionUnknown, Reason: clusterv1alpha1.ReasonReconcileError,
			Message: err.Error(), ObservedGeneration: *s.ObservedGeneration}
	} else {
		if o.Ready {
			condition.Status = metav1.ConditionTrue
		}
		s.SetPhase(o.Phase)
		*s.ObservedGeneration = obj.GetGeneration()
	}
	meta.SetStatusCondition(s.Conditions, condition)
	setProgress(s.Conditions, ProgressOf(o, err), condition, obj.GetGeneration())
	readyFirst(*s.Conditions)
}

// setProgress sets the one of Reconciling and Stalled that p names, with Ready's reason and
// message, and removes the other (both when p is Done): kstatus reads them as "abnormal-true"
// conditions, present only while True.
func setProgress(conditions *[]metav1.Condition, p Progress, ready metav1.Condition, generation int64) {
	for _, t := range []Progress{Progressing, Stalled} {
		if t != p {
			meta.RemoveStatusCondition(conditions, string(t))
			continue
		}
		meta.SetStatusCondition(conditions, metav1.Condition{Type: string(t), Status: metav1.ConditionTrue, Reason: ready.Reason,
			Message: ready.Message, ObservedGeneration: generation})
	}
}

// readyFirst moves the Ready condition to the front, where people and scripts look for it, when
// another condition (Published) was set before the first Ready.
func readyFirst(conditions []metav1.Condition) {
	for i := range conditions {
		if conditions[i].Type == clusterv1alpha1.ConditionReady {
			ready := conditions[i]
			copy(conditions[1:i+1], conditions[:i])
			conditions[0] = ready
			return
		}
	}
}

// Status points into the status every router.io kind has: phase, observedGeneration, conditions.
type Status struct {
	// Value is the whole status (a pointer into the object).
	Value              any
	Conditions         *[]metav1.Condition
	ObservedGeneration *int64
	SetPhase           func(string)
}

// StatusOf returns the status fields of a router.io object; it panics on another kind (only these
// five have a status the operator writes).
func StatusOf(obj client.Object) Status {
	switch o := obj.(type) {
	case *clusterv1alpha1.ClusterIdentity:
		return Status{&o.Status, &o.Status.Conditions, &o.Status.ObservedGeneration, func(p string) { o.Status.Phase = clusterv1alpha1.Phase(p) }}
	case *clusterv1alpha1.DNSConfiguration:
		return Status{&o.Status, &o.Status.Conditions, &o.Status.ObservedGeneration, func(p string) { o.Status.Phase = clusterv1alpha1.Phase(p) }}
	case *routingv1alpha1.DNSPolicy:
		return Status{&o.Status, &o.Status.Conditions, &o.Status.ObservedGeneration, func(p string) { o.Status.Phase = routingv1alpha1.Phase(p) }}
	case *routingv1alpha1.Gateway:
		return Status{&o.Status, &o.Status.Conditions, &o.Status.ObservedGeneration, func(p string) { o.Status.Phase = routingv1alpha1.Phase(p) }}
	case *routingv1alpha1.ServiceRoute:
		return Status{&o.Status, &o.Status.Conditions, &o.Status.ObservedGeneration, func(p string) { o.Status.Phase = routingv1alpha1.Phase(p) }}
	}
	panic("decide.StatusOf: not a router.io kind")
}

// SetOrRemoveCondition sets c, or removes the condition of type conditionType when c is nil.
func SetOrRemoveCondition(conditions *[]metav1.Condition, conditionType string, c *metav1.Condition) {
	if c == nil {
		meta.RemoveStatusCondition(conditions, conditionType)
		return
	}
	meta.SetStatusCondition(conditions, *c)
}
