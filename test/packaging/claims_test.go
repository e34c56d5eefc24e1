package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/service-router/service-router-operator/internal/budget"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/guard"
)

// The claims of a required version, role, permission, time or limit in docs/PLUGIN.md, the
// chart's values.yaml and README, the krew manifest and docs/INSTALLATION.md's Prerequisites
// (issue 42). Each is either checked by a TestClaims_ function below or by the test a registry
// entry names; TestClaims_EveryClaimIsChecked fails when a listed phrase leaves its file (a
// reworded claim is checked again) or the named test no longer exists.

// claim is one statement of a docs file and how it is checked. A claim of a time, a limit or a
// version is checked against what the software does, never against a test's own constants:
//   - checkBy names a test that exercises the behaviour (a measurement, the running component, the
//     upstream module the tests run), or
//   - checkBy is the upstream source (a URL the file cites) of a fact about another project's
//     software that no test here can run, or
//   - textual says why the claim is only compared with the code's own text (a default or a
//     constant, by TestClaims_FiguresAreTheCodes): what no behaviour shows better, such as an
//     example of output or advice.
type claim struct {
	file    string // relative to the repository root
	phrase  string // exact, but for line breaks and (in YAML) comment markers
	checkBy string // a Test function in the repository's tests, or the upstream source (https://…)
	textual string // set for a claim checked only against the code's text: why
}

// textual registers a claim compared only with the code's own text, and why.
func textual(file, phrase, why string) claim {
	return claim{file: file, phrase: phrase, checkBy: "TestClaims_FiguresAreTheCodes", textual: why}
}

var claims = []claim{
	// docs/INSTALLATION.md, ## Prerequisites.
	{"docs/INSTALLATION.md", "| Kubernetes | 1.30 | 1.37 (the API server of every integration, packaging and end-to-end test: kube-apiserver and kube-controller-manager 1.37.2)", "TestClaims_MinimumKubernetesEverywhere", ""},
	{"docs/INSTALLATION.md", "in the node suite, kubelet and kube-proxy 1.36.3 under that 1.37.2 API server", "TestClaims_MinimumKubernetesEverywhere", ""},
	{"docs/INSTALLATION.md", "a node one minor behind its control plane as [the version skew policy](https://kubernetes.io/releases/version-skew-policy/) allows", "https://kubernetes.io/releases/version-skew-policy/", ""},
	{"docs/INSTALLATION.md", "The chart's `kubeVersion` and the bundle's `minKubeVersion` enforce 1.30.", "TestClaims_MinimumKubernetesEverywhere", ""},
	{"docs/INSTALLATION.md", "the `networking.istio.io/v1` Gateway CRD of `istio.io/api` v1.32.0 everywhere else", "TestClaims_TestedVersionsAreTheModules", ""},
	{"docs/INSTALLATION.md", "istiod 1.31 (`istio.io/istio` main line `eed52ebb66ad`, the one minor the module proxy serves)", "TestIstio_IstiodAdmitsAnalysesAndProgramsEveryGateway", ""},
	{"docs/INSTALLATION.md", "the standard-channel CRDs of `sigs.k8s.io/gateway-api` v1.7.0", "TestClaims_TestedVersionsAreTheModules", ""},
	{"docs/INSTALLATION.md", "istiod 1.31's implementation (GatewayClass `istio`) in the node suite", "TestIstio_IstiodAdmitsAnalysesAndProgramsEveryGateway", ""},
	{"docs/INSTALLATION.md", "0.23.0 (end-to-end suite: `--source=crd`, `--provider=rfc2136`, BIND 9)", "TestClaims_TestedVersionsAreTheModules", ""},
	{"docs/INSTALLATION.md", "it starts using the API within 10 seconds of the CRD being installed, without a restart", "TestDefinite_WithoutDNSEndpointCRDReportsAndPublishesOnceInstalled", ""},
	{"docs/INSTALLATION.md", "Istio serves the `v1` networking API from 1.22 on", "https://istio.io/latest/news/releases/1.22.x/announcing-1.22/", ""},
	{"docs/INSTALLATION.md", "ListenerSet reached the standard channel (and `v1`) in Gateway API v1.5", "https://gateway-api.sigs.k8s.io/api-types/listenerset/", ""},
	{"docs/INSTALLATION.md", "from 0.18 ExternalDNS writes only the ownership records prefixed with the record type", "https://github.com/kubernetes-sigs/external-dns/pull/5172", ""},
	{"docs/INSTALLATION.md", "1.30 is the first release where CRD validation ratcheting is on by default", "https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/4008-crd-ratcheting", ""},
	{"docs/INSTALLATION.md", "CEL rules (`x-kubernetes-validations`, generally available since 1.29)", "TestClaims_MinimumKubernetesEverywhere", ""},
	{"docs/INSTALLATION.md", "without the DNSEndpoint API the install **fails**", "TestChart_InstallFailsWithoutTheDNSEndpointAPI", ""},
	{"docs/INSTALLATION.md", "without the Istio Gateway API the install succeeds and its notes start with a **warning**", "TestChart_NotesWarnWithoutTheIstioGatewayAPI", ""},
	{"docs/INSTALLATION.md", "without the DNSEndpoint CRD it publishes nothing and `dns-config` says `ExternalDNSNotInstalled`", "TestDefinite_WithoutDNSEndpointCRDReportsAndPublishesOnceInstalled", ""},
	{"docs/INSTALLATION.md", "without the Istio Gateway CRD it publishes DNS only and every Gateway says `IstioNotInstalled`", "TestDefinite_WithoutIstioCRDsPublishesDNSAndGeneratesOnceInstalled", ""},

	// docs/PLUGIN.md.
	{"docs/PLUGIN.md", "kubectl reads such completion helpers from 1.26 on", "https://github.com/kubernetes/kubernetes/blob/master/CHANGELOG/CHANGELOG-1.26.md", ""},
	{"docs/PLUGIN.md", "completes `kubectl router ...` when an executable `kubectl_complete-router` on the `PATH` runs", "TestPlugin_KubectlCompletesTheRouterCommands", ""},
	{"docs/PLUGIN.md", "asks kubectl 1.37 to complete `kubectl router st`", "TestClaims_MinimumKubernetesEverywhere", ""},
	{"docs/PLUGIN.md", "and the operator's CRDs: get and list, nothing else", "TestClaims_PluginRightsAreThePlanReaderRole", ""},
	{"docs/PLUGIN.md", "**`service-router-plan-reader`** (`config/rbac/plan_reader_role.yaml`; in the Helm chart `<rbac.userRoles.namePrefix>-plan-reader`; in the OLM bundle)", "TestChartRBAC_UserRoles", ""},
	{"docs/PLUGIN.md", "and get of the operator's five CustomResourceDefinitions by name", "TestClaims_PluginRightsAreThePlanReaderRole", ""},
	{"docs/PLUGIN.md", "It is aggregated into no built-in role", "TestChartRBAC_UserRoles", ""},
	{"docs/PLUGIN.md", "run the plugin as a user bound to exactly that role", "TestPlan_KubectlPluginAsAUserRunsIt", ""},
	{"docs/PLUGIN.md", "(`linux-amd64`, `linux-arm64`, `darwin-amd64`, `darwin-arm64` for Apple silicon, `windows-amd64`)", "TestClaims_PluginPlatformsAreTheReleasePlatforms", ""},
	{"docs/PLUGIN.md", "(it trips at 10 or more and over 25%); they proceed after 5s", "TestSettings_TripsAtTheMinimumAndAboveTheShare", ""},
	textual("docs/PLUGIN.md", "(it trips at 10 or more and over 25%); they proceed after 5s",
		"the 5 s a held deletion waits is the default of a setting whose behaviour the guard's tests show at other lengths"),
	textual("docs/PLUGIN.md", "`--deletion-guard-window`, 30 s, too", "a flag's default; the window's behaviour is tested at other lengths"),
	textual("docs/PLUGIN.md", "about 22400 of 1000000 bytes (2%)", "an example of plan's output; 1000000 is the default budget, whose enforcement the Gateway tests show"),
	{"docs/PLUGIN.md", "the fullest with 64 of 64 listeners", "TestGatewayAPI_ListenerCapsAreRespected", ""},
	{"docs/PLUGIN.md", "ListenerSets of 64 listeners", "TestGatewayAPI_ListenerCapsAreRespected", ""},
	{"docs/PLUGIN.md", "of the zone's principal left of 250 reads and 200 writes", "TestSummaryOf_ResourceManagerRequests", ""},
	{"docs/PLUGIN.md", "of the zone's principal left of 250 reads and 200 writes", "https://learn.microsoft.com/en-us/azure/azure-resource-manager/management/request-limits-and-throttling", ""},
	{"docs/PLUGIN.md", `with: {go-version: "1.27"}`, "TestClaims_TestedVersionsAreTheModules", ""},
	{"docs/PLUGIN.md", "(Kubernetes 1.30 and later ratchet so)", "TestClaims_MinimumKubernetesEverywhere", ""},
	{"docs/PLUGIN.md", "requires its message to equal plan's, manifest by manifest", "TestPlan_RefusesWhatTheAPIServerRefuses", ""},
	{"docs/PLUGIN.md", "no release carried one) cannot get them, and `plan` of a manifest of the operator's kinds then fails (exit code 1) naming the CRD", "TestPlan_RefusesWhatTheAPIServerRefuses", ""},
	{"docs/PLUGIN.md", "about 25 ms for 1,000 routes and 0.7 s for 10,000 routes in 50 namespaces, as measured once by `BenchmarkPredict`", "BenchmarkPredict", ""},
	textual("docs/PLUGIN.md", "a minute over its last window of about 5 minutes", "the window's length is the operator's own choice, not a behaviour a test could measure more directly"),
	{"docs/PLUGIN.md", "VERSION: 0.2.0 # the operator's version in the cluster", "TestClaims_ReleaseVersionIsTheMakefiles", ""},
	// Tested with a real API server for a role without the CRD rule only; the exit code for any forbidden read.
	{"docs/PLUGIN.md", "A user without it gets the API server's `forbidden` (exit code 1)", "TestPlan_RefusesWhatTheAPIServerRefuses", ""},
	{"docs/PLUGIN.md", "A user without it gets the API server's `forbidden` (exit code 1)", "TestExitCode_TellsTheGatesVerdictsFromAFailure", ""},

	// The chart's README (hand-written part).
	{chartPath + "/README.md", "IMG=registry.example.com/service-router-operator:v0.2.0", "TestClaims_ReleaseVersionIsTheMakefiles", ""},
	{chartPath + "/README.md", "--version 0.2.0", "TestClaims_ReleaseVersionIsTheMakefiles", ""},
	{chartPath + "/README.md", "`values.schema.json` rejects unknown keys and wrong types, and the chart fails with a message on values that do not fit together.", "TestChart_RejectsWrongValues", ""},
	{chartPath + "/README.md", "**needs the published release** (none is published yet)", "TestDocs_ReleaseOnlyCommandsSayTheyNeedARelease", ""},

	// The chart's values.yaml (and so its generated README table).
	{chartPath + "/values.yaml", "the others take over within 15-25 seconds if it dies (its 15 s Lease expires first)", "TestChart_HighAvailabilityInPods", ""},
	{chartPath + "/values.yaml", "its 15 s Lease expires first", "TestChart_HighAvailabilityInPods", ""},
	textual(chartPath+"/values.yaml", "Keep it at about 80 % of that limit", "advice, compared with the values' own GOMEMLIMIT and memory limit"),
	{chartPath + "/values.yaml", "Install a ValidatingAdmissionPolicy (Kubernetes 1.30+)", "TestClaims_MinimumKubernetesEverywhere", ""},
	{chartPath + "/values.yaml", "The image runs as UID 65532", "TestImage_MultiArchScratchImageOfTheManager", ""},
	{chartPath + "/values.yaml", "<prefix>-plan-reader, bound cluster-wide to whoever runs `kubectl router plan`", "TestChartRBAC_UserRoles", ""},
	{chartPath + "/values.yaml", "Install and upgrade the five CRDs with the release", "TestChart_CRDsAreTheGeneratedOnes", ""},
	{chartPath + "/values.yaml", "(helm.sh/resource-policy: keep)", "TestChart_CRDLifecycle", ""},
	{chartPath + "/values.yaml", "More than 1 needs leaderElection.enabled.", "TestChart_RejectsWrongValues", ""},
	{chartPath + "/values.yaml", "(needs replicaCount of at least 2)", "TestChart_RejectsWrongValues", ""},
	{chartPath + "/values.yaml", "Fail the install or upgrade when the cluster does not serve the ExternalDNS DNSEndpoint API", "TestChart_InstallFailsWithoutTheDNSEndpointAPI", ""},
	{chartPath + "/values.yaml", "a scraper needs a bearer token allowed to GET /metrics (bind it to the <release>-metrics-reader ClusterRole)", "TestChart_ServiceMonitorAuthenticatesWithAScraperToken", ""},
	{chartPath + "/values.yaml", "<release>-metrics-scraper that may only GET /metrics", "TestChart_ServiceMonitorAuthenticatesWithAScraperToken", ""},
	{chartPath + "/values.yaml", "<prefix>-editor and <prefix>-viewer, aggregated into the built-in admin, edit and view roles", "TestChartRBAC_UserRoles", ""},
	{chartPath + "/values.yaml", "runAsNonRoot and the RuntimeDefault seccomp profile are always set", "TestChart_DeploymentIsHardened", ""},
	{chartPath + "/values.yaml", "the container's root filesystem is read-only", "TestChart_DeploymentIsHardened", ""},
	{chartPath + "/values.yaml", "The restricted Pod Security Standard refuses hostPath volumes", "https://kubernetes.io/docs/concepts/security/pod-security-standards/", ""},

	// The krew manifest.
	{"hack/krew/router.yaml", "reading only (get and list, with the ClusterRole service-router-plan-reader, which no built-in role includes)", "TestClaims_PluginRightsAreThePlanReaderRole", ""},
}

// normalized is a file's text with YAML comment markers removed (for values.yaml) and every run
// of white space made one space, so that a phrase is found across line breaks.
func normalized(path, text string) string {
	if strings.HasSuffix(path, ".yaml") {
		text = regexp.MustCompile(`(?m)^\s*# ?(-- )?`).ReplaceAllString(text, "")
	}
	return strings.Join(strings.Fields(text), " ")
}

// testFunctions returns the names of the Test and Benchmark functions of the repository's _test.go files.
func testFunctions(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	def := regexp.MustCompile(`(?m)^func ((?:Test|Benchmark)\w+)\(`)
	require.NoError(t, filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == "dist" || d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range def.FindAllStringSubmatch(string(data), -1) {
			names[m[1]] = true
		}
		return nil
	}))
	return names
}

// TestClaims_EveryClaimIsChecked: every registered claim is still in its file, word for word,
// and the test that checks it exists.
func TestClaims_EveryClaimIsChecked(t *testing.T) {
	tests := testFunctions(t)
	texts := map[string]string{}
	for _, c := range claims {
		if _, ok := texts[c.file]; !ok {
			texts[c.file] = normalized(c.file, readFile(t, repoPath(c.file)))
		}
		assert.True(t, strings.Contains(texts[c.file], normalized(c.file, c.phrase)),
			"%s no longer says %q; check the new wording and update the claims registry", c.file, c.phrase)
		if c.textual != "" {
			assert.Equal(t, "TestClaims_FiguresAreTheCodes", c.checkBy, "%s: %q is textual, so compared with the code by TestClaims_FiguresAreTheCodes", c.file, c.phrase)
		} else {
			assert.NotEqual(t, "TestClaims_FiguresAreTheCodes", c.checkBy, "%s: %q is compared only with the code's text: say why (textual)", c.file, c.phrase)
		}
		if strings.HasPrefix(c.checkBy, "https://") {
			assert.True(t, strings.Contains(texts[c.file], c.checkBy), "%s: %q cites its upstream source %s", c.file, c.phrase, c.checkBy)
			continue
		}
		assert.True(t, tests[c.checkBy], "%s: %q is said to be checked by %s, which does not exist", c.file, c.phrase, c.checkBy)
	}
}

// prerequisiteRow returns the cells of INSTALLATION.md's Prerequisites table row of component.
func prerequisiteRow(t *testing.T, component string) []string {
	t.Helper()
	section := docSection(t, readFile(t, repoPath("docs", "INSTALLATION.md")), "## Prerequisites")
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| "+component+" |") {
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			return cells
		}
	}
	t.Fatalf("the Prerequisites table has no %s row", component)
	return nil
}

// TestClaims_MinimumKubernetesEverywhere: the minimum Kubernetes of the Prerequisites table is the
// one the chart's kubeVersion and the bundle's minKubeVersion enforce and the one the docs name
// for ratcheting and the ValidatingAdmissionPolicy; the tested version is the one the tests render
// for and run: the control plane hack/tools/kube builds (kube-apiserver, kube-controller-manager
// and kubectl in bin/, when built, report it) and the node suite's kubelet and kube-proxy, which
// hack/tools/kubenode builds within the version skew policy's three minors below it.
func TestClaims_MinimumKubernetesEverywhere(t *testing.T) {
	row := prerequisiteRow(t, "Kubernetes")
	minimum := row[1]
	require.Regexp(t, `^1\.\d+$`, minimum)

	var chart struct {
		KubeVersion string `json:"kubeVersion"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath(chartPath, "Chart.yaml"))), &chart))
	assert.Equal(t, ">="+minimum+".0-0", chart.KubeVersion, "Chart.yaml kubeVersion")

	assert.Equal(t, minimum+".0", loadCSV(t).Spec.MinKubeVersion, "the bundle's minKubeVersion")
	base := readFile(t, repoPath("config", "manifests", "bases", "service-router-operator.clusterserviceversion.yaml"))
	assert.Contains(t, base, "minKubeVersion: "+minimum+".0\n", "config/manifests/bases' minKubeVersion")

	assert.Contains(t, row[3], "enforce "+minimum+".", "the Why column names the enforced minimum")
	assert.Contains(t, row[3], "generally available since 1.29)", "CEL validation of CRDs is GA in 1.29, below the minimum")
	assert.True(t, minorOf(t, minimum) >= 29, "the minimum %s has CEL validation (1.29)", minimum)
	assert.Contains(t, normalized("PLUGIN.md", readFile(t, repoPath("docs", "PLUGIN.md"))), "(Kubernetes "+minimum+" and later ratchet so)")
	assert.Contains(t, normalized(chartPath+"/values.yaml", readFile(t, repoPath(chartPath, "values.yaml"))), "ValidatingAdmissionPolicy (Kubernetes "+minimum+"+)",
		"the admission policy needs no more than the chart's minimum (ValidatingAdmissionPolicy is GA in Kubernetes 1.30)")

	controlPlane := kubeModuleVersion(t, "hack/tools/kube/go.mod")
	node := kubeModuleVersion(t, "hack/tools/kubenode/go.mod")
	tested := strings.Join(strings.Split(controlPlane, ".")[:2], ".")
	assert.Equal(t, tested, strings.Join(strings.Split(renderKubeVersion, ".")[:2], "."), "renderKubeVersion is the control plane's minor")
	assert.True(t, strings.HasPrefix(row[2], tested+" "), "the Tested column %q names the version the tests run, %s", row[2], tested)
	assert.Contains(t, row[2], "kube-apiserver and kube-controller-manager "+controlPlane, "the Tested column names hack/tools/kube's version")
	assert.Contains(t, row[2], "kubelet and kube-proxy "+node+" under that "+controlPlane+" API server", "the Tested column names hack/tools/kubenode's version")
	skew := minorOf(t, controlPlane) - minorOf(t, node)
	assert.True(t, skew >= 0 && skew <= 3, "kubelet %s and kube-apiserver %s: the version skew policy allows a kubelet up to three minors older, never newer", node, controlPlane)
	assert.Contains(t, row[3], "API servers from "+minimum+" to 1."+strconv.Itoa(minorOf(t, controlPlane)-1)+" are not tested.", "the Why column says which API servers are not tested")
	development := readFile(t, repoPath("docs", "DEVELOPMENT.md"))
	assert.Regexp(t, "(?m)^\\| `hack/tools/kube` \\| [^|\\n]* v"+regexp.QuoteMeta(controlPlane)+" ", development, "DEVELOPMENT's tools table names hack/tools/kube's version")
	assert.Regexp(t, "(?m)^\\| `hack/tools/kubenode` \\| [^|\\n]* v"+regexp.QuoteMeta(node)+" ", development, "DEVELOPMENT's tools table names hack/tools/kubenode's version")
	assert.Contains(t, readFile(t, repoPath("docs", "PLUGIN.md")), "asks kubectl "+tested+" to complete")
	// The binaries report their module's version (hack/make/tools.mk stamps it at link time).
	// kube-apiserver and kube-controller-manager are test-go's prerequisites; the node's binaries
	// may still be building beside it (make test), so they are not run here.
	for _, name := range []string{"kube-apiserver", "kube-controller-manager"} {
		if path := repoPath("bin", name); fileExists(path) {
			out, err := exec.Command(path, "--version").Output()
			require.NoError(t, err, "%s --version", name)
			assert.Equal(t, "Kubernetes v"+controlPlane, strings.TrimSpace(string(out)), "bin/%s --version", name)
		}
	}
	if kubectl := repoPath("bin", "kubectl"); fileExists(kubectl) {
		out, err := exec.Command(kubectl, "version", "--client", "-o", "yaml").Output()
		require.NoError(t, err)
		assert.Contains(t, string(out), "gitVersion: v"+controlPlane+"\n", "bin/kubectl is %s", controlPlane)
	}
}

// kubeModuleVersion returns the k8s.io/kubernetes version (without the v) a tools module requires.
func kubeModuleVersion(t *testing.T, goMod string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^require k8s\.io/kubernetes v(\d+\.\d+\.\d+)$`).FindStringSubmatch(readFile(t, repoPath(goMod)))
	require.NotNil(t, m, "%s requires no k8s.io/kubernetes release", goMod)
	return m[1]
}

func minorOf(t *testing.T, v string) int {
	t.Helper()
	parts := strings.Split(v, ".")
	require.GreaterOrEqual(t, len(parts), 2, "version %q", v)
	n := 0
	for _, c := range parts[1] {
		require.True(t, c >= '0' && c <= '9', "version %q", v)
		n = n*10 + int(c-'0')
	}
	return n
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// goModVersion returns the version of a module the main go.mod requires.
func goModVersion(t *testing.T, module string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(module) + ` (v\S+)`).FindStringSubmatch(readFile(t, repoPath("go.mod")))
	require.NotNil(t, m, "go.mod requires no %s", module)
	return m[1]
}

// TestClaims_TestedVersionsAreTheModules: the Tested column names the modules the tests take
// the CRDs and ExternalDNS from, and PLUGIN.md's workflow sets up the Go the module needs.
func TestClaims_TestedVersionsAreTheModules(t *testing.T) {
	assert.Contains(t, prerequisiteRow(t, "Istio")[2], "`istio.io/api` "+goModVersion(t, "istio.io/api"))
	// The istiod the node suite runs: the commit of the pseudo-version hack/tools/istio pins.
	istio := regexp.MustCompile(`(?m)^require istio\.io/istio v0\.0\.0-\d+-([0-9a-f]{12})$`).FindStringSubmatch(readFile(t, repoPath("hack/tools/istio/go.mod")))
	require.NotNil(t, istio, "hack/tools/istio/go.mod requires istio.io/istio at a pseudo-version")
	assert.Contains(t, prerequisiteRow(t, "Istio")[2], "`istio.io/istio` main line `"+istio[1]+"`")
	assert.Contains(t, prerequisiteRow(t, "Gateway API (only for Gateways with `backend: GatewayAPI`)")[2], "`sigs.k8s.io/gateway-api` "+goModVersion(t, "sigs.k8s.io/gateway-api"))
	assert.True(t, strings.HasPrefix(prerequisiteRow(t, "ExternalDNS")[2], strings.TrimPrefix(goModVersion(t, "sigs.k8s.io/external-dns"), "v")+" "),
		"the tested ExternalDNS is the module go.mod requires")

	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readFile(t, repoPath("go.mod")))
	require.NotNil(t, m)
	assert.Contains(t, readFile(t, repoPath("docs", "PLUGIN.md")), `with: {go-version: "`+m[1]+`"}`, "the workflow builds with the Go of go.mod")
}

// TestClaims_PluginRightsAreThePlanReaderRole: what PLUGIN.md says the plugin reads is exactly
// config/rbac/plan_reader_role.yaml, get and list only, and the krew manifest names that role.
func TestClaims_PluginRightsAreThePlanReaderRole(t *testing.T) {
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath("config", "rbac", "plan_reader_role.yaml"))), &role))
	doc := normalized("PLUGIN.md", readFile(t, repoPath("docs", "PLUGIN.md")))

	// The kinds PLUGIN.md lists, as group/resource.
	listed := map[string]string{
		"ClusterIdentities":      "cluster.router.io/clusteridentities",
		"DNSConfigurations":      "cluster.router.io/dnsconfigurations",
		"DNSPolicies":            "routing.router.io/dnspolicies",
		"ServiceRoutes":          "routing.router.io/serviceroutes",
		" Gateways,":             "routing.router.io/gateways",
		"DNSEndpoints":           "externaldns.k8s.io/dnsendpoints",
		"Istio Gateways":         "networking.istio.io/gateways",
		"Gateway API's Gateways": "gateway.networking.k8s.io/gateways",
		"ListenerSets":           "gateway.networking.k8s.io/listenersets",
		"HTTPRoutes":             "gateway.networking.k8s.io/httproutes",
		"ReferenceGrants":        "gateway.networking.k8s.io/referencegrants",
		"Namespaces":             "/namespaces",
		"Services":               "/services",
	}
	start := strings.Index(doc, "in the OLM bundle): get and list of ")
	require.GreaterOrEqual(t, start, 0, "PLUGIN.md no longer lists the plan reader's rights after 'in the OLM bundle): get and list of'")
	end := strings.Index(doc[start:], "whose schemas and rules")
	require.Positive(t, end)
	list := doc[start : start+end]

	var want []string
	for word, resource := range listed {
		assert.Contains(t, list, word, "PLUGIN.md lists %s", resource)
		want = append(want, resource)
	}
	var readable, crds []string
	for _, rule := range role.Rules {
		if slices.Contains(rule.APIGroups, "apiextensions.k8s.io") {
			assert.Equal(t, []string{"get"}, rule.Verbs, "the CRDs: get only")
			assert.Equal(t, []string{"customresourcedefinitions"}, rule.Resources)
			crds = append(crds, rule.ResourceNames...)
			continue
		}
		assert.Equal(t, []string{"get", "list"}, rule.Verbs, "get and list, nothing else")
		assert.Empty(t, rule.ResourceNames)
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				readable = append(readable, g+"/"+r)
			}
		}
	}
	sort.Strings(want)
	sort.Strings(readable)
	assert.Equal(t, want, readable, "PLUGIN.md's list of what the plugin reads is the plan-reader role's")

	assert.Contains(t, list, "the operator's "+numberWord(len(crds))+" CustomResourceDefinitions by name")
	for _, name := range crds {
		assert.Contains(t, list, "`"+name+"`", "PLUGIN.md names the CRD the role may get")
	}
	assert.ElementsMatch(t, operatorCRDNames(t), crds, "the role gets exactly the operator's CRDs")

	krew := normalized("router.yaml", readFile(t, repoPath("hack", "krew", "router.yaml")))
	assert.Contains(t, krew, "reading only (get and list, with the ClusterRole service-router-"+role.Name+",",
		"the krew manifest names the role the plugin needs (the view role is not enough)")
	assert.Contains(t, doc, "**`service-router-"+role.Name+"`**")
}

func numberWord(n int) string {
	words := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	if n < len(words) {
		return words[n]
	}
	return "many"
}

// TestClaims_PluginPlatformsAreTheReleasePlatforms: the archives PLUGIN.md lists are the
// release's PLUGIN_PLATFORMS, and the krew manifest is rendered with one entry per archive of
// those platforms.
func TestClaims_PluginPlatformsAreTheReleasePlatforms(t *testing.T) {
	mk := readFile(t, repoPath("hack", "make", "release.mk"))
	m := regexp.MustCompile(`(?m)^PLUGIN_PLATFORMS \?= (.+)$`).FindStringSubmatch(mk)
	require.NotNil(t, m)
	var platforms []string
	for _, p := range strings.Fields(m[1]) {
		platforms = append(platforms, strings.ReplaceAll(p, "/", "-"))
	}

	doc := normalized("PLUGIN.md", readFile(t, repoPath("docs", "PLUGIN.md")))
	i := strings.Index(doc, "`kubectl-router-<version>-<os>-<arch>.tar.gz` for your machine (")
	require.GreaterOrEqual(t, i, 0)
	list := doc[i:]
	list = list[strings.Index(list, "(")+1 : strings.Index(list, ")")]
	named := regexp.MustCompile("`([a-z0-9]+-[a-z0-9]+)`").FindAllStringSubmatch(list, -1)
	var documented []string
	for _, n := range named {
		documented = append(documented, n[1])
	}
	assert.Equal(t, platforms, documented, "PLUGIN.md's archives are the release's PLUGIN_PLATFORMS")

	assert.Regexp(t, `krew-manifest --template=hack/krew/router\.yaml .*\n.*\$\(foreach p,\$\(PLUGIN_PLATFORMS\),--archive=`, mk,
		"the release renders the krew manifest with one archive per PLUGIN_PLATFORMS entry")
	assert.Contains(t, readFile(t, repoPath("hack", "krew", "router.yaml")), "{{- range .Platforms }}", "the manifest lists every archive it is given")
}

// TestClaims_FiguresAreTheCodes: times and limits the docs and the values' comments state are
// the code's defaults.
func TestClaims_FiguresAreTheCodes(t *testing.T) {
	// PLUGIN.md's guard and budget figures.
	assert.Equal(t, 30*time.Second, guard.DefaultSettings.Window, "--deletion-guard-window, 30 s")
	assert.Equal(t, 10, guard.DefaultSettings.Minimum, "it trips at 10 or more")
	assert.InDelta(t, 0.25, guard.DefaultSettings.Share, 1e-9, "and over 25%")
	assert.Equal(t, 5*time.Second, guard.DefaultSettings.Observe, "they proceed after 5s")
	assert.Equal(t, 1000000, decide.DefaultIstioGatewayBudget, "of 1000000 bytes")
	assert.Equal(t, 64, desired.MaxListeners, "64 of 64 listeners")
	assert.Equal(t, 5*time.Minute, budget.RateWindow, "a minute over its last window of about 5 minutes")

	// INSTALLATION.md: a missing optional API is looked for again every 10 seconds.
	assert.Regexp(t, `(?m)^const apiPollInterval = 10 \* time\.Second$`, readFile(t, repoPath("controllers", "optional_apis.go")),
		"the operator starts using a CRD within 10 seconds of its installation")

	// values.yaml: the Lease the chart leaves at the manager's default, and GOMEMLIMIT.
	assert.Contains(t, readFile(t, repoPath("main.go")), `"leader-elect-lease-duration", 15*time.Second,`, "its 15 s Lease")
	assert.NotContains(t, readFile(t, repoPath(chartPath, "templates", "deployment.yaml")), "lease-duration", "the chart keeps the default Lease")

	var values struct {
		GoMemLimit string `json:"goMemLimit"`
		Resources  struct {
			Limits struct {
				Memory string `json:"memory"`
			} `json:"limits"`
		} `json:"resources"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath(chartPath, "values.yaml"))), &values))
	limit := mebibytes(t, values.Resources.Limits.Memory)
	soft := mebibytes(t, values.GoMemLimit)
	assert.InDelta(t, 0.8, soft/limit, 0.05, "goMemLimit %s is about 80 %% of resources.limits.memory %s", values.GoMemLimit, values.Resources.Limits.Memory)
}

// TestClaims_ReleaseVersionIsTheMakefiles: the version the chart's README installs and PLUGIN.md's
// workflow downloads is the Makefile's VERSION (the next release, stamped everywhere).
func TestClaims_ReleaseVersionIsTheMakefiles(t *testing.T) {
	version := makefileVersion(t)
	readme := normalized("README.md", readFile(t, repoPath(chartPath, "README.md")))
	assert.Contains(t, readme, "IMG=registry.example.com/service-router-operator:v"+version)
	assert.Contains(t, readme, "--version "+version+" ")
	assert.Contains(t, readFile(t, repoPath("docs", "PLUGIN.md")), "VERSION: "+version+" # the operator's version in the cluster")
}

// mebibytes reads a Kubernetes quantity (Mi, Gi) or a GOMEMLIMIT (MiB, GiB) in MiB.
func mebibytes(t *testing.T, q string) float64 {
	t.Helper()
	m := regexp.MustCompile(`^(\d+)(Mi|MiB|Gi|GiB)$`).FindStringSubmatch(q)
	require.NotNil(t, m, "quantity %q", q)
	n := 0.0
	for _, c := range m[1] {
		n = n*10 + float64(c-'0')
	}
	if strings.HasPrefix(m[2], "G") {
		n *= 1024
	}
	return n
}
