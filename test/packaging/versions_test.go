package packaging

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// makefileVersion returns VERSION of the Makefile, the version `make bundle` and `make image`
// stamp.
func makefileVersion(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^VERSION \?= (\S+)$`).FindStringSubmatch(readFile(t, repoPath("Makefile")))
	require.NotNil(t, m, "the Makefile sets no VERSION")
	return m[1]
}

// release is a version x.y.z as three numbers, for ordering.
type release [3]int

func parseRelease(t *testing.T, v string) release {
	t.Helper()
	parts := strings.Split(v, ".")
	require.Len(t, parts, 3, "version %q is not x.y.z", v)
	var r release
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		require.NoError(t, err, "version %q", v)
		r[i] = n
	}
	return r
}

func (r release) less(o release) bool {
	for i := range r {
		if r[i] != o[i] {
			return r[i] < o[i]
		}
	}
	return false
}

// TestVersions_OneNumberEverywhere: the image, the chart and the OLM bundle are released together
// under one version (docs/INSTALLATION.md#versions), so a chart version names one operator image
// and one bundle, and the bundle says which releases it upgrades.
func TestVersions_OneNumberEverywhere(t *testing.T) {
	version := makefileVersion(t)
	current := parseRelease(t, version)

	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath(chartPath, "Chart.yaml"))), &chart))
	assert.Equal(t, version, chart.Version, "Chart.yaml version")
	assert.Equal(t, version, chart.AppVersion, "Chart.yaml appVersion (the default image tag is v<appVersion>)")

	var manager struct {
		Images []struct {
			NewTag string `json:"newTag"`
		} `json:"images"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath("config", "manager", "kustomization.yaml"))), &manager))
	require.Len(t, manager.Images, 1)
	assert.Equal(t, "v"+version, manager.Images[0].NewTag, "config/manager's image tag (set by `make bundle`)")

	csv := loadCSV(t)
	const fix = "set VERSION, spec.replaces and olm.skipRange in config/manifests/bases, then run `make bundle`"
	assert.Equal(t, "service-router-operator.v"+version, csv.Name, fix)
	assert.Equal(t, version, csv.Spec.Version.String(), fix)
	assert.True(t, strings.HasSuffix(csv.Annotations["containerImage"], ":v"+version), "containerImage %s", csv.Annotations["containerImage"])

	// The CSV replaces the previous release, and skips every version from the start of the
	// range up to its own, so that OLM upgrades any of them in one step.
	replaced, ok := strings.CutPrefix(csv.Spec.Replaces, "service-router-operator.v")
	require.True(t, ok, "spec.replaces %q names no earlier release of the package; %s", csv.Spec.Replaces, fix)
	previous := parseRelease(t, replaced)
	assert.True(t, previous.less(current), "spec.replaces %s is not older than %s", replaced, version)

	skipRange := csv.Annotations["olm.skipRange"]
	m := regexp.MustCompile(`^>=(\d+\.\d+\.\d+) <(\d+\.\d+\.\d+)$`).FindStringSubmatch(skipRange)
	require.NotNil(t, m, "olm.skipRange %q is not '>=x.y.z <version'; %s", skipRange, fix)
	assert.Equal(t, version, m[2], "olm.skipRange ends at the CSV's own version")
	from := parseRelease(t, m[1])
	assert.False(t, previous.less(from), "olm.skipRange %s covers the replaced release %s", skipRange, replaced)
}
