package diagnosis

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/preview"
)

// failoverWorld is aks02 (region neu) publishing three teams' names into the weu and frc zones;
// only weu has failover settings. It judges frc Serving and knows no cluster of sea.
func failoverWorld() *preview.World {
	w := &preview.World{
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
