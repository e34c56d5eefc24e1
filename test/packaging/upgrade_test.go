package packaging

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/testenv"
)

// The 0.1.0 release an upgrade starts from (testenv.PreviousRelease).
const previousReleaseVersion = testenv.PreviousReleaseVersion

// checkoutPreviousRelease extracts the 0.1.0 release's tree into a temporary directory and
// returns its path.
func checkoutPreviousRelease(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, testenv.ExtractPreviousRelease(repoRoot, dir))
	return dir
}

// buildManager builds the operator of a source tree and returns the binary. The build is bounded
// by the test's deadline only: from empty Go caches, beside make test's other builds and suites,
// downloading and compiling the release's own dependency versions took over 5 minutes on 2 cores.
func buildManager(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "manager")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building the %s operator: %s", previousReleaseVersion, out)
	return bin
}

// startManagerProcess runs an operator binary against kubeconfig until stop is called (SIGTERM,
// as a rolling update stops a Pod) or the test ends.
func startManagerProcess(t *testing.T, bin, kubeconfig string) (stop func()) {
	t.Helper()
	var output bytes.Buffer
	cmd := exec.Command(bin, "--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("the %s operator's output:\n%s", previousReleaseVersion, output.String())
		}
	}
	t.Cleanup(stop)
	return stop
}

// startOperatorOn runs the current operator in-process against env, as startOperatorAs does
// against the shared control plane.
func startOperatorOn(t *testing.T, env *testenv.Env, leaseNamespace string) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	runOperator(t, cfg, env.Scheme, leaseNamespace)
}

// publishedObjects are the UIDs of every object the operator generated (DNSEndpoints and Istio
// Gateways), by kind/namespace/name.
func publishedObjects(t *testing.T, c client.Client) map[string]types.UID {
	t.Helper()
	ctx := context.Background()
	out := map[string]types.UID{}
	managed := client.MatchingLabels{naming.LabelManagedBy: naming.ManagedByValue}
	endpoints := &externaldnsv1alpha1.DNSEndpointList{}
	require.NoError(t, c.List(ctx, endpoints, managed))
	for _, ep := range endpoints.Items {
		out["DNSEndpoint "+ep.Namespace+"/"+ep.Name] = ep.UID
	}
	gateways := &istionetworkingv1.GatewayList{}
	require.NoError(t, c.List(ctx, gateways, managed))
	for _, gw := range gateways.Items {
		out["Istio Gateway "+gw.Namespace+"/"+gw.Name] = gw.UID
	}
	return out
}

// TestChart_UpgradeFromThePreviousReleaseKeepsTheRecords installs the 0.1.0 release's chart on a
// real API server (with kube-controller-manager, whose garbage collector would delete every
// generated object if the upgrade removed a CRD or a route), lets the 0.1.0 operator publish a
// gateway and two routes in two zones, then upgrades the release to this chart the way
// docs/INSTALLATION.md#upgrading says (--take-ownership from 0.1.0) and starts this operator: every
// DNSEndpoint and the Istio Gateway keep their UIDs (no record was deleted and re-created, so no
// gap in DNS), every route and the Gateway are Ready, and every DNSEndpoint carries the label
// ExternalDNS' --label-filter selects.
func TestChart_UpgradeFromThePreviousReleaseKeepsTheRecords(t *testing.T) {
	requireOperatorRole(t)
	previous := checkoutPreviousRelease(t)
	previousManager := buildManager(t, previous)

	env, err := testenv.Start(testenv.Options{SkipOperatorCRDs: true, ControllerManager: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	c := crdClient(t, env)
	kubeconfig, err := env.AdminKubeconfig()
	require.NoError(t, err)
	ctx := context.Background()
	const ns = "service-router-system"

	_, err = helm(t, "install", releaseName, filepath.Join(previous, chartPath), "--namespace", ns, "--create-namespace",
		"--kubeconfig", kubeconfig, "--wait=false")
	require.NoError(t, err, "installing the %s chart", previousReleaseVersion)
	for _, name := range operatorCRDNames(t) {
		waitEstablished(t, c, name)
	}

	// One of everything, valid for the 0.1.0 API: the ingress Service beside the Gateway, where
	// both versions look for it.
	const app, gwNS, ingress = "myapp", "istio-system", "ingressgateway-internal"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: ingress, Namespace: gwNS, Labels: map[string]string{"istio": ingress}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}}}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: app}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gwNS}},
		&clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName},
			Spec: clusterv1alpha1.ClusterIdentitySpec{Region: "weu", Cluster: "aks01", Domain: "example.com", EnvironmentLetter: "d"}},
		&clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName},
			Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
				{Name: "external-dns-weu", Region: "weu"}, {Name: "external-dns-neu", Region: "neu"}}}},
		&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: gwNS},
			Spec: routingv1alpha1.GatewaySpec{Controller: ingress, CredentialName: "cert", TargetPostfix: "internal"}},
		svc,
		&routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: app},
			Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}},
	}
	var routes []client.ObjectKey
	for _, service := range []string{"api", "web"} {
		objs = append(objs, &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: service + "-route", Namespace: app},
			Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: service, GatewayName: "default-gateway", GatewayNamespace: gwNS, Environment: "dev", Application: app}})
		routes = append(routes, client.ObjectKey{Namespace: app, Name: service + "-route"})
	}
	for _, obj := range objs {
		require.NoError(t, c.Create(ctx, obj), "creating %T %s", obj, obj.GetName())
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.1.2.3"}}
	require.NoError(t, c.Status().Update(ctx, svc))

	// Two routes published, in Active mode, in the zone of the cluster's own region: a CNAME
	// DNSEndpoint each; the gateway's address DNSEndpoint in each of the two zones; the Istio
	// Gateway.
	const wantPublished = 2 + 2 + 1
	converged := func(what string) func() string {
		return func() string {
			for _, key := range routes {
				route := &routingv1alpha1.ServiceRoute{}
				if err := c.Get(ctx, key, route); err != nil {
					return err.Error()
				}
				if !meta.IsStatusConditionTrue(route.Status.Conditions, "Ready") {
					return fmt.Sprintf("%s: ServiceRoute %s not Ready: %v", what, key, route.Status.Conditions)
				}
			}
			gw := &routingv1alpha1.Gateway{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: gwNS, Name: "default-gateway"}, gw); err != nil {
				return err.Error()
			}
			if !meta.IsStatusConditionTrue(gw.Status.Conditions, "Ready") {
				return fmt.Sprintf("%s: Gateway not Ready: %v", what, gw.Status.Conditions)
			}
			if published := publishedObjects(t, c); len(published) != wantPublished {
				return fmt.Sprintf("%s: %d generated objects, want %d: %v", what, len(published), wantPublished, published)
			}
			return ""
		}
	}
	stopPrevious := startManagerProcess(t, previousManager, kubeconfig)
	waitUntil(t, "the "+previousReleaseVersion+" operator to publish", converged("before the upgrade"))
	before := publishedObjects(t, c)
	stopPrevious()

	_, err = helm(t, "upgrade", releaseName, repoPath(chartPath), "--namespace", ns, "--kubeconfig", kubeconfig,
		"--take-ownership", "--wait=false")
	require.NoError(t, err, "upgrading to this chart as docs/INSTALLATION.md says")
	t.Cleanup(func() { _, _ = helm(t, "uninstall", releaseName, "--namespace", ns, "--kubeconfig", kubeconfig) })

	startOperatorOn(t, env, ns)
	waitUntil(t, "this operator to converge after the upgrade", converged("after the upgrade"))
	// Whatever the new operator updates (labels, records) happens in place; wait for the label
	// ExternalDNS' --label-filter selects, the last thing 0.1.0 did not write.
	waitUntil(t, "every DNSEndpoint to carry the label filter's label", func() string {
		endpoints := &externaldnsv1alpha1.DNSEndpointList{}
		if err := c.List(ctx, endpoints, client.MatchingLabels{naming.LabelManagedBy: naming.ManagedByValue}); err != nil {
			return err.Error()
		}
		for _, ep := range endpoints.Items {
			if controller := ep.Annotations[naming.AnnotationController]; ep.Labels[naming.LabelController] != controller {
				return fmt.Sprintf("DNSEndpoint %s/%s: label %s=%q, annotation %q", ep.Namespace, ep.Name,
					naming.LabelController, ep.Labels[naming.LabelController], controller)
			}
		}
		return ""
	})

	after := publishedObjects(t, c)
	var names []string
	for name := range before {
		names = append(names, name)
	}
	sort.Strings(names)
	t.Logf("generated objects kept across the upgrade:\n  %s", strings.Join(names, "\n  "))
	assert.Equal(t, before, after, "every generated object keeps its UID: none was deleted and re-created")
}
