package decide

import (
	"cmp"
	"slices"

	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
)

// FailoverNames are the names this cluster publishes into the zone of an ExternalDNS controller,
// one per record of its routes' DNSEndpoints labelled for that controller, split by the DNSPolicy
// in force in their namespace (policies, by namespace): standIn those whose policy lists stand-ins,
// with its failback and the DNSEndpoint's mark of a takeover (naming.AnnotationTakenFrom); fixed
// those whose namespace has no policy, or one that lists none: they never move. The failover loop
// decides over standIn (failover.Takeovers and the rest); `kubectl router plan --region-lost` over
// the same names, and reports fixed as staying where they are.
//
// A DNSEndpoint being deleted still counts: ExternalDNS publishes it until it is gone. A policy's
// intermediate name (naming.IntermediateName), which every route of the policy on one entry point
// publishes beside its own name, is one name, taken from the DNSEndpoint first in name order: its
// pass is one write, marked on that one DNSEndpoint.
func FailoverNames(controller string, endpoints []*externaldnsv1alpha1.DNSEndpoint, policies map[string]*routingv1alpha1.DNSPolicy) (standIn, fixed []failover.Name) {
	endpoints = slices.Clone(endpoints)
	slices.SortFunc(endpoints, func(a, b *externaldnsv1alpha1.DNSEndpoint) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	intermediates := map[string]bool{}
	for _, ep := range endpoints {
		if _, route := ep.Labels[naming.LabelServiceRoute]; !route || ep.Labels[naming.LabelController] != controller {
			continue
		}
		n := failover.Name{Controller: controller, Namespace: ep.Namespace, Endpoint: ep.Name, TakenFrom: ep.Annotations[naming.AnnotationTakenFrom]}
		if p := policies[ep.Namespace]; p != nil && p.Spec.Failover != nil {
			n.StandIns, n.FailBack = p.Spec.Failover.StandIns, p.Spec.Failover.Failback == routingv1alpha1.FailbackAutomatic
		}
		for _, rec := range ep.Spec.Endpoints {
			n.Hostname = rec.DNSName
			if naming.IsIntermediate(rec.DNSName) {
				key := failover.Canonical(rec.DNSName)
				if intermediates[key] {
					continue
				}
				intermediates[key] = true
			}
			if len(n.StandIns) == 0 {
				fixed = append(fixed, n)
			} else {
				standIn = append(standIn, n)
			}
		}
	}
	return standIn, fixed
}
