package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

func TestState_RoutesByZoneState(t *testing.T) {
	zones := func(states ...routingv1alpha1.ZoneState) routingv1alpha1.ServiceRoute {
		var r routingv1alpha1.ServiceRoute
		for i, s := range states {
			r.Status.Zones = append(r.Status.Zones, routingv1alpha1.ZoneStatus{Controller: []string{"external-dns-weu", "external-dns-neu"}[i], State: s})
		}
		return r
	}
	cfg := clusterv1alpha1.DNSConfiguration{Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
		{Name: "external-dns-weu", Region: "weu"}, {Name: "external-dns-neu", Region: "neu"}}}}
	s := State{Configurations: pointers(cfg), Routes: pointers(
		zones("Published", "Pending"), zones("Published", "Drifted"), zones("Unreachable"), routingv1alpha1.ServiceRoute{},
	)}
	got := map[string]float64{}
	for _, sample := range s.Samples(time.Now()) {
		if sample.Name == ZoneRoutesName {
			got[strings.Join(sample.Labels, ",")] = sample.Value
		}
	}
	assert.Equal(t, map[string]float64{
		"external-dns-weu,Published": 2, "external-dns-weu,Pending": 0, "external-dns-weu,Drifted": 0, "external-dns-weu,Unreachable": 1, "external-dns-weu,Unverified": 0,
		"external-dns-neu,Published": 0, "external-dns-neu,Pending": 1, "external-dns-neu,Drifted": 1, "external-dns-neu,Unreachable": 0, "external-dns-neu,Unverified": 0,
	}, got, "every state of every zone is exported, 0 included, so that alerts and dashboards see 0 rather than no data")
}

func TestState_FailoverFromTheDNSConfigurationsStatus(t *testing.T) {
	cfg := clusterv1alpha1.DNSConfiguration{Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
		{Name: "external-dns-weu", Failover: &clusterv1alpha1.ZoneFailover{OwnerID: "external-dns-weu-aks02"}},
		{Name: "external-dns-frc", Failover: &clusterv1alpha1.ZoneFailover{OwnerID: "external-dns-frc-aks02"}},
		{Name: "external-dns-neu"},
	}}, Status: clusterv1alpha1.DNSConfigurationStatus{Failover: []clusterv1alpha1.RegionFailoverStatus{
		{Region: "weu", State: "Lost", Taken: []clusterv1alpha1.ZoneTakeover{{Controller: "external-dns-weu", Names: 12}, {Controller: "external-dns-frc", Names: 3}}},
		{Region: "frc", State: "Unreachable"},
	}}}
	identity := clusterv1alpha1.ClusterIdentity{Spec: clusterv1alpha1.ClusterIdentitySpec{Region: "neu"}}
	got := map[string]float64{}
	for _, sample := range (State{Configurations: pointers(cfg), Identities: pointers(identity)}).Samples(time.Now()) {
		if sample.Name == FailoverRegionStateName || sample.Name == FailoverActiveName {
			got[sample.Name+"{"+strings.Join(sample.Labels, ",")+"}"] = sample.Value
		}
	}
	assert.Equal(t, map[string]float64{
		"service_router_failover_region_state{weu,Serving}": 0, "service_router_failover_region_state{weu,Unreachable}": 0, "service_router_failover_region_state{weu,Lost}": 1, "service_router_failover_region_state{weu,Drained}": 0,
		"service_router_failover_region_state{frc,Serving}": 0, "service_router_failover_region_state{frc,Unreachable}": 1, "service_router_failover_region_state{frc,Lost}": 0, "service_router_failover_region_state{frc,Drained}": 0,
		"service_router_failover_active{external-dns-weu,weu,neu}": 12, "service_router_failover_active{external-dns-frc,weu,neu}": 3,
		"service_router_failover_active{external-dns-weu,frc,neu}": 0, "service_router_failover_active{external-dns-frc,frc,neu}": 0,
	}, got, "every zone with failover settings, for every region known, 0 included")
}
