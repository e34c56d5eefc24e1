package decide

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
)

// The multi-tenancy rules: what an application team, which may edit its own namespace (Services,
// ServiceRoutes, DNSPolicies) but not Namespaces or Gateways, can reach outside it. Each rule
// reads only what the platform team controls: Gateway specs and Namespace labels and annotations.

// IngressNamespace is the namespace whose LoadBalancer Services may serve gw: spec.ingressNamespace,
// else the Gateway's own namespace. A Service elsewhere is never the ingress of gw.
func IngressNamespace(gw *routingv1alpha1.Gateway) string {
	return cmp.Or(gw.Spec.IngressNamespace, gw.Namespace)
}

// IngressDecider returns the Gateway that decides the ingress namespace of a (controller,
// targetPostfix) pair: the oldest one not being deleted (see Oldest). The Gateways of a pair share
// one target hostname, so one namespace must serve them all; taking the oldest is deterministic
// and cannot be changed by creating a Gateway later.
func IngressDecider(pair []*routingv1alpha1.Gateway) (*routingv1alpha1.Gateway, bool) {
	return Oldest(pair)
}

// AllowsRoutesFrom reports whether gw's spec.allowedRoutes admits ServiceRoutes from namespace,
// whose labels are namespaceLabels. Unset means All (the architecture's behaviour). A selector
// that does not parse admits nothing: the Gateway as written allows no namespace by it.
func AllowsRoutesFrom(gw *routingv1alpha1.Gateway, namespace string, namespaceLabels map[string]string) bool {
	var from *routingv1alpha1.RouteNamespaces
	if gw.Spec.AllowedRoutes != nil {
		from = gw.Spec.AllowedRoutes.Namespaces
	}
	if from == nil {
		return true
	}
	switch from.From {
	case routingv1alpha1.NamespacesFromSame:
		return namespace == gw.Namespace
	case routingv1alpha1.NamespacesFromSelector:
		if from.Selector == nil {
			return false
		}
		selector, err := metav1.LabelSelectorAsSelector(from.Selector)
		return err == nil && selector.Matches(labels.Set(namespaceLabels))
	}
	return true // All, or unset
}

// notAllowedMessage says why a route may not use its Gateway. It names only what the route's
// reference names and the route's own namespace: the Gateway's selector (and with it the labels
// other namespaces carry) is the platform's business.
func notAllowedMessage(gw *routingv1alpha1.Gateway, namespace string) string {
	return fmt.Sprintf("Gateway %s/%s does not accept ServiceRoutes from namespace %s (its spec.allowedRoutes); ask the platform team for access", gw.Namespace, gw.Name, namespace)
}

// IstioHost is how the hostname of a route in routeNamespace is written into gw's Istio Gateway:
// <namespace>/<hostname> by default, so that only VirtualServices in the route's namespace bind
// it (Istio's Gateway host format), or the bare hostname when the Gateway says so.
func IstioHost(gw *routingv1alpha1.Gateway, routeNamespace, hostname string) string {
	if gw.Spec.IstioHostFormat == routingv1alpha1.IstioHostBare {
		return hostname
	}
	return routeNamespace + "/" + hostname
}

// ApplicationAllowed decides whether a route in namespace may use application. namespaceAnnotations
// are its namespace's annotations; listedBy are the namespaces whose router.io/applications
// annotation lists application (the route's own namespace may be among them). A namespace with a
// list allows only what it lists; a namespace without one allows every application that no other
// namespace reserved. The message names no other namespace: which namespace owns an application
// is not the route author's to read.
func ApplicationAllowed(namespace, application string, namespaceAnnotations map[string]string, listedBy []string) (allowed bool, message string) {
	if own, listed := naming.Applications(namespaceAnnotations); listed {
		if slices.Contains(own, application) {
			return true, ""
		}
		return false, fmt.Sprintf("application %s is not among the applications namespace %s may publish (its %s annotation); ask the platform team to add it", application, namespace, naming.AnnotationApplications)
	}
	if slices.ContainsFunc(listedBy, func(ns string) bool { return ns != namespace }) {
		return false, fmt.Sprintf("application %s is reserved for another namespace (%s annotation on Namespaces); this route publishes nothing and does not claim its hostname", application, naming.AnnotationApplications)
	}
	return true, ""
}

// HostnameWinner returns the route that owns the hostname route claims: the oldest claimant (see
// Oldest) among those allowed to use their application; nil when that is route itself or when
// none is allowed. claimants are the routes generating the same hostname, route included or not.
// A route whose application is not allowed never claims: it can neither block the owner of the
// application nor be promoted when the owner's route is deleted.
func HostnameWinner(route *routingv1alpha1.ServiceRoute, claimants []*routingv1alpha1.ServiceRoute, allowed func(*routingv1alpha1.ServiceRoute) bool) *routingv1alpha1.ServiceRoute {
	var eligible []*routingv1alpha1.ServiceRoute
	for _, c := range claimants {
		if c.UID != route.UID && allowed(c) {
			eligible = append(eligible, c)
		}
	}
	oldest, found := Oldest(append(eligible, route))
	if !found || oldest.UID == route.UID {
		return nil
	}
	return oldest
}

// winnerMessage says which route owns the hostname, naming it only when it is in the route's own
// namespace: a route elsewhere is not the route author's to read.
func winnerMessage(hostname string, route, winner *routingv1alpha1.ServiceRoute) string {
	if winner.Namespace == route.Namespace {
		return fmt.Sprintf("hostname %s is claimed by the older ServiceRoute %s in this namespace; this route publishes nothing until that one is deleted or changed", hostname, winner.Name)
	}
	return fmt.Sprintf("hostname %s is claimed by an older ServiceRoute in another namespace; this route publishes nothing until that one is deleted or changed (a platform admin finds it with kubectl get serviceroutes -A)", hostname)
}
