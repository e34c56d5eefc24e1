package packaging

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// promtoolBinary returns bin/promtool, or fails the test saying how to get it.
func promtoolBinary(t *testing.T) string {
	t.Helper()
	path := repoPath("bin", "promtool")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s not found: run `make test` (it builds bin/promtool from the Go module proxy) or `make promtool`", path)
	}
	return path
}

// promtool runs bin/promtool in dir and fails the test with its output when it fails.
func promtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtoolBinary(t), args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "promtool %s:\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// ruleTests is the part of a promtool rule test file the coverage check reads.
type ruleTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name           string `json:"name"`
		AlertRuleTests []struct {
			Alertname string           `json:"alertname"`
			ExpAlerts []map[string]any `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// alertNames returns the names of the alerts of a Prometheus rule file.
func alertNames(t *testing.T, data []byte) []string {
	t.Helper()
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(data, &rules))
	var names []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
		}
	}
	return names
}

// TestAlertRules_UnitTestsPass runs config/prometheus/rules_test.yaml with promtool: every alert
// fires, with its labels and rendered annotations, when its condition lasts, and stays silent
// otherwise.
func TestAlertRules_UnitTestsPass(t *testing.T) {
	dir := repoPath("config", "prometheus")
	promtool(t, dir, "check", "rules", "rules.yaml")
	out := promtool(t, dir, "test", "rules", "rules_test.yaml")
	assert.Contains(t, out, "SUCCESS")
}

// TestAlertRules_EveryAlertFiresAndStaysSilentInATest: the unit tests cover every alert of
// rules.yaml both ways, so a new alert cannot land untested.
func TestAlertRules_EveryAlertFiresAndStaysSilentInATest(t *testing.T) {
	var tests ruleTests
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath("config", "prometheus", "rules_test.yaml"))), &tests))
	require.Equal(t, []string{"rules.yaml"}, tests.RuleFiles)
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, test := range tests.Tests {
		for _, c := range test.AlertRuleTests {
			if len(c.ExpAlerts) > 0 {
				fires[c.Alertname] = true
			} else {
				silent[c.Alertname] = true
			}
		}
	}
	alerts := alertNames(t, []byte(readFile(t, repoPath("config", "prometheus", "rules.yaml"))))
	require.NotEmpty(t, alerts)
	for _, alert := range alerts {
		assert.True(t, fires[alert], "no test in rules_test.yaml expects %s to fire", alert)
		assert.True(t, silent[alert], "no test in rules_test.yaml expects %s to stay silent", alert)
	}
	for name := range fires {
		assert.Contains(t, alerts, name, "rules_test.yaml tests %s, which rules.yaml does not have", name)
	}
}

// TestChart_PrometheusRuleBehavesLikeTheSource runs the same unit tests against the rules the chart
// renders: Helm's round trip through fromYaml and toYaml keeps every expression, duration and
// Prometheus template ({{ $labels }}, {{ $value }}, query) intact.
func TestChart_PrometheusRuleBehavesLikeTheSource(t *testing.T) {
	rule := findObject(t, renderChart(t, "--set", "metrics.prometheusRule.enabled=true"), "PrometheusRule", releaseName)
	spec, err := yaml.Marshal(rule.Object["spec"])
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), spec, 0o600))
	tests := readFile(t, repoPath("config", "prometheus", "rules_test.yaml"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules_test.yaml"), []byte(tests), 0o600))
	promtool(t, dir, "check", "rules", "rules.yaml")
	promtool(t, dir, "test", "rules", "rules_test.yaml")
}

// TestChart_PrometheusRuleDisablesAlertsAndAddsLabels: disabledAlerts leaves those alerts out,
// additionalRuleLabels reaches every remaining alert without replacing its severity, and the
// result is still a valid rule file.
func TestChart_PrometheusRuleDisablesAlertsAndAddsLabels(t *testing.T) {
	all := alertNames(t, []byte(readFile(t, repoPath("config", "prometheus", "rules.yaml"))))
	rule := findObject(t, renderChart(t, "--set", "metrics.prometheusRule.enabled=true",
		"--set", "metrics.prometheusRule.disabledAlerts={ServiceRouterWorkqueueBacklog,ServiceRouterHostnameConflict}",
		"--set", "metrics.prometheusRule.additionalRuleLabels.team=platform",
		"--set", "metrics.prometheusRule.additionalRuleLabels.severity=page"), "PrometheusRule", releaseName)
	spec, err := yaml.Marshal(rule.Object["spec"])
	require.NoError(t, err)

	got := alertNames(t, spec)
	assert.NotContains(t, got, "ServiceRouterWorkqueueBacklog")
	assert.NotContains(t, got, "ServiceRouterHostnameConflict")
	assert.Len(t, got, len(all)-2, "only the disabled alerts are left out")

	var rendered struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `json:"alert"`
				Labels map[string]string `json:"labels"`
			} `json:"rules"`
		} `json:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(spec, &rendered))
	for _, g := range rendered.Groups {
		for _, r := range g.Rules {
			assert.Equal(t, "platform", r.Labels["team"], "labels of %s", r.Alert)
			assert.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], "%s keeps its own severity", r.Alert)
		}
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), spec, 0o600))
	promtool(t, dir, "check", "rules", "rules.yaml")
}

func TestChart_PrometheusRuleRejectsAnUnknownAlertName(t *testing.T) {
	_, err := helm(t, "template", releaseName, chartPath, "--kube-version", renderKubeVersion,
		"--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.prometheusRule.disabledAlerts={ServiceRouterOperatorDwn}")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ServiceRouterOperatorDwn is not an alert of this chart")
	assert.Contains(t, err.Error(), "ServiceRouterOperatorDown", "the message lists the alerts")
}

// TestChart_ServiceMonitorAuthenticatesWithAScraperToken: the ServiceMonitor sends, through
// authorization.credentials (not the deprecated bearerTokenFile), the token of a service account
// that may only read /metrics; the account, its token Secret and the ServiceMonitor live in the
// namespace the values name, and relabelings pass through.
func TestChart_ServiceMonitorAuthenticatesWithAScraperToken(t *testing.T) {
	objs := renderChart(t, "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.namespace=monitoring",
		"--set", "metrics.serviceMonitor.labels.release=prom",
		"--set-json", `metrics.serviceMonitor.relabelings=[{"targetLabel":"cluster","replacement":"aks01"}]`,
		"--set-json", `metrics.serviceMonitor.metricRelabelings=[{"sourceLabels":["__name__"],"regex":"rest_client_.*","action":"drop"}]`)
	scraper := releaseName + "-metrics-scraper"

	sm := findObject(t, objs, "ServiceMonitor", releaseName)
	assert.Equal(t, "monitoring", sm.GetNamespace())
	assert.Equal(t, "prom", sm.GetLabels()["release"])
	ep := endpointOf(t, sm)
	assert.NotContains(t, ep, "bearerTokenFile")
	assert.Equal(t, map[string]any{"type": "Bearer", "credentials": map[string]any{"name": scraper + "-token", "key": "token"}}, ep["authorization"])
	assert.Equal(t, []any{map[string]any{"targetLabel": "cluster", "replacement": "aks01"}}, ep["relabelings"])
	assert.Len(t, ep["metricRelabelings"], 1)
	namespaces, _ := sm.Object["spec"].(map[string]any)["namespaceSelector"].(map[string]any)["matchNames"].([]any)
	assert.Equal(t, []any{releaseNamespace}, namespaces, "the ServiceMonitor selects the metrics Service in the release namespace")

	sa := findObject(t, objs, "ServiceAccount", scraper)
	assert.Equal(t, "monitoring", sa.GetNamespace())
	secret := findObject(t, objs, "Secret", scraper+"-token")
	assert.Equal(t, "monitoring", secret.GetNamespace(), "the Prometheus Operator reads credentials from the ServiceMonitor's namespace")
	assert.Equal(t, "kubernetes.io/service-account-token", secret.Object["type"])
	assert.Equal(t, scraper, secret.GetAnnotations()["kubernetes.io/service-account.name"])
	binding := findObject(t, objs, "ClusterRoleBinding", scraper)
	assert.Equal(t, releaseName+"-metrics-reader", binding.Object["roleRef"].(map[string]any)["name"])
	assert.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": scraper, "namespace": "monitoring"}}, binding.Object["subjects"])
	reader := findObject(t, objs, "ClusterRole", releaseName+"-metrics-reader")
	assert.Equal(t, []any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}, reader.Object["rules"],
		"the scraper's token may read /metrics and nothing else")
}

func TestChart_ServiceMonitorWithOwnCredentialsOrPlainHTTP(t *testing.T) {
	objs := renderChart(t, "--set", "metrics.serviceMonitor.enabled=true",
		"--set", "metrics.serviceMonitor.credentialsSecret.name=prometheus-token", "--set", "metrics.serviceMonitor.credentialsSecret.key=jwt")
	ep := endpointOf(t, findObject(t, objs, "ServiceMonitor", releaseName))
	assert.Equal(t, map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prometheus-token", "key": "jwt"}}, ep["authorization"])
	for _, kind := range []string{"ServiceAccount", "Secret", "ClusterRoleBinding"} {
		for _, obj := range objectsOfKind(objs, kind) {
			assert.NotContains(t, obj.GetName(), "metrics-scraper", "no scraper %s with credentials of your own", kind)
		}
	}

	objs = renderChart(t, "--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.secure=false")
	ep = endpointOf(t, findObject(t, objs, "ServiceMonitor", releaseName))
	assert.Equal(t, "http", ep["scheme"])
	assert.NotContains(t, ep, "authorization", "plain HTTP needs no token")
	for _, obj := range objs {
		assert.NotContains(t, obj.GetName(), "metrics-scraper", fmt.Sprintf("no %s for plain HTTP", obj.GetKind()))
	}
}

// endpointOf returns the one endpoint of a ServiceMonitor.
func endpointOf(t *testing.T, sm interface{ UnstructuredContent() map[string]any }) map[string]any {
	t.Helper()
	endpoints, _ := sm.UnstructuredContent()["spec"].(map[string]any)["endpoints"].([]any)
	require.Len(t, endpoints, 1)
	return endpoints[0].(map[string]any)
}
