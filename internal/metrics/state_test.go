package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/policy"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func ready(status metav1.ConditionStatus, reason string, since time.Duration) []metav1.Condition {
	return []metav1.Condition{{Type: "Ready", Status: status, Reason: reason, LastTransitionTime: ago(since)}}
}

func route(name string, phase routingv1alpha1.Phase, conditions []metav1.Condition) routingv1alpha1.ServiceRoute {
	r := routingv1alpha1.ServiceRoute{}
	r.Name, r.Namespace, r.CreationTimestamp = name, "app", ago(time.Hour)
	r.Status.Phase, r.Status.Conditions = phase, conditions
	return r
}

// TestState_Samples computes every state metric from a small cluster: the values are counts over
// bounded label sets, never one series per object.
func TestState_Samples(t *testing.T) {
	identity := clusterv1alpha1.ClusterIdentity{Spec: clusterv1alpha1.ClusterIdentitySpec{Region: "weu", Cluster: "aks01", EnvironmentLetter: "p", Domain: "example.com"}}
	identity.Status.Phase, identity.Status.Conditions = clusterv1alpha1.PhaseActive, ready(metav1.ConditionTrue, clusterv1alpha1.ReasonValidationSucceeded, time.Hour)

	activePolicy := routingv1alpha1.DNSPolicy{}
	activePolicy.Status = routingv1alpha1.DNSPolicyStatus{Phase: routingv1alpha1.PhaseActive, Active: true, ActiveControllers: []string{"external-dns-weu", "external-dns-neu"},
		Conditions: ready(metav1.ConditionTrue, routingv1alpha1.ReasonPolicyActive, time.Hour)}
	noControllers := routingv1alpha1.DNSPolicy{}
	noControllers.Status = routingv1alpha1.DNSPolicyStatus{Phase: routingv1alpha1.PhaseActive, Active: true,
		Conditions: ready(metav1.ConditionFalse, routingv1alpha1.ReasonNoActiveControllers, 20*time.Minute)}
	inactive := routingv1alpha1.DNSPolicy{}
	inactive.Status = routingv1alpha1.DNSPolicyStatus{Phase: routingv1alpha1.PhaseInactive, Conditions: ready(metav1.ConditionTrue, routingv1alpha1.ReasonPolicyInactive, time.Hour)}

	gateway := routingv1alpha1.Gateway{}
	gateway.Status.Phase, gateway.Status.Conditions = routingv1alpha1.PhasePending, ready(metav1.ConditionFalse, routingv1alpha1.ReasonLoadBalancerNotFound, 5*time.Minute)
	conflicted := routingv1alpha1.Gateway{}
	conflicted.Status.Phase, conflicted.Status.Conditions = routingv1alpha1.PhaseFailed, ready(metav1.ConditionFalse, routingv1alpha1.ReasonOwnershipConflict, time.Minute)

	newRoute := route("new", "", nil)
	newRoute.CreationTimestamp = ago(3 * time.Second)

	weu, neu := policy.Controller{Name: "external-dns-weu", Region: "weu"}, policy.Controller{Name: "external-dns-neu", Region: "neu"}
	r := route("api", "", nil)
	address := []*endpoint.Endpoint{{DNSName: "t", RecordType: "A", Targets: endpoint.Targets{"10.0.0.1"}}, {DNSName: "t", RecordType: "AAAA", Targets: endpoint.Targets{"fd00::1"}}}
	ingress := desired.Ingress{Controller: "ingressgateway", TargetPostfix: "internal"}
	foreign := *desired.RouteEndpoint(&r, weu, "h", "t")
	foreign.Labels = map[string]string{}

	igw := &routingv1alpha1.Gateway{Spec: routingv1alpha1.GatewaySpec{Controller: "ingressgateway", CredentialName: "cert"}}
	igw.Name = "gw"

	state := State{
		Identities: pointers(identity),
		Policies:   pointers(activePolicy, noControllers, inactive),
		Gateways:   pointers(gateway, conflicted),
		Routes: pointers(
			route("a", routingv1alpha1.PhaseActive, ready(metav1.ConditionTrue, routingv1alpha1.ReasonReconciliationSucceeded, time.Hour)),
			route("b", routingv1alpha1.PhaseActive, ready(metav1.ConditionTrue, routingv1alpha1.ReasonReconciliationSucceeded, time.Minute)),
			route("c", routingv1alpha1.PhasePending, ready(metav1.ConditionFalse, routingv1alpha1.ReasonHostnameConflict, 30*time.Minute)),
			route("d", routingv1alpha1.PhasePending, ready(metav1.ConditionFalse, routingv1alpha1.ReasonHostnameConflict, 10*time.Minute)),
			route("e", routingv1alpha1.PhasePending, ready(metav1.ConditionFalse, routingv1alpha1.ReasonDNSPolicyInactive, 2*time.Hour)),
			newRoute,
		),
		Endpoints: []*externaldnsv1alpha1.DNSEndpoint{
			desired.RouteEndpoint(&r, weu, "h", "t"),
			desired.RouteEndpoint(&r, neu, "h", "t"),
			desired.GatewayEndpoint(ingress, weu, "istio-system", "t", address),
			&foreign, // not the operator's: not counted
		},
		IstioGateways:    []*istionetworkingv1.Gateway{desired.IstioGateway(igw, []string{"a.example.com", "b.example.com"})},
		IngressConflicts: 1,
	}

	got := map[string]float64{}
	for _, s := range state.Samples(now) {
		got[s.Name+"{"+strings.Join(s.Labels, ",")+"}"] = s.Value
	}
	assert.Equal(t, map[string]float64{
		"service_router_active_dnspolicies{}":                                        2,
		"service_router_cluster_identity_info{weu,aks01,p,example.com}":              1,
		"service_router_conflicts{Gateway,OwnershipConflict}":                        1,
		"service_router_conflicts{IngressDNS,OwnershipConflict}":                     1,
		"service_router_conflicts{ServiceRoute,HostnameConflict}":                    2,
		"service_router_conflicts{ServiceRoute,OwnershipConflict}":                   0,
		"service_router_dns_records{external-dns-neu,CNAME,serviceroute}":            1,
		"service_router_dns_records{external-dns-weu,A,gateway}":                     1,
		"service_router_dns_records{external-dns-weu,AAAA,gateway}":                  1,
		"service_router_dns_records{external-dns-weu,CNAME,serviceroute}":            1,
		"service_router_dnspolicy_active_controllers{external-dns-neu}":              1,
		"service_router_dnspolicy_active_controllers{external-dns-weu}":              1,
		"service_router_istio_gateway_hosts{ingressgateway}":                         2,
		"service_router_longest_not_ready_seconds{DNSPolicy,NoActiveControllers}":    1200,
		"service_router_longest_not_ready_seconds{Gateway,LoadBalancerNotFound}":     300,
		"service_router_longest_not_ready_seconds{Gateway,OwnershipConflict}":        60,
		"service_router_longest_not_ready_seconds{ServiceRoute,DNSPolicyInactive}":   7200,
		"service_router_longest_not_ready_seconds{ServiceRoute,HostnameConflict}":    1800,
		"service_router_longest_not_ready_seconds{ServiceRoute,}":                    3,
		"service_router_resources{ClusterIdentity,Active,True,ValidationSucceeded}":  1,
		"service_router_resources{DNSPolicy,Active,False,NoActiveControllers}":       1,
		"service_router_resources{DNSPolicy,Active,True,PolicyActive}":               1,
		"service_router_resources{DNSPolicy,Inactive,True,PolicyInactive}":           1,
		"service_router_resources{Gateway,Failed,False,OwnershipConflict}":           1,
		"service_router_resources{Gateway,Pending,False,LoadBalancerNotFound}":       1,
		"service_router_resources{ServiceRoute,,Unknown,}":                           1,
		"service_router_resources{ServiceRoute,Active,True,ReconciliationSucceeded}": 2,
		"service_router_resources{ServiceRoute,Pending,False,DNSPolicyInactive}":     1,
		"service_router_resources{ServiceRoute,Pending,False,HostnameConflict}":      2,
	}, got)
}

// TestState_EmptyCluster still exports the conflict series (at zero) and the active policy count,
// so that dashboards and alerts see 0 rather than no data.
func TestState_EmptyCluster(t *testing.T) {
	var names []string
	for _, s := range (State{}).Samples(now) {
		names = append(names, fmt.Sprintf("%s{%s}=%g", s.Name, strings.Join(s.Labels, ","), s.Value))
	}
	assert.Equal(t, []string{
		"service_router_active_dnspolicies{}=0",
		"service_router_conflicts{Gateway,OwnershipConflict}=0",
		"service_router_conflicts{IngressDNS,OwnershipConflict}=0",
		"service_router_conflicts{ServiceRoute,HostnameConflict}=0",
		"service_router_conflicts{ServiceRoute,OwnershipConflict}=0",
	}, names)
}

// TestDefinitions_PassPromlint registers every metric the package defines and lints it with
// Prometheus' own linter (naming, units, counters ending in _total, help text).
func TestDefinitions_PassPromlint(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for _, d := range Definitions {
		values := make([]string, len(d.Labels))
		for i := range values {
			values[i] = "x"
		}
		switch d.Type {
		case "gauge":
			g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: d.Name, Help: d.Help}, d.Labels)
			g.WithLabelValues(values...).Set(1)
			reg.MustRegister(g)
		case "counter":
			c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)
			c.WithLabelValues(values...).Inc()
			reg.MustRegister(c)
		case "histogram":
			h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.Name, Help: d.Help}, d.Labels)
			h.WithLabelValues(values...).Observe(1)
			reg.MustRegister(h)
		default:
			t.Fatalf("%s: unknown type %q", d.Name, d.Type)
		}
	}
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// pointers returns pointers to copies of objs, as the cache hands out its objects.
func pointers[T any](objs ...T) []*T {
	out := make([]*T, len(objs))
	for i := range objs {
		out[i] = &objs[i]
	}
	return out
}
