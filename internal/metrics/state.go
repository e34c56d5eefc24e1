package metrics

import (
	"cmp"
	"slices"
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
)

// Kind values of the kind label. IngressDNS stands for the gateway entry points (controller,
// targetPostfix) the IngressDNS controller publishes address records for.
const (
	KindClusterIdentity  = "ClusterIdentity"
	KindDNSConfiguration = "DNSConfiguration"
	KindDNSPolicy        = "DNSPolicy"
	KindGateway          = "Gateway"
	KindServiceRoute     = "ServiceRoute"
	KindIngressDNS       = "IngressDNS"
)

// Values of the source label of service_router_dns_records.
const (
	SourceServiceRoute = "serviceroute"
	SourceGateway      = "gateway"
)

// conflictSeries are the (kind, reason) pairs of service_router_conflicts, always exported (0
// when there is no conflict) so that dashboards show them.
var conflictSeries = [][2]string{
	{KindServiceRoute, routingv1alpha1.ReasonHostnameConflict},
	{KindServiceRoute, routingv1alpha1.ReasonOwnershipConflict},
	{KindGateway, routingv1alpha1.ReasonOwnershipConflict},
	{KindIngressDNS, routingv1alpha1.ReasonOwnershipConflict},
}

// State is everything the state metrics are computed from: the objects in the informer cache
// (its own objects, read only) and the IngressDNS conflicts.
type State struct {
	Identities     []*clusterv1alpha1.ClusterIdentity
	Configurations []*clusterv1alpha1.DNSConfiguration
	Policies       []*routingv1alpha1.DNSPolicy
	Gateways       []*routingv1alpha1.Gateway
	Routes         []*routingv1alpha1.ServiceRoute
	// Endpoints are the managed DNSEndpoints; IstioGateways the managed Istio Gateways.
	Endpoints     []*externaldnsv1alpha1.DNSEndpoint
	IstioGateways []*istionetworkingv1.Gateway
	// IngressConflicts is the number of gateway entry points in an ownership conflict.
	IngressConflicts int
}

// Sample is one value of one series.
type Sample struct {
	Name   string
	Labels []string // values, in the order of the metric's Definition.Labels
	Value  float64
}

// objectStatus is what every kind's status has in common.
type objectStatus struct {
	kind       string
	phase      string
	conditions []metav1.Condition
	created    metav1.Time
}

// Samples computes the state metrics at time now. The result is sorted by name, then labels.
func (s State) Samples(now time.Time) []Sample {
	var out []Sample
	add := func(counts map[string]float64, name string) {
		for key, v := range counts {
			out = append(out, Sample{Name: name, Labels: strings.Split(key, "\x00"), Value: v})
		}
	}
	resources, longest := s.resources(now)
	add(resources, ResourcesName)
	add(longest, LongestNotReadyName)
	add(s.conflicts(), ConflictsName)
	add(s.dnsRecords(), DNSRecordsName)
	add(s.activeControllers(), DNSPolicyActiveControllersName)
	add(s.istioHosts(), IstioGatewayHostsName)
	add(s.zoneRoutes(), ZoneRoutesName)
	regions, takeovers := s.failover()
	add(regions, FailoverRegionStateName)
	add(takeovers, FailoverActiveName)
	for _, ci := range s.Identities {
		out = append(out, Sample{Name: ClusterIdentityInfoName, Value: 1,
			Labels: []string{ci.Spec.Region, ci.Spec.Cluster, ci.Spec.EnvironmentLetter, ci.Spec.Domain}})
	}
	active := 0
	for _, p := range s.Policies {
		if p.Status.Active {
			active++
		}
	}
	out = append(out, Sample{Name: ActiveDNSPoliciesName, Value: float64(active)})
	slices.SortFunc(out, func(a, b Sample) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), slices.Compare(a.Labels, b.Labels))
	})
	return out
}

func key(values ...string) string { return strings.Join(values, "\x00") }

// keys joins label values once per distinct combination: a scrape walks every object, and the
// combinations are few.
type keys map[[4]string]string

func (k keys) of(values ...string) string {
	var a [4]string
	copy(a[:], values)
	s, ok := k[a]
	if !ok {
		s = key(values...)
		k[a] = s
	}
	return s
}

func hasKey(m map[string]float64, k string) bool {
	_, ok := m[k]
	return ok
}

func (s State) statuses() []objectStatus {
	out := make([]objectStatus, 0, len(s.Identities)+len(s.Configurations)+len(s.Policies)+len(s.Gateways)+len(s.Routes))
	for _, o := range s.Identities {
		out = append(out, objectStatus{KindClusterIdentity, string(o.Status.Phase), o.Status.Conditions, o.CreationTimestamp})
	}
	for _, o := range s.Configurations {
		out = append(out, objectStatus{KindDNSConfiguration, string(o.Status.Phase), o.Status.Conditions, o.CreationTimestamp})
	}
	for _, o := range s.Policies {
		out = append(out, objectStatus{KindDNSPolicy, string(o.Status.Phase), o.Status.Conditions, o.CreationTimestamp})
	}
	for _, o := range s.Gateways {
		out = append(out, objectStatus{KindGateway, string(o.Status.Phase), o.Status.Conditions, o.CreationTimestamp})
	}
	for _, o := range s.Routes {
		out = append(out, objectStatus{KindServiceRoute, string(o.Status.Phase), o.Status.Conditions, o.CreationTimestamp})
	}
	return out
}

// resources returns the values of service_router_resources and of
// service_router_longest_not_ready_seconds.
func (s State) resources(now time.Time) (counts, longest map[string]float64) {
	counts, longest = map[string]float64{}, map[string]float64{}
	k := keys{}
	for _, o := range s.statuses() {
		ready, reason, since := string(metav1.ConditionUnknown), "", o.created.Time
		if c := meta.FindStatusCondition(o.conditions, clusterv1alpha1.ConditionReady); c != nil {
			ready, reason, since = string(c.Status), c.Reason, c.LastTransitionTime.Time
		}
		counts[k.of(o.kind, o.phase, ready, reason)]++
		if ready != string(metav1.ConditionTrue) {
			lk := k.of(o.kind, reason)
			longest[lk] = max(longest[lk], now.Sub(since).Seconds(), 0)
		}
	}
	return counts, longest
}

func (s State) conflicts() map[string]float64 {
	counts := map[string]float64{}
	for _, c := range conflictSeries {
		counts[key(c[0], c[1])] = 0
	}
	k := keys{}
	for _, o := range s.statuses() {
		if c := meta.FindStatusCondition(o.conditions, clusterv1alpha1.ConditionReady); c != nil {
			if ck := k.of(o.kind, c.Reason); hasKey(counts, ck) {
				counts[ck]++
			}
		}
	}
	counts[key(KindIngressDNS, routingv1alpha1.ReasonOwnershipConflict)] = float64(s.IngressConflicts)
	return counts
}

func (s State) dnsRecords() map[string]float64 {
	counts := map[string]float64{}
	k := keys{}
	for _, ep := range s.Endpoints {
		if !desired.IsManaged(ep) {
			continue
		}
		source := SourceServiceRoute
		if ep.Labels[naming.LabelResourceType] == naming.ResourceTypeGateway {
			source = SourceGateway
		}
		for _, r := range ep.Spec.Endpoints {
			counts[k.of(ep.Labels[naming.LabelController], r.RecordType, source)]++
		}
	}
	return counts
}

func (s State) activeControllers() map[string]float64 {
	counts := map[string]float64{}
	for _, p := range s.Policies {
		if !p.Status.Active {
			continue
		}
		for _, c := range p.Status.ActiveControllers {
			counts[key(c)]++
		}
	}
	return counts
}

func (s State) istioHosts() map[string]float64 {
	counts := map[string]float64{}
	for _, ig := range s.IstioGateways {
		if !desired.IsManaged(ig) {
			continue
		}
		hosts := 0
		for _, server := range ig.Spec.GetServers() {
			hosts += len(server.GetHosts())
		}
		counts[key(ig.Spec.GetSelector()[naming.IngressServiceSelector])] += float64(hosts)
	}
	return counts
}
