package packaging

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
)

// rbacTableSection is the heading of docs/INSTALLATION.md whose tables document the operator's
// ClusterRoles rule by rule: the first is config/rbac/role.yaml, the second
// config/rbac/metrics_auth_role.yaml.
const rbacTableSection = "### What the operator's ClusterRole grants, and why"

// writeVerbs are the verbs that change objects: a documented rule holding one needs a reason.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// rbacTableRow is one row of a documented RBAC table: a rule and why it is granted.
type rbacTableRow struct {
	line   int // in the document, from 1
	rule   rbacv1.PolicyRule
	reason string
}

// codeSpans returns the contents of the inline code spans of a table cell; `""` is the core
// group.
func codeSpans(cell string) []string {
	var out []string
	parts := strings.Split(cell, "`")
	for i := 1; i < len(parts); i += 2 {
		s := parts[i]
		if s == `""` {
			s = ""
		}
		out = append(out, s)
	}
	return out
}

// rbacTables returns the Markdown tables of the section headed heading in markdown (up to the
// next heading of its level or above), each as its rows. Every table must have the columns API
// group, Resources, Verbs and Why.
func rbacTables(markdown, heading string) ([][]rbacTableRow, error) {
	lines := strings.Split(markdown, "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		return nil, fmt.Errorf("no heading %q", heading)
	}
	level := strings.Index(heading, " ")
	var tables [][]rbacTableRow
	var table []rbacTableRow
	inTable := false
	for i := start + 1; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if h := strings.Index(line, " "); h > 0 && h <= level && strings.Trim(line[:h], "#") == "" {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				tables = append(tables, table)
				table, inTable = nil, false
			}
			continue
		}
		cells := strings.Split(strings.Trim(strings.ReplaceAll(line, `\|`, "\x00"), "|"), "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(strings.ReplaceAll(cells[j], "\x00", "|"))
		}
		if !inTable {
			if want := []string{"API group", "Resources", "Verbs", "Why"}; !slices.Equal(cells, want) {
				return nil, fmt.Errorf("line %d: a table of %q must have the columns %q, has %q", i+1, heading, want, cells)
			}
			inTable = true
			continue
		}
		if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue // the delimiter row
		}
		if len(cells) != 4 {
			return nil, fmt.Errorf("line %d: %d cells, want 4", i+1, len(cells))
		}
		table = append(table, rbacTableRow{line: i + 1, reason: cells[3], rule: rbacv1.PolicyRule{
			APIGroups: codeSpans(cells[0]), Resources: codeSpans(cells[1]), Verbs: codeSpans(cells[2]),
		}})
	}
	if inTable {
		tables = append(tables, table)
	}
	return tables, nil
}

// ruleKey says a rule in one line, its groups, resources and verbs sorted.
func ruleKey(r rbacv1.PolicyRule) string {
	sorted := func(s []string) string {
		s = slices.Clone(s)
		slices.Sort(s)
		for i := range s {
			if s[i] == "" {
				s[i] = `""`
			}
		}
		return strings.Join(s, ",")
	}
	return fmt.Sprintf("groups [%s] resources [%s] verbs [%s]", sorted(r.APIGroups), sorted(r.Resources), sorted(r.Verbs))
}

// grants lists the (group, resource, verb) triples of rules.
func grants(rules []rbacv1.PolicyRule) map[string]bool {
	out := map[string]bool{}
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out[fmt.Sprintf("%s %s/%s", v, g, res)] = true
				}
			}
		}
	}
	return out
}

// rbacTableMismatches compares a documented table with the rules of a role: every grant of one
// must be in the other, every rule must have its own row, and a row granting a write must say why.
func rbacTableMismatches(rows []rbacTableRow, rules []rbacv1.PolicyRule, source string) []string {
	var problems []string
	var documented []rbacv1.PolicyRule
	for _, row := range rows {
		documented = append(documented, row.rule)
		if slices.ContainsFunc(row.rule.Verbs, func(v string) bool { return slices.Contains(writeVerbs, v) }) && row.reason == "" {
			problems = append(problems, fmt.Sprintf("line %d (%s) grants a write and gives no reason", row.line, ruleKey(row.rule)))
		}
	}
	want, got := grants(rules), grants(documented)
	for _, g := range sortedKeys(want) {
		if !got[g] {
			problems = append(problems, fmt.Sprintf("%s grants %s; the table does not say so", source, g))
		}
	}
	for _, g := range sortedKeys(got) {
		if !want[g] {
			problems = append(problems, fmt.Sprintf("the table says the operator may %s; %s does not grant it", g, source))
		}
	}
	ruleKeys := func(rs []rbacv1.PolicyRule) (keys []string) {
		for _, r := range rs {
			keys = append(keys, ruleKey(r))
		}
		return keys
	}
	wantRules, gotRules := ruleKeys(rules), ruleKeys(documented)
	for _, k := range wantRules {
		if !slices.Contains(gotRules, k) {
			problems = append(problems, fmt.Sprintf("the rule %s of %s has no row of its own", k, source))
		}
	}
	for _, k := range gotRules {
		if !slices.Contains(wantRules, k) {
			problems = append(problems, fmt.Sprintf("the row %s is no rule of %s", k, source))
		}
	}
	return problems
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestDocs_OperatorRBACTablesAreTheClusterRoles: docs/INSTALLATION.md documents the operator's
// ClusterRoles rule by rule, each write with its reason; a marker added, removed or changed in
// controllers/ (and so in config/rbac/role.yaml, the chart and the CSV, which other tests keep
// equal to it) fails here until the table says so.
func TestDocs_OperatorRBACTablesAreTheClusterRoles(t *testing.T) {
	requireOperatorRole(t)
	tables, err := rbacTables(readFile(t, repoPath("docs", "INSTALLATION.md")), rbacTableSection)
	require.NoError(t, err)
	sources := []string{"role.yaml", "metrics_auth_role.yaml"}
	require.Len(t, tables, len(sources), "docs/INSTALLATION.md, %q: one table per ClusterRole of the operator, in the order %v", rbacTableSection, sources)
	for i, source := range sources {
		objs := readObjects(t, "config", "rbac", source)
		require.Len(t, objs, 1, "config/rbac/%s must hold one object", source)
		rules := roleOf(t, objs[0]).Rules
		require.Empty(t, rbacTableMismatches(tables[i], rules, "config/rbac/"+source),
			"table %d of %q in docs/INSTALLATION.md differs from config/rbac/%s: one row per rule (API groups, resources, verbs as in the file), a reason for each write", i+1, rbacTableSection, source)
	}
}

// The comparison finds what it is for: a verb, resource or rule on either side only, and a write
// without a reason.
func TestRBACTableMismatches(t *testing.T) {
	doc := strings.Join([]string{
		"# Doc",
		"## Section",
		"| API group | Resources | Verbs | Why |",
		"| --- | --- | --- | --- |",
		"| `\"\"` (core) | `services` | `get`, `list` | Read only. |",
		"| `example.io` | `things`, `things/status` | `create`, `patch` | Because \\| so. |",
		"",
		"| API group | Resources | Verbs | Why |",
		"| --- | --- | --- | --- |",
		"| `other.io` | `widgets` | `delete` |  |",
		"## Next",
		"| API group | Resources | Verbs | Why |",
	}, "\n")
	tables, err := rbacTables(doc, "## Section")
	require.NoError(t, err)
	require.Len(t, tables, 2, "the table under ## Next is not the section's")
	require.Equal(t, "Because | so.", tables[0][1].reason)

	services := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list", "get"}}
	things := rbacv1.PolicyRule{APIGroups: []string{"example.io"}, Resources: []string{"things/status", "things"}, Verbs: []string{"patch", "create"}}
	require.Empty(t, rbacTableMismatches(tables[0], []rbacv1.PolicyRule{services, things}, "role"))

	watch := services
	watch.Verbs = []string{"get", "list", "watch"}
	require.Equal(t, []string{
		"role grants watch /services; the table does not say so",
		"the rule groups [\"\"] resources [services] verbs [get,list,watch] of role has no row of its own",
		"the row groups [\"\"] resources [services] verbs [get,list] is no rule of role",
	}, rbacTableMismatches(tables[0], []rbacv1.PolicyRule{watch, things}, "role"))

	require.Equal(t, []string{
		"the table says the operator may create example.io/things; role does not grant it",
		"the table says the operator may create example.io/things/status; role does not grant it",
		"the table says the operator may patch example.io/things; role does not grant it",
		"the table says the operator may patch example.io/things/status; role does not grant it",
		"the row groups [example.io] resources [things,things/status] verbs [create,patch] is no rule of role",
	}, rbacTableMismatches(tables[0], []rbacv1.PolicyRule{services}, "role"))

	// The same grants split over other rules: every grant is there, but not one row per rule.
	split := []rbacv1.PolicyRule{services,
		{APIGroups: []string{"example.io"}, Resources: []string{"things"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"example.io"}, Resources: []string{"things/status"}, Verbs: []string{"create", "patch"}}}
	require.Len(t, rbacTableMismatches(tables[0], split, "role"), 3)

	widgets := rbacv1.PolicyRule{APIGroups: []string{"other.io"}, Resources: []string{"widgets"}, Verbs: []string{"delete"}}
	require.Equal(t, []string{"line 10 (groups [other.io] resources [widgets] verbs [delete]) grants a write and gives no reason"},
		rbacTableMismatches(tables[1], []rbacv1.PolicyRule{widgets}, "role"))

	_, err = rbacTables("## Section\n| Group | Resources | Verbs | Why |\n", "## Section")
	require.ErrorContains(t, err, "must have the columns")
}
