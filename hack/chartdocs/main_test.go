package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sampleValues = `# Values of a chart. This header documents nothing.

# -- Number of replicas.
replicaCount: 2

image:
  # -- Image repository.
  repository: ghcr.io/example/app
  # -- Image tag, for example v1.2|3.
  # Defaults to the chart's appVersion.
  tag: ""
  pullPolicy: IfNotPresent

# A section comment.

# -- Resources of the container,
# as one value.
resources:
  limits:
    memory: 64Mi

podSecurityContext: {}
  # runAsUser: 65532

# -- Extra arguments.
extraArgs: []
`

func TestValueRows_DescribedKeysUndescribedLeavesAndMaps(t *testing.T) {
	rows, err := valueRows([]byte(sampleValues))
	require.NoError(t, err)
	assert.Equal(t, []row{
		{"replicaCount", "int", "2", "Number of replicas."},
		{"image.repository", "string", `"ghcr.io/example/app"`, "Image repository."},
		{"image.tag", "string", `""`, "Image tag, for example v1.2|3. Defaults to the chart's appVersion."},
		{"image.pullPolicy", "string", `"IfNotPresent"`, ""},
		{"resources", "object", `{"limits":{"memory":"64Mi"}}`, "Resources of the container, as one value."},
		{"podSecurityContext", "object", "{}", ""},
		{"extraArgs", "list", "[]", "Extra arguments."},
	}, rows)
}

func TestRenderTable_EscapesPipesAndBackticks(t *testing.T) {
	table := renderTable([]row{{"a.b", "string", "\"x|`y`\"", "one | two"}})
	assert.Equal(t, "| Key | Type | Default | Description |\n| --- | --- | --- | --- |\n"+
		"| `a.b` | string | ``\"x\\|`y`\"`` | one \\| two |\n", table)
}

func TestRun_WritesThenChecks(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "values.yaml"), []byte(sampleValues), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte(beginMarker+"\n"+endMarker+"\n"), 0o644))

	err := run(dir, true)
	require.Error(t, err, "an out-of-date README fails the check")
	assert.Contains(t, err.Error(), "make chart-docs")

	require.NoError(t, run(dir, false))
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "| `image.pullPolicy` | string | `\"IfNotPresent\"` |  |")
	require.NoError(t, run(dir, true), "the written README passes the check")

	// A value added later is listed without any change to the generator.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "values.yaml"), []byte(sampleValues+"newValue:\n  nested: true\n"), 0o644))
	require.Error(t, run(dir, true))
	require.NoError(t, run(dir, false))
	readme, err = os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(readme), "| `newValue.nested` | bool | `true` |  |"), string(readme))
}

// The chart's README documents its values.yaml as it is (`make chart-docs` regenerates it).
func TestChartREADME_DocumentsTheCurrentValues(t *testing.T) {
	require.NoError(t, run(filepath.Join("..", "..", "charts", "service-router-operator"), true))
}
