package decide

import (
	"fmt"
	"strings"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/verify"
)

// ZoneInput is what is known about an object's records in one zone.
type ZoneInput struct {
	Controller, Region string
	// Verified says the zone's controller has verification settings.
	Verified bool
	// Desired is the DNSEndpoint as it is now published for the zone; Current is the copy in the
	// cache (nil: none yet), which carries what ExternalDNS has processed.
	Desired, Current *externaldnsv1alpha1.DNSEndpoint
	// Observation is the prober's last result for the zone; nil when it has none (not checked
	// since this replica started leading).
	Observation *verify.Observation
}

// Publication is the zone part of a status: the zones, the PUBLISHED column and the Published
// condition.
type Publication struct {
	Zones     []routingv1alpha1.ZoneStatus
	Published string
	Condition metav1.Condition
}

// Publish decides an object's zones and Published condition. A zone without verification
// settings is Unverified; a zone whose records changed since its last check is Pending until
// checked again; a zone the prober has no result for keeps what previous (the status) says, so
// that a new leader writes nothing until its own checks find something different. nothing is the
// Published message when there are no zones. Messages hold no times: a settled object's status
// stays byte-for-byte the same.
func Publish(zones []ZoneInput, previous []routingv1alpha1.ZoneStatus, generation int64, nothing string) Publication {
	out := Publication{Zones: make([]routingv1alpha1.ZoneStatus, 0, len(zones))}
	for _, z := range zones {
		out.Zones = append(out.Zones, zoneStatus(z, previous))
	}
	if len(out.Zones) == 0 {
		out.Zones = nil
		out.Condition = metav1.Condition{Type: routingv1alpha1.ConditionPublished, Status: metav1.ConditionFalse, ObservedGeneration: generation,
			Reason: routingv1alpha1.ReasonNothingPublished, Message: nothing}
		return out
	}
	published := 0
	worst := routingv1alpha1.ZonePublished
	for _, z := range out.Zones {
		if z.State == routingv1alpha1.ZonePublished {
			published++
		}
		if verify.Worse(z.State, worst) {
			worst = z.State
		}
	}
	out.Published = fmt.Sprintf("%d/%d", published, len(out.Zones))
	out.Condition = publishedCondition(out.Zones, worst, generation)
	return out
}

func zoneStatus(z ZoneInput, previous []routingv1alpha1.ZoneStatus) routingv1alpha1.ZoneStatus {
	s := routingv1alpha1.ZoneStatus{Controller: z.Controller, Region: z.Region,
		Processed: z.Current != nil && desired.EndpointUpToDate(z.Current, z.Desired) && z.Current.Status.ObservedGeneration == z.Current.Generation}
	// A failover route is checked by its own record, not the intermediate beside it
	// (verify.RouteRecord), and the tracker's result says which expectation it is for.
	want := checkedKey(z.Desired)
	changed := z.Current == nil || checkedKey(z.Current) != want
	switch {
	case !z.Verified:
		s.State = routingv1alpha1.ZoneUnverified
	case !changed && z.Observation != nil && z.Observation.For == want:
		s.State, s.Answer = z.Observation.State, Truncate(z.Observation.Answer, 512)
		// Seconds, as the API stores it; and the time of the first check that found this
		// state and answer, so that a new leader finding what the status says writes nothing.
		s.LastChecked = &metav1.Time{Time: z.Observation.Since.Truncate(time.Second)}
		if p := kept(previous, z.Controller); p != nil && p.State == s.State && p.Answer == s.Answer && p.LastChecked != nil {
			s.LastChecked = p.LastChecked
		}
	case !changed && z.Observation == nil && kept(previous, z.Controller) != nil:
		p := kept(previous, z.Controller)
		s.State, s.Answer, s.LastChecked = p.State, p.Answer, p.LastChecked
	default: // changed, or the prober has not seen the change yet
		s.State, s.Answer = routingv1alpha1.ZonePending, verify.NotCheckedYet
	}
	return s
}

// checkedKey is the expectation verification checks a DNSEndpoint against (verify.Expected.Key).
func checkedKey(ep *externaldnsv1alpha1.DNSEndpoint) string {
	if _, route := ep.Labels[naming.LabelServiceRoute]; route {
		return verify.ExpectedOf(verify.RouteRecord(verify.RouteRecords(ep))).Key()
	}
	return verify.ExpectedOf(ep.Spec.Endpoints).Key()
}

// kept returns the previous verified state of a zone, nil when there is none.
func kept(previous []routingv1alpha1.ZoneStatus, controller string) *routingv1alpha1.ZoneStatus {
	for i := range previous {
		if previous[i].Controller == controller && previous[i].State != routingv1alpha1.ZoneUnverified {
			return &previous[i]
		}
	}
	return nil
}

func publishedCondition(zones []routingv1alpha1.ZoneStatus, worst routingv1alpha1.ZoneState, generation int64) metav1.Condition {
	c := metav1.Condition{Type: routingv1alpha1.ConditionPublished, Status: metav1.ConditionFalse, ObservedGeneration: generation}
	var names, others []string
	for _, z := range zones {
		names = append(names, z.Controller)
		if z.State == worst {
			others = append(others, describeZone(z))
		}
	}
	switch worst {
	case routingv1alpha1.ZonePublished:
		c.Status, c.Reason = metav1.ConditionTrue, routingv1alpha1.ReasonZonesPublished
		c.Message = "every zone answers the published records: " + strings.Join(names, ", ")
		return c
	case routingv1alpha1.ZoneUnverified:
		c.Status, c.Reason = metav1.ConditionUnknown, routingv1alpha1.ReasonVerificationNotConfigured
		c.Message = fmt.Sprintf("not known: no verification settings in DNSConfiguration %s for %s",
			clusterv1alpha1.DNSConfigurationName, strings.Join(others, "; "))
		if len(others) < len(zones) {
			c.Message += "; the other zones answer the published records"
		}
		return c
	case routingv1alpha1.ZoneDrifted:
		c.Reason = routingv1alpha1.ReasonZonesDrifted
		c.Message = "answering something else than what is published: " + strings.Join(others, "; ")
	case routingv1alpha1.ZoneUnreachable:
		c.Reason = routingv1alpha1.ReasonZonesUnreachable
		c.Message = "zones that could not be asked or read: " + strings.Join(others, "; ")
	default:
		c.Reason = routingv1alpha1.ReasonZonesPending
		c.Message = "not answering the published records yet: " + strings.Join(others, "; ")
	}
	return c
}

// describeZone is one zone in a condition message: "external-dns-frc (NXDOMAIN; not processed by
// ExternalDNS yet)".
func describeZone(z routingv1alpha1.ZoneStatus) string {
	var details []string
	if z.Answer != "" {
		details = append(details, z.Answer)
	}
	if !z.Processed {
		details = append(details, "not processed by ExternalDNS yet")
	} else if z.State == routingv1alpha1.ZoneUnverified {
		details = append(details, "processed by ExternalDNS")
	}
	if len(details) == 0 {
		return z.Controller
	}
	return z.Controller + " (" + strings.Join(details, "; ") + ")"
}

// Truncate shortens s to at most n characters (runes, as a CRD's maxLength counts them), ending
// it with "..." when it was longer.
func Truncate(s string, n int) string {
	runes := []rune(s)
	if len(runes) <= n {
		return s
	}
	return string(runes[:n-3]) + "..."
}

// Verified reports whether a DNSConfiguration has verification settings for a controller.
func Verified(cfg *clusterv1alpha1.DNSConfiguration, controller string) bool {
	if cfg == nil {
		return false
	}
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if c.Name == controller {
			return c.Verification != nil && (len(c.Verification.Nameservers) > 0 || len(c.Verification.Resolvers) > 0 || c.Verification.AzurePrivateDNS != nil)
		}
	}
	return false
}

// RouteZones are the zone inputs of a route's publication: one per DNSEndpoint it publishes now
// (applied), with the copy the route had before the write (current: what ExternalDNS has
// processed) and the prober's last result for that zone (observed; nil: none).
func RouteZones(cfg *clusterv1alpha1.DNSConfiguration, applied, current []*externaldnsv1alpha1.DNSEndpoint,
	observed func(controller string) *verify.Observation) []ZoneInput {
	byName := make(map[string]*externaldnsv1alpha1.DNSEndpoint, len(current))
	for _, ep := range current {
		byName[ep.Namespace+"/"+ep.Name] = ep
	}
	zones := make([]ZoneInput, 0, len(applied))
	for _, ep := range applied {
		controller := ep.Labels[naming.LabelController]
		zones = append(zones, ZoneInput{Controller: controller, Region: ep.Labels[naming.LabelRegion], Verified: Verified(cfg, controller),
			Desired: ep, Current: byName[ep.Namespace+"/"+ep.Name], Observation: observed(controller)})
	}
	return zones
}

// SyncedRouteStatus is the status of a route whose records now follow p: the DNSEndpoints it
// publishes (applied), its hostnames, and its publication per zone. The Ready condition and the
// phase are SetOutcome's.
func SyncedRouteStatus(route *routingv1alpha1.ServiceRoute, p RoutePlan, applied []*externaldnsv1alpha1.DNSEndpoint, zones []ZoneInput) routingv1alpha1.ServiceRouteStatus {
	s := *route.Status.DeepCopy()
	s.Endpoints, s.DNSEndpoint = ManagedEndpoints(applied)
	s.Hostname, s.TargetHostname = p.Hostname, p.Target
	pub := Publish(zones, s.Zones, route.Generation, "the route publishes no DNS record; the Ready condition says why")
	s.Zones, s.Published = pub.Zones, pub.Published
	meta.SetStatusCondition(&s.Conditions, pub.Condition)
	return s
}

// GatewayZones are the zone inputs of a Gateway's publication: the address DNSEndpoint of its
// target hostname for each ExternalDNS controller that has one (written by the IngressDNS
// reconcile), in the DNSConfiguration's order, with the prober's last result for it (observed, by
// the DNSEndpoint's namespace/name; nil: none).
func GatewayZones(cfg *clusterv1alpha1.DNSConfiguration, target string, addresses []*externaldnsv1alpha1.DNSEndpoint,
	observed func(source string) *verify.Observation) []ZoneInput {
	if target == "" {
		return nil
	}
	byController := map[string]*externaldnsv1alpha1.DNSEndpoint{}
	for _, ep := range addresses {
		if addressName(ep) == target {
			byController[ep.Labels[naming.LabelController]] = ep
		}
	}
	var zones []ZoneInput
	for _, c := range ControllersOf(cfg) {
		if ep := byController[c.Name]; ep != nil {
			zones = append(zones, ZoneInput{Controller: c.Name, Region: c.Region, Verified: Verified(cfg, c.Name), Desired: ep, Current: ep,
				Observation: observed(ep.Namespace + "/" + ep.Name)})
		}
	}
	return zones
}

// addressName is the target hostname of a gateway address DNSEndpoint, "" for other objects.
func addressName(ep *externaldnsv1alpha1.DNSEndpoint) string {
	if _, ok := desired.IngressOfLabels(ep.Labels); !ok || len(ep.Spec.Endpoints) == 0 || ep.Spec.Endpoints[0] == nil {
		return ""
	}
	return ep.Spec.Endpoints[0].DNSName
}

// GatewayStatus is the status of a Gateway after a reconcile that decided p, but for the outcome
// (SetOutcome's): its target hostname, address and host count, the host admission's cutoff
// (status.hostLimit and the HostLimit condition, both absent while every route fits), the
// listener conflicts and problems, istiod's analysis of the generated Istio Gateway (generated: nil when there
// is none) and the publication per zone.
func GatewayStatus(gw *routingv1alpha1.Gateway, p GatewayPlan, limit *routingv1alpha1.GatewayHostLimit, generated *istionetworkingv1.Gateway, zones []ZoneInput) routingv1alpha1.GatewayStatus {
	s := *gw.Status.DeepCopy()
	s.TargetHostname, s.LoadBalancerIP, s.Hosts = p.Target, p.LoadBalancerIP, int32(len(p.Hosts))
	s.HostLimit = limit
	SetOrRemoveCondition(&s.Conditions, routingv1alpha1.ConditionHostLimit, HostLimitCondition(gw, limit))
	SetOrRemoveCondition(&s.Conditions, routingv1alpha1.ConditionIstioAnalysis, IstioAnalysisCondition(gw, generated))
	SetOrRemoveCondition(&s.Conditions, routingv1alpha1.ConditionListenerProblems, ListenerProblemsCondition(gw, p.ListenerProblems))
	s.ListenerConflicts = p.ListenerConflicts
	pub := Publish(zones, s.Zones, gw.Generation, "no address record is published for the gateway's target hostname; the Ready condition says why")
	s.Zones, s.Published = pub.Zones, pub.Published
	meta.SetStatusCondition(&s.Conditions, pub.Condition)
	return s
}
