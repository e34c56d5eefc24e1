package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun_TheGuideDescribesTheDashboardAsItIs keeps docs/OPERATOR-GUIDE.md#dashboard true to the
// dashboard: it fails, as `make verify` would, when the JSON changed and the guide was not
// regenerated.
func TestRun_TheGuideDescribesTheDashboardAsItIs(t *testing.T) {
	require.NoError(t, run(filepath.Join("..", "..", defaultDashboard), filepath.Join("..", "..", defaultDoc), true))
}

func TestRows(t *testing.T) {
	at := func(p panel, x, y int) panel {
		p.GridPos.X, p.GridPos.Y = x, y
		return p
	}
	for _, tc := range []struct {
		name   string
		panels []panel
		want   [][]string // per row: its title, then its panels' titles
	}{
		{
			name: "expanded rows take the panels below them",
			panels: []panel{
				at(panel{Type: "row", Title: "One"}, 0, 0), at(panel{Title: "a"}, 0, 1), at(panel{Title: "b"}, 12, 1),
				at(panel{Type: "row", Title: "Two"}, 0, 9), at(panel{Title: "c"}, 0, 10),
			},
			want: [][]string{{"One", "a", "b"}, {"Two", "c"}},
		},
		{
			name: "in the order of the grid, not of the JSON",
			panels: []panel{
				at(panel{Title: "right"}, 12, 1), at(panel{Type: "row", Title: "One"}, 0, 0), at(panel{Title: "below"}, 0, 9),
				at(panel{Title: "left"}, 0, 1),
			},
			want: [][]string{{"One", "left", "right", "below"}},
		},
		{
			name: "a collapsed row holds its own panels",
			panels: []panel{
				at(panel{Type: "row", Title: "Open"}, 0, 0), at(panel{Title: "a"}, 0, 1),
				at(panel{Type: "row", Title: "Shut", Panels: []panel{at(panel{Title: "y"}, 8, 3), at(panel{Title: "x"}, 0, 3)}}, 0, 2),
			},
			want: [][]string{{"Open", "a"}, {"Shut", "x", "y"}},
		},
		{
			name:   "panels above the first row form a row without a title",
			panels: []panel{at(panel{Title: "top"}, 0, 0), at(panel{Type: "row", Title: "One"}, 0, 4), at(panel{Title: "a"}, 0, 5)},
			want:   [][]string{{"", "top"}, {"One", "a"}},
		},
		{name: "no panels", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]string
			for _, r := range rows(tc.panels) {
				titles := []string{r.Title}
				for _, p := range r.Panels {
					titles = append(titles, p.Title)
				}
				got = append(got, titles)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMeaning(t *testing.T) {
	var mapped panel
	require.NoError(t, json.Unmarshal([]byte(`{"description": "Outcome of the last reconcile", "fieldConfig": {"defaults": {"mappings": [
		{"type": "value", "options": {"0": {"text": "Error", "index": 1}, "1": {"text": "OK", "index": 0}}},
		{"type": "range", "options": {"from": 2, "to": 9, "result": {"text": "many"}}}]}}}`), &mapped))
	for _, tc := range []struct {
		name string
		p    panel
		want string
	}{
		{"the description", panel{Description: " Reconciles that returned an error. "}, "Reconciles that returned an error."},
		{"value mappings in their order, other mappings left out", mapped, "Outcome of the last reconcile. Values: 1 OK, 0 Error."},
		{"none", panel{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, meaning(tc.p)) })
	}
}

func TestQueries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets []target
		want    string
	}{
		{"one query, as code on one line", []target{{RefID: "A", Expr: "sum by (controller) (\n  rate(x_total[5m])\n)", LegendFormat: "{{controller}}"}},
			"`sum by (controller) ( rate(x_total[5m]) )`"},
		{"several, named by legend or refId", []target{{RefID: "A", Expr: "a", LegendFormat: "p99"}, {RefID: "B", Expr: "b"}},
			"p99: `a`<br>B: `b`"},
		{"several without legend or refId", []target{{Expr: "a"}, {Expr: "b"}}, "query 1: `a`<br>query 2: `b`"},
		{"hidden and empty queries left out", []target{{RefID: "A", Expr: "a", Hide: true}, {RefID: "B", Expr: " "}, {RefID: "C", Expr: "c"}},
			"`c`"},
		{"pipes escaped, backticks fenced", []target{{RefID: "A", Expr: `label_replace(x, "a", "$1", "b", "(c|d)")`}, {RefID: "B", Expr: "`raw`"}},
			"A: `label_replace(x, \"a\", \"$1\", \"b\", \"(c\\|d)\")`<br>B: `` `raw` ``"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, queries(tc.targets)) })
	}
}

func TestUnitName(t *testing.T) {
	for id, want := range map[string]string{"": "—", "s": "seconds", "reqps": "requests/s", "ops": "per second", "decbytes": "decbytes"} {
		assert.Equal(t, want, unitName(id), "unit %q", id)
	}
}

func TestRun_WritesThenChecks(t *testing.T) {
	dir := t.TempDir()
	dashboardPath, docPath := filepath.Join(dir, "dashboard.json"), filepath.Join(dir, "GUIDE.md")
	require.NoError(t, os.WriteFile(dashboardPath, []byte(`{"panels": [
		{"type": "row", "title": "Operator", "gridPos": {"x": 0, "y": 0}},
		{"type": "stat", "title": "Up | down", "description": "Replicas.", "gridPos": {"x": 0, "y": 1},
		 "fieldConfig": {"defaults": {"unit": "short"}}, "targets": [{"refId": "A", "expr": "count(up)"}]}]}`), 0o644))
	require.NoError(t, os.WriteFile(docPath, []byte("# Guide\n\n"+beginMarker+"\n"+endMarker+"\n"), 0o644))

	err := run(dashboardPath, docPath, true)
	require.Error(t, err, "an out-of-date guide fails the check")
	assert.Contains(t, err.Error(), "make dashboard-docs")

	require.NoError(t, run(dashboardPath, docPath, false))
	written, err := os.ReadFile(docPath)
	require.NoError(t, err)
	assert.Contains(t, string(written), "**Operator**\n\n| Panel | Type | Unit | What it tells you | Query |\n| --- | --- | --- | --- | --- |\n"+
		"| Up \\| down | stat | count | Replicas. | `count(up)` |\n\n"+endMarker)
	require.NoError(t, run(dashboardPath, docPath, true), "the check passes on what run wrote")
	assert.True(t, strings.HasPrefix(string(written), "# Guide\n\n"+beginMarker+"\n"))
}
