package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// TestPrinterColumns_KubectlGetSaysWhyNotReady: `kubectl get` alone, without -o wide or
// describe, answers "why not Ready" for every kind: a route on a Gateway that does not exist, a
// second DNSPolicy in a namespace and a Gateway without an ingress Service show their Ready
// reason in a REASON column; the cluster objects show theirs, and the DNSConfiguration whether
// deletions are held (the guard test shows it while they are).
func TestPrinterColumns_KubectlGetSaysWhyNotReady(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)
	ctx := context.Background()
	admin := adminKubeconfig(t)

	f.policy(activeMode)
	f.route("", "lost", "api", "no-such-gateway")
	waitRouteReason(t, env.Client, f.ns, "lost", routingv1alpha1.ReasonGatewayNotFound)
	out := kubectlOutput(t, admin, "get", "serviceroutes", "-n", f.ns)
	row := tableRow(t, out, "lost")
	assert.Equal(t, "False", row["READY"], out)
	assert.Equal(t, routingv1alpha1.ReasonGatewayNotFound, row["REASON"], out)

	time.Sleep(1100 * time.Millisecond) // creationTimestamp has a resolution of one second: "dns" is older
	duplicate := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns-copy", Namespace: f.ns}, Spec: activeMode}
	require.NoError(t, env.Client.Create(ctx, duplicate))
	waitFor(t, "the second DNSPolicy to be a duplicate", func() string {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(duplicate), duplicate))
		if c := meta.FindStatusCondition(duplicate.Status.Conditions, routingv1alpha1.ConditionReady); c == nil || c.Reason != routingv1alpha1.ReasonDuplicatePolicy {
			return "not yet"
		}
		return ""
	})
	out = kubectlOutput(t, admin, "get", "dnsp", "-n", f.ns)
	assert.Equal(t, routingv1alpha1.ReasonDuplicatePolicy, tableRow(t, out, "dns-copy")["REASON"], out)

	gw := f.gateway("no-ingress", "internal")
	f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerNotFound)
	out = kubectlOutput(t, admin, "get", "rgw", "-n", f.gatewayNS)
	row = tableRow(t, out, gw.Name)
	assert.Equal(t, "False", row["READY"], out)
	assert.Equal(t, routingv1alpha1.ReasonLoadBalancerNotFound, row["REASON"], out)

	// The cluster objects: the REASON column is the Ready reason, HELD the DeletionsHeld status.
	identity := &clusterv1alpha1.ClusterIdentity{}
	cfg := &clusterv1alpha1.DNSConfiguration{}
	waitFor(t, "the cluster objects' status", func() string {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.ClusterIdentityName}, identity))
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg))
		if meta.FindStatusCondition(identity.Status.Conditions, clusterv1alpha1.ConditionReady) == nil ||
			meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionReady) == nil ||
			meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionDeletionsHeld) == nil {
			return "conditions missing"
		}
		return ""
	})
	out = kubectlOutput(t, admin, "get", "cid")
	assert.Equal(t, meta.FindStatusCondition(identity.Status.Conditions, clusterv1alpha1.ConditionReady).Reason,
		tableRow(t, out, clusterv1alpha1.ClusterIdentityName)["REASON"], out)
	out = kubectlOutput(t, admin, "get", "dnscfg")
	row = tableRow(t, out, clusterv1alpha1.DNSConfigurationName)
	assert.Equal(t, clusterv1alpha1.ReasonConfigurationValid, row["REASON"], out)
	assert.Equal(t, "False", row["HELD"], out)
	assert.NotContains(t, row, "DELETIONS", "the held deletions' message is for -o wide")
}
