package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// gitopsHealth is what the two families of GitOps tools say about one object: kstatus (Flux,
// cli-utils appliers) and the Argo CD health check the project ships (config/argocd/health.lua).
type gitopsHealth struct {
	kstatus status.Status
	argo    string
}

var (
	current    = gitopsHealth{status.CurrentStatus, "Healthy"}
	inProgress = gitopsHealth{status.InProgressStatus, "Progressing"}
	failed     = gitopsHealth{status.FailedStatus, "Degraded"}
)

// waitGitOpsHealth waits until both kstatus and the Argo CD check say want of o, and each of them
// says says: kstatus in the reason or message of the condition it reads (Stalled or Reconciling),
// Argo CD in its message (which starts with the reason). An object already in want's state for
// another reason is waited for too.
func waitGitOpsHealth(t *testing.T, state string, o kstatusObject, want gitopsHealth, says string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s: %s is %s / %s, each saying %q", state, o, want.kstatus, want.argo, says), func() string {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.gvk)
		require.NoError(t, env.Client.Get(t.Context(), o.key, u))
		h, err := gitopsHealthOf(u)
		require.NoError(t, err)
		if h.kstatus != want.kstatus || h.argo != want.argo || !strings.Contains(h.kstatusSays, says) || !strings.Contains(h.argoSays, says) {
			return h.String()
		}
		return ""
	})
}

// observedHealth is what both tools say of one version of an object.
type observedHealth struct {
	gitopsHealth
	kstatusSays, argoSays string
}

func (h observedHealth) String() string {
	return fmt.Sprintf("kstatus %s (%s), Argo CD %s (%s)", h.kstatus, h.kstatusSays, h.argo, h.argoSays)
}

// gitopsHealthOf computes what kstatus and the Argo CD check say of u. What kstatus says is the
// reason and message of the condition its status comes from (Stalled when Failed, Reconciling
// when InProgress), since its result carries only the message.
func gitopsHealthOf(u *unstructured.Unstructured) (observedHealth, error) {
	res, err := status.Compute(u)
	if err != nil {
		return observedHealth{}, err
	}
	argo, argoMessage, err := runArgoHealth(u)
	if err != nil {
		return observedHealth{}, err
	}
	says := res.Message
	from := map[status.Status]string{status.FailedStatus: clusterv1alpha1.ConditionStalled, status.InProgressStatus: clusterv1alpha1.ConditionReconciling}[res.Status]
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		if m, _ := c.(map[string]any); m["type"] == from {
			says = fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return observedHealth{gitopsHealth{res.Status, argo}, says, argoMessage}, nil
}

// healthWatch follows every version of the five kinds' objects (a watch: nothing in between is
// missed, as polling would) and records each state a GitOps tool acts on — kstatus Failed, Argo CD
// Degraded: Flux aborts a sync on it — that the scenario did not expect. Only the objects given to
// guard or expect are judged (the API server holds other tests' objects too): guard says an object
// must never fail, expect that it may for now.
type healthWatch struct {
	mu         sync.Mutex
	mayFail    map[string]bool   // "Kind namespace/name" judged: whether it may be Failed now
	latest     map[string]string // "Kind namespace/name": the last resourceVersion seen
	unexpected []string
}

func watchGitOpsHealth(t *testing.T) *healthWatch {
	t.Helper()
	h := &healthWatch{mayFail: map[string]bool{}, latest: map[string]string{}}
	dyn, err := dynamic.NewForConfig(env.Config)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, gvr := range []schema.GroupVersionResource{
		clusterv1alpha1.GroupVersion.WithResource("clusteridentities"), clusterv1alpha1.GroupVersion.WithResource("dnsconfigurations"),
		routingv1alpha1.GroupVersion.WithResource("gateways"), routingv1alpha1.GroupVersion.WithResource("dnspolicies"),
		routingv1alpha1.GroupVersion.WithResource("serviceroutes"),
	} {
		w, err := dyn.Resource(gvr).Watch(ctx, metav1.ListOptions{})
		require.NoError(t, err, "watching %s", gvr.Resource)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type == watch.Deleted {
					continue
				}
				h.observe(u)
			}
		}()
	}
	return h
}

func (h *healthWatch) observe(u *unstructured.Unstructured) {
	key := u.GetKind() + " " + client.ObjectKeyFromObject(u).String()
	health, err := gitopsHealthOf(u)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.latest[key] = u.GetResourceVersion()
	mayFail, judged := h.mayFail[key]
	switch {
	case !judged:
	case err != nil:
		h.unexpected = append(h.unexpected, fmt.Sprintf("%s (resourceVersion %s): %v", key, u.GetResourceVersion(), err))
	case (health.kstatus == status.FailedStatus || health.argo == "Degraded") && !mayFail:
		h.unexpected = append(h.unexpected, fmt.Sprintf("%s (resourceVersion %s): %s", key, u.GetResourceVersion(), health))
	}
}

func healthKey(o kstatusObject) string { return o.gvk.Kind + " " + o.key.String() }

// guard judges the objects from now on: they must never be Failed.
func (h *healthWatch) guard(objs ...kstatusObject) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, o := range objs {
		h.mayFail[healthKey(o)] = false
	}
}

// expect judges o from now on: it may be Failed.
func (h *healthWatch) expect(o kstatusObject) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mayFail[healthKey(o)] = true
}

// guardOnceSeen guards o again once the watch has caught up with its version in the API server
// (its Failed versions, which the scenario expected, may still be on their way through the watch).
func (h *healthWatch) guardOnceSeen(t *testing.T, o kstatusObject) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.gvk)
	require.NoError(t, env.Client.Get(t.Context(), o.key, u))
	waitFor(t, "the watch to see "+o.String()+" at resourceVersion "+u.GetResourceVersion(), func() string {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.latest[healthKey(o)] != u.GetResourceVersion() {
			return "seen " + h.latest[healthKey(o)]
		}
		h.mayFail[healthKey(o)] = false
		return ""
	})
}

// check fails t with every unexpected state seen so far.
func (h *healthWatch) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, u := range h.unexpected {
		t.Errorf("a state a GitOps tool acts on, which the scenario did not expect: %s", u)
	}
}

// TestGitOpsHealth_EveryKindInEveryState drives each of the five kinds through the states a
// GitOps tool meets — progressing, ready, failed (a person must change a spec), and an input
// deleted under it — and checks that kstatus and the Argo CD health check agree with what a user
// expects: InProgress/Progressing while the operator waits for something that appears on its
// own, Current/Healthy when converged, Failed/Degraded (condition Stalled) only when waiting
// cannot help. A deleted input is waited for, not failed: GitOps tools apply and delete objects in
// no particular order.
func TestGitOpsHealth_EveryKindInEveryState(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)

	identity := kstatusObject{"", clusterv1alpha1.GroupVersion.WithKind("ClusterIdentity"), client.ObjectKey{Name: clusterv1alpha1.ClusterIdentityName}, "ClusterIdentity"}
	configuration := kstatusObject{"", clusterv1alpha1.GroupVersion.WithKind("DNSConfiguration"), client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, "DNSConfiguration"}
	gateway := kstatusObject{"", routingv1alpha1.GroupVersion.WithKind("Gateway"), client.ObjectKey{Namespace: f.gatewayNS, Name: "default-gateway"}, "Gateway"}
	policy := kstatusObject{"", routingv1alpha1.GroupVersion.WithKind("DNSPolicy"), client.ObjectKey{Namespace: f.ns, Name: "dns"}, "DNSPolicy"}
	route := kstatusObject{"", routingv1alpha1.GroupVersion.WithKind("ServiceRoute"), client.ObjectKey{Namespace: f.ns, Name: "api-route"}, "ServiceRoute"}
	all := []kstatusObject{identity, configuration, gateway, policy, route}
	// From here on, every version of these objects is judged: only the objects made to fail below
	// may be Failed, and only while they are meant to. The singletons from their first Ready on
	// (their status may still be another test's until the operator has seen their spec).
	health := watchGitOpsHealth(t)
	defer health.check(t)
	health.guard(gateway, policy, route)

	// Progressing: the Gateway's load balancer and the route's DNSPolicy do not exist yet.
	f.gateway("default-gateway", "internal")
	f.route("", "api-route", "api", "default-gateway")
	waitGitOpsHealth(t, "progressing", gateway, inProgress, "")
	waitGitOpsHealth(t, "progressing", route, inProgress, "")

	// Ready.
	svc := f.ingressService(lbIP...)
	f.policy(activeMode)
	for _, o := range all {
		waitGitOpsHealth(t, "ready", o, current, "")
	}
	health.guard(identity, configuration)

	// Failed: only a person can resolve these, and the message says what to change.
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has a resolution of one second
	other := newNamespace(t, "other")
	copied := kstatusObject{"", route.gvk, client.ObjectKey{Namespace: other, Name: "api-copy"}, "copied ServiceRoute"}
	health.expect(copied)
	f.route(other, "api-copy", "api", "default-gateway")
	waitGitOpsHealth(t, "an older route holds the hostname", copied, failed, "claimed by an older ServiceRoute")
	duplicate := kstatusObject{"", policy.gvk, client.ObjectKey{Namespace: f.ns, Name: "dns-copy"}, "second DNSPolicy"}
	health.expect(duplicate)
	f.namedPolicy("dns-copy", activeMode)
	waitGitOpsHealth(t, "a second DNSPolicy in the namespace", duplicate, failed, "delete this one")
	require.NoError(t, env.Client.Delete(f.ctx, &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "dns-copy"}}))
	time.Sleep(1100 * time.Millisecond)
	second := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: f.gatewayNS},
		Spec: routingv1alpha1.GatewaySpec{Controller: f.controller, CredentialName: "cert", TargetPostfix: "internal", IngressNamespace: newNamespace(t, "ingress")}}
	secondGateway := kstatusObject{"", gateway.gvk, client.ObjectKeyFromObject(second), "second Gateway"}
	health.expect(secondGateway)
	require.NoError(t, env.Client.Create(f.ctx, second))
	waitGitOpsHealth(t, "a Gateway taking the entry point's Service from another namespace", secondGateway, failed, "default-gateway")
	require.NoError(t, env.Client.Delete(f.ctx, second))
	health.expect(identity)
	f.setIdentity(weuIdentity("sea")) // sea has no ExternalDNS controller
	waitGitOpsHealth(t, "an adopted region without a controller", identity, failed, "sea")
	f.setIdentity(weuIdentity())
	// (A DNSConfiguration has no failed state: admission refuses what the operator would.)
	for _, o := range all {
		waitGitOpsHealth(t, "ready again", o, current, "")
	}
	health.guardOnceSeen(t, identity)

	// Deleted inputs are waited for.
	f.deleteDNSConfiguration()
	for _, o := range []kstatusObject{identity, policy, route} {
		waitGitOpsHealth(t, "DNSConfiguration deleted", o, inProgress, clusterv1alpha1.ReasonDNSConfigurationNotFound)
	}
	f.setControllers("weu")
	require.NoError(t, env.Client.Delete(f.ctx, svc))
	waitGitOpsHealth(t, "ingress Service deleted", gateway, inProgress, routingv1alpha1.ReasonLoadBalancerNotFound)
	require.NoError(t, env.Client.Delete(f.ctx, &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "dns"}}))
	waitGitOpsHealth(t, "DNSPolicy deleted", route, inProgress, routingv1alpha1.ReasonDNSPolicyNotFound)
	f.policy(activeMode)
	require.NoError(t, env.Client.Delete(f.ctx, &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: f.gatewayNS, Name: "default-gateway"}}))
	waitGitOpsHealth(t, "Gateway deleted", route, inProgress, routingv1alpha1.ReasonGatewayNotFound)

	// Everything back: ready again, with neither Reconciling nor Stalled left behind.
	f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	for _, o := range all {
		waitGitOpsHealth(t, "inputs restored", o, current, "")
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.gvk)
		require.NoError(t, env.Client.Get(t.Context(), o.key, u))
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conditions {
			typ := c.(map[string]any)["type"]
			require.NotContains(t, []any{clusterv1alpha1.ConditionReconciling, clusterv1alpha1.ConditionStalled}, typ, "%s once Ready", o)
		}
	}
}
