package decide

import (
	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// Progress is what an outcome tells a GitOps tool about the road ahead: kstatus (Flux, cli-utils)
// and Argo CD judge an object by Ready, Reconciling and Stalled.
type Progress string

const (
	// Done: Ready, or not Ready on purpose (nothing to wait for, nothing to fix).
	Done Progress = ""
	// Progressing: the operator waits for something that is expected to appear without anyone
	// changing a spec (a load balancer address, an object applied in the same sync, a CRD being
	// installed) or retries an error. Condition Reconciling=True; kstatus InProgress.
	Progressing Progress = clusterv1alpha1.ConditionReconciling
	// Stalled: nothing changes until a person changes a spec — this object's, or the one it
	// conflicts with. Condition Stalled=True; kstatus Failed; Argo CD Degraded.
	Stalled Progress = clusterv1alpha1.ConditionStalled
)

// stalledReasons are the Ready=False reasons that waiting cannot resolve: the object as written
// cannot be served (its names, its credentials, its application), it conflicts with another
// object that keeps what it has (an older route, a foreign DNSEndpoint, a listener), or the
// platform's configuration leaves it nowhere to publish. Each names what to change in its message.
var stalledReasons = map[string]bool{
	routingv1alpha1.ReasonOwnershipConflict:              true,
	routingv1alpha1.ReasonHostnameConflict:               true,
	routingv1alpha1.ReasonDuplicatePolicy:                true,
	routingv1alpha1.ReasonInvalidHostname:                true,
	routingv1alpha1.ReasonApplicationNotAllowed:          true,
	routingv1alpha1.ReasonNotAllowedByGateway:            true,
	routingv1alpha1.ReasonGatewayHostLimit:               true,
	routingv1alpha1.ReasonListenerConflict:               true,
	routingv1alpha1.ReasonCredentialNameMissing:          true,
	routingv1alpha1.ReasonIngressNamespaceConflict:       true,
	routingv1alpha1.ReasonEntryPointShared:               true,
	routingv1alpha1.ReasonNoActiveControllers:            true,
	clusterv1alpha1.ReasonRegionWithoutController:        true,
	clusterv1alpha1.ReasonAdoptedRegionWithoutController: true,
	clusterv1alpha1.ReasonTargetHostnameTooLong:          true,
}

// settledReasons are the Ready=False reasons that are an intended state: a route whose
// namespace's policy applies to other clusters publishes nothing from here on purpose.
var settledReasons = map[string]bool{
	routingv1alpha1.ReasonDNSPolicyInactive: true,
}

// ProgressOf classifies an outcome (err: the reconcile failed and is retried). Any other Ready=False
// reason — a missing Gateway, DNSPolicy, ClusterIdentity, DNSConfiguration, CRD or load balancer
// address — is Progressing: GitOps tools apply objects in no particular order, and each of these
// appears in the same sync or shortly after; a route whose Gateway is deleted for good stays
// Progressing with reason GatewayNotFound until its Gateway is back or the route goes.
func ProgressOf(o Outcome, err error) Progress {
	switch {
	case err != nil:
		return Progressing
	case o.Ready || settledReasons[o.Reason]:
		return Done
	case stalledReasons[o.Reason]:
		return Stalled
	}
	return Progressing
}
