package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestPlugin_KubectlCompletesTheRouterCommands runs docs/PLUGIN.md's completion block as written,
// HOME a directory of the test's own, with the plugin built from the tree and kubectl from bin/ on
// PATH, then asks kubectl to complete `kubectl router st`, as a shell's completion does: it offers
// the plugin's status command through kubectl_complete-router.
func TestPlugin_KubectlCompletesTheRouterCommands(t *testing.T) {
	block, err := framework.BlockWith(readFile(t, repoPath("docs", "PLUGIN.md")), "kubectl_complete-router")
	require.NoError(t, err)
	kubectl := repoPath("bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("%s not found: run `make test` (it builds the control plane and kubectl into bin/)", kubectl)
	}
	plugins := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(plugins, "kubectl-router"), "./cmd/kubectl-router")
	build.Dir = repoRoot
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	home := t.TempDir()
	path := strings.Join([]string{filepath.Join(home, "bin"), plugins, filepath.Dir(kubectl), os.Getenv("PATH")}, string(os.PathListSeparator))
	env := append(os.Environ(), "HOME="+home, "PATH="+path, "KUBECONFIG="+filepath.Join(home, "none"))
	run := exec.Command("bash", "-eo", "pipefail", "-c", block)
	run.Env = env
	out, err = run.CombinedOutput()
	require.NoError(t, err, "%s\n%s", block, out)

	complete := exec.Command(kubectl, "__complete", "router", "st")
	complete.Env = env
	out, err = complete.Output()
	require.NoError(t, err)
	assert.Contains(t, strings.Fields(string(out)), "status", "kubectl __complete router st:\n%s", out)
}
