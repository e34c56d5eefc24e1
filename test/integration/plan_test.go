package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/cmd/kubectl-router/app"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/routerplan"
	"github.com/service-router/service-router-operator/internal/testenv"
)

// TestPlan_PreviewEqualsReality is the promise of `kubectl router plan`: for each change, the
// DNSEndpoints, Istio hosts and route Ready and Published reasons the running operator converges
// to are exactly what plan predicted before the change was applied. plan reads as a user who may only
// get and list; the operator runs with its deletion guard off (deletions are immediate), so the
// converged state is reached within seconds.
func TestPlan_PreviewEqualsReality(t *testing.T) {
	waitNamespacesGone(t)
	keepSingletons(t)
	f := newFixture(t)
	startOperator(t, env.Config)
	viewer, _ := planViewer(t)
	f.ingressService(corev1.LoadBalancerIngress{IP: "10.1.2.3"})
	reserving := "reserve-" + rand.String(5)
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: reserving}})
	})

	identity := func(cluster, domain string, adopts ...string) string {
		return fmt.Sprintf(`apiVersion: cluster.router.io/v1alpha1
kind: ClusterIdentity
metadata: {name: cluster-identity}
spec: {region: weu, cluster: %s, domain: %s, environmentLetter: d, adoptsRegions: [%s]}`, cluster, domain, strings.Join(adopts, ", "))
	}
	controllers := func(regions ...string) string {
		var list []string
		for _, r := range regions {
			list = append(list, fmt.Sprintf("{name: external-dns-%s, region: %s}", r, r))
		}
		return fmt.Sprintf(`apiVersion: cluster.router.io/v1alpha1
kind: DNSConfiguration
metadata: {name: dns-config}
spec: {externalDNSControllers: [%s]}`, strings.Join(list, ", "))
	}
	gateway := func(allowed string) string {
		return fmt.Sprintf(`apiVersion: routing.router.io/v1alpha1
kind: Gateway
metadata: {name: gw, namespace: %s}
spec: {controller: %s, credentialName: cert, targetPostfix: internal, allowedRoutes: {namespaces: {from: %s}}}`, f.gatewayNS, f.controller, allowed)
	}
	dnsPolicy := func(spec string) string {
		return fmt.Sprintf("apiVersion: routing.router.io/v1alpha1\nkind: DNSPolicy\nmetadata: {name: dns, namespace: %s}\nspec: %s", f.ns, spec)
	}
	route := func(name string) string {
		return fmt.Sprintf(`apiVersion: routing.router.io/v1alpha1
kind: ServiceRoute
metadata: {name: %s}
spec: {serviceName: %s, gatewayName: gw, gatewayNamespace: %s, environment: dev, application: %s}`, name, name, f.gatewayNS, f.app)
	}
	reservation := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, annotations: {router.io/applications: %s}}", reserving, f.app)
	active, regionBound := dnsPolicy("{mode: Active}"), dnsPolicy("{mode: RegionBound, sourceRegion: weu}")

	steps := []planStep{
		{"routes created", false, []string{identity("aks01", "example.com"), controllers("weu", "neu", "eus"), gateway("All"), active,
			route("api"), route("web"), route("jobs")}, true},
		{"policy mode switch Active to RegionBound", false, []string{regionBound}, true},
		{"policy mode switch RegionBound to Active", false, []string{active}, true},
		{"adopted region added", false, []string{identity("aks01", "example.com", "neu")}, true},
		{"adopted region removed", false, []string{identity("aks01", "example.com")}, true},
		{"controller removed from dns-config", false, []string{controllers("weu", "neu")}, true},
		// The Gateway's zones are its address records' (written by the entry point's reconcile).
		{"controller added to dns-config: a zone more for the routes and the Gateway", false, []string{controllers("weu", "neu", "eus")}, true},
		{"domain change", false, []string{identity("aks01", "example.org")}, true},
		{"Gateway allowedRoutes narrowed", false, []string{gateway("Same")}, true},
		{"Gateway allowedRoutes widened again", false, []string{gateway("All")}, true},
		{"namespace reservation added", false, []string{reservation}, true},
		{"namespace reservation deleted", true, []string{reservation}, true},
		{"route deleted", true, []string{route("jobs")}, true},
		{"policy deleted", true, []string{active}, true},
		{"policy created again", false, []string{active}, true},
		{"ClusterIdentity replaced", false, []string{identity("aks02", "example.org")}, true},
		{"no-op edit", false, []string{active, route("api")}, false},
	}
	f.runPlanSteps(viewer, routerplan.DefaultSettings, steps)
}

// planStep is one change of a preview-equals-reality sequence.
type planStep struct {
	name   string
	delete bool
	docs   []string
	// changes says the plan is not empty: a step that changes nothing predicts nothing.
	changes bool
}

// runPlanSteps plans each step as the viewer, applies it, waits for the operator (which must run
// with the decision-changing settings s) to converge, and requires that the fixture's DNSEndpoints,
// Istio hosts and routes' Ready and Published reasons are what the plan predicted, and stay so.
func (f *fixture) runPlanSteps(viewer client.Reader, s routerplan.Settings, steps []planStep) {
	t := f.t
	t.Helper()
	for _, step := range steps {
		objs := objectsOf(t, step.docs...)
		result, prediction, err := routerplan.PredictFor(f.ctx, viewer, objs, step.delete, f.ns, s)
		require.NoError(t, err, step.name)
		want := f.predicted(prediction)
		if step.changes != hasChanges(result) {
			t.Fatalf("%s: the plan says changes=%v, want %v:\n%s", step.name, hasChanges(result), step.changes, tableOf(t, result))
		}
		before := f.observed()
		f.applyManifests(objs, step.delete)
		var got string
		waitFor(t, step.name+": the operator to converge to the plan", func() string {
			if got = f.observed(); got != want {
				return fmt.Sprintf("\nplan (taken before the change):\n%s\ncluster:\n%s\nbefore the change:\n%s\nthe plan said:\n%s", want, got, before, tableOf(t, result))
			}
			return ""
		})
		time.Sleep(time.Second) // and stays there: not a state the operator passes through
		require.Equal(t, want, f.observed(), "%s: the cluster moved on after matching the plan", step.name)
	}
}

// TestPlan_HostLimitPreviewEqualsReality checks the plan where a Gateway's host budget and its
// routes depend on each other (the cutoff in the Gateway's status decides the routes, the routes'
// statuses decide the cutoff): routes beyond the budget are left off, deleting an admitted route
// admits the next one, and a younger route is left off.
func TestPlan_HostLimitPreviewEqualsReality(t *testing.T) {
	waitNamespacesGone(t)
	keepSingletons(t)
	f := newFixture(t)
	f.ingressService(corev1.LoadBalancerIngress{IP: "10.1.2.3"})
	host := func(service string) decide.HostCandidate {
		return decide.HostCandidate{Namespace: f.ns, Hostname: istioHost(f.ns, f.hostname(service, "example.com"))}
	}
	budget := decide.EstimatedIstioGatewayBytes(host("svc-a"), host("svc-b")) // room for two hosts
	settings := routerplan.Settings{HostBudget: budget, Guard: routerplan.DefaultSettings.Guard}
	startOperatorWith(t, env.Config, operatorOptions{istioGatewayMaxBytes: budget})
	viewer, _ := planViewer(t)
	route := func(name string) string {
		return fmt.Sprintf(`apiVersion: routing.router.io/v1alpha1
kind: ServiceRoute
metadata: {name: %s}
spec: {serviceName: svc-%s, gatewayName: gw, gatewayNamespace: %s, environment: dev, application: %s}`, name, name, f.gatewayNS, f.app)
	}
	setup := []string{
		"apiVersion: cluster.router.io/v1alpha1\nkind: ClusterIdentity\nmetadata: {name: cluster-identity}\nspec: {region: weu, cluster: aks01, domain: example.com, environmentLetter: d}",
		"apiVersion: cluster.router.io/v1alpha1\nkind: DNSConfiguration\nmetadata: {name: dns-config}\nspec: {externalDNSControllers: [{name: external-dns-weu, region: weu}]}",
		fmt.Sprintf("apiVersion: routing.router.io/v1alpha1\nkind: Gateway\nmetadata: {name: gw, namespace: %s}\nspec: {controller: %s, credentialName: cert, targetPostfix: internal}", f.gatewayNS, f.controller),
		fmt.Sprintf("apiVersion: routing.router.io/v1alpha1\nkind: DNSPolicy\nmetadata: {name: dns, namespace: %s}\nspec: {mode: Active}", f.ns),
		route("a"), route("b"), route("c"),
	}
	f.runPlanSteps(viewer, settings, []planStep{
		{"three routes on a Gateway with room for two: the third is left off", false, setup, true},
		{"an admitted route deleted: the one left off is admitted", true, []string{route("a")}, true},
		{"a younger route: left off", false, []string{route("d")}, true},
		// The routes say ClusterIdentityNotFound and no longer wait for room, but the Gateway
		// keeps its whole status, host limit included, until the identity is back.
		{"the ClusterIdentity deleted: the Gateway keeps its host limit", true, setup[:1], true},
	})
}

// TestPlan_GatewayAPIPreviewEqualsReality is preview-equals-reality for the GatewayAPI backend, on
// a control plane of its own with the Gateway API's standard-channel CRDs: a backend switch both
// ways (the old backend's objects removed, the new one's created, the DNS records unchanged), a
// route added to a GatewayAPI Gateway and its allowedRoutes narrowed and widened. Besides the
// DNSEndpoints and routes, the Gateway API Gateway and every ListenerSet with its listener
// hostnames must be what plan predicted.
func TestPlan_GatewayAPIPreviewEqualsReality(t *testing.T) {
	useControlPlane(t, startControlPlane(t, testenv.Options{ControllerManager: true, GatewayAPICRDs: true}))
	f := newFixture(t)
	startOperator(t, env.Config)
	viewer, _ := planViewer(t)
	f.ingressService(corev1.LoadBalancerIngress{IP: "10.1.2.3"})
	gateway := func(backend, allowed string) string {
		return fmt.Sprintf(`apiVersion: routing.router.io/v1alpha1
kind: Gateway
metadata: {name: gw, namespace: %s}
spec: {controller: %s, credentialName: cert, targetPostfix: internal, backend: %s, allowedRoutes: {namespaces: {from: %s}}}`, f.gatewayNS, f.controller, backend, allowed)
	}
	route := func(name string) string {
		return fmt.Sprintf(`apiVersion: routing.router.io/v1alpha1
kind: ServiceRoute
metadata: {name: %s}
spec: {serviceName: %s, gatewayName: gw, gatewayNamespace: %s, environment: dev, application: %s}`, name, name, f.gatewayNS, f.app)
	}
	setup := []string{
		"apiVersion: cluster.router.io/v1alpha1\nkind: ClusterIdentity\nmetadata: {name: cluster-identity}\nspec: {region: weu, cluster: aks01, domain: example.com, environmentLetter: d}",
		"apiVersion: cluster.router.io/v1alpha1\nkind: DNSConfiguration\nmetadata: {name: dns-config}\nspec: {externalDNSControllers: [{name: external-dns-weu, region: weu}, {name: external-dns-neu, region: neu}]}",
		gateway("IstioGateway", "All"),
		fmt.Sprintf("apiVersion: routing.router.io/v1alpha1\nkind: DNSPolicy\nmetadata: {name: dns, namespace: %s}\nspec: {mode: RegionBound, sourceRegion: weu}", f.ns),
		route("api"), route("web"),
	}
	// A backend switch keeps the DNS records themselves (same UIDs, none deleted on the way), as
	// the plan says (no zone changes).
	switchKeepsRecords := func(step planStep) {
		t.Helper()
		uids := endpointUIDs(t, f.ns, f.gatewayNS)
		routeDeletions, addressDeletions := watchEndpointDeletions(t, f.ns), watchEndpointDeletions(t, f.gatewayNS)
		f.runPlanSteps(viewer, routerplan.DefaultSettings, []planStep{step})
		require.Equal(t, uids, endpointUIDs(t, f.ns, f.gatewayNS), "%s: the same DNSEndpoints", step.name)
		require.Empty(t, append(routeDeletions.names(), addressDeletions.names()...), "%s: no DNSEndpoint deleted on the way", step.name)
	}
	f.runPlanSteps(viewer, routerplan.DefaultSettings, []planStep{{"routes on an Istio Gateway", false, setup, true}})
	switchKeepsRecords(planStep{"backend switch Istio to Gateway API", false, []string{gateway("GatewayAPI", "All")}, true})
	// The Gateway API implementation reports the new Gateway's address: the ingress Service's, as
	// when Istio serves both backends with one load balancer. The records stay as they are.
	f.setGatewayAPIAddress("gw", "10.1.2.3")
	f.waitGateway("gw", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	f.runPlanSteps(viewer, routerplan.DefaultSettings, []planStep{
		{"a route added to a GatewayAPI Gateway", false, []string{route("jobs")}, true},
		{"GatewayAPI Gateway allowedRoutes narrowed", false, []string{gateway("GatewayAPI", "Same")}, true},
		{"GatewayAPI Gateway allowedRoutes widened again", false, []string{gateway("GatewayAPI", "All")}, true},
	})
	switchKeepsRecords(planStep{"backend switch Gateway API to Istio", false, []string{gateway("IstioGateway", "All")}, true})
	f.runPlanSteps(viewer, routerplan.DefaultSettings, []planStep{{"no-op edit", false, []string{gateway("IstioGateway", "All"), route("api")}, false}})
}

// TestPlan_GatewayDeletedWhileTheOperatorWasDown settles what a Gateway leaves that the garbage
// collector cannot see: the ReferenceGrant its GatewayAPI backend wrote in the ingress namespace
// (the TLS Secret's), where no owner reference can point. The Gateway is deleted while the
// operator is stopped; the plan of the cluster as it then is predicts the grant's deletion, and the
// operator started again converges to the plan: it deletes the grant, found through its
// annotation when the informer first lists it.
func TestPlan_GatewayDeletedWhileTheOperatorWasDown(t *testing.T) {
	useControlPlane(t, startControlPlane(t, testenv.Options{ControllerManager: true, GatewayAPICRDs: true}))
	f := newFixture(t)
	stop := startOperator(t, env.Config)
	viewer, _ := planViewer(t)
	f.ingressService(corev1.LoadBalancerIngress{IP: "10.1.2.3"})
	gatewayNS := newNamespace(t, "gwapi")
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gatewayNS}})
	})
	setup := []string{
		"apiVersion: cluster.router.io/v1alpha1\nkind: ClusterIdentity\nmetadata: {name: cluster-identity}\nspec: {region: weu, cluster: aks01, domain: example.com, environmentLetter: d}",
		"apiVersion: cluster.router.io/v1alpha1\nkind: DNSConfiguration\nmetadata: {name: dns-config}\nspec: {externalDNSControllers: [{name: external-dns-weu, region: weu}]}",
		fmt.Sprintf("apiVersion: routing.router.io/v1alpha1\nkind: Gateway\nmetadata: {name: gw, namespace: %s}\nspec: {controller: %s, credentialName: cert, targetPostfix: internal, backend: GatewayAPI, ingressNamespace: %s}",
			gatewayNS, f.controller, f.gatewayNS),
	}
	f.runPlanSteps(viewer, routerplan.DefaultSettings, []planStep{{"a GatewayAPI Gateway whose Secret is in the ingress namespace", false, setup, true}})
	grants := func() []string {
		list := &gwv1.ReferenceGrantList{}
		require.NoError(t, env.Client.List(f.ctx, list, client.InNamespace(f.gatewayNS)))
		var names []string
		for _, g := range list.Items {
			names = append(names, g.Name)
		}
		return names
	}
	// The plan's comparison does not cover the grant in the ingress namespace: waited for here (the
	// ReferenceGrant API may be found served a discovery round after the operator started).
	var written []string
	waitFor(t, "the GatewayAPI backend to grant its listeners the Secret of the ingress namespace", func() string {
		if written = grants(); len(written) != 1 {
			return fmt.Sprintf("grants %v", written)
		}
		return ""
	}, waitTimeout)

	stop()
	// Two grants an earlier release wrote, before grants carried the Gateway's name in an
	// annotation, for Gateways deleted since: one whose label names its Gateway in full (the
	// operator finds it gone and removes the grant), one whose label was shortened (nothing leads
	// back to its Gateway: the operator leaves it, and so must the plan).
	written0 := &gwv1.ReferenceGrant{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.gatewayNS, Name: written[0]}, written0))
	long := "a-gateway-whose-name-is-long-enough-to-shorten-its-grant-label"
	for name, gateway := range map[string]string{"older-grant": "gone", "older-grant-shortened": long} {
		require.NoError(t, env.Client.Create(f.ctx, &gwv1.ReferenceGrant{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.gatewayNS, Name: name,
				Labels: map[string]string{naming.LabelManagedBy: naming.ManagedByValue, desired.LabelGateway: desired.GatewayLabelValue(gatewayNS, gateway)}},
			Spec: written0.Spec}))
	}
	require.NoError(t, env.Client.Delete(f.ctx, &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNS, Name: "gw"}}))
	waitFor(t, "the Gateway and what it owns gone", func() string {
		list := &gwv1.GatewayList{}
		require.NoError(t, env.Client.List(f.ctx, list, client.InNamespace(gatewayNS)))
		if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: gatewayNS, Name: "gw"}, &routingv1alpha1.Gateway{}); err == nil || len(list.Items) > 0 {
			return fmt.Sprintf("Gateway still there (%v), %d Gateway API Gateways", err, len(list.Items))
		}
		return ""
	}, waitTimeout)
	require.ElementsMatch(t, append(slices.Clone(written), "older-grant", "older-grant-shortened"), grants(),
		"the garbage collector leaves the grants in the other namespace")

	result, prediction, err := routerplan.PredictFor(f.ctx, viewer, nil, false, f.ns, routerplan.DefaultSettings)
	require.NoError(t, err)
	require.Contains(t, prediction.OperatorDeletes, "ReferenceGrant "+f.gatewayNS+"/"+written[0], "the plan:\n%s", tableOf(t, result))
	var planned []string
	for _, g := range prediction.ReferenceGrants {
		if g.Namespace == f.gatewayNS {
			planned = append(planned, g.Name)
		}
	}

	startOperator(t, env.Config)
	waitFor(t, "the operator to delete the orphaned grants, as planned", func() string {
		if left := grants(); !slices.Equal(left, planned) {
			return fmt.Sprintf("grants %v, planned %v", left, planned)
		}
		return ""
	}, waitTimeout)
	time.Sleep(time.Second) // and stays there
	require.Equal(t, planned, grants(), "the grants the plan keeps")
	require.Equal(t, []string{"older-grant-shortened"}, planned, "a grant that leads back to no Gateway is kept")
	require.Equal(t, f.predicted(prediction), f.observed())
}

// waitNamespacesGone waits until no namespace is being deleted: the plan is of the whole cluster,
// and the objects of other tests' namespaces still being deleted would add to it (and to the
// guard's counts).
func waitNamespacesGone(t testing.TB) {
	t.Helper()
	waitFor(t, "the namespaces of earlier tests to be gone", func() string {
		list := &corev1.NamespaceList{}
		if err := env.Client.List(context.Background(), list); err != nil {
			return err.Error()
		}
		var terminating []string
		for _, ns := range list.Items {
			if ns.DeletionTimestamp != nil {
				terminating = append(terminating, ns.Name)
			}
		}
		if len(terminating) > 0 {
			return "still being deleted: " + strings.Join(terminating, ", ")
		}
		return ""
	}, 2*waitTimeout)
}

// planViewer is a client for a user bound to the ClusterRole the operator ships for the plugin
// (plan-reader: get and list only), and the user's name.
func planViewer(t *testing.T) (client.Reader, string) {
	t.Helper()
	return planViewerWithout(t, "")
}

// planViewerWithout is planViewer bound to the documented role without its rules of apiGroup (a
// role of an earlier release).
func planViewerWithout(t *testing.T, apiGroup string) (client.Reader, string) {
	t.Helper()
	ctx := context.Background()
	name := "plan-viewer-" + rand.String(5)
	role := documentedPlanRole(t)
	role.Name = name
	role.Rules = slices.DeleteFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return apiGroup != "" && slices.Contains(r.APIGroups, apiGroup) })
	require.NotEmpty(t, role.Rules)
	for _, rule := range role.Rules {
		require.Subset(t, []string{"get", "list"}, rule.Verbs, "the documented role only reads")
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: name}}}
	require.NoError(t, env.Client.Create(ctx, role))
	require.NoError(t, env.Client.Create(ctx, binding))
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), binding)
		_ = env.Client.Delete(context.Background(), role)
	})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c, name
}

// documentedPlanRole is the ClusterRole the operator ships for the plugin
// (config/rbac/plan_reader_role.yaml, docs/PLUGIN.md "The rights it needs").
func documentedPlanRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "config", "rbac", "plan_reader_role.yaml"))
	require.NoError(t, err)
	role := &rbacv1.ClusterRole{}
	require.NoError(t, yaml.Unmarshal(data, role))
	return role
}

func objectsOf(t testing.TB, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := routerplan.ReadManifests([]string{"-"}, strings.NewReader(strings.Join(docs, "\n---\n")))
	require.NoError(t, err)
	return objs
}

// applyManifests applies (server-side, one field manager for every step, so that a field left
// out of a manifest is removed as kubectl apply removes it) or deletes the objects.
func (f *fixture) applyManifests(objs []*unstructured.Unstructured, del bool) {
	f.t.Helper()
	for _, u := range objs {
		u = u.DeepCopy()
		if u.GetNamespace() == "" && u.GetKind() != "Namespace" && u.GetKind() != "ClusterIdentity" && u.GetKind() != "DNSConfiguration" {
			u.SetNamespace(f.ns)
		}
		if del {
			require.NoError(f.t, client.IgnoreNotFound(env.Client.Delete(f.ctx, u)), "deleting %s %s", u.GetKind(), u.GetName())
			continue
		}
		require.NoError(f.t, env.Client.Apply(f.ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("plan-test"), client.ForceOwnership),
			"applying %s %s", u.GetKind(), u.GetName())
	}
}

// predicted is the part of a prediction this fixture owns, in observed's form.
func (f *fixture) predicted(p routerplan.Prediction) string {
	var eps []*externaldnsv1alpha1.DNSEndpoint
	for _, ep := range p.Endpoints {
		if f.owns(ep) {
			eps = append(eps, ep)
		}
	}
	var routes []string
	for k, o := range p.Routes {
		if ns, name, _ := strings.Cut(k, "/"); ns == f.ns {
			routes = append(routes, name+" "+o.Reason+" "+publishedReason(o.Status.Conditions))
		}
	}
	listeners := f.listenerLines(p.GatewayAPIGateways, p.ListenerSets)
	if gw, ok := p.Gateways[f.gatewayNS+"/gw"]; ok {
		listeners = append(listeners, gatewayLines(gw.Status)...)
	}
	return f.describe(eps, p.IstioHosts[f.gatewayNS+"/gw"], routes, listeners)
}

// listenerLines are the listener hostnames of the Gateway API Gateways and ListenerSets in the
// fixture's gateway namespace, one line each.
func (f *fixture) listenerLines(gateways []*gwv1.Gateway, sets []*gwv1.ListenerSet) []string {
	var out []string
	for _, g := range gateways {
		if g.Namespace != f.gatewayNS {
			continue
		}
		out = append(out, "gateway-api Gateway "+g.Name)
		for _, l := range g.Spec.Listeners {
			if l.Hostname != nil {
				out = append(out, fmt.Sprintf("gateway-api Gateway %s listener %s %s", g.Name, l.Name, *l.Hostname))
			}
		}
	}
	for _, s := range sets {
		if s.Namespace != f.gatewayNS {
			continue
		}
		out = append(out, "gateway-api ListenerSet "+s.Name)
		for _, l := range s.Spec.Listeners {
			if l.Hostname != nil {
				out = append(out, fmt.Sprintf("gateway-api ListenerSet %s listener %s %s", s.Name, l.Name, *l.Hostname))
			}
		}
	}
	return out
}

// observedListeners reads the Gateway API Gateways and ListenerSets of the fixture's gateway
// namespace (none on a control plane without the Gateway API CRDs).
func (f *fixture) observedListeners() []string {
	f.t.Helper()
	gateways := &gwv1.GatewayList{}
	if err := env.Client.List(f.ctx, gateways, client.InNamespace(f.gatewayNS)); meta.IsNoMatchError(err) {
		return nil
	} else {
		require.NoError(f.t, err)
	}
	sets := &gwv1.ListenerSetList{}
	require.NoError(f.t, env.Client.List(f.ctx, sets, client.InNamespace(f.gatewayNS)))
	var gs []*gwv1.Gateway
	for i := range gateways.Items {
		gs = append(gs, &gateways.Items[i])
	}
	var ls []*gwv1.ListenerSet
	for i := range sets.Items {
		ls = append(ls, &sets.Items[i])
	}
	return f.listenerLines(gs, ls)
}

// observed is what the cluster holds of this fixture: its DNSEndpoints (route records in its
// namespace, address records of its entry point), its Istio Gateway's hosts, its Gateway API
// Gateway's and ListenerSets' listener hostnames, its routes' Ready and Published reasons and its
// Gateway gw's Ready reason (once a status is of its object's current generation).
func (f *fixture) observed() string {
	f.t.Helper()
	list := &externaldnsv1alpha1.DNSEndpointList{}
	require.NoError(f.t, env.Client.List(f.ctx, list))
	var eps []*externaldnsv1alpha1.DNSEndpoint
	for i := range list.Items {
		if f.owns(&list.Items[i]) {
			eps = append(eps, &list.Items[i])
		}
	}
	var hosts []string
	ig := &istionetworkingv1.Gateway{}
	switch err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.gatewayNS, Name: "gw"}, ig); {
	case err == nil:
		hosts = istioHosts(ig)
	case client.IgnoreNotFound(err) != nil:
		require.NoError(f.t, err)
	}
	routeList := &routingv1alpha1.ServiceRouteList{}
	require.NoError(f.t, env.Client.List(f.ctx, routeList, client.InNamespace(f.ns)))
	var routes []string
	for _, r := range routeList.Items {
		reason := "(status of an older generation)"
		if c := meta.FindStatusCondition(r.Status.Conditions, routingv1alpha1.ConditionReady); c != nil && r.Status.ObservedGeneration == r.Generation {
			reason = c.Reason + " " + publishedReason(r.Status.Conditions)
		}
		routes = append(routes, r.Name+" "+reason)
	}
	listeners := f.observedListeners()
	gw := &routingv1alpha1.Gateway{}
	switch err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.gatewayNS, Name: "gw"}, gw); {
	case err == nil && gw.Status.ObservedGeneration == gw.Generation:
		listeners = append(listeners, gatewayLines(gw.Status)...)
	case err == nil:
		listeners = append(listeners, "gateway gw (status of an older generation)")
	case client.IgnoreNotFound(err) != nil:
		require.NoError(f.t, err)
	}
	return f.describe(eps, hosts, routes, listeners)
}

// gatewayLines are what preview-equals-reality compares of the Gateway gw's status: its Ready
// reason, its host limit and its zones.
func gatewayLines(s routingv1alpha1.GatewayStatus) []string {
	reason := "-"
	if c := meta.FindStatusCondition(s.Conditions, routingv1alpha1.ConditionReady); c != nil {
		reason = c.Reason
	}
	out := []string{"gateway gw " + reason, "gateway gw published " + s.Published + " " + publishedReason(s.Conditions)}
	if l := s.HostLimit; l != nil {
		out = append(out, fmt.Sprintf("gateway gw hostLimit admitted=%d leftOff=%d firstLeftOff=%s", l.Admitted, l.LeftOff, l.FirstLeftOff))
	}
	for _, z := range s.Zones {
		out = append(out, fmt.Sprintf("gateway gw zone %s %s %s", z.Controller, z.Region, z.State))
	}
	return out
}

// publishedReason is the reason of the Published condition ("-" without one).
func publishedReason(conditions []metav1.Condition) string {
	if c := meta.FindStatusCondition(conditions, routingv1alpha1.ConditionPublished); c != nil {
		return "published:" + c.Reason
	}
	return "published:-"
}

func (f *fixture) owns(ep *externaldnsv1alpha1.DNSEndpoint) bool {
	return ep.Namespace == f.ns || ep.Labels["router.io/istio-controller"] == f.controller
}

func (f *fixture) describe(eps []*externaldnsv1alpha1.DNSEndpoint, hosts, routes, listeners []string) string {
	var lines []string
	for _, ep := range eps {
		for _, r := range ep.Spec.Endpoints {
			lines = append(lines, fmt.Sprintf("  record %s/%s [%s %s]: %s %s %s ttl=%d", ep.Namespace, ep.Name,
				ep.Labels["router.io/controller"], ep.Annotations["external-dns.alpha.kubernetes.io/controller"], r.DNSName, r.RecordType, strings.Join(r.Targets, ","), r.RecordTTL))
		}
	}
	for _, h := range hosts {
		lines = append(lines, "  istio host "+h)
	}
	for _, r := range routes {
		lines = append(lines, "  route "+r)
	}
	for _, l := range listeners {
		lines = append(lines, "  "+l)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func hasChanges(r routerplan.Result) bool {
	for _, z := range r.Zones {
		if len(z.Created)+len(z.Retargeted)+len(z.Deleted) > 0 {
			return true
		}
	}
	return len(r.Routes) > 0 || len(r.Gateways) > 0 || len(r.IstioHosts) > 0 || len(r.GatewayAPIHosts) > 0 || len(r.Objects) > 0
}

func tableOf(t testing.TB, r routerplan.Result) string {
	var b strings.Builder
	require.NoError(t, routerplan.WriteTable(&b, r))
	return b.String()
}

// TestPlan_KubectlPluginAsAUserRunsIt runs the plugin's command line as a user would: the
// kubeconfig from KUBECONFIG (a viewer's, get and list only), the namespace from -n, manifests
// from a directory; --max-deletions fails when a DNS name would leave its zone, -o json is for
// machines, and status shows the route's path and the cluster summary.
func TestPlan_KubectlPluginAsAUserRunsIt(t *testing.T) {
	waitNamespacesGone(t)
	keepSingletons(t)
	f := newFixture(t)
	startOperator(t, env.Config)
	_, user := planViewer(t)
	t.Setenv("KUBECONFIG", impersonatingKubeconfig(t, adminKubeconfig(t), user))
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	f.ingressService(corev1.LoadBalancerIngress{IP: "10.1.2.3"})
	f.gateway("gw", "internal")
	f.policy(routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive})
	f.route("", "api", "api", "gw")
	hostname := f.hostname("api", "example.com")
	f.waitRouteEndpoints(f.ns, "api", hostname, "aks01-weu-internal.example.com", "external-dns-weu")
	f.waitIstioHosts("gw", istioHost(f.ns, hostname))

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "policy.yaml"),
		[]byte("apiVersion: routing.router.io/v1alpha1\nkind: DNSPolicy\nmetadata: {name: dns}\nspec: {mode: RegionBound, sourceRegion: neu}\n"), 0o644))
	run := func(args ...string) (string, error) {
		var out, errOut strings.Builder
		cmd := app.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(f.ctx)
		return out.String() + errOut.String(), err
	}

	// The plan is of the whole cluster: objects other tests left on the shared control plane may
	// add lines; this test's lines are there, whatever else is.
	out, err := run("plan", "-f", dir, "-n", f.ns, "--max-deletions", "0")
	var tooMany *app.TooManyDeletionsError
	require.ErrorAs(t, err, &tooMany, out)
	require.GreaterOrEqual(t, tooMany.Removed, 1)
	for _, want := range []string{
		"change    DNSPolicy " + f.ns + "/dns",
		"Zone external-dns-weu (region weu): ",
		"  - DNSEndpoint " + f.ns + "/api-external-dns-weu (ServiceRoute " + f.ns + "/api)\n      " + hostname + " CNAME aks01-weu-internal.example.com (TTL 300)\n",
		"True ReconciliationSucceeded → False DNSPolicyInactive",
		"- " + f.ns + "/" + hostname,
	} {
		require.Contains(t, out, want)
	}

	out, err = run("plan", "-f", filepath.Join(dir, "policy.yaml"), "-n", f.ns, "-o", "json", "--max-deletions", "1000")
	require.NoError(t, err, out)
	var result routerplan.Result
	require.NoError(t, json.Unmarshal([]byte(out), &result))
	require.Equal(t, tooMany.Removed, result.RecordsRemoved, "the JSON says what the table said")
	require.Equal(t, "external-dns-weu", result.Zones[0].Controller)
	require.Contains(t, result.Zones[0].Deleted, routerplan.Record{DNSEndpoint: f.ns + "/api-external-dns-weu", Owner: "ServiceRoute " + f.ns + "/api",
		Before: []string{hostname + " CNAME aks01-weu-internal.example.com (TTL 300)"}})

	out, err = run("status", "api", "-n", f.ns)
	require.NoError(t, err, out)
	require.Contains(t, out, "ServiceRoute "+f.ns+"/api")
	require.Contains(t, out, "hostname   "+hostname+" → aks01-weu-internal.example.com")
	require.Contains(t, out, "external-dns-weu")

	out, err = run("status", hostname)
	require.NoError(t, err, out)
	require.Contains(t, out, "ServiceRoute "+f.ns+"/api")

	out, err = run("status", "aks01-weu-internal.example.com")
	require.NoError(t, err, out)
	require.Contains(t, out, "Gateway target aks01-weu-internal.example.com")
	require.Contains(t, out, "  gateway  "+f.gatewayNS+"/gw: ")

	out, err = run("__complete", "status", "-n", f.ns, "")
	require.NoError(t, err, out)
	require.Contains(t, out, "api\n"+hostname+"\n", "status completes the namespace's routes and hostnames")

	out, err = run("status")
	require.NoError(t, err, out)
	require.Contains(t, out, "ServiceRoutes:")
	require.Contains(t, out, "external-dns-weu (weu): unverified")
}

// TestPlan_GuardVerdictIsTheOperators runs the operator with its mass-deletion guard on and checks
// plan's verdict against what the guard then does: a change deleting one record is not held (the
// record goes after the short observe delay, DeletionsHeld stays False), a change deleting a
// record of every route in a namespace is (DeletionsHeld=True, the records stay), and reverting it
// keeps them.
func TestPlan_GuardVerdictIsTheOperators(t *testing.T) {
	waitNamespacesGone(t)
	keepSingletons(t)
	f := newFixture(t)
	// A window shorter than the pause between the two changes: each is judged on its own, as plan
	// judges it (plan cannot know what the guard counted in the last window). A small share, so
	// that DNSEndpoints other tests leave behind on the shared control plane (counted by plan and
	// the operator alike) do not decide; the minimum does.
	settings := guard.Settings{Share: 0.01, Minimum: 4, Window: time.Second, Observe: time.Second, Grace: time.Minute}
	startOperatorWith(t, env.Config, operatorOptions{deletionGuard: settings})
	viewer, _ := planViewer(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	gw := f.gateway("gw", "internal")
	f.ingressService(lbIP...)
	f.policy(weuBound)
	for i := range 4 {
		f.route("", fmt.Sprintf("r%d", i), fmt.Sprintf("svc%d", i), gw.Name)
	}
	other := newNamespace(t, "solo")
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})
	})
	require.NoError(t, env.Client.Create(f.ctx, &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: other}, Spec: weuBound}))
	f.route(other, "solo", "solo", gw.Name)
	target := "aks01-weu-internal.example.com"
	for i := range 4 {
		f.waitRouteEndpoints(f.ns, fmt.Sprintf("r%d", i), f.hostname(fmt.Sprintf("svc%d", i), "example.com"), target, "external-dns-neu", "external-dns-weu")
	}
	f.waitRouteEndpoints(other, "solo", f.hostname("solo", "example.com"), target, "external-dns-neu", "external-dns-weu")
	f.waitAddressRecords("internal", target, map[string][]string{"A": {lbIP[0].IP}}, "external-dns-neu", "external-dns-weu")

	planFor := func(ns string, spec string) (routerplan.Result, []*unstructured.Unstructured) {
		t.Helper()
		objs := objectsOf(t, fmt.Sprintf("apiVersion: routing.router.io/v1alpha1\nkind: DNSPolicy\nmetadata: {name: dns, namespace: %s}\nspec: %s", ns, spec))
		r, _, err := routerplan.PredictFor(f.ctx, viewer, objs, false, ns, routerplan.Settings{Guard: settings})
		require.NoError(t, err)
		return r, objs
	}
	deletionsHeld := func() metav1.ConditionStatus {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		require.NoError(t, env.Client.Get(f.ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg))
		if c := meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionDeletionsHeld); c != nil {
			return c.Status
		}
		return metav1.ConditionUnknown
	}

	// One record: plan says the guard lets it go, and it goes without DeletionsHeld.
	small, objs := planFor(other, "{mode: Active}")
	require.Equal(t, 1, small.Guard.Deletions, small.Guard.Message)
	require.False(t, small.Guard.Holds, small.Guard.Message)
	f.applyManifests(objs, false)
	waitFor(t, "the small change's record to go, unheld", func() string {
		if deletionsHeld() == metav1.ConditionTrue {
			t.Fatalf("the guard held a change plan said it would not hold: %s", small.Guard.Message)
		}
		if eps := routeEndpoints(t, other, "solo"); len(eps) != 1 {
			return fmt.Sprintf("%d DNSEndpoints", len(eps))
		}
		return ""
	})
	time.Sleep(2 * settings.Window) // the next change is judged on its own

	// A record of every route of the namespace: plan says the guard holds it, and it does.
	mass, objs := planFor(f.ns, "{mode: Active}")
	require.Equal(t, 4, mass.Guard.Deletions, mass.Guard.Message)
	require.True(t, mass.Guard.Holds, mass.Guard.Message)
	f.applyManifests(objs, false)
	f.waitDeletionsHeld(metav1.ConditionTrue)
	for i := range 4 {
		require.Len(t, routeEndpoints(t, f.ns, fmt.Sprintf("r%d", i)), 2, "held: the neu record of r%d is still there", i)
	}
	// Reverting within the grace period keeps them; plan of the revert deletes nothing.
	revert, objs := planFor(f.ns, "{mode: RegionBound, sourceRegion: weu}")
	require.Zero(t, revert.Guard.Deletions, revert.Guard.Message)
	f.applyManifests(objs, false)
	f.waitDeletionsHeld(metav1.ConditionFalse)
	for i := range 4 {
		require.Len(t, routeEndpoints(t, f.ns, fmt.Sprintf("r%d", i)), 2, "r%d keeps both records", i)
	}
}

// TestPlan_ClustersWithoutTheOptionalAPIsOrTheOperator: without the DNSEndpoint, Istio Gateway and
// Gateway API CRDs, plan reads the cluster as the operator does (the APIs are missing, nothing is published,
// nothing is removed) instead of failing; without the operator's own CRDs it says so.
func TestPlan_ClustersWithoutTheOptionalAPIsOrTheOperator(t *testing.T) {
	bare := startControlPlane(t, testenv.Options{SkipIstioCRDs: true, SkipExternalDNSCRDs: true})
	ctx := context.Background()
	for _, obj := range []client.Object{
		&clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName}, Spec: weuIdentity()},
		&clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName},
			Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{{Name: "external-dns-weu", Region: "weu"}}}},
		&routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: "default"}, Spec: weuBound},
		&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gwapi", Namespace: "default"},
			Spec: routingv1alpha1.GatewaySpec{Controller: "ingress", CredentialName: "cert", TargetPostfix: "gwapi", Backend: routingv1alpha1.BackendGatewayAPI}},
	} {
		require.NoError(t, bare.Client.Create(ctx, obj))
	}
	objs := objectsOf(t, "apiVersion: routing.router.io/v1alpha1\nkind: ServiceRoute\nmetadata: {name: api}\nspec: {serviceName: api, gatewayName: gw, environment: dev, application: shop}")
	result, prediction, err := routerplan.PredictFor(ctx, bare.Client, objs, false, "default", routerplan.DefaultSettings)
	require.NoError(t, err)
	require.Empty(t, prediction.Endpoints)
	require.Equal(t, routingv1alpha1.ReasonExternalDNSNotInstalled, prediction.Routes["default/api"].Reason)
	require.Zero(t, result.RecordsRemoved)
	// Without the Gateway API CRDs a GatewayAPI Gateway generates nothing, keeps what exists, and
	// the plan says so.
	require.Equal(t, routingv1alpha1.ReasonGatewayAPINotInstalled, prediction.Gateways["default/gwapi"].Reason)
	require.Contains(t, result.Gateways, routerplan.GatewayChange{Gateway: "default/gwapi", Before: routerplan.GatewayState{Exists: true},
		After: routerplan.GatewayState{Exists: true, Ready: "False", Reason: routingv1alpha1.ReasonGatewayAPINotInstalled, Message: prediction.Gateways["default/gwapi"].Message}})
	require.Empty(t, result.Objects)

	none := startControlPlane(t, testenv.Options{SkipOperatorCRDs: true})
	_, _, err = routerplan.PredictFor(ctx, none.Client, objs, false, "default", routerplan.DefaultSettings)
	require.ErrorIs(t, err, routerplan.ErrNotInstalled)
}
