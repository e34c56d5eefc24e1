package decide

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
	"github.com/service-router/service-router-operator/internal/naming"
)

// WithGatewayAPI completes the inputs of a Gateway with backend GatewayAPI from what its reconciler
// (and `kubectl router plan`) read besides the routes: sets are the managed ListenerSets of the
// Gateway's namespace, of which those the Gateway owns are kept (a hostname stays where it is);
// current is the managed Gateway API Gateway of its name, if any, whose status.addresses is the
// load balancer (GatewayAPIAddresses). With the API missing nothing is read.
func WithGatewayAPI(in GatewayInputs, sets []*gwv1.ListenerSet, current []*gwv1.Gateway) GatewayInputs {
	if in.GatewayAPIMissing {
		return in
	}
	gw := in.Gateway
	kind := desired.ListenerSetKind(gw.Name)
	for _, s := range sets {
		if kind.Ownership(s) == apply.Owned {
			in.ListenerSets = append(in.ListenerSets, s)
		}
	}
	if generated := ownedGatewayAPIGateway(gw, current); generated != nil {
		addrs := ingress.GatewayAddresses(generated.Status.Addresses)
		in.GatewayAPIGateway, in.Service = generated, &addrs
		in.ServiceName = "Gateway API Gateway " + gw.Namespace + "/" + gw.Name
	}
	return in
}

// GatewayAPIAddresses reads the addresses of the Gateway API Gateway generated for gw (the
// GatewayAPI backend's load balancer) from current, the managed Gateway API Gateway of gw's name
// if any: nil when it does not exist yet or is not the operator's.
func GatewayAPIAddresses(gw *routingv1alpha1.Gateway, current []*gwv1.Gateway) *ingress.Addresses {
	generated := ownedGatewayAPIGateway(gw, current)
	if generated == nil {
		return nil
	}
	a := ingress.GatewayAddresses(generated.Status.Addresses)
	return &a
}

// ownedGatewayAPIGateway is the Gateway API Gateway generated for gw in current (none, or the
// managed one of gw's name): nil when it does not exist yet or is not the operator's.
func ownedGatewayAPIGateway(gw *routingv1alpha1.Gateway, current []*gwv1.Gateway) *gwv1.Gateway {
	if len(current) == 0 || desired.GatewayAPIGatewayKind(gw.Name).Ownership(current[0]) != apply.Owned {
		return nil
	}
	return current[0]
}

// maxListenerConflicts is how many conflicts a Gateway's status lists (the CRD's maxItems).
const maxListenerConflicts = 1024

// ListenerConflicts reads, from the status the Gateway API implementation wrote on the generated
// ListenerSets, the route hostnames whose listeners it reports as conflicted (another listener on
// the Gateway API Gateway holds the same hostname, port and protocol). Only conditions about the
// ListenerSet's current generation count: an older one may describe listeners that have moved.
func ListenerConflicts(sets []*gwv1.ListenerSet) []routingv1alpha1.ListenerConflict {
	seen := map[[2]string]bool{}
	var out []routingv1alpha1.ListenerConflict
	for _, s := range sets {
		hostnames := map[gwv1.SectionName]string{}
		for _, l := range s.Spec.Listeners {
			if l.Hostname != nil {
				hostnames[l.Name] = string(*l.Hostname)
			}
		}
		ns := s.Labels[naming.LabelSourceNamespace]
		for _, ls := range s.Status.Listeners {
			c := meta.FindStatusCondition(ls.Conditions, string(gwv1.ListenerEntryConditionConflicted))
			host, ok := hostnames[ls.Name]
			if c == nil || c.Status != "True" || !ok || ns == "" || (c.ObservedGeneration != 0 && c.ObservedGeneration != s.Generation) {
				continue
			}
			if key := [2]string{ns, host}; !seen[key] { // the HTTPS and HTTP listeners of one hostname
				seen[key] = true
				out = append(out, routingv1alpha1.ListenerConflict{Namespace: ns, Hostname: host, ListenerSet: s.Name, Reason: c.Reason})
			}
		}
	}
	slices.SortFunc(out, func(a, b routingv1alpha1.ListenerConflict) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Hostname, b.Hostname))
	})
	if len(out) > maxListenerConflicts {
		out = out[:maxListenerConflicts]
	}
	return out
}

// ListenerProblem is a listener of the generated Gateway API Gateway or of one of its ListenerSets
// that the implementation reports as not Accepted or with references it cannot resolve (the TLS
// Secret of credentialName missing or not a certificate, a ReferenceGrant missing).
type ListenerProblem struct {
	// Object is "Gateway <name>" or "ListenerSet <name>"; Listener the listener's name.
	Object, Listener string
	// Condition is the implementation's condition (Accepted or ResolvedRefs, status False).
	Condition metav1.Condition
}

// ListenerProblems reads the listener conditions the implementation wrote on the generated
// Gateway API Gateway (nil: none yet) and ListenerSets: each listener whose Accepted or
// ResolvedRefs is False about the object's current generation. Conflicted listeners are
// ListenerConflicts' (each route says so).
func ListenerProblems(gateway *gwv1.Gateway, sets []*gwv1.ListenerSet) []ListenerProblem {
	var out []ListenerProblem
	add := func(object string, generation int64, listener gwv1.SectionName, conditions []metav1.Condition) {
		for _, typ := range []string{string(gwv1.ListenerConditionAccepted), string(gwv1.ListenerConditionResolvedRefs)} {
			c := meta.FindStatusCondition(conditions, typ)
			if c != nil && c.Status == metav1.ConditionFalse && (c.ObservedGeneration == 0 || c.ObservedGeneration == generation) {
				out = append(out, ListenerProblem{Object: object, Listener: string(listener), Condition: *c})
				return
			}
		}
	}
	if gateway != nil {
		for _, l := range gateway.Status.Listeners {
			add("Gateway "+gateway.Name, gateway.Generation, l.Name, l.Conditions)
		}
	}
	for _, s := range sets {
		for _, l := range s.Status.Listeners {
			add("ListenerSet "+s.Name, s.Generation, l.Name, l.Conditions)
		}
	}
	return out
}

// maxListenerProblems is how many problems the ListenerProblems condition's message lists.
const maxListenerProblems = 5

// ListenerProblemsCondition is the Gateway's ListenerProblems condition (backend GatewayAPI): the
// reason the implementation gave for the first problem, the message each problem with the
// implementation's own words; nil (remove it) when there is none.
func ListenerProblemsCondition(gw *routingv1alpha1.Gateway, problems []ListenerProblem) *metav1.Condition {
	if len(problems) == 0 {
		return nil
	}
	var parts []string
	for _, p := range problems[:min(len(problems), maxListenerProblems)] {
		parts = append(parts, fmt.Sprintf("%s/%s listener %s: %s=False %s: %s", gw.Namespace, p.Object, p.Listener, p.Condition.Type, p.Condition.Reason, p.Condition.Message))
	}
	if more := len(problems) - maxListenerProblems; more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return &metav1.Condition{Type: routingv1alpha1.ConditionListenerProblems, Status: metav1.ConditionTrue, Reason: problems[0].Condition.Reason,
		ObservedGeneration: gw.Generation,
		Message:            "the Gateway API implementation does not serve every generated listener: " + strings.Join(parts, "; ")}
}

// ListenerConflictOf returns the conflict a Gateway's status lists for a route's hostname, if any.
func ListenerConflictOf(gw *routingv1alpha1.Gateway, namespace, hostname string) (routingv1alpha1.ListenerConflict, bool) {
	for _, c := range gw.Status.ListenerConflicts {
		if c.Namespace == namespace && c.Hostname == hostname {
			return c, true
		}
	}
	return routingv1alpha1.ListenerConflict{}, false
}

// listenerConflictMessage is the Ready message of a route whose listener is conflicted. It names
// only the Gateway and the generated ListenerSet, both in the namespace the route references.
func listenerConflictMessage(gw *routingv1alpha1.Gateway, c routingv1alpha1.ListenerConflict) string {
	return fmt.Sprintf("the Gateway API implementation reports the listener of %s on ListenerSet %s/%s as conflicted (%s): another listener on Gateway %s/%s holds this hostname, so HTTPRoutes do not attach to it; the DNS records are kept; ask the platform team to remove the other listener",
		c.Hostname, gw.Namespace, c.ListenerSet, c.Reason, gw.Namespace, gw.Name)
}
