package decide

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
)

// DefaultIstioGatewayBudget is the default byte budget of one generated Istio Gateway: well under
// etcd's default request limit (1.5 MiB), which refuses a larger object outright.
const DefaultIstioGatewayBudget = 1_000_000

// istioGatewayOverhead is the estimated size of an Istio Gateway without hosts: metadata the
// operator writes and the API server adds (uid, resourceVersion, timestamps, owner reference,
// managed fields), the selector, the port and the TLS settings. Generous on purpose.
const istioGatewayOverhead = 4096

// HostCandidate is a route whose host belongs on its Gateway's Istio Gateway when there is room.
type HostCandidate struct {
	Namespace, Name string
	Created         metav1.Time
	Hostname        string
}

// HostCandidateOf returns the route as a candidate for its Gateway's hosts: a route that publishes
// (see Publishes), or one left off for lack of room that would publish otherwise. Keeping the
// left-off routes among the candidates keeps the cutoff where it is when their records go, so
// the admitted set does not oscillate.
func HostCandidateOf(r *routingv1alpha1.ServiceRoute) (HostCandidate, bool) {
	if !Publishes(r) && !waitsForRoom(r) {
		return HostCandidate{}, false
	}
	return HostCandidate{Namespace: r.Namespace, Name: r.Name, Created: r.CreationTimestamp, Hostname: r.Status.Hostname}, true
}

func waitsForRoom(r *routingv1alpha1.ServiceRoute) bool {
	if !r.DeletionTimestamp.IsZero() || r.Status.Hostname == "" {
		return false
	}
	ready := meta.FindStatusCondition(r.Status.Conditions, routingv1alpha1.ConditionReady)
	return ready != nil && ready.Reason == routingv1alpha1.ReasonGatewayHostLimit
}

// GatewayHosts decides which hosts gw's Istio Gateway (or Gateway API listeners) list, from the
// ServiceRoutes referencing it: the candidates (HostCandidateOf), written as IstioHost for the
// classic backend (the Gateway API backend keeps the bare hostname and its namespace apart),
// admitted oldest first within gw's share of budget (IstioHostBudget, AdmitHosts): the same
// admission for both backends, so that switching keeps the same routes published. routes may be
// the cache's own objects: only strings and times are copied out of them.
func GatewayHosts(gw *routingv1alpha1.Gateway, routes []*routingv1alpha1.ServiceRoute, budget int) HostAdmission {
	useAPI := UsesGatewayAPI(gw)
	candidates := make([]HostCandidate, 0, len(routes))
	for _, route := range routes {
		if c, ok := HostCandidateOf(route); ok {
			if !useAPI {
				c.Hostname = IstioHost(gw, c.Namespace, c.Hostname)
			}
			candidates = append(candidates, c)
		}
	}
	return AdmitHosts(candidates, IstioHostBudget(gw, budget))
}

// HostInputChanged reports whether a route change can change what its Gateway writes (the hosts
// of the Istio Gateway, the status counts and the cutoff): candidacy, hostname, creation time or
// the Gateway referenced. old or new is nil for a create or a delete. Every other change (a
// condition message, an endpoint name) leaves the Gateway alone.
func HostInputChanged(old, new *routingv1alpha1.ServiceRoute) bool {
	if old == nil || new == nil {
		r := cmp.Or(old, new)
		_, ok := HostCandidateOf(r)
		return ok
	}
	if GatewayRef(old) != GatewayRef(new) {
		return true
	}
	oc, ook := HostCandidateOf(old)
	nc, nok := HostCandidateOf(new)
	return ook != nok || oc.Hostname != nc.Hostname || !oc.Created.Equal(&nc.Created)
}

// IstioHostLists is how many servers of a Gateway's Istio Gateway list every host: the HTTPS
// server when it has a TLS Secret, and the plain HTTP one when it serves or redirects. Each list
// takes its share of the byte budget (IstioHostBudget). 0: the Gateway serves nothing.
func IstioHostLists(gw *routingv1alpha1.Gateway) int {
	n := 0
	if gw.Spec.CredentialName != "" {
		n++
	}
	switch gw.Spec.PlainHTTP {
	case routingv1alpha1.PlainHTTPServe:
		n++
	case routingv1alpha1.PlainHTTPRedirectToHTTPS:
		if gw.Spec.CredentialName != "" { // admission requires it; without it nobody is redirected anywhere
			n++
		}
	}
	return n
}

// IstioHostBudget is the byte budget of one host list of gw's Istio Gateway: the budget of the
// whole object shared by the servers listing every host (budget 0 or less: no limit).
func IstioHostBudget(gw *routingv1alpha1.Gateway, budget int) int {
	return budget / max(IstioHostLists(gw), 1)
}

// HostAdmission is which candidates a Gateway's Istio Gateway has room for.
type HostAdmission struct {
	// Hosts are the hostnames of the admitted routes (each once).
	Hosts []string
	// Limit is nil when every candidate fits; otherwise it says where they were cut off.
	Limit *routingv1alpha1.GatewayHostLimit
	// Bytes is the estimated stored size of the Istio Gateway listing Hosts.
	Bytes int
	// RouteHosts are the admitted candidates' hostnames with their namespaces, in Hosts' order
	// (the Gateway API backend's listeners).
	RouteHosts []desired.RouteHost
}

// hostCost is the estimated size a host adds to the Istio Gateway: the quoted string and its
// comma, plus room for the namespace-scoped form "namespace/hostname".
func hostCost(c HostCandidate) int { return len(c.Namespace) + 1 + len(c.Hostname) + 3 }

// EstimatedIstioGatewayBytes is the estimated stored size of an Istio Gateway listing the hosts of
// the candidates: what AdmitHosts compares with the budget.
func EstimatedIstioGatewayBytes(candidates ...HostCandidate) int {
	n := istioGatewayOverhead
	for _, c := range candidates {
		n += hostCost(c)
	}
	return n
}

// AdmitHosts decides which candidates fit on one Istio Gateway of budget bytes: the oldest first
// (creation time, then namespace/name, as Oldest), as long as the estimated size stays within the
// budget. The first that does not fit and everything after it are left off, even a younger
// route whose shorter host would still fit: the cutoff is one point in a fixed order, so every
// route can tell from it alone whether it is left off. A budget of 0 or less admits everything.
func AdmitHosts(candidates []HostCandidate, budget int) HostAdmission {
	sorted := slices.Clone(candidates)
	slices.SortFunc(sorted, compareCandidates)
	var out HostAdmission
	seen := make(map[string]bool, len(sorted))
	size := istioGatewayOverhead
	for i, c := range sorted {
		if seen[c.Hostname] {
			continue // a host is listed once, whatever the number of routes naming it
		}
		if budget > 0 && size+hostCost(c) > budget {
			out.Limit = &routingv1alpha1.GatewayHostLimit{BudgetBytes: int64(budget), Admitted: int32(i), LeftOff: int32(len(sorted) - i),
				FirstLeftOff: c.Namespace + "/" + c.Name, FirstLeftOffCreated: c.Created}
			break
		}
		seen[c.Hostname] = true
		size += hostCost(c)
		out.Hosts = append(out.Hosts, c.Hostname)
		out.RouteHosts = append(out.RouteHosts, desired.RouteHost{Namespace: c.Namespace, Hostname: c.Hostname})
	}
	out.Bytes = size
	return out
}

func compareCandidates(a, b HostCandidate) int {
	if !a.Created.Equal(&b.Created) {
		if a.Created.Before(&b.Created) {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// LeftOff reports whether limit leaves route off its Gateway's Istio Gateway: the route is the
// first left off or comes after it in the order. A nil limit leaves nothing off.
func LeftOff(limit *routingv1alpha1.GatewayHostLimit, route metav1.Object) bool {
	if limit == nil {
		return false
	}
	ns, name, _ := strings.Cut(limit.FirstLeftOff, "/")
	r := HostCandidate{Namespace: route.GetNamespace(), Name: route.GetName(), Created: route.GetCreationTimestamp()}
	return compareCandidates(r, HostCandidate{Namespace: ns, Name: name, Created: limit.FirstLeftOffCreated}) >= 0
}

// hostLimitMessage is the Ready message of a route left off.
func hostLimitMessage(gw *routingv1alpha1.Gateway) string {
	l := gw.Status.HostLimit
	return fmt.Sprintf("the host budget of Gateway %s/%s is full (%d bytes, %s): the hosts of its %d oldest routes fill it, and this route is one of the %d younger ones left off; it publishes no DNS record until routes are removed from the Gateway or moved to another Gateway",
		gw.Namespace, gw.Name, l.BudgetBytes, budgetHolder(gw), l.Admitted, l.LeftOff)
}

// HostLimitCondition is the Gateway's HostLimit condition for a limit; nil (remove it) when every
// route fits.
func HostLimitCondition(gw *routingv1alpha1.Gateway, limit *routingv1alpha1.GatewayHostLimit) *metav1.Condition {
	if limit == nil {
		return nil
	}
	return &metav1.Condition{Type: routingv1alpha1.ConditionHostLimit, Status: metav1.ConditionTrue, Reason: routingv1alpha1.ReasonGatewayHostLimit,
		ObservedGeneration: gw.Generation,
		Message: fmt.Sprintf("the host budget is full (%d bytes, %s): %d route(s) admitted, %d left off from %s (created %s) on; split the routes across several Gateways",
			limit.BudgetBytes, budgetHolder(gw), limit.Admitted, limit.LeftOff, limit.FirstLeftOff, limit.FirstLeftOffCreated.UTC().Format("2006-01-02T15:04:05Z"))}
}

// budgetHolder names what the host budget measures for the backend in use. The Gateway API
// listeners are counted as an Istio Gateway's hosts would be, so that both backends admit the same
// routes and switching backends changes no route's records.
func budgetHolder(gw *routingv1alpha1.Gateway) string {
	if UsesGatewayAPI(gw) {
		return "counted as for an Istio Gateway: both backends admit the same routes"
	}
	return "the size of the one Istio Gateway listing every host"
}
