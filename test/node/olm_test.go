//go:build node

package node

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// docs/INSTALLATION.md's OLM section and what it installs.
const (
	olmDoc     = "docs/INSTALLATION.md"
	olmHeading = "## OLM"
	// The registry the documents name for a release (REGISTRY of `make release`) and for a build
	// of one's own: both become the world's registry.
	olmReleaseRegistry = "ghcr.io/service-router"
	olmOwnRegistry     = "myregistry.example.com"
	// The file the section saves its CatalogSource, Namespace, OperatorGroup and Subscription as.
	olmSubscriptionFile = "service-router-olm.yaml"
	// The CSV's Deployment (config/manager under kustomize's prefix).
	olmDeployment = "service-router-controller-manager"
	olmPackage    = "service-router-operator"
	// The host config/samples' first ServiceRoute publishes, and its ingress gateway's Service.
	samplesHost             = "api-ns-d-dev-myapp.example.com"
	samplesWebHost          = "web-ns-d-dev-myapp.example.com"
	samplesIngressNamespace = "aks-istio-ingress"
	samplesController       = "aks-istio-ingressgateway-internal"
)

// olmWorld is a node world with OLM installed and a release made into its registry.
type olmWorld struct {
	*framework.NodeWorld
	root, version string
	// releaseDir is make release's RELEASE_DIR (the catalog's tarball among its files).
	releaseDir string
	// doc is docs/INSTALLATION.md's OLM section with the registry hosts replaced.
	doc string
}

// startOLMWorld starts a two-node world, installs OLM v0.38.0 from its own manifests and runs
// `make release` into the world's registry (REGISTRY is the world's registry, as it would be
// ghcr.io/service-router), with the Istio and DNSEndpoint CRDs installed as the prerequisites say.
func startOLMWorld(t *testing.T) *olmWorld {
	t.Helper()
	ctx := t.Context()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	w := startWorld(t, 2)
	installCRDs(ctx, t, w, istioCRDs, externalDNSCRDs)
	// OLM's catalog operator dials the registry by its Service's DNS name.
	if err := w.StartClusterDNS(ctx, t); err != nil {
		t.Fatal(err)
	}
	olm, err := w.InstallOLM(ctx)
	if err != nil {
		t.Fatalf("%v\n%s", err, w.Logs())
	}
	t.Logf("OLM %s installed from its release manifests in %s (images %s, %s); packageserver's CSV: %q",
		framework.OLMVersion, olm.Took.Round(100*time.Millisecond), olm.Image, olm.OPMImage, olm.PackageServer)

	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("Makefile: no VERSION ?=")
	}
	version := string(m[1])
	start := time.Now()
	releaseDir := filepath.Join(t.TempDir(), "release")
	// The kubectl plugin's archives for this machine only: OLM installs none of them, and the
	// macOS ones cross-compiled every dependency anew (their packages are in no cache), for
	// minutes on a busy machine, while the other OLM tests waited for the tree's lock.
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "release", "VERSION="+version, "REGISTRY="+w.Registry,
		"REGISTRY_PLAIN_HTTP=true", "RELEASE_DIR="+releaseDir, "PLUGIN_PLATFORMS=linux/amd64")
	cmd.Dir = root
	// A make of its own (not a sub-make of `make test`), without the release's signing key.
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=", "RELEASE_SIGNING_KEY=")
	unlock, err := framework.LockTree(root)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	unlock()
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	t.Logf("make release VERSION=%s REGISTRY=%s: %s\n%s", version, w.Registry, time.Since(start).Round(time.Second), lastLines(string(out), 5))

	doc := readDocSection(t, olmDoc, olmHeading).text
	doc = strings.ReplaceAll(strings.ReplaceAll(doc, olmReleaseRegistry, w.Registry), olmOwnRegistry, w.Registry)
	return &olmWorld{NodeWorld: w, root: root, version: version, releaseDir: releaseDir, doc: doc}
}

// block returns the section's code block containing substr.
func (w *olmWorld) block(t *testing.T, substr string) string {
	t.Helper()
	b, err := framework.BlockWith(w.doc, substr)
	if err != nil {
		t.Fatalf("%s, %s: %v", olmDoc, olmHeading, err)
	}
	return b
}

// diagnose describes OLM's objects and pods and the operator's, for failure messages.
func (w *olmWorld) diagnose(ctx context.Context, namespaces ...string) string {
	out, _ := w.Cluster().RunScript(ctx, `kubectl get catalogsources,subscriptions,installplans,csv,operatorgroups -A -o wide 2>&1
kubectl -n olm get pods,jobs -o wide 2>&1
kubectl -n olm get catalogsource -o yaml 2>&1 | sed -n '/^  status:/,$p'
kubectl -A get subscriptions -o yaml 2>&1 | sed -n '/^  status:/,/^- /p'
kubectl -n olm logs deploy/catalog-operator --tail=40 2>&1
kubectl -n olm logs deploy/olm-operator --tail=30 2>&1`)
	parts := []string{out, w.Diagnostics(ctx, framework.OLMNamespace)}
	for _, ns := range namespaces {
		parts = append(parts, w.Diagnostics(ctx, ns))
	}
	return strings.Join(parts, "\n")
}

// TestOLM_SubscriberJourney is an OperatorHub subscriber's journey on a cluster running OLM
// v0.38.0 (built from its module, installed from its own manifests, every image from the world's
// registry): the release's catalog image, pushed by `make release`, served by a CatalogSource
// that becomes READY (OLM's registry pod execs grpc_health_probe in its probes); the OperatorGroup
// and the Subscription to channel candidate with manual approval; the InstallPlan approved; the
// CSV Succeeded with its two operator pods Ready on the two nodes; config/samples converging to
// DNSEndpoints and an Istio Gateway. docs/INSTALLATION.md#olm is followed as written: its file
// and its commands, only the registry host replaced.
func TestOLM_SubscriberJourney(t *testing.T) {
	ctx := t.Context()
	w := startOLMWorld(t)
	cl := w.Cluster()
	diagnose := func() string { return w.diagnose(ctx, operatorNamespace) }

	subscription := w.block(t, "kind: Subscription")
	for _, want := range []string{"kind: CatalogSource", "image: " + w.Registry + "/service-router-operator-catalog:v" + w.version, "kind: OperatorGroup", "channel: candidate"} {
		if !strings.Contains(subscription, want) {
			t.Fatalf("%s's subscription block lacks %q:\n%s", olmDoc, want, subscription)
		}
	}
	commands := w.block(t, "kubectl apply -f "+olmSubscriptionFile)
	if !strings.Contains(commands, "service-router-operator.v"+w.version) {
		t.Fatalf("%s's commands wait for another CSV than service-router-operator.v%s:\n%s", olmDoc, w.version, commands)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, olmSubscriptionFile), []byte(subscription), 0o644); err != nil {
		t.Fatal(err)
	}
	subscribe := func() {
		t.Helper()
		start := time.Now()
		out, err := cl.RunScript(ctx, "cd "+dir+"\n"+commands)
		if err != nil {
			t.Fatalf("%s's commands: %v\n%s\n%s", olmDoc, err, out, diagnose())
		}
		t.Logf("subscribed, approved and Succeeded in %s:\n%s", time.Since(start).Round(100*time.Millisecond), out)
	}
	subscribe()
	checkRegistryPodProbes(t, w)
	pods, err := w.WaitDeploymentReady(ctx, operatorNamespace, olmDeployment, podTimeout)
	if err != nil {
		t.Fatalf("%v\n%s", err, diagnose())
	}
	checkOperatorPods(t, pods, 2, olmReleaseRegistry, w.Registry)
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Errorf("both operator pods run on %s: the CSV's anti-affinity spreads them over the two nodes", pods[0].Spec.NodeName)
	}
	for _, p := range pods {
		if !strings.Contains(p.Spec.Containers[0].Image, "@sha256:") {
			t.Errorf("pod %s runs %s, not the released image by digest", p.Name, p.Spec.Containers[0].Image)
		}
	}

	applySamples(t, w, "config/samples")
	published := watchPublished(ctx, t, w.Client, samplesHost)
	published.check(t, "after the samples converged")

	removeAndResubscribe(t, w, published, subscribe)
	removeForGood(t, w)
}

// removeForGood is docs/INSTALLATION.md#uninstall's last block under OLM, after the operator's
// removal (its first block, again): the ClusterRoles for people and the metrics reader, the
// namespace and the CatalogSource go, and nothing of the operator's is left running.
func removeForGood(t *testing.T, w *olmWorld) {
	t.Helper()
	ctx := t.Context()
	script := w.uninstallBlock(t, "delete subscription") + "\n" + w.uninstallBlock(t, "delete catalogsource")
	start := time.Now()
	if out, err := w.Cluster().RunScript(ctx, script); err != nil {
		t.Fatalf("%s's removal for good: %v\n%s", olmDoc, err, out)
	}
	left, err := w.Cluster().RunScript(ctx, `kubectl get clusterroles -o name | grep -e service-router || true
kubectl get namespace `+operatorNamespace+` -o name --ignore-not-found
kubectl -n olm get catalogsources -o name`)
	if err != nil {
		t.Fatalf("%v\n%s", err, left)
	}
	if strings.TrimSpace(left) != "" {
		t.Errorf("after %s's last block, still there:\n%s", olmDoc, left)
	}
	t.Logf("removed for good in %s: no ClusterRole of the operator's, no namespace %s, no CatalogSource", time.Since(start).Round(100*time.Millisecond), operatorNamespace)
}

// applySamples applies samples (config/samples of a tree; kustomize, as `kubectl apply -k`) with
// their namespaces and the ingress Service their Gateway reads, where the AKS add-on keeps it
// (aks-istio-ingress, given an address as the load balancer would; 0.1.0 took a Service of the
// controller's label from any namespace, 0.2.0 from the Gateway's spec.ingressNamespace), and
// waits for the ServiceRoutes to be Ready and the Istio Gateway to list both hosts.
func applySamples(t *testing.T, w *olmWorld, samples string) {
	t.Helper()
	ctx := t.Context()
	if _, err := framework.CreateIngressService(ctx, w.Client, framework.IngressService{
		Namespace: samplesIngressNamespace, Name: "aks-istio-ingressgateway-internal", Controller: samplesController, IPs: []string{"10.123.45.67"},
	}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	for _, ns := range []string{"istio-system", "myapp"} {
		if err := framework.EnsureNamespace(ctx, w.Client, ns); err != nil {
			t.Fatal(err)
		}
	}
	out, err := w.Cluster().RunScript(ctx, "kubectl apply -k "+samples+"\nkubectl -n myapp wait --for=condition=Ready serviceroute --all --timeout=90s")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, w.diagnose(ctx, operatorNamespace))
	}
	// Converged: the Istio Gateway lists both routes' hosts (the operator coalesces its writes,
	// so it may list one of them first).
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "the Istio Gateway listing both samples' hosts", func(ctx context.Context) (bool, string, error) {
		var gw istionetworkingv1.Gateway
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: "istio-system", Name: "default-gateway"}, &gw); err != nil {
			return false, err.Error(), nil
		}
		var hosts []string
		for _, srv := range gw.Spec.GetServers() {
			hosts = append(hosts, srv.GetHosts()...)
		}
		all := strings.Join(hosts, ",")
		return strings.Contains(all, samplesHost) && strings.Contains(all, samplesWebHost), all, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, w.diagnose(ctx, operatorNamespace))
	}
}

// uninstallBlock is the one block of the tree's docs/INSTALLATION.md#uninstall holding selector.
func (w *olmWorld) uninstallBlock(t *testing.T, selector string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(w.root, olmDoc))
	if err != nil {
		t.Fatal(err)
	}
	uninstall, err := framework.DocSection(string(data), "## Uninstall")
	if err != nil {
		t.Fatal(err)
	}
	b, err := framework.BlockWith(uninstall, selector)
	if err != nil {
		t.Fatalf("%s, ## Uninstall: %v", olmDoc, err)
	}
	return b
}

// removeAndResubscribe is the removal of docs/INSTALLATION.md#uninstall under OLM, then the same
// subscription again: deleting the Subscription and the CSV stops the operator (its Deployment
// and pods gone) and leaves the CRDs, the custom resources and everything published untouched;
// subscribing again with the OLM section's commands gives a new operator that takes over what
// exists without writing a DNSEndpoint or an Istio Gateway (watched throughout, UIDs and
// resourceVersions).
func removeAndResubscribe(t *testing.T, w *olmWorld, published *publishedWatch, subscribe func()) {
	t.Helper()
	ctx := t.Context()
	removal := w.uninstallBlock(t, "delete subscription")
	start := time.Now()
	if out, err := w.Cluster().RunScript(ctx, removal); err != nil {
		t.Fatalf("%s's removal: %v\n%s", olmDoc, err, out)
	}
	err := framework.Poll(ctx, podTimeout, 200*time.Millisecond, "the operator's Deployment and pods gone", func(ctx context.Context) (bool, string, error) {
		out, _ := w.Cluster().RunScript(ctx, "kubectl -n "+operatorNamespace+" get deployments,pods -o name")
		return strings.TrimSpace(out) == "", out, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, w.diagnose(ctx, operatorNamespace))
	}
	t.Logf("Subscription and CSV deleted: the operator's Deployment and pods gone %s later", time.Since(start).Round(100*time.Millisecond))
	// What a user finds afterwards.
	left, err := w.Cluster().RunScript(ctx, `kubectl get crd -o name | grep router.io
kubectl get clusteridentities,dnsconfigurations -o name
kubectl get serviceroutes,dnspolicies,gateways.routing.router.io,dnsendpoints,gateways.networking.istio.io -A -o name
kubectl -n `+operatorNamespace+` get operatorgroups,subscriptions,installplans,csv,serviceaccounts,roles,rolebindings,secrets,configmaps,leases -o name
kubectl get clusterroles,clusterrolebindings -o name | grep -i -e service-router || true`)
	if err != nil {
		t.Fatalf("listing what stays: %v\n%s", err, left)
	}
	t.Logf("after the removal:\n%s", left)
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/serviceroutes.routing.router.io",
		"customresourcedefinition.apiextensions.k8s.io/clusteridentities.cluster.router.io",
		"clusteridentity.cluster.router.io/cluster-identity",
		"serviceroute.routing.router.io/api-route",
		"dnsendpoint.externaldns.k8s.io/",
		"gateway.networking.istio.io/",
		// The ClusterRoles for people are bundle manifests OLM creates without tying them to the
		// CSV: they stay (docs/INSTALLATION.md#uninstall says to delete them by hand).
		"clusterrole.rbac.authorization.k8s.io/service-router-platform-admin",
	} {
		if !strings.Contains(left, want) {
			t.Errorf("after the removal, %s is gone", want)
		}
	}
	published.check(t, "after the removal")

	// Subscribed again: the same commands.
	subscribe()
	err = framework.Poll(ctx, podTimeout, 200*time.Millisecond, "a new operator pod leading", func(ctx context.Context) (bool, string, error) {
		holder, err := leaseHolder(ctx, w.Client)
		if err != nil {
			return false, err.Error(), nil
		}
		pods, err := w.WaitDeploymentReady(ctx, operatorNamespace, olmDeployment, time.Second)
		if err != nil {
			return false, "held by " + holder, nil
		}
		for _, p := range pods {
			if strings.HasPrefix(holder, p.Name+"_") {
				return true, "", nil
			}
		}
		return false, "held by " + holder, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, w.diagnose(ctx, operatorNamespace))
	}
	// The new leader has synced its caches and reconciled every object by now (it needs well
	// under a second for a handful); a few more seconds for a write that should not come.
	time.Sleep(10 * time.Second)
	out, err := w.Cluster().RunScript(ctx, "kubectl -n myapp wait --for=condition=Ready serviceroute --all --timeout=60s")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	published.check(t, "after subscribing again")
}

// TestOLM_InstallModes proves the install modes the CSV declares, and that OLM holds to them. The
// CSV supports AllNamespaces only (docs/INSTALLATION.md#olm says why): TestOLM_SubscriberJourney
// installs it that way. Here an OperatorGroup targeting its own namespace (what OperatorHub's
// console creates for "A specific namespace on the cluster", OwnNamespace; SingleNamespace and
// MultiNamespace are the same OperatorGroup with other targets) gets the CSV Failed with OLM's
// reason UnsupportedOperatorGroup, and no operator runs.
func TestOLM_InstallModes(t *testing.T) {
	ctx := t.Context()
	w := startOLMWorld(t)
	const ns = "service-router-own"
	manifest := filepath.Join(t.TempDir(), "own-namespace.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: service-router
  namespace: olm
spec:
  sourceType: grpc
  image: `+w.Registry+`/service-router-operator-catalog:v`+w.version+`
---
apiVersion: v1
kind: Namespace
metadata:
  name: `+ns+`
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata:
  name: own
  namespace: `+ns+`
spec:
  targetNamespaces: [`+ns+`]
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata:
  name: service-router-operator
  namespace: `+ns+`
spec:
  channel: candidate
  name: `+olmPackage+`
  source: service-router
  sourceNamespace: olm
  installPlanApproval: Automatic
`), 0o644); err != nil {
		t.Fatal(err)
	}
	csv := "csv/" + olmPackage + ".v" + w.version
	out, err := w.Cluster().RunScript(ctx, "kubectl apply -f "+manifest+`
kubectl -n `+ns+` wait `+csv+` --for=create --timeout=4m
kubectl -n `+ns+` wait `+csv+` --for=jsonpath='{.status.reason}'=UnsupportedOperatorGroup --timeout=2m
kubectl -n `+ns+` get `+csv+` -o jsonpath='{.status.phase}: {.status.message}{"\n"}'
kubectl -n `+ns+` get operatorgroup own -o jsonpath='{.status}{"\n"}'`)
	if err != nil {
		t.Fatalf("an OwnNamespace OperatorGroup: %v\n%s\n%s", err, out, w.diagnose(ctx, ns))
	}
	t.Logf("an OwnNamespace OperatorGroup:\n%s", out)
	if !strings.Contains(out, "Failed: ") {
		t.Errorf("the CSV is not Failed:\n%s", out)
	}
	if out, _ := w.Cluster().RunScript(ctx, "kubectl -n "+ns+" get deployments,pods -o name"); strings.TrimSpace(out) != "" {
		t.Errorf("an operator runs under the OwnNamespace OperatorGroup:\n%s", out)
	}
}

// checkRegistryPodProbes shows what the catalog image is Ready through: OLM v0.38.0's pod for the
// CatalogSource execs grpc_health_probe in the catalog container for its startup, readiness and
// liveness probes (operator-lifecycle-manager PR #3888, after v0.38.0, turns them into the
// kubelet's gRPC probes), and the release's catalog image answers it.
func checkRegistryPodProbes(t *testing.T, w *olmWorld) {
	t.Helper()
	ctx := t.Context()
	var pods corev1.PodList
	if err := w.Client.List(ctx, &pods, client.InNamespace(framework.OLMNamespace), client.MatchingLabels{"olm.catalogSource": "service-router"}); err != nil || len(pods.Items) == 0 {
		t.Fatalf("the CatalogSource's pod: %v (%d pods)", err, len(pods.Items))
	}
	p := pods.Items[0]
	c := p.Spec.Containers[0]
	for what, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if probe == nil || probe.Exec == nil || strings.Join(probe.Exec.Command, " ") != "grpc_health_probe -addr=:50051" {
			t.Errorf("the registry pod's %s probe is not `grpc_health_probe -addr=:50051` but %+v", what, probe)
		}
	}
	out, err := w.Cluster().RunScript(ctx, "kubectl -n "+framework.OLMNamespace+" exec "+p.Name+" -- grpc_health_probe -addr=:50051")
	if err != nil || !strings.Contains(out, "SERVING") {
		t.Errorf("grpc_health_probe in the catalog container: %v\n%s", err, out)
	}
	t.Logf("the registry pod %s (image %s) is Ready through exec probes: %s", p.Name, c.Image, strings.TrimSpace(out))
}
