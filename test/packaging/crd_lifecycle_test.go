package packaging

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
	"github.com/service-router/service-router-operator/internal/testenv"
)

const (
	// upgradeProbeField is the optional ServiceRoute field the "next version" of the chart adds.
	upgradeProbeField = "upgradeProbe"
	serviceRouteCRD   = "serviceroutes.routing.router.io"
	dnsEndpointCRD    = "dnsendpoints.externaldns.k8s.io"
	istioGatewayCRD   = "gateways.networking.istio.io"
)

// TestChart_CRDLifecycle installs the chart on a cluster without the operator's CRDs, upgrades it to
// a chart whose ServiceRoute CRD has a new field and printer column, and uninstalls it: the
// install creates the CRDs, the upgrade makes the API server serve the new schema (the reason the
// CRDs are templates and not crds/, which Helm never upgrades), and the uninstall leaves the CRDs
// and the users' routes in place.
func TestChart_CRDLifecycle(t *testing.T) {
	requireOperatorRole(t)
	env := crdControlPlane(t)
	c := crdClient(t, env)
	ctx := context.Background()
	kubeconfig, err := env.AdminKubeconfig()
	require.NoError(t, err)
	crds := operatorCRDNames(t)
	deleteCRDs(t, c, crds...)

	ns := "crd-lifecycle-" + rand.String(5)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	route := sampleServiceRoute(t, ns)

	t.Run("install creates the CRDs, kept on uninstall", func(t *testing.T) {
		_, err := helm(t, "install", releaseName, repoPath(chartPath), "--namespace", ns, "--kubeconfig", kubeconfig)
		require.NoError(t, err)
		for _, name := range crds {
			crd := waitEstablished(t, c, name)
			require.Equal(t, "keep", crd.Annotations["helm.sh/resource-policy"], "CRD %s", name)
			require.Equal(t, "Helm", crd.Labels["app.kubernetes.io/managed-by"], "CRD %s", name)
		}
		// The control for the upgrade: the current schema has no such field, so the API server
		// prunes it.
		served := createDryRun(t, c, withUpgradeProbe(route, "v1"))
		_, found, _ := unstructured.NestedString(served.Object, "spec", upgradeProbeField)
		require.False(t, found, "the installed schema must not know spec.%s yet", upgradeProbeField)
	})

	t.Run("upgrade serves the changed schema", func(t *testing.T) {
		next := chartWithChangedServiceRouteCRD(t)
		_, err := helm(t, "upgrade", releaseName, next, "--namespace", ns, "--kubeconfig", kubeconfig)
		require.NoError(t, err)

		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: serviceRouteCRD}, crd))
		var columns []string
		for _, col := range crd.Spec.Versions[0].AdditionalPrinterColumns {
			columns = append(columns, col.Name)
		}
		require.Contains(t, columns, "UpgradeProbe", "the upgraded CRD's printer columns")
		waitUntil(t, "the API server to serve spec."+upgradeProbeField, func() string {
			served := createDryRun(t, c, withUpgradeProbe(route, "v2"))
			if got, _, _ := unstructured.NestedString(served.Object, "spec", upgradeProbeField); got != "v2" {
				return fmt.Sprintf("spec.%s is %q", upgradeProbeField, got)
			}
			return ""
		})
	})

	t.Run("uninstall keeps the CRDs and the routes", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, route.DeepCopy()))
		out, err := helm(t, "uninstall", releaseName, "--namespace", ns, "--kubeconfig", kubeconfig)
		require.NoError(t, err)
		require.Contains(t, out, "kept due to the resource policy")
		for _, name := range crds {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, crd), "CRD %s after uninstall", name)
			require.Nil(t, crd.DeletionTimestamp, "CRD %s is being deleted", name)
		}
		kept := route.DeepCopy()
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(kept), kept), "the ServiceRoute after uninstall")
		require.Nil(t, kept.GetDeletionTimestamp())
	})
}

// An installation of the first chart version, whose CRDs Helm installed from crds/ without
// release metadata, upgrades to the CRD templates with --take-ownership (docs/INSTALLATION.md).
func TestChart_UpgradeFromCRDsDirectoryTakesOwnershipOfTheCRDs(t *testing.T) {
	requireOperatorRole(t)
	// A control plane of its own, on which the operator's CRDs were never installed: deleting the
	// ones earlier tests installed and upgraded on the shared one could leave a CRD Terminating
	// (kube-apiserver 1.36 and 1.37: "could not list instances: storage is (re)initializing").
	env, err := testenv.Start(testenv.Options{SkipOperatorCRDs: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	c := crdClient(t, env)
	kubeconfig, err := env.AdminKubeconfig()
	require.NoError(t, err)
	crds := operatorCRDNames(t)
	ns := "crd-takeover-" + rand.String(5)

	previous := copyChart(t)
	require.NoError(t, os.RemoveAll(filepath.Join(previous, "templates", "crds")))
	require.NoError(t, os.MkdirAll(filepath.Join(previous, "crds"), 0o755))
	for _, name := range operatorCRDFiles(t) {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(previous, "crds", filepath.Base(name)), data, 0o644))
	}
	_, err = helm(t, "install", releaseName, previous, "--namespace", ns, "--create-namespace", "--kubeconfig", kubeconfig)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = helm(t, "uninstall", releaseName, "--namespace", ns, "--kubeconfig", kubeconfig) })

	_, err = helm(t, "upgrade", releaseName, repoPath(chartPath), "--namespace", ns, "--kubeconfig", kubeconfig)
	require.Error(t, err, "Helm refuses to adopt CRDs it did not create as release objects")
	require.Contains(t, err.Error(), "exists and cannot be imported into the current release")

	_, err = helm(t, "upgrade", releaseName, repoPath(chartPath), "--namespace", ns, "--kubeconfig", kubeconfig, "--take-ownership")
	require.NoError(t, err)
	for _, name := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, crd))
		require.Equal(t, releaseName, crd.Annotations["meta.helm.sh/release-name"], "CRD %s belongs to the release", name)
		require.Equal(t, "keep", crd.Annotations["helm.sh/resource-policy"], "CRD %s", name)
	}
}

func TestChart_InstallFailsWithoutTheDNSEndpointAPI(t *testing.T) {
	requireOperatorRole(t)
	env := crdControlPlane(t)
	c := crdClient(t, env)
	kubeconfig, err := env.AdminKubeconfig()
	require.NoError(t, err)
	ns := "no-dnsendpoint-" + rand.String(5)
	// crds.enabled=false: the operator's CRDs may belong to another test's release here.
	install := []string{"install", releaseName, repoPath(chartPath), "--namespace", ns, "--create-namespace",
		"--kubeconfig", kubeconfig, "--set", "crds.enabled=false"}

	_, err = helm(t, append(install, "--dry-run=server")...)
	require.NoError(t, err, "the control: with the DNSEndpoint API the install passes its checks")

	removeCRDForTest(t, env, c, dnsEndpointCRD, "externaldns.k8s.io/v1alpha1")
	_, err = helm(t, install...)
	require.Error(t, err, "the install must fail without the DNSEndpoint API")
	require.Contains(t, err.Error(), "this cluster does not serve the ExternalDNS DNSEndpoint API (externaldns.k8s.io/v1alpha1")
	require.Contains(t, err.Error(), "installChecks.dnsEndpointCRD=false")
	// What the operator does without the API (it starts, publishes nothing, and says so), not a
	// claim that it cannot start.
	require.Contains(t, err.Error(), "ExternalDNSNotInstalled")
	require.NotContains(t, err.Error(), "cannot start")
	_, err = helm(t, "status", releaseName, "--namespace", ns, "--kubeconfig", kubeconfig)
	require.Error(t, err, "a failed check leaves no release behind")

	_, err = helm(t, append(install, "--dry-run=server", "--set", "installChecks.dnsEndpointCRD=false")...)
	require.NoError(t, err, "installChecks.dnsEndpointCRD=false skips the check")

	// Offline, Helm cannot know the cluster's APIs: rendering and linting never fail on them.
	_, err = helm(t, "template", releaseName, chartPath, "--kube-version", renderKubeVersion)
	require.NoError(t, err)
	_, err = helm(t, "lint", "--strict", chartPath)
	require.NoError(t, err)
}

func TestChart_NotesWarnWithoutTheIstioGatewayAPI(t *testing.T) {
	requireOperatorRole(t)
	env := crdControlPlane(t)
	c := crdClient(t, env)
	kubeconfig, err := env.AdminKubeconfig()
	require.NoError(t, err)
	install := []string{"install", releaseName, repoPath(chartPath), "--namespace", "no-istio-" + rand.String(5),
		"--create-namespace", "--kubeconfig", kubeconfig, "--set", "crds.enabled=false", "--dry-run=server"}
	const warning = "WARNING: this cluster does not serve the Istio Gateway API (networking.istio.io/v1 Gateway"

	out, err := helm(t, install...)
	require.NoError(t, err)
	require.NotContains(t, notesOf(out), warning, "no warning when Istio's Gateway API is served")

	removeCRDForTest(t, env, c, istioGatewayCRD, "networking.istio.io/v1")
	out, err = helm(t, install...)
	require.NoError(t, err, "a cluster without Istio is a warning, not an error")
	require.Contains(t, notesOf(out), warning)

	out, err = helm(t, "template", releaseName, chartPath, "--kube-version", renderKubeVersion)
	require.NoError(t, err)
	require.NotContains(t, out, "WARNING", "offline, Helm cannot know whether Istio is there")
}

func TestChart_CRDValues(t *testing.T) {
	crdsOf := func(extra ...string) []*unstructured.Unstructured {
		return objectsOfKind(renderChart(t, extra...), "CustomResourceDefinition")
	}
	require.Len(t, crdsOf(), len(operatorCRDNames(t)), "the CRDs are installed by default")
	for _, crd := range crdsOf() {
		require.Equal(t, "keep", crd.GetAnnotations()["helm.sh/resource-policy"], "kept on uninstall by default: %s", crd.GetName())
	}
	for _, crd := range crdsOf("--set", "crds.keep=false") {
		require.NotContains(t, crd.GetAnnotations(), "helm.sh/resource-policy", crd.GetName())
	}
	require.Empty(t, crdsOf("--set", "crds.enabled=false"))
}

// crdClient is a client that also knows CustomResourceDefinitions.
func crdClient(t *testing.T, env *testenv.Env) client.Client {
	t.Helper()
	scheme := operatorscheme.New()
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	cfg := rest.CopyConfig(env.Config)
	// The API server warns about the field the installed schema does not know yet: expected here.
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

// operatorCRDFiles returns the generated CRDs of config/crd/bases.
func operatorCRDFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(repoPath("config", "crd", "bases", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "config/crd/bases is empty: run `make manifests`")
	return files
}

// operatorCRDNames returns the names of the operator's CRDs.
func operatorCRDNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, f := range operatorCRDFiles(t) {
		for _, o := range readObjects(t, "config", "crd", "bases", filepath.Base(f)) {
			names = append(names, o.GetName())
		}
	}
	return names
}

// deleteCRDs deletes CRDs and waits until they are gone.
func deleteCRDs(t *testing.T, c client.Client, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		listInstances(t, c, name)
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Delete(ctx, crd); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting CRD %s: %v", name, err)
		}
	}
	// The API server deletes a CRD once its finalizer has removed every instance; on a loaded
	// machine that queue can take more than the minute waitUntil allows, so this waits longer and
	// says what the CRD reports meanwhile.
	for _, name := range names {
		var lastNudge time.Time
		waitUntilWithin(t, 3*time.Minute, "CRD "+name+" to be deleted", func() string {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			err := c.Get(ctx, client.ObjectKey{Name: name}, crd)
			if apierrors.IsNotFound(err) {
				return ""
			}
			if err != nil {
				return err.Error()
			}
			var conditions []string
			for _, cond := range crd.Status.Conditions {
				conditions = append(conditions, fmt.Sprintf("%s=%s %s %s", cond.Type, cond.Status, cond.Reason, cond.Message))
				if cond.Reason == "InstanceDeletionFailed" && time.Since(lastNudge) > 5*time.Second {
					nudgeFinalizer(t, c, crd)
					lastNudge = time.Now()
				}
			}
			return fmt.Sprintf("still there: finalizers %v, deletion %v, conditions %v", crd.Finalizers, crd.DeletionTimestamp, conditions)
		})
	}
}

// listInstances lists the instances of a CRD until the API server answers. A CRD deleted before
// the API server has initialised the storage of its resources can stay Terminating for good:
// kube-apiserver 1.36's finalizer cannot list the instances ("storage is (re)initializing") and
// the storage does not initialise for a terminating CRD. 1.37 is the same: its release notes name
// no fix, and its CRD finalizer and watch-cache readiness code are 1.36's. On a loaded machine a CRD installed a
// moment ago can be in that state; in a cluster the CRDs have been in use.
func listInstances(t *testing.T, c client.Client, name string) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return
		}
		t.Fatalf("reading CRD %s: %v", name, err)
	}
	var version string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			version = v.Name
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion(crd.Spec.Group + "/" + version)
	list.SetKind(crd.Spec.Names.ListKind)
	// ResourceVersion "0" is answered from the watch cache only, so a success means it is ready.
	fromCache := &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}
	waitUntilWithin(t, 3*time.Minute, "the API server to list "+name+" instances", func() string {
		if err := c.List(context.Background(), list, fromCache); err != nil {
			return err.Error()
		}
		return ""
	})
}

// nudgeFinalizer touches an annotation of a terminating CRD. The API server's CRD finalizer
// retries a failed instance deletion with an exponential backoff that reaches minutes after a
// few seconds of "storage is (re)initializing"; an update of the CRD queues it at once.
func nudgeFinalizer(t *testing.T, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"annotations":{"test.router.io/nudged":%q}}}`, time.Now().Format(time.RFC3339Nano))))
	if err := c.Patch(context.Background(), crd.DeepCopy(), patch); err != nil && !apierrors.IsNotFound(err) {
		t.Logf("nudging the finalizer of CRD %s: %v", crd.Name, err)
	}
}

// removeCRDForTest deletes a CRD until the end of the test, waits until discovery no longer lists
// its resource in groupVersion, and puts it back afterwards.
func removeCRDForTest(t *testing.T, env *testenv.Env, c client.Client, name, groupVersion string) {
	t.Helper()
	ctx := context.Background()
	saved := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, saved))
	deleteCRDs(t, c, name)
	t.Cleanup(func() {
		restored := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: saved.Name, Labels: saved.Labels, Annotations: saved.Annotations},
			Spec:       saved.Spec,
		}
		require.NoError(t, c.Create(ctx, restored), "restoring CRD %s", name)
		waitEstablished(t, c, name)
	})
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	require.NoError(t, err)
	plural := saved.Spec.Names.Plural
	waitUntil(t, "discovery to drop "+plural+" from "+groupVersion, func() string {
		resources, err := dc.ServerResourcesForGroupVersion(groupVersion)
		if apierrors.IsNotFound(err) {
			return "" // the group version had no other resource
		}
		if err != nil {
			return err.Error()
		}
		for _, r := range resources.APIResources {
			if r.Name == plural {
				return plural + " is still served"
			}
		}
		return ""
	})
}

// waitEstablished waits until the API server serves a CRD, and returns it.
func waitEstablished(t *testing.T, c client.Client, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	waitUntil(t, "CRD "+name+" to be established", func() string {
		if err := c.Get(context.Background(), client.ObjectKey{Name: name}, crd); err != nil {
			return err.Error()
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return ""
			}
		}
		return "not established"
	})
	return crd
}

// sampleServiceRoute returns the first ServiceRoute of config/samples, in namespace ns.
func sampleServiceRoute(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range readObjects(t, "config", "samples", "routing_v1alpha1_serviceroute.yaml") {
		if o.GetKind() == "ServiceRoute" {
			o.SetNamespace(ns)
			return o
		}
	}
	t.Fatal("config/samples/routing_v1alpha1_serviceroute.yaml has no ServiceRoute")
	return nil
}

func withUpgradeProbe(route *unstructured.Unstructured, value string) *unstructured.Unstructured {
	out := route.DeepCopy()
	_ = unstructured.SetNestedField(out.Object, value, "spec", upgradeProbeField)
	return out
}

// createDryRun returns the object as the API server would store it.
func createDryRun(t *testing.T, c client.Client, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	out := obj.DeepCopy()
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		// Right after a CRD is (re)created the API server may not route its kind yet.
		if err = c.Create(context.Background(), out, client.DryRunAll); err == nil || time.Now().After(deadline) {
			break
		}
		out = obj.DeepCopy()
	}
	require.NoError(t, err, "dry-run create of %s %s", obj.GetKind(), obj.GetName())
	return out
}

// copyChart copies the chart into a temporary directory and returns its path.
func copyChart(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(chartPath))
	require.NoError(t, os.CopyFS(dst, os.DirFS(repoPath(chartPath))))
	return dst
}

// chartWithChangedServiceRouteCRD returns a copy of the chart as a next version would ship it:
// the ServiceRoute CRD gains an optional spec field and a printer column, and the CRD templates
// are regenerated from it by the same generator `make manifests` runs.
func chartWithChangedServiceRouteCRD(t *testing.T) string {
	t.Helper()
	chart := copyChart(t)
	crdDir := t.TempDir()
	for _, f := range operatorCRDFiles(t) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		if strings.HasSuffix(f, "routing.router.io_serviceroutes.yaml") {
			data = changeServiceRouteCRD(t, data)
		}
		require.NoError(t, os.WriteFile(filepath.Join(crdDir, filepath.Base(f)), data, 0o644))
	}
	cmd := exec.Command("go", "run", "./hack/chartcrds", "--crd-dir", crdDir, "--chart-dir", filepath.Join(chart, "templates", "crds"))
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "hack/chartcrds: %s", out)
	return chart
}

func changeServiceRouteCRD(t *testing.T, data []byte) []byte {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(data, crd))
	v := &crd.Spec.Versions[0]
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties[upgradeProbeField] = apiextensionsv1.JSONSchemaProps{Type: "string", Description: "a field added by the next chart version"}
	v.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	v.AdditionalPrinterColumns = append(v.AdditionalPrinterColumns, apiextensionsv1.CustomResourceColumnDefinition{
		Name: "UpgradeProbe", Type: "string", JSONPath: ".spec." + upgradeProbeField,
	})
	// Only what a generated CRD has: no status, no empty creation timestamp.
	out, err := yaml.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": crd.Name, "annotations": crd.Annotations},
		"spec":       crd.Spec,
	})
	require.NoError(t, err)
	return out
}

// notesOf returns the NOTES part of `helm install` output.
func notesOf(out string) string {
	if i := strings.Index(out, "NOTES:"); i >= 0 {
		return out[i:]
	}
	return ""
}
