package decide

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/policy"
)

// StandInCondition says whether this cluster can stand in for a policy's names where it is one of
// the policy's stand-ins: a stand-in takes over only names it publishes itself, so in each other
// region whose zone has failover settings it must publish the namespace's names (adopt the
// region). nil when the policy has no failover settings, this cluster's region is not among its
// stand-ins, or the policy does not apply here: the condition is then removed.
func StandInCondition(pol *routingv1alpha1.DNSPolicy, identity *clusterv1alpha1.ClusterIdentity, cfg *clusterv1alpha1.DNSConfiguration,
	active []policy.Controller) *metav1.Condition {
	if pol.Spec.Failover == nil || identity == nil || cfg == nil || !slices.Contains(pol.Spec.Failover.StandIns, identity.Spec.Region) {
		return nil
	}
	own := identity.Spec.Region
	var covered, missing []string
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if c.Failover == nil || c.Region == own || slices.Contains(covered, c.Region) || slices.Contains(missing, c.Region) {
			continue
		}
		if slices.ContainsFunc(active, func(a policy.Controller) bool { return a.Name == c.Name }) {
			covered = append(covered, c.Region)
		} else {
			missing = append(missing, c.Region)
		}
	}
	c := &metav1.Condition{Type: routingv1alpha1.ConditionStandIn, Status: metav1.ConditionTrue, Reason: routingv1alpha1.ReasonStandsIn,
		ObservedGeneration: pol.Generation}
	switch {
	case len(missing) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, routingv1alpha1.ReasonRegionsNotAdopted
		c.Message = fmt.Sprintf("this cluster (%s, region %s) is a stand-in of this policy, but does not publish its names in the zones of %s, "+
			"regions with failover settings that ClusterIdentity %s does not adopt: it cannot take them over there; add the regions to spec.adoptsRegions",
			identity.Spec.Cluster, own, strings.Join(missing, ", "), clusterv1alpha1.ClusterIdentityName)
		if len(covered) > 0 {
			c.Message += fmt.Sprintf(" (it can in %s)", strings.Join(covered, ", "))
		}
	case len(covered) == 0:
		c.Status, c.Reason = metav1.ConditionFalse, routingv1alpha1.ReasonNoFailoverZones
		c.Message = fmt.Sprintf("this cluster (region %s) is a stand-in of this policy, but no other region's zone has failover settings in %s: nothing can move here",
			own, clusterv1alpha1.DNSConfigurationName)
	default:
		c.Message = fmt.Sprintf("this cluster (%s, region %s) publishes this policy's names in the zones of %s and can take them over there when their region is lost",
			identity.Spec.Cluster, own, strings.Join(covered, ", "))
	}
	return c
}
