package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

// kubectlBinary is bin/kubectl, built with the control plane by `make test`.
func kubectlBinary(t testing.TB) string {
	t.Helper()
	path := filepath.Join(env.RepoRoot, "bin", "kubectl")
	_, err := os.Stat(path)
	require.NoError(t, err, "bin/kubectl is built with the control plane: run `make control-plane`")
	return path
}

// adminKubeconfig writes a kubeconfig of a system:masters user of the test control plane into
// the test's temporary directory.
func adminKubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	require.NoError(t, env.WriteAdminKubeconfig(path, "kubectl-admin"))
	return path
}

// impersonatingKubeconfig writes a kubeconfig that acts as user with groups (kubectl's --as and
// --as-group, set in the kubeconfig so that a command copied from the docs runs as written),
// through the admin credentials of adminPath. Its namespace is "default": a documented command
// that forgets -n does not silently land in the team's namespace.
func impersonatingKubeconfig(t testing.TB, adminPath, user string, groups ...string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(adminPath)
	require.NoError(t, err)
	ctx := cfg.Contexts[cfg.CurrentContext]
	require.NotNil(t, ctx, "current context of %s", adminPath)
	auth := cfg.AuthInfos[ctx.AuthInfo].DeepCopy()
	auth.Impersonate = user
	auth.ImpersonateGroups = groups
	cfg.AuthInfos["impersonated"] = auth
	ctx = ctx.DeepCopy()
	ctx.AuthInfo = "impersonated"
	ctx.Namespace = "default"
	cfg.Contexts["impersonated"] = ctx
	cfg.CurrentContext = "impersonated"
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// shellKubectl runs a command line as a user would type it (pipes and quotes included) with
// bin/kubectl first in PATH and kubeconfig as KUBECONFIG, and returns its combined output.
func shellKubectl(t testing.TB, kubeconfig, commandLine string, stdin string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", commandLine)
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(kubectlBinary(t))+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+kubeconfig,
		"HOME="+t.TempDir(), // kubectl's discovery cache, not the developer's
	)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// kubectlOutput runs bin/kubectl with args against kubeconfig and fails the test on an error.
func kubectlOutput(t testing.TB, kubeconfig string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectlBinary(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "kubectl %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// tableRows parses kubectl's human-readable table output into one map per row, keyed by the
// column headers. kubectl aligns every cell under its header, so cells are cut at the headers'
// positions (cells may contain spaces, like a condition message).
func tableRows(t testing.TB, out string) []map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	require.NotEmpty(t, lines, "no table in %q", out)
	header := []rune(lines[0])
	var names []string
	var starts []int
	for i := 0; i < len(header); i++ {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
			end := i
			for end < len(header) && header[end] != ' ' {
				end++
			}
			names = append(names, string(header[i:end]))
		}
	}
	var rows []map[string]string
	for _, line := range lines[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		r := []rune(line)
		row := map[string]string{}
		for i, start := range starts {
			end := len(r)
			if i+1 < len(starts) && starts[i+1] < end {
				end = starts[i+1]
			}
			if start < len(r) {
				row[names[i]] = strings.TrimSpace(string(r[start:end]))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// tableRow returns the row whose NAME is name.
func tableRow(t testing.TB, out, name string) map[string]string {
	t.Helper()
	for _, row := range tableRows(t, out) {
		if row["NAME"] == name {
			return row
		}
	}
	require.FailNow(t, "no row "+name, "in:\n%s", out)
	return nil
}
