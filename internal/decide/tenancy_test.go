package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
)

func TestIngressNamespace(t *testing.T) {
	gw := gateway("cert")
	assert.Equal(t, "istio-system", IngressNamespace(gw), "default: the Gateway's own namespace")
	gw.Spec.IngressNamespace = "aks-istio-ingress"
	assert.Equal(t, "aks-istio-ingress", IngressNamespace(gw))
}

func TestIngressDecider(t *testing.T) {
	t0 := time.Now()
	at := func(name string, created time.Time) *routingv1alpha1.Gateway {
		gw := gateway("cert")
		gw.Name, gw.UID, gw.CreationTimestamp = name, types.UID(name), metav1.Time{Time: created}
		return gw
	}
	oldest, younger := at("platform", t0), at("later", t0.Add(time.Hour))
	deleting := at("deleting", t0.Add(-time.Hour))
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}

	got, ok := IngressDecider([]*routingv1alpha1.Gateway{younger, deleting, oldest})
	assert.True(t, ok)
	assert.Equal(t, "platform", got.Name, "the oldest Gateway of the pair decides; one being deleted does not")
	_, ok = IngressDecider(nil)
	assert.False(t, ok)
}

func TestAllowsRoutesFrom(t *testing.T) {
	allowed := func(from routingv1alpha1.FromNamespaces, selector *metav1.LabelSelector) *routingv1alpha1.Gateway {
		gw := gateway("cert")
		gw.Spec.AllowedRoutes = &routingv1alpha1.AllowedRoutes{Namespaces: &routingv1alpha1.RouteNamespaces{From: from, Selector: selector}}
		return gw
	}
	internal := &metav1.LabelSelector{MatchLabels: map[string]string{"gateway-access/internal": "true"}}
	teams := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}
	broken := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near", Values: []string{"a"}}}}
	tests := []struct {
		name      string
		gw        *routingv1alpha1.Gateway
		namespace string
		labels    map[string]string
		want      bool
	}{
		{"unset: every namespace (the architecture's behaviour)", gateway("cert"), "tenant-b", nil, true},
		{"namespaces unset: every namespace", func() *routingv1alpha1.Gateway {
			gw := gateway("cert")
			gw.Spec.AllowedRoutes = &routingv1alpha1.AllowedRoutes{}
			return gw
		}(), "tenant-b", nil, true},
		{"All", allowed(routingv1alpha1.NamespacesFromAll, nil), "tenant-b", nil, true},
		{"Same: the Gateway's namespace", allowed(routingv1alpha1.NamespacesFromSame, nil), "istio-system", nil, true},
		{"Same: another namespace", allowed(routingv1alpha1.NamespacesFromSame, nil), "tenant-b", nil, false},
		{"Selector: labels match", allowed(routingv1alpha1.NamespacesFromSelector, internal), "app1", map[string]string{"gateway-access/internal": "true"}, true},
		{"Selector: label value differs", allowed(routingv1alpha1.NamespacesFromSelector, internal), "tenant-b", map[string]string{"gateway-access/internal": "yes"}, false},
		{"Selector: no labels", allowed(routingv1alpha1.NamespacesFromSelector, internal), "tenant-b", nil, false},
		{"Selector: the Gateway's own namespace is not special", allowed(routingv1alpha1.NamespacesFromSelector, internal), "istio-system", nil, false},
		{"Selector: expression matches", allowed(routingv1alpha1.NamespacesFromSelector, teams), "app1", map[string]string{"team": "b"}, true},
		{"Selector: expression does not match", allowed(routingv1alpha1.NamespacesFromSelector, teams), "app1", map[string]string{"team": "c"}, false},
		{"Selector without a selector admits nothing", allowed(routingv1alpha1.NamespacesFromSelector, nil), "app1", map[string]string{"team": "a"}, false},
		{"Selector that does not parse admits nothing", allowed(routingv1alpha1.NamespacesFromSelector, broken), "app1", map[string]string{"team": "a"}, false},
		{"empty Selector matches every namespace (label selector semantics)", allowed(routingv1alpha1.NamespacesFromSelector, &metav1.LabelSelector{}), "tenant-b", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, AllowsRoutesFrom(tt.gw, tt.namespace, tt.labels))
		})
	}
}

func TestIstioHost(t *testing.T) {
	gw := gateway("cert")
	assert.Equal(t, "app1/api-ns-d-dev-app1.example.com", IstioHost(gw, "app1", "api-ns-d-dev-app1.example.com"), "default: namespace-scoped")
	gw.Spec.IstioHostFormat = routingv1alpha1.IstioHostNamespaceScoped
	assert.Equal(t, "app1/api-ns-d-dev-app1.example.com", IstioHost(gw, "app1", "api-ns-d-dev-app1.example.com"))
	gw.Spec.IstioHostFormat = routingv1alpha1.IstioHostBare
	assert.Equal(t, "api-ns-d-dev-app1.example.com", IstioHost(gw, "app1", "api-ns-d-dev-app1.example.com"))
}

func TestApplicationAllowed(t *testing.T) {
	lists := func(apps string) map[string]string { return map[string]string{naming.AnnotationApplications: apps} }
	tests := []struct {
		name        string
		annotations map[string]string
		listedBy    []string
		want        bool
	}{
		{"nobody lists applications: every application", nil, nil, true},
		{"other annotations only", map[string]string{"team": "b"}, nil, true},
		{"reserved for another namespace", nil, []string{"app1ns"}, false},
		{"listed by the own namespace", lists("app1"), []string{"tenant-b"}, true},
		{"listed by the own namespace and by another", lists("app2,app1"), []string{"app1ns", "tenant-b"}, true},
		{"own list with spaces", lists(" app2 , app1 "), []string{"tenant-b"}, true},
		{"own list without it", lists("app2"), nil, false},
		{"own list without it, reserved elsewhere", lists("app2"), []string{"app1ns"}, false},
		{"empty own list allows nothing", lists(""), nil, false},
		{"a prefix is not a name", lists("app"), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, message := ApplicationAllowed("tenant-b", "app1", tt.annotations, tt.listedBy)
			assert.Equal(t, tt.want, got)
			if !got {
				assert.Contains(t, message, "app1")
				assert.NotContains(t, message, "app1ns", "who owns the application is not the route author's to read")
			}
		})
	}
}

func TestHostnameWinner(t *testing.T) {
	t0 := time.Now()
	claim := func(ns string, created time.Time) *routingv1alpha1.ServiceRoute {
		r := serviceRoute()
		r.Namespace, r.UID, r.CreationTimestamp = ns, types.UID(ns), metav1.Time{Time: created}
		return r
	}
	owner, squatter, later := claim("app1ns", t0), claim("tenant-b", t0.Add(-time.Hour)), claim("app1-v2", t0.Add(time.Hour))
	allowedExceptTenant := func(r *routingv1alpha1.ServiceRoute) bool { return r.Namespace != "tenant-b" }
	everyone := func(*routingv1alpha1.ServiceRoute) bool { return true }
	tests := []struct {
		name      string
		route     *routingv1alpha1.ServiceRoute
		claimants []*routingv1alpha1.ServiceRoute
		allowed   func(*routingv1alpha1.ServiceRoute) bool
		want      string // namespace of the winner; "" when route wins
	}{
		{"alone", owner, []*routingv1alpha1.ServiceRoute{owner}, everyone, ""},
		{"the oldest claim wins", later, []*routingv1alpha1.ServiceRoute{owner, later}, everyone, "app1ns"},
		{"the oldest is itself", owner, []*routingv1alpha1.ServiceRoute{later, owner}, everyone, ""},
		{"an older claim whose application is not allowed does not count", owner, []*routingv1alpha1.ServiceRoute{squatter, owner}, allowedExceptTenant, ""},
		{"the next allowed claimant is promoted, never the squatter", later, []*routingv1alpha1.ServiceRoute{squatter, later}, allowedExceptTenant, ""},
		{"the allowed owner beats a younger route", later, []*routingv1alpha1.ServiceRoute{squatter, owner, later}, allowedExceptTenant, "app1ns"},
		{"without a rule the older squatter would win", owner, []*routingv1alpha1.ServiceRoute{squatter, owner}, everyone, "tenant-b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HostnameWinner(tt.route, tt.claimants, tt.allowed)
			if tt.want == "" {
				assert.Nil(t, got)
				return
			}
			if assert.NotNil(t, got) {
				assert.Equal(t, tt.want, got.Namespace)
			}
		})
	}
}
