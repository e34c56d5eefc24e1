package packaging

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// valuesSchema is the part of a JSON schema the chart's values.schema.json uses to describe
// nested values.
type valuesSchema struct {
	Properties           map[string]*valuesSchema `json:"properties"`
	AdditionalProperties json.RawMessage          `json:"additionalProperties"`
}

// resolves reports whether path names a value the chart's schema accepts: a declared property at
// every step, or the inside of a free-form object (annotations, resources).
func (s *valuesSchema) resolves(path []string) bool {
	node := s
	for _, segment := range path {
		if next, ok := node.Properties[segment]; ok {
			node = next
			continue
		}
		switch extra := strings.TrimSpace(string(node.AdditionalProperties)); {
		case extra == "false":
			return false
		case strings.HasPrefix(extra, "{"):
			next := &valuesSchema{}
			if err := json.Unmarshal(node.AdditionalProperties, next); err != nil {
				return false
			}
			node = next
		case len(node.Properties) == 0:
			return true // an object without a declared shape
		default:
			return false
		}
	}
	return true
}

// valuePathInCode matches a dotted chart value path (optionally =value) inside inline code.
var valuePathInCode = regexp.MustCompile(`^([a-zA-Z][a-zA-Z0-9]*(?:\.[a-zA-Z][a-zA-Z0-9]*)+)(?:=.*)?$`)

// chartValuePaths returns the dotted paths written in text's inline code (`metrics.secure=false`,
// `installChecks.dnsEndpointCRD`) whose first part is a top-level value of the chart.
func chartValuePaths(text string, topLevel map[string]any) []string {
	var paths []string
	for _, code := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(text, -1) {
		for _, token := range strings.Fields(code[1]) {
			m := valuePathInCode.FindStringSubmatch(strings.Trim(token, "(),;"))
			if m == nil {
				continue
			}
			if _, ok := topLevel[strings.Split(m[1], ".")[0]]; ok {
				paths = append(paths, m[1])
			}
		}
	}
	return paths
}

// TestDocs_ChartValuesTheDocsNameExist: every chart value the documentation names (in inline
// code, as users type them into --set or a values file) is one the chart's schema accepts, so a
// renamed or removed value cannot leave the docs telling users to set something the chart rejects
// or, worse for a free-form parent, silently ignores.
func TestDocs_ChartValuesTheDocsNameExist(t *testing.T) {
	topLevel := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath(chartPath, "values.yaml"))), &topLevel))
	schema := &valuesSchema{}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, repoPath(chartPath, "values.schema.json"))), schema))

	// The check can fail: a misspelt nested key is not accepted.
	require.False(t, schema.resolves(strings.Split("metrics.serviceMonitor.enable", ".")))
	require.True(t, schema.resolves(strings.Split("metrics.serviceMonitor.enabled", ".")))

	docs, err := filepath.Glob(repoPath("docs", "*.md"))
	require.NoError(t, err)
	docs = append(docs, repoPath("README.md"), repoPath(chartPath, "templates", "NOTES.txt"))
	checked := 0
	for _, doc := range docs {
		rel, _ := filepath.Rel(repoRoot, doc)
		for _, path := range chartValuePaths(readFile(t, doc), topLevel) {
			checked++
			assert.True(t, schema.resolves(strings.Split(path, ".")), "%s names the chart value %s, which values.schema.json does not accept", rel, path)
		}
	}
	// The guides name a few dozen values; far fewer means the extraction stopped finding them.
	assert.Greater(t, checked, 15, "chart values found in the docs")
}
