package budget

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
)

// Condition is the DNSConfiguration's OverRequestBudget condition for one cluster's plan: True,
// reason RequestBudgetExceeded, when in some subscription the cluster plans more reads a minute
// while records change than ReadShare, or more writes a minute than WriteShare, or when in some
// zone it plans more than its share of Private DNS's per-zone limits — more list requests a
// minute than ZoneListShare while records change or while a region is lost (its heartbeats read
// every probe round), or more heartbeat updates than ZoneUpdateShare; False, reason
// WithinRequestBudget, otherwise. Each zone's limits are shared by every cluster and ExternalDNS
// instance writing it, so a cluster over half of one alone leaves too little for a fleet: those
// settings cannot fit. The message names each subscription's and zone's planned rates and the
// share; it changes only when the plan does (a zone's size crossing a page, a setting).
func Condition(p Plan, generation int64) metav1.Condition {
	c := metav1.Condition{Type: clusterv1alpha1.ConditionOverRequestBudget, Status: metav1.ConditionFalse, ObservedGeneration: generation,
		Reason: clusterv1alpha1.ReasonWithinRequestBudget}
	if len(p.Subscriptions) == 0 {
		c.Message = "no zone is read through Azure Resource Manager: no request budget applies"
		return c
	}
	var over, within []string
	for _, s := range p.Subscriptions {
		if s.Changing.Reads > ReadShare {
			over = append(over, fmt.Sprintf("subscription %s: this cluster plans %s Resource Manager reads a minute while records change (%s at rest) in %d zone(s), "+
				"above its share of %.0f, half of the %d a minute a principal's read bucket refills: lengthen the zones' azurePrivateDNS.interval or raise their pageSize",
				s.SubscriptionID, figure(s.Changing.Reads, s.LowerBound), figure(s.AtRest.Reads, s.LowerBound), s.Zones, ReadShare, ReadsPerMinute))
		}
		if s.AtRest.Writes > WriteShare {
			over = append(over, fmt.Sprintf("subscription %s: this cluster plans %.1f Resource Manager writes a minute (failover's heartbeats) in %d zone(s), "+
				"above its share of %.0f, half of the %d writes and deletes a minute Azure's network resource provider allows a subscription and region: lengthen spec.failover.heartbeatInterval",
				s.SubscriptionID, s.AtRest.Writes, s.Zones, WriteShare, WritesPerMinute))
		}
		within = append(within, fmt.Sprintf("subscription %s: %s (%s while records change) reads and %.1f writes in %d zone(s)",
			s.SubscriptionID, figure(s.AtRest.Reads, s.LowerBound), figure(s.Changing.Reads, s.LowerBound), s.AtRest.Writes, s.Zones))
	}
	var mostLists, mostListsMoving, mostUpdates float64
	lowerBound := false
	for _, z := range p.Zones {
		lists, moving := z.Changing().Reads, z.WhileNamesMove().Reads
		mostLists, mostListsMoving, mostUpdates = max(mostLists, lists), max(mostListsMoving, moving), max(mostUpdates, z.HeartbeatWrites)
		lowerBound = lowerBound || z.LowerBound
		if lists > ZoneListShare {
			over = append(over, fmt.Sprintf("zone of %s: this cluster plans %s list requests a minute while records change (%s at rest), "+
				"above its share of %.0f, half of the %d a minute Azure Private DNS allows each zone: lengthen its azurePrivateDNS.interval or raise its pageSize",
				z.Controller, figure(lists, z.LowerBound), figure(z.AtRest().Reads, z.LowerBound), ZoneListShare, ZoneListsPerMinute))
		}
		if z.Failover && moving > ZoneListShare {
			over = append(over, fmt.Sprintf("zone of %s: this cluster plans %s list requests a minute while a region is lost (failover's heartbeat listing every probe round, "+
				"the whole zone every heartbeatStaleAfter, verification's listings), above its share of %.0f, half of the %d a minute Azure Private DNS allows each zone: "+
				"lengthen spec.failover.probeInterval or heartbeatStaleAfter", z.Controller, figure(moving, z.LowerBound), ZoneListShare, ZoneListsPerMinute))
		}
		if z.HeartbeatWrites > ZoneUpdateShare {
			over = append(over, fmt.Sprintf("zone of %s: this cluster plans %.1f heartbeat updates a minute, above its share of %.0f, half of the %d record set updates "+
				"a minute Azure Private DNS allows each zone: lengthen spec.failover.heartbeatInterval", z.Controller, z.HeartbeatWrites, ZoneUpdateShare, ZoneUpdatesPerMinute))
		}
	}
	if len(over) > 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, clusterv1alpha1.ReasonRequestBudgetExceeded, strings.Join(over, "; ")
		return c
	}
	c.Message = fmt.Sprintf("this cluster plans, a minute at rest, %s; within its share of %.0f reads and %.0f writes a minute per subscription; "+
		"in each zone at most %s list requests while records change (%s while a region is lost) and %.1f updates, within its share of %.0f lists and %.0f updates a minute "+
		"of Azure Private DNS's per-zone limits",
		strings.Join(within, "; "), ReadShare, WriteShare, figure(mostLists, lowerBound), figure(mostListsMoving, lowerBound), mostUpdates, ZoneListShare, ZoneUpdateShare)
	return c
}

// figure is a planned rate with one decimal, "at least" when the zones' sizes are unknown.
func figure(rate float64, lowerBound bool) string {
	if lowerBound {
		return fmt.Sprintf("at least %.1f", rate)
	}
	return fmt.Sprintf("%.1f", rate)
}
