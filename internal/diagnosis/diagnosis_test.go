package diagnosis

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/routerplan"
)

// cluster is the cluster of the tests, as manifests: region weu with ExternalDNS controllers in weu
// and neu, the Gateway gw in istio-system (backend %s) with its ingress Service at 10.0.0.1, and
// namespace app with an Active DNSPolicy and the routes r0 and r1 of application shop.
const cluster = `apiVersion: cluster.router.io/v1alpha1
kind: ClusterIdentity
metadata: {name: cluster-identity}
spec: {region: weu, cluster: aks01, domain: example.com, environmentLetter: d}
---
apiVersion: cluster.router.io/v1alpha1
kind: DNSConfiguration
metadata: {name: dns-config}
spec: {externalDNSControllers: [{name: external-dns-weu, region: weu}, {name: external-dns-neu, region: neu}]}
---
apiVersion: v1
kind: Namespace
metadata: {name: istio-system}
---
apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: routing.router.io/v1alpha1
kind: Gateway
metadata: {name: gw, namespace: istio-system}
spec: {controller: ingress, credentialName: cert, targetPostfix: internal, backend: %[1]s}
---
apiVersion: v1
kind: Service
metadata: {name: ingress, namespace: istio-system, labels: {istio: ingress}}
spec: {type: LoadBalancer}
status: {loadBalancer: {ingress: [{ip: 10.0.0.1}]}}
---
apiVersion: routing.router.io/v1alpha1
kind: DNSPolicy
metadata: {name: dns}
spec: {mode: Active}
---
apiVersion: routing.router.io/v1alpha1
kind: ServiceRoute
metadata: {name: r0}
spec: {serviceName: svc0, gatewayName: gw, gatewayNamespace: istio-system, environment: dev, application: shop}
---
apiVersion: routing.router.io/v1alpha1
kind: ServiceRoute
metadata: {name: r1}
spec: {serviceName: svc1, gatewayName: gw, gatewayNamespace: istio-system, environment: dev, application: shop}`

const (
	host0  = "svc0-ns-d-dev-shop.example.com"
	target = "aks01-weu-internal.example.com"
)

// healthy is the cluster with gw's backend as the operator leaves it (its prediction), once
// ExternalDNS processed every DNSEndpoint and verification found every zone published; with the
// GatewayAPI backend the Gateway API Gateway reports the address 10.0.0.1.
func healthy(t *testing.T, backend routingv1alpha1.GatewayBackend) *routerplan.World {
	t.Helper()
	objs, err := routerplan.ReadManifests([]string{"-"}, strings.NewReader(fmt.Sprintf(cluster, backend)))
	require.NoError(t, err)
	w := &routerplan.World{}
	_, err = routerplan.Overlay(w, objs, false, "app", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	p := routerplan.Predict(w, routerplan.DefaultSettings)
	if backend == routingv1alpha1.BackendGatewayAPI {
		require.Len(t, p.GatewayAPIGateways, 1)
		ip := gwv1.IPAddressType
		p.GatewayAPIGateways[0].Status.Addresses = []gwv1.GatewayStatusAddress{{Type: &ip, Value: "10.0.0.1"}}
		w.GatewayAPIGateways, w.ListenerSets = p.GatewayAPIGateways, p.ListenerSets
		p = routerplan.Predict(w, routerplan.DefaultSettings) // the address records follow the address
	}
	w.Endpoints = p.Endpoints
	for _, ep := range w.Endpoints {
		ep.Generation, ep.Status.ObservedGeneration = 1, 1
	}
	for _, r := range w.Routes {
		r.Status = p.Routes[key(r)].Status
		for i := range r.Status.Zones {
			r.Status.Zones[i].State = routingv1alpha1.ZonePublished
			r.Status.Zones[i].Answer = "CNAME aks01-weu-internal.example.com"
		}
		r.Status.ObservedGeneration = r.Generation
	}
	meta.SetStatusCondition(&w.Gateways[0].Status.Conditions, metav1.Condition{Type: routingv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: routingv1alpha1.ReasonGatewayCreated})
	w.Gateways[0].Status.TargetHostname, w.Gateways[0].Status.LoadBalancerIP = target, "10.0.0.1"
	return w
}

func TestPathOf_FirstProblemAlongThePath(t *testing.T) {
	for _, tt := range []struct {
		name       string
		breakIt    func(w *routerplan.World)
		wantReason string
		wantAnchor string
	}{
		{"nothing wrong", func(*routerplan.World) {}, "", ""},
		{"the route's own decision comes first", func(w *routerplan.World) {
			meta.SetStatusCondition(&w.Routes[0].Status.Conditions, metav1.Condition{Type: routingv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: routingv1alpha1.ReasonHostnameConflict, Message: "claimed"})
		}, routingv1alpha1.ReasonHostnameConflict, "#servicerouterhostnameconflict"},
		{"a reason without a runbook links the route table", func(w *routerplan.World) {
			meta.SetStatusCondition(&w.Routes[0].Status.Conditions, metav1.Condition{Type: routingv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: routingv1alpha1.ReasonDNSPolicyInactive, Message: "elsewhere"})
		}, routingv1alpha1.ReasonDNSPolicyInactive, "#serviceroute"},
		{"a status behind its spec", func(w *routerplan.World) { w.Routes[0].Generation = 2 }, "StatusBehind", "#servicerouteroperatornotreconciling"},
		{"the Gateway without a load balancer", func(w *routerplan.World) {
			meta.SetStatusCondition(&w.Gateways[0].Status.Conditions, metav1.Condition{Type: routingv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
				Reason: routingv1alpha1.ReasonLoadBalancerNotFound, Message: "no Service"})
		}, routingv1alpha1.ReasonLoadBalancerNotFound, "#serviceroutergatewaywithoutloadbalancer"},
		{"ExternalDNS has not read the record", func(w *routerplan.World) { w.Endpoints[indexOf(w, "app/r0-external-dns-weu")].Generation = 2 }, "NotProcessed", "#servicerouterzonenotpublishing"},
		{"the zone answers something else", func(w *routerplan.World) {
			w.Routes[0].Status.Zones[0].State, w.Routes[0].Status.Zones[0].Answer = routingv1alpha1.ZoneDrifted, "CNAME old.example.com"
		}, routingv1alpha1.ReasonZonesDrifted, "#servicerouterzonedrifted"},
		{"the target has no address in the zone", func(w *routerplan.World) {
			w.Endpoints = slices.DeleteFunc(w.Endpoints, func(ep *externaldnsv1alpha1.DNSEndpoint) bool { return ep.Labels[naming.LabelIstioController] != "" })
		}, "AddressRecordMissing", "#serviceroutergatewaywithoutloadbalancer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := healthy(t, routingv1alpha1.BackendIstioGateway)
			tt.breakIt(w)
			p := PathOf(w, w.Routes[0])
			if tt.wantReason == "" {
				assert.Nil(t, p.Problem)
				return
			}
			require.NotNil(t, p.Problem)
			assert.Equal(t, tt.wantReason, p.Problem.Reason)
			assert.Equal(t, DocsBase+tt.wantAnchor, p.Problem.Doc)
		})
	}
}

func indexOf(w *routerplan.World, k string) int {
	return slices.IndexFunc(w.Endpoints, func(ep *externaldnsv1alpha1.DNSEndpoint) bool { return key(ep) == k })
}

func TestPathOf_EveryZoneWithItsRecordAndTarget(t *testing.T) {
	w := healthy(t, routingv1alpha1.BackendIstioGateway)
	p := PathOf(w, w.Routes[0])
	assert.Equal(t, "svc0-ns-d-dev-shop.example.com", p.Hostname)
	assert.Equal(t, []ZonePath{{Controller: "external-dns-weu", Region: "weu", DNSEndpoint: "app/r0-external-dns-weu", Exists: true, Processed: true,
		State: "Published", Answer: "CNAME aks01-weu-internal.example.com", Addresses: []string{"aks01-weu-internal.example.com A 10.0.0.1 (TTL 300)"}}}, p.Zones)
	assert.Contains(t, p.Policy, "dns (Active)")
	var b strings.Builder
	require.NoError(t, WritePath(&b, p))
	for _, want := range []string{"ServiceRoute app/r0", "hostname   svc0-ns-d-dev-shop.example.com → aks01-weu-internal.example.com",
		"external-dns-weu  weu     app/r0-external-dns-weu  yes", "Nothing is wrong"} {
		assert.Contains(t, b.String(), want)
	}
}

func TestFindRoute_ByNameNamespaceOrHostname(t *testing.T) {
	w := healthy(t, routingv1alpha1.BackendIstioGateway)
	for _, arg := range []string{"r1", "app/r1", "svc1-ns-d-dev-shop.example.com"} {
		r, err := FindRoute(w, arg, "app")
		require.NoError(t, err, arg)
		assert.Equal(t, "r1", r.Name, arg)
	}
	_, err := FindRoute(w, "r1", "elsewhere")
	assert.ErrorContains(t, err, "no ServiceRoute is named r1")
	// A route without status yet is found by the hostname it would generate.
	w.Routes[1].Status = routingv1alpha1.ServiceRouteStatus{}
	r, err := FindRoute(w, "svc1-ns-d-dev-shop.example.com", "")
	require.NoError(t, err)
	assert.Equal(t, "r1", r.Name)
}

func TestSummaryOf_RoutesZonesDeletionsAndBudget(t *testing.T) {
	w := healthy(t, routingv1alpha1.BackendIstioGateway)
	meta.SetStatusCondition(&w.Configuration.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ConditionDeletionsHeld, Status: metav1.ConditionTrue,
		Reason: clusterv1alpha1.ReasonMassDeletionHeld, Message: "12 DNSEndpoint deletion(s) ... are held"})
	w.Configuration.Status.Verification = []clusterv1alpha1.ZoneVerificationStatus{{Controller: "external-dns-weu", Routes: 2, Published: 2}}
	s := SummaryOf(w, 0)
	assert.Equal(t, map[string]int{"True ReconciliationSucceeded": 2}, s.Routes)
	assert.Equal(t, []string{"external-dns-weu (weu): 2/2 published, 0 pending, 0 drifted, 0 unreachable", "external-dns-neu (neu): unverified"}, s.Zones)
	assert.Contains(t, s.Deletions, "are held")
	require.Len(t, s.Gateways, 1)
	assert.Equal(t, 2, s.Gateways[0].Hosts)
	assert.Greater(t, s.Gateways[0].Bytes, 4096)
	var b strings.Builder
	require.NoError(t, WriteSummary(&b, s))
	assert.Contains(t, b.String(), "ServiceRoutes: 2")
	assert.Contains(t, b.String(), "istio-system/gw: True GatewayCreated; 2 host(s), about")
	assert.NotContains(t, b.String(), "Regional failover", "nothing to say without failover")
}

func TestSummaryOf_RegionalFailover(t *testing.T) {
	w := healthy(t, routingv1alpha1.BackendIstioGateway)
	since := metav1.NewTime(time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC))
	w.Configuration.Status.Failover = []clusterv1alpha1.RegionFailoverStatus{
		{Region: "frc", State: "Unreachable", Reason: "WitnessSaysAlive", Since: &since, Message: "a partition"},
		{Region: "neu", State: "Lost", Reason: "HeartbeatStale", Since: &since, Message: "3 probes failed",
			Taken: []clusterv1alpha1.ZoneTakeover{{Controller: "external-dns-neu", Names: 12}, {Controller: "external-dns-weu", Names: 2}}},
	}
	s := SummaryOf(w, 0)
	assert.Equal(t, []string{
		"frc: Unreachable (WitnessSaysAlive) since 2026-11-27T03:00:00Z: a partition",
		"neu: Lost (HeartbeatStale) since 2026-11-27T03:00:00Z; this cluster serves its names: 12 in external-dns-neu, 2 in external-dns-weu: 3 probes failed",
	}, s.Failover)
	var b strings.Builder
	require.NoError(t, WriteSummary(&b, s))
	assert.Contains(t, b.String(), "Regional failover (the other regions, as this cluster judges them):\n  frc: Unreachable")

	w.Configuration.Status.Conditions = append(w.Configuration.Status.Conditions, metav1.Condition{Type: clusterv1alpha1.ConditionDrained,
		Status: metav1.ConditionTrue, Reason: clusterv1alpha1.ReasonDrainInProgress, Message: "1 of the names … with a stand-in, 2 still here"})
	b.Reset()
	require.NoError(t, WriteSummary(&b, SummaryOf(w, 0)))
	assert.Contains(t, b.String(), "as this cluster judges them):\n  this region drained: DrainInProgress: 1 of the names … with a stand-in, 2 still here\n  frc:")
}

func TestTargetPathOf_AddressRecordsInEveryZone(t *testing.T) {
	w := healthy(t, routingv1alpha1.BackendIstioGateway)
	gateways := FindTarget(w, "aks01-weu-internal.example.com")
	require.Len(t, gateways, 1)
	p := TargetPathOf(w, gateways)
	assert.Equal(t, []string{"istio-system/gw: True GatewayCreated"}, p.Gateways)
	require.Len(t, p.Zones, 2)
	assert.Equal(t, ZonePath{Controller: "external-dns-weu", Region: "weu", DNSEndpoint: "istio-system/gateway-controller-ingress-internal-external-dns-weu",
		Exists: true, Processed: true, Addresses: []string{"aks01-weu-internal.example.com A 10.0.0.1 (TTL 300)"}}, p.Zones[0])
	assert.Nil(t, p.Problem)

	w.Endpoints = slices.DeleteFunc(w.Endpoints, func(ep *externaldnsv1alpha1.DNSEndpoint) bool {
		return key(ep) == "istio-system/gateway-controller-ingress-internal-external-dns-neu"
	})
	p = TargetPathOf(w, gateways)
	require.NotNil(t, p.Problem)
	assert.Equal(t, "AddressRecordMissing", p.Problem.Reason)
	assert.Contains(t, p.Problem.Message, "external-dns-neu")
	var b strings.Builder
	require.NoError(t, WriteTargetPath(&b, p))
	assert.Contains(t, b.String(), "Gateway target aks01-weu-internal.example.com")
	assert.Empty(t, FindTarget(w, "nothing.example.com"))
}

func TestStatus_GatewayAPIBackend(t *testing.T) {
	t.Run("the route's listener and what the implementation says of it", func(t *testing.T) {
		w := healthy(t, routingv1alpha1.BackendGatewayAPI)
		set := w.ListenerSets[0]
		for _, l := range set.Spec.Listeners {
			set.Status.Listeners = append(set.Status.Listeners, gwv1.ListenerEntryStatus{Name: l.Name, Conditions: []metav1.Condition{
				{Type: "Accepted", Status: metav1.ConditionTrue}, {Type: "Programmed", Status: metav1.ConditionTrue}}})
		}
		p := PathOf(w, w.Routes[0])
		assert.Nil(t, p.Problem)
		assert.Contains(t, p.Gateway, "backend GatewayAPI")
		assert.Equal(t, "ListenerSet istio-system/gw.app listener https-"+host0+": Accepted=True, Programmed=True", p.Listener)
		var b strings.Builder
		require.NoError(t, WritePath(&b, p))
		assert.Contains(t, b.String(), "  listener   ListenerSet istio-system/gw.app")
	})
	t.Run("no listener for the hostname is the first problem", func(t *testing.T) {
		w := healthy(t, routingv1alpha1.BackendGatewayAPI)
		w.ListenerSets = nil
		p := PathOf(w, w.Routes[0])
		require.NotNil(t, p.Problem)
		assert.Equal(t, "ListenerMissing", p.Problem.Reason)
		assert.Equal(t, DocsBase+"#servicerouteroperatornotreconciling", p.Problem.Doc)
		assert.Contains(t, p.Problem.Message, "no ListenerSet of Gateway istio-system/gw lists "+host0)
	})
	t.Run("the summary counts ListenerSets and listeners", func(t *testing.T) {
		s := SummaryOf(healthy(t, routingv1alpha1.BackendGatewayAPI), 0)
		require.Len(t, s.Gateways, 1)
		assert.Equal(t, GatewaySummary{Gateway: "istio-system/gw", Ready: "True GatewayCreated", Hosts: 2, Bytes: s.Gateways[0].Bytes, Budget: s.Gateways[0].Budget,
			Backend: "GatewayAPI", ListenerSets: 1, MostListeners: 2}, s.Gateways[0])
		var b strings.Builder
		require.NoError(t, WriteSummary(&b, s))
		assert.Contains(t, b.String(), "istio-system/gw: True GatewayCreated; backend GatewayAPI; 2 host(s) in 1 ListenerSet(s), the fullest with 2 of 64 listeners")
	})
	t.Run("the target's address comes from the Gateway API Gateway", func(t *testing.T) {
		w := healthy(t, routingv1alpha1.BackendGatewayAPI)
		p := TargetPathOf(w, FindTarget(w, target))
		assert.Equal(t, "Gateway API Gateway istio-system/gw status.addresses: 10.0.0.1", p.Address)
		w.GatewayAPIGateways[0].Status.Addresses = nil
		assert.Equal(t, "Gateway API Gateway istio-system/gw status.addresses: none yet; the records are kept", TargetPathOf(w, FindTarget(w, target)).Address)
		w = healthy(t, routingv1alpha1.BackendIstioGateway)
		assert.Equal(t, "Service istio-system/ingress: 10.0.0.1", TargetPathOf(w, FindTarget(w, target)).Address)
	})
}

// The zones section shows, per zone read through Azure Resource Manager, what dns-config's status
// says of its requests, and the OverRequestBudget condition (its message when True).
func TestSummaryOf_ResourceManagerRequests(t *testing.T) {
	azure := &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &clusterv1alpha1.AzurePrivateDNSVerification{
		SubscriptionID: "00000000-0000-0000-0000-00000000000a", ResourceGroup: "rg", ZoneName: "example.internal"}}
	at := time.Date(2026, 11, 27, 3, 5, 0, 0, time.UTC)
	seen := metav1.NewTime(at.Add(-2 * time.Second))
	reads, writes := int32(247), int32(199)
	measured := &clusterv1alpha1.ZoneRequests{ReadsPerMinute: "4.2", WritesPerMinute: "6.0", Throttled: 1, RemainingReads: &reads, RemainingWrites: &writes,
		RemainingSeen: &seen, Window: metav1.Duration{Duration: 5*time.Minute + 10*time.Second}, MeasuredAt: metav1.NewTime(at)}
	header := "\n  Azure Resource Manager requests of this cluster, a minute over the operator's last window (REMAINING: the tokens\n" +
		"  of the zone's principal left of 250 reads and 200 writes, as Resource Manager last said, at SEEN):\n"
	for _, tc := range []struct {
		name      string
		azure     []bool // per controller (weu, neu): read through Resource Manager
		requests  []*clusterv1alpha1.ZoneRequests
		condition *metav1.Condition
		want      []ZoneRequestsSummary
		section   string // the zones section
	}{
		{"no zone read through Resource Manager: nothing", []bool{false, false}, nil, nil, nil,
			"  external-dns-weu (weu): unverified\n  external-dns-neu (neu): unverified\n"},
		{"one zone measured, one not yet", []bool{true, true}, []*clusterv1alpha1.ZoneRequests{measured, nil},
			&metav1.Condition{Type: clusterv1alpha1.ConditionOverRequestBudget, Status: metav1.ConditionFalse, Reason: clusterv1alpha1.ReasonWithinRequestBudget, Message: "this cluster plans …"},
			[]ZoneRequestsSummary{
				{Controller: "external-dns-weu", Region: "weu", Measured: true, ReadsPerMinute: "4.2", WritesPerMinute: "6.0", Throttled: 1, RemainingReads: "247", RemainingWrites: "199",
					RemainingSeen: "2026-11-27T03:04:58Z", Window: "5m10s", MeasuredAt: "2026-11-27T03:05:00Z"},
				{Controller: "external-dns-neu", Region: "neu"},
			},
			"  external-dns-weu (weu): 0/0 published, 0 pending, 0 drifted, 0 unreachable\n  external-dns-neu (neu): 0/0 published, 0 pending, 0 drifted, 0 unreachable\n" + header +
				"  ZONE              READS/MIN  WRITES/MIN  THROTTLED  REMAINING READS/WRITES  SEEN                  WINDOW\n" +
				"  external-dns-weu  4.2        6.0         1          247/199                 2026-11-27T03:04:58Z  5m10s to 2026-11-27T03:05:00Z\n" +
				"  external-dns-neu  -          -           -          -                       -                     not measured yet (one window, about 5m, after the operator started)\n" +
				"  request budget: False WithinRequestBudget\n"},
		{"no answer seen yet, over the budget: the condition's message", []bool{false, true},
			[]*clusterv1alpha1.ZoneRequests{nil, {ReadsPerMinute: "812.4", WritesPerMinute: "0.0", Window: metav1.Duration{Duration: 5 * time.Minute}, MeasuredAt: metav1.NewTime(at)}},
			&metav1.Condition{Type: clusterv1alpha1.ConditionOverRequestBudget, Status: metav1.ConditionTrue, Reason: clusterv1alpha1.ReasonRequestBudgetExceeded, Message: "subscription …: this cluster plans 1118.0 …"},
			[]ZoneRequestsSummary{{Controller: "external-dns-neu", Region: "neu", Measured: true, ReadsPerMinute: "812.4", WritesPerMinute: "0.0", Window: "5m0s", MeasuredAt: "2026-11-27T03:05:00Z"}},
			"  external-dns-weu (weu): unverified\n  external-dns-neu (neu): 0/0 published, 0 pending, 0 drifted, 0 unreachable\n" + header +
				"  ZONE              READS/MIN  WRITES/MIN  THROTTLED  REMAINING READS/WRITES  SEEN  WINDOW\n" +
				"  external-dns-neu  812.4      0.0         0          -/-                     -     5m0s to 2026-11-27T03:05:00Z\n" +
				"  request budget: True RequestBudgetExceeded: subscription …: this cluster plans 1118.0 …\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := healthy(t, routingv1alpha1.BackendIstioGateway)
			cfg := w.Configuration
			cfg.Status.Verification = nil
			for i := range cfg.Spec.ExternalDNSControllers {
				if !tc.azure[i] {
					continue
				}
				cfg.Spec.ExternalDNSControllers[i].Verification = azure
				z := clusterv1alpha1.ZoneVerificationStatus{Controller: cfg.Spec.ExternalDNSControllers[i].Name}
				if tc.requests != nil {
					z.Requests = tc.requests[i]
				}
				cfg.Status.Verification = append(cfg.Status.Verification, z)
			}
			if tc.condition != nil {
				meta.SetStatusCondition(&cfg.Status.Conditions, *tc.condition)
			}
			s := SummaryOf(w, 0)
			assert.Equal(t, tc.want, s.Requests)
			var b strings.Builder
			require.NoError(t, WriteSummary(&b, s))
			out := b.String()
			_, afterZones, ok := strings.Cut(out, "Zones:\n")
			require.True(t, ok)
			section, _, _ := strings.Cut(afterZones, "\n\nGateways")
			assert.Equal(t, tc.section, section+"\n")
		})
	}
}
