package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// waitGitOpsHealth waits until both kstatus and the Argo CD check say want of o and their
// messages (kstatus's is the Stalled or Reconciling condition's message; Argo CD's starts with the
// reason) say says: an object already in want's state for another reason is waited for too.
func waitGitOpsHealth(t *testing.T, state string, o kstatusObject, want gitopsHealth, says string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s: %s is %s / %s saying %q", state, o, want.kstatus, want.argo, says), func() string {
		res := kstatusOf(t, o)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.gvk)
		require.NoError(t, env.Client.Get(t.Context(), o.key, u))
		argo, argoMessage := argoHealth(t, u)
		if res.Status != want.kstatus || argo != want.argo || !strings.Contains(res.Message+" | "+argoMessage, says) {
			return fmt.Sprintf("kstatus %s (%s), Argo CD %s (%s)", res.Status, res.Message, argo, argoMessage)
		}
		return ""
	})
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

	// Failed: only a person can resolve these, and the message says what to change.
	waitGitOpsHealth(t, "an older route holds the hostname", func() kstatusObject {
		time.Sleep(1100 * time.Millisecond) // creationTimestamp has a resolution of one second
		other := newNamespace(t, "other")
		f.route(other, "api-copy", "api", "default-gateway")
		return kstatusObject{"", route.gvk, client.ObjectKey{Namespace: other, Name: "api-copy"}, "copied ServiceRoute"}
	}(), failed, "claimed by an older ServiceRoute")
	duplicate := f.namedPolicy("dns-copy", activeMode)
	waitGitOpsHealth(t, "a second DNSPolicy in the namespace", kstatusObject{"", policy.gvk, client.ObjectKeyFromObject(duplicate), "second DNSPolicy"}, failed, "delete this one")
	require.NoError(t, env.Client.Delete(f.ctx, duplicate))
	time.Sleep(1100 * time.Millisecond)
	second := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: f.gatewayNS},
		Spec: routingv1alpha1.GatewaySpec{Controller: f.controller, CredentialName: "cert", TargetPostfix: "internal", IngressNamespace: newNamespace(t, "ingress")}}
	require.NoError(t, env.Client.Create(f.ctx, second))
	waitGitOpsHealth(t, "a Gateway taking the entry point's Service from another namespace",
		kstatusObject{"", gateway.gvk, client.ObjectKeyFromObject(second), "second Gateway"}, failed, "default-gateway")
	require.NoError(t, env.Client.Delete(f.ctx, second))
	f.setIdentity(weuIdentity("sea")) // sea has no ExternalDNS controller
	waitGitOpsHealth(t, "an adopted region without a controller", identity, failed, "sea")
	f.setIdentity(weuIdentity())
	// (A DNSConfiguration has no failed state: admission refuses what the operator would.)
	for _, o := range all {
		waitGitOpsHealth(t, "ready again", o, current, "")
	}

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
