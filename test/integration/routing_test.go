package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

var (
	activeMode = routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}
	weuBound   = routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeRegionBound, SourceRegion: "weu"}
	lbIP       = []corev1.LoadBalancerIngress{{IP: "10.123.45.67"}}
)

// TestActiveMode_OneRegion is the architecture document's Active-mode example in the WEU cluster:
// one CNAME for external-dns-weu, the address records for every zone, the Istio Gateway host.
func TestActiveMode_OneRegion(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	route := f.route("", "api-route", "api", gw.Name)

	host, target := f.hostname("api", "example.com"), "aks01-weu-internal.example.com"
	eps := f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu")
	ep := eps[0]
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/managed-by": "service-router-operator",
		"router.io/controller":         "external-dns-weu",
		"router.io/region":             "weu",
		"router.io/serviceroute":       "api-route",
		"router.io/source-namespace":   f.ns,
	}, ep.Labels)
	assert.Equal(t, "external-dns-weu", ep.Annotations["external-dns.alpha.kubernetes.io/controller"])
	require.Len(t, ep.OwnerReferences, 1)
	assert.Equal(t, "ServiceRoute", ep.OwnerReferences[0].Kind)
	assert.Equal(t, route.UID, ep.OwnerReferences[0].UID)
	assert.True(t, *ep.OwnerReferences[0].Controller)

	got := f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	assert.Equal(t, host, got.Status.Hostname)
	assert.Equal(t, target, got.Status.TargetHostname)
	assert.Equal(t, "api-route-external-dns-weu", got.Status.DNSEndpoint)
	assert.Equal(t, []routingv1alpha1.ManagedEndpoint{{Name: "api-route-external-dns-weu", Controller: "external-dns-weu", Region: "weu"}}, got.Status.Endpoints)

	pol := f.waitPolicy(routingv1alpha1.PhaseActive, routingv1alpha1.ReasonPolicyActive)
	assert.True(t, pol.Status.Active)
	assert.Equal(t, []string{"external-dns-weu"}, pol.Status.ActiveControllers)

	ig := f.waitIstioHosts(gw.Name, istioHost(f.ns, host))
	assert.Equal(t, map[string]string{"istio": f.controller}, ig.Spec.Selector)
	assert.Equal(t, uint32(443), ig.Spec.Servers[0].Port.Number)
	assert.Equal(t, "HTTPS", ig.Spec.Servers[0].Port.Protocol)
	assert.Equal(t, "SIMPLE", ig.Spec.Servers[0].Tls.Mode.String())
	assert.Equal(t, "cert-default-gateway", ig.Spec.Servers[0].Tls.CredentialName)
	assert.Equal(t, gw.UID, ig.OwnerReferences[0].UID)

	addr := f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu", "external-dns-neu")
	for _, ep := range addr {
		assert.Equal(t, ep.Labels["router.io/controller"], ep.Annotations["external-dns.alpha.kubernetes.io/controller"],
			"address records carry the controller annotation, or ExternalDNS's annotation filter skips them")
		assert.Equal(t, "gateway-service", ep.Labels["router.io/resource-type"])
		assert.Equal(t, "internal", ep.Labels["router.io/target-postfix"])
		assert.Equal(t, f.gatewayNS, ep.Namespace, "address records live beside the ingress Service")
	}

	gwStatus := f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	assert.Equal(t, "10.123.45.67", gwStatus.Status.LoadBalancerIP)
	assert.Equal(t, target, gwStatus.Status.TargetHostname)
	assert.Equal(t, int32(1), gwStatus.Status.Hosts)

	ci := &clusterv1alpha1.ClusterIdentity{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKey{Name: "cluster-identity"}, ci))
	assert.True(t, meta.IsStatusConditionTrue(ci.Status.Conditions, "Ready"))
	assert.Equal(t, clusterv1alpha1.PhaseActive, ci.Status.Phase)

	waitFor(t, "DNSConfiguration status to list the controllers", func() string {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		require.NoError(t, env.Client.Get(f.ctx, client.ObjectKey{Name: "dns-config"}, cfg))
		if fmt.Sprint(cfg.Status.Controllers) != "[external-dns-weu external-dns-neu]" || !meta.IsStatusConditionTrue(cfg.Status.Conditions, "Ready") {
			return fmt.Sprintf("controllers %v, conditions %v", cfg.Status.Controllers, cfg.Status.Conditions)
		}
		return ""
	})
}

// TestActiveMode_AdoptedRegion: WEU adopting FRC writes the FRC zone too, pointing at WEU.
func TestActiveMode_AdoptedRegion(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity("frc"))
	f.setControllers("weu", "neu", "frc")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)

	eps := f.waitRouteEndpoints(f.ns, "api-route", f.hostname("api", "example.com"), "aks01-weu-internal.example.com", "external-dns-weu", "external-dns-frc")
	assert.Equal(t, "frc", eps[0].Labels["router.io/region"])
	pol := f.waitPolicy(routingv1alpha1.PhaseActive, routingv1alpha1.ReasonPolicyActive)
	assert.Equal(t, []string{"external-dns-weu", "external-dns-frc"}, pol.Status.ActiveControllers, "in DNSConfiguration order")
}

// TestRegionBound_SourceRegionWritesEveryZone and outside the source region nothing is written.
func TestRegionBound_InAndOutsideTheSourceRegion(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "frc", "neu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.policy(weuBound)
	f.route("", "api-route", "api", gw.Name)
	host := f.hostname("api", "example.com")
	f.waitRouteEndpoints(f.ns, "api-route", host, "aks01-weu-internal.example.com", "external-dns-weu", "external-dns-frc", "external-dns-neu")
	pol := f.waitPolicy(routingv1alpha1.PhaseActive, routingv1alpha1.ReasonPolicyActive)
	assert.Equal(t, []string{"external-dns-weu", "external-dns-frc", "external-dns-neu"}, pol.Status.ActiveControllers)

	// The same policy seen from the NEU cluster.
	f.setIdentity(clusterv1alpha1.ClusterIdentitySpec{Region: "neu", Cluster: "aks02", Domain: "example.com", EnvironmentLetter: "d"})
	pol = f.waitPolicy(routingv1alpha1.PhaseInactive, routingv1alpha1.ReasonPolicyInactive)
	assert.False(t, pol.Status.Active)
	assert.Empty(t, pol.Status.ActiveControllers)
	f.waitRouteEndpoints(f.ns, "api-route", host, "" /* none */)
	r := f.waitRoute(f.ns, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonDNSPolicyInactive)
	assert.Empty(t, r.Status.Endpoints)
	assert.Empty(t, r.Status.DNSEndpoint)
	f.waitIstioHosts(gw.Name /* no Ready route: no Istio Gateway */)
}

// TestSourceClusterFilter: a policy for another cluster of the same region is inactive.
func TestSourceClusterFilter(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.policy(routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeRegionBound, SourceRegion: "weu", SourceCluster: "aks09"})
	f.route("", "api-route", "api", gw.Name)
	f.waitPolicy(routingv1alpha1.PhaseInactive, routingv1alpha1.ReasonPolicyInactive)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonDNSPolicyInactive)
	assert.Empty(t, routeEndpoints(t, f.ns, "api-route"))

	f.updatePolicy(routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeRegionBound, SourceRegion: "weu", SourceCluster: "aks01"})
	f.waitRouteEndpoints(f.ns, "api-route", f.hostname("api", "example.com"), "aks01-weu-internal.example.com", "external-dns-weu", "external-dns-neu")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
}

// TestPolicySwitch_ActiveToRegionBoundAndBack never leaves an endpoint for an inactive controller.
func TestPolicySwitch_ActiveToRegionBoundAndBack(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	host, target := f.hostname("api", "example.com"), "aks01-weu-internal.example.com"
	f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu")

	f.updatePolicy(weuBound)
	f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu", "external-dns-neu")
	f.updatePolicy(activeMode)
	f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu")
	waitFor(t, "the route status to list only the WEU endpoint", func() string {
		r := f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
		if len(r.Status.Endpoints) != 1 {
			return fmt.Sprintf("status lists %v", r.Status.Endpoints)
		}
		return ""
	})
}

// TestClusterIdentityChange_EverythingFollows: a new domain and region move every CNAME, address
// record and Istio host.
func TestClusterIdentityChange_EverythingFollows(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	f.route("", "web-route", "web", gw.Name)
	f.waitRouteEndpoints(f.ns, "api-route", f.hostname("api", "example.com"), "aks01-weu-internal.example.com", "external-dns-weu")
	f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.com")), istioHost(f.ns, f.hostname("web", "example.com")))

	f.setIdentity(clusterv1alpha1.ClusterIdentitySpec{Region: "neu", Cluster: "aks01", Domain: "example.org", EnvironmentLetter: "d"})
	target := "aks01-neu-internal.example.org"
	f.waitRouteEndpoints(f.ns, "api-route", f.hostname("api", "example.org"), target, "external-dns-neu")
	f.waitRouteEndpoints(f.ns, "web-route", f.hostname("web", "example.org"), target, "external-dns-neu")
	f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.org")), istioHost(f.ns, f.hostname("web", "example.org")))
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu", "external-dns-neu")
	waitFor(t, "the Gateway status to show the new target hostname", func() string {
		g := f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
		if g.Status.TargetHostname != target {
			return "targetHostname " + g.Status.TargetHostname
		}
		return ""
	})
}

// TestDNSConfigurationChange_AddAndRemoveControllers keeps exactly the active controllers' endpoints.
func TestDNSConfigurationChange_AddAndRemoveControllers(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	f.policy(weuBound)
	f.route("", "api-route", "api", gw.Name)
	host, target := f.hostname("api", "example.com"), "aks01-weu-internal.example.com"
	a := map[string][]string{"A": {"10.123.45.67"}}
	f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu", "external-dns-neu")
	f.waitAddressRecords("internal", target, a, "external-dns-weu", "external-dns-neu")

	f.setControllers("weu", "neu", "frc")
	f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu", "external-dns-neu", "external-dns-frc")
	f.waitAddressRecords("internal", target, a, "external-dns-weu", "external-dns-neu", "external-dns-frc")

	f.setControllers("weu")
	f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu")
	f.waitAddressRecords("internal", target, a, "external-dns-weu")
}

// TestIngressService_AddressKinds: IP changes, a hostname load balancer and IPv6.
func TestIngressService_AddressKinds(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	target := "aks01-weu-internal.example.com"
	g := f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerNotFound)
	assert.Contains(t, g.Status.Conditions[0].Message, "istio="+f.controller)

	svc := f.ingressService()
	f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerAddressPending)
	assert.Empty(t, f.addressEndpoints(), "no address yet: no record")

	f.setLoadBalancer(svc, corev1.LoadBalancerIngress{IP: "10.0.0.1"})
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.0.0.1"}}, "external-dns-weu")
	f.setLoadBalancer(svc, corev1.LoadBalancerIngress{IP: "10.0.0.2"}, corev1.LoadBalancerIngress{IP: "10.0.0.3"})
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.0.0.2", "10.0.0.3"}}, "external-dns-weu")
	waitFor(t, "the Gateway status to show the first address", func() string {
		g := f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonNoServiceRoutes)
		if g.Status.LoadBalancerIP != "10.0.0.2" {
			return "loadBalancerIP " + g.Status.LoadBalancerIP
		}
		return ""
	})

	f.setLoadBalancer(svc, corev1.LoadBalancerIngress{IP: "fd00::1"})
	f.waitAddressRecords("internal", target, map[string][]string{"AAAA": {"fd00::1"}}, "external-dns-weu")
	f.setLoadBalancer(svc, corev1.LoadBalancerIngress{IP: "10.0.0.9"}, corev1.LoadBalancerIngress{IP: "fd00::9"})
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.0.0.9"}, "AAAA": {"fd00::9"}}, "external-dns-weu")

	f.setLoadBalancer(svc, corev1.LoadBalancerIngress{Hostname: "lb-1234.elb.example.net"})
	f.waitAddressRecords("internal", target, map[string][]string{"CNAME": {"lb-1234.elb.example.net"}}, "external-dns-weu")

	// The load balancer losing its address (an ingress being re-created or upgraded) says nothing
	// definite about the records: they are kept, and the Gateway says what is going on.
	kept := f.addressEndpoints()
	f.setLoadBalancer(svc)
	f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerAddressPending)
	f.waitAddressRecords("internal", target, map[string][]string{"CNAME": {"lb-1234.elb.example.net"}}, "external-dns-weu")
	require.NoError(t, env.Client.Delete(f.ctx, svc))
	f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerNotFound)
	after := f.addressEndpoints()
	require.Len(t, after, 1)
	assert.Equal(t, kept[0].UID, after[0].UID, "the address record outlives its Service")

	// Only the last Gateway of the entry point going is a definite answer.
	require.NoError(t, env.Client.Delete(f.ctx, gw))
	f.waitAddressRecords("internal", target, nil /* none */)
}

// TestDeleteServiceRoute removes its endpoints (garbage collector) and its Istio host.
func TestDeleteServiceRoute(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.policy(weuBound)
	api := f.route("", "api-route", "api", gw.Name)
	f.route("", "web-route", "web", gw.Name)
	f.waitRouteEndpoints(f.ns, "api-route", f.hostname("api", "example.com"), "aks01-weu-internal.example.com", "external-dns-weu", "external-dns-neu")
	f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.com")), istioHost(f.ns, f.hostname("web", "example.com")))

	require.NoError(t, env.Client.Delete(f.ctx, api))
	f.waitRouteEndpoints(f.ns, "api-route", "", "" /* none */)
	f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("web", "example.com")))
}

// TestDeleteGateway removes the Istio Gateway and the address records; its routes fail.
func TestDeleteGateway(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	ig := f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.com")))
	f.waitAddressRecords("internal", "aks01-weu-internal.example.com", map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu")

	require.NoError(t, env.Client.Delete(f.ctx, gw))
	waitGone(t, ig)
	f.waitAddressRecords("internal", "", nil /* none */)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonGatewayNotFound)
	assert.Empty(t, routeEndpoints(t, f.ns, "api-route"), "a route without its gateway keeps no CNAME to a name that no longer resolves")
}

// TestRouteBeforeItsDependencies converges once the identity, policy and gateway appear.
func TestRouteBeforeItsDependencies(t *testing.T) {
	f := newFixture(t)
	f.deleteIdentity()
	f.setControllers("weu")
	startOperator(t, env.Config)

	f.route("", "api-route", "api", "default-gateway")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonClusterIdentityNotFound)
	f.setIdentity(weuIdentity())
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonDNSPolicyNotFound)
	f.policy(activeMode)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonGatewayNotFound)
	f.gateway("default-gateway", "internal")
	f.waitRouteEndpoints(f.ns, "api-route", f.hostname("api", "example.com"), "aks01-weu-internal.example.com", "external-dns-weu")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
}

// TestFailover_StandInSaysWhereItCanTakeOver: a stand-in takes over only names it publishes. In a
// cluster of the stand-in region that adopts no other region, the policy says its names cannot
// move there (StandIn=False, RegionsNotAdopted, naming the zone); once the ClusterIdentity adopts
// the region, that it can (StandIn=True, StandsIn); Ready stays True throughout.
func TestFailover_StandInSaysWhereItCanTakeOver(t *testing.T) {
	f := newFixture(t)
	neu := clusterv1alpha1.ClusterIdentitySpec{Region: "neu", Cluster: "aks02", Domain: "example.com", EnvironmentLetter: "d"}
	f.setIdentity(neu)
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName}}
	_, err := createOrUpdate(f.ctx, cfg, func() error {
		cfg.Spec.ExternalDNSControllers = nil
		for _, r := range []string{"weu", "neu"} {
			cfg.Spec.ExternalDNSControllers = append(cfg.Spec.ExternalDNSControllers, clusterv1alpha1.ExternalDNSController{Name: "external-dns-" + r, Region: r,
				Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{"127.0.0.1:9"}},
				Failover:     &clusterv1alpha1.ZoneFailover{OwnerID: "external-dns-" + r + "-aks02", TXTPrefix: r + "-d-"}})
		}
		return nil
	})
	require.NoError(t, err)
	startOperator(t, env.Config)
	f.policy(routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive, Failover: &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}})

	standIn := func(status metav1.ConditionStatus, reason, message string) func() string {
		return func() string {
			pol := &routingv1alpha1.DNSPolicy{}
			if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: "dns"}, pol); err != nil {
				return err.Error()
			}
			c := meta.FindStatusCondition(pol.Status.Conditions, routingv1alpha1.ConditionStandIn)
			ready := meta.FindStatusCondition(pol.Status.Conditions, routingv1alpha1.ConditionReady)
			switch {
			case c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message):
				return fmt.Sprintf("StandIn: %+v", c)
			case ready == nil || ready.Status != metav1.ConditionTrue:
				return fmt.Sprintf("Ready: %+v", ready)
			}
			return ""
		}
	}
	waitFor(t, "StandIn=False: weu not adopted", standIn(metav1.ConditionFalse, routingv1alpha1.ReasonRegionsNotAdopted, "does not publish its names in the zones of weu"))
	neu.AdoptsRegions = []string{"weu"}
	f.setIdentity(neu)
	waitFor(t, "StandIn=True once weu is adopted", standIn(metav1.ConditionTrue, routingv1alpha1.ReasonStandsIn, "in the zones of weu and can take them over"))
}
