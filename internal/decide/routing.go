package decide

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/ingress"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/policy"
)

var (
	pending  = string(routingv1alpha1.PhasePending)
	active   = string(routingv1alpha1.PhaseActive)
	failed   = string(routingv1alpha1.PhaseFailed)
	inactive = string(routingv1alpha1.PhaseInactive)
)

// Oldest returns the object created first (then by namespace/name) among those not being
// deleted, or nil. It settles every "who wins" question the same way in every controller: the
// DNSPolicy in force in a namespace and the ServiceRoute that owns a hostname.
func Oldest[T metav1.Object](objs []T) (oldest T, found bool) {
	for _, o := range objs {
		if o.GetDeletionTimestamp() != nil {
			continue
		}
		if !found || olderThan(o, oldest) {
			oldest, found = o, true
		}
	}
	return oldest, found
}

func olderThan(a, b metav1.Object) bool {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName())) < 0
}

// PolicyInputs is what the DNSPolicy reconciler reads.
type PolicyInputs struct {
	Policy        *routingv1alpha1.DNSPolicy
	Identity      *clusterv1alpha1.ClusterIdentity  // nil when missing
	Configuration *clusterv1alpha1.DNSConfiguration // nil when missing
	// InForce is the oldest DNSPolicy of the namespace, the one ServiceRoutes follow.
	InForce *routingv1alpha1.DNSPolicy
}

// PolicyPlan is the DNSPolicy status to write.
type PolicyPlan struct {
	Outcome
	// KeepActivation leaves status.active and status.activeControllers as they are: the inputs
	// to recompute them are missing, and ServiceRoutes keep their records meanwhile.
	KeepActivation    bool
	Active            bool
	ActiveControllers []string
	// RecordTTL is the TTL of the namespace's route records (see RecordTTL); kept with the
	// activation.
	RecordTTL int64
	// StandIn is the StandIn condition (StandInCondition); nil removes it.
	StandIn *metav1.Condition
}

// Policy decides a DNSPolicy's status.
func Policy(in PolicyInputs) PolicyPlan {
	switch {
	case in.InForce != nil && in.InForce.UID != in.Policy.UID:
		return PolicyPlan{Outcome: Outcome{Phase: failed, Reason: routingv1alpha1.ReasonDuplicatePolicy,
			Message: fmt.Sprintf("DNSPolicy %s is older and is the one in force in namespace %s; delete this one", in.InForce.Name, in.Policy.Namespace)}}
	}
	if reason, message, missing := Missing(in.Identity, in.Configuration, false); missing {
		return PolicyPlan{KeepActivation: true, Outcome: Outcome{Phase: pending, Reason: reason, Message: message}}
	}
	d := policy.Decide(in.Policy.Spec, IdentityOf(in.Identity), ControllersOf(in.Configuration))
	out := PolicyPlan{Active: d.Active, ActiveControllers: policy.Names(d.Controllers),
		Outcome: Outcome{Reason: d.Reason, Message: d.Message}}
	var ttlNote string
	out.RecordTTL, ttlNote = RecordTTL(in.Configuration, in.Policy)
	if ttlNote != "" {
		out.Message += "; " + ttlNote
	}
	switch d.Reason {
	case routingv1alpha1.ReasonPolicyActive:
		out.Phase, out.Ready = active, true
		out.StandIn = StandInCondition(in.Policy, in.Identity, in.Configuration, d.Controllers)
	case routingv1alpha1.ReasonPolicyInactive:
		// Not applying here is the intended state of a policy in the other clusters.
		out.Phase, out.Ready = inactive, true
	default: // NoActiveControllers
		out.Phase = active
	}
	return out
}

// RouteInputs is what the ServiceRoute reconciler reads.
type RouteInputs struct {
	Route         *routingv1alpha1.ServiceRoute
	Identity      *clusterv1alpha1.ClusterIdentity  // nil when missing
	Configuration *clusterv1alpha1.DNSConfiguration // nil when missing
	Policy        *routingv1alpha1.DNSPolicy        // the policy in force in the namespace; nil when none
	Gateway       *routingv1alpha1.Gateway          // nil when missing
	// Winner is the oldest other ServiceRoute claiming the same hostname among those allowed to
	// use their application (see HostnameWinner); nil when this route is the oldest claimant.
	Winner *routingv1alpha1.ServiceRoute
	// NamespaceLabels and NamespaceAnnotations are those of the route's namespace (read from the
	// cache; a namespace the cache does not show yet is not a definite answer and is never
	// passed as empty): the labels for the Gateway's allowedRoutes, the annotations for the
	// applications the namespace owns.
	NamespaceLabels      map[string]string
	NamespaceAnnotations map[string]string
	// ApplicationListedBy are the namespaces whose router.io/applications annotation lists the
	// route's application.
	ApplicationListedBy []string
	// EndpointsAPIMissing says the DNSEndpoint API is not served (ExternalDNS not installed).
	EndpointsAPIMissing bool
	// Current are the route's DNSEndpoints as they are: the form a failover name was published
	// in is kept (RouteForm). Forms is failover's view of the zones (nil: none).
	Current []*externaldnsv1alpha1.DNSEndpoint
	Forms   Forms
}

// RoutePlan is what a ServiceRoute should produce.
type RoutePlan struct {
	Outcome
	Hostname string
	Target   string
	// Sync says the route's DNSEndpoints must become exactly Endpoints (none: delete them all),
	// and its status hostnames Hostname and Target. When false everything is left as it is: an
	// input is missing, and removing records on incomplete information would cause an outage.
	Sync      bool
	Endpoints []*externaldnsv1alpha1.DNSEndpoint
}

// Route decides a ServiceRoute's DNSEndpoints and status. Records are removed only on a definite
// answer (see Missing): the route's application is not allowed in its namespace, the route is
// invalid, another route owns the hostname, the namespace has no policy, the policy in force —
// evaluated here against the current ClusterIdentity and DNSConfiguration, never taken from a
// possibly stale policy status — does not activate a controller, the Gateway does not exist, or
// it does not accept routes from the route's namespace.
func Route(in RouteInputs) RoutePlan {
	r := in.Route
	if reason, message, missing := Missing(in.Identity, in.Configuration, in.EndpointsAPIMissing); missing {
		return RoutePlan{Outcome: Outcome{Phase: pending, Reason: reason, Message: message + "; existing DNS records are kept"}}
	}
	id := in.Identity.Spec
	p := RoutePlan{Hostname: naming.SourceHostname(r.Spec.ServiceName, id.EnvironmentLetter, r.Spec.Environment, r.Spec.Application, id.Domain)}
	if ok, message := ApplicationAllowed(r.Namespace, r.Spec.Application, in.NamespaceAnnotations, in.ApplicationListedBy); !ok {
		return p.without(failed, routingv1alpha1.ReasonApplicationNotAllowed, message)
	}
	if err := naming.ValidateHostname(p.Hostname); err != nil {
		p.Hostname = "" // never published, not even in status
		return p.without(failed, routingv1alpha1.ReasonInvalidHostname, "the route's hostname is not a valid DNS name: "+err.Error())
	}
	if in.Winner != nil {
		return p.without(pending, routingv1alpha1.ReasonHostnameConflict, winnerMessage(p.Hostname, r, in.Winner))
	}
	pol := in.Policy
	if pol == nil {
		return p.without(pending, routingv1alpha1.ReasonDNSPolicyNotFound, fmt.Sprintf("namespace %s has no DNSPolicy", r.Namespace))
	}
	d := policy.Decide(pol.Spec, IdentityOf(in.Identity), ControllersOf(in.Configuration))
	if !d.Active {
		return p.without(pending, routingv1alpha1.ReasonDNSPolicyInactive,
			fmt.Sprintf("DNSPolicy %s does not apply to this cluster: %s", pol.Name, d.Message))
	}
	gw := in.Gateway
	if gw == nil {
		return p.without(failed, routingv1alpha1.ReasonGatewayNotFound,
			fmt.Sprintf("Gateway %s/%s does not exist", gatewayNamespace(r), r.Spec.GatewayName))
	}
	if !AllowsRoutesFrom(gw, r.Namespace, in.NamespaceLabels) {
		return p.without(failed, routingv1alpha1.ReasonNotAllowedByGateway, notAllowedMessage(gw, r.Namespace))
	}
	p.Target = naming.TargetHostname(id.Cluster, id.Region, gw.Spec.TargetPostfix, id.Domain)
	if err := naming.ValidateHostname(p.Target); err != nil {
		p.Target = ""
		return p.without(failed, routingv1alpha1.ReasonInvalidHostname, "the gateway target hostname is not a valid DNS name: "+err.Error())
	}
	if LeftOff(gw.Status.HostLimit, r) { // the Gateway's Istio Gateway is full (hostlimit.go)
		return p.without(pending, routingv1alpha1.ReasonGatewayHostLimit, hostLimitMessage(gw))
	}
	p.Sync = true
	ttl, _ := RecordTTL(in.Configuration, pol)
	for _, c := range d.Controllers {
		ep := desired.RouteEndpoint(r, c, p.Hostname, p.Target)
		if pol.Spec.Failover != nil && failoverZone(in.Configuration, c.Name) {
			ep = withFailoverForm(ep, in, c.Name, c.Region, naming.IntermediateName(gw.Spec.TargetPostfix, r.Namespace, c.Region, id.Domain))
		}
		p.Endpoints = append(p.Endpoints, desired.WithRecordTTL(ep, ttl))
	}
	if len(p.Endpoints) == 0 {
		p.Outcome = Outcome{Phase: pending, Reason: routingv1alpha1.ReasonNoActiveControllers,
			Message: fmt.Sprintf("DNSPolicy %s activates no ExternalDNS controller in this cluster", pol.Name)}
		return p
	}
	p.Outcome = Outcome{Phase: active, Ready: true, Reason: routingv1alpha1.ReasonReconciliationSucceeded,
		Message: fmt.Sprintf("%s → %s published through %s", p.Hostname, p.Target, strings.Join(endpointControllers(p.Endpoints), ", "))}
	if c, ok := ListenerConflictOf(gw, r.Namespace, p.Hostname); ok && UsesGatewayAPI(gw) {
		// Published all the same: the records are right, the listener is the platform's to fix.
		p.Outcome = Outcome{Phase: pending, Reason: routingv1alpha1.ReasonListenerConflict, Message: listenerConflictMessage(gw, c)}
	}
	return p
}

// withFailoverForm publishes a failover policy's name in a zone with failover settings in the form
// RouteForm decides (through the policy's intermediate name there). An intermediate name too
// long for DNS leaves the name direct: it then moves on its own, as before intermediates.
func withFailoverForm(ep *externaldnsv1alpha1.DNSEndpoint, in RouteInputs, controller, region, intermediate string) *externaldnsv1alpha1.DNSEndpoint {
	if naming.ValidateHostname(intermediate) != nil {
		return ep
	}
	hostname := ep.Spec.Endpoints[0].DNSName
	view, known := failover.Form{}, false
	if in.Forms != nil {
		view, known = in.Forms(controller, hostname, intermediate)
	}
	return WithForm(ep, RouteForm(endpointOf(in.Current, controller), view, known, hostname, intermediate), intermediate)
}

// Missing is the one place that says whether the cluster-wide inputs every decision depends on
// are there. When one is missing — not created yet, deleted for a moment by a GitOps replace,
// restored in the wrong order, or its API not installed — no decision can be definite, so the
// callers keep what exists and report the reason returned here.
func Missing(identity *clusterv1alpha1.ClusterIdentity, configuration *clusterv1alpha1.DNSConfiguration, endpointsAPIMissing bool) (reason, message string, missing bool) {
	switch {
	case identity == nil:
		return routingv1alpha1.ReasonClusterIdentityNotFound, fmt.Sprintf("ClusterIdentity %s does not exist", clusterv1alpha1.ClusterIdentityName), true
	case configuration == nil:
		return routingv1alpha1.ReasonDNSConfigurationNotFound, fmt.Sprintf("DNSConfiguration %s does not exist", clusterv1alpha1.DNSConfigurationName), true
	case endpointsAPIMissing:
		return routingv1alpha1.ReasonExternalDNSNotInstalled, "the DNSEndpoint API (externaldns.k8s.io/v1alpha1) is not installed in this cluster", true
	}
	return "", "", false
}

// without returns the plan with no DNSEndpoints at all and the given outcome.
func (p RoutePlan) without(phase, reason, message string) RoutePlan {
	p.Outcome = Outcome{Phase: phase, Reason: reason, Message: message}
	p.Sync, p.Endpoints = true, nil
	return p
}

// Publishes reports whether a route's status says it has DNS records: its hostname then belongs
// on its gateway's Istio Gateway. A route that is temporarily not Ready because an input is
// missing keeps its records, and so keeps its host.
func Publishes(r *routingv1alpha1.ServiceRoute) bool {
	return r.DeletionTimestamp.IsZero() && r.Status.Hostname != "" && len(r.Status.Endpoints) > 0
}

// ManagedEndpoints is a route's status.endpoints and status.DNSEndpoint (the first) for the
// DNSEndpoints it now publishes (applied, as the write step left them).
func ManagedEndpoints(applied []*externaldnsv1alpha1.DNSEndpoint) ([]routingv1alpha1.ManagedEndpoint, string) {
	if len(applied) == 0 {
		return nil, ""
	}
	out := make([]routingv1alpha1.ManagedEndpoint, len(applied))
	for i, ep := range applied {
		out[i] = routingv1alpha1.ManagedEndpoint{Name: ep.Name, Controller: ep.Labels[naming.LabelController], Region: ep.Labels[naming.LabelRegion]}
	}
	return out, out[0].Name
}

func gatewayNamespace(r *routingv1alpha1.ServiceRoute) string {
	return cmp.Or(r.Spec.GatewayNamespace, routingv1alpha1.DefaultGatewayNamespace)
}

// GatewayRef is the namespace and name of the Gateway a route references.
func GatewayRef(r *routingv1alpha1.ServiceRoute) types.NamespacedName {
	return types.NamespacedName{Namespace: gatewayNamespace(r), Name: r.Spec.GatewayName}
}

func endpointControllers(eps []*externaldnsv1alpha1.DNSEndpoint) []string {
	names := make([]string, len(eps))
	for i, ep := range eps {
		names[i] = ep.Labels[naming.LabelController]
	}
	return names
}

// GatewayInputs is what the Gateway reconciler reads.
type GatewayInputs struct {
	Gateway  *routingv1alpha1.Gateway
	Identity *clusterv1alpha1.ClusterIdentity // nil when missing
	// Hosts are the Istio hosts (see IstioHost) of the ServiceRoutes referencing the gateway that
	// publish DNS records (see Publishes).
	Hosts []string
	// IngressDecider is the Gateway that decides the ingress namespace of the gateway's
	// (controller, targetPostfix) pair (see IngressDecider); nil or the gateway itself when it
	// decides.
	IngressDecider *routingv1alpha1.Gateway
	// Service is the ingress LoadBalancer Service, from the ingress namespace of the pair's
	// decider only; nil when there is none.
	Service *ingress.Addresses
	// ServiceName is namespace/name of that Service, for messages.
	ServiceName string
	// IstioAPIMissing says the Istio Gateway API is not served (Istio not installed).
	IstioAPIMissing bool
	// HostLimit is where AdmitHosts cut the candidates off for lack of room (nil: all fit);
	// Hosts are the admitted ones. It goes to status.hostLimit as it is.
	HostLimit *routingv1alpha1.GatewayHostLimit
	// RouteHosts are the admitted routes' hostnames with their namespaces, oldest first (backend
	// GatewayAPI; Hosts then holds the same hostnames).
	RouteHosts []desired.RouteHost
	// GatewayAPIMissing says the Gateway API's Gateway or ListenerSet kind is not served.
	GatewayAPIMissing bool
	// ListenerSets are the ListenerSets the Gateway owns now (backend GatewayAPI): a hostname
	// stays in its ListenerSet while there is room.
	ListenerSets []*gwv1.ListenerSet
	// GatewayAPIGateway is the generated Gateway API Gateway as read (nil: none yet), for the
	// listener conditions its implementation wrote.
	GatewayAPIGateway *gwv1.Gateway
}

// GatewayPlan is what a Gateway should produce.
type GatewayPlan struct {
	Outcome
	Target string
	// Hosts of the Istio Gateway, sorted and unique; no Istio Gateway at all when empty (Istio
	// rejects a server without hosts, and the operator never adds a wildcard).
	Hosts          []string
	LoadBalancerIP string
	// SyncIstio says the Istio Gateway must be made to match (or removed when Hosts is empty).
	SyncIstio bool
	// Keep leaves the Istio Gateway and the status' target, address and host count as they are:
	// the ClusterIdentity they are computed from is missing.
	Keep bool
	// SyncGatewayAPI says the Gateway API objects must be made to match GatewayAPI (all removed
	// when it is nil).
	SyncGatewayAPI bool
	GatewayAPI     *desired.GatewayAPIObjects
	// ListenerConflicts go to status.listenerConflicts (backend GatewayAPI).
	ListenerConflicts []routingv1alpha1.ListenerConflict
	// ListenerProblems are the listeners the Gateway API implementation does not accept or whose
	// references it cannot resolve (backend GatewayAPI): the ListenerProblems condition.
	ListenerProblems []ListenerProblem
}

// UsesGatewayAPI reports whether gw's backend is the Gateway API (otherwise the classic Istio
// Gateway).
func UsesGatewayAPI(gw *routingv1alpha1.Gateway) bool {
	return gw.Spec.Backend == routingv1alpha1.BackendGatewayAPI
}

// Gateway decides the Istio Gateway and status of a Gateway.
func Gateway(in GatewayInputs) GatewayPlan {
	gw := in.Gateway
	if in.Identity == nil {
		return GatewayPlan{Keep: true, Outcome: Outcome{Phase: pending, Reason: routingv1alpha1.ReasonClusterIdentityNotFound,
			Message: fmt.Sprintf("ClusterIdentity %s does not exist; the Istio Gateway and the address records are kept", clusterv1alpha1.ClusterIdentityName)}}
	}
	id := in.Identity.Spec
	p := GatewayPlan{Target: naming.TargetHostname(id.Cluster, id.Region, gw.Spec.TargetPostfix, id.Domain),
		SyncIstio: !in.IstioAPIMissing, SyncGatewayAPI: !in.GatewayAPIMissing}
	// Switching backends writes the new one first and removes the old one only once the new one
	// is written (the controller's order); when the new one's API is missing the old one stays.
	if api := UsesGatewayAPI(gw); api && in.GatewayAPIMissing {
		p.SyncIstio = false
	} else if !api && in.IstioAPIMissing {
		p.SyncGatewayAPI = false
	}
	if IstioHostLists(gw) == 0 {
		p.Outcome = Outcome{Phase: failed, Reason: routingv1alpha1.ReasonCredentialNameMissing,
			Message: "spec.credentialName is empty and spec.plainHTTP is not Serve, so the gateway would serve nothing: name the TLS Secret for HTTPS, or set plainHTTP: Serve for plain HTTP; no Istio Gateway is generated"}
		return p
	}
	p.Hosts = slices.Sorted(slices.Values(in.Hosts))
	p.Hosts = slices.Compact(p.Hosts)
	if err := naming.ValidateHostname(p.Target); err != nil {
		p.Target = "" // never published, not even in status
		p.Outcome = Outcome{Phase: failed, Reason: routingv1alpha1.ReasonInvalidHostname, Message: "the target hostname is not a valid DNS name: " + err.Error()}
		return p
	}
	if UsesGatewayAPI(gw) {
		objs := desired.GatewayAPI(gw, p.Target, IngressNamespace(gw), in.RouteHosts, in.ListenerSets)
		p.GatewayAPI, p.ListenerConflicts = &objs, ListenerConflicts(in.ListenerSets)
		p.ListenerProblems = ListenerProblems(in.GatewayAPIGateway, in.ListenerSets)
		return gatewayAPIOutcome(in, p)
	}
	if d := in.IngressDecider; d != nil && d.UID != gw.UID && UsesGatewayAPI(d) {
		p.Outcome = Outcome{Phase: failed, Reason: routingv1alpha1.ReasonEntryPointShared,
			Message: fmt.Sprintf("the older Gateway %s/%s has the same controller and targetPostfix and backend GatewayAPI, so the target hostname %s carries the address of its Gateway API Gateway, which does not serve this gateway's hosts: give this Gateway another targetPostfix", d.Namespace, d.Name, p.Target)}
		return p
	}
	if d := in.IngressDecider; d != nil && d.UID != gw.UID && IngressNamespace(d) != IngressNamespace(gw) {
		p.Outcome = Outcome{Phase: failed, Reason: routingv1alpha1.ReasonIngressNamespaceConflict,
			Message: fmt.Sprintf("the older Gateway %s/%s has the same controller and targetPostfix and takes the ingress Service of %s from namespace %s, not %s: set the same spec.ingressNamespace on both", d.Namespace, d.Name, p.Target, IngressNamespace(d), IngressNamespace(gw))}
		return p
	}
	switch {
	case in.Service == nil:
		p.Outcome = Outcome{Phase: pending, Reason: routingv1alpha1.ReasonLoadBalancerNotFound,
			Message: fmt.Sprintf("no Service of type LoadBalancer in namespace %s is labelled %s=%s: no address record is published for %s (existing ones are kept)", IngressNamespace(gw), naming.IngressServiceSelector, gw.Spec.Controller, p.Target)}
	case in.Service.Empty():
		p.Outcome = Outcome{Phase: pending, Reason: routingv1alpha1.ReasonLoadBalancerAddressPending,
			Message: fmt.Sprintf("Service %s has no load balancer address yet: no address record is published for %s (existing ones are kept)", in.ServiceName, p.Target)}
	case in.IstioAPIMissing:
		p.LoadBalancerIP = in.Service.Primary()
		p.Outcome = Outcome{Phase: pending, Reason: routingv1alpha1.ReasonIstioNotInstalled,
			Message: fmt.Sprintf("the Istio Gateway API (networking.istio.io/v1) is not installed: no Istio Gateway is generated for %d host(s); DNS is published (%s → %s)", len(p.Hosts), p.Target, p.LoadBalancerIP)}
	case len(p.Hosts) == 0:
		p.LoadBalancerIP = in.Service.Primary()
		p.Outcome = Outcome{Phase: active, Ready: true, Reason: routingv1alpha1.ReasonNoServiceRoutes,
			Message: fmt.Sprintf("%s → %s; no ServiceRoute publishes through this gateway yet, so there is no Istio Gateway", p.Target, p.LoadBalancerIP)}
	default:
		p.LoadBalancerIP = in.Service.Primary()
		p.Outcome = Outcome{Phase: active, Ready: true, Reason: routingv1alpha1.ReasonGatewayCreated,
			Message: fmt.Sprintf("Istio Gateway %s serves %d host(s); %s → %s", gw.Name, len(p.Hosts), p.Target, p.LoadBalancerIP)}
	}
	return p
}

// gatewayAPIOutcome is the status of a Gateway with the Gateway API backend. Its address is the
// generated Gateway API Gateway's status.addresses (in.Service), published only by the Gateway
// that decides the entry point: the Gateways of a (controller, targetPostfix) pair share one
// target hostname, and each Gateway API Gateway has an address of its own.
func gatewayAPIOutcome(in GatewayInputs, p GatewayPlan) GatewayPlan {
	gw := in.Gateway
	objs := p.GatewayAPI
	listeners := 0
	for _, s := range objs.ListenerSets {
		listeners += len(s.Spec.Listeners)
	}
	switch d := in.IngressDecider; {
	case d != nil && d.UID != gw.UID:
		p.Outcome = Outcome{Phase: failed, Reason: routingv1alpha1.ReasonEntryPointShared,
			Message: fmt.Sprintf("the older Gateway %s/%s has the same controller and targetPostfix, so the target hostname %s carries its address; a Gateway with backend GatewayAPI has an address of its own: give it a targetPostfix no other Gateway uses", d.Namespace, d.Name, p.Target)}
	case in.GatewayAPIMissing:
		p.Outcome = Outcome{Phase: pending, Reason: routingv1alpha1.ReasonGatewayAPINotInstalled,
			Message: fmt.Sprintf("the Gateway API (gateway.networking.k8s.io/v1 Gateway and ListenerSet, standard channel v1.5 or later) is not installed: nothing is generated for %d host(s) and what exists is kept", len(p.Hosts))}
	case in.Service == nil || in.Service.Empty():
		p.Outcome = Outcome{Phase: pending, Reason: routingv1alpha1.ReasonLoadBalancerAddressPending,
			Message: fmt.Sprintf("the Gateway API Gateway %s/%s (class %s) has no address in status.addresses yet: no address record is published for %s (existing ones are kept); %d host(s) in %d ListenerSet(s)", gw.Namespace, gw.Name, objs.Gateway.Spec.GatewayClassName, p.Target, len(p.Hosts), len(objs.ListenerSets))}
	default:
		p.LoadBalancerIP = in.Service.Primary()
		p.Outcome = Outcome{Phase: active, Ready: true, Reason: routingv1alpha1.ReasonGatewayCreated,
			Message: fmt.Sprintf("Gateway API Gateway %s (class %s) serves %d host(s) with %d listener(s) in %d ListenerSet(s); %s → %s", gw.Name, objs.Gateway.Spec.GatewayClassName, len(p.Hosts), listeners, len(objs.ListenerSets), p.Target, p.LoadBalancerIP)}
	}
	return p
}

// IngressInputs is what the IngressDNS reconciler reads for one (controller, targetPostfix) pair.
type IngressInputs struct {
	Ingress desired.Ingress
	// Gateways are the Gateways with that pair; none means the records must go.
	Gateways      []*routingv1alpha1.Gateway
	Identity      *clusterv1alpha1.ClusterIdentity  // nil when missing
	Configuration *clusterv1alpha1.DNSConfiguration // nil when missing
	Service       *IngressService                   // nil when there is no ingress Service
}

// IngressService is the selected ingress LoadBalancer Service.
type IngressService struct {
	Namespace string
	Addresses ingress.Addresses
}

// IngressPlan is the set of address DNSEndpoints a pair should have.
type IngressPlan struct {
	// Sync false leaves existing records alone: the cluster configuration or the ingress
	// address is missing, which says nothing definite about the records.
	Sync      bool
	Target    string
	Endpoints []*externaldnsv1alpha1.DNSEndpoint
}

// Ingress decides the address records of a gateway target hostname: one DNSEndpoint per
// ExternalDNS controller of the DNSConfiguration (every regional zone that can hold a CNAME to it
// needs the address too), in the namespace of the ingress Service. The records go only when the
// last Gateway of the pair is deleted, when the target hostname is definitely invalid, or when a
// controller leaves the DNSConfiguration; an ingress Service that is missing or has no address
// (being re-created, or Istio being upgraded) keeps them.
func Ingress(in IngressInputs) IngressPlan {
	if len(in.Gateways) == 0 {
		return IngressPlan{Sync: true}
	}
	if _, _, missing := Missing(in.Identity, in.Configuration, false); missing {
		return IngressPlan{}
	}
	id := in.Identity.Spec
	p := IngressPlan{Sync: true, Target: naming.TargetHostname(id.Cluster, id.Region, in.Ingress.TargetPostfix, id.Domain)}
	if naming.ValidateHostname(p.Target) != nil {
		p.Target = ""
		return p
	}
	var records []*endpoint.Endpoint
	if in.Service != nil {
		records = in.Service.Addresses.Records(p.Target)
	}
	for _, r := range records {
		r.RecordTTL = endpoint.TTL(PlatformRecordTTL(in.Configuration))
	}
	if len(records) == 0 {
		return IngressPlan{Target: p.Target}
	}
	for _, c := range ControllersOf(in.Configuration) {
		p.Endpoints = append(p.Endpoints, desired.GatewayEndpoint(in.Ingress, c, in.Service.Namespace, p.Target, records))
	}
	return p
}
