package routerplan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
)

// Result is what `kubectl router plan` reports: how the operator's converged state differs from
// the cluster's current state, per zone.
type Result struct {
	// Manifests say what each given manifest changes.
	Manifests []Change `json:"manifests"`
	// Zones are the record changes per ExternalDNS controller (one regional zone each), in
	// DNSConfiguration order, then any other controller found on a record.
	Zones []Zone `json:"zones"`
	// Routes are the ServiceRoutes whose Ready or Published state, zones, hostname or target
	// would change.
	Routes []RouteChange `json:"routes"`
	// Gateways are the Gateways whose Ready state would change (a backend switch waiting for its
	// address, a missing API, a host limit reached).
	Gateways []GatewayChange `json:"gateways"`
	// IstioHosts are the generated Istio Gateways whose hosts would change.
	IstioHosts []HostChange `json:"istioHosts"`
	// GatewayAPIHosts are the generated Gateway API Gateways and ListenerSets (backend GatewayAPI)
	// whose listener hostnames would change.
	GatewayAPIHosts []ListenerChange `json:"gatewayAPIHosts"`
	// Objects are the generated Istio Gateways and Gateway API objects that would be created,
	// changed or deleted (a backend switch creates the new backend's and deletes the old one's).
	Objects []ObjectChange `json:"objects"`
	// Guard says whether the mass-deletion guard would hold the operator's deletions.
	Guard GuardVerdict `json:"guard"`
	// RecordsRemoved is how many DNS names (per record type and zone) would leave their zone:
	// deleted DNSEndpoints and the old names of renamed ones. --max-deletions compares it.
	RecordsRemoved int `json:"recordsRemoved"`
}

// Zone is the record changes of one ExternalDNS controller's zone.
type Zone struct {
	Controller string   `json:"controller"`
	Region     string   `json:"region,omitempty"`
	Created    []Record `json:"created"`
	Retargeted []Record `json:"retargeted"`
	Deleted    []Record `json:"deleted"`
	// RecordsRemoved is how many names (per record type) leave this zone.
	RecordsRemoved int `json:"recordsRemoved"`
}

// Record is one DNSEndpoint created, changed or deleted.
type Record struct {
	DNSEndpoint string `json:"dnsEndpoint"`
	// Owner is the ServiceRoute (namespace/name) or the entry point (controller/targetPostfix)
	// the records belong to.
	Owner  string   `json:"owner"`
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
	// By is "garbage collector" for records removed with their deleted ServiceRoute (the
	// mass-deletion guard does not hold those).
	By string `json:"by,omitempty"`
}

// RouteChange is a route whose state would change.
type RouteChange struct {
	Route  string     `json:"route"`
	Before RouteState `json:"before"`
	After  RouteState `json:"after"`
}

// RouteState is a route's Ready and Published conditions and zones.
type RouteState struct {
	// Exists is false for a route that does not exist (before: created by the manifests; after:
	// deleted).
	Exists          bool     `json:"exists"`
	Hostname        string   `json:"hostname,omitempty"`
	Target          string   `json:"target,omitempty"`
	Ready           string   `json:"ready,omitempty"`
	Reason          string   `json:"reason,omitempty"`
	Message         string   `json:"message,omitempty"`
	Published       string   `json:"published,omitempty"`
	PublishedReason string   `json:"publishedReason,omitempty"`
	Zones           []string `json:"zones,omitempty"`
}

// HostChange is a generated Istio Gateway whose hosts would change.
type HostChange struct {
	Gateway string   `json:"gateway"`
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// GatewayChange is a Gateway whose Ready state would change.
type GatewayChange struct {
	Gateway string       `json:"gateway"`
	Before  GatewayState `json:"before"`
	After   GatewayState `json:"after"`
}

// GatewayState is a Gateway's Ready condition.
type GatewayState struct {
	// Exists is false for a Gateway that does not exist (before: created by the manifests;
	// after: deleted).
	Exists  bool   `json:"exists"`
	Ready   string `json:"ready,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ListenerChange is a generated Gateway API Gateway or ListenerSet whose listener hostnames would
// change.
type ListenerChange struct {
	// Object is "ListenerSet namespace/name" or "Gateway API Gateway namespace/name".
	Object  string   `json:"object"`
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// ObjectChange is a generated object (other than a DNSEndpoint) created, changed or deleted.
type ObjectChange struct {
	// Kind is "Istio Gateway", "Gateway API Gateway", "ListenerSet", "HTTPRoute" or
	// "ReferenceGrant".
	Kind   string `json:"kind"`
	Object string `json:"object"`
	// Action is create, change or delete.
	Action string `json:"action"`
	// By is "garbage collector" for objects removed with their deleted owner or namespace.
	By string `json:"by,omitempty"`
}

// GuardVerdict is what the mass-deletion guard would do with the operator's deletions.
type GuardVerdict struct {
	// Deletions are the deletions the operator asks for at once (they pass the guard).
	Deletions int `json:"deletions"`
	// Managed is how many DNSEndpoints the operator manages now (the guard's share is of it).
	Managed int `json:"managed"`
	// GarbageCollected are generated objects removed with their deleted owner: not the
	// operator's deletions, never held.
	GarbageCollected int    `json:"garbageCollected"`
	Holds            bool   `json:"holds"`
	Message          string `json:"message"`
}

// Compare reports how the prediction differs from the current world.
func Compare(current *World, p Prediction, s Settings, manifests []Change) Result {
	out := Result{Manifests: manifests, Routes: []RouteChange{}, Gateways: []GatewayChange{}, IstioHosts: []HostChange{}, GatewayAPIHosts: []ListenerChange{}, Objects: []ObjectChange{}}
	if out.Manifests == nil {
		out.Manifests = []Change{}
	}
	// The generated objects the garbage collector removes, as "<kind> namespace/name".
	gc := map[string]bool{}
	for _, k := range p.GarbageCollected {
		gc[k] = true
	}
	out.Zones = compareZones(current, p, gc)
	for _, z := range out.Zones {
		out.RecordsRemoved += z.RecordsRemoved
	}
	out.Routes = append(out.Routes, compareRoutes(current, p)...)
	out.Gateways = append(out.Gateways, compareGateways(current, p)...)
	out.IstioHosts = append(out.IstioHosts, compareHosts(current, p)...)
	out.GatewayAPIHosts = append(out.GatewayAPIHosts, compareListeners(current, p)...)
	out.Objects = append(out.Objects, compareObjects(current, p, gc)...)
	out.Guard = verdict(current, p, s)
	return out
}

func compareZones(current *World, p Prediction, gc map[string]bool) []Zone {
	before := byKeyOf(current.Endpoints)
	after := byKeyOf(p.Endpoints)
	zones := map[string]*Zone{}
	var order []string
	zone := func(controller, region string) *Zone {
		z, ok := zones[controller]
		if !ok {
			// Empty lists, not null, in JSON: `jq '.zones[].deleted[]'` works on every zone.
			z = &Zone{Controller: controller, Region: region, Created: []Record{}, Retargeted: []Record{}, Deleted: []Record{}}
			zones[controller] = z
			order = append(order, controller)
		}
		return z
	}
	if current.Configuration != nil {
		for _, c := range current.Configuration.Spec.ExternalDNSControllers {
			zone(c.Name, c.Region)
		}
	}
	for _, k := range sortedKeys(before, after) {
		b, a := before[k], after[k]
		ep := a
		if ep == nil {
			ep = b
		}
		z := zone(ep.Labels[naming.LabelController], ep.Labels[naming.LabelRegion])
		r := Record{DNSEndpoint: k, Owner: ownerOf(ep)}
		if b != nil {
			r.Before = RecordLines(b)
		}
		if a != nil {
			r.After = RecordLines(a)
		}
		switch {
		case b == nil:
			z.Created = append(z.Created, r)
		case a == nil:
			if gc["DNSEndpoint "+k] {
				r.By = "garbage collector"
			}
			z.Deleted = append(z.Deleted, r)
		case !equality.Semantic.DeepEqual(b.Spec, a.Spec):
			z.Retargeted = append(z.Retargeted, r)
		}
	}
	// Names leaving each zone: what a zone answers before and not after.
	names := func(eps map[string]*externaldnsv1alpha1.DNSEndpoint) map[string]map[string]bool {
		out := map[string]map[string]bool{}
		for _, ep := range eps {
			c := ep.Labels[naming.LabelController]
			if out[c] == nil {
				out[c] = map[string]bool{}
			}
			for _, r := range ep.Spec.Endpoints {
				out[c][r.DNSName+" "+r.RecordType] = true
			}
		}
		return out
	}
	was, will := names(before), names(after)
	out := make([]Zone, 0, len(order))
	for _, c := range order {
		z := zones[c]
		for n := range was[c] {
			if !will[c][n] {
				z.RecordsRemoved++
			}
		}
		out = append(out, *z)
	}
	return out
}

func sortedKeys[V any](maps_ ...map[string]V) []string {
	seen := map[string]bool{}
	for _, m := range maps_ {
		for k := range m {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// ownerOf names what a DNSEndpoint publishes for: its ServiceRoute or its entry point.
func ownerOf(ep *externaldnsv1alpha1.DNSEndpoint) string {
	if pair, ok := desired.IngressOfLabels(ep.Labels); ok {
		return "entry point " + pair.Controller + "/" + pair.TargetPostfix
	}
	if r := ep.Labels[naming.LabelServiceRoute]; r != "" {
		return "ServiceRoute " + ep.Namespace + "/" + r
	}
	return ""
}

// RecordLines are a DNSEndpoint's records, one line each: "name TYPE target,target (TTL s)".
func RecordLines(ep *externaldnsv1alpha1.DNSEndpoint) []string {
	out := make([]string, 0, len(ep.Spec.Endpoints))
	for _, r := range ep.Spec.Endpoints {
		line := fmt.Sprintf("%s %s %s", r.DNSName, r.RecordType, strings.Join(r.Targets, ","))
		if r.RecordTTL.IsConfigured() {
			line += fmt.Sprintf(" (TTL %d)", r.RecordTTL)
		}
		out = append(out, line)
	}
	return out
}

func compareRoutes(current *World, p Prediction) []RouteChange {
	before := map[string]RouteState{}
	for _, r := range Live(current.Routes) {
		before[key(r)] = stateOf(r.Status)
	}
	after := map[string]RouteState{}
	for k, o := range p.Routes {
		after[k] = stateOf(o.Status)
	}
	return changes(before, after, func(b, a RouteState) bool {
		return b.Ready == a.Ready && b.Reason == a.Reason && b.PublishedReason == a.PublishedReason && slices.Equal(b.Zones, a.Zones) && b.Exists == a.Exists &&
			b.Hostname == a.Hostname && b.Target == a.Target
	}, func(k string, b, a RouteState) RouteChange { return RouteChange{Route: k, Before: b, After: a} })
}

// changes are change's of the keys whose state is not the same before and after, in order.
func changes[S, C any](before, after map[string]S, same func(b, a S) bool, change func(k string, b, a S) C) []C {
	var out []C
	for _, k := range sortedKeys(before, after) {
		if b, a := before[k], after[k]; !same(b, a) {
			out = append(out, change(k, b, a))
		}
	}
	return out
}

func stateOf(s routingv1alpha1.ServiceRouteStatus) RouteState {
	out := RouteState{Exists: true, Published: s.Published, Hostname: s.Hostname, Target: s.TargetHostname}
	if c := meta.FindStatusCondition(s.Conditions, routingv1alpha1.ConditionReady); c != nil {
		out.Ready, out.Reason, out.Message = string(c.Status), c.Reason, c.Message
	}
	if c := meta.FindStatusCondition(s.Conditions, routingv1alpha1.ConditionPublished); c != nil {
		out.PublishedReason = c.Reason
	}
	for _, e := range s.Endpoints {
		out.Zones = append(out.Zones, e.Controller)
	}
	return out
}

func compareHosts(current *World, p Prediction) []HostChange {
	before := map[string][]string{}
	for _, ig := range current.IstioGateways {
		before[key(ig)] = istioHosts(ig)
	}
	return hostChanges(before, p.IstioHosts, func(k string, added, removed []string) HostChange {
		return HostChange{Gateway: k, Added: added, Removed: removed}
	})
}

// hostChanges are change's of the keys whose hosts differ from before to after, in order.
func hostChanges[C any](before, after map[string][]string, change func(k string, added, removed []string) C) []C {
	return changes(before, after, func(b, a []string) bool { return len(minus(a, b))+len(minus(b, a)) == 0 },
		func(k string, b, a []string) C { return change(k, minus(a, b), minus(b, a)) })
}

// minus are the elements of a not in b, sorted.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

func verdict(current *World, p Prediction, s Settings) GuardVerdict {
	v := GuardVerdict{Deletions: len(p.OperatorDeletes), Managed: len(current.Endpoints), GarbageCollected: len(p.GarbageCollected)}
	v.Holds = s.Guard.Trips(v.Deletions, v.Managed)
	switch {
	case s.Guard.Grace <= 0:
		v.Message = "the guard is disabled (--deletion-guard-grace=0): every deletion proceeds"
	case v.Deletions == 0:
		v.Message = "the operator deletes nothing: the guard has nothing to hold"
	case v.Holds:
		v.Message = fmt.Sprintf("the guard would hold: %d deletion(s) at once, of %d managed DNSEndpoints (it trips at %d or more and over %.0f%%); each waits %s, and reverting the change within that time keeps the records",
			v.Deletions, v.Managed, s.Guard.Minimum, s.Guard.Share*100, s.Guard.Grace)
	default:
		v.Message = fmt.Sprintf("the guard would not hold: %d deletion(s) of %d managed DNSEndpoints (it trips at %d or more and over %.0f%%); they proceed after %s",
			v.Deletions, v.Managed, s.Guard.Minimum, s.Guard.Share*100, s.Guard.Observe)
	}
	if v.GarbageCollected > 0 {
		v.Message += fmt.Sprintf("; %d generated object(s) go with their deleted owner (garbage collection, never held)", v.GarbageCollected)
	}
	return v
}

// listenerHosts are the listener hostnames of the Gateway API Gateways and ListenerSets, by
// "<kind> namespace/name".
func listenerHosts(gateways []*gwv1.Gateway, sets []*gwv1.ListenerSet) map[string][]string {
	out := map[string][]string{}
	for _, g := range gateways {
		out["Gateway API Gateway "+key(g)] = hostnamesOf(g.Spec.Listeners, func(l gwv1.Listener) *gwv1.Hostname { return l.Hostname })
	}
	for _, s := range sets {
		out["ListenerSet "+key(s)] = hostnamesOf(s.Spec.Listeners, func(l gwv1.ListenerEntry) *gwv1.Hostname { return l.Hostname })
	}
	return out
}

// hostnamesOf are the listeners' hostnames, sorted, each once (the HTTPS and HTTP listeners of a
// hostname are one hostname); a catch-all listener has none.
func hostnamesOf[L any](listeners []L, hostname func(L) *gwv1.Hostname) []string {
	var out []string
	for _, l := range listeners {
		if h := hostname(l); h != nil {
			out = append(out, string(*h))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func compareListeners(current *World, p Prediction) []ListenerChange {
	before := listenerHosts(current.GatewayAPIGateways, current.ListenerSets)
	after := listenerHosts(p.GatewayAPIGateways, p.ListenerSets)
	return hostChanges(before, after, func(k string, added, removed []string) ListenerChange {
		return ListenerChange{Object: k, Added: added, Removed: removed}
	})
}

// compareObjects lists the generated objects other than DNSEndpoints that the operator (or the
// garbage collector) creates, changes or deletes.
func compareObjects(current *World, p Prediction, gc map[string]bool) []ObjectChange {
	var out []ObjectChange
	add := func(kind string, before, after map[string]any) {
		for _, k := range sortedKeys(before, after) {
			b, a := before[k], after[k]
			c := ObjectChange{Kind: kind, Object: k}
			switch {
			case b == nil:
				c.Action = "create"
			case a == nil:
				c.Action = "delete"
				if gc[kind+" "+k] {
					c.By = "garbage collector"
				}
			case !equality.Semantic.DeepEqual(b, a):
				c.Action = "change"
			default:
				continue
			}
			out = append(out, c)
		}
	}
	istioBefore := specs(current.IstioGateways, func(ig *istionetworkingv1.Gateway) any { return istioHosts(ig) })
	istioAfter := map[string]any{}
	for k, hosts := range p.IstioHosts {
		istioAfter[k] = hosts
	}
	add("Istio Gateway", istioBefore, istioAfter)
	add("Gateway API Gateway", specs(current.GatewayAPIGateways, func(g *gwv1.Gateway) any { return g.Spec }),
		specs(p.GatewayAPIGateways, func(g *gwv1.Gateway) any { return g.Spec }))
	add("ListenerSet", specs(current.ListenerSets, func(s *gwv1.ListenerSet) any { return s.Spec }),
		specs(p.ListenerSets, func(s *gwv1.ListenerSet) any { return s.Spec }))
	add("HTTPRoute", specs(current.HTTPRoutes, func(r *gwv1.HTTPRoute) any { return r.Spec }),
		specs(p.HTTPRoutes, func(r *gwv1.HTTPRoute) any { return r.Spec }))
	add("ReferenceGrant", specs(current.ReferenceGrants, func(g *gwv1.ReferenceGrant) any { return g.Spec }),
		specs(p.ReferenceGrants, func(g *gwv1.ReferenceGrant) any { return g.Spec }))
	return out
}

func specs[T metav1.Object](objs []T, spec func(T) any) map[string]any {
	out := make(map[string]any, len(objs))
	for _, o := range objs {
		out[key(o)] = spec(o)
	}
	return out
}

func compareGateways(current *World, p Prediction) []GatewayChange {
	before := map[string]GatewayState{}
	for _, gw := range Live(current.Gateways) {
		before[key(gw)] = gatewayStateOf(gw.Status)
	}
	after := map[string]GatewayState{}
	for k, o := range p.Gateways {
		after[k] = gatewayStateOf(o.Status)
	}
	return changes(before, after, func(b, a GatewayState) bool {
		return b.Exists == a.Exists && b.Ready == a.Ready && b.Reason == a.Reason
	}, func(k string, b, a GatewayState) GatewayChange { return GatewayChange{Gateway: k, Before: b, After: a} })
}

// gatewayStateOf is a Gateway's Ready condition as its status has it.
func gatewayStateOf(s routingv1alpha1.GatewayStatus) GatewayState {
	out := GatewayState{Exists: true}
	if c := meta.FindStatusCondition(s.Conditions, routingv1alpha1.ConditionReady); c != nil {
		out.Ready, out.Reason, out.Message = string(c.Status), c.Reason, c.Message
	}
	return out
}
