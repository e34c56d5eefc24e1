package packaging

import (
	"context"
	"encoding/json"
	"maps"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns"
	"sigs.k8s.io/external-dns/pkg/apis/externaldns/validation"
	"sigs.k8s.io/yaml"

	"github.com/service-router/service-router-operator/internal/naming"
)

// externalDNSChart returns the ExternalDNS Helm chart shipped in the module of the ExternalDNS
// version go.mod selects (the version the end-to-end suite runs).
func externalDNSChart(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "sigs.k8s.io/external-dns")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	require.NoError(t, err, "locating the sigs.k8s.io/external-dns module")
	var module struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &module))
	require.NotEmpty(t, module.Dir)
	return filepath.Join(module.Dir, "charts", "external-dns")
}

// chartVersion is the version of that chart (its Chart.yaml).
func chartVersion(t *testing.T) string {
	t.Helper()
	var chart struct{ Version string }
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, filepath.Join(externalDNSChart(t), "Chart.yaml"))), &chart))
	require.NotEmpty(t, chart.Version)
	return chart.Version
}

// renderExternalDNS renders ExternalDNS' chart as release with the given extra arguments (-f,
// --set) and returns the objects and what ExternalDNS parses from the Deployment's container
// arguments (its own flag parser and configuration validation).
func renderExternalDNS(t *testing.T, chart, release string, extra ...string) ([]*unstructured.Unstructured, *appsv1.Deployment, *externaldns.Config) {
	t.Helper()
	args := append([]string{"template", release, chart, "--namespace", "external-dns", "--kube-version", renderKubeVersion}, extra...)
	out, err := helm(t, args...)
	require.NoError(t, err)
	objs, err := parseObjects([]byte(out))
	require.NoError(t, err)

	deployments := objectsOfKind(objs, "Deployment")
	require.Len(t, deployments, 1)
	d := &appsv1.Deployment{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(deployments[0].Object, d))
	container := d.Spec.Template.Spec.Containers[0]
	cfg := externaldns.NewConfig()
	require.NoError(t, cfg.ParseFlags(container.Args), "ExternalDNS rejects the arguments %v", container.Args)
	require.NoError(t, validation.ValidateConfig(cfg))
	return objs, d, cfg
}

// exampleCluster is the cluster name the tests install the example values for, as the docs'
// loop does with CLUSTER (docs/INSTALLATION.md#externaldns-one-instance-per-regional-zone).
const exampleCluster = "aks01"

// TestExternalDNSExamples_OneReleasePerZoneWithTheRecommendedFlags renders ExternalDNS' own chart
// with each per-zone values file of docs/examples/external-dns and the owner ID of one cluster
// (--set txtOwnerId, as the docs install them), parses the container arguments with
// ExternalDNS' flag parser and configuration validation, and checks the configuration
// docs/EXTERNALDNS-INTEGRATION.md recommends: every flag it calls required (DNSEndpoints only, this
// zone's annotation and label filters, sync with TXT ownership, an owner ID per cluster and a
// prefix per zone), and the RBAC to read DNSEndpoints. The rendered objects are then accepted by a
// real API server (dry run).
func TestExternalDNSExamples_OneReleasePerZoneWithTheRecommendedFlags(t *testing.T) {
	chart := externalDNSChart(t)
	env := controlPlane(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "external-dns"}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	letter, _ := specOf(t, sampleObjects(t), "ClusterIdentity")["environmentLetter"].(string)
	require.NotEmpty(t, letter, "the samples' ClusterIdentity's environment letter")
	files, err := filepath.Glob(repoPath("docs", "examples", "external-dns", "*-values.yaml"))
	require.NoError(t, err)
	var zones []string
	for _, f := range files {
		zone := strings.TrimSuffix(filepath.Base(f), "-values.yaml")
		zones = append(zones, zone)
		t.Run(zone, func(t *testing.T) {
			release := "external-dns-" + zone
			objs, d, cfg := renderExternalDNS(t, chart, release, "-f", f, "--set", "txtOwnerId="+release+"-"+exampleCluster)

			assert.Empty(t, externalDNSFlagProblems(flagsOfConfig(cfg)), "the flags docs/EXTERNALDNS-INTEGRATION.md calls required")
			assert.Equal(t, []string{"crd"}, cfg.Sources)
			assert.Equal(t, "externaldns.k8s.io/v1alpha1", cfg.CRDSourceAPIVersion)
			assert.Equal(t, "DNSEndpoint", cfg.CRDSourceKind)
			assert.Equal(t, naming.AnnotationController+"="+release, cfg.AnnotationFilter,
				"the instance publishes the DNSEndpoints the operator annotates for controller %s", release)
			assert.Equal(t, naming.LabelController+"="+release, cfg.LabelFilter,
				"the API server sends the instance only the DNSEndpoints the operator labels for controller %s: "+
					"without it a restart of ExternalDNS v0.22.0 or older deletes every record of the zone", release)
			assert.Equal(t, "sync", cfg.Policy)
			assert.Equal(t, "txt", cfg.Registry)
			assert.Equal(t, release+"-"+exampleCluster, cfg.TXTOwnerID, "owner ID <controller>-<cluster>, from the install")
			assert.Equal(t, zone+"-"+letter+"-", cfg.TXTPrefix,
				"one prefix per zone, the same in every cluster: <region>-<environment letter>- with the samples' ClusterIdentity's letter")
			assert.Equal(t, "azure-private-dns", cfg.Provider)
			assert.Equal(t, "rg-dns-"+zone, cfg.AzureResourceGroup)
			assert.Equal(t, release, d.Spec.Template.Spec.ServiceAccountName, "the federated credential names this service account")

			roles := objectsOfKind(objs, "ClusterRole")
			require.Len(t, roles, 1)
			rules, _ := json.Marshal(roles[0].Object["rules"])
			assert.Contains(t, string(rules), `"dnsendpoints"`)

			for _, obj := range objs {
				err := env.Client.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(obj),
					client.DryRunAll, client.FieldOwner("packaging-test"), client.ForceOwnership)
				require.NoError(t, err, "server-side apply (dry run) of %s %s", obj.GetKind(), obj.GetName())
			}
		})
	}
	slices.Sort(zones)
	assert.Equal(t, []string{"frc", "neu", "weu"}, zones, "one values file per regional zone of the DNSConfiguration example")

	// The check can fail: without labelFilter the chart passes no --label-filter, and the
	// configuration is reported.
	t.Run("control: without labelFilter", func(t *testing.T) {
		_, _, cfg := renderExternalDNS(t, chart, "external-dns-weu",
			"-f", repoPath("docs", "examples", "external-dns", "weu-values.yaml"), "--set", "labelFilter=null",
			"--set", "txtOwnerId=external-dns-weu-"+exampleCluster)
		assert.Equal(t, []string{"--label-filter is missing"}, externalDNSFlagProblems(flagsOfConfig(cfg)))
	})
}

// TestExternalDNSExamples_TheLoopGivesEveryClusterItsOwnerIDs runs the install loop of
// docs/INSTALLATION.md#externaldns-one-instance-per-regional-zone as written, for two clusters
// (only the CLUSTER= line changed, helm replaced by a function recording its arguments), renders
// each recorded install with ExternalDNS' chart and reads the owner ID and prefix ExternalDNS
// parses: every zone gets <controller>-<cluster>, a different one per cluster (one owner ID in two
// clusters writing one zone and each deletes the other's records), and one prefix for both. The
// values files alone give no owner ID: the chart refuses them until the install names the cluster.
// The loop creates the namespace, then each release's azure.json Secret (the name its values
// mount, the zone's resource group and subscription, workload identity) before the release.
func TestExternalDNSExamples_TheLoopGivesEveryClusterItsOwnerIDs(t *testing.T) {
	chart := externalDNSChart(t)
	var loop string
	for _, block := range fencedBlocks(readFile(t, repoPath("docs", "INSTALLATION.md"))) {
		if strings.Contains(block, "for zone in") && strings.Contains(block, "txtOwnerId=") {
			require.Empty(t, loop, "docs/INSTALLATION.md has one ExternalDNS install loop")
			loop = block
		}
	}
	require.NotEmpty(t, loop, "docs/INSTALLATION.md: no ExternalDNS install loop (a block with `for zone in` and txtOwnerId=)")
	clusterLine := regexp.MustCompile(`(?m)^CLUSTER=\S+`)
	require.Len(t, clusterLine.FindAllString(loop, -1), 1,
		"the loop sets the cluster's name once, on a line CLUSTER=<name>, and uses it for the owner ID:\n%s", loop)

	type zoneConfig struct{ owner, prefix string }
	configs := map[string]map[string]zoneConfig{} // cluster -> zone -> what ExternalDNS parses
	clusters := []string{"aks01", "aks02"}
	for _, cluster := range clusters {
		script := "helm() { for a in \"$@\"; do printf '%s\\037' \"$a\"; done; echo; }\n" +
			"kubectl() { printf 'kubectl\\037'; helm \"$@\"; }\n" +
			"az() { echo 33333333-3333-3333-3333-333333333333; }\n" +
			clusterLine.ReplaceAllLiteralString(loop, "CLUSTER="+cluster)
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "the loop for cluster %s:\n%s\n%s", cluster, script, out)
		configs[cluster] = map[string]zoneConfig{}
		namespaceCreated, secrets := false, map[string]string{} // Secret name -> its azure.json
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			args := strings.Split(strings.TrimSuffix(line, "\037"), "\037")
			if args[0] == "kubectl" {
				switch {
				case slices.Equal(args[1:], []string{"create", "namespace", "external-dns"}):
					namespaceCreated = true
				case len(args) == 8 && slices.Equal(args[1:6], []string{"-n", "external-dns", "create", "secret", "generic"}):
					azureJSON, ok := strings.CutPrefix(args[7], "--from-literal=azure.json=")
					require.True(t, ok, "kubectl %q: the Secret holds azure.json", args[1:])
					secrets[args[6]] = azureJSON
				default:
					t.Fatalf("kubectl %q: not understood by the test", args[1:])
				}
				continue
			}
			if args[0] != "install" {
				continue // helm repo add
			}
			require.True(t, namespaceCreated, "the namespace exists before the first release's Secret and install")
			var zoneValues struct {
				ExtraArgs    map[string]string `json:"extraArgs"`
				ExtraVolumes []struct {
					Secret struct {
						SecretName string `json:"secretName"`
					} `json:"secret"`
				} `json:"extraVolumes"`
			}
			valuesFile := args[slices.Index(args, "-f")+1]
			require.NoError(t, yaml.Unmarshal([]byte(readFile(t, filepath.Join(repoRoot, valuesFile))), &zoneValues))
			require.Len(t, zoneValues.ExtraVolumes, 1, "%s mounts the azure.json Secret", valuesFile)
			azureJSON, ok := secrets[zoneValues.ExtraVolumes[0].Secret.SecretName]
			require.True(t, ok, "helm install %s: its Secret %s was not created before it", args[1], zoneValues.ExtraVolumes[0].Secret.SecretName)
			var azure struct {
				TenantID, SubscriptionID, ResourceGroup string
				UseWorkloadIdentityExtension            bool
			}
			require.NoError(t, json.Unmarshal([]byte(azureJSON), &azure), "the azure.json of %s: %s", args[1], azureJSON)
			assert.Equal(t, zoneValues.ExtraArgs["azure-resource-group"], azure.ResourceGroup, "%s: the zone's resource group", args[1])
			assert.Equal(t, zoneValues.ExtraArgs["azure-subscription-id"], azure.SubscriptionID, "%s: the zones' subscription", args[1])
			assert.NotEmpty(t, azure.TenantID)
			assert.True(t, azure.UseWorkloadIdentityExtension, "%s: workload identity, as the values' client ID", args[1])
			require.GreaterOrEqual(t, len(args), 3, "helm %q", args)
			release, extra, pinned := args[1], []string(nil), false
			require.Equal(t, "external-dns/external-dns", args[2], "the loop installs ExternalDNS' chart")
			for i := 3; i < len(args); i++ {
				switch args[i] {
				case "-f", "--values", "--set":
					require.Less(t, i+1, len(args), "helm %q", args)
					extra = append(extra, args[i], args[i+1])
					i++
				case "-n", "--namespace":
					i++
				case "--version":
					require.Less(t, i+1, len(args), "helm %q", args)
					require.Equal(t, chartVersion(t), args[i+1], "helm install %s pins the chart the values are tested with", release)
					pinned = true
					i++
				case "--create-namespace":
				default:
					t.Fatalf("helm install %s: argument %q not understood by the test", release, args[i])
				}
			}
			require.True(t, pinned, "helm install %s gives --version: a later chart may render other flags from the values", release)
			_, _, cfg := renderExternalDNS(t, chart, release, extra...)
			zone := strings.TrimPrefix(release, "external-dns-")
			assert.Empty(t, externalDNSFlagProblems(flagsOfConfig(cfg)), "cluster %s, zone %s", cluster, zone)
			assert.Equal(t, release+"-"+cluster, cfg.TXTOwnerID, "cluster %s, zone %s: the owner ID is <controller>-<cluster>", cluster, zone)
			configs[cluster][zone] = zoneConfig{owner: cfg.TXTOwnerID, prefix: cfg.TXTPrefix}
		}
		assert.ElementsMatch(t, []string{"weu", "neu", "frc"}, slices.Collect(maps.Keys(configs[cluster])),
			"cluster %s: one release per regional zone", cluster)
	}
	for zone, first := range configs[clusters[0]] {
		second := configs[clusters[1]][zone]
		assert.NotEqual(t, first.owner, second.owner, "zone %s: clusters %s and %s share the owner ID", zone, clusters[0], clusters[1])
		assert.Equal(t, first.prefix, second.prefix, "zone %s: one TXT prefix in every cluster", zone)
	}

	files, err := filepath.Glob(repoPath("docs", "examples", "external-dns", "*-values.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		release := "external-dns-" + strings.TrimSuffix(filepath.Base(f), "-values.yaml")
		out, err := helm(t, "template", release, chart, "--namespace", "external-dns", "--kube-version", renderKubeVersion, "-f", f)
		if assert.Error(t, err, "%s without --set txtOwnerId renders (owner ID in the file, or none):\n%s", filepath.Base(f), out) {
			assert.Contains(t, err.Error(), "txtOwnerId", "%s: the chart refuses the values for want of an owner ID", filepath.Base(f))
		}
	}
}
