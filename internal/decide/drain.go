package decide

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
)

// Drain is where a drain of this cluster's region stands, as regional failover's leader last saw
// it (failoverloop.Loop.Drain).
type Drain struct {
	// Draining is DNSConfiguration.spec.failover.drain; Returning says it ended while names were
	// away (the Drained condition was set) and they are coming back.
	Draining, Returning bool
	// Here and Away count the names this cluster publishes into its region's zones with failover
	// settings that its owner holds, and that another owner (a stand-in) holds, as the zones'
	// ownership records last said (failover.DrainProgress); Known is false while a zone of the
	// region has not been read whole.
	Here, Away int
	Known      bool
}

// DrainedCondition is the DNSConfiguration's Drained condition: True while a drain is asked for
// (DrainComplete once no name of the region's zones is here), False while the drain has ended and
// names are still away (NamesReturning), nil otherwise (the condition is removed).
func DrainedCondition(d Drain, generation int64) *metav1.Condition {
	c := &metav1.Condition{Type: clusterv1alpha1.ConditionDrained, ObservedGeneration: generation}
	counts := fmt.Sprintf("%d of the names this cluster publishes into its region's zones with failover settings are with a stand-in, %d still here", d.Away, d.Here)
	if !d.Known {
		counts = "the region's zones have not all been read yet"
	}
	switch {
	case d.Draining:
		c.Status, c.Reason = metav1.ConditionTrue, clusterv1alpha1.ReasonDrainInProgress
		if d.Known && d.Here == 0 {
			c.Reason = clusterv1alpha1.ReasonDrainComplete
		}
		c.Message = "spec.failover.drain asks for this region's names to move to their stand-ins, this cluster's gateway answering or not: " + counts
	case d.Returning && (!d.Known || d.Away > 0):
		c.Status, c.Reason = metav1.ConditionFalse, clusterv1alpha1.ReasonNamesReturning
		c.Message = "the drain ended: " + counts + "; they come back once this cluster's gateway answers and the stand-ins have seen its heartbeat without the drain"
	default:
		return nil
	}
	return c
}
