package desired

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/policy"
)

func route() *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: "api-route", Namespace: "myapp", UID: types.UID("route-uid")}}
}

// The expected object is the architecture document's DNSEndpoint example.
func TestRouteEndpoint_MatchesTheSpecExample(t *testing.T) {
	got := RouteEndpoint(route(), policy.Controller{Name: "external-dns-weu", Region: "weu"}, "api-ns-p-prod-myapp.example.com", "aks01-weu-internal.example.com")

	assert.Equal(t, "api-route-external-dns-weu", got.Name)
	assert.Equal(t, "myapp", got.Namespace)
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/managed-by": "service-router-operator",
		"router.io/controller":         "external-dns-weu",
		"router.io/region":             "weu",
		"router.io/serviceroute":       "api-route",
		"router.io/source-namespace":   "myapp",
	}, got.Labels)
	assert.Equal(t, map[string]string{"external-dns.alpha.kubernetes.io/controller": "external-dns-weu"}, got.Annotations)
	require.Len(t, got.OwnerReferences, 1)
	owner := got.OwnerReferences[0]
	assert.Equal(t, "routing.router.io/v1alpha1", owner.APIVersion)
	assert.Equal(t, "ServiceRoute", owner.Kind)
	assert.Equal(t, "api-route", owner.Name)
	assert.Equal(t, types.UID("route-uid"), owner.UID)
	assert.True(t, *owner.Controller)
	assert.Equal(t, []*endpoint.Endpoint{{DNSName: "api-ns-p-prod-myapp.example.com", RecordType: "CNAME", Targets: endpoint.Targets{"aks01-weu-internal.example.com"}}}, got.Spec.Endpoints)
}

func TestGatewayEndpoint_CarriesTheControllerAnnotation(t *testing.T) {
	records := []*endpoint.Endpoint{{DNSName: "aks01-weu-internal.example.com", RecordType: "A", Targets: endpoint.Targets{"10.123.45.67"}}}
	got := GatewayEndpoint(Ingress{Controller: "aks-istio-ingressgateway-internal", TargetPostfix: "internal"},
		policy.Controller{Name: "external-dns-weu", Region: "weu"}, "istio-system", "aks01-weu-internal.example.com", records)

	assert.Equal(t, "gateway-controller-aks-istio-ingressgateway-internal-internal-external-dns-weu", got.Name)
	assert.Equal(t, "istio-system", got.Namespace)
	assert.Equal(t, "external-dns-weu", got.Annotations["external-dns.alpha.kubernetes.io/controller"])
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/managed-by": "service-router-operator",
		"router.io/istio-controller":   "aks-istio-ingressgateway-internal",
		"router.io/target-postfix":     "internal",
		"router.io/resource-type":      "gateway-service",
		"router.io/controller":         "external-dns-weu",
		"router.io/region":             "weu",
	}, got.Labels)
	assert.Equal(t, records, got.Spec.Endpoints)
}

func TestIstioGateway_MatchesTheSpecExample(t *testing.T) {
	gw := &routingv1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: "istio-system", UID: "gw-uid"},
		Spec:       routingv1alpha1.GatewaySpec{Controller: "aks-istio-ingressgateway-internal", CredentialName: "cert-aks-ingress", TargetPostfix: "internal"},
	}
	hosts := []string{"api-ns-d-dev-myapp.aks.vecd.vczc.nl", "web-ns-d-dev-myapp.aks.vecd.vczc.nl"}
	got := IstioGateway(gw, hosts)

	assert.Equal(t, "default-gateway", got.Name)
	assert.Equal(t, "istio-system", got.Namespace)
	assert.Equal(t, map[string]string{"istio": "aks-istio-ingressgateway-internal"}, got.Spec.Selector)
	require.Len(t, got.Spec.Servers, 1)
	server := got.Spec.Servers[0]
	assert.Equal(t, uint32(443), server.Port.Number)
	assert.Equal(t, "https", server.Port.Name)
	assert.Equal(t, "HTTPS", server.Port.Protocol)
	assert.Equal(t, "SIMPLE", server.Tls.Mode.String())
	assert.Equal(t, "cert-aks-ingress", server.Tls.CredentialName)
	assert.Equal(t, hosts, server.Hosts)
	assert.Equal(t, "Gateway", got.OwnerReferences[0].Kind)
	assert.Equal(t, types.UID("gw-uid"), got.OwnerReferences[0].UID)

	hosts[0] = "changed"
	assert.Equal(t, "api-ns-d-dev-myapp.aks.vecd.vczc.nl", server.Hosts[0], "the hosts slice is copied")
}

func TestIstioGateway_ServersFollowTLSAndPlainHTTP(t *testing.T) {
	https := "HTTPS 443 tls=SIMPLE/cert"
	tests := []struct {
		name           string
		credentialName string
		plainHTTP      routingv1alpha1.PlainHTTP
		want           []string
	}{
		{"HTTPS only (the default)", "cert", "", []string{https}},
		{"HTTPS only, said explicitly", "cert", routingv1alpha1.PlainHTTPDisabled, []string{https}},
		{"HTTPS and plain HTTP", "cert", routingv1alpha1.PlainHTTPServe, []string{https, "HTTP 80"}},
		{"HTTPS and a redirect to it", "cert", routingv1alpha1.PlainHTTPRedirectToHTTPS, []string{https, "HTTP 80 redirect"}},
		{"plain HTTP only (a homelab)", "", routingv1alpha1.PlainHTTPServe, []string{"HTTP 80"}},
		{"a redirect without HTTPS redirects nobody (admission refuses it)", "", routingv1alpha1.PlainHTTPRedirectToHTTPS, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "istio-system"},
				Spec: routingv1alpha1.GatewaySpec{Controller: "ingress", CredentialName: tt.credentialName, PlainHTTP: tt.plainHTTP, TargetPostfix: "internal"}}
			hosts := []string{"app/api.example.com"}
			var got []string
			for _, srv := range IstioGateway(gw, hosts).Spec.Servers {
				assert.Equal(t, hosts, srv.Hosts, "every server lists every host")
				desc := fmt.Sprintf("%s %d", srv.Port.Protocol, srv.Port.Number)
				switch {
				case srv.Tls.GetHttpsRedirect():
					desc += " redirect"
				case srv.Tls != nil:
					desc += fmt.Sprintf(" tls=%s/%s", srv.Tls.Mode, srv.Tls.CredentialName)
				}
				got = append(got, desc)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestEndpointUpToDate(t *testing.T) {
	ctrl := policy.Controller{Name: "external-dns-weu", Region: "weu"}
	want := RouteEndpoint(route(), ctrl, "api-ns-d-dev-myapp.example.com", "aks01-weu-internal.example.com")
	tests := []struct {
		name   string
		mutate func(current *externaldnsv1alpha1.DNSEndpoint)
		want   bool
	}{
		{"identical", func(*externaldnsv1alpha1.DNSEndpoint) {}, true},
		{"extra label from someone else", func(c *externaldnsv1alpha1.DNSEndpoint) { c.Labels["team"] = "a" }, true},
		{"extra annotation from someone else", func(c *externaldnsv1alpha1.DNSEndpoint) { c.Annotations["note"] = "x" }, true},
		{"nil vs empty provider-specific", func(c *externaldnsv1alpha1.DNSEndpoint) {
			c.Spec.Endpoints[0].ProviderSpecific = endpoint.ProviderSpecific{}
		}, true},
		{"target changed", func(c *externaldnsv1alpha1.DNSEndpoint) {
			c.Spec.Endpoints[0].Targets = endpoint.Targets{"aks02-neu-internal.example.com"}
		}, false},
		{"hostname changed", func(c *externaldnsv1alpha1.DNSEndpoint) {
			c.Spec.Endpoints[0].DNSName = "api-ns-d-dev-other.example.com"
		}, false},
		{"label removed", func(c *externaldnsv1alpha1.DNSEndpoint) { delete(c.Labels, "router.io/region") }, false},
		{"annotation changed", func(c *externaldnsv1alpha1.DNSEndpoint) {
			c.Annotations["external-dns.alpha.kubernetes.io/controller"] = "other"
		}, false},
		{"owner removed", func(c *externaldnsv1alpha1.DNSEndpoint) { c.OwnerReferences = nil }, false},
		{"record added", func(c *externaldnsv1alpha1.DNSEndpoint) {
			c.Spec.Endpoints = append(c.Spec.Endpoints, &endpoint.Endpoint{DNSName: "x.example.com", RecordType: "A", Targets: endpoint.Targets{"10.0.0.1"}})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := want.DeepCopy()
			tt.mutate(current)
			assert.Equal(t, tt.want, EndpointUpToDate(current, want))
			if !tt.want {
				MergeMeta(current, want)
				current.Spec = *want.Spec.DeepCopy()
				assert.True(t, EndpointUpToDate(current, want), "merging the desired state makes it up to date")
			}
		})
	}
}

func TestOwnedBy(t *testing.T) {
	owner := route()
	owned := RouteEndpoint(owner, policy.Controller{Name: "c", Region: "r"}, "h.example.com", "t.example.com")
	assert.True(t, OwnedBy(owned, "ServiceRoute", "api-route"))

	unlabelled := owned.DeepCopy()
	delete(unlabelled.Labels, "app.kubernetes.io/managed-by")
	assert.False(t, OwnedBy(unlabelled, "ServiceRoute", "api-route"), "no managed-by label: not ours")

	assert.False(t, OwnedBy(owned, "ServiceRoute", "web-route"), "controlled by another route")
	assert.False(t, OwnedBy(owned, "Gateway", "api-route"), "controlled by another kind")

	recreated := owned.DeepCopy()
	recreated.OwnerReferences[0].UID = "previous-uid"
	assert.True(t, OwnedBy(recreated, "ServiceRoute", "api-route"), "a re-created route adopts its predecessor's endpoints")

	noOwner := owned.DeepCopy()
	noOwner.OwnerReferences = nil
	assert.False(t, OwnedBy(noOwner, "ServiceRoute", "api-route"))
}
