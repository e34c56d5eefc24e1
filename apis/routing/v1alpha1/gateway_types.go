package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GatewaySpec describes one Istio ingress gateway that ServiceRoutes can publish hostnames on.
// +kubebuilder:validation:XValidation:rule="!has(self.plainHTTP) || self.plainHTTP != 'RedirectToHTTPS' || has(self.credentialName)",message="plainHTTP RedirectToHTTPS sends clients to HTTPS, which needs credentialName (the TLS Secret); use Serve for a gateway without TLS"
// +kubebuilder:validation:XValidation:rule="!has(self.backend) || self.backend != 'GatewayAPI' || !has(self.istioHostFormat) || self.istioHostFormat != 'Bare'",message="istioHostFormat Bare applies to the IstioGateway backend only: with backend GatewayAPI only HTTPRoutes and GRPCRoutes in a ServiceRoute's own namespace attach to its hostname"
type GatewaySpec struct {
	// backend is which ingress API the operator generates for this gateway. IstioGateway (the
	// default, and what every Gateway without the field gets) is a classic networking.istio.io
	// Gateway of the same name whose hosts are the routes' hostnames; VirtualServices bind them.
	// GatewayAPI is a gateway.networking.k8s.io/v1 Gateway of the same name (class
	// gatewayClassName) with one ListenerSet per route namespace, beside it in this namespace,
	// whose listeners carry that namespace's hostnames and admit only HTTPRoutes and GRPCRoutes
	// of that namespace; the target hostname's address then comes from the Gateway API Gateway's
	// status.addresses. Switching keeps every DNS record: the new objects are written before the
	// old ones are removed.
	// +optional
	// +kubebuilder:default=IstioGateway
	Backend GatewayBackend `json:"backend,omitempty"`

	// gatewayClassName is the GatewayClass of the generated Gateway API Gateway (backend
	// GatewayAPI only): istio (the default) for Istio's Gateway API implementation.
	// +optional
	// +kubebuilder:default=istio
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="gatewayClassName must be a GatewayClass name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	GatewayClassName string `json:"gatewayClassName,omitempty"`

	// controller is the value of the istio label that selects the ingress gateway pods (for
	// example aks-istio-ingressgateway-internal). It becomes the generated Istio Gateway's
	// selector istio=<controller>, and the ingress LoadBalancer Service is found by the same label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="controller must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	Controller string `json:"controller"`

	// credentialName is the name of the TLS Secret the ingress gateway terminates HTTPS with (an
	// HTTPS server on port 443 for the routes' hostnames). Istio reads it from the namespace of
	// the ingress gateway's pods (aks-istio-ingress on the AKS Istio add-on), not from the
	// Gateway's. Without it the gateway serves HTTPS for nobody: set plainHTTP to Serve for a
	// gateway without TLS, otherwise the Gateway fails with CredentialNameMissing.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="credentialName must be a valid Secret name: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit"
	CredentialName string `json:"credentialName,omitempty"`

	// plainHTTP says what the gateway does with plain HTTP on port 80 for the routes' hostnames.
	// Disabled (the default): nothing, HTTPS only. Serve: an HTTP server for the same hostnames —
	// the only server of a gateway without credentialName (a homelab, or TLS ended in front of
	// the cluster). RedirectToHTTPS: every HTTP request is answered with a redirect to HTTPS
	// (Istio's httpsRedirect); it needs credentialName.
	// +optional
	// +kubebuilder:default=Disabled
	PlainHTTP PlainHTTP `json:"plainHTTP,omitempty"`

	// targetPostfix names the gateway type (for example internal or external). It is the last
	// part of the gateway target hostname {cluster}-{region}-{targetPostfix}.{domain}.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="targetPostfix must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
	TargetPostfix string `json:"targetPostfix"`

	// ingressNamespace is the namespace whose LoadBalancer Services labelled istio=<controller>
	// may serve this gateway; defaults to the Gateway's own namespace. Services elsewhere are
	// ignored whatever their age or labels, so a namespace editor cannot capture the gateway's
	// address. Set it when the ingress gateways run in another namespace than the Gateway (the AKS
	// Istio add-on runs them in aks-istio-ingress). Gateways sharing a controller and targetPostfix
	// share one target hostname: the oldest of them decides the ingress namespace, and the others
	// must name the same one (Ready=False, reason IngressNamespaceConflict, otherwise).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="ingressNamespace must be a namespace name: lowercase letters, digits and '-', starting and ending with a letter or digit"
	IngressNamespace string `json:"ingressNamespace,omitempty"`

	// allowedRoutes says from which namespaces ServiceRoutes may use this gateway, with the shape
	// and meaning of the Gateway API's listener field. Defaults to every namespace. A route from a
	// namespace that is not allowed publishes nothing (Ready=False, reason NotAllowedByGateway).
	// +optional
	// +kubebuilder:default={namespaces:{from:All}}
	AllowedRoutes *AllowedRoutes `json:"allowedRoutes,omitempty"`

	// istioHostFormat is how route hostnames are written into the generated Istio Gateway's hosts.
	// NamespaceScoped (the default) writes <route namespace>/<hostname>, so that only
	// VirtualServices in the route's own namespace can bind the hostname on this gateway. Bare
	// writes <hostname> (the architecture document's form): a VirtualService in any namespace can
	// bind it; choose it only where VirtualServices live in another namespace than their routes.
	// +optional
	// +kubebuilder:default=NamespaceScoped
	IstioHostFormat IstioHostFormat `json:"istioHostFormat,omitempty"`
}

// AllowedRoutes restricts which ServiceRoutes may use a Gateway.
type AllowedRoutes struct {
	// namespaces selects the namespaces whose ServiceRoutes may use the gateway.
	// +optional
	// +kubebuilder:default={from:All}
	Namespaces *RouteNamespaces `json:"namespaces,omitempty"`
}

// FromNamespaces names a set of namespaces allowed to use a Gateway.
// +kubebuilder:validation:Enum=All;Same;Selector
type FromNamespaces string

const (
	// NamespacesFromAll allows ServiceRoutes of every namespace.
	NamespacesFromAll FromNamespaces = "All"
	// NamespacesFromSame allows only ServiceRoutes in the Gateway's own namespace.
	NamespacesFromSame FromNamespaces = "Same"
	// NamespacesFromSelector allows ServiceRoutes in namespaces whose labels match the selector.
	NamespacesFromSelector FromNamespaces = "Selector"
)

// RouteNamespaces selects namespaces, as the Gateway API's RouteNamespaces does.
// +kubebuilder:validation:XValidation:rule="(has(self.from) && self.from == 'Selector') == has(self.selector)",message="selector is required when from is Selector, and allowed only then"
type RouteNamespaces struct {
	// from is All (every namespace), Same (the Gateway's namespace only) or Selector (namespaces
	// whose labels match selector).
	// +optional
	// +kubebuilder:default=All
	From FromNamespaces `json:"from,omitempty"`

	// selector must match a namespace's labels for its ServiceRoutes to use the gateway; required
	// when from is Selector. Namespace labels are set by whoever may edit Namespace objects (not
	// a namespace editor with the built-in edit role), so the platform team decides.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="selector operators must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="In and NotIn need values; Exists and DoesNotExist take none"
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// PlainHTTP is what a gateway does with plain HTTP (port 80).
// +kubebuilder:validation:Enum=Disabled;Serve;RedirectToHTTPS
type PlainHTTP string

const (
	// PlainHTTPDisabled: no HTTP server; HTTPS only.
	PlainHTTPDisabled PlainHTTP = "Disabled"
	// PlainHTTPServe: an HTTP server for the routes' hostnames.
	PlainHTTPServe PlainHTTP = "Serve"
	// PlainHTTPRedirectToHTTPS: an HTTP server that redirects every request to HTTPS.
	PlainHTTPRedirectToHTTPS PlainHTTP = "RedirectToHTTPS"
)

// GatewayBackend is the ingress API a Gateway generates.
// +kubebuilder:validation:Enum=IstioGateway;GatewayAPI
type GatewayBackend string

const (
	// BackendIstioGateway generates a classic networking.istio.io Gateway.
	BackendIstioGateway GatewayBackend = "IstioGateway"
	// BackendGatewayAPI generates a gateway.networking.k8s.io/v1 Gateway and ListenerSets.
	BackendGatewayAPI GatewayBackend = "GatewayAPI"
)

// DefaultGatewayClassName is the GatewayClass of a generated Gateway API Gateway when
// gatewayClassName is not set.
const DefaultGatewayClassName = "istio"

// IstioHostFormat is how a hostname is written into an Istio Gateway's hosts.
// +kubebuilder:validation:Enum=NamespaceScoped;Bare
type IstioHostFormat string

const (
	// IstioHostNamespaceScoped writes <route namespace>/<hostname>: only VirtualServices in the
	// route's namespace bind it (Istio's documented Gateway host format).
	IstioHostNamespaceScoped IstioHostFormat = "NamespaceScoped"
	// IstioHostBare writes <hostname>: VirtualServices in any namespace bind it.
	IstioHostBare IstioHostFormat = "Bare"
)

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

	// hostLimit is set while the generated Istio Gateway is full: the hosts of the oldest routes
	// fill its byte budget, and the younger routes, from firstLeftOff on, are left off (Ready=False,
	// reason GatewayHostLimit, no DNS record). Absent when every route fits.
	// +optional
	HostLimit *GatewayHostLimit `json:"hostLimit,omitempty"`

	// listenerConflicts are the route hostnames whose listeners the Gateway API implementation
	// reports as conflicted (backend GatewayAPI): another listener on the Gateway API Gateway — the
	// Gateway's own, or an older ListenerSet the platform wrote — holds the same hostname, port and
	// protocol, so HTTPRoutes do not attach to the generated one. The routes report it
	// (Ready=False, reason ListenerConflict); their DNS records are kept.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1024
	ListenerConflicts []ListenerConflict `json:"listenerConflicts,omitempty"`

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

	// conditions describe the gateway's state; Ready is True when the Istio Gateway is up to date;
	// HostLimit is True while routes are left off because the Istio Gateway is full; Published is
	// True when every zone answers the target hostname's address record.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ListenerConflict is a route hostname whose generated listener the Gateway API implementation
// reports as conflicted.
type ListenerConflict struct {
	// namespace is the namespace of the routes the hostname belongs to.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`

	// hostname is the route hostname.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Hostname string `json:"hostname"`

	// listenerSet is the generated ListenerSet (in the Gateway's namespace) holding the listener.
	// +required
	// +kubebuilder:validation:MaxLength=253
	ListenerSet string `json:"listenerSet"`

	// reason is the reason of the listener's Conflicted condition (HostnameConflict,
	// ProtocolConflict, ListenerConflict).
	// +required
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason"`
}

// GatewayHostLimit says where the routes of a full Istio Gateway are cut off. Routes are ordered
// oldest first (creationTimestamp, then namespace/name); the hosts of the oldest fill the budget.
type GatewayHostLimit struct {
	// budgetBytes is the largest estimated size of the generated Istio Gateway
	// (--istio-gateway-max-bytes), well under etcd's request limit.
	// +required
	BudgetBytes int64 `json:"budgetBytes"`

	// admitted is the number of routes whose hosts are on the Istio Gateway.
	// +required
	Admitted int32 `json:"admitted"`

	// leftOff is the number of routes left off: they publish nothing until there is room.
	// +required
	LeftOff int32 `json:"leftOff"`

	// firstLeftOff is the oldest route left off, as namespace/name. It and every route after it
	// in the order are left off.
	// +required
	FirstLeftOff string `json:"firstLeftOff"`

	// firstLeftOffCreated is the creationTimestamp of firstLeftOff.
	// +required
	FirstLeftOffCreated metav1.Time `json:"firstLeftOffCreated"`
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
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
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
