package packaging

import (
	"os"
	"os/exec"
	"slices"
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
			cmd := exec.Command(makeBinary, append([]string{"-n", "--no-print-directory", "BIN=" + bin, "REGISTRY=registry.example.com/owner"}, args...)...)
			cmd.Dir = repoRoot
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
				return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=")
			})
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "make -n %s:\n%s", target, out)
			for _, problem := range unbuiltBinaries(string(out), bin) {
				t.Errorf("make %s on a fresh clone: %s", target, problem)
			}
		})
	}
}
