package packaging

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// exampleValues returns the values files of docs/examples.
func exampleValues(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(repoPath("docs", "examples", "*values*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "docs/examples has no values files")
	// aks-values.yaml is a template: each cluster's file is made from it as the docs do.
	for i, f := range files {
		if filepath.Base(f) == "aks-values.yaml" {
			files[i] = documentedAKSValues(t)
		}
	}
	return files
}

// deploymentOf returns the rendered Deployment.
func deploymentOf(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	deployments := objectsOfKind(objs, "Deployment")
	require.Len(t, deployments, 1)
	d := &appsv1.Deployment{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(deployments[0].Object, d))
	return d
}

func TestChart_LintStrict(t *testing.T) {
	requireOperatorRole(t)
	_, err := helm(t, "lint", "--strict", chartPath)
	require.NoError(t, err)
	for _, f := range exampleValues(t) {
		_, err := helm(t, "lint", "--strict", chartPath, "-f", f)
		require.NoError(t, err, "docs/examples/%s", filepath.Base(f))
	}
}

func TestChart_RejectsWrongValues(t *testing.T) {
	cases := []struct {
		name string
		set  string
		want []string
	}{
		{"unknown top-level key", "replicas=2", []string{"additional properties 'replicas' not allowed"}},
		{"zero replicas", "replicaCount=0", []string{"/replicaCount", "minimum"}},
		{"replicas as text", "replicaCount=two", []string{"/replicaCount"}},
		{"pull policy", "image.pullPolicy=Sometimes", []string{"/image/pullPolicy", "'Always', 'IfNotPresent', 'Never'"}},
		{"digest", "image.digest=sha256:abc", []string{"/image/digest", "does not match pattern"}},
		{"port out of range", "metrics.port=70000", []string{"/metrics/port", "maximum"}},
		{"log level", "logging.level=verbose", []string{"/logging/level"}},
		{"log encoder", "logging.encoder=xml", []string{"/logging/encoder", "'json', 'console'"}},
		{"memory quantity", "resources.limits.memory=lots", []string{"/resources/limits/memory"}},
		{"flag without dashes", "extraArgs[0]=leader-elect", []string{"/extraArgs/0"}},
		{"typo in a nested key", "metrics.serviceMonitor.enable=true", []string{"additional properties 'enable' not allowed"}},
		{"security context cannot be loosened", "podSecurityContext.privileged=true", []string{"additional properties 'privileged' not allowed"}},
		{"root user", "podSecurityContext.runAsUser=0", []string{"/podSecurityContext/runAsUser", "minimum"}},
		{"budget with one replica", "podDisruptionBudget.enabled=true,replicaCount=1",
			[]string{"podDisruptionBudget.enabled needs replicaCount of at least 2"}},
		{"replicas without leader election", "replicaCount=2,leaderElection.enabled=false",
			[]string{"replicaCount above 1 needs leaderElection.enabled=true"}},
		{"service monitor without metrics", "metrics.enabled=false,metrics.serviceMonitor.enabled=true",
			[]string{"metrics.serviceMonitor.enabled needs metrics.enabled=true"}},
		{"existing service account without a name", "serviceAccount.create=false",
			[]string{"serviceAccount.name is required when serviceAccount.create is false"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helm(t, "template", releaseName, chartPath, "--kube-version", renderKubeVersion, "--set", tc.set)
			require.Error(t, err, "--set %s must be rejected", tc.set)
			for _, want := range tc.want {
				require.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestChart_DeploymentIsHardened(t *testing.T) {
	for _, values := range append([]string{""}, exampleValues(t)...) {
		name := "default values"
		var extra []string
		if values != "" {
			name = filepath.Base(values)
			extra = []string{"-f", values}
		}
		t.Run(name, func(t *testing.T) {
			d := deploymentOf(t, renderChart(t, extra...))
			pod := d.Spec.Template.Spec
			require.NotNil(t, pod.SecurityContext)
			require.Equal(t, ptrTo(true), pod.SecurityContext.RunAsNonRoot)
			require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
			require.Len(t, pod.Containers, 1)
			c := pod.Containers[0]
			require.Equal(t, ptrTo(false), c.SecurityContext.AllowPrivilegeEscalation)
			require.Equal(t, ptrTo(true), c.SecurityContext.ReadOnlyRootFilesystem)
			require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
			require.NotNil(t, c.Resources.Requests.Cpu())
			require.False(t, c.Resources.Requests.Memory().IsZero(), "memory request")
			require.False(t, c.Resources.Limits.Memory().IsZero(), "memory limit")
			require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
			require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
			require.Equal(t, "health", c.LivenessProbe.HTTPGet.Port.String())
			require.Contains(t, c.Args, "--health-probe-bind-address=:8081")
			require.Contains(t, c.Args, "--leader-elect=true")
		})
	}
}

func TestChart_Defaults(t *testing.T) {
	objs := renderChart(t)
	d := deploymentOf(t, objs)
	require.Equal(t, int32(2), *d.Spec.Replicas, "two replicas with leader election by default")
	c := d.Spec.Template.Spec.Containers[0]
	require.Equal(t, "ghcr.io/service-router/service-router-operator:v0.2.0", c.Image, "the image tag defaults to v<appVersion>, the tag of the Makefile's IMG")
	require.Contains(t, c.Args, "--metrics-bind-address=:8443")
	require.Contains(t, c.Args, "--metrics-secure=true")
	require.Empty(t, objectsOfKind(objs, "PodDisruptionBudget"), "the budget is opt-in")
	require.Empty(t, objectsOfKind(objs, "ServiceMonitor"), "the ServiceMonitor is opt-in")

	svc := findObject(t, objs, "Service", releaseName+"-metrics")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	require.Len(t, ports, 1)
	require.Equal(t, "https", ports[0].(map[string]any)["name"])
	require.EqualValues(t, 8443, ports[0].(map[string]any)["port"])
}

func TestChart_InsecureMetricsDropTheAuthRoles(t *testing.T) {
	objs := renderChart(t, "--set", "metrics.secure=false")
	c := deploymentOf(t, objs).Spec.Template.Spec.Containers[0]
	require.Contains(t, c.Args, "--metrics-secure=false")
	for _, o := range objs {
		require.NotContains(t, o.GetName(), "metrics-auth", "no TokenReview/SubjectAccessReview rights without secure metrics")
		require.NotContains(t, o.GetName(), "metrics-reader")
	}
	svc := findObject(t, objs, "Service", releaseName+"-metrics")
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	require.Equal(t, "http", ports[0].(map[string]any)["name"])
}

func TestChart_MetricsDisabled(t *testing.T) {
	objs := renderChart(t, "--set", "metrics.enabled=false")
	c := deploymentOf(t, objs).Spec.Template.Spec.Containers[0]
	require.Contains(t, c.Args, "--metrics-bind-address=0")
	require.Empty(t, objectsOfKind(objs, "Service"))
}

func TestChart_ServiceMonitorAndBudget(t *testing.T) {
	objs := renderChart(t,
		"--set", "metrics.serviceMonitor.enabled=true",
		"--set", "metrics.serviceMonitor.prometheusServiceAccount.name=prometheus",
		"--set", "metrics.serviceMonitor.prometheusServiceAccount.namespace=monitoring",
		"--set", "podDisruptionBudget.enabled=true")

	sm := findObject(t, objs, "ServiceMonitor", releaseName)
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	require.Len(t, endpoints, 1)
	ep := endpoints[0].(map[string]any)
	require.Equal(t, "https", ep["scheme"])
	require.Equal(t, "https", ep["port"], "the endpoint names the Service's port")
	require.NotEmpty(t, ep["authorization"], "Prometheus authenticates to the secure endpoint")

	binding := findObject(t, objs, "ClusterRoleBinding", releaseName+"-metrics-reader")
	roleRef, _, _ := unstructured.NestedString(binding.Object, "roleRef", "name")
	require.Equal(t, releaseName+"-metrics-reader", roleRef)
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	require.Equal(t, "monitoring", subjects[0].(map[string]any)["namespace"])

	pdb := findObject(t, objs, "PodDisruptionBudget", releaseName)
	minAvailable, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "minAvailable")
	require.EqualValues(t, 1, minAvailable)
}

// The chart's CRDs are config/crd/bases, with only the chart's labels and the keep annotation added.
func TestChart_CRDsAreTheGeneratedOnes(t *testing.T) {
	rendered := map[string]*unstructured.Unstructured{}
	for _, crd := range objectsOfKind(renderChart(t), "CustomResourceDefinition") {
		rendered[crd.GetName()] = crd
	}
	var generated []string
	for _, f := range operatorCRDFiles(t) {
		for _, want := range readObjects(t, "config", "crd", "bases", filepath.Base(f)) {
			generated = append(generated, want.GetName())
			got, ok := rendered[want.GetName()]
			require.True(t, ok, "the chart renders no CRD %s: run `make manifests`", want.GetName())
			got = got.DeepCopy()
			require.Equal(t, releaseName, got.GetLabels()["app.kubernetes.io/instance"], "the chart's labels on %s", got.GetName())
			got.SetLabels(nil)
			annotations := got.GetAnnotations()
			delete(annotations, "helm.sh/resource-policy")
			got.SetAnnotations(annotations)
			require.Equal(t, want.Object, got.Object, "%s differs from config/crd/bases: run `make manifests`", want.GetName())
		}
	}
	require.Len(t, rendered, len(generated), "the chart renders CRDs that config/crd/bases does not have")
	_, err := os.Stat(repoPath(chartPath, "crds"))
	require.True(t, os.IsNotExist(err), "crds/ must not exist: Helm never upgrades the CRDs in it")
}

func TestChart_NotesNameEveryResourceToCreate(t *testing.T) {
	notes := readFile(t, repoPath(chartPath, "templates", "NOTES.txt"))
	for _, kind := range []string{"ClusterIdentity", "DNSConfiguration", "Gateway", "DNSPolicy", "ServiceRoute"} {
		require.True(t, strings.Contains(notes, "kind: "+kind), "NOTES.txt must show a %s to create", kind)
	}
}

func ptrTo[T any](v T) *T { return &v }

// The azurePrivateDNS verification mode needs Azure credentials in the operator's Pod: the
// workload identity's client ID on the ServiceAccount and its label on the Pods, or an azure.json
// Secret mounted read-only where the DNSConfiguration's configFile expects it.
func TestChart_AzureCredentialsForVerification(t *testing.T) {
	objs := renderChart(t, "--set", "azure.configSecret=operator-azure", "--set", "azure.workloadIdentity.clientId=11111111-1111-1111-1111-111111111111")
	pod := deploymentOf(t, objs).Spec.Template.Spec
	require.Equal(t, "true", deploymentOf(t, objs).Spec.Template.Labels["azure.workload.identity/use"])
	require.Len(t, pod.Volumes, 1)
	require.Equal(t, "operator-azure", pod.Volumes[0].Secret.SecretName)
	require.Equal(t, []corev1.KeyToPath{{Key: "azure.json", Path: "azure.json"}}, pod.Volumes[0].Secret.Items)
	require.Equal(t, []corev1.VolumeMount{{Name: "azure-config", MountPath: "/etc/azure", ReadOnly: true}}, pod.Containers[0].VolumeMounts)
	sa := findObject(t, objs, "ServiceAccount", releaseName)
	require.Equal(t, "11111111-1111-1111-1111-111111111111", sa.GetAnnotations()["azure.workload.identity/client-id"])

	plain := deploymentOf(t, renderChart(t))
	require.Empty(t, plain.Spec.Template.Spec.Volumes, "nothing mounted by default")
	require.NotContains(t, plain.Spec.Template.Labels, "azure.workload.identity/use")
}
