package integration

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/service-router/service-router-operator/internal/metrics"
)

// The observability assets: alert rules, dashboard and documentation.
var (
	rulesFile     = filepath.Join("config", "prometheus", "rules.yaml")
	dashboardFile = filepath.Join("config", "grafana", "service-router-operator.json")
	metricsDoc    = filepath.Join("docs", "METRICS.md")
	operatorGuide = filepath.Join("docs", "OPERATOR-GUIDE.md")
)

var promql = parser.NewParser(parser.Options{})

// metricNames returns the metric names a PromQL expression selects.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	parsed, err := promql.ParseExpr(expr)
	require.NoError(t, err, "parsing %s", expr)
	var names []string
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			require.NotEmpty(t, vs.Name, "a selector without a metric name in %s", expr)
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

// checkReferences fails for every referenced metric the operator does not export and returns
// the referenced names.
func checkReferences(t *testing.T, exported map[string]bool, where, expr string) []string {
	t.Helper()
	names := metricNames(t, expr)
	for _, name := range names {
		assert.True(t, exported[name], "%s references %s, which the operator does not export: %s", where, name, expr)
	}
	return names
}

// markdownAnchors returns the GitHub anchors of the headings of a Markdown file.
func markdownAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, path))
	require.NoError(t, err)
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "#") {
			heading := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
			anchors[strings.ReplaceAll(drop.ReplaceAllString(heading, ""), " ", "-")] = true
		}
	}
	return anchors
}

// checkAlertRules parses the rules with Prometheus' own rule parser and checks every alert: its
// expression selects only exported metrics, it has a severity, a summary, a description and a
// runbook_url pointing at a section of docs/OPERATOR-GUIDE.md. It returns the metric names
// the rules reference.
func checkAlertRules(t *testing.T, exported map[string]bool) []string {
	groups, errs := rulefmt.ParseFile(filepath.Join(env.RepoRoot, rulesFile), false, model.LegacyValidation, promql, slog.New(slog.DiscardHandler))
	require.Empty(t, errs, "%s does not parse", rulesFile)
	anchors := markdownAnchors(t, operatorGuide)
	var referenced []string
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			require.NotEmpty(t, r.Alert, "%s has a recording rule; the operator ships alerts only", rulesFile)
			alerts++
			referenced = append(referenced, checkReferences(t, exported, "alert "+r.Alert, r.Expr)...)
			assert.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], "severity of %s", r.Alert)
			for _, a := range []string{"summary", "description", "runbook_url"} {
				assert.NotEmpty(t, r.Annotations[a], "%s has no %s", r.Alert, a)
			}
			prefix := "https://github.com/service-router/service-router-operator/blob/main/docs/OPERATOR-GUIDE.md#"
			anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], prefix)
			if assert.True(t, ok, "runbook_url of %s is not a section of docs/OPERATOR-GUIDE.md", r.Alert) {
				assert.True(t, anchors[anchor], "docs/OPERATOR-GUIDE.md has no section #%s (runbook of %s)", anchor, r.Alert)
			}
		}
	}
	assert.GreaterOrEqual(t, alerts, 8)
	return referenced
}

// grafanaVariables are the built-in Grafana variables the dashboard's queries use, replaced by
// values Prometheus would see.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// labelValuesQuery matches a Grafana label_values(metric, label) variable query.
var labelValuesQuery = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*)[,{]`)

// dashboardPanel is the part of a Grafana panel the check reads.
type dashboardPanel struct {
	Title   string                  `json:"title"`
	Type    string                  `json:"type"`
	Targets []struct{ Expr string } `json:"targets"`
	Panels  []dashboardPanel        `json:"panels"` // of a collapsed row
}

// checkDashboard checks that every query of every panel (and the variable queries) parses and
// selects only exported metrics; it returns the metric names the dashboard references.
func checkDashboard(t *testing.T, exported map[string]bool) []string {
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, dashboardFile))
	require.NoError(t, err)
	var dashboard struct {
		Panels     []dashboardPanel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(data, &dashboard))
	var referenced []string
	queries := 0
	var walk func([]dashboardPanel)
	walk = func(panels []dashboardPanel) {
		for _, p := range panels {
			for _, target := range p.Targets {
				queries++
				referenced = append(referenced, checkReferences(t, exported, "panel "+p.Title, grafanaVariables.Replace(target.Expr))...)
			}
			if p.Type != "row" {
				assert.NotEmpty(t, p.Targets, "panel %s has no query", p.Title)
			}
			walk(p.Panels)
		}
	}
	walk(dashboard.Panels)
	assert.GreaterOrEqual(t, queries, 20)
	for _, v := range dashboard.Templating.List {
		q, ok := v.Query.(map[string]any)
		if !ok {
			continue // the data source variable
		}
		m := labelValuesQuery.FindStringSubmatch(fmt.Sprint(q["query"]))
		require.NotNil(t, m, "variable %s: want a label_values(metric, label) query", v.Name)
		assert.True(t, exported[m[1]], "variable %s references %s, which the operator does not export", v.Name, m[1])
		referenced = append(referenced, m[1])
	}
	return referenced
}

// Markers of the generated table of docs/METRICS.md.
const (
	metricsTableBegin = "<!-- BEGIN service_router metrics: generated from the registry, checked by TestMetrics_Scenario -->"
	metricsTableEnd   = "<!-- END service_router metrics -->"
	standardBegin     = "<!-- BEGIN standard metrics -->"
	standardEnd       = "<!-- END standard metrics -->"
)

// metricsTable renders the service_router_* families of the registry, in the order of
// metrics.Definitions. A definition with no series in the scenario (the Azure Resource Manager
// metrics: its zones are RFC 2136) is rendered from the definition, its labels sorted as the
// registry sorts them; the registry holds nothing metrics.Definitions lacks.
func metricsTable(t *testing.T, families []*dto.MetricFamily) string {
	t.Helper()
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range families {
		if strings.HasPrefix(mf.GetName(), "service_router_") {
			byName[mf.GetName()] = mf
		}
	}
	var defined []string
	for _, d := range metrics.Definitions {
		defined = append(defined, d.Name)
	}
	require.Subset(t, defined, slices.Collect(maps.Keys(byName)), "the registry has service_router_* metrics that metrics.Definitions lacks")
	var b strings.Builder
	b.WriteString("| Metric | Type | Labels | Meaning |\n| --- | --- | --- | --- |\n")
	for _, d := range metrics.Definitions {
		mf, exported := byName[d.Name]
		var labels []string
		if !exported {
			for _, l := range slices.Sorted(slices.Values(d.Labels)) {
				labels = append(labels, "`"+l+"`")
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", d.Name, d.Type, strings.Join(labels, ", "), d.Help)
			continue
		}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			labels = append(labels, "`"+l.GetName()+"`")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", mf.GetName(), strings.ToLower(mf.GetType().String()), strings.Join(labels, ", "), mf.GetHelp())
	}
	return b.String()
}

// between returns the text of doc between two marker lines.
func between(t *testing.T, doc, begin, end string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, begin+"\n")
	require.True(t, ok, "%s has no line %s", metricsDoc, begin)
	inner, _, ok := strings.Cut(rest, end)
	require.True(t, ok, "%s has no line %s", metricsDoc, end)
	return inner
}

// checkMetricsDoc checks that docs/METRICS.md lists exactly the service_router_* metrics of the
// registry, with their type, labels and help, and, as the standard metrics the dashboard and
// alerts use, exactly the other metrics they reference.
func checkMetricsDoc(t *testing.T, families []*dto.MetricFamily, referenced []string) {
	data, err := os.ReadFile(filepath.Join(env.RepoRoot, metricsDoc))
	require.NoError(t, err)
	doc := string(data)
	want := metricsTable(t, families)
	assert.Equal(t, want, between(t, doc, metricsTableBegin, metricsTableEnd),
		"%s is out of date; the table generated from the registry is:\n%s", metricsDoc, want)

	var standard []string
	for _, name := range referenced {
		if !strings.HasPrefix(name, "service_router_") {
			standard = append(standard, name)
		}
	}
	slices.Sort(standard)
	var documented []string
	rows := regexp.MustCompile("(?m)^\\| `([a-z_:]+)` \\| ([a-z]+) \\| ([^|]*) \\|")
	for _, m := range rows.FindAllStringSubmatch(between(t, doc, standardBegin, standardEnd), -1) {
		documented = append(documented, m[1])
		typ, labels := seriesTypeAndLabels(families, m[1])
		assert.Equal(t, typ, m[2], "type of %s in %s", m[1], metricsDoc)
		assert.Equal(t, labels, strings.TrimSpace(m[3]), "labels of %s in %s", m[1], metricsDoc)
	}
	assert.Equal(t, slices.Compact(standard), documented,
		"the standard metrics table of %s must list, sorted, the non-service_router metrics the alerts and dashboard use", metricsDoc)
}

// seriesTypeAndLabels returns the type of the family a series name belongs to and the sorted
// label names of the series, as docs/METRICS.md writes them ("`a`, `b`").
func seriesTypeAndLabels(families []*dto.MetricFamily, series string) (string, string) {
	for _, mf := range families {
		base, isBucket := strings.CutSuffix(series, "_bucket")
		if mf.GetName() != series && !(isBucket && mf.GetName() == base) {
			continue
		}
		names := map[string]bool{}
		if isBucket {
			names["le"] = true
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				names[l.GetName()] = true
			}
		}
		var labels []string
		for _, n := range slices.Sorted(maps.Keys(names)) {
			labels = append(labels, "`"+n+"`")
		}
		return strings.ToLower(mf.GetType().String()), strings.Join(labels, ", ")
	}
	return "", ""
}
