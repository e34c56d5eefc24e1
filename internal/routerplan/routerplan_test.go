package routerplan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/naming"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(s) * time.Second)) }

// baseWorld is a cluster in region weu adopting nothing, with controllers in weu and neu, a
// Gateway "gw" in istio-system with its ingress Service, and namespace "app" with an Active
// policy and n routes r0..r(n-1) of application "shop".
func baseWorld(n int) *World {
	w := &World{
		Identity: &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName, UID: "ci"},
			Spec: clusterv1alpha1.ClusterIdentitySpec{Region: "weu", Cluster: "aks01", Domain: "example.com", EnvironmentLetter: "d"}},
		Configuration: &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName, UID: "cfg"},
			Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
				{Name: "external-dns-weu", Region: "weu"}, {Name: "external-dns-neu", Region: "neu"}}}},
		Namespaces: map[string]Namespace{
			"app":          {Labels: map[string]string{corev1.LabelMetadataName: "app", "team": "shop"}},
			"istio-system": {Labels: map[string]string{corev1.LabelMetadataName: "istio-system"}},
		},
		Policies: []*routingv1alpha1.DNSPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "app", UID: "pol", CreationTimestamp: at(0)},
			Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}}},
		Gateways: []*routingv1alpha1.Gateway{{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "istio-system", UID: "gw", CreationTimestamp: at(0)},
			Spec: routingv1alpha1.GatewaySpec{Controller: "ingress", CredentialName: "cert", TargetPostfix: "internal"}}},
		Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "ingress", Namespace: "istio-system", UID: "svc", CreationTimestamp: at(0),
			Labels: map[string]string{naming.IngressServiceSelector: "ingress"}},
			Spec:   corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}}}}},
	}
	for i := range n {
		w.Routes = append(w.Routes, route("app", fmt.Sprintf("r%d", i), fmt.Sprintf("svc%d", i), i+1))
	}
	return w
}

func route(ns, name, service string, created int) *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(ns + "-" + name), CreationTimestamp: at(created), Generation: 1},
		Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: service, GatewayName: "gw", GatewayNamespace: "istio-system", Environment: "dev", Application: "shop"}}
}

// converge makes w the state the operator leaves it in: the predicted DNSEndpoints and Istio
// Gateways exist (with UIDs), and statuses are written.
func converge(t *testing.T, w *World) *World {
	t.Helper()
	p := Predict(w, DefaultSettings)
	out := w.DeepCopy()
	out.Endpoints = nil
	for _, ep := range p.Endpoints {
		ep = ep.DeepCopy()
		if ep.UID == "" {
			ep.UID = types.UID("ep-" + key(ep))
		}
		out.Endpoints = append(out.Endpoints, ep)
	}
	out.IstioGateways = nil
	for _, gw := range out.Gateways {
		if hosts, ok := p.IstioHosts[key(gw)]; ok {
			ig := desired.IstioGateway(gw, hosts)
			ig.UID = types.UID("ig-" + key(gw))
			out.IstioGateways = append(out.IstioGateways, ig)
		}
		if o, ok := p.Gateways[key(gw)]; ok {
			gw.Status = o.Status
		}
	}
	for _, r := range out.Routes {
		r.Status = p.Routes[key(r)].Status
	}
	out.GatewayAPIGateways = withUIDs(p.GatewayAPIGateways)
	out.ListenerSets = withUIDs(p.ListenerSets)
	out.HTTPRoutes = withUIDs(p.HTTPRoutes)
	out.ReferenceGrants = withUIDs(p.ReferenceGrants)
	// A converged world predicts itself: nothing to do.
	again := Compare(out, Predict(out, DefaultSettings), DefaultSettings, nil)
	require.Empty(t, again.Routes, "a converged world's routes change")
	require.Empty(t, again.IstioHosts, "a converged world's hosts change")
	require.Empty(t, again.Gateways, "a converged world's Gateways change")
	require.Empty(t, again.GatewayAPIHosts, "a converged world's listeners change")
	require.Empty(t, again.Objects, "a converged world's generated objects change")
	require.Zero(t, again.RecordsRemoved)
	for _, z := range again.Zones {
		require.Empty(t, z.Created, z.Controller)
		require.Empty(t, z.Retargeted, z.Controller)
		require.Empty(t, z.Deleted, z.Controller)
	}
	return out
}

// withUIDs are copies of the objects, those just created given a UID as the API server would.
func withUIDs[T client.Object](objs []T) []T {
	out := make([]T, len(objs))
	for i, o := range objs {
		o = o.DeepCopyObject().(T)
		if o.GetUID() == "" {
			o.SetUID(types.UID("uid-" + key(o)))
		}
		out[i] = o
	}
	return out
}

func manifests(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := decodeAll(strings.NewReader(strings.Join(docs, "\n---\n")), "test")
	require.NoError(t, err)
	return objs
}

// planOf overlays the manifests on a converged world and compares.
func planOf(t *testing.T, w *World, del bool, s Settings, docs ...string) (Result, Prediction) {
	t.Helper()
	next := w.DeepCopy()
	changes, err := Overlay(next, manifests(t, docs...), del, "app", t0.Add(time.Hour))
	require.NoError(t, err)
	p := Predict(next, s)
	return Compare(w, p, s, changes), p
}

// summary is the zone changes as "zone: +created ~retargeted -deleted" with DNSEndpoint names.
func summary(r Result) []string {
	var out []string
	for _, z := range r.Zones {
		for _, x := range []struct {
			sign string
			recs []Record
		}{{"+", z.Created}, {"~", z.Retargeted}, {"-", z.Deleted}} {
			for _, rec := range x.recs {
				out = append(out, z.Controller+" "+x.sign+rec.DNSEndpoint)
			}
		}
	}
	return out
}

func readyAfter(r Result) map[string]string {
	out := map[string]string{}
	for _, c := range r.Routes {
		out[c.Route] = readyOf(c.After)
	}
	return out
}

const routeYAML = `apiVersion: routing.router.io/v1alpha1
kind: ServiceRoute
metadata: {name: %s}
spec: {serviceName: %s, gatewayName: gw, gatewayNamespace: istio-system, environment: dev, application: shop}`

const policyYAML = `apiVersion: routing.router.io/v1alpha1
kind: DNSPolicy
metadata: {name: dns, namespace: app}
spec: %s`

func TestPlan_EachKindOfChangeReportsTheOperatorsDecision(t *testing.T) {
	base := converge(t, baseWorld(2))
	hostR0 := "svc0-ns-d-dev-shop.example.com"
	for _, tt := range []struct {
		name       string
		del        bool
		docs       []string
		wantZones  []string
		wantReady  map[string]string
		wantHosts  []HostChange
		wantRemove int
	}{
		{name: "a new route publishes in the cluster's region",
			docs:      []string{fmt.Sprintf(routeYAML, "r9", "svc9")},
			wantZones: []string{"external-dns-weu +app/r9-external-dns-weu"},
			wantReady: map[string]string{"app/r9": "True ReconciliationSucceeded"},
			wantHosts: []HostChange{{Gateway: "istio-system/gw", Added: []string{"app/svc9-ns-d-dev-shop.example.com"}}}},
		{name: "RegionBound in this region publishes in every zone",
			docs:      []string{fmt.Sprintf(policyYAML, "{mode: RegionBound, sourceRegion: weu}")},
			wantZones: []string{"external-dns-neu +app/r0-external-dns-neu", "external-dns-neu +app/r1-external-dns-neu"},
			// Still Ready, with one more zone each.
			wantReady: map[string]string{"app/r0": "True ReconciliationSucceeded", "app/r1": "True ReconciliationSucceeded"}},
		{name: "RegionBound elsewhere withdraws every record",
			docs:       []string{fmt.Sprintf(policyYAML, "{mode: RegionBound, sourceRegion: neu}")},
			wantZones:  []string{"external-dns-weu -app/r0-external-dns-weu", "external-dns-weu -app/r1-external-dns-weu"},
			wantReady:  map[string]string{"app/r0": "False DNSPolicyInactive", "app/r1": "False DNSPolicyInactive"},
			wantHosts:  []HostChange{{Gateway: "istio-system/gw", Removed: []string{"app/" + hostR0, "app/svc1-ns-d-dev-shop.example.com"}}},
			wantRemove: 2},
		{name: "a deleted route's records go with it (garbage collection)", del: true,
			docs:       []string{fmt.Sprintf(routeYAML, "r0", "svc0")},
			wantZones:  []string{"external-dns-weu -app/r0-external-dns-weu"},
			wantReady:  map[string]string{"app/r0": "(none)"},
			wantHosts:  []HostChange{{Gateway: "istio-system/gw", Removed: []string{"app/" + hostR0}}},
			wantRemove: 1},
		{name: "a deleted ClusterIdentity is not a definite answer: everything is kept", del: true,
			docs:      []string{"apiVersion: cluster.router.io/v1alpha1\nkind: ClusterIdentity\nmetadata: {name: cluster-identity}"},
			wantReady: map[string]string{"app/r0": "False ClusterIdentityNotFound", "app/r1": "False ClusterIdentityNotFound"}},
		{name: "a narrowed allowedRoutes withdraws the routes of other namespaces",
			docs: []string{`apiVersion: routing.router.io/v1alpha1
kind: Gateway
metadata: {name: gw, namespace: istio-system}
spec: {controller: ingress, credentialName: cert, targetPostfix: internal, allowedRoutes: {namespaces: {from: Same}}}`},
			wantZones:  []string{"external-dns-weu -app/r0-external-dns-weu", "external-dns-weu -app/r1-external-dns-weu"},
			wantReady:  map[string]string{"app/r0": "False NotAllowedByGateway", "app/r1": "False NotAllowedByGateway"},
			wantHosts:  []HostChange{{Gateway: "istio-system/gw", Removed: []string{"app/" + hostR0, "app/svc1-ns-d-dev-shop.example.com"}}},
			wantRemove: 2},
		{name: "an application reserved by another namespace",
			docs:       []string{"apiVersion: v1\nkind: Namespace\nmetadata: {name: other, annotations: {router.io/applications: shop}}"},
			wantZones:  []string{"external-dns-weu -app/r0-external-dns-weu", "external-dns-weu -app/r1-external-dns-weu"},
			wantReady:  map[string]string{"app/r0": "False ApplicationNotAllowed", "app/r1": "False ApplicationNotAllowed"},
			wantHosts:  []HostChange{{Gateway: "istio-system/gw", Removed: []string{"app/" + hostR0, "app/svc1-ns-d-dev-shop.example.com"}}},
			wantRemove: 2},
		{name: "a domain change retargets every record and renames every hostname",
			docs: []string{`apiVersion: cluster.router.io/v1alpha1
kind: ClusterIdentity
metadata: {name: cluster-identity}
spec: {region: weu, cluster: aks01, domain: example.org, environmentLetter: d}`},
			wantZones: []string{"external-dns-weu ~app/r0-external-dns-weu", "external-dns-weu ~app/r1-external-dns-weu",
				"external-dns-weu ~istio-system/gateway-controller-ingress-internal-external-dns-weu",
				"external-dns-neu ~istio-system/gateway-controller-ingress-internal-external-dns-neu"},
			// Still Ready; the hostname and the target move.
			wantReady: map[string]string{"app/r0": "True ReconciliationSucceeded", "app/r1": "True ReconciliationSucceeded"},
			wantHosts: []HostChange{{Gateway: "istio-system/gw",
				Added:   []string{"app/svc0-ns-d-dev-shop.example.org", "app/svc1-ns-d-dev-shop.example.org"},
				Removed: []string{"app/" + hostR0, "app/svc1-ns-d-dev-shop.example.com"}}},
			wantRemove: 4},
		{name: "a controller removed from dns-config takes its zone's records",
			docs:      []string{"apiVersion: cluster.router.io/v1alpha1\nkind: DNSConfiguration\nmetadata: {name: dns-config}\nspec: {externalDNSControllers: [{name: external-dns-weu, region: weu}]}"},
			wantZones: []string{"external-dns-neu -istio-system/gateway-controller-ingress-internal-external-dns-neu"},
			wantReady: map[string]string{}, wantRemove: 1},
		{name: "a deleted Gateway: its routes fail, its Istio Gateway and address records go", del: true,
			docs: []string{"apiVersion: routing.router.io/v1alpha1\nkind: Gateway\nmetadata: {name: gw, namespace: istio-system}"},
			wantZones: []string{"external-dns-weu -app/r0-external-dns-weu", "external-dns-weu -app/r1-external-dns-weu",
				"external-dns-weu -istio-system/gateway-controller-ingress-internal-external-dns-weu",
				"external-dns-neu -istio-system/gateway-controller-ingress-internal-external-dns-neu"},
			wantReady:  map[string]string{"app/r0": "False GatewayNotFound", "app/r1": "False GatewayNotFound"},
			wantHosts:  []HostChange{{Gateway: "istio-system/gw", Removed: []string{"app/" + hostR0, "app/svc1-ns-d-dev-shop.example.com"}}},
			wantRemove: 4},
		{name: "a deleted ingress namespace takes the Gateway, its Service and the address records with it", del: true,
			docs: []string{"apiVersion: v1\nkind: Namespace\nmetadata: {name: istio-system}"},
			wantZones: []string{"external-dns-weu -app/r0-external-dns-weu", "external-dns-weu -app/r1-external-dns-weu",
				"external-dns-weu -istio-system/gateway-controller-ingress-internal-external-dns-weu",
				"external-dns-neu -istio-system/gateway-controller-ingress-internal-external-dns-neu"},
			wantReady:  map[string]string{"app/r0": "False GatewayNotFound", "app/r1": "False GatewayNotFound"},
			wantHosts:  []HostChange{{Gateway: "istio-system/gw", Removed: []string{"app/" + hostR0, "app/svc1-ns-d-dev-shop.example.com"}}},
			wantRemove: 4},
		{name: "a route whose hostname an older route holds", docs: []string{fmt.Sprintf(routeYAML, "late", "svc0")},
			wantReady: map[string]string{"app/late": "False HostnameConflict"}},
		{name: "a no-op edit changes nothing",
			docs:      []string{fmt.Sprintf(policyYAML, "{mode: Active}")},
			wantReady: map[string]string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := planOf(t, base, tt.del, DefaultSettings, tt.docs...)
			assert.ElementsMatch(t, tt.wantZones, summary(r))
			assert.Equal(t, tt.wantReady, readyAfter(r))
			if tt.wantHosts == nil {
				tt.wantHosts = []HostChange{}
			}
			assert.Equal(t, tt.wantHosts, r.IstioHosts)
			assert.Equal(t, tt.wantRemove, r.RecordsRemoved)
		})
	}
}

func TestWriteTable_ARenamedRouteSaysWhatMoves(t *testing.T) {
	base := converge(t, baseWorld(1))
	r, _ := planOf(t, base, false, DefaultSettings, fmt.Sprintf(routeYAML, "r0", "renamed"))
	var b strings.Builder
	require.NoError(t, WriteTable(&b, r))
	assert.Contains(t, b.String(), "hostname svc0-ns-d-dev-shop.example.com → renamed-ns-d-dev-shop.example.com; renamed-ns-d-dev-shop.example.com → aks01-weu-internal.example.com published through external-dns-weu")
}

func TestPlan_RetargetShowsTheRecordsBeforeAndAfter(t *testing.T) {
	base := converge(t, baseWorld(1))
	r, _ := planOf(t, base, false, DefaultSettings, `apiVersion: routing.router.io/v1alpha1
kind: Gateway
metadata: {name: gw, namespace: istio-system}
spec: {controller: ingress, credentialName: cert, targetPostfix: external}`)
	require.Len(t, r.Zones[0].Retargeted, 1)
	rec := r.Zones[0].Retargeted[0]
	assert.Equal(t, "ServiceRoute app/r0", rec.Owner)
	assert.Equal(t, []string{"svc0-ns-d-dev-shop.example.com CNAME aks01-weu-internal.example.com (TTL 300)"}, rec.Before)
	assert.Equal(t, []string{"svc0-ns-d-dev-shop.example.com CNAME aks01-weu-external.example.com (TTL 300)"}, rec.After)
	// The route's name stays in the zone; the old entry point's address records go (no Gateway
	// is left on it), the new one's are created.
	assert.Equal(t, 2, r.RecordsRemoved)
	assert.Equal(t, []string{"external-dns-weu +istio-system/gateway-controller-ingress-external-external-dns-weu",
		"external-dns-weu ~app/r0-external-dns-weu", "external-dns-weu -istio-system/gateway-controller-ingress-internal-external-dns-weu",
		"external-dns-neu +istio-system/gateway-controller-ingress-external-external-dns-neu",
		"external-dns-neu -istio-system/gateway-controller-ingress-internal-external-dns-neu"}, summary(r))
}

func TestPlan_GuardVerdictFollowsTheOperatorsSettings(t *testing.T) {
	// 12 route records + 2 address records; withdrawing every route also deletes the Istio
	// Gateway (no host left), which passes the guard like every deletion of the operator.
	base := converge(t, baseWorld(12))
	inactive := fmt.Sprintf(policyYAML, "{mode: RegionBound, sourceRegion: neu}")
	for _, tt := range []struct {
		name      string
		settings  Settings
		wantHolds bool
		wantText  string
	}{
		{"13 of 14 trips the defaults", DefaultSettings, true, "the guard would hold: 13 deletion(s) at once, of 14 managed DNSEndpoints"},
		{"a higher minimum does not trip", Settings{Guard: guard.Settings{Share: 0.25, Minimum: 14, Grace: time.Minute}}, false, "the guard would not hold"},
		{"a disabled guard", Settings{Guard: guard.Settings{Share: 0.25, Minimum: 1}}, false, "the guard is disabled"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := planOf(t, base, false, tt.settings, inactive)
			assert.Equal(t, 13, r.Guard.Deletions)
			assert.Equal(t, 14, r.Guard.Managed)
			assert.Equal(t, tt.wantHolds, r.Guard.Holds)
			assert.Contains(t, r.Guard.Message, tt.wantText)
		})
	}
	t.Run("the garbage collector's deletions are not the operator's", func(t *testing.T) {
		var routes []string
		for i := range 12 {
			routes = append(routes, fmt.Sprintf(routeYAML, fmt.Sprintf("r%d", i), fmt.Sprintf("svc%d", i)))
		}
		r, _ := planOf(t, base, true, DefaultSettings, routes...)
		assert.Equal(t, 1, r.Guard.Deletions, "the Istio Gateway, by the operator")
		assert.Equal(t, 12, r.Guard.GarbageCollected)
		assert.False(t, r.Guard.Holds)
		assert.Equal(t, 12, r.RecordsRemoved)
	})
}

func TestPredict_HostLimitLeavesTheYoungestRoutesOffAndTheirRecordsGo(t *testing.T) {
	w := baseWorld(3)
	admitted := converge(t, w)
	// A budget for two hosts: the youngest route is left off, its record is withdrawn.
	hosts := admitted.IstioGateways[0].Spec.Servers[0].Hosts
	budget := 4096
	for _, h := range hosts[:2] {
		budget += len("app") + 1 + len(h) + 3
	}
	s := Settings{HostBudget: budget, Guard: guard.DefaultSettings}
	p := Predict(admitted, s)
	assert.Equal(t, hosts[:2], p.IstioHosts["istio-system/gw"])
	assert.Equal(t, routingv1alpha1.ReasonGatewayHostLimit, p.Routes["app/r2"].Reason)
	assert.NotContains(t, keys(p.Endpoints), "app/r2-external-dns-weu")
	assert.Contains(t, keys(p.Endpoints), "app/r1-external-dns-weu")
}

// The Gateway's status is core.Gateway's: with its ClusterIdentity missing the Gateway keeps its
// status, host limit included (decide.GatewayPlan.Keep), even though its routes, now
// ClusterIdentityNotFound, no longer wait for room.
func TestPredict_HostLimitKeptWhileTheClusterIdentityIsMissing(t *testing.T) {
	admitted := converge(t, baseWorld(3))
	hosts := admitted.IstioGateways[0].Spec.Servers[0].Hosts
	budget := 4096
	for _, h := range hosts[:2] {
		budget += len("app") + 1 + len(h) + 3
	}
	s := Settings{HostBudget: budget, Guard: guard.DefaultSettings}
	limited := admitted.DeepCopy()
	p := Predict(limited, s)
	limit := p.Gateways["istio-system/gw"].Status.HostLimit
	require.NotNil(t, limit)
	limited.Gateways[0].Status = p.Gateways["istio-system/gw"].Status
	for _, r := range limited.Routes {
		r.Status = p.Routes[key(r)].Status
	}
	limited.Identity = nil
	p = Predict(limited, s)
	gw := p.Gateways["istio-system/gw"]
	assert.Equal(t, routingv1alpha1.ReasonClusterIdentityNotFound, gw.Reason)
	assert.Equal(t, limit, gw.Status.HostLimit, "the host limit moved while the ClusterIdentity is missing")
	assert.Equal(t, routingv1alpha1.ReasonClusterIdentityNotFound, p.Routes["app/r2"].Reason)
}

func TestPredict_HostnameConflictOldestAllowedClaimWins(t *testing.T) {
	w := baseWorld(1)
	w.Namespaces["other"] = Namespace{Labels: map[string]string{corev1.LabelMetadataName: "other"}}
	w.Policies = append(w.Policies, &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "other", UID: "pol2", CreationTimestamp: at(0)},
		Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}})
	w.Routes = append(w.Routes, route("other", "squat", "svc0", 0)) // older, same hostname
	p := Predict(w, DefaultSettings)
	assert.Equal(t, routingv1alpha1.ReasonHostnameConflict, p.Routes["app/r0"].Reason)
	assert.Equal(t, routingv1alpha1.ReasonReconciliationSucceeded, p.Routes["other/squat"].Reason)
	// Reserving the application for "app" takes the claim from the squatter.
	w.Namespaces["app"] = Namespace{Labels: w.Namespaces["app"].Labels, Annotations: map[string]string{naming.AnnotationApplications: "shop"}}
	p = Predict(w, DefaultSettings)
	assert.Equal(t, routingv1alpha1.ReasonReconciliationSucceeded, p.Routes["app/r0"].Reason)
	assert.Equal(t, routingv1alpha1.ReasonApplicationNotAllowed, p.Routes["other/squat"].Reason)
}

// A predicted status is the one the operator writes: decide.SetOutcome stamps observedGeneration
// and the Ready condition's with the route's generation, Ready first.
func TestPredict_RouteStatusCarriesTheObservedGeneration(t *testing.T) {
	w := baseWorld(1)
	w.Routes[0].Generation = 4
	status := Predict(w, DefaultSettings).Routes["app/r0"].Status
	assert.EqualValues(t, 4, status.ObservedGeneration)
	require.NotEmpty(t, status.Conditions)
	assert.Equal(t, routingv1alpha1.ConditionReady, status.Conditions[0].Type)
	assert.EqualValues(t, 4, status.Conditions[0].ObservedGeneration)
	assert.Equal(t, routingv1alpha1.PhaseActive, status.Phase)
}

func TestPredict_WithoutTheDNSEndpointAPIEverythingIsKept(t *testing.T) {
	w := converge(t, baseWorld(1))
	w.EndpointsAPIMissing = true
	p := Predict(w, DefaultSettings)
	assert.Equal(t, keys(w.Endpoints), keys(p.Endpoints))
	assert.Equal(t, routingv1alpha1.ReasonExternalDNSNotInstalled, p.Routes["app/r0"].Reason)
}

func keys[T metav1.Object](objs []T) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = key(o)
	}
	return out
}

func TestOverlay_AppliesAsKubectlWould(t *testing.T) {
	w := converge(t, baseWorld(1))
	objs := manifests(t,
		fmt.Sprintf(routeYAML, "r0", "renamed"),
		fmt.Sprintf(routeYAML, "new", "new"),
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: cm}\n- apiVersion: externaldns.k8s.io/v1alpha1\n  kind: DNSEndpoint\n  metadata: {name: ep}",
		"apiVersion: cluster.router.io/v1alpha1\nkind: ClusterIdentity\nmetadata: {name: another}",
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: app, labels: {tier: gold}}",
	)
	next := w.DeepCopy()
	changes, err := Overlay(next, objs, false, "app", t0.Add(time.Hour))
	require.NoError(t, err)
	var actions []string
	for _, c := range changes {
		actions = append(actions, c.Action+" "+c.Kind+" "+c.Object)
	}
	assert.Equal(t, []string{"change ServiceRoute app/r0", "create ServiceRoute app/new", "ignored ConfigMap cm", "ignored DNSEndpoint ep",
		"ignored ClusterIdentity another", "change Namespace app"}, actions)
	r0 := next.Routes[slices.IndexFunc(next.Routes, func(r *routingv1alpha1.ServiceRoute) bool { return r.Name == "r0" })]
	assert.Equal(t, types.UID("app-r0"), r0.UID, "a changed object keeps its identity")
	assert.Equal(t, int64(2), r0.Generation)
	assert.NotEmpty(t, r0.Status.Endpoints, "and its status")
	created := next.Routes[slices.IndexFunc(next.Routes, func(r *routingv1alpha1.ServiceRoute) bool { return r.Name == "new" })]
	assert.True(t, isPreviewUID(created.UID))
	assert.Equal(t, map[string]string{corev1.LabelMetadataName: "app", "team": "shop", "tier": "gold"}, next.Namespaces["app"].Labels,
		"labels others set are kept")
	assert.Equal(t, "svc0", w.Routes[0].Spec.ServiceName, "the world overlaid is a copy")

	t.Run("delete", func(t *testing.T) {
		next := w.DeepCopy()
		changes, err := Overlay(next, manifests(t, fmt.Sprintf(routeYAML, "r0", "svc0"), fmt.Sprintf(routeYAML, "absent", "x"),
			"apiVersion: v1\nkind: Namespace\nmetadata: {name: app}"), true, "app", t0)
		require.NoError(t, err)
		assert.Equal(t, []string{"delete", "absent", "delete"}, []string{changes[0].Action, changes[1].Action, changes[2].Action})
		assert.Empty(t, next.Routes)
		assert.Empty(t, next.Policies, "a deleted namespace takes its objects")
	})
	t.Run("a route in a namespace nobody creates", func(t *testing.T) {
		changes, err := Overlay(w.DeepCopy(), manifests(t, fmt.Sprintf(routeYAML, "r", "s")), false, "nowhere", t0)
		require.NoError(t, err)
		assert.Equal(t, "namespace nowhere does not exist: applying this fails unless it is created first", changes[0].Note)
		changes, err = Overlay(w.DeepCopy(), manifests(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: nowhere}", fmt.Sprintf(routeYAML, "r", "s")), false, "nowhere", t0)
		require.NoError(t, err)
		assert.Empty(t, changes[1].Note)
	})
	t.Run("a manifest that does not fit its kind is an error", func(t *testing.T) {
		_, err := Overlay(w.DeepCopy(), manifests(t, "apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: x}\nspec: {serviceName: [1]}"), false, "app", t0)
		assert.ErrorContains(t, err, "ServiceRoute x")
	})
}

func TestWriteTable_ReadsPerZone(t *testing.T) {
	base := converge(t, baseWorld(1))
	r, _ := planOf(t, base, false, DefaultSettings, fmt.Sprintf(policyYAML, "{mode: RegionBound, sourceRegion: neu}"))
	var b strings.Builder
	require.NoError(t, WriteTable(&b, r))
	out := b.String()
	for _, want := range []string{
		"change    DNSPolicy app/dns",
		"Zone external-dns-weu (region weu): 0 created, 0 retargeted, 1 deleted",
		"  - DNSEndpoint app/r0-external-dns-weu (ServiceRoute app/r0)",
		"      svc0-ns-d-dev-shop.example.com CNAME aks01-weu-internal.example.com (TTL 300)",
		"Zone external-dns-neu (region neu): no change",
		"True ReconciliationSucceeded → False DNSPolicyInactive",
		"DNSPolicy dns does not apply to this cluster",
		"    - app/svc0-ns-d-dev-shop.example.com",
		"Mass-deletion guard: the guard would not hold: 2 deletion(s) of 3 managed DNSEndpoints",
		"Plan: 0 DNSEndpoint(s) to create, 0 to retarget, 1 to delete; 1 DNS name(s) leave their zone.",
	} {
		assert.Contains(t, out, want)
	}
	j, err := json.Marshal(r) // as `plan -o json` prints it
	require.NoError(t, err)
	var back Result
	require.NoError(t, yaml.Unmarshal(j, &back))
	assert.Equal(t, r.RecordsRemoved, back.RecordsRemoved)
	assert.Equal(t, "app/r0-external-dns-weu", back.Zones[0].Deleted[0].DNSEndpoint)
	assert.Contains(t, string(j), `"created":[]`, "empty lists are lists for jq, not null")
}
