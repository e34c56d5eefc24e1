package failoverloop

import (
	"context"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
)

// wakeRoutes sends to be reconciled again every route of a failover policy whose DNSEndpoint in a
// zone read whole since the routes' forms were last checked (changed, by controller) is not in the
// form the view now says (decide.RouteForm): nothing else wakes a route when only the zone changed
// (its intermediate created, or taken by this cluster).
func (f *Loop) wakeRoutes(ctx context.Context, identity *clusterv1alpha1.ClusterIdentity, zones []failoverZone, view failover.FormView, changed []string) {
	if f.routeChanges == nil || f.reader == nil {
		return
	}
	failoverPolicy := map[string]bool{}
	for _, z := range zones {
		if !slices.Contains(changed, z.Controller) {
			continue
		}
		list := &externaldnsv1alpha1.DNSEndpointList{}
		if err := f.reader.List(ctx, list, client.MatchingLabels{naming.LabelController: z.Controller}, client.HasLabels{naming.LabelServiceRoute},
			client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for i := range list.Items {
			ep := &list.Items[i]
			has, seen := failoverPolicy[ep.Namespace]
			if !seen {
				p, err := f.cluster.PolicyInForce(ctx, ep.Namespace)
				if err != nil {
					return
				}
				has = p != nil && p.Spec.Failover != nil
				failoverPolicy[ep.Namespace] = has
			}
			if !has || !stale(ep, view, identity.Spec.Cluster, identity.Spec.Region, identity.Spec.Domain, z) {
				continue
			}
			select {
			case f.routeChanges <- event.GenericEvent{Object: &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ep.Namespace, Name: ep.Labels[naming.LabelServiceRoute]}}}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// stale says a route's DNSEndpoint in zone z is not in the form the view says its name should
// take. Only a name already under a failover policy can be: one through the intermediate or
// beside it, or one whose route's reconcile would put it there (its policy lists stand-ins);
// the route's own reconcile decides whether it is, this only wakes it.
func stale(ep *externaldnsv1alpha1.DNSEndpoint, view failover.FormView, cluster, own, domain string, z failoverZone) bool {
	if len(ep.Spec.Endpoints) == 0 || ep.Spec.Endpoints[0] == nil || len(ep.Spec.Endpoints[0].Targets) != 1 {
		return false
	}
	hostname := ep.Spec.Endpoints[0].DNSName
	intermediate := intermediateOf(ep, cluster, own, domain, z.Region)
	if intermediate == "" {
		return false
	}
	current := decide.FormOf(ep, hostname, intermediate)
	v, known := view.Form(z.Controller, hostname, intermediate)
	return decide.RouteForm(ep, v, known, hostname, intermediate) != current
}

// intermediateOf is the intermediate name of a route's DNSEndpoint in the zone of region: the one
// it publishes, or the one its target hostname (this cluster's gateway target,
// naming.TargetHostname) makes; "" when neither says.
func intermediateOf(ep *externaldnsv1alpha1.DNSEndpoint, cluster, own, domain, region string) string {
	for _, r := range ep.Spec.Endpoints[1:] {
		if r != nil && naming.IsIntermediate(r.DNSName) {
			return r.DNSName
		}
	}
	target := strings.TrimSuffix(ep.Spec.Endpoints[0].Targets[0], ".")
	if naming.IsIntermediate(target) {
		return target
	}
	postfix, ok := strings.CutPrefix(target, cluster+"-"+own+"-")
	if !ok {
		return ""
	}
	if postfix, ok = strings.CutSuffix(postfix, "."+domain); !ok {
		return ""
	}
	return naming.IntermediateName(postfix, ep.Namespace, region, domain)
}

// forming says a route's DNSEndpoint waits for a reading of the zone of region to take its form
// (decide.RouteForm): it publishes its intermediate itself (an earlier version's form, until the
// operators take the intermediate over), or, in its own region's zone, its name directly, until
// the intermediate this cluster creates is there.
func forming(ep *externaldnsv1alpha1.DNSEndpoint, identity *clusterv1alpha1.ClusterIdentity, region string) bool {
	if len(ep.Spec.Endpoints) == 0 || ep.Spec.Endpoints[0] == nil {
		return false
	}
	hasIntermediate := slices.ContainsFunc(ep.Spec.Endpoints[1:], func(r *endpoint.Endpoint) bool { return r != nil && naming.IsIntermediate(r.DNSName) })
	through := slices.ContainsFunc(ep.Spec.Endpoints[0].Targets, naming.IsIntermediate)
	if hasIntermediate || through || region != identity.Spec.Region || len(ep.Spec.Endpoints[0].Targets) != 1 {
		return hasIntermediate
	}
	return intermediateOf(ep, identity.Spec.Cluster, identity.Spec.Region, identity.Spec.Domain, region) != ""
}
