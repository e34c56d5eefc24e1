package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GatewaySpec describes one Istio ingress gateway that ServiceRoutes can publish hostnames on.
type GatewaySpec struct {
	// controller is the value of the istio label that selects the ingress gateway pods (for
	// example aks-istio-ingressgateway-internal). It becomes the generated Istio Gateway's
	// selector istio=<controller>, and the ingress LoadBalancer Service is found by the same label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="controller must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Controller string `json:"controller"`

	// credentialName is the name of the TLS Secret the ingress gateway terminates HTTPS with.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="credentialName must be a valid Secret name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	CredentialName string `json:"credentialName,omitempty"`

	// targetPostfix names the gateway type (for example internal or external). It is the last
	// part of the gateway target hostname {cluster}-{region}-{targetPostfix}.{domain}.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="targetPostfix must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	TargetPostfix string `json:"targetPostfix"`
}

// GatewayStatus is the observed state of the Gateway.
type GatewayStatus struct {
	// phase is Active once the Istio Gateway exists.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// loadBalancerIP is the first address of the ingress LoadBalancer Service.
	// +optional
	LoadBalancerIP string `json:"loadBalancerIP,omitempty"`

	// targetHostname is {cluster}-{region}-{targetPostfix}.{domain}: the name service hostnames
	// CNAME to and that resolves to the load balancer.
	// +optional
	TargetHostname string `json:"targetHostname,omitempty"`

	// hosts is the number of service hostnames on the generated Istio Gateway.
	// +optional
	Hosts int32 `json:"hosts,omitempty"`

	// zones is the publication state of the target hostname's address record in each zone (one
	// entry per ExternalDNS controller with an address DNSEndpoint): what the zone's name
	// servers answer for it. See the Published condition.
	// +optional
	// +listType=map
	// +listMapKey=controller
	// +kubebuilder:validation:MaxItems=64
	Zones []ZoneStatus `json:"zones,omitempty"`

	// published is "<zones answering correctly>/<zones>", for example "3/3" (the PUBLISHED
	// column); empty when no address record is published.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Published string `json:"published,omitempty"`

	// observedGeneration is the metadata.generation the status was computed from.
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the gateway's state; Ready is True when the Istio Gateway is up to date,
	// Published is True when every zone answers the target hostname's address record.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Gateway is a reusable Istio ingress gateway definition. The operator generates an Istio
// networking.istio.io Gateway of the same name whose hosts are the hostnames of every ServiceRoute
// that references it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rgw,categories=router
// +kubebuilder:printcolumn:name="Controller",type=string,JSONPath=`.spec.controller`
// +kubebuilder:printcolumn:name="Postfix",type=string,JSONPath=`.spec.targetPostfix`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.status.targetHostname`,priority=1
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.loadBalancerIP`
// +kubebuilder:printcolumn:name="Hosts",type=integer,JSONPath=`.status.hosts`
// +kubebuilder:printcolumn:name="Published",type=string,JSONPath=`.status.published`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Gateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec GatewaySpec `json:"spec"`

	// The status exists from creation on, with observedGeneration 0, so that status tools (kstatus,
	// GitOps health checks) see a new object as in progress until the operator has observed it.
	// +optional
	// +kubebuilder:default={}
	Status GatewayStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GatewayList is a list of Gateway.
type GatewayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gateway `json:"items"`
}
