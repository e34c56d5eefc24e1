package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

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

func conflicted(s *gwv1.ListenerSet, listener string, generation int64) *gwv1.ListenerSet {
	s = s.DeepCopy()
	s.Generation = 2
	s.Status.Listeners = append(s.Status.Listeners, gwv1.ListenerEntryStatus{Name: gwv1.SectionName(listener), Conditions: []metav1.Condition{
		{Type: "Conflicted", Status: metav1.ConditionTrue, Reason: "HostnameConflict", ObservedGeneration: generation}}})
	return s
}

func TestListenerConflicts(t *testing.T) {
	gw := gateway("cert")
	gw.Spec.Backend, gw.Spec.PlainHTTP = routingv1alpha1.BackendGatewayAPI, routingv1alpha1.PlainHTTPServe
	objs := desired.GatewayAPI(gw, "t.example.com", gw.Namespace, []desired.RouteHost{{Namespace: "b", Hostname: "b.example.com"}, {Namespace: "a", Hostname: "a.example.com"}}, nil)
	a, b := objs.ListenerSets[0], objs.ListenerSets[1]
	ok := a.DeepCopy()
	ok.Status.Listeners = []gwv1.ListenerEntryStatus{{Name: "https-a.example.com", Conditions: []metav1.Condition{{Type: "Conflicted", Status: metav1.ConditionFalse, Reason: "NoConflicts"}}}}
	tests := []struct {
		name string
		sets []*gwv1.ListenerSet
		want []routingv1alpha1.ListenerConflict
	}{
		{"no status yet", []*gwv1.ListenerSet{a, b}, nil},
		{"no conflict", []*gwv1.ListenerSet{ok, b}, nil},
		{"a conflicted listener names its hostname once, whatever the number of its listeners",
			[]*gwv1.ListenerSet{conflicted(conflicted(b, "https-b.example.com", 2), "http-b.example.com", 2), conflicted(a, "http-a.example.com", 0)},
			[]routingv1alpha1.ListenerConflict{
				{Namespace: "a", Hostname: "a.example.com", ListenerSet: a.Name, Reason: "HostnameConflict"},
				{Namespace: "b", Hostname: "b.example.com", ListenerSet: b.Name, Reason: "HostnameConflict"}}},
		{"a condition about an older generation does not count", []*gwv1.ListenerSet{conflicted(a, "https-a.example.com", 1)}, nil},
		{"a listener the spec no longer has does not count", []*gwv1.ListenerSet{conflicted(a, "https-gone.example.com", 2)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ListenerConflicts(tt.sets))
		})
	}
}

func TestRoute_ListenerConflictIsReportedAndTheRecordsStay(t *testing.T) {
	gw := gateway("cert")
	gw.Spec.Backend = routingv1alpha1.BackendGatewayAPI
	in := RouteInputs{Route: serviceRoute(), Identity: identity(), Configuration: configuration("weu"), Policy: dnsPolicy("p", time.Now(), "Active", ""), Gateway: gw}
	clean := Route(in)
	require.Equal(t, routingv1alpha1.ReasonReconciliationSucceeded, clean.Reason)

	gw.Status.ListenerConflicts = []routingv1alpha1.ListenerConflict{{Namespace: in.Route.Namespace, Hostname: clean.Hostname, ListenerSet: "default-gateway.myapp", Reason: "HostnameConflict"}}
	got := Route(in)
	assert.Equal(t, routingv1alpha1.ReasonListenerConflict, got.Reason)
	assert.False(t, got.Ready)
	assert.Contains(t, got.Message, "ListenerSet istio-system/default-gateway.myapp")
	assert.True(t, got.Sync)
	assert.Len(t, got.Endpoints, 1, "the records stay")

	gw.Status.ListenerConflicts[0].Namespace = "other"
	assert.Equal(t, routingv1alpha1.ReasonReconciliationSucceeded, Route(in).Reason, "the same hostname in another namespace is another route's")
}

func TestWithGatewayAPI_ReadsOnlyWhatTheGatewayOwns(t *testing.T) {
	gw := gateway("cert")
	gw.Spec.Backend = routingv1alpha1.BackendGatewayAPI
	objs := desired.GatewayAPI(gw, "aks01-weu-internal.example.com", gw.Namespace, []desired.RouteHost{{Namespace: "myapp", Hostname: "web.example.com"}}, nil)
	ip := gwv1.IPAddressType
	owned := objs.Gateway.DeepCopy()
	owned.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: &ip, Value: "10.1.1.1"}, {Type: &ip, Value: "not-an-ip"}}
	foreign := owned.DeepCopy()
	foreign.OwnerReferences = nil
	otherSet := objs.ListenerSets[0].DeepCopy()
	otherSet.Name, otherSet.OwnerReferences[0].Name = "other.myapp", "other"
	sets := []*gwv1.ListenerSet{objs.ListenerSets[0], otherSet}
	base := GatewayInputs{Gateway: gw}
	tests := []struct {
		name     string
		in       GatewayInputs
		current  []*gwv1.Gateway
		wantSets int
		wantIP   string
		wantName string
	}{
		{"the owned Gateway API Gateway's address and ListenerSets", base, []*gwv1.Gateway{owned}, 1, "10.1.1.1", "Gateway API Gateway " + gw.Namespace + "/" + gw.Name},
		{"no Gateway API Gateway yet: no address", base, nil, 1, "", ""},
		{"one that is not the operator's: no address", base, []*gwv1.Gateway{foreign}, 1, "", ""},
		{"the API missing: nothing read", GatewayInputs{Gateway: gw, GatewayAPIMissing: true}, []*gwv1.Gateway{owned}, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := WithGatewayAPI(tt.in, sets, tt.current)
			assert.Len(t, in.ListenerSets, tt.wantSets)
			if tt.wantIP == "" {
				assert.Nil(t, in.Service)
			} else {
				require.NotNil(t, in.Service)
				assert.Equal(t, tt.wantIP, in.Service.Primary())
				assert.Equal(t, []string{"10.1.1.1"}, in.Service.IPv4, "a malformed address is not published")
			}
			assert.Equal(t, tt.wantName, in.ServiceName)
		})
	}
}
