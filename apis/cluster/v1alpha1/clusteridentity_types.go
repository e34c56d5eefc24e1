package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterIdentitySpec says which cluster this is: the values every generated hostname is built from.
// +kubebuilder:validation:XValidation:rule="!has(self.adoptsRegions) || !(self.region in self.adoptsRegions)",message="adoptsRegions must not contain the cluster's own region",fieldPath=".adoptsRegions"
// +kubebuilder:validation:XValidation:rule="size(self.cluster) + size(self.region) + size(self.domain) + 4 <= 253",message="cluster, region and domain leave no room for a gateway target hostname {cluster}-{region}-{targetPostfix}.{domain} within the 253 characters a DNS name may have",fieldPath=".domain"
type ClusterIdentitySpec struct {
	// region is this cluster's region code (for example weu, neu, frc). It selects the
	// ExternalDNS controllers an Active DNSPolicy uses and is part of the gateway target hostname
	// {cluster}-{region}-{targetPostfix}.{domain}.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="region must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Region string `json:"region"`

	// cluster is this cluster's unique name (for example vec-weu-d-aks01). It is the first part of
	// the gateway target hostname.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="cluster must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Cluster string `json:"cluster"`

	// domain is the DNS zone every record is written under (for example aks.vecd.vczc.nl). At
	// most 242 characters, so that the shortest service hostname (a 10-character first label)
	// still fits in a DNS name; longer service names under a long domain are reported on their
	// ServiceRoute as InvalidHostname.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=242
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?([.][a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$')",message="domain must be a lowercase DNS name: dot-separated labels of at most 63 lowercase letters, digits and '-', each starting and ending with a letter or digit"
	Domain string `json:"domain"`

	// environmentLetter is the one-character environment code (d=dev, t=test, p=prod) placed in
	// every service hostname: {serviceName}-ns-{environmentLetter}-{environment}-{application}.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]$')",message="environmentLetter must be one lowercase letter or digit"
	EnvironmentLetter string `json:"environmentLetter"`

	// adoptsRegions lists regions without a cluster of their own whose DNS zones this cluster
	// serves: an Active DNSPolicy also activates the ExternalDNS controllers of these regions.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="each adopted region must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	AdoptsRegions []string `json:"adoptsRegions,omitempty"`
}

// ClusterIdentityStatus is the observed state of the ClusterIdentity.
type ClusterIdentityStatus struct {
	// phase is Pending until the identity has been validated, then Active or Failed.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// observedGeneration is the metadata.generation the status was computed from.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the identity's state; Ready is True when it is valid and in use.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterIdentity names the region, cluster, domain and environment of this Kubernetes cluster.
// It is a singleton: the only accepted name is cluster-identity.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=cid,categories=router
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.spec.region`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`
// +kubebuilder:printcolumn:name="Domain",type=string,JSONPath=`.spec.domain`
// +kubebuilder:printcolumn:name="Env",type=string,JSONPath=`.spec.environmentLetter`
// +kubebuilder:printcolumn:name="Adopts",type=string,JSONPath=`.spec.adoptsRegions`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'cluster-identity'",message="ClusterIdentity is a singleton: metadata.name must be cluster-identity"
type ClusterIdentity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ClusterIdentitySpec `json:"spec"`

	// The status exists from creation on, with observedGeneration 0, so that status tools (kstatus,
	// GitOps health checks) see a new object as in progress until the operator has observed it.
	// +optional
	// +kubebuilder:default={}
	Status ClusterIdentityStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterIdentityList is a list of ClusterIdentity.
type ClusterIdentityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterIdentity `json:"items"`
}
