package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExternalDNSController is one ExternalDNS instance, identified by the value of the
// external-dns.alpha.kubernetes.io/controller annotation it filters on.
// +kubebuilder:validation:XValidation:rule="!has(self.failover) || has(self.verification)",message="failover reads the zone through its verification settings: set verification too",fieldPath=".failover"
// +kubebuilder:validation:XValidation:rule="!has(self.failover) || !has(self.failover.tsig) || (has(self.verification) && has(self.verification.nameservers))",message="failover.tsig signs updates to an RFC 2136 zone's primary: set verification.nameservers (the first is the primary)",fieldPath=".failover.tsig"
type ExternalDNSController struct {
	// name is the controller's logical name: generated DNSEndpoints carry it in the
	// external-dns.alpha.kubernetes.io/controller annotation and the router.io/controller label,
	// so it must equal the value in that ExternalDNS instance's --annotation-filter and
	// --label-filter (both required).
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

	// verification, when set, makes the operator check that this controller's zone answers what
	// it published — asking its authoritative name servers, a resolver serving it, or, for an
	// Azure Private DNS zone, Azure Resource Manager — for every active hostname (CNAME to the
	// gateway target hostname) and for the target hostnames (the load balancer address), and
	// report the result per zone in ServiceRoute and Gateway status (the Published condition).
	// Without it, status only says whether ExternalDNS has processed the records.
	// +optional
	Verification *ZoneVerification `json:"verification,omitempty"`

	// failover, when set, lets this cluster take part in regional failover in this zone
	// (docs/ARCHITECTURE.md#regional-failover-design): it refreshes its heartbeat record there and
	// may take over the names of a lost region by passing their ExternalDNS ownership to this
	// cluster's instance. It needs verification (the zone is read through it) and write access to
	// the zone; nothing else of the zone is written by the operator.
	// +optional
	Failover *ZoneFailover `json:"failover,omitempty"`
}

// ZoneFailover is what the operator needs to write a zone for regional failover: the ownership
// settings of this cluster's ExternalDNS instance for the zone, and, for an RFC 2136 zone, its
// update key. An Azure Private DNS zone is written with the credentials of its verification, which
// then need the Private DNS Zone Contributor role on the zone.
type ZoneFailover struct {
	// ownerID is the --txt-owner-id of this cluster's ExternalDNS instance for the zone, for
	// example external-dns-weu-aks01: a name taken over is passed to it. Each cluster has its own.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9][-A-Za-z0-9_.]*$')",message="ownerID must be an ExternalDNS owner ID: letters, digits, '-', '_' and '.'"
	OwnerID string `json:"ownerID"`

	// txtPrefix is the --txt-prefix of the zone's ExternalDNS instances, the same in every cluster
	// writing the zone (for example weu-p-): the ownership records of a name are found under it.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || self.matches('^[a-z0-9][-a-z0-9.]*$')",message="txtPrefix must be lowercase letters, digits, '-' and '.'"
	TXTPrefix string `json:"txtPrefix,omitempty"`

	// tsig signs the dynamic updates sent to an RFC 2136 zone's primary (the first of
	// verification.nameservers); without it the updates are unsigned.
	// +optional
	TSIG *TSIGKey `json:"tsig,omitempty"`
}

// TSIGKey is an RFC 2136 update key; its secret is read from a file mounted into the operator's
// pod (the chart's extraVolumes and extraVolumeMounts), never from the API.
type TSIGKey struct {
	// keyName is the key's name, as the zone's server knows it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	KeyName string `json:"keyName"`

	// algorithm is the key's HMAC algorithm; defaults to hmac-sha256.
	// +optional
	// +kubebuilder:validation:Enum=hmac-sha256;hmac-sha384;hmac-sha512
	Algorithm string `json:"algorithm,omitempty"`

	// secretFile is the path, in the operator's container, of a file holding the key's secret
	// (base64, as in a BIND key statement).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="secretFile must be an absolute path"
	SecretFile string `json:"secretFile"`
}

// FailoverSettings tune regional failover for every zone whose controller has failover settings.
// +kubebuilder:validation:XValidation:rule="duration(has(self.heartbeatStaleAfter) ? self.heartbeatStaleAfter : '30s') > duration(has(self.heartbeatInterval) ? self.heartbeatInterval : '10s')",message="heartbeatStaleAfter must exceed heartbeatInterval: a heartbeat would go stale between two refreshes"
type FailoverSettings struct {
	// probePort is the port of the gateway listener that is probed at every other region's gateway
	// address (a TCP connection must be accepted); defaults to 443.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ProbePort *int32 `json:"probePort,omitempty"`

	// probeInterval is the time between two probes of a region's gateway; defaults to 5s.
	// +optional
	ProbeInterval *metav1.Duration `json:"probeInterval,omitempty"`

	// failureThreshold is how many probes in a row must fail before a region is unreachable from
	// this cluster; defaults to 3.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`

	// heartbeatInterval is how often this cluster refreshes its heartbeat in each zone; defaults
	// to 10s.
	// +optional
	HeartbeatInterval *metav1.Duration `json:"heartbeatInterval,omitempty"`

	// heartbeatStaleAfter is how old a region's heartbeat may be before it no longer vouches for
	// the region; defaults to 30s, and must exceed heartbeatInterval.
	// +optional
	HeartbeatStaleAfter *metav1.Duration `json:"heartbeatStaleAfter,omitempty"`

	// failbackAfter is how long a region's own gateway must have answered, continuously, before
	// its cluster takes back the names of DNSPolicies with failback Automatic; defaults to 5m.
	// +optional
	FailbackAfter *metav1.Duration `json:"failbackAfter,omitempty"`

	// drain, true, asks for this cluster's region's names to move to their stand-ins now, its
	// gateway still answering: a planned failover, for maintenance. The heartbeat says so, and
	// every stand-in judges the region Drained and takes the names of policies listing it, as from
	// a lost region (no probe has to fail). Set back to false (or removed), the names come back
	// to this cluster once its gateway answers and the stand-ins have seen the drain end, whatever
	// the policies' failback, as do names a stand-in still holds from an earlier failover. The
	// condition Drained says how far it has got. In a region of several clusters, drain each.
	// +optional
	Drain bool `json:"drain,omitempty"`
}

// ZoneVerification says how a regional zone is checked: by asking its authoritative name servers
// (nameservers), a recursive resolver that serves the zone (resolvers), or, for an Azure Private
// DNS zone, by reading the zone through Azure Resource Manager (azurePrivateDNS). Exactly one of
// the three is set.
// +kubebuilder:validation:XValidation:rule="[has(self.nameservers), has(self.resolvers), has(self.azurePrivateDNS)].filter(x, x).size() == 1",message="set exactly one of nameservers (the zone's authoritative servers), resolvers (a recursive resolver that serves the zone) and azurePrivateDNS (the zone read through Azure Resource Manager)"
// +kubebuilder:validation:XValidation:rule="!has(self.transferZone) || has(self.nameservers)",message="transferZone reads the zone from its authoritative nameservers: set nameservers with it"
// +kubebuilder:validation:XValidation:rule="!has(self.azurePrivateDNS) || !has(self.timeout)",message="timeout applies to DNS queries; for azurePrivateDNS set azurePrivateDNS.timeout"
type ZoneVerification struct {
	// nameservers are the zone's authoritative name servers as host:port (for example
	// 10.0.0.53:53 or [fd00::53]:53). Queries go to the first; the next ones are asked when it
	// does not answer. Queries are non-recursive (RD=0) and unsigned: never list a caching
	// resolver, which would answer from its cache and remember negative answers (use resolvers
	// for that). The operator needs to reach them on 53/udp and 53/tcp (see the NetworkPolicy in
	// the operator guide).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=261
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^([[][0-9a-fA-F:.]+[]]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):[0-9]{1,5}$') && int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535",message="each name server must be host:port with a port from 1 to 65535, for example 10.0.0.53:53, ns1.example.com:53 or [fd00::53]:53"
	Nameservers []string `json:"nameservers,omitempty"`

	// resolvers are recursive resolvers that serve the zone, as host:port: the only way to check
	// a zone whose authoritative servers nobody may ask (Azure's 168.63.129.16 from a virtual
	// network linked to an Azure Private DNS zone, a homelab's router or Pi-hole). Queries ask
	// for recursion (RD=1) and take answers that are not authoritative. A resolver may answer
	// from its cache: an answer that differs from what was published is taken for the previous
	// value, still cached, until the record's TTL has passed since it changed (Pending), and
	// only then for drift. Asked in order, like nameservers.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=261
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^([[][0-9a-fA-F:.]+[]]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?):[0-9]{1,5}$') && int(self.substring(self.lastIndexOf(':') + 1)) >= 1 && int(self.substring(self.lastIndexOf(':') + 1)) <= 65535",message="each resolver must be host:port with a port from 1 to 65535, for example 168.63.129.16:53"
	Resolvers []string `json:"resolvers,omitempty"`

	// transferZone, when set, is the apex of the zone (for example example.com): the operator then
	// reads the zone whole with a zone transfer (AXFR) from the nameservers and answers every
	// record that is due from it, instead of asking one query per name. One transfer a second
	// at most while records change, about two a minute once they are settled, where queries
	// would need 20 a second and minutes to check a zone of thousands of names. The servers must
	// allow transfers to the operator's address (BIND: allow-transfer); a refused transfer makes
	// the zone Unreachable ("transfer refused"). Every name checked in this zone must lie in it
	// (ExternalDNS writes no other into it): a name outside it is never found there.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?[.])*[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?[.]?$`
	TransferZone string `json:"transferZone,omitempty"`

	// azurePrivateDNS reads the zone through Azure Resource Manager: the only way to check an
	// Azure Private DNS zone from a cluster whose virtual network is not linked to it (a virtual
	// network links at most one zone of a given name, so a cluster in one region can never
	// resolve the other regions' zones of the same name). The zone's record sets are listed
	// (A, AAAA and CNAME are compared; one paged listing per round serves every record of the
	// zone, never a request per record), and the answers are authoritative: no cache in between.
	// The credentials need only read the zone (the Reader or Private DNS Zone Contributor role on
	// it; Reader is enough).
	// +optional
	AzurePrivateDNS *AzurePrivateDNSVerification `json:"azurePrivateDNS,omitempty"`

	// timeout bounds each query, from 100ms to 30s. Defaults to 2s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100ms') && duration(self) <= duration('30s')",message="timeout must be between 100ms and 30s"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// AzurePrivateDNSVerification is an Azure Private DNS zone and how to read it through Azure
// Resource Manager, with the credentials ExternalDNS's azure-private-dns provider takes: an
// azure.json file (configFile) or, without one, Azure Workload Identity.
type AzurePrivateDNSVerification struct {
	// subscriptionId is the Azure subscription of the zone, a GUID such as
	// 00000000-0000-0000-0000-000000000000. Overrides the azure.json's.
	// +required
	// +kubebuilder:validation:MinLength=36
	// +kubebuilder:validation:MaxLength=36
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`
	SubscriptionID string `json:"subscriptionId"`

	// resourceGroup is the resource group of the zone: 1 to 90 letters, digits, '-', '_', '.',
	// '(' or ')', not ending with '.'. Overrides the azure.json's.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=90
	// +kubebuilder:validation:Pattern=`^[-a-zA-Z0-9_.()]*[-a-zA-Z0-9_()]$`
	ResourceGroup string `json:"resourceGroup"`

	// zoneName is the Private DNS zone's name, for example example.internal (no trailing dot).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?[.])*[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ZoneName string `json:"zoneName"`

	// configFile is the absolute path, in the operator's container, of an azure.json as ExternalDNS's
	// --azure-config-file takes it (tenantId, aadClientId and aadClientSecret for a service
	// principal; useWorkloadIdentityExtension; useManagedIdentityExtension and
	// userAssignedIdentityID; cloud, resourceManagerEndpoint, resourceManagerAudience and
	// activeDirectoryAuthorityHost for other clouds), mounted from a Secret (chart value
	// azure.configSecret mounts it at /etc/azure/azure.json). Without it, the operator
	// authenticates with Azure Workload Identity: the AZURE_CLIENT_ID, AZURE_TENANT_ID and
	// AZURE_FEDERATED_TOKEN_FILE the workload identity webhook gives the pod.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/`
	ConfigFile string `json:"configFile,omitempty"`

	// resourceManagerEndpoint is the Azure Resource Manager endpoint of a cloud other than Azure's
	// public cloud (an https URL, for example https://management.usgovcloudapi.net/), with
	// activeDirectoryAuthorityHost, here or in the azure.json. Overrides the azure.json's. The
	// token audience is the azure.json's resourceManagerAudience, else this endpoint.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https://[^/?#]+(/.*)?$`
	ResourceManagerEndpoint string `json:"resourceManagerEndpoint,omitempty"`

	// activeDirectoryAuthorityHost is the Microsoft Entra ID (Azure AD) authority of that cloud
	// (an https URL, for example https://login.microsoftonline.us/). Overrides the azure.json's.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https://[^/?#]+(/.*)?$`
	ActiveDirectoryAuthorityHost string `json:"activeDirectoryAuthorityHost,omitempty"`

	// pageSize is how many record sets one request of the listing returns ($top), 1 to 1000.
	// Defaults to 1000: a zone of 25,000 record sets is read in 25 requests.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	PageSize *int32 `json:"pageSize,omitempty"`

	// interval is the shortest time between two listings of the zone, from 1s to 1h; defaults to
	// 30s. Changed records wait for the next listing; a listing answers every record due then.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="interval must be between 1s and 1h"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// timeout bounds each request of the listing, from 1s to 2m. Defaults to 30s.
	// +optional
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('2m')",message="timeout must be between 1s and 2m"
	Timeout *metav1.Duration `json:"timeout,omitempty"`
}

// RecordTTLBounds is the range of record TTLs DNSPolicies may choose.
// +kubebuilder:validation:XValidation:rule="self.min <= self.max",message="recordTTLBounds.min must not exceed recordTTLBounds.max"
type RecordTTLBounds struct {
	// min is the shortest TTL, in seconds, a DNSPolicy may set (30 to 86400).
	// +required
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=86400
	Min int32 `json:"min"`

	// max is the longest TTL, in seconds, a DNSPolicy may set (30 to 86400).
	// +required
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=86400
	Max int32 `json:"max"`
}

// DNSConfigurationSpec lists every ExternalDNS controller of the infrastructure.
// +kubebuilder:validation:XValidation:rule="!has(self.failover) || !has(self.failover.drain) || !self.failover.drain || self.externalDNSControllers.exists(c, has(c.failover))",message="failover.drain moves the names of the zones with failover settings, and no ExternalDNS controller has failover settings: there is nothing to drain"
// +kubebuilder:validation:XValidation:rule="!has(self.recordTTL) || !has(self.recordTTLBounds) || (self.recordTTL >= self.recordTTLBounds.min && self.recordTTL <= self.recordTTLBounds.max)",message="recordTTL must lie within recordTTLBounds",fieldPath=".recordTTL"
type DNSConfigurationSpec struct {
	// externalDNSControllers are all ExternalDNS instances DNSPolicies may select from. Names are
	// unique.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	ExternalDNSControllers []ExternalDNSController `json:"externalDNSControllers"`

	// recordTTL is the TTL, in seconds, of every DNS record the operator publishes: the service
	// CNAMEs (unless their namespace's DNSPolicy sets its own recordTTL) and the gateway address
	// records. 30 to 86400; defaults to 300.
	// +optional
	// +kubebuilder:validation:Minimum=30
	// +kubebuilder:validation:Maximum=86400
	RecordTTL *int32 `json:"recordTTL,omitempty"`

	// recordTTLBounds is the range a DNSPolicy's recordTTL is held to: a value outside it is
	// raised to min or lowered to max (the DNSPolicy's status shows the TTL in use). Defaults to
	// the whole allowed range, 30 to 86400.
	// +optional
	RecordTTLBounds *RecordTTLBounds `json:"recordTTLBounds,omitempty"`

	// failover tunes regional failover: the probes of other regions' gateways and the heartbeats.
	// Failover itself is on only in the zones whose controller has failover settings, for the
	// routes of DNSPolicies that ask for it.
	// +optional
	Failover *FailoverSettings `json:"failover,omitempty"`
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

	// verification counts, for each zone with verification settings, the routes published into
	// it by what the zone answers for them (refreshed every 30 seconds). Each route's own
	// status.zones says where it stands.
	// +optional
	// +listType=map
	// +listMapKey=controller
	// +kubebuilder:validation:MaxItems=64
	Verification []ZoneVerificationStatus `json:"verification,omitempty"`

	// verificationSummary is verification in one line, for `kubectl get dnscfg`, for example
	// "external-dns-weu 120/122 published, 2 drifted; external-dns-neu unverified".
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	VerificationSummary string `json:"verificationSummary,omitempty"`

	// failover is what this cluster concludes of every other region it knows from the zones'
	// heartbeats (present when a zone has failover settings).
	// +optional
	// +listType=map
	// +listMapKey=region
	// +kubebuilder:validation:MaxItems=64
	Failover []RegionFailoverStatus `json:"failover,omitempty"`

	// conditions describe the configuration's state; Ready is True when it is valid and in use,
	// DeletionsHeld True while the mass-deletion guard holds deletions back, OverRequestBudget
	// True when this cluster's planned Azure Resource Manager requests exceed its share of the
	// request budget.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RegionFailoverStatus is this cluster's view of another region: whether its gateway answers, what
// the zones say of it, and the names this cluster took from it.
type RegionFailoverStatus struct {
	// region is the other region.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Region string `json:"region"`
	// state is Serving (its gateway answers this cluster's probes), Unreachable (it does not, but
	// the zones do not say it is lost: nothing moves), Lost (the zones agree: its names pass to
	// their stand-ins) or Drained (its cluster asks for its names to move: spec.failover.drain).
	// +required
	// +kubebuilder:validation:Enum=Serving;Unreachable;Lost;Drained
	State string `json:"state"`
	// reason is why, in one CamelCase word: GatewayAnswers, WitnessSaysAlive, WitnessUnreadable,
	// WitnessPending, HeartbeatMalformed, HeartbeatStale, GatewayDown or DrainRequested.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`
	// message says what the probes and the zones' heartbeats showed.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// since is when the region entered this state.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// taken counts, per zone, the names whose ownership this cluster took from the region.
	// +optional
	// +listType=map
	// +listMapKey=controller
	// +kubebuilder:validation:MaxItems=64
	Taken []ZoneTakeover `json:"taken,omitempty"`
}

// ZoneTakeover is how many names of a lost region this cluster serves in one zone.
type ZoneTakeover struct {
	// controller is the zone's ExternalDNS controller.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Controller string `json:"controller"`
	// names is the number of names taken.
	// +required
	Names int32 `json:"names"`
}

// ZoneVerificationStatus is what one verified zone answers for the routes published into it.
type ZoneVerificationStatus struct {
	// controller is the ExternalDNS controller of the zone.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Controller string `json:"controller"`
	// routes is the number of routes published into the zone.
	// +optional
	Routes int32 `json:"routes,omitempty"`
	// published routes: the zone answers what the operator published.
	// +optional
	Published int32 `json:"published,omitempty"`
	// pending routes: not answered yet, or not checked since they changed.
	// +optional
	Pending int32 `json:"pending,omitempty"`
	// drifted routes: the zone answers something else.
	// +optional
	Drifted int32 `json:"drifted,omitempty"`
	// unreachable routes: the zone could not be asked or read.
	// +optional
	Unreachable int32 `json:"unreachable,omitempty"`
	// requests, for a zone read through Azure Resource Manager (azurePrivateDNS), are the
	// requests this cluster's operator sent to the zone, measured over about 5 minutes, and the
	// quota Resource Manager last said was left; absent until the first window has passed.
	// +optional
	Requests *ZoneRequests `json:"requests,omitempty"`
}

// ZoneRequests is what this cluster's operator sent to one zone through Azure Resource Manager
// (verification's listings, failover's heartbeats and readings), as it counted every request, over
// a window of about 5 minutes (the period at which a settled zone's requests repeat), and what
// Resource Manager last said was left of its quota. Refreshed once a window, in the status write
// that carries the verification counts.
type ZoneRequests struct {
	// readsPerMinute are the GET requests sent to the zone, a minute over the window, with one
	// decimal (for example "4.2").
	// +required
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]+[.][0-9]$`
	ReadsPerMinute string `json:"readsPerMinute"`
	// writesPerMinute are the PUT, PATCH and DELETE requests sent to the zone, a minute over the
	// window, with one decimal (Azure's network resource provider counts writes and deletes
	// together: 1,000 per 5 minutes per subscription and region).
	// +required
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]+[.][0-9]$`
	WritesPerMinute string `json:"writesPerMinute"`
	// throttled is how many of the zone's requests Resource Manager answered with 429 (Too Many
	// Requests) in the window.
	// +optional
	Throttled int32 `json:"throttled,omitempty"`
	// remainingReads is the x-ms-ratelimit-remaining-subscription-reads of the last answer to a
	// request of the zone's principal in its subscription (any zone of that principal): the read
	// tokens left of 250, refilled at 25 a second. Absent before any answer.
	// +optional
	RemainingReads *int32 `json:"remainingReads,omitempty"`
	// remainingWrites is the same for writes (x-ms-ratelimit-remaining-subscription-writes): the
	// write tokens left of 200, refilled at 10 a second.
	// +optional
	RemainingWrites *int32 `json:"remainingWrites,omitempty"`
	// remainingSeen is when the later of the two remaining figures was seen.
	// +optional
	RemainingSeen *metav1.Time `json:"remainingSeen,omitempty"`
	// window is the time the rates were measured over.
	// +required
	Window metav1.Duration `json:"window"`
	// measuredAt is the end of the window.
	// +required
	MeasuredAt metav1.Time `json:"measuredAt"`
}

// DNSConfiguration is the registry of ExternalDNS controllers, one per regional DNS zone.
// It is a singleton: the only accepted name is dns-config.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=dnscfg,categories=router
// +kubebuilder:printcolumn:name="Controllers",type=string,JSONPath=`.status.controllers`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Verification",type=string,JSONPath=`.status.verificationSummary`
// +kubebuilder:printcolumn:name="Held",type=string,JSONPath=`.status.conditions[?(@.type=="DeletionsHeld")].status`
// +kubebuilder:printcolumn:name="Deletions",type=string,JSONPath=`.status.conditions[?(@.type=="DeletionsHeld")].message`,priority=1
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
