package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istioapinetworkingv1 "istio.io/api/networking/v1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
)

// controllerNames are the six controllers, as their metrics label them.
var controllerNames = []string{"clusteridentity", "dnsconfiguration", "dnspolicy", "serviceroute", "gateway", "ingressdns"}

// TestMetrics_Scenario builds a cluster with something in every state the metrics distinguish —
// a Ready route, a hostname conflict, a missing gateway, foreign objects blocking a route, a
// gateway and a gateway entry point, a gateway without a load balancer — then gathers
// controller-runtime's registry (what /metrics serves) and checks the values, the lint, the
// alert rules (parsed with Prometheus' rule and PromQL parsers) and the Grafana dashboard
// against it, and docs/METRICS.md.
func TestMetrics_Scenario(t *testing.T) {
	f := newFixture(t)
	otherNS := newNamespace(t, "other")
	t.Cleanup(func() { _ = env.Client.Delete(f.ctx, namespaceObject(otherNS)) })
	f.setIdentity(weuIdentity())
	// The weu zone is verified: it answers api and admin through their gateways.
	weuZone := startZone(t)
	weuZone.Set(f.hostname("api", "example.com")+". 300 IN CNAME aks01-weu-internal.example.com.",
		f.hostname("admin", "example.com")+". 300 IN CNAME aks01-weu-public.example.com.",
		"aks01-weu-internal.example.com. 300 IN A 10.123.45.67", "aks01-weu-public.example.com. 300 IN A 10.123.45.67")
	f.setVerifiedControllers([]string{"weu", "neu"}, map[string]string{"weu": weuZone.Addr})
	// Regional failover in the weu zone: aks02 (neu) beats there; no address of its gateway is
	// published, so nothing is probed and it stays Serving.
	weuZone.Set(`_router-heartbeat.aks02.neu.example.com. 10 IN TXT "` + failover.HeartbeatValue(failover.Heartbeat{At: time.Now(), GatewayAnswers: true, Owner: "external-dns-weu-aks02"}) + `"`)
	f.setFailover("weu", &clusterv1alpha1.ZoneFailover{OwnerID: "external-dns-weu-aks01", TXTPrefix: "weu-d-"})
	noLB := "nolb-" + f.controller

	// Objects of others, under names the operator wants: a route's DNSEndpoint, a gateway entry
	// point's DNSEndpoint for external-dns-neu, and a gateway's Istio Gateway.
	foreignRecords := externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{{DNSName: "legacy.example.com", RecordType: "A", Targets: endpoint.Targets{"192.0.2.1"}}}}
	for _, obj := range []client.Object{
		&externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Name: "blocked-route-external-dns-weu", Namespace: f.ns}, Spec: foreignRecords},
		&externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gateway-controller-%s-internal-external-dns-neu", f.controller), Namespace: f.gatewayNS}, Spec: foreignRecords},
		&istionetworkingv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Name: "taken-gateway", Namespace: f.gatewayNS},
			Spec: istioapinetworkingv1.Gateway{Selector: map[string]string{"istio": "legacy"}, Servers: []*istioapinetworkingv1.Server{{
				Port: &istioapinetworkingv1.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"legacy.example.com"}}}},
		},
	} {
		require.NoError(t, env.Client.Create(f.ctx, obj))
	}

	started := time.Now()
	startOperatorWith(t, env.Config, operatorOptions{
		namespaces:     []string{f.ns, f.gatewayNS, otherNS},
		leaderElection: true, leaseNamespace: f.ns, verification: fastVerification,
	})

	gw := f.gateway("default-gateway", "internal")
	f.gateway("taken-gateway", "public")
	nolb := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "nolb-gateway", Namespace: f.gatewayNS},
		Spec: routingv1alpha1.GatewaySpec{Controller: noLB, CredentialName: "cert", TargetPostfix: "internal"}}
	require.NoError(t, env.Client.Create(f.ctx, nolb))
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	f.route("", "web-route", "web", "missing-gateway")
	f.route("", "blocked-route", "blocked", gw.Name)
	f.route("", "admin-route", "admin", "taken-gateway")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has a resolution of one second
	f.route(otherNS, "api-copy", "api", gw.Name)

	f.waitRoute(otherNS, "api-copy", routingv1alpha1.PhasePending, routingv1alpha1.ReasonHostnameConflict)
	f.waitRoute(f.ns, "web-route", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonGatewayNotFound)
	f.waitRoute(f.ns, "blocked-route", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonOwnershipConflict)
	f.waitRoute(f.ns, "admin-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitGateway("default-gateway", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	f.waitGateway("taken-gateway", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonOwnershipConflict)
	f.waitGateway("nolb-gateway", routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerNotFound)
	f.waitPolicy(routingv1alpha1.PhaseActive, routingv1alpha1.ReasonPolicyActive)

	// The state metrics read the operator's cache: poll until it has caught up with the statuses.
	want := map[string]float64{
		`service_router_resources{kind="ClusterIdentity",phase="Active",ready="True",reason="ValidationSucceeded"}`:  1,
		`service_router_resources{kind="DNSConfiguration",phase="Active",ready="True",reason="ConfigurationValid"}`:  1,
		`service_router_resources{kind="DNSPolicy",phase="Active",ready="True",reason="PolicyActive"}`:               1,
		`service_router_resources{kind="Gateway",phase="Active",ready="True",reason="GatewayCreated"}`:               1,
		`service_router_resources{kind="Gateway",phase="Failed",ready="False",reason="OwnershipConflict"}`:           1,
		`service_router_resources{kind="Gateway",phase="Pending",ready="False",reason="LoadBalancerNotFound"}`:       1,
		`service_router_resources{kind="ServiceRoute",phase="Active",ready="True",reason="ReconciliationSucceeded"}`: 2,
		`service_router_resources{kind="ServiceRoute",phase="Failed",ready="False",reason="GatewayNotFound"}`:        1,
		`service_router_resources{kind="ServiceRoute",phase="Failed",ready="False",reason="OwnershipConflict"}`:      1,
		`service_router_resources{kind="ServiceRoute",phase="Pending",ready="False",reason="HostnameConflict"}`:      1,
		`service_router_conflicts{kind="ServiceRoute",reason="HostnameConflict"}`:                                    1,
		`service_router_conflicts{kind="ServiceRoute",reason="OwnershipConflict"}`:                                   1,
		`service_router_conflicts{kind="Gateway",reason="OwnershipConflict"}`:                                        1,
		`service_router_conflicts{kind="IngressDNS",reason="OwnershipConflict"}`:                                     1,
		`service_router_cluster_identity_info{cluster="aks01",domain="example.com",environment="d",region="weu"}`:    1,
		`service_router_active_dnspolicies{}`:                                                     1,
		`service_router_dnspolicy_active_controllers{external_dns_controller="external-dns-weu"}`: 1,
		// api-route and admin-route; blocked-route's only endpoint is taken.
		`service_router_dns_records{external_dns_controller="external-dns-weu",record_type="CNAME",source="serviceroute"}`: 2,
		// Entry points internal (its neu record is taken) and public; none for the gateway without a load balancer.
		`service_router_dns_records{external_dns_controller="external-dns-weu",record_type="A",source="gateway"}`: 2,
		`service_router_dns_records{external_dns_controller="external-dns-neu",record_type="A",source="gateway"}`: 1,
		// default-gateway serves api; taken-gateway's Istio Gateway is someone else's.
		fmt.Sprintf(`service_router_istio_gateway_hosts{istio_controller=%q}`, f.controller): 1,
		// api-route and admin-route, answered by the verified weu zone.
		`service_router_zone_routes{external_dns_controller="external-dns-weu",state="Published"}`:   2,
		`service_router_zone_routes{external_dns_controller="external-dns-weu",state="Pending"}`:     0,
		`service_router_zone_routes{external_dns_controller="external-dns-weu",state="Drifted"}`:     0,
		`service_router_zone_routes{external_dns_controller="external-dns-weu",state="Unreachable"}`: 0,
		`service_router_zone_routes{external_dns_controller="external-dns-weu",state="Unverified"}`:  0,
		`service_router_zone_routes{external_dns_controller="external-dns-neu",state="Published"}`:   0,
		`service_router_zone_routes{external_dns_controller="external-dns-neu",state="Pending"}`:     0,
		`service_router_zone_routes{external_dns_controller="external-dns-neu",state="Drifted"}`:     0,
		`service_router_zone_routes{external_dns_controller="external-dns-neu",state="Unreachable"}`: 0,
		`service_router_zone_routes{external_dns_controller="external-dns-neu",state="Unverified"}`:  0,
		// aks02 of region neu, known from its heartbeat in the weu zone.
		`service_router_failover_region_state{region="neu",state="Serving"}`:          1,
		`service_router_failover_region_state{region="neu",state="Unreachable"}`:      0,
		`service_router_failover_region_state{region="neu",state="Lost"}`:             0,
		`service_router_failover_region_state{region="neu",state="Drained"}`:          0,
		`service_router_failover_active{from="neu",to="weu",zone="external-dns-weu"}`: 0,
	}
	state := []string{"service_router_resources", "service_router_conflicts", "service_router_cluster_identity_info",
		"service_router_active_dnspolicies", "service_router_dnspolicy_active_controllers", "service_router_dns_records",
		"service_router_istio_gateway_hosts", "service_router_zone_routes", "service_router_failover_region_state", "service_router_failover_active"}
	var families []*dto.MetricFamily
	waitFor(t, "the state metrics", func() string {
		families = gather(t)
		return diffValues(only(seriesValues(families, "service_router_"), state...), want)
	})

	t.Run("controller health", func(t *testing.T) {
		values := seriesValues(families, "service_router_controller_")
		now := float64(time.Now().Unix()) + 1
		for _, c := range controllerNames {
			label := fmt.Sprintf("{controller=%q}", c)
			assert.Equal(t, 1.0, values["service_router_controller_last_reconcile_success"+label], c)
			assert.Equal(t, 0.0, values["service_router_controller_failing_requests"+label], c)
			for _, ts := range []string{"last_reconcile_timestamp_seconds", "last_success_timestamp_seconds"} {
				v := values["service_router_controller_"+ts+label]
				assert.True(t, v >= float64(started.Unix()) && v <= now, "%s of %s is %v, not within the test", ts, c, v)
			}
		}
	})

	t.Run("longest not ready", func(t *testing.T) {
		values := seriesValues(families, "service_router_longest_not_ready_seconds")
		var keys []string
		// Condition times have a resolution of one second.
		limit := time.Since(started).Seconds() + 1
		for k, v := range values {
			keys = append(keys, k)
			assert.True(t, v >= 0 && v <= limit, "%s = %v, longer than the test", k, v)
		}
		assert.ElementsMatch(t, []string{
			`service_router_longest_not_ready_seconds{kind="Gateway",reason="LoadBalancerNotFound"}`,
			`service_router_longest_not_ready_seconds{kind="Gateway",reason="OwnershipConflict"}`,
			`service_router_longest_not_ready_seconds{kind="ServiceRoute",reason="GatewayNotFound"}`,
			`service_router_longest_not_ready_seconds{kind="ServiceRoute",reason="HostnameConflict"}`,
			`service_router_longest_not_ready_seconds{kind="ServiceRoute",reason="OwnershipConflict"}`,
		}, keys)
	})

	t.Run("build info", func(t *testing.T) {
		values := seriesValues(families, "service_router_build_info")
		require.Len(t, values, 1)
		for k, v := range values {
			assert.True(t, strings.HasPrefix(k, `service_router_build_info{version="`), k)
			assert.Equal(t, 1.0, v)
		}
	})

	t.Run("standard controller-runtime metrics are kept", func(t *testing.T) {
		names := exportedSeriesNames(families)
		for _, name := range []string{
			"controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_time_seconds_bucket",
			"workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds_bucket",
			"rest_client_requests_total", "leader_election_master_status",
		} {
			assert.True(t, names[name], "%s is not exported", name)
		}
	})

	var referenced []string
	t.Run("alert rules reference exported metrics and have runbooks", func(t *testing.T) {
		referenced = append(referenced, checkAlertRules(t, exportedSeriesNames(families))...)
	})
	t.Run("dashboard references exported metrics", func(t *testing.T) {
		referenced = append(referenced, checkDashboard(t, exportedSeriesNames(families))...)
	})
	t.Run("docs/METRICS.md documents the registry", func(t *testing.T) {
		checkMetricsDoc(t, families, referenced)
	})

	t.Run("every metric passes promlint", func(t *testing.T) {
		problems, err := testutil.GatherAndLint(ctrlmetrics.Registry)
		require.NoError(t, err)
		assert.Empty(t, problems)
	})
}
