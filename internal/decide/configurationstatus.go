package decide

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/budget"
	"github.com/service-router/service-router-operator/internal/policy"
	"github.com/service-router/service-router-operator/internal/verify"
)

// DNSConfigurationInputs is what the DNSConfiguration's status is made of: the object, and what
// its reconciler gathered from the mass-deletion guard, publication verification, the Resource
// Manager request counters and regional failover.
type DNSConfigurationInputs struct {
	// Configuration is the DNSConfiguration as read: its spec, and the status written before.
	Configuration *clusterv1alpha1.DNSConfiguration
	// EndpointsAPIMissing says the DNSEndpoint API is not served (ExternalDNS not installed).
	EndpointsAPIMissing bool
	// Held is how many deletions the mass-deletion guard holds back, HeldUntil when the last of
	// them may proceed.
	Held      int
	HeldUntil time.Time
	// Counts are each verified zone's routes by state there; nil: routes are not counted (no
	// verification runs), and the request budget does not know the zones' sizes.
	Counts map[string]verify.ZoneCounts
	// Requests are this process's last figure of the requests it sent to each zone read through
	// Resource Manager; none for a zone (or nil): none since this process started, and the status
	// keeps the figure it holds.
	Requests map[string]*clusterv1alpha1.ZoneRequests
	// Regions is regional failover's view of the other regions, and Drain where a drain of this
	// cluster's region stands; each only when known (this leader's first round has judged): the
	// status otherwise keeps what it says.
	Regions      []clusterv1alpha1.RegionFailoverStatus
	RegionsKnown bool
	Drain        Drain
	DrainKnown   bool
	// Now stamps the conditions that change.
	Now time.Time
}

// DNSConfigurationStatus is the DNSConfiguration's status: its controllers, DeletionsHeld, each
// verified zone's routes by state (ZoneVerification) with, for a zone read through Resource
// Manager, the requests sent to it, OverRequestBudget (whether this cluster's planned requests fit
// its share of Resource Manager's limits), the regions' failover states and Drained; and the
// outcome (Ready, phase) SetOutcome writes with it. The conditions' events are StatusEvents'.
func DNSConfigurationStatus(in DNSConfigurationInputs) (clusterv1alpha1.DNSConfigurationStatus, Outcome) {
	cfg := in.Configuration
	st := *cfg.Status.DeepCopy()
	set := func(c *metav1.Condition, conditionType string) {
		if c != nil {
			c.LastTransitionTime = metav1.NewTime(in.Now)
		}
		SetOrRemoveCondition(&st.Conditions, conditionType, c)
	}
	st.Controllers = policy.Names(ControllersOf(cfg))
	held := DeletionsHeldCondition(in.Held, in.HeldUntil, cfg.Generation)
	set(&held, clusterv1alpha1.ConditionDeletionsHeld)
	st.Verification, st.VerificationSummary = ZoneVerification(cfg, func(controller string) verify.ZoneCounts { return in.Counts[controller] })
	setRequests(st.Verification, cfg, in.Requests)
	requestBudget := budgetCondition(cfg, st.Verification, in.Counts != nil)
	set(&requestBudget, clusterv1alpha1.ConditionOverRequestBudget)
	if in.RegionsKnown {
		st.Failover = in.Regions
	}
	if in.DrainKnown {
		set(DrainedCondition(in.Drain, cfg.Generation), clusterv1alpha1.ConditionDrained)
	}
	return st, DNSConfiguration(cfg, in.EndpointsAPIMissing)
}

// setRequests sets the requests of every zone read through Resource Manager: this process's last
// figure, or until it has one the figure the status held (after a restart of the operator, or a
// status write that failed); none for the other zones. Between two figures the status is not
// rewritten for them: a figure is made once a window (budget.Due).
func setRequests(zones []clusterv1alpha1.ZoneVerificationStatus, cfg *clusterv1alpha1.DNSConfiguration, figures map[string]*clusterv1alpha1.ZoneRequests) {
	held := map[string]*clusterv1alpha1.ZoneRequests{}
	for _, v := range cfg.Status.Verification {
		held[v.Controller] = v.Requests
	}
	azure := map[string]bool{}
	for _, c := range cfg.Spec.ExternalDNSControllers {
		azure[c.Name] = c.Verification != nil && c.Verification.AzurePrivateDNS != nil
	}
	for i := range zones {
		v := &zones[i]
		switch {
		case !azure[v.Controller]:
			v.Requests = nil
		case figures[v.Controller] != nil:
			v.Requests = figures[v.Controller].DeepCopy()
		default:
			v.Requests = held[v.Controller].DeepCopy()
		}
	}
}

// budgetCondition is the OverRequestBudget condition of the plan of this cluster's requests
// (budget.PlanOf), each zone's record sets estimated from the routes verification counts in it
// (unknown when routes are not counted).
func budgetCondition(cfg *clusterv1alpha1.DNSConfiguration, zones []clusterv1alpha1.ZoneVerificationStatus, counted bool) metav1.Condition {
	names := func(controller string) (int, bool) {
		if !counted {
			return 0, false
		}
		for _, v := range zones {
			if v.Controller == controller {
				return int(v.Routes), true
			}
		}
		return 0, false
	}
	return budget.Condition(budget.PlanOf(budget.InputOf(cfg, names)), cfg.Generation)
}
