package integration

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istioapinetworkingv1 "istio.io/api/networking/v1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// TestOwnershipConflict_NeverOverwritesForeignObjects: a DNSEndpoint and an Istio Gateway that
// someone else created under the names the operator wants stay exactly as they were.
func TestOwnershipConflict_NeverOverwritesForeignObjects(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")

	foreignEndpoint := &externaldnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{Name: "api-route-external-dns-weu", Namespace: f.ns, Labels: map[string]string{"team": "dns"}},
		Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{
			{DNSName: "legacy.example.com", RecordType: "A", Targets: endpoint.Targets{"192.0.2.1"}},
		}},
	}
	require.NoError(t, env.Client.Create(f.ctx, foreignEndpoint))
	foreignGateway := &istionetworkingv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: f.gatewayNS},
		Spec: istioapinetworkingv1.Gateway{Selector: map[string]string{"istio": "legacy"}, Servers: []*istioapinetworkingv1.Server{{
			Port: &istioapinetworkingv1.Port{Number: 80, Name: "http", Protocol: "HTTP"}, Hosts: []string{"legacy.example.com"}}}},
	}
	require.NoError(t, env.Client.Create(f.ctx, foreignGateway))
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	f.policy(weuBound)
	route := f.route("", "api-route", "api", gw.Name)
	f.route("", "web-route", "web", gw.Name) // Ready, so the gateway wants an Istio Gateway

	r := f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonOwnershipConflict)
	assert.Contains(t, r.Status.Conditions[0].Message, f.ns+"/api-route-external-dns-weu")
	assert.Equal(t, []routingv1alpha1.ManagedEndpoint{{Name: "api-route-external-dns-neu", Controller: "external-dns-neu", Region: "neu"}}, r.Status.Endpoints,
		"the endpoint without a conflict is still published")
	f.waitGateway(gw.Name, routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonOwnershipConflict)

	after := &externaldnsv1alpha1.DNSEndpoint{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(foreignEndpoint), after))
	assert.Equal(t, foreignEndpoint.ResourceVersion, after.ResourceVersion, "the foreign DNSEndpoint was modified")
	igAfter := &istionetworkingv1.Gateway{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(foreignGateway), igAfter))
	assert.Equal(t, foreignGateway.ResourceVersion, igAfter.ResourceVersion, "the foreign Istio Gateway was modified")

	waitEvent(t, route, routingv1alpha1.ReasonOwnershipConflict)

	// Once the foreign object is gone, the route takes its name.
	require.NoError(t, env.Client.Delete(f.ctx, foreignEndpoint))
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
}

// TestHostnameConflict_OldestClaimWinsAndNextIsPromoted: two routes in different namespaces with
// the same hostname; only the older publishes, the Istio Gateway lists the host once, and deleting
// the winner promotes the other.
func TestHostnameConflict_OldestClaimWinsAndNextIsPromoted(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.policy(activeMode)
	otherNS := newNamespace(t, "other")
	other := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: otherNS}, Spec: activeMode}
	require.NoError(t, env.Client.Create(f.ctx, other))

	host := f.hostname("api", "example.com")
	first := f.route("", "api-route", "api", gw.Name)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	// creationTimestamp has a resolution of one second: make the second claim visibly younger.
	time.Sleep(1100 * time.Millisecond)
	f.route(otherNS, "api-route", "api", gw.Name)

	loser := f.waitRoute(otherNS, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonHostnameConflict)
	message := loser.Status.Conditions[0].Message
	assert.Contains(t, message, "another namespace", "the condition says where the winner is")
	assert.NotContains(t, message, f.ns, "a winner in another namespace is not named to the loser's author")
	assert.Empty(t, routeEndpoints(t, otherNS, "api-route"))
	f.waitRouteEndpoints(f.ns, "api-route", host, "aks01-weu-internal.example.com", "external-dns-weu")
	f.waitIstioHosts(gw.Name, istioHost(f.ns, host))

	require.NoError(t, env.Client.Delete(f.ctx, first))
	f.waitRoute(otherNS, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitRouteEndpoints(otherNS, "api-route", host, "aks01-weu-internal.example.com", "external-dns-weu")
	f.waitIstioHosts(gw.Name, istioHost(otherNS, host)) // only the new owner's VirtualServices bind it now
}

// writeCounter counts the mutating requests a client sends.
type writeCounter struct {
	mu     sync.Mutex
	writes []string
}

func (c *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		switch req.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
			c.mu.Lock()
			c.writes = append(c.writes, req.Method+" "+req.URL.Path)
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (c *writeCounter) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.writes...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRestart_ConvergedClusterCausesNoWrites: an operator restarted against a converged cluster
// reconciles everything and sends no create, update, patch or delete.
func TestRestart_ConvergedClusterCausesNoWrites(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity("frc"))
	f.setControllers("weu", "neu", "frc")

	stopFirst := startOperator(t, env.Config)
	gw := f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	f.route("", "web-route", "web", gw.Name)
	f.waitRouteEndpoints(f.ns, "web-route", f.hostname("web", "example.com"), "aks01-weu-internal.example.com", "external-dns-weu", "external-dns-frc")
	f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.com")), istioHost(f.ns, f.hostname("web", "example.com")))
	f.waitAddressRecords("internal", "aks01-weu-internal.example.com", map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu", "external-dns-neu", "external-dns-frc")
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	f.waitRoute(f.ns, "web-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	stopFirst()

	counter := &writeCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = counter.wrap
	startOperator(t, cfg)
	// Every object is reconciled right after the caches sync; give the workers time to drain
	// the initial queue (a timing allowance, not a readiness signal: nothing is expected to happen).
	time.Sleep(3 * time.Second)
	var ours []string // namespaces of earlier tests may still be terminating, with their own traffic
	for _, w := range counter.list() {
		if !strings.Contains(w, "/namespaces/") || strings.Contains(w, "/namespaces/"+f.ns+"/") || strings.Contains(w, "/namespaces/"+f.gatewayNS+"/") {
			ours = append(ours, w)
		}
	}
	assert.Empty(t, ours, "a restarted operator wrote to a converged cluster")
}
