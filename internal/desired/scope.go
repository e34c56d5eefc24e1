package desired

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
)

// What the operator reads of the cluster besides every object of its own kinds and the
// Namespaces, defined once: the informer cache holds exactly this (controllers.CacheOptions) and
// `kubectl router plan` reads exactly this (routerplan.Load), so that both decide from the same
// objects.

// ManagedSelector selects the generated objects of every kind (DNSEndpoints, Istio Gateways, the
// Gateway API objects): those carrying the managed-by label. Objects of others are never read; a
// name taken by one is found when the create fails.
func ManagedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{naming.LabelManagedBy: naming.ManagedByValue})
}

// IngressServiceSelector selects the Services that can be an entry point's load balancer: those
// carrying the istio label (ingress.SelectService chooses among them).
func IngressServiceSelector() labels.Selector {
	hasIstioLabel, err := labels.NewRequirement(naming.IngressServiceSelector, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant requirement; cannot fail
	}
	return labels.NewSelector().Add(*hasIstioLabel)
}

// EntryPoints are the entry points whose address records the operator reconciles: the
// (controller, targetPostfix) pair of every Gateway, and every pair that still has address
// records (with no Gateway left, its records must go), each once, sorted.
func EntryPoints(gateways []*routingv1alpha1.Gateway, endpoints []*externaldnsv1alpha1.DNSEndpoint) []Ingress {
	seen := map[Ingress]bool{}
	for _, gw := range gateways {
		seen[IngressOfGateway(gw)] = true
	}
	for _, ep := range endpoints {
		if pair, ok := IngressOfLabels(ep.Labels); ok {
			seen[pair] = true
		}
	}
	out := make([]Ingress, 0, len(seen))
	for pair := range seen {
		out = append(out, pair)
	}
	slices.SortFunc(out, func(a, b Ingress) int {
		return cmp.Or(cmp.Compare(a.Controller, b.Controller), cmp.Compare(a.TargetPostfix, b.TargetPostfix))
	})
	return out
}

// OrphanedGrantOwner is the Gateway namespace/name a managed ReferenceGrant leads back to, read
// from the grant alone (GatewayOfGrant), for when no Gateway its label names exists: the operator
// then reconciles that Gateway, finds it gone and removes the grants written for it
// (core.ForgetGateway). ok is false for a grant that is not managed, that carries no LabelGateway
// (nothing finds it by its Gateway), or that names no Gateway (written before AnnotationGateway,
// with a shortened label): such a grant is left where it is.
func OrphanedGrantOwner(grant metav1.Object) (namespace, name string, ok bool) {
	if !IsManaged(grant) || grant.GetLabels()[LabelGateway] == "" {
		return "", "", false
	}
	return GatewayOfGrant(grant)
}
