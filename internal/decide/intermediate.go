package decide

import (
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
// (failover.FormIn), never less than the DNSEndpoint current already has. A form once taken is
// kept: the reading of a zone a failover moved (the intermediate a stand-in's now) would turn a
// name that goes through it back to this cluster's gateway, past the failover; and a new leader,
// which has read nothing yet, must not turn every name back to direct and then through again
// (two writes per name in a zone that allows 60 a minute). Without a reading, only the zone's
// own region publishes the intermediate (FormIn's rule).
func RouteForm(current *externaldnsv1alpha1.DNSEndpoint, view failover.Form, known bool, hostname, intermediate string) failover.Form {
	kept := FormOf(current, hostname, intermediate)
	f := failover.Form{Intermediate: kept.Intermediate || view.Intermediate, Through: kept.Through || (known && view.Through)}
	f.Intermediate = f.Intermediate || f.Through
	return f
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
// the intermediate's CNAME to the target when Intermediate. ep is changed in place and returned.
func WithForm(ep *externaldnsv1alpha1.DNSEndpoint, f failover.Form, intermediate string) *externaldnsv1alpha1.DNSEndpoint {
	if len(ep.Spec.Endpoints) != 1 || !f.Intermediate {
		return ep
	}
	name := ep.Spec.Endpoints[0]
	target := name.Targets
	if f.Through {
		name.Targets = endpoint.Targets{intermediate}
	}
	ep.Spec.Endpoints = append(ep.Spec.Endpoints, &endpoint.Endpoint{DNSName: intermediate, RecordType: endpoint.RecordTypeCNAME, Targets: target})
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
