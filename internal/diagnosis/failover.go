package diagnosis

import (
	"fmt"
	"io"
	"slices"
	"strings"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/preview"
)

// FailoverEffect is `kubectl router plan --region-lost REGION`: what this cluster's operator would
// do with the names it publishes, zone by zone, if it judged the region lost now, with the other
// regions as its dns-config says it judges them.
type FailoverEffect struct {
	Lost   string `json:"lost"`
	Region string `json:"region"`
	// Zones are the zones with failover settings; the other zones take no part.
	Zones []ZoneFailoverEffect `json:"zones"`
}

// ZoneFailoverEffect sorts this cluster's names in one zone.
type ZoneFailoverEffect struct {
	Controller string `json:"controller"`
	// TakenHere would pass to this cluster's ExternalDNS, if the lost region holds them.
	TakenHere []string `json:"takenHere,omitempty"`
	// StandIns would pass to another stand-in region, first in their policy's order and serving.
	StandIns map[string][]string `json:"standIns,omitempty"`
	// NoStandIn stay where they are: their policy lists no stand-ins, or none is serving.
	NoStandIn []string `json:"noStandIn,omitempty"`
}

// FailoverEffectOf computes the effect of losing region lost.
func FailoverEffectOf(w *preview.World, lost string) (FailoverEffect, error) {
	if w.Identity == nil || w.Configuration == nil {
		return FailoverEffect{}, fmt.Errorf("the ClusterIdentity or the DNSConfiguration is missing: failover has nothing to act on")
	}
	own := w.Identity.Spec.Region
	e := FailoverEffect{Lost: lost, Region: own}
	states := map[string]failover.State{own: failover.Serving}
	for _, r := range w.Configuration.Status.Failover {
		states[r.Region] = failover.State(r.State)
	}
	states[lost] = failover.Lost
	policies := preview.PoliciesInForce(w.Policies)
	for _, c := range w.Configuration.Spec.ExternalDNSControllers {
		if c.Failover == nil {
			continue
		}
		e.Zones = append(e.Zones, zoneEffect(w, policies, c, own, lost, states))
	}
	if len(e.Zones) == 0 {
		return e, fmt.Errorf("no ExternalDNS controller of the DNSConfiguration has failover settings: losing %s moves nothing", lost)
	}
	return e, nil
}

func zoneEffect(w *preview.World, policies map[string]*routingv1alpha1.DNSPolicy, c clusterv1alpha1.ExternalDNSController, own, lost string,
	states map[string]failover.State) ZoneFailoverEffect {
	z := ZoneFailoverEffect{Controller: c.Name, StandIns: map[string][]string{}}
	for _, ep := range w.Endpoints {
		if ep.Labels[naming.LabelController] != c.Name || ep.Labels[naming.LabelServiceRoute] == "" || ep.DeletionTimestamp != nil {
			continue
		}
		var standIns []string
		if p := policies[ep.Namespace]; p != nil && p.Spec.Failover != nil {
			standIns = p.Spec.Failover.StandIns
		}
		to := failover.StandIn(lost, standIns, states)
		for _, rec := range ep.Spec.Endpoints {
			name := ep.Namespace + ": " + rec.DNSName
			switch {
			case to == "":
				z.NoStandIn = append(z.NoStandIn, name)
			case to == own:
				z.TakenHere = append(z.TakenHere, name)
			default:
				z.StandIns[to] = append(z.StandIns[to], name)
			}
		}
	}
	slices.Sort(z.TakenHere)
	slices.Sort(z.NoStandIn)
	for _, names := range z.StandIns {
		slices.Sort(names)
	}
	return z
}

// WriteFailoverEffect writes the effect for people.
func WriteFailoverEffect(w io.Writer, e FailoverEffect) error {
	p := &lines{}
	p.line("If region %s were lost, this cluster (region %s) would:", e.Lost, e.Region)
	for _, z := range e.Zones {
		p.line("")
		p.line("zone %s:", z.Controller)
		p.line("  take over %d name(s), where the lost region holds them, published from the same namespace:", len(z.TakenHere))
		for _, n := range z.TakenHere {
			p.line("    %s", n)
		}
		regions := make([]string, 0, len(z.StandIns))
		for r := range z.StandIns {
			regions = append(regions, r)
		}
		slices.Sort(regions)
		for _, r := range regions {
			p.line("  leave %d name(s) to region %s, first serving stand-in of their policy: %s", len(z.StandIns[r]), r, strings.Join(z.StandIns[r], ", "))
		}
		if len(z.NoStandIn) > 0 {
			p.line("  move nothing for %d name(s) whose policy lists no serving stand-in: %s", len(z.NoStandIn), strings.Join(z.NoStandIn, ", "))
		}
	}
	return p.to(w)
}
