package budget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
)

func TestCondition_FlagsASubscriptionOverTheClusterShare(t *testing.T) {
	zones := func(n, names int, interval time.Duration) []Zone {
		var out []Zone
		for i := range n {
			z := zone(string(rune('a'+i)), names, true)
			z.Interval = interval
			out = append(out, z)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		plan     Plan
		status   metav1.ConditionStatus
		reason   string
		messages []string
	}{
		{"no zone read through Resource Manager", PlanOf(Input{}), metav1.ConditionFalse, clusterv1alpha1.ReasonWithinRequestBudget,
			[]string{"no zone is read through Azure Resource Manager"}},
		{"the defaults, one zone of 3,000 names", PlanOf(Input{Zones: zones(1, 3000, 0)}), metav1.ConditionFalse, clusterv1alpha1.ReasonWithinRequestBudget,
			[]string{"subscription " + subA + ": 3.0 (13.8 while records change) reads and 6.0 writes in 1 zone(s)", "within its share of 750 reads and 100 writes a minute per subscription",
				// 1.8 + 12; 12 heartbeat listings + 6 pages × 2 whole readings + 12 verification pages; 60 / 10 s
				"in each zone at most 13.8 list requests while records change (36.0 while a region is lost) and 6.0 updates, within its share of 50 lists and 30 updates a minute of Azure Private DNS's per-zone limits"}},
		{"no failover, pageSize 240, 3,000 names: 25 pages every 30 s, 50 lists a minute, the zone's share exactly",
			PlanOf(Input{Zones: []Zone{{Controller: "a", SubscriptionID: subA, PageSize: 240, RecordSets: 6000}}}),
			metav1.ConditionFalse, clusterv1alpha1.ReasonWithinRequestBudget, []string{"in each zone at most 50.0 list requests while records change"}},
		{"no failover, pageSize 239, 3,000 names: 26 pages every 30 s, 52 lists a minute, beyond the zone's share though far within the subscription's",
			PlanOf(Input{Zones: []Zone{{Controller: "a", SubscriptionID: subA, PageSize: 239, RecordSets: 6000}}}),
			metav1.ConditionTrue, clusterv1alpha1.ReasonRequestBudgetExceeded, []string{"zone of a: this cluster plans 52.0 list requests a minute while records change (5.2 at rest)"}},
		{"failover, pageSize 250: 48 verification lists and failover's while a region is lost, 72 a minute",
			PlanOf(Input{Zones: []Zone{{Controller: "a", SubscriptionID: subA, Failover: true, PageSize: 250, RecordSets: 6000}}}),
			metav1.ConditionTrue, clusterv1alpha1.ReasonRequestBudgetExceeded, []string{"zone of a: this cluster plans 72.0 list requests a minute while a region is lost"}},
		{"probeInterval 1 s: a region's heartbeats listed 60 times a minute while it is lost",
			PlanOf(Input{Failover: FailoverSettings{ProbeInterval: time.Second}, Zones: zones(1, 10, 0)}), metav1.ConditionTrue, clusterv1alpha1.ReasonRequestBudgetExceeded,
			// 60 + 1 page × 2 + 1 page × 2
			[]string{"zone of a: this cluster plans 64.0 list requests a minute while a region is lost", "spec.failover.probeInterval or heartbeatStaleAfter"}},
		{"heartbeatInterval 1 s: sized to 2 s, 30 heartbeat updates a minute, within the zone's share; the listings are what is flagged",
			PlanOf(Input{Failover: FailoverSettings{ProbeInterval: time.Second, HeartbeatInterval: time.Second}, Zones: zones(1, 10, 0)}), metav1.ConditionTrue, clusterv1alpha1.ReasonRequestBudgetExceeded,
			[]string{"zone of a: this cluster plans 64.0 list requests a minute while a region is lost"}},
		{"ten zones of 25,000 names: 50 requests a listing every 30 s while records change", PlanOf(Input{Zones: zones(10, 25000, 0)}),
			metav1.ConditionTrue, clusterv1alpha1.ReasonRequestBudgetExceeded,
			// per zone: 1.8 + 50 × 2 = 101.8 while changing, 1.8 + 50 × 0.2 = 11.8 at rest (verification's listings are failover's whole readings)
			[]string{"subscription " + subA + ": this cluster plans 1018.0 Resource Manager reads a minute while records change (118.0 at rest) in 10 zone(s)",
				"above its share of 750, half of the 1500 a minute a principal's read bucket refills", "azurePrivateDNS.interval"}},
		{"interval 1 s, 7,000 names: 14 requests a second", PlanOf(Input{Zones: zones(1, 7000, time.Second)}), metav1.ConditionTrue, clusterv1alpha1.ReasonRequestBudgetExceeded,
			[]string{"plans 841.8 Resource Manager reads a minute while records change"}},
		{"interval 1 s, 6,000 names: 12 requests a second fit the subscription, not the zone's 100 lists a minute", PlanOf(Input{Zones: zones(1, 6000, time.Second)}),
			metav1.ConditionTrue, clusterv1alpha1.ReasonRequestBudgetExceeded,
			[]string{"zone of a: this cluster plans 721.8 list requests a minute while records change (4.2 at rest), above its share of 50, half of the 100 a minute Azure Private DNS allows each zone",
				"azurePrivateDNS.interval or raise its pageSize"}},
		{"unknown sizes make the figures lower bounds", PlanOf(Input{Zones: []Zone{{Controller: "a", SubscriptionID: subA, RecordSets: UnknownRecordSets}}}),
			metav1.ConditionFalse, clusterv1alpha1.ReasonWithinRequestBudget, []string{"at least 0.2 (at least 2.0 while records change) reads and 0.0 writes"}},
		{"writes over the share (failover spaces heartbeats so that it cannot happen today)",
			Plan{Subscriptions: []SubscriptionPlan{{SubscriptionID: subA, Zones: 20, AtRest: Rate{Writes: 120}, Changing: Rate{Writes: 120}}}},
			metav1.ConditionTrue, clusterv1alpha1.ReasonRequestBudgetExceeded,
			[]string{"this cluster plans 120.0 Resource Manager writes a minute (failover's heartbeats) in 20 zone(s), above its share of 100, half of the 200 writes and deletes",
				"spec.failover.heartbeatInterval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Condition(tc.plan, 7)
			assert.Equal(t, clusterv1alpha1.ConditionOverRequestBudget, c.Type)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Equal(t, int64(7), c.ObservedGeneration)
			for _, m := range tc.messages {
				assert.Contains(t, c.Message, m)
			}
		})
	}
}

// Only the subscription over its share is named; the condition is the same from one reconcile
// to the next while the plan is.
func TestCondition_NamesOnlyTheSubscriptionsOver(t *testing.T) {
	big := zone("big", 25000, false)
	big.Interval = time.Second
	small := zone("small", 10, true)
	small.SubscriptionID = subB
	p := PlanOf(Input{Zones: []Zone{big, small}})
	c := Condition(p, 1)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Contains(t, c.Message, subA)
	assert.NotContains(t, c.Message, subB)
	assert.Equal(t, c, Condition(PlanOf(Input{Zones: []Zone{big, small}}), 1))
}
