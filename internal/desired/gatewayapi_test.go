package desired

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
)

const target = "aks01-weu-internal.example.com"

func apiGateway(mutate func(*routingv1alpha1.GatewaySpec)) *routingv1alpha1.Gateway {
	gw := &routingv1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "internal", Namespace: "istio-system", UID: types.UID("gw-uid")},
		Spec: routingv1alpha1.GatewaySpec{Controller: "ingress", TargetPostfix: "internal", CredentialName: "tls",
			PlainHTTP: routingv1alpha1.PlainHTTPDisabled, Backend: routingv1alpha1.BackendGatewayAPI, GatewayClassName: "istio"},
	}
	if mutate != nil {
		mutate(&gw.Spec)
	}
	return gw
}

func hostsIn(namespace string, n int) []RouteHost {
	out := make([]RouteHost, n)
	for i := range out {
		out[i] = RouteHost{Namespace: namespace, Hostname: fmt.Sprintf("svc%03d-ns-p-prod-%s.example.com", i, namespace)}
	}
	return out
}

func listenerHosts(s *gwv1.ListenerSet) []string {
	var out []string
	for _, l := range s.Spec.Listeners {
		out = append(out, fmt.Sprintf("%s:%d/%s", *l.Hostname, l.Port, l.Protocol))
	}
	return out
}

func TestGatewayAPI_OneListenerSetPerNamespaceConfinedToIt(t *testing.T) {
	gw := apiGateway(nil)
	hosts := []RouteHost{{"team-b", "api-ns-p-prod-b.example.com"}, {"team-a", "web-ns-p-prod-a.example.com"}, {"team-a", "api-ns-p-prod-a.example.com"}}

	got := GatewayAPI(gw, target, "istio-system", hosts, nil)

	g := got.Gateway
	assert.Equal(t, "internal", g.Name)
	assert.Equal(t, "istio-system", g.Namespace)
	assert.Equal(t, gwv1.ObjectName("istio"), g.Spec.GatewayClassName)
	assert.True(t, OwnedBy(g, "Gateway", "internal"))
	require.Len(t, g.Spec.Listeners, 1, "the Gateway itself serves only the target hostname")
	assert.Equal(t, gwv1.Hostname(target), *g.Spec.Listeners[0].Hostname)
	assert.Equal(t, gwv1.HTTPSProtocolType, g.Spec.Listeners[0].Protocol)
	assert.Equal(t, gwv1.NamespacesFromSame, *g.Spec.Listeners[0].AllowedRoutes.Namespaces.From)
	assert.Equal(t, gwv1.NamespacesFromSame, *g.Spec.AllowedListeners.Namespaces.From, "ListenerSets only from the platform's namespace")

	require.Len(t, got.ListenerSets, 2)
	a, b := got.ListenerSets[0], got.ListenerSets[1]
	assert.Equal(t, "internal.team-a", a.Name)
	assert.Equal(t, "istio-system", a.Namespace, "beside the Gateway, never in a tenant's namespace")
	assert.Equal(t, "internal.team-b", b.Name)
	assert.Equal(t, gwv1.ObjectName("internal"), a.Spec.ParentRef.Name)
	assert.Equal(t, []string{"api-ns-p-prod-a.example.com:443/HTTPS", "web-ns-p-prod-a.example.com:443/HTTPS"}, listenerHosts(a))
	for _, l := range a.Spec.Listeners {
		assert.Equal(t, gwv1.NamespacesFromSelector, *l.AllowedRoutes.Namespaces.From)
		assert.Equal(t, map[string]string{"kubernetes.io/metadata.name": "team-a"}, l.AllowedRoutes.Namespaces.Selector.MatchLabels)
		assert.Equal(t, []gwv1.RouteGroupKind{{Group: &gatewayAPIGroup, Kind: "HTTPRoute"}, {Group: &gatewayAPIGroup, Kind: "GRPCRoute"}}, l.AllowedRoutes.Kinds)
		require.Len(t, l.TLS.CertificateRefs, 1)
		assert.Equal(t, gwv1.ObjectName("tls"), l.TLS.CertificateRefs[0].Name)
		assert.Nil(t, l.TLS.CertificateRefs[0].Namespace, "the Secret is in the ListenerSet's namespace")
	}
	assert.Equal(t, "team-a", a.Labels["router.io/source-namespace"])
	assert.Equal(t, "1", a.Labels[LabelListenerSetShard])
	assert.Empty(t, got.HTTPRoutes)
	assert.Empty(t, got.ReferenceGrants)
}

func TestGatewayAPI_PlainHTTPAsTheClassicBackend(t *testing.T) {
	hosts := []RouteHost{{"team-a", "api.example.com"}}
	cases := []struct {
		name             string
		credential       string
		plain            routingv1alpha1.PlainHTTP
		gatewayListeners []string
		hostListeners    []string
		redirectRoute    bool
	}{
		{"HTTPS only", "tls", routingv1alpha1.PlainHTTPDisabled, []string{"target:443/HTTPS"}, []string{"api.example.com:443/HTTPS"}, false},
		{"HTTPS and HTTP", "tls", routingv1alpha1.PlainHTTPServe, []string{"target:443/HTTPS"}, []string{"api.example.com:443/HTTPS", "api.example.com:80/HTTP"}, false},
		{"HTTP only", "", routingv1alpha1.PlainHTTPServe, []string{"target:80/HTTP"}, []string{"api.example.com:80/HTTP"}, false},
		{"redirect", "tls", routingv1alpha1.PlainHTTPRedirectToHTTPS, []string{"target:443/HTTPS", "http-redirect:80/HTTP"}, []string{"api.example.com:443/HTTPS"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gw := apiGateway(func(s *routingv1alpha1.GatewaySpec) { s.CredentialName, s.PlainHTTP = c.credential, c.plain })
			got := GatewayAPI(gw, target, "istio-system", hosts, nil)
			var gl []string
			for _, l := range got.Gateway.Spec.Listeners {
				gl = append(gl, fmt.Sprintf("%s:%d/%s", l.Name, l.Port, l.Protocol))
				assert.Equal(t, l.Protocol == gwv1.HTTPSProtocolType, l.TLS != nil)
			}
			assert.Equal(t, c.gatewayListeners, gl)
			require.Len(t, got.ListenerSets, 1)
			assert.Equal(t, c.hostListeners, listenerHosts(got.ListenerSets[0]))
			if !c.redirectRoute {
				assert.Empty(t, got.HTTPRoutes)
				return
			}
			require.Len(t, got.HTTPRoutes, 1)
			r := got.HTTPRoutes[0]
			assert.Equal(t, "internal-https-redirect", r.Name)
			assert.Equal(t, gwv1.SectionName("http-redirect"), *r.Spec.ParentRefs[0].SectionName)
			f := r.Spec.Rules[0].Filters[0]
			assert.Equal(t, gwv1.HTTPRouteFilterRequestRedirect, f.Type)
			assert.Equal(t, "https", *f.RequestRedirect.Scheme)
			assert.Equal(t, 301, *f.RequestRedirect.StatusCode)
		})
	}
}

func TestGatewayAPI_SecretInTheIngressNamespaceGetsAReferenceGrant(t *testing.T) {
	gw := apiGateway(func(s *routingv1alpha1.GatewaySpec) { s.IngressNamespace = "aks-istio-ingress" })

	got := GatewayAPI(gw, target, "aks-istio-ingress", []RouteHost{{"team-a", "api.example.com"}}, nil)

	ref := got.ListenerSets[0].Spec.Listeners[0].TLS.CertificateRefs[0]
	require.NotNil(t, ref.Namespace)
	assert.Equal(t, gwv1.Namespace("aks-istio-ingress"), *ref.Namespace)
	assert.Equal(t, gwv1.Namespace("aks-istio-ingress"), *got.Gateway.Spec.Listeners[0].TLS.CertificateRefs[0].Namespace)
	require.Len(t, got.ReferenceGrants, 1)
	rg := got.ReferenceGrants[0]
	assert.Equal(t, "aks-istio-ingress", rg.Namespace)
	assert.Empty(t, rg.OwnerReferences, "an owner in another namespace would be taken for a missing one")
	assert.Equal(t, []gwv1.ReferenceGrantFrom{
		{Group: "gateway.networking.k8s.io", Kind: "Gateway", Namespace: "istio-system"},
		{Group: "gateway.networking.k8s.io", Kind: "ListenerSet", Namespace: "istio-system"},
	}, rg.Spec.From)
	require.Len(t, rg.Spec.To, 1)
	assert.Equal(t, gwv1.ObjectName("tls"), *rg.Spec.To[0].Name, "only the gateway's own Secret")
	assert.Equal(t, apply.Owned, ReferenceGrantKind("istio-system", "internal").Ownership(rg))
	assert.Equal(t, apply.Foreign, ReferenceGrantKind("istio-system", "external").Ownership(rg))
}

func TestGatewayAPI_ListenerCapsAreRespected(t *testing.T) {
	cases := []struct {
		name      string
		plain     routingv1alpha1.PlainHTTP
		hosts     int
		wantSets  []int // hostnames per ListenerSet
		listeners int   // per hostname
	}{
		{"HTTPS: 64 hostnames fill one ListenerSet", routingv1alpha1.PlainHTTPDisabled, 64, []int{64}, 1},
		{"HTTPS: the 65th opens a second", routingv1alpha1.PlainHTTPDisabled, 65, []int{64, 1}, 1},
		{"HTTPS and HTTP: 32 hostnames per ListenerSet", routingv1alpha1.PlainHTTPServe, 70, []int{32, 32, 6}, 2},
		{"3,000 hostnames in one namespace", routingv1alpha1.PlainHTTPServe, 3000, append(repeat(32, 93), 24), 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gw := apiGateway(func(s *routingv1alpha1.GatewaySpec) { s.PlainHTTP = c.plain })
			got := GatewayAPI(gw, target, "istio-system", hostsIn("team-a", c.hosts), nil)
			var sizes []int
			names := map[string]bool{}
			for i, s := range got.ListenerSets {
				assert.LessOrEqual(t, len(s.Spec.Listeners), MaxListeners)
				sizes = append(sizes, len(s.Spec.Listeners)/c.listeners)
				assert.Equal(t, ListenerSetName("internal", "team-a", i+1), s.Name)
				names[s.Name] = true
				seen := map[gwv1.SectionName]bool{}
				for _, l := range s.Spec.Listeners {
					assert.False(t, seen[l.Name], "listener names are unique in a ListenerSet")
					seen[l.Name] = true
				}
			}
			assert.Equal(t, c.wantSets, sizes)
			assert.Len(t, names, len(got.ListenerSets))
			assert.LessOrEqual(t, len(got.Gateway.Spec.Listeners), MaxListeners)
		})
	}
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// A hostname stays in the ListenerSet its HTTPRoutes name while there is room there: removing
// older routes does not move the younger ones.
func TestGatewayAPI_HostnamesStayInTheirListenerSet(t *testing.T) {
	gw := apiGateway(nil)
	all := hostsIn("team-a", 70) // 64 in .team-a, 6 in .team-a.2
	before := GatewayAPI(gw, target, "istio-system", all, nil)
	require.Len(t, before.ListenerSets, 2)
	moved := all[64:]

	// The ten oldest routes go; their room in the first ListenerSet is not filled by moving others.
	after := GatewayAPI(gw, target, "istio-system", all[10:], before.ListenerSets)

	require.Len(t, after.ListenerSets, 2)
	assert.Len(t, after.ListenerSets[0].Spec.Listeners, 54)
	assert.Equal(t, "internal.team-a.2", after.ListenerSets[1].Name)
	for _, h := range moved {
		assert.Contains(t, listenerHosts(after.ListenerSets[1]), h.Hostname+":443/HTTPS")
	}

	// A new route fills the room the old ones left.
	fresh := RouteHost{Namespace: "team-a", Hostname: "new-ns-p-prod-team-a.example.com"}
	again := GatewayAPI(gw, target, "istio-system", append(all[10:], fresh), after.ListenerSets)
	assert.Contains(t, listenerHosts(again.ListenerSets[0]), fresh.Hostname+":443/HTTPS")
	assert.Len(t, again.ListenerSets[1].Spec.Listeners, 6)

	// The last hostnames of the second ListenerSet go: it goes too.
	gone := GatewayAPI(gw, target, "istio-system", all[:64], again.ListenerSets)
	assert.Len(t, gone.ListenerSets, 1)
}

func TestShard(t *testing.T) {
	cases := []struct {
		name    string
		hosts   []string
		current map[string]int
		perSet  int
		want    map[int][]string
	}{
		{"empty", nil, nil, 2, map[int][]string{}},
		{"fills in order", []string{"a", "b", "c"}, nil, 2, map[int][]string{1: {"a", "b"}, 2: {"c"}}},
		{"keeps placements", []string{"a", "b", "c"}, map[string]int{"c": 1}, 2, map[int][]string{1: {"c", "a"}, 2: {"b"}}},
		{"a placement past the room moves", []string{"a", "b", "c"}, map[string]int{"a": 3, "b": 3, "c": 3}, 2, map[int][]string{3: {"a", "b"}, 1: {"c"}}},
		{"an invalid placement is ignored", []string{"a"}, map[string]int{"a": 0}, 2, map[int][]string{1: {"a"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Shard(c.hosts, c.current, c.perSet))
		})
	}
}

func TestListenerSetName_StaysAValidName(t *testing.T) {
	assert.Equal(t, "gw.team", ListenerSetName("gw", "team", 1))
	assert.Equal(t, "gw.team.2", ListenerSetName("gw", "team", 2))
	assert.NotEqual(t, ListenerSetName("gw", "team-2", 1), ListenerSetName("gw", "team", 2))
	long := ListenerSetName(strings.Repeat("g", 240), strings.Repeat("n", 63), 3)
	assert.LessOrEqual(t, len(long), 253)
	assert.NotEqual(t, long, ListenerSetName(strings.Repeat("g", 240), strings.Repeat("n", 63), 4))
	gw := apiGateway(func(s *routingv1alpha1.GatewaySpec) { s.PlainHTTP = routingv1alpha1.PlainHTTPServe })
	host := strings.Repeat("a", 60) + "." + strings.Repeat("b", 60) + "." + strings.Repeat("c", 60) + "." + strings.Repeat("d", 60) + ".io"
	for _, l := range hostListeners(gw, "team", host, "istio-system") {
		assert.LessOrEqual(t, len(l.Name), 253)
	}
	assert.LessOrEqual(t, len(GatewayLabelValue(strings.Repeat("n", 63), strings.Repeat("g", 200))), 63)
}

func TestGatewayAPIKinds_OwnedOnlyWhenControlledByTheGateway(t *testing.T) {
	got := GatewayAPI(apiGateway(nil), target, "istio-system", []RouteHost{{"team-a", "a.example.com"}}, nil)
	ls := got.ListenerSets[0]
	assert.Equal(t, apply.Owned, ListenerSetKind("internal").Ownership(ls))
	assert.Equal(t, apply.Foreign, ListenerSetKind("other").Ownership(ls))
	foreign := ls.DeepCopy()
	foreign.Labels = nil
	assert.Equal(t, apply.Foreign, ListenerSetKind("internal").Ownership(foreign), "never touched without the managed-by label")
	foreign.Annotations = map[string]string{"router.io/adopt": "true"}
	assert.Equal(t, apply.Adoptable, ListenerSetKind("internal").Ownership(foreign))
	assert.Equal(t, apply.Owned, GatewayAPIGatewayKind("internal").Ownership(got.Gateway))

	k := ListenerSetKind("internal")
	current := ls.DeepCopy()
	current.Labels["team"] = "kept"
	assert.True(t, k.UpToDate(current, ls), "labels others add are not a difference")
	changed := GatewayAPI(apiGateway(nil), target, "istio-system", []RouteHost{{"team-a", "a.example.com"}, {"team-a", "b.example.com"}}, nil).ListenerSets[0]
	assert.False(t, k.UpToDate(current, changed))
	merged := k.Merge(current, changed)
	assert.Equal(t, "kept", merged.Labels["team"])
	assert.Len(t, merged.Spec.Listeners, 2)
}

func TestGatewayOfGrant(t *testing.T) {
	long := strings.Repeat("n", 40)
	for _, tt := range []struct {
		name                string
		labels, annotations map[string]string
		wantNamespace       string
		wantName            string
		wantOK              bool
	}{
		{"the annotation names it in full", map[string]string{LabelGateway: GatewayLabelValue("istio-system", long+long)},
			map[string]string{AnnotationGateway: "istio-system/" + long + long}, "istio-system", long + long, true},
		{"a grant from before the annotation: the label when not shortened", map[string]string{LabelGateway: "istio-system.default.gateway"}, nil,
			"istio-system", "default.gateway", true},
		{"a shortened label says nothing", map[string]string{LabelGateway: GatewayLabelValue("istio-system", long+long)}, nil, "", "", false},
		{"no label, no annotation", nil, nil, "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			grant := &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels, Annotations: tt.annotations}}
			ns, name, ok := GatewayOfGrant(grant)
			if ns != tt.wantNamespace || name != tt.wantName || ok != tt.wantOK {
				t.Errorf("GatewayOfGrant = %q, %q, %v; want %q, %q, %v", ns, name, ok, tt.wantNamespace, tt.wantName, tt.wantOK)
			}
		})
	}
	// What the operator writes leads back to its Gateway.
	gw := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: long + long}}
	if ns, name, ok := GatewayOfGrant(referenceGrant(gw, "aks-istio-ingress")); !ok || ns != gw.Namespace || name != gw.Name {
		t.Errorf("the written grant leads to %s/%s (%v), want its Gateway", ns, name, ok)
	}
}
