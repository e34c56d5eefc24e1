package packaging

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// rulesSpec reads config/prometheus/rules.yaml, the source of every copy of the alerts.
func rulesSpec(t *testing.T) map[string]any {
	t.Helper()
	spec := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath("config", "prometheus", "rules.yaml"))), &spec))
	require.NotEmpty(t, spec["groups"])
	return spec
}

// TestObservability_CopiesMatchTheirSource: the chart's files and the kustomize PrometheusRule are
// what `make observability` makes of config/prometheus/rules.yaml and
// config/grafana/service-router-operator.json.
func TestObservability_CopiesMatchTheirSource(t *testing.T) {
	for source, copied := range map[string]string{
		repoPath("config", "prometheus", "rules.yaml"):                repoPath(chartPath, "files", "prometheus-rules.yaml"),
		repoPath("config", "grafana", "service-router-operator.json"): repoPath(chartPath, "files", "grafana-dashboard.json"),
	} {
		assert.True(t, readFile(t, source) == readFile(t, copied), "%s differs from %s: run `make observability`", copied, source)
	}
	rule := readObjects(t, "config", "prometheus", "prometheus_rule.yaml")
	require.Len(t, rule, 1)
	assert.Equal(t, "PrometheusRule", rule[0].GetKind())
	assert.Equal(t, rulesSpec(t), rule[0].Object["spec"], "config/prometheus/prometheus_rule.yaml differs from rules.yaml: run `make observability`")
}

func TestChart_AlertsAndDashboardOffByDefault(t *testing.T) {
	objs := renderChart(t)
	assert.Empty(t, objectsOfKind(objs, "PrometheusRule"))
	for _, cm := range objectsOfKind(objs, "ConfigMap") {
		assert.NotContains(t, cm.GetLabels(), "grafana_dashboard")
	}
}

// TestChart_PrometheusRuleAndDashboard renders both with their options: the PrometheusRule holds
// exactly the rules of config/prometheus/rules.yaml ({{ $labels }} templates untouched by Helm) and
// the ConfigMap holds the dashboard, labelled for the Grafana sidecar.
func TestChart_PrometheusRuleAndDashboard(t *testing.T) {
	objs := renderChart(t, "--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.prometheusRule.labels.release=prom",
		"--set", "metrics.grafanaDashboard.enabled=true", "--set", "metrics.grafanaDashboard.namespace=monitoring",
		"--set", "metrics.grafanaDashboard.annotations.grafana_folder=Operators")

	rule := findObject(t, objs, "PrometheusRule", releaseName)
	assert.Equal(t, releaseNamespace, rule.GetNamespace())
	assert.Equal(t, "prom", rule.GetLabels()["release"])
	assert.Equal(t, rulesSpec(t), rule.Object["spec"])
	assert.Contains(t, readFile(t, repoPath("config", "prometheus", "rules.yaml")), "{{ $labels.controller }}",
		"the check above covers Helm leaving Prometheus templates alone only while the rules use them")

	cm := findObject(t, objs, "ConfigMap", releaseName+"-dashboard")
	assert.Equal(t, "monitoring", cm.GetNamespace())
	assert.Equal(t, "1", cm.GetLabels()["grafana_dashboard"])
	assert.Equal(t, "Operators", cm.GetAnnotations()["grafana_folder"])
	data, _, err := unstructured.NestedStringMap(cm.Object, "data")
	require.NoError(t, err)
	assert.Equal(t, strings.TrimRight(readFile(t, repoPath("config", "grafana", "service-router-operator.json")), "\n"), data["service-router-operator.json"])
}

func TestChart_AlertsAndDashboardNeedMetrics(t *testing.T) {
	for _, set := range []string{"metrics.enabled=false,metrics.prometheusRule.enabled=true", "metrics.enabled=false,metrics.grafanaDashboard.enabled=true"} {
		_, err := helm(t, "template", releaseName, chartPath, "--kube-version", renderKubeVersion, "--set", set)
		require.Error(t, err, "--set %s must be rejected", set)
		assert.Contains(t, err.Error(), "needs metrics.enabled=true")
	}
}

// TestDashboard_DataSourceIsAVariableNotAnImportInput keeps docs/OPERATOR-GUIDE.md#dashboard true:
// importing the dashboard asks for no data source (no __inputs, which the chart's Grafana sidecar
// could not fill in either), and every query goes through the Data source variable, which starts
// on Grafana's default Prometheus data source and can be switched on the dashboard.
func TestDashboard_DataSourceIsAVariableNotAnImportInput(t *testing.T) {
	var dashboard struct {
		Inputs     []any `json:"__inputs"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []dashboardPanel `json:"panels"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath("config", "grafana", "service-router-operator.json"))), &dashboard))
	assert.Empty(t, dashboard.Inputs, "the guide says import asks for no data source")
	var variable bool
	for _, v := range dashboard.Templating.List {
		if v.Name == "datasource" {
			variable = v.Type == "datasource" && v.Query == "prometheus"
		}
	}
	require.True(t, variable, "the dashboard has a Prometheus data source variable named datasource")

	want := map[string]any{"type": "prometheus", "uid": "${datasource}"}
	var queries int
	var check func(panels []dashboardPanel)
	check = func(panels []dashboardPanel) {
		for _, p := range panels {
			for _, target := range p.Targets {
				queries++
				assert.Equal(t, want, target.Datasource, "panel %q queries another data source than the variable", p.Title)
			}
			check(p.Panels)
		}
	}
	check(dashboard.Panels)
	assert.Positive(t, queries)
}

type dashboardPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Datasource any `json:"datasource"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}
