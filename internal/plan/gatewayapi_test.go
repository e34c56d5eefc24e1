package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
)

func TestGateway_GatewayAPIBackend(t *testing.T) {
	addrs := ingress.Addresses{IPv4: []string{"10.9.8.7"}}
	apiGateway := func() *routingv1alpha1.Gateway {
		gw := gateway("cert")
		gw.Spec.Backend, gw.Spec.GatewayClassName = routingv1alpha1.BackendGatewayAPI, "istio"
		return gw
	}
	hosts := []desired.RouteHost{{Namespace: "myapp", Hostname: "web-ns-d-dev-myapp.example.com"}, {Namespace: "other", Hostname: "api-ns-d-dev-other.example.com"}}
	base := GatewayInputs{Gateway: apiGateway(), Identity: identity(), Hosts: []string{hosts[0].Hostname, hosts[1].Hostname}, RouteHosts: hosts, Service: &addrs}
	with := func(mutate func(*GatewayInputs)) GatewayInputs { in := base; mutate(&in); return in }
	tests := []struct {
		name                string
		in                  GatewayInputs
		wantReason          string
		wantSyncIstio       bool
		wantSyncGatewayAPI  bool
		wantListenerSets    int
		wantIP              string
		wantNoGatewayAPIObj bool
	}{
		{"objects and address", base, "GatewayCreated", true, true, 2, "10.9.8.7", false},
		{"no routes yet: the Gateway API Gateway alone, for its address", with(func(in *GatewayInputs) { in.Hosts, in.RouteHosts = nil, nil }), "GatewayCreated", true, true, 0, "10.9.8.7", false},
		{"no address yet: kept, said so", with(func(in *GatewayInputs) { in.Service = &ingress.Addresses{} }), "LoadBalancerAddressPending", true, true, 2, "", false},
		{"no Gateway API Gateway yet", with(func(in *GatewayInputs) { in.Service = nil }), "LoadBalancerAddressPending", true, true, 2, "", false},
		{"Gateway API not installed: the classic Istio Gateway is kept", with(func(in *GatewayInputs) { in.GatewayAPIMissing = true }), "GatewayAPINotInstalled", false, false, 2, "", false},
		{"Istio API missing does not stop the Gateway API backend", with(func(in *GatewayInputs) { in.IstioAPIMissing = true }), "GatewayCreated", false, true, 2, "10.9.8.7", false},
		{"an older Gateway holds the entry point", with(func(in *GatewayInputs) { in.IngressDecider = olderGateway("istio-system", "") }), "EntryPointShared", true, true, 2, "", false},
		{"no credential and no plain HTTP: nothing generated", with(func(in *GatewayInputs) { in.Gateway = apiGateway(); in.Gateway.Spec.CredentialName = "" }), "CredentialNameMissing", true, true, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Gateway(tt.in)
			assert.Equal(t, tt.wantReason, got.Reason)
			assert.Equal(t, tt.wantSyncIstio, got.SyncIstio, "the classic Istio Gateway is removed only where the Gateway API is served")
			assert.Equal(t, tt.wantSyncGatewayAPI, got.SyncGatewayAPI)
			assert.Equal(t, tt.wantIP, got.LoadBalancerIP)
			if tt.wantNoGatewayAPIObj {
				assert.Nil(t, got.GatewayAPI)
				return
			}
			require.NotNil(t, got.GatewayAPI)
			assert.Len(t, got.GatewayAPI.ListenerSets, tt.wantListenerSets)
			assert.Equal(t, "aks01-weu-internal.example.com", string(*got.GatewayAPI.Gateway.Spec.Listeners[0].Hostname))
		})
	}
}

func TestGateway_ClassicBackendBesideAGatewayAPIOne(t *testing.T) {
	addrs := ingress.Addresses{IPv4: []string{"10.1.2.3"}}
	older := olderGateway("istio-system", "")
	older.Spec.Backend = routingv1alpha1.BackendGatewayAPI
	in := GatewayInputs{Gateway: gateway("cert"), Identity: identity(), Hosts: []string{"a.example.com"}, Service: &addrs, IngressDecider: older}

	got := Gateway(in)

	assert.Equal(t, "EntryPointShared", got.Reason)
	assert.Nil(t, got.GatewayAPI, "the classic backend generates no Gateway API object")
	assert.True(t, got.SyncGatewayAPI, "and removes any it generated before")

	in.IngressDecider, in.IstioAPIMissing = nil, true
	assert.False(t, Gateway(in).SyncGatewayAPI, "Istio missing: the Gateway API objects of a previous backend stay")
}

func TestAdmitHosts_KeepsTheRoutesNamespaces(t *testing.T) {
	one, two := candidate("r1", 1, "one.example.com"), candidate("r2", 2, "two.example.com")
	one.Namespace, two.Namespace = "a", "b"
	c := []HostCandidate{two, one}
	got := AdmitHosts(c, 0)
	assert.Equal(t, []desired.RouteHost{{Namespace: "a", Hostname: "one.example.com"}, {Namespace: "b", Hostname: "two.example.com"}}, got.RouteHosts)
}
