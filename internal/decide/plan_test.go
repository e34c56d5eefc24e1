package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/policy"
)

func identity(adopts ...string) *clusterv1alpha1.ClusterIdentity {
	return &clusterv1alpha1.ClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-identity"},
		Spec:       clusterv1alpha1.ClusterIdentitySpec{Region: "weu", Cluster: "aks01", Domain: "example.com", EnvironmentLetter: "d", AdoptsRegions: adopts},
	}
}

func configuration(controllers ...string) *clusterv1alpha1.DNSConfiguration {
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dns-config"}}
	for _, region := range controllers {
		cfg.Spec.ExternalDNSControllers = append(cfg.Spec.ExternalDNSControllers, clusterv1alpha1.ExternalDNSController{Name: "external-dns-" + region, Region: region})
	}
	return cfg
}

func TestClusterIdentity(t *testing.T) {
	longCluster := identity()
	longCluster.Spec.Cluster = "c-very-long-cluster-name-that-almost-fills-a-whole-dns-label"
	tests := []struct {
		name       string
		ci         *clusterv1alpha1.ClusterIdentity
		cfg        *clusterv1alpha1.DNSConfiguration
		wantReady  bool
		wantReason string
		wantPhase  string
	}{
		{"consistent", identity(), configuration("weu", "neu"), true, "ValidationSucceeded", "Active"},
		{"consistent with adoption", identity("frc"), configuration("weu", "neu", "frc"), true, "ValidationSucceeded", "Active"},
		{"no DNSConfiguration", identity(), nil, false, "DNSConfigurationNotFound", "Active"},
		{"own region without controller", identity(), configuration("neu"), false, "RegionWithoutController", "Active"},
		{"adopted region without controller", identity("frc", "swc"), configuration("weu", "frc"), false, "AdoptedRegionWithoutController", "Active"},
		{"target label cannot fit", longCluster, configuration("weu"), false, "TargetHostnameTooLong", "Failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ClusterIdentity(tt.ci, tt.cfg)
			assert.Equal(t, tt.wantReady, got.Ready)
			assert.Equal(t, tt.wantReason, got.Reason)
			assert.Equal(t, tt.wantPhase, got.Phase)
			assert.NotEmpty(t, got.Message)
		})
	}
	assert.Contains(t, ClusterIdentity(identity("frc", "swc"), configuration("weu", "frc")).Message, "swc", "the message names the orphan region")
}

func dnsPolicy(name string, created time.Time, mode routingv1alpha1.DNSPolicyMode, sourceRegion string) *routingv1alpha1.DNSPolicy {
	return &routingv1alpha1.DNSPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "myapp", UID: types.UID(name), Generation: 1, CreationTimestamp: metav1.NewTime(created)},
		Spec:       routingv1alpha1.DNSPolicySpec{Mode: mode, SourceRegion: sourceRegion},
	}
}

func TestPolicy(t *testing.T) {
	t0 := time.Now()
	p := dnsPolicy("myapp-dns", t0, "Active", "")
	tests := []struct {
		name       string
		in         PolicyInputs
		wantPhase  string
		wantReady  bool
		wantActive bool
		want       []string
		wantKeep   bool
		wantReason string
	}{
		{"active", PolicyInputs{Policy: p, Identity: identity(), Configuration: configuration("weu", "neu"), InForce: p}, "Active", true, true, []string{"external-dns-weu"}, false, "PolicyActive"},
		{"inactive is a healthy state", PolicyInputs{Policy: dnsPolicy("p", t0, "RegionBound", "neu"), Identity: identity(), Configuration: configuration("weu", "neu")}, "Inactive", true, false, nil, false, "PolicyInactive"},
		{"no controller for the region", PolicyInputs{Policy: p, Identity: identity(), Configuration: configuration("neu"), InForce: p}, "Active", false, true, nil, false, "NoActiveControllers"},
		{"identity missing keeps activation", PolicyInputs{Policy: p, Configuration: configuration("weu"), InForce: p}, "Pending", false, false, nil, true, "ClusterIdentityNotFound"},
		{"configuration missing keeps activation", PolicyInputs{Policy: p, Identity: identity(), InForce: p}, "Pending", false, false, nil, true, "DNSConfigurationNotFound"},
		{"younger duplicate is inactive", PolicyInputs{Policy: dnsPolicy("second", t0.Add(time.Minute), "Active", ""), Identity: identity(), Configuration: configuration("weu"), InForce: p}, "Failed", false, false, nil, false, "DuplicatePolicy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Policy(tt.in)
			assert.Equal(t, tt.wantPhase, got.Phase)
			assert.Equal(t, tt.wantReady, got.Ready)
			assert.Equal(t, tt.wantActive, got.Active)
			assert.Equal(t, tt.want, got.ActiveControllers)
			assert.Equal(t, tt.wantKeep, got.KeepActivation)
			assert.Equal(t, tt.wantReason, got.Reason)
		})
	}
}

func TestOldest(t *testing.T) {
	t0 := time.Now()
	a := dnsPolicy("a", t0.Add(time.Minute), "Active", "")
	b := dnsPolicy("b", t0, "Active", "")
	c := dnsPolicy("c", t0, "Active", "")
	deleting := dnsPolicy("0-deleting", t0.Add(-time.Hour), "Active", "")
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}

	got, ok := Oldest([]*routingv1alpha1.DNSPolicy{a, c, deleting, b})
	require.True(t, ok)
	assert.Equal(t, "b", got.Name, "oldest, then by name; objects being deleted do not count")
	_, ok = Oldest([]*routingv1alpha1.DNSPolicy{deleting})
	assert.False(t, ok)
}

func serviceRoute() *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{
		ObjectMeta: metav1.ObjectMeta{Name: "api-route", Namespace: "myapp", UID: "route-uid", Generation: 1},
		Spec:       routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: "default-gateway", GatewayNamespace: "istio-system", Environment: "dev", Application: "myapp"},
	}
}

func gateway(credential string) *routingv1alpha1.Gateway {
	return &routingv1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: "istio-system", UID: "gw-uid"},
		Spec:       routingv1alpha1.GatewaySpec{Controller: "aks-istio-ingressgateway-internal", CredentialName: credential, TargetPostfix: "internal"},
	}
}

func evaluated(p *routingv1alpha1.DNSPolicy, active bool, controllers ...string) *routingv1alpha1.DNSPolicy {
	p = p.DeepCopy()
	p.Status = routingv1alpha1.DNSPolicyStatus{ObservedGeneration: p.Generation, Active: active, ActiveControllers: controllers, Phase: routingv1alpha1.PhaseInactive}
	if active {
		p.Status.Phase = routingv1alpha1.PhaseActive
	}
	return p
}

func TestRoute(t *testing.T) {
	t0 := time.Now()
	regionBound := dnsPolicy("myapp-dns", t0, "RegionBound", "weu")
	// A policy whose status is stale or wrong: the route evaluates the spec itself, so these
	// never decide anything (GitOps renames, no-op edits, a status computed before a change).
	staleInactive := evaluated(regionBound, false)
	staleInactive.Generation = 2
	duplicateStatus := regionBound.DeepCopy()
	duplicateStatus.Status = routingv1alpha1.DNSPolicyStatus{Phase: routingv1alpha1.PhaseFailed, ObservedGeneration: 1}
	otherRegion := dnsPolicy("myapp-dns", t0, "RegionBound", "neu")
	active := dnsPolicy("myapp-dns", t0, "Active", "")
	winner := serviceRoute()
	winner.Namespace = "other"
	sameGateway := func(mutate func(*routingv1alpha1.Gateway)) *routingv1alpha1.Gateway {
		gw := gateway("cert")
		mutate(gw)
		return gw
	}
	onlySame := sameGateway(func(gw *routingv1alpha1.Gateway) {
		gw.Spec.AllowedRoutes = &routingv1alpha1.AllowedRoutes{Namespaces: &routingv1alpha1.RouteNamespaces{From: routingv1alpha1.NamespacesFromSame}}
	})
	bySelector := sameGateway(func(gw *routingv1alpha1.Gateway) {
		gw.Spec.AllowedRoutes = &routingv1alpha1.AllowedRoutes{Namespaces: &routingv1alpha1.RouteNamespaces{From: routingv1alpha1.NamespacesFromSelector,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"gateway-access/internal": "true"}}}}
	})
	lists := func(apps string) map[string]string { return map[string]string{naming.AnnotationApplications: apps} }

	base := RouteInputs{Route: serviceRoute(), Identity: identity(), Configuration: configuration("weu", "neu"), Policy: regionBound, Gateway: gateway("cert")}
	with := func(mutate func(*RouteInputs)) RouteInputs { in := base; mutate(&in); return in }

	tests := []struct {
		name          string
		in            RouteInputs
		wantPhase     string
		wantReason    string
		wantSync      bool
		wantEndpoints []string
	}{
		{"RegionBound in its source region: every region", base, "Active", "ReconciliationSucceeded", true, []string{"api-route-external-dns-weu", "api-route-external-dns-neu"}},
		{"Active: own region only", with(func(in *RouteInputs) { in.Policy = active }), "Active", "ReconciliationSucceeded", true, []string{"api-route-external-dns-weu"}},
		// Missing inputs: nothing definite, everything is kept.
		{"identity missing keeps records", with(func(in *RouteInputs) { in.Identity = nil }), "Pending", "ClusterIdentityNotFound", false, nil},
		{"configuration missing keeps records", with(func(in *RouteInputs) { in.Configuration = nil }), "Pending", "DNSConfigurationNotFound", false, nil},
		{"DNSEndpoint API missing keeps everything", with(func(in *RouteInputs) { in.EndpointsAPIMissing = true }), "Pending", "ExternalDNSNotInstalled", false, nil},
		// A policy's status is never taken as the answer.
		{"stale inactive policy status is ignored", with(func(in *RouteInputs) { in.Policy = staleInactive }), "Active", "ReconciliationSucceeded", true, []string{"api-route-external-dns-weu", "api-route-external-dns-neu"}},
		{"a younger policy's DuplicatePolicy status is ignored once it is in force", with(func(in *RouteInputs) { in.Policy = duplicateStatus }), "Active", "ReconciliationSucceeded", true, []string{"api-route-external-dns-weu", "api-route-external-dns-neu"}},
		// Definite answers: the records go.
		{"policy missing deletes records", with(func(in *RouteInputs) { in.Policy = nil }), "Pending", "DNSPolicyNotFound", true, nil},
		{"policy inactive here deletes records", with(func(in *RouteInputs) { in.Policy = otherRegion }), "Pending", "DNSPolicyInactive", true, nil},
		{"gateway missing", with(func(in *RouteInputs) { in.Gateway = nil }), "Failed", "GatewayNotFound", true, nil},
		{"hostname claimed by an older route", with(func(in *RouteInputs) { in.Winner = winner }), "Pending", "HostnameConflict", true, nil},
		{"no controller for the policy's regions", with(func(in *RouteInputs) { in.Policy = active; in.Configuration = configuration("neu") }), "Pending", "NoActiveControllers", true, nil},
		{"controller gone from the DNSConfiguration loses its record", with(func(in *RouteInputs) { in.Configuration = configuration("neu") }), "Active", "ReconciliationSucceeded", true, []string{"api-route-external-dns-neu"}},
		// Multi-tenancy: what the platform decides about namespaces.
		{"application reserved for another namespace", with(func(in *RouteInputs) { in.ApplicationListedBy = []string{"myapp-prod"} }), "Failed", "ApplicationNotAllowed", true, nil},
		{"application not in the namespace's list", with(func(in *RouteInputs) { in.NamespaceAnnotations = lists("other, third") }), "Failed", "ApplicationNotAllowed", true, nil},
		{"an empty list allows no application", with(func(in *RouteInputs) { in.NamespaceAnnotations = lists("") }), "Failed", "ApplicationNotAllowed", true, nil},
		{"application in the namespace's list", with(func(in *RouteInputs) {
			in.NamespaceAnnotations = lists("other, myapp")
			in.ApplicationListedBy = []string{"myapp", "myapp-prod"}
		}), "Active", "ReconciliationSucceeded", true, []string{"api-route-external-dns-weu", "api-route-external-dns-neu"}},
		{"application reserved by the route's own namespace only", with(func(in *RouteInputs) {
			in.NamespaceAnnotations = lists("myapp")
			in.ApplicationListedBy = []string{"myapp"}
		}), "Active", "ReconciliationSucceeded", true, []string{"api-route-external-dns-weu", "api-route-external-dns-neu"}},
		{"a not allowed application is reported before a hostname conflict", with(func(in *RouteInputs) {
			in.ApplicationListedBy = []string{"myapp-prod"}
			in.Winner = winner
		}), "Failed", "ApplicationNotAllowed", true, nil},
		{"a not allowed application keeps records while an input is missing", with(func(in *RouteInputs) {
			in.ApplicationListedBy = []string{"myapp-prod"}
			in.Configuration = nil
		}), "Pending", "DNSConfigurationNotFound", false, nil},
		{"gateway allows only its own namespace", with(func(in *RouteInputs) { in.Gateway = onlySame }), "Failed", "NotAllowedByGateway", true, nil},
		{"gateway selector does not match the namespace", with(func(in *RouteInputs) {
			in.Gateway = bySelector
			in.NamespaceLabels = map[string]string{"gateway-access/internal": "false"}
		}), "Failed", "NotAllowedByGateway", true, nil},
		{"gateway selector matches the namespace", with(func(in *RouteInputs) {
			in.Gateway = bySelector
			in.NamespaceLabels = map[string]string{"gateway-access/internal": "true", "team": "a"}
		}), "Active", "ReconciliationSucceeded", true, []string{"api-route-external-dns-weu", "api-route-external-dns-neu"}},
		{"hostname too long", with(func(in *RouteInputs) {
			in.Identity = identity()
			in.Identity.Spec.Domain = longDomain()
		}), "Failed", "InvalidHostname", true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Route(tt.in)
			assert.Equal(t, tt.wantPhase, got.Phase)
			assert.Equal(t, tt.wantReason, got.Reason)
			assert.Equal(t, tt.wantReason == "ReconciliationSucceeded", got.Ready)
			assert.Equal(t, tt.wantSync, got.Sync)
			var names []string
			for _, ep := range got.Endpoints {
				names = append(names, ep.Name)
			}
			assert.Equal(t, tt.wantEndpoints, names)
			assert.NotEmpty(t, got.Message)
			if !tt.wantSync {
				assert.Contains(t, got.Message, "kept", "a kept state says so")
			}
			if tt.wantReason == "InvalidHostname" {
				assert.Empty(t, got.Hostname, "an invalid name never reaches status")
			}
		})
	}

	got := Route(base)
	assert.Equal(t, "api-ns-d-dev-myapp.example.com", got.Hostname)
	assert.Equal(t, "aks01-weu-internal.example.com", got.Target)
	assert.Equal(t, endpoint.Targets{"aks01-weu-internal.example.com"}, got.Endpoints[1].Spec.Endpoints[0].Targets)
	assert.Equal(t, "neu", got.Endpoints[1].Labels[naming.LabelRegion])

	// What a route's author reads in its status names nothing outside the route's namespace and
	// reference: not the winner of a hostname in another namespace, not who reserved the
	// application, not the Gateway's selector.
	elsewhere := Route(with(func(in *RouteInputs) { in.Winner = winner })).Message
	assert.NotContains(t, elsewhere, "other/")
	assert.NotContains(t, elsewhere, "api-route")
	assert.Contains(t, elsewhere, "another namespace")
	sameNamespaceWinner := serviceRoute()
	sameNamespaceWinner.Name = "api-route-v1"
	assert.Contains(t, Route(with(func(in *RouteInputs) { in.Winner = sameNamespaceWinner })).Message, "api-route-v1", "a winner in the same namespace is named")
	reserved := Route(with(func(in *RouteInputs) { in.ApplicationListedBy = []string{"myapp-prod"} })).Message
	assert.NotContains(t, reserved, "myapp-prod")
	notAllowed := Route(with(func(in *RouteInputs) { in.Gateway = bySelector })).Message
	assert.Contains(t, notAllowed, "istio-system/default-gateway")
	assert.NotContains(t, notAllowed, "gateway-access")
}

func longDomain() string {
	label := "d123456789012345678901234567890123456789012345678901234567890"
	return label + "." + label + "." + label + "." + label
}

func TestGateway(t *testing.T) {
	addrs := ingress.Addresses{IPv4: []string{"10.1.2.3"}}
	noAddr := ingress.Addresses{}
	base := GatewayInputs{Gateway: gateway("cert"), Identity: identity(), Hosts: []string{"web-ns-d-dev-myapp.example.com", "api-ns-d-dev-myapp.example.com", "api-ns-d-dev-myapp.example.com"}, Service: &addrs, ServiceName: "istio-system/lb"}
	with := func(mutate func(*GatewayInputs)) GatewayInputs { in := base; mutate(&in); return in }
	tests := []struct {
		name       string
		in         GatewayInputs
		wantPhase  string
		wantReason string
		wantSync   bool
		wantHosts  []string
		wantIP     string
	}{
		{"hosts sorted and unique", base, "Active", "GatewayCreated", true, []string{"api-ns-d-dev-myapp.example.com", "web-ns-d-dev-myapp.example.com"}, "10.1.2.3"},
		{"no routes: no Istio Gateway", with(func(in *GatewayInputs) { in.Hosts = nil }), "Active", "NoServiceRoutes", true, nil, "10.1.2.3"},
		{"identity missing leaves the Istio Gateway", with(func(in *GatewayInputs) { in.Identity = nil }), "Pending", "ClusterIdentityNotFound", false, nil, ""},
		{"no credential: no Istio Gateway", with(func(in *GatewayInputs) { in.Gateway = gateway("") }), "Failed", "CredentialNameMissing", true, nil, ""},
		{"no credential, a redirect to nowhere: no Istio Gateway", with(func(in *GatewayInputs) {
			in.Gateway = gateway("")
			in.Gateway.Spec.PlainHTTP = routingv1alpha1.PlainHTTPRedirectToHTTPS
		}), "Failed", "CredentialNameMissing", true, nil, ""},
		{"no credential, plain HTTP: served over HTTP", with(func(in *GatewayInputs) {
			in.Gateway = gateway("")
			in.Gateway.Spec.PlainHTTP = routingv1alpha1.PlainHTTPServe
		}), "Active", "GatewayCreated", true, []string{"api-ns-d-dev-myapp.example.com", "web-ns-d-dev-myapp.example.com"}, "10.1.2.3"},
		{"no load balancer", with(func(in *GatewayInputs) { in.Service = nil }), "Pending", "LoadBalancerNotFound", true, []string{"api-ns-d-dev-myapp.example.com", "web-ns-d-dev-myapp.example.com"}, ""},
		{"load balancer without address", with(func(in *GatewayInputs) { in.Service = &noAddr }), "Pending", "LoadBalancerAddressPending", true, []string{"api-ns-d-dev-myapp.example.com", "web-ns-d-dev-myapp.example.com"}, ""},
		{"Istio not installed: nothing generated, address reported", with(func(in *GatewayInputs) { in.IstioAPIMissing = true }), "Pending", "IstioNotInstalled", false, []string{"api-ns-d-dev-myapp.example.com", "web-ns-d-dev-myapp.example.com"}, "10.1.2.3"},
		{"target hostname invalid", with(func(in *GatewayInputs) {
			in.Identity = identity()
			in.Identity.Spec.Domain = longDomain() + ".d1234567890123456789012345678901234567890123456789012345678.com"
		}), "Failed", "InvalidHostname", true, []string{"api-ns-d-dev-myapp.example.com", "web-ns-d-dev-myapp.example.com"}, ""},
		{"the gateway decides its pair's ingress namespace", with(func(in *GatewayInputs) { in.IngressDecider = in.Gateway }), "Active", "GatewayCreated", true, []string{"api-ns-d-dev-myapp.example.com", "web-ns-d-dev-myapp.example.com"}, "10.1.2.3"},
		{"an older gateway of the pair names the same ingress namespace", with(func(in *GatewayInputs) { in.IngressDecider = olderGateway("istio-system", "") }), "Active", "GatewayCreated", true, []string{"api-ns-d-dev-myapp.example.com", "web-ns-d-dev-myapp.example.com"}, "10.1.2.3"},
		{"an older gateway of the pair takes the ingress from another namespace", with(func(in *GatewayInputs) { in.IngressDecider = olderGateway("platform", "aks-istio-ingress") }), "Failed", "IngressNamespaceConflict", true, []string{"api-ns-d-dev-myapp.example.com", "web-ns-d-dev-myapp.example.com"}, ""},
		{"an older gateway elsewhere naming this gateway's namespace agrees", with(func(in *GatewayInputs) { in.IngressDecider = olderGateway("platform", "istio-system") }), "Active", "GatewayCreated", true, []string{"api-ns-d-dev-myapp.example.com", "web-ns-d-dev-myapp.example.com"}, "10.1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Gateway(tt.in)
			assert.Equal(t, tt.wantPhase, got.Phase)
			assert.Equal(t, tt.wantReason, got.Reason)
			assert.Equal(t, tt.wantSync, got.SyncIstio)
			assert.Equal(t, tt.wantHosts, got.Hosts)
			assert.Equal(t, tt.wantIP, got.LoadBalancerIP)
			assert.Equal(t, tt.wantReason == "ClusterIdentityNotFound", got.Keep)
			if tt.wantReason == "InvalidHostname" {
				assert.Empty(t, got.Target, "an invalid name never reaches status")
			}
		})
	}
	assert.Equal(t, "aks01-weu-internal.example.com", Gateway(base).Target)
}

// olderGateway is another Gateway of the same pair, created before gateway(), in namespace with
// spec.ingressNamespace ingressNamespace.
func olderGateway(namespace, ingressNamespace string) *routingv1alpha1.Gateway {
	gw := gateway("cert")
	gw.Name, gw.Namespace, gw.UID = "older", namespace, "older-uid"
	gw.Spec.IngressNamespace = ingressNamespace
	return gw
}

func TestIngress(t *testing.T) {
	pair := desired.Ingress{Controller: "aks-istio-ingressgateway-internal", TargetPostfix: "internal"}
	svc := &IngressService{Namespace: "aks-istio-ingress", Addresses: ingress.Addresses{IPv4: []string{"10.1.2.3"}}}
	base := IngressInputs{Ingress: pair, Gateways: []*routingv1alpha1.Gateway{gateway("cert")}, Identity: identity(), Configuration: configuration("weu", "neu"), Service: svc}
	with := func(mutate func(*IngressInputs)) IngressInputs { in := base; mutate(&in); return in }
	tests := []struct {
		name     string
		in       IngressInputs
		wantSync bool
		want     []string
	}{
		{"one endpoint per ExternalDNS controller", base, true, []string{
			"gateway-controller-aks-istio-ingressgateway-internal-internal-external-dns-weu",
			"gateway-controller-aks-istio-ingressgateway-internal-internal-external-dns-neu"}},
		{"no gateway left: delete", with(func(in *IngressInputs) { in.Gateways = nil }), true, nil},
		{"no load balancer: existing records kept", with(func(in *IngressInputs) { in.Service = nil }), false, nil},
		{"no address yet: existing records kept", with(func(in *IngressInputs) { in.Service = &IngressService{Namespace: "x"} }), false, nil},
		{"target hostname invalid: delete", with(func(in *IngressInputs) {
			in.Identity = identity()
			in.Identity.Spec.Domain = longDomain() + ".d1234567890123456789012345678901234567890123456789012345678.com"
		}), true, nil},
		{"one controller left in the configuration", with(func(in *IngressInputs) { in.Configuration = configuration("neu") }), true, []string{
			"gateway-controller-aks-istio-ingressgateway-internal-internal-external-dns-neu"}},
		{"identity missing: keep", with(func(in *IngressInputs) { in.Identity = nil }), false, nil},
		{"configuration missing: keep", with(func(in *IngressInputs) { in.Configuration = nil }), false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Ingress(tt.in)
			assert.Equal(t, tt.wantSync, got.Sync)
			var names []string
			for _, ep := range got.Endpoints {
				names = append(names, ep.Name)
				assert.Equal(t, "aks-istio-ingress", ep.Namespace, "address records live beside the ingress Service")
				assert.Equal(t, "aks01-weu-internal.example.com", ep.Spec.Endpoints[0].DNSName)
			}
			assert.Equal(t, tt.want, names)
		})
	}
}

func TestPublishes(t *testing.T) {
	published := serviceRoute()
	published.Status.Hostname = "api-ns-d-dev-myapp.example.com"
	published.Status.Endpoints = []routingv1alpha1.ManagedEndpoint{{Name: "api-route-external-dns-weu"}}
	assert.True(t, Publishes(published))

	keptWhileNotReady := published.DeepCopy()
	keptWhileNotReady.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "DNSConfigurationNotFound"}}
	assert.True(t, Publishes(keptWhileNotReady), "a route keeping its records keeps its Istio host")

	noRecords := published.DeepCopy()
	noRecords.Status.Endpoints = nil
	assert.False(t, Publishes(noRecords))
	noHostname := published.DeepCopy()
	noHostname.Status.Hostname = ""
	assert.False(t, Publishes(noHostname))
	deleting := published.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	assert.False(t, Publishes(deleting))
}

func TestMissing(t *testing.T) {
	_, _, missing := Missing(identity(), configuration("weu"), false)
	assert.False(t, missing)
	for name, tc := range map[string]struct {
		ci     *clusterv1alpha1.ClusterIdentity
		cfg    *clusterv1alpha1.DNSConfiguration
		noAPI  bool
		reason string
	}{
		"identity":        {nil, configuration("weu"), false, "ClusterIdentityNotFound"},
		"configuration":   {identity(), nil, false, "DNSConfigurationNotFound"},
		"DNSEndpoint API": {identity(), configuration("weu"), true, "ExternalDNSNotInstalled"},
	} {
		reason, message, missing := Missing(tc.ci, tc.cfg, tc.noAPI)
		assert.True(t, missing, name)
		assert.Equal(t, tc.reason, reason, name)
		assert.NotEmpty(t, message, name)
	}
}

func TestManagedEndpoints_StatusListsWhatIsPublished(t *testing.T) {
	r := serviceRoute()
	weu := desired.RouteEndpoint(r, policy.Controller{Name: "external-dns-weu", Region: "weu"}, "h.example.com", "t.example.com")
	neu := desired.RouteEndpoint(r, policy.Controller{Name: "external-dns-neu", Region: "neu"}, "h.example.com", "t.example.com")
	got, first := ManagedEndpoints([]*externaldnsv1alpha1.DNSEndpoint{weu, neu})
	assert.Equal(t, []routingv1alpha1.ManagedEndpoint{
		{Name: "api-route-external-dns-weu", Controller: "external-dns-weu", Region: "weu"},
		{Name: "api-route-external-dns-neu", Controller: "external-dns-neu", Region: "neu"},
	}, got)
	assert.Equal(t, "api-route-external-dns-weu", first)
	none, noFirst := ManagedEndpoints(nil)
	assert.Nil(t, none)
	assert.Empty(t, noFirst)
}
