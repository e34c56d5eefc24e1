package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/verify"
)

// statusConfiguration is a DNSConfiguration of generation 3 with a zone read through Resource
// Manager (weu, with failover settings), one asked by DNS (lab) and one not verified (neu).
func statusConfiguration() *clusterv1alpha1.DNSConfiguration {
	return &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName, Generation: 3},
		Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
			{Name: "external-dns-weu", Region: "weu", Failover: &clusterv1alpha1.ZoneFailover{OwnerID: "weu"},
				Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &clusterv1alpha1.AzurePrivateDNSVerification{
					SubscriptionID: "SUB", ResourceGroup: "rg", ZoneName: "example.internal"}}},
			{Name: "external-dns-lab", Region: "lab", Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{"10.0.0.53:53"}}},
			{Name: "external-dns-neu", Region: "neu"},
		}}}
}

func TestDNSConfigurationStatus(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	figure := &clusterv1alpha1.ZoneRequests{ReadsPerMinute: "5.2", WritesPerMinute: "6.0"}
	held := &clusterv1alpha1.ZoneRequests{ReadsPerMinute: "1.0", WritesPerMinute: "2.0"}
	lost := []clusterv1alpha1.RegionFailoverStatus{{Region: "weu", State: "Lost", Reason: "HeartbeatStale"}}
	condition := func(st clusterv1alpha1.DNSConfigurationStatus, conditionType string) *metav1.Condition {
		return meta.FindStatusCondition(st.Conditions, conditionType)
	}
	tests := []struct {
		name string
		// earlier is the status the DNSConfiguration holds; in the inputs but the configuration.
		earlier clusterv1alpha1.DNSConfigurationStatus
		in      DNSConfigurationInputs
		check   func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, o Outcome)
	}{
		{name: "at rest: controllers, zones, nothing held, within budget, failover not known yet", check: func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, o Outcome) {
			assert.Equal(t, []string{"external-dns-weu", "external-dns-lab", "external-dns-neu"}, st.Controllers)
			assert.Equal(t, Outcome{Phase: "Active", Ready: true, Reason: clusterv1alpha1.ReasonConfigurationValid, Message: "DNSConfiguration is valid: 3 ExternalDNS controller(s)"}, o)
			assert.Equal(t, metav1.ConditionFalse, condition(st, clusterv1alpha1.ConditionDeletionsHeld).Status)
			assert.Equal(t, metav1.NewTime(now), condition(st, clusterv1alpha1.ConditionDeletionsHeld).LastTransitionTime, "a new condition is stamped now")
			require.Len(t, st.Verification, 2, "the verified zones")
			assert.Equal(t, "external-dns-weu 0/0 published; external-dns-lab 0/0 published; external-dns-neu unverified", st.VerificationSummary)
			assert.Nil(t, st.Verification[0].Requests, "no figure yet, none held")
			budget := condition(st, clusterv1alpha1.ConditionOverRequestBudget)
			assert.Equal(t, clusterv1alpha1.ReasonWithinRequestBudget, budget.Reason)
			assert.Contains(t, budget.Message, "at least", "routes not counted: the zone's size is not known")
			assert.Nil(t, st.Failover)
			assert.Nil(t, condition(st, clusterv1alpha1.ConditionDrained))
		}},
		{name: "the DNSEndpoint API missing: not ready", in: DNSConfigurationInputs{EndpointsAPIMissing: true}, check: func(t *testing.T, _ clusterv1alpha1.DNSConfigurationStatus, o Outcome) {
			assert.False(t, o.Ready)
			assert.Equal(t, clusterv1alpha1.ReasonExternalDNSNotInstalled, o.Reason)
		}},
		{name: "deletions held", in: DNSConfigurationInputs{Held: 12, HeldUntil: now.Add(time.Minute)}, check: func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, _ Outcome) {
			c := condition(st, clusterv1alpha1.ConditionDeletionsHeld)
			assert.Equal(t, metav1.ConditionTrue, c.Status)
			assert.Equal(t, clusterv1alpha1.ReasonMassDeletionHeld, c.Reason)
			assert.Equal(t, int64(3), c.ObservedGeneration)
			assert.Contains(t, c.Message, "12 DNSEndpoint deletion(s)")
		}},
		{name: "an unchanged condition keeps its time",
			earlier: clusterv1alpha1.DNSConfigurationStatus{Conditions: []metav1.Condition{{Type: clusterv1alpha1.ConditionDeletionsHeld, Status: metav1.ConditionFalse,
				Reason: clusterv1alpha1.ReasonNoDeletionsHeld, LastTransitionTime: earlier}}},
			check: func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, _ Outcome) {
				assert.Equal(t, earlier, condition(st, clusterv1alpha1.ConditionDeletionsHeld).LastTransitionTime)
			}},
		{name: "routes counted: the zones' states and sizes",
			in: DNSConfigurationInputs{Counts: map[string]verify.ZoneCounts{
				"external-dns-weu": {routingv1alpha1.ZonePublished: 2999, routingv1alpha1.ZoneDrifted: 1},
				"external-dns-lab": {routingv1alpha1.ZonePending: 4}}},
			check: func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, _ Outcome) {
				assert.Equal(t, clusterv1alpha1.ZoneVerificationStatus{Controller: "external-dns-weu", Routes: 3000, Published: 2999, Drifted: 1}, st.Verification[0])
				assert.Equal(t, "external-dns-weu 2999/3000 published, 1 drifted; external-dns-lab 0/4 published, 4 pending; external-dns-neu unverified", st.VerificationSummary)
				assert.NotContains(t, condition(st, clusterv1alpha1.ConditionOverRequestBudget).Message, "at least", "3,000 routes: the zone's size is known")
			}},
		{name: "a new figure of a zone's requests replaces the one held",
			earlier: clusterv1alpha1.DNSConfigurationStatus{Verification: []clusterv1alpha1.ZoneVerificationStatus{{Controller: "external-dns-weu", Requests: held}}},
			in:      DNSConfigurationInputs{Requests: map[string]*clusterv1alpha1.ZoneRequests{"external-dns-weu": figure}},
			check: func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, _ Outcome) {
				assert.Equal(t, figure, st.Verification[0].Requests)
			}},
		{name: "without a figure (a restart, a failed write), the one held stays",
			earlier: clusterv1alpha1.DNSConfigurationStatus{Verification: []clusterv1alpha1.ZoneVerificationStatus{{Controller: "external-dns-weu", Requests: held}}},
			in:      DNSConfigurationInputs{Requests: map[string]*clusterv1alpha1.ZoneRequests{"external-dns-weu": nil}},
			check: func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, _ Outcome) {
				assert.Equal(t, held, st.Verification[0].Requests)
			}},
		{name: "a zone asked by DNS has no requests, even held ones",
			earlier: clusterv1alpha1.DNSConfigurationStatus{Verification: []clusterv1alpha1.ZoneVerificationStatus{{Controller: "external-dns-lab", Requests: held}}},
			in:      DNSConfigurationInputs{Requests: map[string]*clusterv1alpha1.ZoneRequests{"external-dns-lab": figure}},
			check: func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, _ Outcome) {
				assert.Nil(t, st.Verification[1].Requests)
			}},
		{name: "failover not known yet: the earlier leader's view stays",
			earlier: clusterv1alpha1.DNSConfigurationStatus{Failover: lost, Conditions: []metav1.Condition{{Type: clusterv1alpha1.ConditionDrained, Status: metav1.ConditionTrue}}},
			check: func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, _ Outcome) {
				assert.Equal(t, lost, st.Failover)
				assert.NotNil(t, condition(st, clusterv1alpha1.ConditionDrained))
			}},
		{name: "failover known: its view, and no drain removes Drained",
			earlier: clusterv1alpha1.DNSConfigurationStatus{Failover: lost, Conditions: []metav1.Condition{{Type: clusterv1alpha1.ConditionDrained, Status: metav1.ConditionTrue}}},
			in:      DNSConfigurationInputs{RegionsKnown: true, DrainKnown: true, Drain: Drain{Known: true, Here: 3}},
			check: func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, _ Outcome) {
				assert.Nil(t, st.Failover, "no region to report")
				assert.Nil(t, condition(st, clusterv1alpha1.ConditionDrained))
			}},
		{name: "a drain under way", in: DNSConfigurationInputs{RegionsKnown: true, Regions: lost, DrainKnown: true, Drain: Drain{Draining: true, Known: true, Here: 1, Away: 2}},
			check: func(t *testing.T, st clusterv1alpha1.DNSConfigurationStatus, _ Outcome) {
				assert.Equal(t, lost, st.Failover)
				c := condition(st, clusterv1alpha1.ConditionDrained)
				require.NotNil(t, c)
				assert.Equal(t, clusterv1alpha1.ReasonDrainInProgress, c.Reason)
				assert.Equal(t, int64(3), c.ObservedGeneration)
				assert.Equal(t, metav1.NewTime(now), c.LastTransitionTime)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := statusConfiguration()
			cfg.Status = tt.earlier
			before := cfg.DeepCopy()
			in := tt.in
			in.Configuration, in.Now = cfg, now
			st, o := DNSConfigurationStatus(in)
			tt.check(t, st, o)
			assert.Equal(t, before, cfg, "the configuration read is not changed")
		})
	}
}
