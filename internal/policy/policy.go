// Package policy decides which ExternalDNS controllers a DNSPolicy activates in this cluster, by
// the mode rules of the architecture document. It is pure and table-tested.
package policy

import (
	"fmt"
	"slices"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// Identity is the part of the ClusterIdentity a policy depends on.
type Identity struct {
	Region        string
	Cluster       string
	AdoptsRegions []string
}

// Controller is one ExternalDNS controller of the DNSConfiguration.
type Controller struct {
	Name   string
	Region string
}

// Decision is the outcome for one policy: whether it applies here and the controllers it activates,
// in DNSConfiguration order.
type Decision struct {
	Active      bool
	Controllers []Controller
	// Reason is ReasonPolicyActive, ReasonPolicyInactive or ReasonNoActiveControllers.
	Reason  string
	Message string
}

// Decide applies the mode rules:
//   - sourceRegion and sourceCluster, when set, must match this cluster in either mode, otherwise
//     the policy is inactive;
//   - Active activates the controllers of the cluster's region and of its adopted regions;
//   - RegionBound activates every controller.
func Decide(spec routingv1alpha1.DNSPolicySpec, identity Identity, controllers []Controller) Decision {
	if spec.SourceRegion != "" && spec.SourceRegion != identity.Region {
		return Decision{Reason: routingv1alpha1.ReasonPolicyInactive,
			Message: fmt.Sprintf("sourceRegion %s does not match this cluster's region %s: no DNS records are written from this cluster", spec.SourceRegion, identity.Region)}
	}
	if spec.SourceCluster != "" && spec.SourceCluster != identity.Cluster {
		return Decision{Reason: routingv1alpha1.ReasonPolicyInactive,
			Message: fmt.Sprintf("sourceCluster %s does not match this cluster %s: no DNS records are written from this cluster", spec.SourceCluster, identity.Cluster)}
	}

	var active []Controller
	var scope string
	switch spec.Mode {
	case routingv1alpha1.DNSPolicyModeRegionBound:
		active = slices.Clone(controllers)
		scope = "every region"
	default: // Active; admission admits no other mode
		regions := append([]string{identity.Region}, identity.AdoptsRegions...)
		for _, c := range controllers {
			if slices.Contains(regions, c.Region) {
				active = append(active, c)
			}
		}
		scope = fmt.Sprintf("regions %v", regions)
	}
	if len(active) == 0 {
		return Decision{Active: true, Reason: routingv1alpha1.ReasonNoActiveControllers,
			Message: fmt.Sprintf("%s mode applies to this cluster, but the DNSConfiguration has no ExternalDNS controller for %s", spec.Mode, scope)}
	}
	return Decision{Active: true, Controllers: active, Reason: routingv1alpha1.ReasonPolicyActive,
		Message: fmt.Sprintf("%s mode: %d ExternalDNS controller(s) active for %s", spec.Mode, len(active), scope)}
}

// Names returns the controllers' names in order (nil for none).
func Names(controllers []Controller) []string {
	var names []string
	for _, c := range controllers {
		names = append(names, c.Name)
	}
	return names
}
