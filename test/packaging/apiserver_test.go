package packaging

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kindsWithoutAPI are rendered kinds whose CRDs the test control plane does not have.
var kindsWithoutAPI = map[string]string{
	"ServiceMonitor": "the Prometheus Operator CRDs are not part of the test control plane",
	"PrometheusRule": "the Prometheus Operator CRDs are not part of the test control plane",
}

// restrictedNamespace creates a namespace enforcing the restricted Pod Security Standard.
func restrictedNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	err := controlPlane(t).Client.Create(context.Background(), ns)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// valuesCases are the value sets the chart is installed with in these tests.
func valuesCases(t *testing.T) map[string][]string {
	t.Helper()
	cases := map[string][]string{
		"default values": nil,
		"everything on": {"--set", "podDisruptionBudget.enabled=true", "--set", "metrics.serviceMonitor.enabled=true",
			"--set", "metrics.serviceMonitor.prometheusServiceAccount.name=prometheus",
			"--set", "metrics.serviceMonitor.prometheusServiceAccount.namespace=monitoring"},
		"insecure metrics, one replica": {"--set", "metrics.secure=false", "--set", "replicaCount=1"},
	}
	for _, f := range exampleValues(t) {
		cases[filepath.Base(f)] = []string{"-f", f}
	}
	return cases
}

func TestChart_AcceptedByAPIServer(t *testing.T) {
	requireOperatorRole(t)
	env := controlPlane(t)
	restrictedNamespace(t, releaseNamespace)
	ctx := context.Background()

	for name, extra := range valuesCases(t) {
		t.Run(name, func(t *testing.T) {
			for _, obj := range renderChart(t, extra...) {
				if reason, skip := kindsWithoutAPI[obj.GetKind()]; skip {
					t.Logf("not applying %s %s: %s", obj.GetKind(), obj.GetName(), reason)
					continue
				}
				err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
					client.DryRunAll, client.FieldOwner("packaging-test"), client.ForceOwnership)
				require.NoError(t, err, "server-side apply (dry run) of %s %s", obj.GetKind(), obj.GetName())
			}
		})
	}
}

// The API server's own check of a whole release: helm validates every object against the
// server's schemas and renders NOTES.txt.
func TestChart_HelmInstallDryRunAgainstAPIServer(t *testing.T) {
	requireOperatorRole(t)
	env := controlPlane(t)
	restrictedNamespace(t, releaseNamespace)
	kubeconfig, err := env.AdminKubeconfig()
	require.NoError(t, err)

	// The test kube-apiserver reports its real version (make stamps it), so the chart's
	// kubeVersion constraint is checked against it as in a cluster. Its CRDs were installed by the
	// test environment, not by a Helm release, so the release leaves them alone (crds.enabled=false,
	// as for CRDs managed separately); TestChart_CRDLifecycle installs them with the chart.
	out, err := helm(t, "install", releaseName, repoPath(chartPath), "--namespace", releaseNamespace,
		"--dry-run=server", "--kubeconfig", kubeconfig, "--set", "crds.enabled=false")
	require.NoError(t, err)
	notes := out[strings.Index(out, "NOTES:"):]
	for _, kind := range []string{"ClusterIdentity", "DNSConfiguration", "Gateway", "DNSPolicy", "ServiceRoute"} {
		require.Contains(t, notes, "kind: "+kind, "NOTES.txt tells the user to create a %s", kind)
	}
	require.Contains(t, notes, "service-router-platform-admin")
}

// podFromTemplate turns a Deployment's pod template into a Pod in namespace.
func podFromTemplate(d *appsv1.Deployment, namespace string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        d.Name + "-" + rand.String(5),
			Namespace:   namespace,
			Labels:      d.Spec.Template.Labels,
			Annotations: d.Spec.Template.Annotations,
		},
		Spec: *d.Spec.Template.Spec.DeepCopy(),
	}
}

// operatorDeployments returns the operator's Deployment as each install method renders it.
func operatorDeployments(t *testing.T) map[string]*appsv1.Deployment {
	t.Helper()
	out := map[string]*appsv1.Deployment{}
	for name, extra := range valuesCases(t) {
		out["chart, "+name] = deploymentOf(t, renderChart(t, extra...))
	}
	csv := loadCSV(t)
	for _, spec := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		out["OLM bundle"] = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: spec.Name}, Spec: spec.Spec}
	}
	return out
}

func TestPodSecurity_RestrictedNamespaceAdmitsTheOperator(t *testing.T) {
	env := controlPlane(t)
	ns := "psa-restricted-" + rand.String(5)
	restrictedNamespace(t, ns)
	ctx := context.Background()

	// The check must be able to fail: a pod that may escalate privileges is rejected.
	t.Run("control: a non-compliant pod is rejected", func(t *testing.T) {
		pod := podFromTemplate(deploymentOf(t, renderChart(t)), ns)
		pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptrTo(true)
		pod.Spec.SecurityContext.RunAsNonRoot = nil
		err := env.Client.Create(ctx, pod, client.DryRunAll)
		require.Error(t, err, "the API server must enforce the restricted Pod Security Standard in %s", ns)
		require.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
		require.Contains(t, err.Error(), "violates PodSecurity")
	})

	for name, d := range operatorDeployments(t) {
		t.Run(name, func(t *testing.T) {
			pod := podFromTemplate(d, ns)
			err := env.Client.Create(ctx, pod, client.DryRunAll)
			require.NoError(t, err, "the operator's pod must be admitted under the restricted Pod Security Standard")
		})
	}
}

// The bundle's manifests other than the CSV and the CRDs (Service, ClusterRoles) are accepted too.
func TestBundle_ObjectsAcceptedByAPIServer(t *testing.T) {
	env := controlPlane(t)
	ns := "bundle-objects-" + rand.String(5)
	restrictedNamespace(t, ns)
	bundle := loadBundle(t)
	require.NotEmpty(t, bundle.Objects)
	for _, obj := range bundle.Objects {
		if obj.GetKind() == "ClusterServiceVersion" || obj.GetKind() == "CustomResourceDefinition" {
			continue
		}
		u := obj.DeepCopy()
		if isNamespaced(t, env.Client, u) {
			u.SetNamespace(ns) // OLM installs them in the operator's namespace.
		}
		err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u),
			client.DryRunAll, client.FieldOwner("packaging-test"), client.ForceOwnership)
		require.NoError(t, err, "server-side apply (dry run) of bundle object %s %s", u.GetKind(), u.GetName())
	}
}

func isNamespaced(t *testing.T, c client.Client, obj runtime.Object) bool {
	t.Helper()
	gvk := obj.GetObjectKind().GroupVersionKind()
	mapping, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	require.NoError(t, err, "mapping %s", gvk)
	return mapping.Scope.Name() == meta.RESTScopeNameNamespace
}
