package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExternalDNSController is one ExternalDNS instance, identified by the value of the
// external-dns.alpha.kubernetes.io/controller annotation it filters on.
type ExternalDNSController struct {
	// name is the controller's logical name: generated DNSEndpoints carry it in the
	// external-dns.alpha.kubernetes.io/controller annotation, so it must equal the value in that
	// ExternalDNS instance's --annotation-filter.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="controller name must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Name string `json:"name"`

	// region is the region whose DNS zone this controller writes. Active DNSPolicies use the
	// controllers of the cluster's own region and of its adopted regions.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="controller region must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Region string `json:"region"`
}

// DNSConfigurationSpec lists every ExternalDNS controller of the infrastructure.
type DNSConfigurationSpec struct {
	// externalDNSControllers are all ExternalDNS instances DNSPolicies may select from. Names are
	// unique.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	ExternalDNSControllers []ExternalDNSController `json:"externalDNSControllers"`
}

// DNSConfigurationStatus is the observed state of the DNSConfiguration.
type DNSConfigurationStatus struct {
	// phase is Pending until the configuration has been validated, then Active or Failed.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// controllers are the names of the ExternalDNS controllers in use, in order (shown by
	// `kubectl get dnscfg`).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Controllers []string `json:"controllers,omitempty"`

	// observedGeneration is the metadata.generation the status was computed from.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the configuration's state; Ready is True when it is valid and in use.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DNSConfiguration is the registry of ExternalDNS controllers, one per regional DNS zone.
// It is a singleton: the only accepted name is dns-config.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=dnscfg,categories=router
// +kubebuilder:printcolumn:name="Controllers",type=string,JSONPath=`.status.controllers`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name == 'dns-config'",message="DNSConfiguration is a singleton: metadata.name must be dns-config"
type DNSConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DNSConfigurationSpec `json:"spec"`

	// The status exists from creation on, with observedGeneration 0, so that status tools (kstatus,
	// GitOps health checks) see a new object as in progress until the operator has observed it.
	// +optional
	// +kubebuilder:default={}
	Status DNSConfigurationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// DNSConfigurationList is a list of DNSConfiguration.
type DNSConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DNSConfiguration `json:"items"`
}
