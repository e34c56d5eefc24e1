package integration

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
)

// TestGateway_FullIstioGatewayLeavesTheYoungestRoutesOff gives the Istio Gateway room for two
// hosts: of three routes the youngest is left off (Ready=False GatewayHostLimit, no DNS record),
// the Gateway says where the cut is, and when the oldest route goes the one left off publishes.
func TestGateway_FullIstioGatewayLeavesTheYoungestRoutesOff(t *testing.T) {
	f := newFixture(t)
	hostOf := func(svc string) string { return f.hostname(svc, "example.com") }
	// The Istio Gateway lists namespace-scoped hosts (the default istioHostFormat).
	istioHost := func(svc string) string { return f.ns + "/" + hostOf(svc) }
	candidate := func(svc string) decide.HostCandidate {
		return decide.HostCandidate{Namespace: f.ns, Hostname: istioHost(svc)}
	}
	budget := decide.EstimatedIstioGatewayBytes(candidate("svc-a"), candidate("svc-b"))
	startOperatorWith(t, env.Config, operatorOptions{istioGatewayMaxBytes: budget})
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	gw := f.gateway("full", "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	for _, name := range []string{"a", "b", "c"} { // names order routes created in the same second
		f.route("", "route-"+name, "svc-"+name, gw.Name)
	}

	f.waitRoute(f.ns, "route-a", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitRoute(f.ns, "route-b", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	leftOff := f.waitRoute(f.ns, "route-c", routingv1alpha1.PhasePending, routingv1alpha1.ReasonGatewayHostLimit)
	assert.Equal(t, hostOf("svc-c"), leftOff.Status.Hostname, "a route left off keeps its hostname in status")
	f.waitIstioHosts(gw.Name, istioHost("svc-a"), istioHost("svc-b"))
	waitFor(t, "the DNSEndpoint of the route left off to go", func() string {
		if eps := routeEndpoints(t, f.ns, "route-c"); len(eps) > 0 {
			return fmt.Sprintf("%d DNSEndpoint(s)", len(eps))
		}
		return ""
	})
	g := f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	require.NotNil(t, g.Status.HostLimit)
	assert.Equal(t, routingv1alpha1.GatewayHostLimit{BudgetBytes: int64(budget), Admitted: 2, LeftOff: 1, FirstLeftOff: f.ns + "/route-c",
		FirstLeftOffCreated: leftOff.CreationTimestamp}, *g.Status.HostLimit)
	c := meta.FindStatusCondition(g.Status.Conditions, routingv1alpha1.ConditionHostLimit)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, routingv1alpha1.ReasonGatewayHostLimit, c.Reason)

	// Room again: the route left off is admitted and publishes; the Gateway drops the limit.
	require.NoError(t, env.Client.Delete(f.ctx, &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "route-a"}}))
	f.waitRoute(f.ns, "route-c", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitRouteEndpoints(f.ns, "route-c", hostOf("svc-c"), "aks01-weu-internal.example.com", "external-dns-weu")
	f.waitIstioHosts(gw.Name, istioHost("svc-b"), istioHost("svc-c"))
	waitFor(t, "the Gateway to drop its host limit", func() string {
		g := f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
		if g.Status.HostLimit != nil || meta.FindStatusCondition(g.Status.Conditions, routingv1alpha1.ConditionHostLimit) != nil {
			return fmt.Sprintf("hostLimit %+v", g.Status.HostLimit)
		}
		return ""
	})
}
