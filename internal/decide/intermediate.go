package decide

import (
	"maps"
	"slices"
	"strings"

	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
)

// Forms says how a name should be published into the zone of an ExternalDNS controller, as
// failover's last whole reading of that zone shows it (failover.FormIn); known is false when
// there is none (another leader reads the zones, or none has been read yet).
type Forms func(controller, hostname, intermediate string) (form failover.Form, known bool)

// failoverZone says the DNSConfiguration gives controller's zone failover settings.
func failoverZone(cfg *clusterv1alpha1.DNSConfiguration, controller string) bool {
	return cfg != nil && slices.ContainsFunc(cfg.Spec.ExternalDNSControllers, func(c clusterv1alpha1.ExternalDNSController) bool {
		return c.Name == controller && c.Failover != nil
	})
}

// RouteForm is the form of a route's name in one zone: what the zone's reading says
// (failover.FormIn), with a Through form current already has kept. A form once taken is kept: the
// reading of a zone a failover moved (the intermediate a stand-in's now) would turn a name that
// goes through it back to this cluster's gateway, past the failover; and a new leader, which has
// read nothing yet, must not turn every name back to direct and then through again (two writes per
// name in a zone that allows 60 a minute). The intermediate's own record, which an earlier version
// published through ExternalDNS, is kept only while no reading shows it released to the operators
// (failover.IntermediateOwner): a route never starts publishing it, and its ExternalDNS deletes it
// only once no ExternalDNS owns it.
//
// A name the route publishes directly already goes through an intermediate only once the zone
// shows it (not view.Unheld): the reading may predate its ExternalDNS's write of the name.
func RouteForm(current *externaldnsv1alpha1.DNSEndpoint, view failover.Form, known bool, hostname, intermediate string) failover.Form {
	kept := FormOf(current, hostname, intermediate)
	through := known && view.Through && !(view.Unheld && publishes(current, hostname))
	return failover.Form{Intermediate: kept.Intermediate && (!known || view.Intermediate), Through: kept.Through || through}
}

// publishes says ep has a record for hostname.
func publishes(ep *externaldnsv1alpha1.DNSEndpoint, hostname string) bool {
	return ep != nil && slices.ContainsFunc(ep.Spec.Endpoints, func(r *endpoint.Endpoint) bool {
		return r != nil && strings.EqualFold(r.DNSName, hostname)
	})
}

// FormOf is the form a route's DNSEndpoint publishes its name in (nil: none yet).
func FormOf(ep *externaldnsv1alpha1.DNSEndpoint, hostname, intermediate string) failover.Form {
	var f failover.Form
	if ep == nil {
		return f
	}
	for _, r := range ep.Spec.Endpoints {
		switch {
		case r == nil || r.RecordType != endpoint.RecordTypeCNAME:
		case strings.EqualFold(r.DNSName, intermediate):
			f.Intermediate = true
		case strings.EqualFold(r.DNSName, hostname) && slices.ContainsFunc(r.Targets, func(t string) bool { return strings.EqualFold(strings.TrimSuffix(t, "."), intermediate) }):
			f.Through = true
		}
	}
	return f
}

// WithForm makes a route's DNSEndpoint (its one CNAME from the name to the gateway target
// hostname) take form f: the name a CNAME to intermediate instead when Through, and beside it
// the intermediate's CNAME to the target when Intermediate (an earlier version's form, kept until
// the operators take the intermediate over). ep is changed in place and returned.
func WithForm(ep *externaldnsv1alpha1.DNSEndpoint, f failover.Form, intermediate string) *externaldnsv1alpha1.DNSEndpoint {
	if len(ep.Spec.Endpoints) != 1 {
		return ep
	}
	name := ep.Spec.Endpoints[0]
	target := name.Targets
	if f.Through {
		name.Targets = endpoint.Targets{intermediate}
		if len(target) == 1 {
			ep.Annotations = maps.Clone(ep.Annotations)
			if ep.Annotations == nil {
				ep.Annotations = map[string]string{}
			}
			ep.Annotations[naming.AnnotationIntermediateTarget] = target[0]
		}
	}
	if f.Intermediate {
		ep.Spec.Endpoints = append(ep.Spec.Endpoints, &endpoint.Endpoint{DNSName: intermediate, RecordType: endpoint.RecordTypeCNAME, Targets: target})
	}
	return ep
}

// endpointOf is the DNSEndpoint among current that publishes for controller, or nil.
func endpointOf(current []*externaldnsv1alpha1.DNSEndpoint, controller string) *externaldnsv1alpha1.DNSEndpoint {
	for _, ep := range current {
		if ep.Labels[naming.LabelController] == controller {
			return ep
		}
	}
	return nil
}
