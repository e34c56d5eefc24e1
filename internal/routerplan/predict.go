package routerplan

import (
	"context"
	"maps"
	"slices"
	"strings"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/core"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/naming"
)

// Settings are the operator's flags that change its decisions.
type Settings struct {
	// HostBudget is --istio-gateway-max-bytes (0: decide.DefaultIstioGatewayBudget).
	HostBudget int
	// Guard is the mass-deletion guard's settings (--deletion-guard-*).
	Guard guard.Settings
}

// DefaultSettings are the operator's defaults.
var DefaultSettings = Settings{HostBudget: decide.DefaultIstioGatewayBudget, Guard: guard.DefaultSettings}

// Prediction is the state the operator converges to from a World.
type Prediction struct {
	// Endpoints are every managed DNSEndpoint, sorted by namespace/name.
	Endpoints []*externaldnsv1alpha1.DNSEndpoint
	// IstioHosts are the hosts of each generated Istio Gateway by namespace/name; a Gateway with
	// no Istio Gateway is absent.
	IstioHosts map[string][]string
	// The Gateway API objects the operator manages afterwards (backend GatewayAPI), each sorted
	// by namespace/name.
	GatewayAPIGateways []*gwv1.Gateway
	ListenerSets       []*gwv1.ListenerSet
	HTTPRoutes         []*gwv1.HTTPRoute
	ReferenceGrants    []*gwv1.ReferenceGrant
	// Routes are the routes' outcomes and statuses, by namespace/name.
	Routes map[string]RouteOutcome
	// Gateways are the Gateways' outcomes and statuses, by namespace/name.
	Gateways map[string]GatewayOutcome
	// OperatorDeletes are the deletions the operator itself asks for (they pass the guard), by
	// kind and namespace/name; GarbageCollected are the generated objects the garbage collector
	// removes with their deleted owner (not guarded).
	OperatorDeletes, GarbageCollected []string
}

// RouteOutcome is what a route's reconcile decides and leaves in its status.
type RouteOutcome struct {
	decide.Outcome
	// Synced says the route's records follow the decision (false: an input is missing and the
	// records are kept as they are).
	Synced bool
	// Status is the route's status after its reconcile (zones, published, conditions).
	Status routingv1alpha1.ServiceRouteStatus
}

// GatewayOutcome is what a Gateway's reconcile decides and leaves in its status.
type GatewayOutcome struct {
	decide.Outcome
	// Status is the Gateway's status after its reconcile (target, address, host limit, zones,
	// conditions): core.Gateway's, ended by decide.SetOutcome.
	Status routingv1alpha1.GatewayStatus
}

// hostLimitRounds bounds the rounds of route and Gateway reconciles: a Gateway's host cutoff
// feeds its routes' decisions and their statuses feed the cutoff. The operator converges in
// two rounds (the left-off routes stay candidates, so the cutoff does not move when their records
// go); more are a safety margin.
const hostLimitRounds = 5

// Predict runs the operator's reconciles over w until they settle, as the operator would, each
// the one internal/core runs for the operator: each ServiceRoute's (core.Route), each Gateway's
// (core.Gateway) and each entry point's (core.Addresses), with their writes recorded in the
// prediction. Every status predicted is the one the core leaves, ended by decide.SetOutcome. w is
// not changed.
func Predict(w *World, s Settings) Prediction {
	w = w.DeepCopy()
	if s.HostBudget == 0 {
		s.HostBudget = decide.DefaultIstioGatewayBudget
	}
	out := Prediction{IstioHosts: map[string][]string{}, Routes: map[string]RouteOutcome{}, Gateways: map[string]GatewayOutcome{}}
	routes := Live(w.Routes)
	gateways := Live(w.Gateways)
	endpoints := byKeyOf(w.Endpoints)
	out.GarbageCollected = collectGone(w, "DNSEndpoint", endpoints, "ServiceRoute", routes)
	api := newGatewayAPIObjects(w)
	out.GarbageCollected = append(out.GarbageCollected, api.collect(w, gateways)...)
	istio := byKeyOf(w.IstioGateways)
	out.GarbageCollected = append(out.GarbageCollected, collectGone(w, "Istio Gateway", istio, "Gateway", gateways)...)
	ix := newIndex(w, routes, gateways, endpoints)
	rd := worldReads{w: w, ix: ix, gateways: gateways, endpoints: endpoints, api: api, istio: istio}
	out.OperatorDeletes = append(out.OperatorDeletes, forget(rd, gateways)...)
	var routeDeletes []string
	for round := 0; round < hostLimitRounds; round++ {
		routeDeletes = nil
		next := maps.Clone(endpoints)
		for _, r := range routes {
			o, deletes := predictRoute(w, ix, r, next)
			out.Routes[key(r)] = o
			routeDeletes = append(routeDeletes, deletes...)
		}
		// The routes' statuses as their reconciles leave them, for the Gateways' host lists.
		for _, r := range routes {
			r.Status = out.Routes[key(r)].Status
		}
		// The Gateways' reconciles over them, their writes discarded (the last ones are made
		// below): the statuses they leave, whose cutoffs the next round's routes read. A Gateway
		// whose ClusterIdentity is missing keeps its status (decide.GatewayPlan.Keep).
		moved := false
		scratch := rd.scratch(next)
		for _, gw := range gateways {
			before := gw.Status.HostLimit
			var discarded []string
			gw.Status = reconcileGateway(scratch, gw, s.HostBudget, &discarded).Status
			moved = moved || !equality.Semantic.DeepEqual(before, gw.Status.HostLimit)
		}
		if !moved || round == hostLimitRounds-1 {
			endpoints = next
			break
		}
	}
	out.OperatorDeletes = append(out.OperatorDeletes, routeDeletes...)
	rd.endpoints = endpoints
	// The entry points' address records, then the Gateways, whose statuses report those records
	// per zone (the operator's Gateway reconcile follows the records' changes).
	for _, pair := range desired.EntryPoints(gateways, slices.Collect(maps.Values(endpoints))) {
		out.OperatorDeletes = append(out.OperatorDeletes, predictAddresses(rd, pair, endpoints)...)
	}
	for _, gw := range gateways {
		o := reconcileGateway(rd, gw, s.HostBudget, &out.OperatorDeletes)
		out.Gateways[key(gw)] = o
	}
	api.into(&out)
	for k, ig := range istio {
		out.IstioHosts[k] = istioHosts(ig)
	}
	out.Endpoints = slices.SortedFunc(maps.Values(endpoints), byKey)
	slices.Sort(out.OperatorDeletes)
	slices.Sort(out.GarbageCollected)
	return out
}

// predictRoute is the ServiceRoute reconcile, core.Route as the operator runs it, over the world
// (worldReads) with its writes recorded: the route's DNSEndpoints are read from the index and
// written to next. It returns the route's outcome and the deletions the write step asks for.
func predictRoute(w *World, ix *index, r *routingv1alpha1.ServiceRoute, next map[string]*externaldnsv1alpha1.DNSEndpoint) (RouteOutcome, []string) {
	route := r.DeepCopy()
	var deletes []string
	res, err := core.Route(context.Background(), worldReads{w: w, ix: ix}, record(next, &deletes), route)
	decide.SetOutcome(route, res.Outcome, err) // the world's reads and writes do not fail
	return RouteOutcome{Outcome: res.Outcome, Synced: res.Synced, Status: route.Status}, deletes
}

// record is preview's core.Apply: the writes apply.Diff decides, done in next as if each
// succeeded, the deletions recorded.
func record[T client.Object](next map[string]T, deletes *[]string) core.Apply[T] {
	return func(_ context.Context, k apply.Kind[T], desired, current []T, _ core.Notice[T]) (core.Written[T], error) {
		ch := apply.Diff(k, desired, current)
		return core.Written[T]{Applied: writeChanges(k.Name, ch, next, deletes), Conflicts: ch.Conflicts}, nil
	}
}

// writeChanges applies a diff to next as the write step would when every write succeeds, records
// the deletions (as "<kind> namespace/name"), and returns the objects that exist as desired
// afterwards (the write step's Applied). A deletion the mass-deletion guard holds happens later:
// the prediction is the state the operator converges to.
func writeChanges[T client.Object](kind string, ch apply.Changes[T], next map[string]T, deletes *[]string) []T {
	applied := slices.Clone(ch.Unchanged)
	for _, obj := range ch.Delete {
		delete(next, key(obj))
		*deletes = append(*deletes, kind+" "+key(obj))
	}
	for _, obj := range append(slices.Clone(ch.Update), ch.Create...) {
		next[key(obj)] = obj
		applied = append(applied, obj)
	}
	return applied
}

// predictAddresses is the IngressDNS reconcile of one (controller, targetPostfix) pair,
// core.Addresses over the world: the address DNSEndpoints read from and written to endpoints.
func predictAddresses(rd worldReads, pair desired.Ingress, endpoints map[string]*externaldnsv1alpha1.DNSEndpoint) []string {
	var deletes []string
	_, _ = core.Addresses(context.Background(), rd, record(endpoints, &deletes), pair) // the world's reads and writes do not fail
	return deletes
}

// InNamespace are the objects in namespace.
func InNamespace[T metav1.Object](objs []T, namespace string) []T {
	var out []T
	for _, o := range objs {
		if o.GetNamespace() == namespace {
			out = append(out, o)
		}
	}
	return out
}

// Live are the objects not being deleted (the reconcilers skip the others), sorted.
func Live[T metav1.Object](objs []T) []T {
	var out []T
	for _, o := range objs {
		if o.GetDeletionTimestamp() == nil {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, byKey)
	return out
}

// ownerGone reports whether obj is controlled by an owner of kind that no longer exists among
// owners (same namespace, name and UID): the garbage collector removes it.
func ownerGone[T metav1.Object](obj metav1.Object, kind string, owners []T) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != kind || ref.APIVersion != routingv1alpha1.GroupVersion.String() {
		return false
	}
	for _, o := range owners {
		if o.GetNamespace() == obj.GetNamespace() && o.GetName() == ref.Name && (o.GetUID() == ref.UID || isPreviewUID(o.GetUID())) {
			return false
		}
	}
	return true
}

// namespaceGone reports whether obj's namespace is not in the world (deleted by the manifests):
// the namespace controller deletes everything in it. A world without namespaces knows none.
func namespaceGone(w *World, obj metav1.Object) bool {
	_, exists := w.Namespaces[obj.GetNamespace()]
	return len(w.Namespaces) > 0 && !exists
}

func istioHosts(ig *istionetworkingv1.Gateway) []string {
	var hosts []string
	for _, s := range ig.Spec.Servers {
		hosts = append(hosts, s.Hosts...)
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// byKey orders objects by namespace/name.
func byKey[T metav1.Object](a, b T) int { return strings.Compare(key(a), key(b)) }

// index holds what the reconcilers find through the cache's indexes (controllers/indexes.go and
// the helpers of controllers/inputs.go), built once per prediction: the policy in force per
// namespace, the namespaces listing each application, the routes claiming each hostname, the
// Gateways, each Gateway's routes and each route's DNSEndpoints.
type index struct {
	policies         map[string]*routingv1alpha1.DNSPolicy
	listedBy         map[string][]string
	letter           string
	claims           map[string][]*routingv1alpha1.ServiceRoute
	gateways         map[types.NamespacedName]*routingv1alpha1.Gateway
	routesByGateway  map[types.NamespacedName][]*routingv1alpha1.ServiceRoute
	endpointsByRoute map[string][]*externaldnsv1alpha1.DNSEndpoint
}

// PoliciesInForce maps each namespace to the DNSPolicy in force there: its oldest.
func PoliciesInForce(policies []*routingv1alpha1.DNSPolicy) map[string]*routingv1alpha1.DNSPolicy {
	byNamespace := map[string][]*routingv1alpha1.DNSPolicy{}
	for _, p := range policies {
		byNamespace[p.Namespace] = append(byNamespace[p.Namespace], p)
	}
	out := make(map[string]*routingv1alpha1.DNSPolicy, len(byNamespace))
	for ns, inNamespace := range byNamespace {
		if oldest, ok := decide.Oldest(inNamespace); ok {
			out[ns] = oldest
		}
	}
	return out
}

func newIndex(w *World, routes []*routingv1alpha1.ServiceRoute, gateways []*routingv1alpha1.Gateway, endpoints map[string]*externaldnsv1alpha1.DNSEndpoint) *index {
	ix := &index{policies: PoliciesInForce(w.Policies), listedBy: map[string][]string{}, claims: map[string][]*routingv1alpha1.ServiceRoute{},
		gateways: map[types.NamespacedName]*routingv1alpha1.Gateway{}, routesByGateway: map[types.NamespacedName][]*routingv1alpha1.ServiceRoute{},
		endpointsByRoute: map[string][]*externaldnsv1alpha1.DNSEndpoint{}}
	for _, name := range slices.Sorted(maps.Keys(w.Namespaces)) {
		apps, _ := naming.Applications(w.Namespaces[name].Annotations)
		for _, app := range apps {
			ix.listedBy[app] = append(ix.listedBy[app], name)
		}
	}
	if w.Identity != nil {
		ix.letter = w.Identity.Spec.EnvironmentLetter
		for _, r := range routes {
			label := ix.sourceLabel(r)
			ix.claims[label] = append(ix.claims[label], r)
		}
	}
	for _, gw := range gateways {
		ix.gateways[gatewayKey(gw)] = gw
	}
	for _, r := range routes {
		ref := decide.GatewayRef(r)
		ix.routesByGateway[ref] = append(ix.routesByGateway[ref], r)
	}
	for _, ep := range endpoints {
		if route := ep.Labels[naming.LabelServiceRoute]; route != "" {
			k := ep.Namespace + "/" + route
			ix.endpointsByRoute[k] = append(ix.endpointsByRoute[k], ep)
		}
	}
	for _, eps := range ix.endpointsByRoute {
		slices.SortFunc(eps, byKey)
	}
	return ix
}

// sourceLabel is the first label of a route's hostname: routes with the same one claim the same
// hostname (the controller's hostname index finds exactly those).
func (ix *index) sourceLabel(r *routingv1alpha1.ServiceRoute) string {
	return naming.SourceLabel(r.Spec.ServiceName, ix.letter, r.Spec.Environment, r.Spec.Application)
}

func gatewayKey(gw *routingv1alpha1.Gateway) types.NamespacedName {
	return types.NamespacedName{Namespace: gw.Namespace, Name: gw.Name}
}
