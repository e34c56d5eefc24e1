package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// argoHealthScript is the Argo CD health check the project ships for its five kinds.
var argoHealthScript = filepath.Join("config", "argocd", "health.lua")

// argoHealth runs the health check on obj the way Argo CD runs a health check from argocd-cm
// (util/lua in argo-cd): a fresh gopher-lua state with only the package, base and table libraries
// (standard libraries such as string are off for argocd-cm scripts), the object as the global
// obj, and the returned table's status and message.
func argoHealth(t *testing.T, obj *unstructured.Unstructured) (status, message string) {
	t.Helper()
	status, message, err := runArgoHealth(obj)
	require.NoError(t, err)
	return status, message
}

// runArgoHealth is argoHealth without a test to fail: for a watch's goroutine.
func runArgoHealth(obj *unstructured.Unstructured) (status, message string, err error) {
	script, err := os.ReadFile(filepath.Join(env.RepoRoot, argoHealthScript))
	if err != nil {
		return "", "", err
	}
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return "", "", err
		}
	}
	l.SetGlobal("obj", luaValue(l, obj.Object))
	if err := l.DoString(string(script)); err != nil {
		return "", "", fmt.Errorf("running %s: %w", argoHealthScript, err)
	}
	result, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("%s returns %s, not a table", argoHealthScript, l.Get(-1).Type())
	}
	status, message = result.RawGetString("status").String(), result.RawGetString("message").String()
	if !slices.Contains([]string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}, status) {
		return "", "", fmt.Errorf("%s returns status %q: Argo CD turns any other status into Unknown", argoHealthScript, status)
	}
	return status, message, nil
}

// luaValue converts an unstructured value to Lua like Argo CD's decodeValue: integers (int64 in
// unstructured objects) become numbers, maps tables, slices arrays.
func luaValue(l *lua.LState, value any) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(luaValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for key, item := range v {
			tbl.RawSetH(lua.LString(key), luaValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}

// argoObject names one live object of the operator's kinds.
type argoObject struct {
	gvk schema.GroupVersionKind
	key client.ObjectKey
}

func (o argoObject) String() string { return fmt.Sprintf("%s %s", o.gvk.Kind, o.key) }

func (o argoObject) get(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.gvk)
	require.NoError(t, env.Client.Get(t.Context(), o.key, u))
	return u
}

// waitArgoHealth waits until the health check reports want for the live object and returns its
// message.
func waitArgoHealth(t *testing.T, o argoObject, want string) string {
	t.Helper()
	var message string
	waitFor(t, fmt.Sprintf("Argo CD health %s of %s", want, o), func() string {
		status, msg := argoHealth(t, o.get(t))
		message = msg
		if status != want {
			return fmt.Sprintf("%s: %s", status, msg)
		}
		return ""
	})
	return message
}

// changeSpec updates one spec field (the whole spec without field) of the live object and returns the API server's answer: the
// object right after a spec change, with the new generation and the status the operator wrote for
// the previous one.
func changeSpec(t *testing.T, o argoObject, value any, field ...string) *unstructured.Unstructured {
	t.Helper()
	var updated *unstructured.Unstructured
	require.NoError(t, retryOnConflict(func() error {
		updated = o.get(t)
		require.NoError(t, unstructured.SetNestedField(updated.Object, value, append([]string{"spec"}, field...)...))
		return env.Client.Update(t.Context(), updated)
	}))
	return updated
}

// TestArgoCDHealth_FollowsObservedGenerationAndReady runs config/argocd/health.lua on the live
// objects of a scenario driven by the operator: Progressing while the operator has not reconciled
// the current generation or waits for something, Healthy once converged (and for a route that is
// not published on purpose), Degraded when someone has to fix something (condition Stalled).
func TestArgoCDHealth_FollowsObservedGenerationAndReady(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)

	identity := argoObject{clusterv1alpha1.GroupVersion.WithKind("ClusterIdentity"), client.ObjectKey{Name: clusterv1alpha1.ClusterIdentityName}}
	configuration := argoObject{clusterv1alpha1.GroupVersion.WithKind("DNSConfiguration"), client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}}
	gateway := argoObject{routingv1alpha1.GroupVersion.WithKind("Gateway"), client.ObjectKey{Namespace: f.gatewayNS, Name: "default-gateway"}}
	policy := argoObject{routingv1alpha1.GroupVersion.WithKind("DNSPolicy"), client.ObjectKey{Namespace: f.ns, Name: "dns"}}
	route := argoObject{routingv1alpha1.GroupVersion.WithKind("ServiceRoute"), client.ObjectKey{Namespace: f.ns, Name: "api-route"}}

	// Waiting for things that are expected to appear: a load balancer address, a DNSPolicy.
	f.gateway("default-gateway", "internal")
	f.route("", "api-route", "api", "default-gateway")
	f.waitGateway("default-gateway", routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerNotFound)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonDNSPolicyNotFound)
	for _, o := range []argoObject{gateway, route} {
		status, message := argoHealth(t, o.get(t))
		assert.Equal(t, "Progressing", status, "%s: %s", o, message)
	}

	// Converged: every kind is Healthy and says why.
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitGateway("default-gateway", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	for _, o := range []argoObject{identity, configuration, gateway, policy, route} {
		message := waitArgoHealth(t, o, "Healthy")
		assert.NotEmpty(t, message, "%s", o)
	}
	assert.Contains(t, waitArgoHealth(t, route, "Healthy"), routingv1alpha1.ReasonReconciliationSucceeded)

	// Right after a spec change, the object the API server returns carries the new generation and
	// the Ready=True of the previous one: Progressing until the operator has reconciled it.
	f.setControllers("weu", "neu") // so that the identity can adopt neu
	waitArgoHealth(t, configuration, "Healthy")
	for _, change := range []struct {
		object argoObject
		value  any
		field  []string
	}{
		{identity, []any{"neu"}, []string{"adoptsRegions"}},
		{configuration, []any{
			map[string]any{"name": "external-dns-weu", "region": "weu"},
			map[string]any{"name": "external-dns-neu", "region": "neu"},
			map[string]any{"name": "external-dns-frc", "region": "frc"},
		}, []string{"externalDNSControllers"}},
		{gateway, "cert-rotated", []string{"credentialName"}},
		{policy, map[string]any{"mode": "RegionBound", "sourceRegion": "weu"}, nil},
		{route, "api2", []string{"serviceName"}},
	} {
		updated := changeSpec(t, change.object, change.value, change.field...)
		status, message := argoHealth(t, updated)
		assert.Equal(t, "Progressing", status, "%s right after a spec change: %s", change.object, message)
		assert.Contains(t, message, fmt.Sprintf("generation %d", updated.GetGeneration()))
	}
	for _, o := range []argoObject{identity, configuration, gateway, policy, route} {
		waitArgoHealth(t, o, "Healthy")
	}

	// A route that is not published from this cluster on purpose (its DNSPolicy applies to another
	// region) is Healthy, so that an application on a standby cluster is Healthy too.
	f.updatePolicy(routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeRegionBound, SourceRegion: "neu"})
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonDNSPolicyInactive)
	assert.Contains(t, waitArgoHealth(t, route, "Healthy"), routingv1alpha1.ReasonDNSPolicyInactive)
	assert.Contains(t, waitArgoHealth(t, policy, "Healthy"), routingv1alpha1.ReasonPolicyInactive)
	f.updatePolicy(activeMode)

	// A route applied before its Gateway waits for it (phase Failed, but condition Reconciling):
	// GitOps tools apply objects in no particular order.
	f.route("", "lost-route", "lost", "missing-gateway")
	f.waitRoute(f.ns, "lost-route", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonGatewayNotFound)
	lost := argoObject{route.gvk, client.ObjectKey{Namespace: f.ns, Name: "lost-route"}}
	assert.Contains(t, waitArgoHealth(t, lost, "Progressing"), "missing-gateway")

	// Failures that need someone to act (condition Stalled) are Degraded, with the operator's
	// reason and message.

	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has a resolution of one second
	otherNS := newNamespace(t, "other")
	f.route(otherNS, "api-copy", "api2", "default-gateway")
	f.waitRoute(otherNS, "api-copy", routingv1alpha1.PhasePending, routingv1alpha1.ReasonHostnameConflict)
	copied := argoObject{route.gvk, client.ObjectKey{Namespace: otherNS, Name: "api-copy"}}
	assert.Contains(t, waitArgoHealth(t, copied, "Degraded"), routingv1alpha1.ReasonHostnameConflict)

	duplicate := &routingv1alpha1.DNSPolicy{}
	duplicate.Name, duplicate.Namespace, duplicate.Spec = "dns-copy", f.ns, activeMode
	require.NoError(t, env.Client.Create(t.Context(), duplicate))
	assert.Contains(t, waitArgoHealth(t, argoObject{policy.gvk, client.ObjectKeyFromObject(duplicate)}, "Degraded"), routingv1alpha1.ReasonDuplicatePolicy)

	f.setIdentity(weuIdentity("neu", "sea")) // sea has no ExternalDNS controller
	assert.Contains(t, waitArgoHealth(t, identity, "Degraded"), clusterv1alpha1.ReasonAdoptedRegionWithoutController)
	f.setIdentity(weuIdentity())
	waitArgoHealth(t, identity, "Healthy")
}

// TestArgoCDHealth_NewObjectIsProgressing: an object the operator has not reconciled yet, as the
// API server returns it on create, is Progressing, not Healthy.
func TestArgoCDHealth_NewObjectIsProgressing(t *testing.T) {
	f := newFixture(t) // no operator runs in this test
	r := f.route("", "new-route", "api", "new-gateway")
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(routingv1alpha1.GroupVersion.WithKind("ServiceRoute"))
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(r), u))
	status, message := argoHealth(t, u)
	assert.Equal(t, "Progressing", status, message)
}

// TestArgoCDHealth_KustomizationInstallsTheScriptForEveryKind: config/argocd's kustomization puts
// health.lua into argocd-cm under the key of each of the five kinds.
func TestArgoCDHealth_KustomizationInstallsTheScriptForEveryKind(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, "config", "argocd", "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		ConfigMapGenerator []struct {
			Name  string   `json:"name"`
			Files []string `json:"files"`
		} `json:"configMapGenerator"`
	}
	require.NoError(t, yaml.Unmarshal(data, &k))
	require.Len(t, k.ConfigMapGenerator, 1)
	assert.Equal(t, "argocd-cm", k.ConfigMapGenerator[0].Name)
	var want []string
	for _, kind := range []string{"cluster.router.io_ClusterIdentity", "cluster.router.io_DNSConfiguration",
		"routing.router.io_Gateway", "routing.router.io_DNSPolicy", "routing.router.io_ServiceRoute"} {
		want = append(want, "resource.customizations.health."+kind+"=health.lua")
	}
	assert.ElementsMatch(t, want, k.ConfigMapGenerator[0].Files)
}
