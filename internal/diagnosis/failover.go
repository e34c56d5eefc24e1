package diagnosis

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/routerplan"
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
	// NoStandIn stay where they are: their policy lists no stand-ins, or none is serving (or this
	// cluster, the first serving, would not take them: see zoneEffect).
	NoStandIn []string `json:"noStandIn,omitempty"`
}

// FailoverEffectOf computes the effect of losing region lost with the operator's own decisions:
// its names (decide.FailoverNames) and failover.Takeovers, over the zones as they would read if the
// lost region held every name (failover.HeldBy).
func FailoverEffectOf(w *routerplan.World, lost string) (FailoverEffect, error) {
	if w.Identity == nil || w.Configuration == nil {
		return FailoverEffect{}, fmt.Errorf("the ClusterIdentity or the DNSConfiguration is missing: failover has nothing to act on")
	}
	own := w.Identity.Spec.Region
	e := FailoverEffect{Lost: lost, Region: own}
	judged := supposedJudgements(w.Configuration, own, lost)
	policies := routerplan.PoliciesInForce(w.Policies)
	for _, c := range w.Configuration.Spec.ExternalDNSControllers {
		if c.Failover == nil {
			continue
		}
		e.Zones = append(e.Zones, zoneEffect(w.Endpoints, policies, c, own, lost, judged))
	}
	if len(e.Zones) == 0 {
		return e, fmt.Errorf("no ExternalDNS controller of the DNSConfiguration has failover settings: losing %s moves nothing", lost)
	}
	return e, nil
}

// supposedJudgements are the regions as this cluster's operator would judge them with lost Lost:
// its own region as the operator judges it (failover.JudgeRegions: Serving, or Drained while
// spec.failover.drain asks; it then stands in for nobody), the others as the DNSConfiguration's
// status says.
func supposedJudgements(cfg *clusterv1alpha1.DNSConfiguration, own, lost string) map[string]failover.Judgement {
	draining := cfg.Spec.Failover != nil && cfg.Spec.Failover.Drain
	// No zone read: only this cluster's own region is judged, which needs no time nor settings.
	judged := failover.JudgeRegions(time.Time{}, own, draining, nil, nil, failover.DefaultSettings)
	for _, r := range cfg.Status.Failover {
		if r.Region != own {
			judged[r.Region] = failover.Judgement{State: failover.State(r.State), Reason: r.Reason}
		}
	}
	judged[lost] = failover.Judgement{State: failover.Lost}
	return judged
}

// zoneEffect sorts the names of one zone: those failover.Takeovers passes here, the rest by the
// stand-in that would take them (failover.StandIn, as Takeovers chooses), or none.
func zoneEffect(endpoints []*externaldnsv1alpha1.DNSEndpoint, policies map[string]*routingv1alpha1.DNSPolicy, c clusterv1alpha1.ExternalDNSController,
	own, lost string, judged map[string]failover.Judgement) ZoneFailoverEffect {
	standIn, fixed := decide.FailoverNames(c.Name, endpoints, policies)
	zone := failover.HeldBy(failover.ZoneReading{Controller: c.Name, Region: c.Region, Owner: c.Failover.OwnerID, TXTPrefix: c.Failover.TXTPrefix}, lost, standIn)
	passed := passedHere(own, judged, zone, standIn)
	states := make(map[string]failover.State, len(judged))
	for region, j := range judged {
		states[region] = j.State
	}
	z := ZoneFailoverEffect{Controller: c.Name, StandIns: map[string][]string{}}
	for _, n := range standIn {
		if naming.IsIntermediate(n.Hostname) {
			// Not a name anyone resolves: the policy's names move with it, and are listed.
			continue
		}
		name := n.Namespace + ": " + n.Hostname
		switch to := failover.StandIn(lost, n.StandIns, states); {
		case passed[publishedAs(n.Namespace, n.Endpoint, n.Hostname)]:
			z.TakenHere = append(z.TakenHere, name)
		case to == "" || to == own:
			// own, yet Takeovers passes it not: this cluster has no owner ID in the zone, or another
			// namespace publishes the same hostname and the lost region holds it for that one.
			z.NoStandIn = append(z.NoStandIn, name)
		default:
			z.StandIns[to] = append(z.StandIns[to], name)
		}
	}
	for _, n := range fixed {
		z.NoStandIn = append(z.NoStandIn, n.Namespace+": "+n.Hostname)
	}
	slices.Sort(z.TakenHere)
	slices.Sort(z.NoStandIn)
	for _, names := range z.StandIns {
		slices.Sort(names)
	}
	return z
}

// published is a name as a DNSEndpoint publishes it: its namespace, name and Canonical hostname.
type published struct{ namespace, endpoint, hostname string }

func publishedAs(namespace, endpoint, hostname string) published {
	return published{namespace, endpoint, failover.Canonical(hostname)}
}

// passedHere are the names failover.Takeovers passes to this cluster (of region own) in zone.
func passedHere(own string, judged map[string]failover.Judgement, zone failover.ZoneReading, names []failover.Name) map[published]bool {
	out := map[published]bool{}
	for _, p := range failover.Takeovers(own, judged, []failover.ZoneReading{zone}, names) {
		out[publishedAs(p.Namespace, p.Endpoint, p.Hostname)] = true
	}
	return out
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
