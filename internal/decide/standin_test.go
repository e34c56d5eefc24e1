package decide

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/policy"
)

// A stand-in can take over only the names it publishes: in a cluster of a stand-in region the
// policy says in which failover zones it does, and names those it does not (regions not adopted).
func TestStandInCondition(t *testing.T) {
	withFailover := func(region string) clusterv1alpha1.ExternalDNSController {
		return clusterv1alpha1.ExternalDNSController{Name: "external-dns-" + region, Region: region, Failover: &clusterv1alpha1.ZoneFailover{OwnerID: "o", TXTPrefix: "p-"}}
	}
	without := func(region string) clusterv1alpha1.ExternalDNSController {
		return clusterv1alpha1.ExternalDNSController{Name: "external-dns-" + region, Region: region}
	}
	cfg := func(cs ...clusterv1alpha1.ExternalDNSController) *clusterv1alpha1.DNSConfiguration {
		return &clusterv1alpha1.DNSConfiguration{Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: cs}}
	}
	identity := &clusterv1alpha1.ClusterIdentity{Spec: clusterv1alpha1.ClusterIdentitySpec{Region: "neu", Cluster: "aks02"}}
	pol := func(standIns ...string) *routingv1alpha1.DNSPolicy {
		p := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Generation: 4}, Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}}
		if standIns != nil {
			p.Spec.Failover = &routingv1alpha1.PolicyFailover{StandIns: standIns}
		}
		return p
	}
	active := func(regions ...string) []policy.Controller {
		var out []policy.Controller
		for _, r := range regions {
			out = append(out, policy.Controller{Name: "external-dns-" + r, Region: r})
		}
		return out
	}
	three := cfg(withFailover("weu"), withFailover("neu"), withFailover("frc"))
	for _, tc := range []struct {
		name     string
		policy   *routingv1alpha1.DNSPolicy
		config   *clusterv1alpha1.DNSConfiguration
		active   []policy.Controller
		want     metav1.ConditionStatus // "" for no condition
		reason   string
		messages []string
	}{
		{"no failover settings", pol(), three, active("neu"), "", "", nil},
		{"another region stands in", pol("frc"), three, active("neu"), "", "", nil},
		{"adopting every other failover region", pol("neu"), three, active("neu", "weu", "frc"), metav1.ConditionTrue, routingv1alpha1.ReasonStandsIn,
			[]string{"in the zones of weu, frc and can take them over"}},
		{"adopting none: the guide's missing step", pol("frc", "neu"), three, active("neu"), metav1.ConditionFalse, routingv1alpha1.ReasonRegionsNotAdopted,
			[]string{"does not publish its names in the zones of weu, frc", "add the regions to spec.adoptsRegions"}},
		{"adopting one of two", pol("neu"), three, active("neu", "weu"), metav1.ConditionFalse, routingv1alpha1.ReasonRegionsNotAdopted,
			[]string{"zones of frc", "(it can in weu)"}},
		{"a zone without failover settings does not count", pol("neu"), cfg(withFailover("weu"), without("frc"), withFailover("neu")), active("neu", "weu"),
			metav1.ConditionTrue, routingv1alpha1.ReasonStandsIn, []string{"in the zones of weu and"}},
		{"no other failover zone", pol("neu"), cfg(withFailover("neu"), without("weu")), active("neu", "weu"), metav1.ConditionFalse, routingv1alpha1.ReasonNoFailoverZones,
			[]string{"nothing can move here"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := StandInCondition(tc.policy, identity, tc.config, tc.active)
			if tc.want == "" {
				if c != nil {
					t.Fatalf("want no condition, got %+v", c)
				}
				return
			}
			if c == nil {
				t.Fatal("no condition")
			}
			if c.Type != routingv1alpha1.ConditionStandIn || c.Status != tc.want || c.Reason != tc.reason || c.ObservedGeneration != 4 {
				t.Errorf("got %s=%s (%s) at generation %d, want %s (%s) at 4", c.Type, c.Status, c.Reason, c.ObservedGeneration, tc.want, tc.reason)
			}
			for _, m := range tc.messages {
				if !strings.Contains(c.Message, m) {
					t.Errorf("message %q lacks %q", c.Message, m)
				}
			}
		})
	}
}
