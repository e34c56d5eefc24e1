//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The demo (hack/demo, `make demo`) is tested as users run it: the binary, from the repository
// root, with a state directory of its own.

// demoTimeout bounds one demo run; it converges in seconds on a warm machine.
const demoTimeout = 3 * time.Minute

// demoLines are what the report must show for the samples: the generated records, the Istio
// Gateway hosts and the dig answers of both service hostnames (CNAME to the gateway hostname and
// its A record with the load balancer address).
var demoLines = []*regexp.Regexp{
	regexp.MustCompile(`myapp/api-route-external-dns-weu\s+\[external-dns-weu, published in the zone below\]`),
	regexp.MustCompile(`CNAME api-ns-d-dev-myapp\.example\.com -> aks01-weu-internal\.example\.com`),
	regexp.MustCompile(`A aks01-weu-internal\.example\.com -> 10\.123\.45\.67`),
	regexp.MustCompile(`host myapp/api-ns-d-dev-myapp\.example\.com`), // namespace-scoped Istio hosts
	regexp.MustCompile(`host myapp/web-ns-d-dev-myapp\.example\.com`),
	regexp.MustCompile(`(?m)^  api-ns-d-dev-myapp\.example\.com\.\s+IN\s+CNAME\s+aks01-weu-internal\.example\.com\.$`),
	regexp.MustCompile(`(?m)^  web-ns-d-dev-myapp\.example\.com\.\s+IN\s+CNAME\s+aks01-weu-internal\.example\.com\.$`),
	regexp.MustCompile(`(?m)^  aks01-weu-internal\.example\.com\.\s+IN\s+A\s+10\.123\.45\.67$`),
	// The per-zone publication state the operator found by asking the zone's name server.
	regexp.MustCompile(`ServiceRoute myapp/api-route\s+PUBLISHED 1/1\s+external-dns-weu=Published \(CNAME aks01-weu-internal\.example\.com\. → A 10\.123\.45\.67\)`),
	regexp.MustCompile(`Gateway istio-system/default-gateway\s+PUBLISHED 1/3\s+external-dns-weu=Published \(A 10\.123\.45\.67\), external-dns-neu=Unverified, external-dns-frc=Unverified`),
}

// TestDemo_CheckModeReportsTheDNSChain runs `demo --check`: it must print the report with the
// whole DNS chain, exit 0, and leave no process and no state behind.
func TestDemo_CheckModeReportsTheDNSChain(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "demo-state")
	ctx, cancel := context.WithTimeout(t.Context(), demoTimeout)
	defer cancel()
	start := time.Now()
	cmd := demoCommand(ctx, t, "--check", "--state-dir="+stateDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo --check: %v\n%s", err, out)
	}
	t.Logf("demo --check took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	assertDemoReport(t, string(out))
	assertDemoGone(t, stateDir)
}

// TestDemo_GatewayAPIBackendReportsListenerSets runs `demo --check --backend=GatewayAPI`: the
// sample Gateway switched to the Gateway API backend, the ListenerSet of the routes' namespace in
// the report, and the same DNS chain.
func TestDemo_GatewayAPIBackendReportsListenerSets(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "demo-state")
	ctx, cancel := context.WithTimeout(t.Context(), demoTimeout)
	defer cancel()
	out, err := demoCommand(ctx, t, "--check", "--backend=GatewayAPI", "--state-dir="+stateDir).CombinedOutput()
	if err != nil {
		t.Fatalf("demo --check --backend=GatewayAPI: %v\n%s", err, out)
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`Gateway API Gateway istio-system/default-gateway \(gateway\.networking\.k8s\.io/v1, class istio`),
		regexp.MustCompile(`ListenerSet istio-system/default-gateway\.myapp \(routes of namespace myapp only\)`),
		regexp.MustCompile(`listener https-api-ns-d-dev-myapp\.example\.com\s+HTTPS 443\s+api-ns-d-dev-myapp\.example\.com\s+certificate cert-aks-ingress in aks-istio-ingress`),
		regexp.MustCompile(`ReferenceGrant aks-istio-ingress/service-router\.istio-system\.default-gateway`),
		regexp.MustCompile(`(?m)^  api-ns-d-dev-myapp\.example\.com\.\s+IN\s+CNAME\s+aks01-weu-internal\.example\.com\.$`),
		regexp.MustCompile(`(?m)^  aks01-weu-internal\.example\.com\.\s+IN\s+A\s+10\.123\.45\.67$`),
	} {
		if !re.Match(out) {
			t.Errorf("the demo's report lacks a line matching %s\n%s", re, out)
		}
	}
	assertDemoGone(t, stateDir)
}

// TestDemo_DownStopsARunningDemo runs the demo as `make demo` does, explores it as the printed
// instructions say (kubeconfig, kubectl, dig), then stops it with `demo --down` as `make
// demo-down` does: every process ends and the state directory is removed.
func TestDemo_DownStopsARunningDemo(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "demo-state")
	ctx, cancel := context.WithTimeout(t.Context(), demoTimeout)
	defer cancel()
	out := &syncBuffer{}
	cmd := demoCommand(ctx, t, "--state-dir="+stateDir)
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { // stops the demo if the test failed before stopping it
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})

	err := framework.Poll(ctx, demoTimeout, 100*time.Millisecond, "the demo to print its exploration instructions", func(context.Context) (bool, string, error) {
		select {
		case <-exited:
			return false, "", fmt.Errorf("the demo exited early: %v\n%s", waitErr, out.String())
		default:
		}
		return strings.Contains(out.String(), "Stop with Ctrl-C"), "", nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("demo ready in %s:\n%s", time.Since(start).Round(time.Millisecond), out.String())
	assertDemoReport(t, out.String())

	// The exploration instructions work: the kubeconfig reaches the cluster and dig the zone.
	env, err := os.ReadFile(filepath.Join(stateDir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^export (\w+)=(.*)$`).FindAllStringSubmatch(string(env), -1) {
		vars[m[1]] = m[2]
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := exec.CommandContext(ctx, filepath.Join(root, "bin", "kubectl"), "get", "router", "-A")
	kubectl.Env = append(os.Environ(), "KUBECONFIG="+vars["KUBECONFIG"])
	got, err := kubectl.CombinedOutput()
	if err != nil || !bytes.Contains(got, []byte("api-ns-d-dev-myapp.example.com")) {
		t.Errorf("kubectl get router -A with the demo's KUBECONFIG: %v\n%s", err, got)
	}
	port, err := strconv.Atoi(vars["DEMO_DNS_PORT"])
	if err != nil {
		t.Fatalf("DEMO_DNS_PORT in %s: %v", env, err)
	}
	ans, err := framework.Dig(ctx, port, "web-ns-d-dev-myapp.example.com", "A")
	if err != nil || !framework.Resolves("CNAME aks01-weu-internal.example.com.", "A 10.123.45.67").Matches(ans) {
		t.Errorf("dig web-ns-d-dev-myapp.example.com against the demo's zone: %s, %v", ans, err)
	}

	// `make demo-down`.
	downStart := time.Now()
	down := demoCommand(ctx, t, "--down", "--state-dir="+stateDir)
	if got, err := down.CombinedOutput(); err != nil {
		t.Fatalf("demo --down: %v\n%s", err, got)
	} else {
		t.Logf("demo --down took %s:\n%s", time.Since(downStart).Round(time.Millisecond), got)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("the demo exited with %v after demo --down, want 0\n%s", waitErr, out.String())
		}
	case <-ctx.Done():
		t.Fatal("the demo still runs after demo --down returned")
	}
	assertDemoGone(t, stateDir)
}

// The existing-cluster mode (`make demo-on-cluster`, `demo --kubeconfig`) runs against a
// framework cluster standing in for the user's kind or k3s cluster with the chart installed: the
// operator as a process, and its Deployment as an object the test marks Available (no kubelet runs
// its pod). kube-controller-manager runs for the garbage collector and namespace deletion, as in
// a real cluster; it has no deployment controller, so the status the test writes stays.

// userCluster is the stand-in for a user's cluster: kubeconfig is "theirs".
type userCluster struct {
	*framework.Cluster
	kubeconfig string
}

// startUserCluster starts the stand-in; withOperator also starts the operator and creates its
// Deployment, Available, as `helm install` and `kubectl rollout status` leave it.
func startUserCluster(ctx context.Context, t *testing.T, withOperator bool) *userCluster {
	t.Helper()
	cl, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "users-cluster", ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := cl.NewKubeconfig("user")
	if err != nil {
		t.Fatal(err)
	}
	u := &userCluster{Cluster: cl, kubeconfig: kubeconfig}
	if withOperator {
		if _, err := cl.StartOperator(ctx, t, framework.OperatorOptions{}); err != nil {
			t.Fatal(err)
		}
		u.createOperatorDeployment(ctx, t)
	}
	return u
}

// createOperatorDeployment creates the chart's Deployment and writes an Available status into it.
func (u *userCluster) createOperatorDeployment(ctx context.Context, t *testing.T) {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/name": "service-router-operator", "app.kubernetes.io/instance": "service-router-operator"}
	if err := framework.EnsureNamespace(ctx, u.Client, "service-router-system"); err != nil {
		t.Fatal(err)
	}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "service-router-system", Name: "service-router-operator", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "ghcr.io/service-router/service-router-operator:v0.2.0"}}},
			},
		},
	}
	if err := u.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	dep.Status = appsv1.DeploymentStatus{
		ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
			LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	if err := u.Client.Status().Update(ctx, dep); err != nil {
		t.Fatal(err)
	}
}

// usersObjects are objects of the user's that the demo must leave as they are: the namespace
// myapp (the samples' routes go into it) with a ConfigMap, and the operator's Deployment.
func (u *userCluster) createUsersObjects(ctx context.Context, t *testing.T) []client.Object {
	t.Helper()
	if err := framework.EnsureNamespace(ctx, u.Client, "myapp"); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "myapp", Name: "users-settings"}, Data: map[string]string{"keep": "me"}}
	if err := u.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{&corev1.Namespace{}, &corev1.ConfigMap{}, &appsv1.Deployment{}}
	for i, key := range []client.ObjectKey{{Name: "myapp"}, {Namespace: "myapp", Name: "users-settings"}, {Namespace: "service-router-system", Name: "service-router-operator"}} {
		if err := u.Client.Get(ctx, key, objs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return objs
}

// assertUntouched checks that each object still exists with the resourceVersion it had.
func (u *userCluster) assertUntouched(ctx context.Context, t *testing.T, objs []client.Object) {
	t.Helper()
	for _, before := range objs {
		now := before.DeepCopyObject().(client.Object)
		if err := u.Client.Get(ctx, client.ObjectKeyFromObject(before), now); err != nil {
			t.Errorf("%T %s of the user's: %v", before, client.ObjectKeyFromObject(before), err)
			continue
		}
		if now.GetResourceVersion() != before.GetResourceVersion() || now.GetDeletionTimestamp() != nil {
			t.Errorf("%T %s of the user's was changed by the demo (resourceVersion %s -> %s, deletion %v)",
				before, client.ObjectKeyFromObject(before), before.GetResourceVersion(), now.GetResourceVersion(), now.GetDeletionTimestamp())
		}
	}
}

// assertNoSamples checks that nothing of the samples, nothing the operator generated for them and
// none of the namespaces the demo created is left in the cluster.
func (u *userCluster) assertNoSamples(ctx context.Context, t *testing.T, createdNamespaces ...string) {
	t.Helper()
	for _, list := range []client.ObjectList{
		&clusterv1alpha1.ClusterIdentityList{}, &clusterv1alpha1.DNSConfigurationList{},
		&routingv1alpha1.GatewayList{}, &routingv1alpha1.DNSPolicyList{}, &routingv1alpha1.ServiceRouteList{},
		&externaldnsv1alpha1.DNSEndpointList{}, &istionetworkingv1.GatewayList{},
	} {
		if err := u.Client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		if n := meta.LenList(list); n != 0 {
			t.Errorf("%T: %d items left after the demo stopped", list, n)
		}
	}
	if err := u.Client.Get(ctx, client.ObjectKey{Namespace: "aks-istio-ingress", Name: "aks-istio-ingressgateway-internal"}, &corev1.Service{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ingress Service the demo creates is still there (%v)", err)
	}
	for _, ns := range createdNamespaces {
		if err := u.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s, which the demo created, is still there (%v)", ns, err)
		}
	}
}

// TestDemo_OnAnExistingClusterResolvesAndCleansUp runs `demo --kubeconfig --check` as `make
// demo-on-cluster DEMO_FLAGS=--check` does, on a cluster with the operator (and no configuration
// of it): the names answer in the local zone, the report says publication is not verified and
// why, and afterwards the samples, the ingress Service and the namespaces the demo created are
// gone while the user's namespace myapp (into which the routes went), its ConfigMap and the
// operator's Deployment are as they were.
func TestDemo_OnAnExistingClusterResolvesAndCleansUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), demoTimeout)
	defer cancel()
	u := startUserCluster(ctx, t, true)
	users := u.createUsersObjects(ctx, t)
	stateDir := filepath.Join(t.TempDir(), "demo-state")
	start := time.Now()
	out, err := demoCommand(ctx, t, "--kubeconfig="+u.kubeconfig, "--check", "--state-dir="+stateDir).CombinedOutput()
	if err != nil {
		t.Fatalf("demo --kubeconfig --check: %v\n%s", err, out)
	}
	t.Logf("demo --kubeconfig --check took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	for _, re := range append(demoLines[:8:8],
		regexp.MustCompile(`connecting to the cluster of `+regexp.QuoteMeta(u.kubeconfig)+` .* done`),
		regexp.MustCompile(`creating the ingress LoadBalancer Service aks-istio-ingress/aks-istio-ingressgateway-internal .*loadBalancerClass router\.io/demo`),
		regexp.MustCompile(`routes are not verified in this mode: the operator runs in a pod of the cluster`),
		regexp.MustCompile(`ServiceRoute myapp/api-route\s+PUBLISHED 0/1\s+external-dns-weu=Unverified`),
		regexp.MustCompile(`deleting what the demo created in the cluster \(9 objects\): Namespace istio-system, Namespace aks-istio-ingress, ClusterIdentity cluster-identity, `),
		regexp.MustCompile(`deleted them in .*: the cluster is as before the demo`),
	) {
		if !re.Match(out) {
			t.Errorf("the demo's output lacks a line matching %s", re)
		}
	}
	if bytes.Contains(out, []byte("starting the operator")) || bytes.Contains(out, []byte("control plane")) {
		t.Errorf("the demo started an operator or a control plane of its own on an existing cluster")
	}
	assertDemoGone(t, stateDir)
	assertNoProcessMentions(t, u.kubeconfig) // ExternalDNS, which alone had the user's kubeconfig
	u.assertNoSamples(ctx, t, "istio-system", "aks-istio-ingress")
	u.assertUntouched(ctx, t, users)
}

// TestDemo_OnAnExistingClusterRefusesUnlessItCanRunThere: without the operator's Deployment the
// demo fails, naming the helm install; with it, it refuses a cluster that has a ClusterIdentity.
// Both before changing anything or starting any process.
func TestDemo_OnAnExistingClusterRefusesUnlessItCanRunThere(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), demoTimeout)
	defer cancel()
	u := startUserCluster(ctx, t, false)
	run := func(wants ...string) {
		t.Helper()
		stateDir := filepath.Join(t.TempDir(), "demo-state")
		out, err := demoCommand(ctx, t, "--kubeconfig="+u.kubeconfig, "--check", "--state-dir="+stateDir).CombinedOutput()
		if err == nil {
			t.Fatalf("demo --kubeconfig succeeded, want a refusal:\n%s", out)
		}
		t.Logf("demo --kubeconfig: %v\n%s", err, out)
		for _, want := range wants {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("the demo's output lacks %q", want)
			}
		}
		for _, started := range []string{"starting BIND", "starting ExternalDNS", "applying config/samples"} {
			if bytes.Contains(out, []byte(started)) {
				t.Errorf("the demo went on to %q after it should have refused", started)
			}
		}
		assertDemoGone(t, stateDir)
	}

	run("the operator does not run in this cluster", "no Deployment labelled app.kubernetes.io/name=service-router-operator is Available",
		"helm install service-router-operator charts/service-router-operator")

	u.createOperatorDeployment(ctx, t)
	samples, err := framework.ReadKustomization(filepath.Join(u.Env.RepoRoot, "config", "samples"))
	if err != nil {
		t.Fatal(err)
	}
	identity := samples[slices.IndexFunc(samples, func(o *unstructured.Unstructured) bool { return o.GetKind() == "ClusterIdentity" })]
	if err := u.Client.Create(ctx, identity); err != nil {
		t.Fatal(err)
	}
	users := u.createUsersObjects(ctx, t)
	run("the cluster already has ClusterIdentity cluster-identity", "It changed nothing")

	u.assertUntouched(ctx, t, append(users, identity))
	var dnsConfigs clusterv1alpha1.DNSConfigurationList
	if err := u.Client.List(ctx, &dnsConfigs); err != nil || len(dnsConfigs.Items) != 0 {
		t.Errorf("DNSConfigurations after the refusal: %d (%v), want none", len(dnsConfigs.Items), err)
	}
	for _, ns := range []string{"istio-system", "aks-istio-ingress"} {
		if err := u.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s exists after the refusal (%v)", ns, err)
		}
	}
}

// TestDemo_OnAnExistingClusterDownDeletesWhatAKilledDemoCreated: on a cluster whose ingress
// Service exists (Istio installed) but has no address yet, the demo says so and waits; once the
// load balancer gives it one, the demo answers with it and leaves the Service untouched. Killed
// (SIGKILL, no cleanup of its own), it leaves its list of created objects in the state directory,
// and `demo --down` deletes exactly those.
func TestDemo_OnAnExistingClusterDownDeletesWhatAKilledDemoCreated(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), demoTimeout)
	defer cancel()
	u := startUserCluster(ctx, t, true)
	if err := framework.EnsureNamespace(ctx, u.Client, "aks-istio-ingress"); err != nil {
		t.Fatal(err)
	}
	svc, err := framework.CreateIngressService(ctx, u.Client, framework.IngressService{
		Namespace: "aks-istio-ingress", Name: "istio-gateway", Controller: "aks-istio-ingressgateway-internal",
	})
	if err != nil {
		t.Fatal(err)
	}
	users := u.createUsersObjects(ctx, t)
	var ingressNS corev1.Namespace
	if err := u.Client.Get(ctx, client.ObjectKey{Name: "aks-istio-ingress"}, &ingressNS); err != nil {
		t.Fatal(err)
	}
	users = append(users, &ingressNS)

	stateDir := filepath.Join(t.TempDir(), "demo-state")
	out := &syncBuffer{}
	cmd := demoCommand(ctx, t, "--kubeconfig="+u.kubeconfig, "--state-dir="+stateDir)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	err = framework.Poll(ctx, demoTimeout, 100*time.Millisecond, "the demo to say the gateway has no address", func(context.Context) (bool, string, error) {
		return strings.Contains(out.String(), "the gateway has no address yet: Service aks-istio-ingress/istio-gateway has no IPv4 address"), "", nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// The load balancer, later.
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.80"}}
	if err := u.Client.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	users = append(users, svc)
	err = framework.Poll(ctx, demoTimeout, 100*time.Millisecond, "the demo to print its exploration instructions", func(context.Context) (bool, string, error) {
		select {
		case <-exited:
			return false, "", fmt.Errorf("the demo exited early\n%s", out.String())
		default:
		}
		return strings.Contains(out.String(), "Stop with Ctrl-C"), "", nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("the demo on a cluster with its own ingress Service:\n%s", out.String())
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`using the cluster's ingress Service aks-istio-ingress/istio-gateway \(left untouched\)`),
		regexp.MustCompile(`(?m)^  api-ns-d-dev-myapp\.example\.com\.\s+IN\s+CNAME\s+aks01-weu-internal\.example\.com\.$`),
		regexp.MustCompile(`(?m)^  aks01-weu-internal\.example\.com\.\s+IN\s+A\s+192\.0\.2\.80$`),
		regexp.MustCompile(`Either deletes the 7 objects the demo created`),
	} {
		if !re.MatchString(out.String()) {
			t.Errorf("the demo's output lacks a line matching %s", re)
		}
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if _, err := os.Stat(filepath.Join(stateDir, "created.json")); err != nil {
		t.Fatalf("the killed demo left no list of what it created: %v", err)
	}
	down, err := demoCommand(ctx, t, "--down", "--state-dir="+stateDir).CombinedOutput()
	if err != nil {
		t.Fatalf("demo --down: %v\n%s", err, down)
	}
	t.Logf("demo --down after the kill:\n%s", down)
	if !bytes.Contains(down, []byte("deleting what the demo created in the cluster (7 objects)")) {
		t.Errorf("demo --down did not delete what the killed demo created")
	}
	assertDemoGone(t, stateDir)
	assertNoProcessMentions(t, u.kubeconfig)
	u.assertNoSamples(ctx, t, "istio-system")
	var services corev1.ServiceList
	if err := u.Client.List(ctx, &services, client.InNamespace("aks-istio-ingress")); err != nil || len(services.Items) != 1 {
		t.Errorf("Services of aks-istio-ingress after demo --down: %d (%v), want the user's one", len(services.Items), err)
	}
	u.assertUntouched(ctx, t, users)
}

// assertNoProcessMentions checks that no process has s on its command line.
func assertNoProcessMentions(t *testing.T, s string) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			t.Errorf("process %s still runs after the demo stopped: %s", e.Name(), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

// demoCommand runs bin/demo from the repository root, as `make demo` does.
func demoCommand(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("E2E_DEMO_BINARY")
	if bin == "" {
		bin = filepath.Join(root, "bin", "demo")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s not found: run `make demo-build` (`make e2e` does): %v", bin, err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// On timeout the demo gets SIGTERM, as from Ctrl-C, so that it still stops what it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBEBUILDER_ASSETS="+filepath.Join(root, "bin"))
	return cmd
}

func assertDemoReport(t *testing.T, out string) {
	t.Helper()
	for _, re := range demoLines {
		if !re.MatchString(out) {
			t.Errorf("the demo's report lacks a line matching %s", re)
		}
	}
}

// assertDemoGone checks that the state directory is gone and that no process refers to it: every
// process the demo starts has a path under it (its TMPDIR) on its command line.
func assertDemoGone(t *testing.T, stateDir string) {
	t.Helper()
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Errorf("the state directory %s still exists (%v)", stateDir, err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(stateDir)) {
			t.Errorf("process %s still runs after the demo stopped: %s", e.Name(), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a process writing while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
