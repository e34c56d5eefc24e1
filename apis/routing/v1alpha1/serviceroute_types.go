package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ServiceRouteSpec names a service and the gateway it is published on. The client-facing hostname
// is {serviceName}-ns-{environmentLetter}-{environment}-{application}.{domain}.
// +kubebuilder:validation:XValidation:rule="!has(self.serviceName) || !has(self.environment) || !has(self.application) || self.serviceName.size() + self.environment.size() + self.application.size() <= 56",message="the generated hostname label {serviceName}-ns-{environmentLetter}-{environment}-{application} must fit in 63 characters: serviceName, environment and application may have at most 56 characters together"
type ServiceRouteSpec struct {
	// serviceName is the first part of the hostname (for example api).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=54
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="serviceName must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	ServiceName string `json:"serviceName"`

	// gatewayName is the name of the Gateway (routing.router.io) the hostname is served on.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="gatewayName must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	GatewayName string `json:"gatewayName"`

	// gatewayNamespace is the namespace of the Gateway. Defaults to istio-system.
	// +optional
	// +kubebuilder:default=istio-system
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="gatewayNamespace must be a namespace name: lowercase letters, digits and '-', starting and ending with a letter or digit"
	GatewayNamespace string `json:"gatewayNamespace,omitempty"`

	// environment is the environment part of the hostname (for example prod, dev, test).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=54
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="environment must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Environment string `json:"environment"`

	// application is the application part of the hostname (for example myapp).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=54
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="application must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Application string `json:"application"`
}

// ManagedEndpoint is one DNSEndpoint the ServiceRoute owns.
type ManagedEndpoint struct {
	// name is the DNSEndpoint's name, in the ServiceRoute's namespace.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// controller is the ExternalDNS controller the DNSEndpoint is annotated for.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Controller string `json:"controller"`

	// region is that controller's region.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Region string `json:"region,omitempty"`
}

// ServiceRouteStatus is the observed state of the ServiceRoute.
type ServiceRouteStatus struct {
	// phase is Active when every DNSEndpoint exists, Pending while the route waits for a policy or
	// the cluster identity, Failed when it cannot be served as written.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// hostname is the client-facing name this route publishes.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Hostname string `json:"hostname,omitempty"`

	// targetHostname is the gateway name the hostname is a CNAME to.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TargetHostname string `json:"targetHostname,omitempty"`

	// DNSEndpoint is the name of the first generated DNSEndpoint (see endpoints for all of them).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DNSEndpoint string `json:"DNSEndpoint,omitempty"`

	// endpoints lists every DNSEndpoint this route manages, one per active ExternalDNS controller.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Endpoints []ManagedEndpoint `json:"endpoints,omitempty"`

	// zones is the publication state of the route's CNAME in each zone it publishes into (one
	// entry per DNSEndpoint): what the zone answers for the hostname and its
	// gateway target hostname. See the Published condition.
	// +optional
	// +listType=map
	// +listMapKey=controller
	// +kubebuilder:validation:MaxItems=64
	Zones []ZoneStatus `json:"zones,omitempty"`

	// published is "<zones answering correctly>/<zones>", for example "2/3" (the PUBLISHED
	// column); empty when the route publishes nothing.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Published string `json:"published,omitempty"`

	// observedGeneration is the metadata.generation the status was computed from.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the route's state; Ready is True when its DNS records are written,
	// Published is True when every zone answers them.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ServiceRoute publishes one service hostname: a CNAME per active ExternalDNS controller pointing
// at the gateway, and a host on the generated Istio Gateway.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sr,categories=router
// +kubebuilder:printcolumn:name="Hostname",type=string,JSONPath=`.status.hostname`
// +kubebuilder:printcolumn:name="Gateway",type=string,JSONPath=`.spec.gatewayName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Published",type=string,JSONPath=`.status.published`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="ServiceRoute name must be at most 63 characters: it is used as a label value on the generated DNSEndpoints"
type ServiceRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ServiceRouteSpec `json:"spec"`

	// The status exists from creation on, with observedGeneration 0, so that status tools (kstatus,
	// GitOps health checks) see a new object as in progress until the operator has observed it.
	// +optional
	// +kubebuilder:default={}
	Status ServiceRouteStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ServiceRouteList is a list of ServiceRoute.
type ServiceRouteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceRoute `json:"items"`
}
