package diagnosis

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/routerplan"
)

// failoverWorld is aks02 (region neu) publishing three teams' names into the weu and frc zones;
// only weu has failover settings. It judges frc Serving and knows no cluster of sea.
func failoverWorld() *routerplan.World {
	w := &routerplan.World{
		Identity: &clusterv1alpha1.ClusterIdentity{Spec: clusterv1alpha1.ClusterIdentitySpec{Region: "neu", Cluster: "aks02"}},
		Configuration: &clusterv1alpha1.DNSConfiguration{
			Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
				{Name: "external-dns-weu", Region: "weu", Failover: &clusterv1alpha1.ZoneFailover{OwnerID: "external-dns-weu-aks02"}},
				{Name: "external-dns-frc", Region: "frc"},
			}},
			Status: clusterv1alpha1.DNSConfigurationStatus{Failover: []clusterv1alpha1.RegionFailoverStatus{{Region: "frc", State: "Serving"}, {Region: "weu", State: "Serving"}}},
		},
	}
	policy := func(ns string, standIns ...string) *routingv1alpha1.DNSPolicy {
		p := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}}
		if standIns != nil {
			p.Spec.Failover = &routingv1alpha1.PolicyFailover{StandIns: standIns}
		}
		return p
	}
	w.Policies = []*routingv1alpha1.DNSPolicy{policy("shop", "neu"), policy("search", "frc", "neu"), policy("legacy"), policy("far", "sea")}
	for _, ns := range []string{"shop", "search", "legacy", "far"} {
		for _, controller := range []string{"external-dns-weu", "external-dns-frc"} {
			w.Endpoints = append(w.Endpoints, &externaldnsv1alpha1.DNSEndpoint{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-" + controller,
					Labels: map[string]string{naming.LabelController: controller, naming.LabelServiceRoute: "api"}},
				Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{{DNSName: "api-" + ns + ".example.com", RecordType: "CNAME"}}},
			})
		}
	}
	return w
}

func TestFailoverEffectOf_SortsThisClustersNamesPerZone(t *testing.T) {
	e, err := FailoverEffectOf(failoverWorld(), "weu")
	require.NoError(t, err)
	assert.Equal(t, FailoverEffect{Lost: "weu", Region: "neu", Zones: []ZoneFailoverEffect{{
		Controller: "external-dns-weu",
		TakenHere:  []string{"shop: api-shop.example.com"},
		StandIns:   map[string][]string{"frc": {"search: api-search.example.com"}},
		NoStandIn:  []string{"far: api-far.example.com", "legacy: api-legacy.example.com"},
	}}}, e, "frc comes first for search and serves; legacy lists no stand-in; far's only stand-in has no cluster here; the frc zone has no failover settings")

	w := failoverWorld()
	w.Configuration.Status.Failover[0].State = "Lost"
	e, err = FailoverEffectOf(w, "weu")
	require.NoError(t, err)
	assert.Equal(t, []string{"search: api-search.example.com", "shop: api-shop.example.com"}, e.Zones[0].TakenHere, "frc is lost too: neu is search's next stand-in")

	var b strings.Builder
	require.NoError(t, WriteFailoverEffect(&b, e))
	assert.Contains(t, b.String(), "If region weu were lost, this cluster (region neu) would:\n\nzone external-dns-weu:\n  take over 2 name(s)")

	w = failoverWorld()
	w.Configuration.Spec.ExternalDNSControllers[0].Failover = nil
	_, err = FailoverEffectOf(w, "weu")
	assert.ErrorContains(t, err, "no ExternalDNS controller of the DNSConfiguration has failover settings")
}

// The preview sorts each name as the operator's failover.Takeovers decides, with the other regions
// as the dns-config's status says and this cluster's own as the operator judges it; and on a zone
// the lost region's cluster really holds (aks01's owner in every name's ownership record),
// Takeovers passes exactly the names the preview says are taken here.
func TestFailoverEffectOf_DecidesAsTakeovers(t *testing.T) {
	const (
		shop, search = "shop: api-shop.example.com", "search: api-search.example.com"
		legacy, far  = "legacy: api-legacy.example.com", "far: api-far.example.com"
	)
	tests := []struct {
		name string
		lost string
		// states are the other regions' in the dns-config's status; drain its spec.failover.drain.
		states map[string]string
		drain  bool
		mut    func(*routerplan.World)
		want   ZoneFailoverEffect
	}{
		{"this region first serving stand-in: taken here; behind a serving one: left to it", "weu", map[string]string{"frc": "Serving"}, false, nil,
			ZoneFailoverEffect{TakenHere: []string{shop}, StandIns: map[string][]string{"frc": {search}}, NoStandIn: []string{far, legacy}}},
		{"the first stand-in lost: the next, this region", "weu", map[string]string{"frc": "Lost"}, false, nil,
			ZoneFailoverEffect{TakenHere: []string{search, shop}, NoStandIn: []string{far, legacy}}},
		{"the first stand-in unreachable: the next, this region", "weu", map[string]string{"frc": "Unreachable"}, false, nil,
			ZoneFailoverEffect{TakenHere: []string{search, shop}, NoStandIn: []string{far, legacy}}},
		{"the first stand-in drained: the next, this region", "weu", map[string]string{"frc": "Drained"}, false, nil,
			ZoneFailoverEffect{TakenHere: []string{search, shop}, NoStandIn: []string{far, legacy}}},
		{"this region drained: it stands in for nobody, the next serving does", "weu", map[string]string{"frc": "Serving"}, true, nil,
			ZoneFailoverEffect{StandIns: map[string][]string{"frc": {search}}, NoStandIn: []string{far, legacy, shop}}},
		{"this region drained and the other stand-in lost: nothing moves", "weu", map[string]string{"frc": "Lost"}, true, nil,
			ZoneFailoverEffect{NoStandIn: []string{far, legacy, search, shop}}},
		{"the dns-config's status does not judge this region: the operator does", "weu", map[string]string{"frc": "Serving", "neu": "Lost"}, false, nil,
			ZoneFailoverEffect{TakenHere: []string{shop}, StandIns: map[string][]string{"frc": {search}}, NoStandIn: []string{far, legacy}}},
		{"another namespace's newer policy with stand-ins: the oldest, without, decides", "weu", map[string]string{"frc": "Serving"}, false, func(w *routerplan.World) {
			newer := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "legacy", Name: "newer", CreationTimestamp: metav1.Unix(10, 0)},
				Spec: routingv1alpha1.DNSPolicySpec{Failover: &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}}}
			w.Policies = append(w.Policies, newer)
		}, ZoneFailoverEffect{TakenHere: []string{shop}, StandIns: map[string][]string{"frc": {search}}, NoStandIn: []string{far, legacy}}},
		{"this cluster's own region lost: it takes nothing", "neu", map[string]string{"frc": "Serving", "weu": "Serving"}, false, nil,
			ZoneFailoverEffect{StandIns: map[string][]string{"frc": {search}}, NoStandIn: []string{far, legacy, shop}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := failoverWorld()
			w.Configuration.Status.Failover = nil
			for _, region := range slices.Sorted(maps.Keys(tt.states)) {
				w.Configuration.Status.Failover = append(w.Configuration.Status.Failover, clusterv1alpha1.RegionFailoverStatus{Region: region, State: tt.states[region]})
			}
			w.Configuration.Spec.Failover = &clusterv1alpha1.FailoverSettings{Drain: tt.drain}
			if tt.mut != nil {
				tt.mut(w)
			}
			e, err := FailoverEffectOf(w, tt.lost)
			require.NoError(t, err)
			tt.want.Controller = "external-dns-weu"
			if tt.want.StandIns == nil {
				tt.want.StandIns = map[string][]string{}
			}
			require.Len(t, e.Zones, 1)
			assert.Equal(t, tt.want, e.Zones[0])
			assert.Equal(t, e.Zones[0].TakenHere, takenFromARealZone(w, tt.lost, tt.states, tt.drain), "Takeovers on the zone as the lost region's cluster holds it")
		})
	}
}

// takenFromARealZone is what failover.Takeovers passes to aks02 (neu) of the weu zone in which a
// cluster of region lost, aks01, owns every name of failoverWorld, with the regions judged as the
// operator would: own Serving (Drained while draining), the others as states say, lost Lost.
func takenFromARealZone(w *routerplan.World, lost string, states map[string]string, drain bool) []string {
	judged := map[string]failover.Judgement{"neu": {State: failover.Serving}}
	if drain {
		judged["neu"] = failover.Judgement{State: failover.Drained}
	}
	for region, state := range states {
		if region != "neu" {
			judged[region] = failover.Judgement{State: failover.State(state)}
		}
	}
	judged[lost] = failover.Judgement{State: failover.Lost}
	zone := failover.ZoneReading{Controller: "external-dns-weu", Region: "weu", Read: true, Owner: "external-dns-weu-aks02",
		Beats: map[string][]failover.Heartbeat{lost: {{Found: true, Read: true, Cluster: "aks01", Owner: "external-dns-weu-aks01"}}},
		TXT:   map[string]failover.TXTSet{}}
	for _, ns := range []string{"shop", "search", "legacy", "far"} {
		zone.TXT["cname-api-"+ns+".example.com"] = failover.TXTSet{TTL: 300, Values: []string{
			"heritage=external-dns,external-dns/owner=external-dns-weu-aks01,external-dns/resource=crd/" + ns + "/api-external-dns-weu"}}
	}
	names, _ := decide.FailoverNames("external-dns-weu", w.Endpoints, routerplan.PoliciesInForce(w.Policies))
	var out []string
	for _, p := range failover.Takeovers("neu", judged, []failover.ZoneReading{zone}, names) {
		out = append(out, p.Namespace+": "+p.Hostname)
	}
	slices.Sort(out)
	return out
}
