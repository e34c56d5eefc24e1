// Package metrics defines the operator's own Prometheus metrics, all named service_router_* and
// all registered on controller-runtime's registry, next to its standard controller, workqueue,
// REST client and leader-election metrics, so that one /metrics endpoint serves everything:
//
//   - per-controller health, updated by a wrapper around each reconciler (Instrument);
//   - the state of the operator's resources, computed at scrape time from the manager's informer
//     cache by a collector (StateCollector) that the leader registers while it leads;
//   - build information.
//
// No metric has a per-object label: every label takes its values from a small, bounded set
// (controller names, kinds, phases, condition reasons, ExternalDNS and Istio controller names,
// DNS record types). docs/METRICS.md documents each metric and a test keeps it in sync with
// Definitions.
package metrics

import (
	"errors"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Definition describes one metric the operator exports.
type Definition struct {
	Name   string
	Type   string // "gauge", "counter" or "histogram"
	Help   string
	Labels []string
}

// Names of the operator's metrics.
const (
	BuildInfoName                  = "service_router_build_info"
	LastReconcileSuccessName       = "service_router_controller_last_reconcile_success"
	LastReconcileTimestampName     = "service_router_controller_last_reconcile_timestamp_seconds"
	LastSuccessTimestampName       = "service_router_controller_last_success_timestamp_seconds"
	FailingRequestsName            = "service_router_controller_failing_requests"
	ClusterIdentityInfoName        = "service_router_cluster_identity_info"
	ResourcesName                  = "service_router_resources"
	LongestNotReadyName            = "service_router_longest_not_ready_seconds"
	ConflictsName                  = "service_router_conflicts"
	DNSRecordsName                 = "service_router_dns_records"
	ActiveDNSPoliciesName          = "service_router_active_dnspolicies"
	DNSPolicyActiveControllersName = "service_router_dnspolicy_active_controllers"
	IstioGatewayHostsName          = "service_router_istio_gateway_hosts"
	APIServedName                  = "service_router_api_served"
	DeletionsHeldName              = "service_router_deletions_held"
	DeletionGuardTripsName         = "service_router_deletion_guard_trips_total"
	ZoneRoutesName                 = "service_router_zone_routes"
	PublishDurationName            = "service_router_publish_duration_seconds"
	VerificationQueriesName        = "service_router_verification_queries_total"
	EventsDroppedName              = "service_router_events_dropped_total"
	FailoverRegionStateName        = "service_router_failover_region_state"
	FailoverActiveName             = "service_router_failover_active"
	OwnershipWritesName            = "service_router_failover_ownership_writes_total"
	IntermediateWritesName         = "service_router_failover_intermediate_writes_total"
	AzureRequestsName              = "service_router_azure_requests_total"
	AzureRateLimitRemainingName    = "service_router_azure_ratelimit_remaining"
)

// Definitions lists every metric of the package, in the order docs/METRICS.md documents them.
var Definitions = []Definition{
	{BuildInfoName, "gauge", "Always 1; the version label is the operator's version. Exported by every replica.", []string{"version"}},
	{LastReconcileSuccessName, "gauge",
		"1 when the controller's most recent reconcile succeeded, 0 when it returned an error.", []string{"controller"}},
	{LastReconcileTimestampName, "gauge",
		"Unix time at which the controller's most recent reconcile finished.", []string{"controller"}},
	{LastSuccessTimestampName, "gauge",
		"Unix time at which the controller's most recent successful reconcile finished.", []string{"controller"}},
	{FailingRequestsName, "gauge",
		"Requests (objects; gateway entry points for ingressdns) whose most recent reconcile returned an error.", []string{"controller"}},
	{ClusterIdentityInfoName, "gauge",
		"Always 1; the labels are the ClusterIdentity's region, cluster, environment letter and domain. Absent without a ClusterIdentity.",
		[]string{"region", "cluster", "environment", "domain"}},
	{ResourcesName, "gauge",
		"Objects by kind, status.phase, Ready condition status and reason (Ready \"Unknown\" and empty phase and reason before the first reconcile).",
		[]string{"kind", "phase", "ready", "reason"}},
	{LongestNotReadyName, "gauge",
		"Seconds since the longest-not-Ready object of the kind with this Ready reason stopped being Ready (or was created, if never Ready). Absent when none is not Ready.",
		[]string{"kind", "reason"}},
	{ConflictsName, "gauge",
		"Objects blocked by a conflict: ServiceRoutes losing a hostname to an older route (HostnameConflict), ServiceRoutes, Gateways and gateway entry points (IngressDNS) whose generated object's name is taken by an object the operator does not own (OwnershipConflict).",
		[]string{"kind", "reason"}},
	{DNSRecordsName, "gauge",
		"DNS records in the DNSEndpoints the operator manages, by the ExternalDNS controller that publishes them, record type and source (serviceroute: CNAMEs of ServiceRoutes; gateway: address records of gateway target hostnames).",
		[]string{"external_dns_controller", "record_type", "source"}},
	{ActiveDNSPoliciesName, "gauge", "DNSPolicies whose status.active is true.", nil},
	{DNSPolicyActiveControllersName, "gauge",
		"DNSPolicies whose status.activeControllers lists the ExternalDNS controller.", []string{"external_dns_controller"}},
	{IstioGatewayHostsName, "gauge",
		"Hosts served by the Istio Gateways the operator generated, by Istio ingress controller (the istio selector).", []string{"istio_controller"}},
	{APIServedName, "gauge",
		"1 when the optional API (the ExternalDNS DNSEndpoint, the Istio Gateway, or one of the Gateway API kinds Gateway, ListenerSet, HTTPRoute and ReferenceGrant of `gateway.networking.k8s.io`) is installed and in use, 0 while its CRD is missing. Exported by every replica.",
		[]string{"group", "kind"}},
	{DeletionsHeldName, "gauge",
		"DNSEndpoint deletions the mass-deletion guard holds back for their grace period (0 when the guard has not tripped).", nil},
	{DeletionGuardTripsName, "counter",
		"Times the mass-deletion guard tripped: one change asked for more DNS records to go at once than the guard allows.", nil},
	{ZoneRoutesName, "gauge",
		"ServiceRoutes by the state of their CNAME in the zone of the ExternalDNS controller (status.zones): Published, Pending, Drifted, Unreachable, or Unverified without verification settings.",
		[]string{"external_dns_controller", "state"}},
	{PublishDurationName, "histogram",
		"Seconds from a change of a ServiceRoute's record to the zone answering it (CNAME and gateway address), per zone: the convergence time of verified zones.",
		[]string{"external_dns_controller"}},
	{VerificationQueriesName, "counter",
		"Requests made to verify publication: DNS queries to the zones' name servers or resolvers, and for Azure Private DNS zones the pages of Resource Manager listings, by outcome: answered, timeout, throttled (Resource Manager's 429) or error (refused, SERVFAIL, not authoritative, network error, other HTTP errors).",
		[]string{"external_dns_controller", "outcome"}},
	{EventsDroppedName, "counter",
		"Kubernetes Events not sent because the operator's event queue was full (a burst of changes over thousands of objects); conditions and metrics still tell the state.", nil},
	{FailoverRegionStateName, "gauge",
		"Regional failover: 1 for the state this cluster concludes of another region (Serving, Unreachable: its gateway does not answer here but the zones say it is alive; Lost: the zones agree; Drained: its cluster asks for its names to move, spec.failover.drain), 0 for the others (the DNSConfiguration's status.failover). Absent without a zone with failover settings.",
		[]string{"region", "state"}},
	{FailoverActiveName, "gauge",
		"Regional failover: names this cluster took over in the zone of the ExternalDNS controller from the lost region `from`, serving them from its own region `to` (status.failover[].taken). Above 0 means a failover happened.",
		[]string{"zone", "from", "to"}},
	{OwnershipWritesName, "counter",
		"Regional failover: the conditional writes of a move (a takeover, failback or drain rewriting an intermediate name's CNAME to this cluster's gateway, or passing a name not yet through one to this cluster's ExternalDNS by its ownership record), by zone and result: passed, changed (the record no longer held the value read: another stand-in or the owner wrote first, and the zone says who holds the name now) or refused (any other error: a rotated TSIG key, a role taken away, a timeout; tried again next round). Two stand-ins racing for one name show as one passed here and one changed there. Absent before the first write.",
		[]string{"zone", "result"}},
	{IntermediateWritesName, "counter",
		"Regional failover: conditional writes that keep this cluster's intermediate names outside a move, by zone, kind (created: a policy's intermediate in its region's zone, pointing at this cluster; released: one an earlier version's ExternalDNS owned, handed to the operators; deleted: one of this cluster's that no route wants and no name points at) and result (passed, changed, refused, as for the ownership writes). Absent before the first write.",
		[]string{"zone", "kind", "result"}},
	{AzureRequestsName, "counter",
		"Requests to Azure Resource Manager for Azure Private DNS zones (publication verification and regional failover), by zone (subscription, resource group and zone name), operation type (read, write, delete) and outcome: answered (any answer but 429), throttled (429), held (not sent: the principal is in the backoff a 429 asked for) or error (no answer: network error, timeout). Every attempt counts, the SDK's retries included. Absent before the first request.",
		[]string{"subscription", "resource_group", "zone", "operation", "outcome"}},
	{AzureRateLimitRemainingName, "gauge",
		"Requests Azure Resource Manager says are left to the operator's principal in the subscription, by operation type (read, write, delete), in the last answer (x-ms-ratelimit-remaining-subscription-reads, -writes, -deletes; the lowest of the principals of a subscription). Below 25 reads or 20 writes or deletes, the operator sends no faster than the bucket refills (25 reads, 10 writes or deletes a second). Absent before an answer.",
		[]string{"subscription", "operation"}},
}

// Version is the operator's version for service_router_build_info. Builds may set it with
// -ldflags "-X github.com/service-router/service-router-operator/internal/metrics.Version=v1.2.3";
// otherwise it is the main module's version from the build information.
var Version = ""

func definition(name string) Definition {
	for _, d := range Definitions {
		if d.Name == name {
			return d
		}
	}
	panic("metrics: no definition of " + name)
}

func desc(name string) *prometheus.Desc {
	d := definition(name)
	return prometheus.NewDesc(d.Name, d.Help, d.Labels, nil)
}

func newGaugeVec(name string) *prometheus.GaugeVec {
	d := definition(name)
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.Name, Help: d.Help}, d.Labels)
}

var (
	buildInfo          = newGaugeVec(BuildInfoName)
	apiServed          = newGaugeVec(APIServedName)
	deletionGuardTrips = prometheus.NewCounter(prometheus.CounterOpts{Name: DeletionGuardTripsName, Help: definition(DeletionGuardTripsName).Help})
)

func init() {
	buildInfo.WithLabelValues(version()).Set(1)
	ctrlmetrics.Registry.MustRegister(buildInfo, lastReconcileSuccess, lastReconcileTimestamp, lastSuccessTimestamp, failingRequests,
		apiServed, deletionGuardTrips)
}

// SetAPIServed records whether an optional API is installed.
func SetAPIServed(group, kind string, served bool) {
	v := 0.0
	if served {
		v = 1
	}
	apiServed.WithLabelValues(group, kind).Set(v)
}

// DeletionGuardTripped counts a trip of the mass-deletion guard.
func DeletionGuardTripped() { deletionGuardTrips.Inc() }

// RegisterDeletionsHeld exports how many deletions the mass-deletion guard holds, read at scrape
// time. A later call (a new manager in the same process, as in tests) replaces the earlier one.
func RegisterDeletionsHeld(held func() int) {
	d := definition(DeletionsHeldName)
	g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: d.Name, Help: d.Help}, func() float64 { return float64(held()) })
	if err := ctrlmetrics.Registry.Register(g); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			ctrlmetrics.Registry.Unregister(already.ExistingCollector)
			ctrlmetrics.Registry.MustRegister(g)
		}
	}
}

// RegisterEventsDropped exports how many events the event recorder dropped, read at scrape time.
// A later call (a new manager in the same process, as in tests) replaces the earlier one.
func RegisterEventsDropped(dropped func() int64) {
	d := definition(EventsDroppedName)
	registerReplacing(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, func() float64 { return float64(dropped()) }))
}

// registerReplacing registers c, replacing a collector already registered under its name.
func registerReplacing(c prometheus.Collector) {
	if err := ctrlmetrics.Registry.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			ctrlmetrics.Registry.Unregister(already.ExistingCollector)
			ctrlmetrics.Registry.MustRegister(c)
		}
	}
}

func version() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "unknown"
}
