package failoverloop

import (
	"context"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
)

// formView is what Forms answers from: this cluster's region and each failover zone's last whole
// reading (a zone not read whole yet: Read false, its region known).
type formView struct {
	own   string
	zones map[string]failover.ZoneReading
}

func (v formView) form(controller, hostname, intermediate string) (failover.Form, bool) {
	z, ok := v.zones[controller]
	if !ok {
		return failover.Form{}, false
	}
	return failover.FormIn(z, v.own, hostname, intermediate)
}

// Forms is how the ServiceRoute reconciler publishes a failover policy's names (decide.Forms):
// from the zones as this leader last read them whole; nil before its first round.
func (f *Loop) Forms() decide.Forms {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.forms.zones == nil {
		return nil
	}
	return f.forms.form
}

// keepForms makes the zones' latest whole readings what Forms answers from, and sends to be
// reconciled again every route whose DNSEndpoint in a zone read whole since the last round is not
// in the form the reading now says (decide.RouteForm): nothing else wakes a route when only the
// zone changed (its intermediate created, or taken by this cluster). A zone this round passed
// names in says nothing until it is read again: its reading is from before the passes, and a name
// this cluster just took on its own would go through an intermediate still the lost region's.
func (f *Loop) keepForms(ctx context.Context, own, cluster, domain string, zones []failoverZone, passed map[string]bool) {
	view := formView{own: own, zones: map[string]failover.ZoneReading{}}
	var changed []failoverZone
	for _, z := range zones {
		r := f.zoneReads(z.controller)
		reading := z.labelled(failover.ZoneReading{})
		if !r.at.Full.IsZero() && !passed[z.controller] {
			reading = r.whole
		}
		if passed[z.controller] {
			view.zones[z.controller] = reading
			continue
		}
		view.zones[z.controller] = reading
		if r.at.Full.After(r.formsAt) {
			r.formsAt = r.at.Full
			changed = append(changed, z)
		}
	}
	intermediates := map[string]map[string]string{}
	for controller, z := range view.zones {
		for name, target := range z.CNAMEs {
			if naming.IsIntermediate(name) {
				if intermediates[controller] == nil {
					intermediates[controller] = map[string]string{}
				}
				intermediates[controller][name] = target
			}
		}
	}
	f.mu.Lock()
	f.forms, f.attribution.intermediates = view, intermediates
	f.mu.Unlock()
	if f.routeChanges == nil || f.reader == nil {
		return
	}
	failoverPolicy := map[string]bool{}
	for _, z := range changed {
		list := &externaldnsv1alpha1.DNSEndpointList{}
		if err := f.reader.List(ctx, list, client.MatchingLabels{naming.LabelController: z.controller}, client.HasLabels{naming.LabelServiceRoute},
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
			if !has || !stale(ep, view, cluster, own, domain, z) {
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
func stale(ep *externaldnsv1alpha1.DNSEndpoint, view formView, cluster, own, domain string, z failoverZone) bool {
	if len(ep.Spec.Endpoints) == 0 || ep.Spec.Endpoints[0] == nil || len(ep.Spec.Endpoints[0].Targets) != 1 {
		return false
	}
	hostname := ep.Spec.Endpoints[0].DNSName
	intermediate := intermediateOf(ep, cluster, own, domain, z.region)
	if intermediate == "" {
		return false
	}
	current := decide.FormOf(ep, hostname, intermediate)
	v, known := view.form(z.controller, hostname, intermediate)
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

// forming says a route's DNSEndpoint publishes its intermediate beside its name, not yet through
// it: it waits for a reading of the zone (decide.RouteForm).
func forming(ep *externaldnsv1alpha1.DNSEndpoint) bool {
	if len(ep.Spec.Endpoints) < 2 || ep.Spec.Endpoints[0] == nil {
		return false
	}
	hasIntermediate := slices.ContainsFunc(ep.Spec.Endpoints[1:], func(r *endpoint.Endpoint) bool { return r != nil && naming.IsIntermediate(r.DNSName) })
	through := slices.ContainsFunc(ep.Spec.Endpoints[0].Targets, naming.IsIntermediate)
	return hasIntermediate && !through
}

// passedIn are the zones (by controller) in which any of lists passes a name.
func passedIn(lists ...[]failover.Pass) map[string]bool {
	out := map[string]bool{}
	for _, list := range lists {
		for _, p := range list {
			out[p.Controller] = true
		}
	}
	return out
}

// formsUnknownIn makes Forms say nothing of the zones about to pass names (keepForms says why),
// before the passes and the marks that wake the routes.
func (f *Loop) formsUnknownIn(zones []failoverZone, passed map[string]bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.forms.zones == nil {
		return
	}
	view := formView{own: f.forms.own, zones: maps.Clone(f.forms.zones)}
	for _, z := range zones {
		if passed[z.controller] {
			view.zones[z.controller] = z.labelled(failover.ZoneReading{})
		}
	}
	f.forms = view
}
