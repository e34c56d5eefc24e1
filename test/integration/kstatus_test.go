package integration

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// kstatusObject names one object of the operator's kinds, for kstatus and kubectl.
type kstatusObject struct {
	kind     string // kubectl resource: plural.group (gateway alone would be Istio's)
	gvk      schema.GroupVersionKind
	key      client.ObjectKey
	describe string
}

func (o kstatusObject) String() string { return o.describe }

// kstatusOf computes the object's status the way kstatus-based tools (Flux, Argo CD, cli-utils
// appliers) do.
func kstatusOf(t *testing.T, o kstatusObject) *status.Result {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.gvk)
	require.NoError(t, env.Client.Get(context.Background(), o.key, u))
	res, err := status.Compute(u)
	require.NoError(t, err)
	return res
}

// waitKstatus waits until kstatus reports want for every object.
func waitKstatus(t *testing.T, want status.Status, objs ...kstatusObject) {
	t.Helper()
	for _, o := range objs {
		waitFor(t, fmt.Sprintf("kstatus %s of %s", want, o), func() string {
			if res := kstatusOf(t, o); res.Status != want {
				return fmt.Sprintf("%s: %s", res.Status, res.Message)
			}
			return ""
		})
	}
}

// kubectlWait runs `kubectl wait --for=condition=Ready` on the objects.
func kubectlWait(t *testing.T, kubeconfig string, timeout time.Duration, objs ...kstatusObject) error {
	t.Helper()
	for _, o := range objs {
		args := []string{"--kubeconfig", kubeconfig, "wait", "--for=condition=Ready", "--timeout=" + timeout.String(), o.kind + "/" + o.key.Name}
		if o.key.Namespace != "" {
			args = append(args, "--namespace", o.key.Namespace)
		}
		if out, err := exec.Command(filepath.Join(env.RepoRoot, "bin", "kubectl"), args...).CombinedOutput(); err != nil {
			return fmt.Errorf("kubectl wait %s: %w: %s", o, err, out)
		}
	}
	return nil
}

// TestKstatus_CurrentWhenConvergedInProgressWhilePending computes every kind's status with kstatus:
// InProgress while the operator waits for something (Ready=False) or has not yet observed the
// latest spec (observedGeneration behind), Current once converged; and `kubectl wait
// --for=condition=Ready` agrees on every kind.
func TestKstatus_CurrentWhenConvergedInProgressWhilePending(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	kubeconfig, err := env.AdminKubeconfig()
	require.NoError(t, err)
	stop := startOperator(t, env.Config)

	identity := kstatusObject{"clusteridentities.cluster.router.io", clusterv1alpha1.GroupVersion.WithKind("ClusterIdentity"),
		client.ObjectKey{Name: clusterv1alpha1.ClusterIdentityName}, "ClusterIdentity"}
	configuration := kstatusObject{"dnsconfigurations.cluster.router.io", clusterv1alpha1.GroupVersion.WithKind("DNSConfiguration"),
		client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, "DNSConfiguration"}
	gateway := kstatusObject{"gateways.routing.router.io", routingv1alpha1.GroupVersion.WithKind("Gateway"),
		client.ObjectKey{Namespace: f.gatewayNS, Name: "default-gateway"}, "Gateway"}
	policy := kstatusObject{"dnspolicies.routing.router.io", routingv1alpha1.GroupVersion.WithKind("DNSPolicy"),
		client.ObjectKey{Namespace: f.ns, Name: "dns"}, "DNSPolicy"}
	route := kstatusObject{"serviceroutes.routing.router.io", routingv1alpha1.GroupVersion.WithKind("ServiceRoute"),
		client.ObjectKey{Namespace: f.ns, Name: "api-route"}, "ServiceRoute"}
	lost := kstatusObject{"serviceroutes.routing.router.io", routingv1alpha1.GroupVersion.WithKind("ServiceRoute"),
		client.ObjectKey{Namespace: f.ns, Name: "lost-route"}, "ServiceRoute without a Gateway"}
	all := []kstatusObject{identity, configuration, gateway, policy, route}

	// Pending work: no load balancer for the gateway, no DNSPolicy for the route.
	f.gateway("default-gateway", "internal")
	f.route("", "api-route", "api", "default-gateway")
	f.waitGateway("default-gateway", routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerNotFound)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonDNSPolicyNotFound)
	for _, o := range []kstatusObject{gateway, route} {
		res := kstatusOf(t, o)
		assert.Equal(t, status.InProgressStatus, res.Status, "%s: %s", o, res.Message)
	}
	assert.Error(t, kubectlWait(t, kubeconfig, time.Second, route), "kubectl wait returned for a route that is not Ready")

	// Converged, except a route whose Gateway does not exist (phase Failed): it waits for the
	// Gateway and stays InProgress.
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "lost-route", "lost", "missing-gateway")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitGateway("default-gateway", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	f.waitRoute(f.ns, "lost-route", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonGatewayNotFound)
	waitKstatus(t, status.CurrentStatus, all...)
	require.NoError(t, kubectlWait(t, kubeconfig, waitTimeout, all...))
	res := kstatusOf(t, lost)
	assert.Equal(t, status.InProgressStatus, res.Status, "%s: %s", lost, res.Message)

	// A spec change the operator has not seen yet (it is stopped): every kind is InProgress and
	// kubectl wait does not return on the stale Ready=True, whose observedGeneration is behind.
	stop()
	f.setIdentity(weuIdentity("neu"))
	f.setControllers("weu", "neu")
	update := func(obj client.Object, key client.ObjectKey, change func()) {
		obj.SetName(key.Name)
		obj.SetNamespace(key.Namespace)
		_, err := createOrUpdate(f.ctx, obj, func() error { change(); return nil })
		require.NoError(t, err)
	}
	gw := &routingv1alpha1.Gateway{}
	update(gw, gateway.key, func() { gw.Spec.CredentialName = "cert-rotated" })
	f.updatePolicy(weuBound)
	r := &routingv1alpha1.ServiceRoute{}
	update(r, route.key, func() { r.Spec.ServiceName = "api2" })
	for _, o := range all {
		res := kstatusOf(t, o)
		assert.Equal(t, status.InProgressStatus, res.Status, "%s after a spec change: %s", o, res.Message)
		assert.Error(t, kubectlWait(t, kubeconfig, time.Second, o), "kubectl wait returned for %s before the operator observed its spec", o)
	}

	// The operator catches up.
	startOperator(t, env.Config)
	waitKstatus(t, status.CurrentStatus, all...)
	require.NoError(t, kubectlWait(t, kubeconfig, waitTimeout, all...))
}

// TestKstatus_NewObjectIsInProgressUntilObserved: the CRDs default status.observedGeneration to 0,
// so an object the operator has not reconciled yet is InProgress for kstatus-based tools instead
// of Current (which kstatus answers for an object without any status).
func TestKstatus_NewObjectIsInProgressUntilObserved(t *testing.T) {
	f := newFixture(t) // no operator runs in this test
	f.gateway("new-gateway", "internal")
	f.policy(activeMode)
	f.route("", "new-route", "api", "new-gateway")
	for _, o := range []kstatusObject{
		{"gateways.routing.router.io", routingv1alpha1.GroupVersion.WithKind("Gateway"), client.ObjectKey{Namespace: f.gatewayNS, Name: "new-gateway"}, "new Gateway"},
		{"dnspolicies.routing.router.io", routingv1alpha1.GroupVersion.WithKind("DNSPolicy"), client.ObjectKey{Namespace: f.ns, Name: "dns"}, "new DNSPolicy"},
		{"serviceroutes.routing.router.io", routingv1alpha1.GroupVersion.WithKind("ServiceRoute"), client.ObjectKey{Namespace: f.ns, Name: "new-route"}, "new ServiceRoute"},
	} {
		res := kstatusOf(t, o)
		assert.Equal(t, status.InProgressStatus, res.Status, "%s: %s", o, res.Message)
	}
}
