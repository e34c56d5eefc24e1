package v1alpha1

// ConditionReady is the condition every routing.router.io object carries: True once everything
// the object asks for has been generated.
const ConditionReady = "Ready"

// ConditionReconciling and ConditionStalled are the conditions kstatus-based tools (Flux,
// cli-utils appliers) and the project's Argo CD health check read beside Ready, present only
// while True (removed when Ready is True): Reconciling while the operator waits for something
// expected to appear or retries an error (kstatus InProgress), Stalled while nothing changes until
// a person does (kstatus Failed). Both carry the Ready condition's reason and message.
const (
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Phase is the coarse lifecycle state shown in `kubectl get`. Inactive is used only by
// DNSPolicy: the policy is valid but does not apply to this cluster.
// +kubebuilder:validation:Enum=Pending;Active;Failed;Inactive
type Phase string

const (
	// PhasePending means the object waits for something it depends on; the Ready condition says what.
	PhasePending Phase = "Pending"
	// PhaseActive means everything the object asks for exists.
	PhaseActive Phase = "Active"
	// PhaseFailed means the object cannot be served as written; the Ready condition says why.
	PhaseFailed Phase = "Failed"
	// PhaseInactive means a DNSPolicy does not apply to this cluster.
	PhaseInactive Phase = "Inactive"
)

// DefaultGatewayNamespace is where a ServiceRoute looks for its Gateway when gatewayNamespace is
// not set.
const DefaultGatewayNamespace = "istio-system"

// Reasons of the Ready condition (and of the Events emitted with it) on DNSPolicy.
const (
	// ReasonPolicyActive: the policy applies to this cluster and activates at least one controller.
	ReasonPolicyActive = "PolicyActive"
	// ReasonPolicyInactive: sourceRegion or sourceCluster does not match this cluster; no
	// DNSEndpoints are written from here. A healthy state in a multi-cluster setup.
	ReasonPolicyInactive = "PolicyInactive"
	// ReasonNoActiveControllers: the policy applies, but no ExternalDNS controller of the
	// DNSConfiguration serves the selected regions.
	ReasonNoActiveControllers = "NoActiveControllers"
	// ReasonDuplicatePolicy: an older DNSPolicy exists in the namespace and is the one in force.
	ReasonDuplicatePolicy = "DuplicatePolicy"
	// ReasonDNSConfigurationNotFound: the dns-config DNSConfiguration does not exist.
	ReasonDNSConfigurationNotFound = "DNSConfigurationNotFound"
)

// Reasons shared by several kinds.
const (
	// ReasonClusterIdentityNotFound: the cluster-identity ClusterIdentity does not exist.
	ReasonClusterIdentityNotFound = "ClusterIdentityNotFound"
	// ReasonOwnershipConflict: an object with the name the operator would generate exists and is
	// not managed by the operator; it is left untouched.
	ReasonOwnershipConflict = "OwnershipConflict"
	// ReasonInvalidHostname: the generated hostname is not a valid DNS name (too long). It is
	// never published: the route's records and Istio host are removed.
	ReasonInvalidHostname = "InvalidHostname"
	// ReasonReconcileError: the last reconcile failed (the message says why); what exists is
	// kept, and the status otherwise still describes status.observedGeneration.
	ReasonReconcileError = "ReconcileError"
	// ReasonExternalDNSNotInstalled: the DNSEndpoint API (externaldns.k8s.io/v1alpha1) is not
	// served; nothing can be published until the CRD is installed.
	ReasonExternalDNSNotInstalled = "ExternalDNSNotInstalled"
)

// Reasons of the Ready condition on ServiceRoute.
const (
	// ReasonReconciliationSucceeded: every DNSEndpoint of the route is in place.
	ReasonReconciliationSucceeded = "ReconciliationSucceeded"
	// ReasonDNSPolicyNotFound: the namespace has no DNSPolicy; the route's DNSEndpoints are removed.
	ReasonDNSPolicyNotFound = "DNSPolicyNotFound"
	// ReasonDNSPolicyInactive: the namespace's DNSPolicy does not apply to this cluster; the
	// route's DNSEndpoints are removed.
	ReasonDNSPolicyInactive = "DNSPolicyInactive"
	// ReasonDNSConfigurationNotFound (shared with DNSPolicy): without the DNSConfiguration no
	// policy can be evaluated; the route's existing DNSEndpoints are kept until it is back.
	// ReasonGatewayNotFound: the referenced Gateway does not exist; the route's DNSEndpoints are removed.
	ReasonGatewayNotFound = "GatewayNotFound"
	// ReasonHostnameConflict: an older ServiceRoute claims the same hostname and publishes it.
	ReasonHostnameConflict = "HostnameConflict"
	// ReasonNotAllowedByGateway: the Gateway's spec.allowedRoutes does not admit routes from the
	// route's namespace; the route's DNSEndpoints and Istio host are removed.
	ReasonNotAllowedByGateway = "NotAllowedByGateway"
	// ReasonApplicationNotAllowed: the route's application is reserved for another namespace, or
	// its namespace lists its applications (annotation router.io/applications) and this one is
	// not among them. The route publishes nothing and never claims its hostname.
	ReasonApplicationNotAllowed = "ApplicationNotAllowed"
	// ReasonGatewayHostLimit: the Gateway's Istio Gateway is full (its byte budget): this route
	// and every route created after it are left off it and publish no DNS record until there is
	// room. Also the reason of the Gateway's HostLimit condition.
	ReasonGatewayHostLimit = "GatewayHostLimit"
	// ReasonListenerConflict: the Gateway has backend GatewayAPI and its implementation reports
	// the listener of the route's hostname as conflicted (another listener on the Gateway API
	// Gateway holds the hostname): the route's HTTPRoutes do not attach there. The DNS records
	// are kept; the platform team resolves the conflict.
	ReasonListenerConflict = "ListenerConflict"
)

// ConditionStandIn is the DNSPolicy condition present in a cluster whose region is one of the
// policy's failover stand-ins: True when it publishes the policy's names in every other region's
// zone with failover settings (it can take them over there), False when it does not in some (its
// ClusterIdentity does not adopt them) or there are none.
const ConditionStandIn = "StandIn"

// Reasons of the StandIn condition on DNSPolicy.
const (
	// ReasonStandsIn: this cluster publishes the names in every other failover zone.
	ReasonStandsIn = "StandsIn"
	// ReasonRegionsNotAdopted: some failover zones' regions are not adopted here: their names
	// cannot move to this cluster.
	ReasonRegionsNotAdopted = "RegionsNotAdopted"
	// ReasonNoFailoverZones: no other region's zone has failover settings.
	ReasonNoFailoverZones = "NoFailoverZones"
)

// ConditionIstioAnalysis is the Gateway condition present while istiod's configuration analysis
// reports errors or warnings on the generated Istio Gateway (its status.validationMessages, which
// istiod writes when its analysis is enabled: the istiod chart's global.istiod.enableAnalysis).
// Status True; the reason is the first message's name as Istio spells it (ReferencedResourceNotFound,
// GatewayDuplicateCertificate, ...); the message lists every one with its code (IST0101, ...),
// what it means for a generated Gateway and Istio's page about it. Absent when istiod reports
// nothing or does not analyse. The user fixes what it names (a TLS Secret, a second Gateway on
// the same pods); the operator keeps writing the Istio Gateway either way.
const ConditionIstioAnalysis = "IstioAnalysis"

// ConditionListenerProblems is the Gateway condition present (backend GatewayAPI) while the
// Gateway API implementation reports a listener of the generated Gateway or ListenerSets as not
// Accepted or with unresolved references (ResolvedRefs=False: the TLS Secret of credentialName
// missing or invalid). Status True; the reason is the implementation's (InvalidCertificateRef,
// ...), the message names each listener with the implementation's words. Conflicted listeners are
// reported on their routes instead (ListenerConflict).
const ConditionListenerProblems = "ListenerProblems"

// ConditionHostLimit is the Gateway condition present while routes are left off its Istio
// Gateway because it reached its byte budget (status.hostLimit has the counts).
const ConditionHostLimit = "HostLimit"

// Reasons of the Ready condition on Gateway.
const (
	// ReasonGatewayCreated: the Istio Gateway is up to date and the load balancer has an address.
	ReasonGatewayCreated = "GatewayCreated"
	// ReasonNoServiceRoutes: no Ready ServiceRoute uses the gateway yet; the Istio Gateway is
	// created with the first one (an Istio Gateway needs at least one host).
	ReasonNoServiceRoutes = "NoServiceRoutes"
	// ReasonCredentialNameMissing: spec.credentialName is empty; an HTTPS server needs a TLS Secret.
	ReasonCredentialNameMissing = "CredentialNameMissing"
	// ReasonLoadBalancerNotFound: no LoadBalancer Service labelled istio=<controller> exists in
	// the ingress namespace (spec.ingressNamespace, default the Gateway's namespace).
	ReasonLoadBalancerNotFound = "LoadBalancerNotFound"
	// ReasonLoadBalancerAddressPending: the ingress Service has no address yet, so no address
	// record can be published for the target hostname.
	ReasonLoadBalancerAddressPending = "LoadBalancerAddressPending"
	// ReasonIngressNamespaceConflict: an older Gateway with the same controller and targetPostfix
	// takes the ingress Service from another namespace (spec.ingressNamespace); the older one
	// decides, this one's ingressNamespace is not used.
	ReasonIngressNamespaceConflict = "IngressNamespaceConflict"
	// ReasonIstioNotInstalled: the Istio Gateway API (networking.istio.io/v1 Gateway) is not
	// served, so no Istio Gateway is generated; DNS is still published, and generation starts
	// when the CRD is installed.
	ReasonIstioNotInstalled = "IstioNotInstalled"
	// ReasonGatewayAPINotInstalled: the Gateway has backend GatewayAPI and the Gateway API's
	// Gateway or ListenerSet kind (gateway.networking.k8s.io/v1, standard channel v1.5 or later)
	// is not served; nothing is generated or removed until it is installed.
	ReasonGatewayAPINotInstalled = "GatewayAPINotInstalled"
	// ReasonEntryPointShared: the Gateway has backend GatewayAPI and shares its controller and
	// targetPostfix (so its target hostname) with an older Gateway, whose address the target
	// hostname carries; the generated Gateway API Gateway has an address of its own.
	ReasonEntryPointShared = "EntryPointShared"
)
