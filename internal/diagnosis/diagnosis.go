// Package diagnosis is `kubectl router status`: one hostname's (or ServiceRoute's) whole path and
// the first thing wrong on it, a gateway target hostname's address records in every zone, and the
// cluster at a glance, from the objects the operator reads (preview's World, read once by
// routerplan.Load). It reads the statuses the operator and ExternalDNS wrote; what it works out
// itself (the policy in force, the host budget, where an entry point's address comes from) it
// works out with the operator's own functions.
package diagnosis

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/budget"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/policy"
	"github.com/service-router/service-router-operator/internal/routerplan"
)

// DocsBase is where the troubleshooting guide is published; status links each problem to it.
const DocsBase = "https://github.com/service-router/service-router-operator/blob/main/docs/OPERATOR-GUIDE.md"

// Problem is the first thing wrong on a hostname's path.
type Problem struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Doc     string `json:"doc"`
}

// ZonePath is one zone of a route: its controller, DNSEndpoint, whether ExternalDNS processed it,
// what verification found, and the gateway target's address records there.
type ZonePath struct {
	Controller  string   `json:"controller"`
	Region      string   `json:"region,omitempty"`
	DNSEndpoint string   `json:"dnsEndpoint"`
	Exists      bool     `json:"exists"`
	Processed   bool     `json:"processed"`
	State       string   `json:"state,omitempty"`
	Answer      string   `json:"answer,omitempty"`
	LastChecked string   `json:"lastChecked,omitempty"`
	Addresses   []string `json:"addresses,omitempty"`
}

// RoutePath is one route's whole path: `kubectl router status <hostname | route>`.
type RoutePath struct {
	Route     string `json:"route"`
	Hostname  string `json:"hostname,omitempty"`
	Target    string `json:"target,omitempty"`
	Phase     string `json:"phase,omitempty"`
	Ready     string `json:"ready"`
	Published string `json:"published"`
	Policy    string `json:"policy"`
	Gateway   string `json:"gateway"`
	// Listener is, for a Gateway with backend GatewayAPI, the generated ListenerSet listener of
	// the route's hostname and what the Gateway API implementation reports on it.
	Listener string     `json:"listener,omitempty"`
	Zones    []ZonePath `json:"zones"`
	Problem  *Problem   `json:"problem,omitempty"`
}

// FindRoute finds a route by namespace/name, by name in namespace, or by hostname (the one in
// its status, else the one it would generate).
func FindRoute(w *routerplan.World, arg, namespace string) (*routingv1alpha1.ServiceRoute, error) {
	var matches []*routingv1alpha1.ServiceRoute
	ns, name, qualified := strings.Cut(arg, "/")
	for _, r := range routerplan.Live(w.Routes) {
		switch {
		case qualified && r.Namespace == ns && r.Name == name,
			!qualified && r.Namespace == namespace && r.Name == arg,
			r.Status.Hostname == arg,
			r.Status.Hostname == "" && w.Identity != nil && hostnameOf(w, r) == arg:
			matches = append(matches, r)
		}
	}
	switch len(matches) {
	case 0:
		return nil, fmt.Errorf("no ServiceRoute is named %s or publishes hostname %s (in namespace %s for a bare name)", arg, arg, namespace)
	case 1:
		return matches[0], nil
	}
	// Several routes claim one hostname: the oldest is the one in force, the others conflict.
	oldest, _ := decide.Oldest(matches)
	return oldest, nil
}

func hostnameOf(w *routerplan.World, r *routingv1alpha1.ServiceRoute) string {
	id := w.Identity.Spec
	return naming.SourceHostname(r.Spec.ServiceName, id.EnvironmentLetter, r.Spec.Environment, r.Spec.Application, id.Domain)
}

// PathOf describes a route's whole path from the cluster's objects, and the first thing wrong.
func PathOf(w *routerplan.World, r *routingv1alpha1.ServiceRoute) RoutePath {
	p := RoutePath{Route: key(r), Hostname: r.Status.Hostname, Target: r.Status.TargetHostname, Phase: string(r.Status.Phase),
		Ready: conditionLine(r.Status.Conditions, routingv1alpha1.ConditionReady), Published: conditionLine(r.Status.Conditions, routingv1alpha1.ConditionPublished)}
	if r.Status.Published != "" {
		p.Published = r.Status.Published + " zones; " + p.Published
	}
	pol, hasPolicy := decide.Oldest(routerplan.InNamespace(w.Policies, r.Namespace))
	switch {
	case !hasPolicy:
		p.Policy = "none: namespace " + r.Namespace + " has no DNSPolicy"
	case w.Identity == nil:
		p.Policy = fmt.Sprintf("%s (%s): cannot be evaluated without the ClusterIdentity", pol.Name, pol.Spec.Mode)
	default:
		d := policy.Decide(pol.Spec, decide.IdentityOf(w.Identity), decide.ControllersOf(w.Configuration))
		p.Policy = fmt.Sprintf("%s (%s): %s", pol.Name, pol.Spec.Mode, d.Message)
	}
	gw := gatewayOf(routerplan.Live(w.Gateways), r)
	ref := decide.GatewayRef(r)
	if gw == nil {
		p.Gateway = ref.String() + ": does not exist"
	} else {
		p.Gateway = fmt.Sprintf("%s: %s; target %s → %s", ref, conditionLine(gw.Status.Conditions, routingv1alpha1.ConditionReady),
			orNone(gw.Status.TargetHostname), orNone(gw.Status.LoadBalancerIP))
		if decide.UsesGatewayAPI(gw) {
			p.Gateway += "; backend GatewayAPI"
			p.Listener = listenerOf(w, gw, r)
		}
	}
	eps := map[string]*externaldnsv1alpha1.DNSEndpoint{}
	for _, ep := range w.Endpoints {
		eps[key(ep)] = ep
	}
	zones := map[string]routingv1alpha1.ZoneStatus{}
	for _, z := range r.Status.Zones {
		zones[z.Controller] = z
	}
	for _, m := range r.Status.Endpoints {
		z := ZonePath{Controller: m.Controller, Region: m.Region, DNSEndpoint: r.Namespace + "/" + m.Name}
		if ep := eps[z.DNSEndpoint]; ep != nil {
			z.Exists, z.Processed = true, processed(ep)
		}
		if s, ok := zones[m.Controller]; ok {
			z.State, z.Answer = string(s.State), s.Answer
			if s.LastChecked != nil {
				z.LastChecked = s.LastChecked.UTC().Format("2006-01-02T15:04:05Z")
			}
		}
		if gw != nil {
			z.Addresses = addressRecords(w, desired.IngressOfGateway(gw), m.Controller)
		}
		p.Zones = append(p.Zones, z)
	}
	p.Problem = firstProblem(r, gw, p)
	return p
}

// firstProblem walks the path in order: the route's own decision, its status lagging its spec,
// the Gateway, then each zone (the DNSEndpoint, ExternalDNS, the answer, the target's address).
func firstProblem(r *routingv1alpha1.ServiceRoute, gw *routingv1alpha1.Gateway, p RoutePath) *Problem {
	if c := meta.FindStatusCondition(r.Status.Conditions, routingv1alpha1.ConditionReady); c == nil {
		return &Problem{Reason: "NotReconciled", Message: "the route has no Ready condition: the operator has not reconciled it (is it running?)", Doc: doc("servicerouteroperatornotreconciling")}
	} else if c.Status != metav1.ConditionTrue {
		return &Problem{Reason: c.Reason, Message: c.Message, Doc: doc(anchorOf(c.Reason, "serviceroute"))}
	}
	if r.Status.ObservedGeneration < r.Generation {
		return &Problem{Reason: "StatusBehind", Message: fmt.Sprintf("the status describes generation %d, the spec is generation %d: the operator has not caught up", r.Status.ObservedGeneration, r.Generation),
			Doc: doc("servicerouteroperatornotreconciling")}
	}
	if gw != nil {
		if c := meta.FindStatusCondition(gw.Status.Conditions, routingv1alpha1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue {
			return &Problem{Reason: c.Reason, Message: fmt.Sprintf("Gateway %s/%s: %s", gw.Namespace, gw.Name, c.Message), Doc: doc(anchorOf(c.Reason, "gateway"))}
		}
		if decide.UsesGatewayAPI(gw) && strings.HasPrefix(p.Listener, noListener) {
			return &Problem{Reason: "ListenerMissing", Message: p.Listener + ": HTTPRoutes cannot attach to the hostname; the operator writes it with the Gateway's next reconcile (is it running?)",
				Doc: doc("servicerouteroperatornotreconciling")}
		}
	}
	for _, z := range p.Zones {
		switch {
		case !z.Exists:
			return &Problem{Reason: "DNSEndpointMissing", Message: fmt.Sprintf("DNSEndpoint %s of zone %s is listed in status but does not exist", z.DNSEndpoint, z.Controller), Doc: doc("servicerouterzonenotpublishing")}
		case !z.Processed:
			return &Problem{Reason: "NotProcessed", Message: fmt.Sprintf("ExternalDNS %s has not processed DNSEndpoint %s yet: is it running, with --source=crd and the annotation filter for %s?", z.Controller, z.DNSEndpoint, z.Controller),
				Doc: doc("servicerouterzonenotpublishing")}
		case z.State == string(routingv1alpha1.ZoneDrifted):
			return &Problem{Reason: routingv1alpha1.ReasonZonesDrifted, Message: fmt.Sprintf("zone %s answers %s", z.Controller, z.Answer), Doc: doc("servicerouterzonedrifted")}
		case z.State == string(routingv1alpha1.ZonePending) || z.State == string(routingv1alpha1.ZoneUnreachable):
			return &Problem{Reason: "Zone" + z.State, Message: fmt.Sprintf("zone %s: %s %s", z.Controller, strings.ToLower(z.State), z.Answer), Doc: doc("servicerouterzonenotpublishing")}
		case gw != nil && len(z.Addresses) == 0:
			return &Problem{Reason: "AddressRecordMissing", Message: fmt.Sprintf("zone %s has no address record for the target %s: the CNAME points at a name that does not resolve", z.Controller, p.Target),
				Doc: doc("serviceroutergatewaywithoutloadbalancer")}
		}
	}
	return nil
}

// noListener starts the Listener line of a route whose hostname has no generated listener.
const noListener = "none"

// listenerOf describes the generated listener of r's hostname on gw (backend GatewayAPI): the
// ListenerSet gw owns for r's namespace that holds it, and the Conflicted, Accepted and
// Programmed conditions the Gateway API implementation reports on it.
func listenerOf(w *routerplan.World, gw *routingv1alpha1.Gateway, r *routingv1alpha1.ServiceRoute) string {
	in := decide.WithGatewayAPI(decide.GatewayInputs{Gateway: gw}, routerplan.InNamespace(w.ListenerSets, gw.Namespace), nil)
	for _, s := range in.ListenerSets {
		if s.Labels[naming.LabelSourceNamespace] != r.Namespace {
			continue
		}
		for _, l := range s.Spec.Listeners {
			if l.Hostname == nil || string(*l.Hostname) != r.Status.Hostname {
				continue
			}
			var state []string
			for _, ls := range s.Status.Listeners {
				if ls.Name != l.Name {
					continue
				}
				for _, t := range []string{"Accepted", "Programmed", "Conflicted"} {
					if c := meta.FindStatusCondition(ls.Conditions, t); c != nil {
						state = append(state, fmt.Sprintf("%s=%s", t, c.Status))
					}
				}
			}
			if len(state) == 0 {
				state = []string{"no status from the Gateway API implementation yet"}
			}
			return fmt.Sprintf("ListenerSet %s listener %s: %s", key(s), l.Name, strings.Join(state, ", "))
		}
	}
	return fmt.Sprintf("%s: no ListenerSet of Gateway %s/%s lists %s", noListener, gw.Namespace, gw.Name, orNone(r.Status.Hostname))
}

// processed says ExternalDNS's CRD source has read the DNSEndpoint's current generation.
func processed(ep *externaldnsv1alpha1.DNSEndpoint) bool {
	return ep.Status.ObservedGeneration >= ep.Generation && ep.Status.ObservedGeneration > 0
}

// addressRecords are the records of an entry point's address DNSEndpoint for one controller.
func addressRecords(w *routerplan.World, pair desired.Ingress, controller string) []string {
	for _, ep := range w.Endpoints {
		if got, ok := desired.IngressOfLabels(ep.Labels); ok && got == pair && ep.Labels[naming.LabelController] == controller {
			return routerplan.RecordLines(ep)
		}
	}
	return nil
}

// anchorOf is the guide's section for a condition reason: its runbook when it has one, else the
// troubleshooting table of the kind.
func anchorOf(reason, kind string) string {
	switch reason {
	case routingv1alpha1.ReasonHostnameConflict:
		return "servicerouterhostnameconflict"
	case routingv1alpha1.ReasonOwnershipConflict:
		return "servicerouterownershipconflict"
	case routingv1alpha1.ReasonNoActiveControllers:
		return "servicerouterdnspolicywithoutcontrollers"
	case routingv1alpha1.ReasonGatewayHostLimit:
		return "serviceroutergatewayhostlimit"
	case routingv1alpha1.ReasonLoadBalancerNotFound, routingv1alpha1.ReasonLoadBalancerAddressPending:
		return "serviceroutergatewaywithoutloadbalancer"
	case routingv1alpha1.ReasonClusterIdentityNotFound:
		return "servicerouterclusteridentitymissing"
	}
	return kind
}

func doc(anchor string) string { return DocsBase + "#" + anchor }

func conditionLine(conditions []metav1.Condition, t string) string {
	c := meta.FindStatusCondition(conditions, t)
	if c == nil {
		return "(no " + t + " condition)"
	}
	return fmt.Sprintf("%s %s", c.Status, c.Reason)
}

func orNone(s string) string { return cmp.Or(s, "(none)") }

// WritePath writes a route's path for people.
func WritePath(w io.Writer, p RoutePath) error {
	pr := &lines{}
	pr.line("ServiceRoute %s", p.Route)
	pr.line("  hostname   %s → %s", orNone(p.Hostname), orNone(p.Target))
	pr.line("  ready      %s (phase %s)", p.Ready, orNone(p.Phase))
	pr.line("  published  %s", p.Published)
	pr.line("  policy     %s", p.Policy)
	pr.line("  gateway    %s", p.Gateway)
	if p.Listener != "" {
		pr.line("  listener   %s", p.Listener)
	}
	pr.line("")
	if len(p.Zones) == 0 {
		pr.line("Zones: none (the route publishes no DNS record)")
	} else {
		tw := tabwriter.NewWriter(pr, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ZONE\tREGION\tDNSENDPOINT\tPROCESSED\tVERIFIED\tLAST ANSWER\tTARGET ADDRESS")
		for _, z := range p.Zones {
			ep := z.DNSEndpoint
			if !z.Exists {
				ep += " (missing)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", z.Controller, z.Region, ep, yesNo(z.Processed), orNone(z.State),
				orNone(strings.TrimSpace(z.Answer+" "+z.LastChecked)), orNone(strings.Join(z.Addresses, "; ")))
		}
		_ = tw.Flush() // to memory: it cannot fail
	}
	pr.firstProblem(p.Problem, "Nothing is wrong: every zone has the record, ExternalDNS processed it, and the target has its address.")
	return pr.to(w)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Summary is `kubectl router status` without an argument.
type Summary struct {
	Identity      string           `json:"identity"`
	Configuration string           `json:"configuration"`
	Routes        map[string]int   `json:"routes"`
	Zones         []string         `json:"zones"`
	Deletions     string           `json:"deletions"`
	Gateways      []GatewaySummary `json:"gateways"`
	// Failover is regional failover as dns-config's status tells it: each other region's state,
	// and the names this cluster holds for it (empty without zones with failover settings).
	Failover []string `json:"failover,omitempty"`
	// Requests are, per zone read through Azure Resource Manager, the requests this cluster's
	// operator sent to it and the quota left, as dns-config's status.verification[].requests
	// says (empty without such zones).
	Requests []ZoneRequestsSummary `json:"requests,omitempty"`
	// RequestBudget is dns-config's OverRequestBudget condition, with its message when True.
	RequestBudget string `json:"requestBudget,omitempty"`
	// Drain is dns-config's Drained condition, reason and message, while this cluster's region is
	// drained or its names are coming back (empty otherwise).
	Drain string `json:"drain,omitempty"`
}

// ZoneRequestsSummary is one zone's line of Resource Manager requests. Measured is false until
// the operator's first window has passed (the other fields then empty).
type ZoneRequestsSummary struct {
	Controller      string `json:"controller"`
	Region          string `json:"region"`
	Measured        bool   `json:"measured"`
	ReadsPerMinute  string `json:"readsPerMinute,omitempty"`
	WritesPerMinute string `json:"writesPerMinute,omitempty"`
	Throttled       int32  `json:"throttled"`
	// RemainingReads and RemainingWrites are the principal's tokens left as last seen, at
	// RemainingSeen (empty: no answer yet).
	RemainingReads  string `json:"remainingReads,omitempty"`
	RemainingWrites string `json:"remainingWrites,omitempty"`
	RemainingSeen   string `json:"remainingSeen,omitempty"`
	// Window is what the rates were measured over, ending at MeasuredAt.
	Window     string `json:"window,omitempty"`
	MeasuredAt string `json:"measuredAt,omitempty"`
}

// GatewaySummary is one Gateway's host budget.
type GatewaySummary struct {
	Gateway string `json:"gateway"`
	Ready   string `json:"ready"`
	Hosts   int    `json:"hosts"`
	LeftOff int    `json:"leftOff"`
	Bytes   int    `json:"bytes"`
	Budget  int    `json:"budget"`
	// Backend is IstioGateway or GatewayAPI; with GatewayAPI, ListenerSets are the generated
	// ListenerSets and MostListeners the listeners of the fullest one (of desired.MaxListeners).
	Backend       string `json:"backend"`
	ListenerSets  int    `json:"listenerSets,omitempty"`
	MostListeners int    `json:"mostListeners,omitempty"`
}

// SummaryOf summarises the cluster: routes by Ready state, zones by verification state, held
// deletions and each Gateway's host budget (budget: the operator's --istio-gateway-max-bytes).
func SummaryOf(w *routerplan.World, budget int) Summary {
	s := Summary{Routes: map[string]int{}, Identity: "missing", Configuration: "missing", Deletions: "no deletion is held"}
	if w.Identity != nil {
		s.Identity = conditionLine(w.Identity.Status.Conditions, clusterv1alpha1.ConditionReady)
	}
	if cfg := w.Configuration; cfg != nil {
		s.Configuration = conditionLine(cfg.Status.Conditions, clusterv1alpha1.ConditionReady)
		if c := meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionDeletionsHeld); c != nil && c.Status == metav1.ConditionTrue {
			s.Deletions = c.Message
		}
		verified := map[string]clusterv1alpha1.ZoneVerificationStatus{}
		for _, z := range cfg.Status.Verification {
			verified[z.Controller] = z
		}
		for _, c := range cfg.Spec.ExternalDNSControllers {
			z, ok := verified[c.Name]
			if !ok {
				s.Zones = append(s.Zones, fmt.Sprintf("%s (%s): unverified", c.Name, c.Region))
				continue
			}
			s.Zones = append(s.Zones, fmt.Sprintf("%s (%s): %d/%d published, %d pending, %d drifted, %d unreachable",
				c.Name, c.Region, z.Published, z.Routes, z.Pending, z.Drifted, z.Unreachable))
		}
		s.Failover = failoverLines(cfg.Status.Failover)
		if c := meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionDrained); c != nil {
			s.Drain = c.Reason + ": " + c.Message
		}
		s.Requests = requestsOf(cfg)
		if c := meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionOverRequestBudget); c != nil {
			s.RequestBudget = fmt.Sprintf("%s %s", c.Status, c.Reason)
			if c.Status == metav1.ConditionTrue {
				s.RequestBudget += ": " + c.Message
			}
		}
	}
	routes := routerplan.Live(w.Routes)
	for _, r := range routes {
		s.Routes[conditionLine(r.Status.Conditions, routingv1alpha1.ConditionReady)]++
	}
	if budget <= 0 {
		budget = decide.DefaultIstioGatewayBudget
	}
	for _, gw := range routerplan.Live(w.Gateways) {
		admitted := decide.GatewayHosts(gw, routesOf(gw, routes), budget)
		g := GatewaySummary{Gateway: key(gw), Ready: conditionLine(gw.Status.Conditions, routingv1alpha1.ConditionReady),
			Hosts: len(admitted.Hosts), Bytes: admitted.Bytes * max(decide.IstioHostLists(gw), 1), Budget: budget, Backend: string(routingv1alpha1.BackendIstioGateway)}
		if decide.UsesGatewayAPI(gw) {
			g.Backend = string(routingv1alpha1.BackendGatewayAPI)
			sets := decide.WithGatewayAPI(decide.GatewayInputs{Gateway: gw}, routerplan.InNamespace(w.ListenerSets, gw.Namespace), nil).ListenerSets
			g.ListenerSets = len(sets)
			for _, s := range sets {
				g.MostListeners = max(g.MostListeners, len(s.Spec.Listeners))
			}
		}
		if l := gw.Status.HostLimit; l != nil {
			g.LeftOff = int(l.LeftOff)
		}
		s.Gateways = append(s.Gateways, g)
	}
	return s
}

// requestsOf is, per zone read through Azure Resource Manager in spec order, what dns-config's
// status says of its requests.
func requestsOf(cfg *clusterv1alpha1.DNSConfiguration) []ZoneRequestsSummary {
	measured := map[string]*clusterv1alpha1.ZoneRequests{}
	for _, z := range cfg.Status.Verification {
		measured[z.Controller] = z.Requests
	}
	var out []ZoneRequestsSummary
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if c.Verification == nil || c.Verification.AzurePrivateDNS == nil {
			continue
		}
		z := ZoneRequestsSummary{Controller: c.Name, Region: c.Region}
		if r := measured[c.Name]; r != nil {
			z.Measured, z.ReadsPerMinute, z.WritesPerMinute, z.Throttled = true, r.ReadsPerMinute, r.WritesPerMinute, r.Throttled
			z.Window, z.MeasuredAt = r.Window.Duration.String(), r.MeasuredAt.UTC().Format(time.RFC3339)
			if r.RemainingReads != nil {
				z.RemainingReads = fmt.Sprint(*r.RemainingReads)
			}
			if r.RemainingWrites != nil {
				z.RemainingWrites = fmt.Sprint(*r.RemainingWrites)
			}
			if r.RemainingSeen != nil {
				z.RemainingSeen = r.RemainingSeen.UTC().Format(time.RFC3339)
			}
		}
		out = append(out, z)
	}
	return out
}

// writeRequests writes the zones' Resource Manager requests as a table, indented under Zones.
func writeRequests(p *lines, zones []ZoneRequestsSummary, requestBudget string) {
	p.line("")
	p.line("  Azure Resource Manager requests of this cluster, a minute over the operator's last window (REMAINING: the tokens")
	p.line("  of the zone's principal left of %d reads and %d writes, as Resource Manager last said, at SEEN):", budget.ReadBurst, budget.WriteBurst)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ZONE\tREADS/MIN\tWRITES/MIN\tTHROTTLED\tREMAINING READS/WRITES\tSEEN\tWINDOW")
	for _, z := range zones {
		if !z.Measured {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\tnot measured yet (one window, about 5m, after the operator started)\n", z.Controller)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s/%s\t%s\t%s to %s\n", z.Controller, z.ReadsPerMinute, z.WritesPerMinute, z.Throttled,
			cmp.Or(z.RemainingReads, "-"), cmp.Or(z.RemainingWrites, "-"), cmp.Or(z.RemainingSeen, "-"), z.Window, z.MeasuredAt)
	}
	_ = tw.Flush() // to memory: it cannot fail
	for _, row := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		p.line("  %s", strings.TrimRight(row, " "))
	}
	if requestBudget != "" {
		p.line("  request budget: %s", requestBudget)
	}
}

// failoverLines renders each other region's failover state, e.g. "weu: Lost (HeartbeatStale) since
// 2026-11-27T03:00:00Z; this cluster serves 12 of its names in external-dns-weu: …".
func failoverLines(regions []clusterv1alpha1.RegionFailoverStatus) []string {
	var out []string
	for _, r := range regions {
		line := fmt.Sprintf("%s: %s (%s)", r.Region, r.State, r.Reason)
		if r.Since != nil {
			line += " since " + r.Since.UTC().Format(time.RFC3339)
		}
		var taken []string
		for _, z := range r.Taken {
			taken = append(taken, fmt.Sprintf("%d in %s", z.Names, z.Controller))
		}
		if len(taken) > 0 {
			line += "; this cluster serves its names: " + strings.Join(taken, ", ")
		}
		out = append(out, line+": "+r.Message)
	}
	return out
}

// WriteSummary writes the cluster summary for people.
func WriteSummary(w io.Writer, s Summary) error {
	p := &lines{}
	p.line("ClusterIdentity   %s", s.Identity)
	p.line("DNSConfiguration  %s", s.Configuration)
	p.line("Deletions         %s", s.Deletions)
	p.line("")
	total := 0
	states := make([]string, 0, len(s.Routes))
	for state, n := range s.Routes {
		total += n
		states = append(states, state)
	}
	slices.Sort(states)
	p.line("ServiceRoutes: %d", total)
	for _, state := range states {
		p.line("  %5d  %s", s.Routes[state], state)
	}
	p.line("")
	p.line("Zones:")
	for _, z := range s.Zones {
		p.line("  %s", z)
	}
	if len(s.Requests) > 0 {
		writeRequests(p, s.Requests, s.RequestBudget)
	}
	if len(s.Failover) > 0 || s.Drain != "" {
		p.line("")
		p.line("Regional failover (the other regions, as this cluster judges them):")
		if s.Drain != "" {
			p.line("  this region drained: %s", s.Drain)
		}
		for _, f := range s.Failover {
			p.line("  %s", f)
		}
	}
	p.line("")
	p.line("Gateways (host budget of the Istio Gateway; listeners of the ListenerSets with backend GatewayAPI):")
	for _, g := range s.Gateways {
		left := ""
		if g.LeftOff > 0 {
			left = fmt.Sprintf(", %d route(s) left off", g.LeftOff)
		}
		if g.Backend == string(routingv1alpha1.BackendGatewayAPI) {
			p.line("  %s: %s; backend GatewayAPI; %d host(s) in %d ListenerSet(s), the fullest with %d of %d listeners%s", g.Gateway, g.Ready, g.Hosts, g.ListenerSets,
				g.MostListeners, desired.MaxListeners, left)
			continue
		}
		p.line("  %s: %s; %d host(s), about %d of %d bytes (%d%%)%s", g.Gateway, g.Ready, g.Hosts, g.Bytes, g.Budget, g.Bytes*100/max(g.Budget, 1), left)
	}
	return p.to(w)
}

// TargetPath is a gateway target hostname's path: `kubectl router status <target hostname>`.
type TargetPath struct {
	Target string `json:"target"`
	// Gateways are the Gateways sharing the target (one entry point), with their Ready state.
	Gateways []string `json:"gateways"`
	// Address says where the address records take the address from: the ingress Service, or
	// with backend GatewayAPI the generated Gateway API Gateway's status.addresses.
	Address string     `json:"address"`
	Zones   []ZonePath `json:"zones"`
	Problem *Problem   `json:"problem,omitempty"`
}

// FindTarget returns the Gateways whose target hostname is target, the one deciding the entry
// point first; none when it is no Gateway's.
func FindTarget(w *routerplan.World, target string) []*routingv1alpha1.Gateway {
	var out []*routingv1alpha1.Gateway
	for _, gw := range routerplan.Live(w.Gateways) {
		if gw.Status.TargetHostname == target {
			out = append(out, gw)
		}
	}
	// The oldest decides the entry point's ingress namespace (decide.IngressDecider): it comes first.
	if decider, ok := decide.IngressDecider(out); ok {
		i := slices.Index(out, decider)
		out[0], out[i] = out[i], out[0]
	}
	return out
}

// TargetPathOf describes a target hostname's address records in every zone of the
// DNSConfiguration, and the first thing wrong. gateways share the target (FindTarget).
func TargetPathOf(w *routerplan.World, gateways []*routingv1alpha1.Gateway) TargetPath {
	decider := gateways[0]
	p := TargetPath{Target: decider.Status.TargetHostname}
	for _, gw := range gateways {
		p.Gateways = append(p.Gateways, fmt.Sprintf("%s/%s: %s", gw.Namespace, gw.Name, conditionLine(gw.Status.Conditions, routingv1alpha1.ConditionReady)))
	}
	zones := map[string]routingv1alpha1.ZoneStatus{}
	for _, z := range decider.Status.Zones {
		zones[z.Controller] = z
	}
	p.Address = addressSource(w, decider)
	pair := desired.IngressOfGateway(decider)
	for _, c := range decide.ControllersOf(w.Configuration) {
		z := ZonePath{Controller: c.Name, Region: c.Region}
		for _, ep := range w.Endpoints {
			if got, ok := desired.IngressOfLabels(ep.Labels); ok && got == pair && ep.Labels[naming.LabelController] == c.Name {
				z.DNSEndpoint, z.Exists, z.Processed, z.Addresses = key(ep), true, processed(ep), routerplan.RecordLines(ep)
			}
		}
		if s, ok := zones[c.Name]; ok {
			z.State, z.Answer = string(s.State), s.Answer
		}
		p.Zones = append(p.Zones, z)
	}
	for _, gw := range gateways {
		if c := meta.FindStatusCondition(gw.Status.Conditions, routingv1alpha1.ConditionReady); c != nil && c.Status != metav1.ConditionTrue {
			p.Problem = &Problem{Reason: c.Reason, Message: fmt.Sprintf("Gateway %s/%s: %s", gw.Namespace, gw.Name, c.Message), Doc: doc(anchorOf(c.Reason, "gateway"))}
			return p
		}
	}
	for _, z := range p.Zones {
		switch {
		case !z.Exists:
			p.Problem = &Problem{Reason: "AddressRecordMissing", Message: fmt.Sprintf("zone %s has no address record for %s", z.Controller, p.Target), Doc: doc("serviceroutergatewaywithoutloadbalancer")}
		case !z.Processed:
			p.Problem = &Problem{Reason: "NotProcessed", Message: fmt.Sprintf("ExternalDNS %s has not processed DNSEndpoint %s yet", z.Controller, z.DNSEndpoint), Doc: doc("servicerouterzonenotpublishing")}
		case z.State == string(routingv1alpha1.ZoneDrifted):
			p.Problem = &Problem{Reason: routingv1alpha1.ReasonZonesDrifted, Message: fmt.Sprintf("zone %s answers %s", z.Controller, z.Answer), Doc: doc("servicerouterzonedrifted")}
		case z.State == string(routingv1alpha1.ZonePending) || z.State == string(routingv1alpha1.ZoneUnreachable):
			p.Problem = &Problem{Reason: "Zone" + z.State, Message: fmt.Sprintf("zone %s: %s %s", z.Controller, strings.ToLower(z.State), z.Answer), Doc: doc("servicerouterzonenotpublishing")}
		default:
			continue
		}
		return p
	}
	return p
}

// addressSource says where the entry point decided by decider takes its address from, and what
// it holds now: the IngressDNS reconciler's own rule (core.EntryPointAddress) over the world.
func addressSource(w *routerplan.World, decider *routingv1alpha1.Gateway) string {
	addrs, service, _ := core.EntryPointAddress(context.Background(), worldAddress{w}, decider) // the world's reads do not fail
	if decide.UsesGatewayAPI(decider) {
		name := "Gateway API Gateway " + key(decider)
		switch {
		case w.GatewayAPIMissing:
			return name + ": the Gateway API is not installed; the records are kept"
		case addrs == nil || addrs.Addresses.Empty():
			return name + " status.addresses: none yet; the records are kept"
		}
		return fmt.Sprintf("%s status.addresses: %s", name, addrs.Addresses.Primary())
	}
	switch {
	case addrs == nil:
		return fmt.Sprintf("no LoadBalancer Service labelled %s=%s in namespace %s; the records are kept", naming.IngressServiceSelector, decider.Spec.Controller, decide.IngressNamespace(decider))
	case addrs.Addresses.Empty():
		return fmt.Sprintf("Service %s: no load balancer address yet; the records are kept", service)
	}
	return fmt.Sprintf("Service %s: %s", service, addrs.Addresses.Primary())
}

// worldAddress is what an entry point's address is read from (core.AddressSourceReads), in the
// world as the cluster has it.
type worldAddress struct{ w *routerplan.World }

func (r worldAddress) IngressService(_ context.Context, namespace, controller string) (*corev1.Service, error) {
	return r.w.IngressService(namespace, controller), nil
}

func (r worldAddress) GatewayAPIServed() bool { return !r.w.GatewayAPIMissing }

func (r worldAddress) GatewayAPIGateway(_ context.Context, name types.NamespacedName) ([]*gwv1.Gateway, error) {
	var out []*gwv1.Gateway
	for _, g := range r.w.GatewayAPIGateways {
		if g.Namespace == name.Namespace && g.Name == name.Name {
			out = append(out, g)
		}
	}
	return out, nil
}

// WriteTargetPath writes a target hostname's path for people.
func WriteTargetPath(w io.Writer, p TargetPath) error {
	pr := &lines{}
	pr.line("Gateway target %s", p.Target)
	for _, g := range p.Gateways {
		pr.line("  gateway  %s", g)
	}
	pr.line("  address  %s", p.Address)
	pr.line("")
	tw := tabwriter.NewWriter(pr, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ZONE\tREGION\tDNSENDPOINT\tPROCESSED\tVERIFIED\tLAST ANSWER\tRECORDS")
	for _, z := range p.Zones {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", z.Controller, z.Region, orNone(z.DNSEndpoint), yesNo(z.Processed), orNone(z.State),
			orNone(z.Answer), orNone(strings.Join(z.Addresses, "; ")))
	}
	_ = tw.Flush() // to memory: it cannot fail
	pr.firstProblem(p.Problem, "Nothing is wrong: every zone has the address record and ExternalDNS processed it.")
	return pr.to(w)
}

// lines is an output gathered in memory (its writes cannot fail), then written at once.
type lines struct{ strings.Builder }

func (l *lines) line(format string, args ...any) { fmt.Fprintf(l, format+"\n", args...) }

func (l *lines) to(w io.Writer) error {
	_, err := io.WriteString(w, l.String())
	return err
}

// firstProblem prints the first thing that is wrong, with the guide to read, or what is right.
func (l *lines) firstProblem(problem *Problem, nothingWrong string) {
	l.line("")
	if problem == nil {
		l.line("%s", nothingWrong)
		return
	}
	l.line("First problem: %s: %s", problem.Reason, problem.Message)
	l.line("  see %s", problem.Doc)
}

// key is namespace/name of an object.
func key(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }

func gatewayOf(gateways []*routingv1alpha1.Gateway, r *routingv1alpha1.ServiceRoute) *routingv1alpha1.Gateway {
	ref := decide.GatewayRef(r)
	for _, gw := range gateways {
		if gw.Namespace == ref.Namespace && gw.Name == ref.Name {
			return gw
		}
	}
	return nil
}

// routesOf are the routes referencing gw.
func routesOf(gw *routingv1alpha1.Gateway, routes []*routingv1alpha1.ServiceRoute) []*routingv1alpha1.ServiceRoute {
	ref := types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
	var out []*routingv1alpha1.ServiceRoute
	for _, r := range routes {
		if decide.GatewayRef(r) == ref {
			out = append(out, r)
		}
	}
	return out
}
