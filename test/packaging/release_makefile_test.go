package packaging

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMakefile_ReleaseTargetsBuildWhatTheyRun is TestMakefile_FirstRunTargetsBuildWhatTheyRun for
// the targets of hack/make/release.mk that docs/DEVELOPMENT.md#releasing tells a maintainer (and
// the release workflow) to run on a fresh clone: `make release` needs REGISTRY, so it is dry-run
// with one.
func TestMakefile_ReleaseTargetsBuildWhatTheyRun(t *testing.T) {
	makeBinary, err := exec.LookPath("make")
	require.NoError(t, err, "GNU make is needed to check the Makefile")
	bin := t.TempDir()
	for name, args := range map[string][]string{
		"release":         {"release"},
		"release signed":  {"release", "RELEASE_SIGNING_KEY=env://COSIGN_PRIVATE_KEY"},
		"actionlint":      {"actionlint"},
		"opm":             {"opm"},
		"cosign":          {"cosign"},
		"plugin-archives": {"plugin-archives"},
	} {
		target := args[0]
		t.Run(name, func(t *testing.T) {
			out := makeDryRun(t, makeBinary, append([]string{"BIN=" + bin, "REGISTRY=registry.example.com/owner"}, args...))
			for _, problem := range unbuiltBinaries(out, bin) {
				t.Errorf("make %s on a fresh clone: %s", target, problem)
			}
		})
	}
}

// TestMakefile_PluginArchivesForEveryKubectlPlatform: a release carries the kubectl plugin for
// every platform kubectl users run it on (Linux, macOS on Intel and Apple silicon, Windows), the
// Windows binary named kubectl-router.exe as kubectl looks for it there. The release test builds
// Linux and Windows for real; this dry run checks the rest of the default list.
func TestMakefile_PluginArchivesForEveryKubectlPlatform(t *testing.T) {
	makeBinary, err := exec.LookPath("make")
	require.NoError(t, err, "GNU make is needed to check the Makefile")
	out := makeDryRun(t, makeBinary, []string{"BIN=" + t.TempDir(), "VERSION=1.2.3", "plugin-archives"}, "PLUGIN_PLATFORMS")
	for _, platform := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64"} {
		goos, goarch, _ := strings.Cut(platform, "/")
		dir, bin := "dist/plugin/"+goos+"-"+goarch, "kubectl-router"
		if goos == "windows" {
			bin += ".exe"
		}
		require.Contains(t, out, "CGO_ENABLED=0 GOOS="+goos+" GOARCH="+goarch+" ", "make release builds the plugin for %s", platform)
		require.Contains(t, out, "-o "+dir+"/"+bin+" ./cmd/kubectl-router", "the %s binary is %s", platform, bin)
		require.Contains(t, out, "-czf dist/plugin/kubectl-router-1.2.3-"+goos+"-"+goarch+".tar.gz "+bin+" LICENSE", "the %s archive holds %s and the LICENSE", platform, bin)
	}
}
