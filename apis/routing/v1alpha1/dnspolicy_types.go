package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DNSPolicyMode is how a DNSPolicy picks ExternalDNS controllers.
// +kubebuilder:validation:Enum=Active;RegionBound
type DNSPolicyMode string

const (
	// DNSPolicyModeActive activates the controllers of the cluster's own region and of the regions
	// it adopts: every cluster serves its own region.
	DNSPolicyModeActive DNSPolicyMode = "Active"
	// DNSPolicyModeRegionBound activates every controller, but only in the cluster matching
	// sourceRegion (and sourceCluster): one cluster serves every region.
	DNSPolicyModeRegionBound DNSPolicyMode = "RegionBound"
)

// DNSPolicySpec is the DNS propagation strategy of the namespace's ServiceRoutes.
// +kubebuilder:validation:XValidation:rule="self.mode != 'RegionBound' || (has(self.sourceRegion) && size(self.sourceRegion) > 0)",message="sourceRegion is required in RegionBound mode: without it every cluster would write every regional zone",fieldPath=".sourceRegion"
// +kubebuilder:validation:XValidation:rule="!has(self.failover) || (self.mode == 'Active' && (!has(self.sourceRegion) || size(self.sourceRegion) == 0) && (!has(self.sourceCluster) || size(self.sourceCluster) == 0))",message="failover needs mode Active without sourceRegion or sourceCluster: a stand-in takes over only names its own cluster publishes, and a policy that applies in one region or cluster is published by no stand-in",fieldPath=".failover"
type DNSPolicySpec struct {
	// mode is Active (each cluster serves its own and adopted regions) or RegionBound (the
	// cluster in sourceRegion serves every region).
	// +required
	Mode DNSPolicyMode `json:"mode"`

	// sourceRegion, when set, makes the policy apply only in clusters of this region. Required in
	// RegionBound mode.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="sourceRegion must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	SourceRegion string `json:"sourceRegion,omitempty"`

	// sourceCluster, when set, makes the policy apply only in the cluster of this name.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="sourceCluster must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	SourceCluster string `json:"sourceCluster,omitempty"`

	// recordTTL is the TTL, in seconds, of the CNAMEs of this namespace's ServiceRoutes (30 to
	// 86400). The DNSConfiguration's recordTTLBounds hold it to the platform's range; unset, the
	// DNSConfiguration's recordTTL applies (300 by default). status.recordTTL is the TTL in use.
	// +optional
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=86400
	RecordTTL *int32 `json:"recordTTL,omitempty"`

	// failover, when set, lets other regions stand in for this namespace's names when the region
	// that serves them is lost (docs/USER-GUIDE.md#regional-failover). Without it nothing moves
	// when a region is lost. Only in mode Active without sourceRegion or sourceCluster: a stand-in
	// takes over the names its own cluster publishes.
	// +optional
	Failover *PolicyFailover `json:"failover,omitempty"`
}

// PolicyFailover says which regions may take this namespace's names when a region is lost.
type PolicyFailover struct {
	// standIns are the regions that may take over, in order: the first one whose cluster is alive
	// takes the names. Only zones whose controller has failover settings in the DNSConfiguration
	// take part.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="each stand-in must be a region name: a DNS label"
	// +kubebuilder:validation:XValidation:rule="self.all(r, self.exists_one(s, s == r))",message="standIns must not repeat a region"
	StandIns []string `json:"standIns"`

	// failback is how the names go back to their own region once it is healthy again: Manual
	// (the default: they stay with the stand-in until the platform team passes them back) or
	// Automatic (the region's own cluster takes them back once its gateway has answered for the
	// DNSConfiguration's failover.failbackAfter).
	// +optional
	// +kubebuilder:default=Manual
	Failback FailbackMode `json:"failback,omitempty"`
}

// FailbackMode is how names taken over by a stand-in go back.
// +kubebuilder:validation:Enum=Manual;Automatic
type FailbackMode string

const (
	// FailbackManual: the names stay with the stand-in until passed back by hand.
	FailbackManual FailbackMode = "Manual"
	// FailbackAutomatic: the home region's cluster takes them back once healthy for failbackAfter.
	FailbackAutomatic FailbackMode = "Automatic"
)

// DNSPolicyStatus says whether the policy applies to this cluster and which ExternalDNS
// controllers it activates.
type DNSPolicyStatus struct {
	// phase is Active when the policy applies here, Inactive when it does not, Pending while the
	// ClusterIdentity or DNSConfiguration is missing.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// active is true when the policy applies to this cluster.
	// +optional
	Active bool `json:"active"`

	// activeControllers are the names of the ExternalDNS controllers ServiceRoutes in this
	// namespace write DNSEndpoints for.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	ActiveControllers []string `json:"activeControllers,omitempty"`

	// recordTTL is the TTL, in seconds, the CNAMEs of this namespace's ServiceRoutes carry:
	// spec.recordTTL held to the DNSConfiguration's recordTTLBounds, or the DNSConfiguration's
	// recordTTL.
	// +optional
	RecordTTL int32 `json:"recordTTL,omitempty"`

	// observedGeneration is the metadata.generation the status was computed from.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the policy's state; Ready is True when activeControllers is current.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DNSPolicy decides, for the ServiceRoutes of its namespace, which regional DNS zones this cluster
// writes records to.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dnsp,categories=router
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Source",type=string,JSONPath=`.spec.sourceRegion`,priority=1
// +kubebuilder:printcolumn:name="Active",type=boolean,JSONPath=`.status.active`
// +kubebuilder:printcolumn:name="Controllers",type=string,JSONPath=`.status.activeControllers`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DNSPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DNSPolicySpec `json:"spec"`

	// The status exists from creation on, with observedGeneration 0, so that status tools (kstatus,
	// GitOps health checks) see a new object as in progress until the operator has observed it.
	// +optional
	// +kubebuilder:default={}
	Status DNSPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DNSPolicyList is a list of DNSPolicy.
type DNSPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSPolicy `json:"items"`
}
