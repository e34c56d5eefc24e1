// Package decide holds the decisions of the reconcilers as pure functions: given everything a
// reconciler read from the cache, what should exist and what the status should say. Controllers
// only gather the inputs and apply the plan; every branch here is table-tested without a client.
package decide

import (
	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/policy"
)

// Outcome is what the Ready condition and phase of an object should say.
type Outcome struct {
	Phase   string
	Ready   bool
	Reason  string
	Message string
}

// IdentityOf converts a ClusterIdentity to the values a policy depends on.
func IdentityOf(ci *clusterv1alpha1.ClusterIdentity) policy.Identity {
	return policy.Identity{Region: ci.Spec.Region, Cluster: ci.Spec.Cluster, AdoptsRegions: ci.Spec.AdoptsRegions}
}

// ControllersOf lists the ExternalDNS controllers of a DNSConfiguration in order; nil for nil.
func ControllersOf(cfg *clusterv1alpha1.DNSConfiguration) []policy.Controller {
	if cfg == nil {
		return nil
	}
	controllers := make([]policy.Controller, len(cfg.Spec.ExternalDNSControllers))
	for i, c := range cfg.Spec.ExternalDNSControllers {
		controllers[i] = policy.Controller{Name: c.Name, Region: c.Region}
	}
	return controllers
}
