package packaging

import (
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// firstRunTargets are the make targets README.md, docs/INSTALLATION.md and docs/DEVELOPMENT.md
// tell a user to run, each of which must work on a fresh clone with an empty bin/.
var firstRunTargets = []string{
	"demo", "demo-down", "test", "test-go", "e2e", "verify", "build", "run", "lint", "bench",
	"manifests", "generate", "bundle", "chart-lint", "chart-verify", "chart-package", "image",
	"image-push", "image-archive", "demo-on-cluster", "tools", "control-plane", "external-dns", "plugin",
}

// implicitNeeds are binaries a command uses without naming them: the programs it starts find
// them in bin/ (envtest, the demo, the end-to-end harness, the packaging tests).
var implicitNeeds = []struct {
	command *regexp.Regexp
	needs   []string
}{
	{regexp.MustCompile(`\bKUBEBUILDER_ASSETS=`), []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"}},
	{regexp.MustCompile(`/demo --state-dir`), []string{"manager", "external-dns"}},
	// On a cluster of the user's, the operator runs there: the demo starts ExternalDNS only.
	{regexp.MustCompile(`/demo --kubeconfig=`), []string{"external-dns"}},
	{regexp.MustCompile(`go test -tags e2e`), []string{"manager", "external-dns", "demo"}},
	{regexp.MustCompile(`go test \./\.\.\.`), []string{"helm"}},
}

// TestMakefile_FirstRunTargetsBuildWhatTheyRun reads what each first-run target would do on a
// fresh clone (`make -n` with an empty bin directory) and fails when a command runs a binary of
// bin/ that no earlier command of the same target builds: a prerequisite that expands to nothing
// (a tool path defined after the rule that lists it) is exactly that.
func TestMakefile_FirstRunTargetsBuildWhatTheyRun(t *testing.T) {
	makeBinary, err := exec.LookPath("make")
	require.NoError(t, err, "GNU make is needed to check the Makefile")
	bin := t.TempDir()

	for _, target := range firstRunTargets {
		t.Run(target, func(t *testing.T) {
			for _, problem := range unbuiltBinaries(makeDryRun(t, makeBinary, []string{target, "BIN=" + bin}), bin) {
				t.Errorf("make %s on a fresh clone: %s", target, problem)
			}
		})
	}
}

// TestMakefile_ImagePushPushesTheLayoutToIMG: `make image-push` (docs/INSTALLATION.md#homelab)
// pushes the index `make image` names v$(VERSION) in dist/image to IMG, over plain HTTP only when
// REGISTRY_PLAIN_HTTP=true, after building the image and the release tool it runs.
func TestMakefile_ImagePushPushesTheLayoutToIMG(t *testing.T) {
	makeBinary, err := exec.LookPath("make")
	require.NoError(t, err, "GNU make is needed to check the Makefile")
	bin := t.TempDir()
	const img = "registry.home.arpa:5000/service-router-operator:v0.2.0"
	version := chartAppVersion(t)
	for _, plainHTTP := range []bool{true, false} {
		args := []string{"image-push", "BIN=" + bin, "IMG=" + img}
		if plainHTTP {
			args = append(args, "REGISTRY_PLAIN_HTTP=true")
		}
		out := makeDryRun(t, makeBinary, args, "IMG", "REGISTRY_PLAIN_HTTP", "VERSION", "IMAGE_LAYOUT")
		var push []string
		for _, line := range strings.Split(out, "\n") {
			if words := strings.Fields(line); len(words) > 1 && words[0] == bin+"/release-tool" && words[1] == "push" {
				push = words[2:]
			}
		}
		require.NotNil(t, push, "make %s runs no release-tool push:\n%s", strings.Join(args, " "), out)
		want := []string{"--layout=dist/image", "--ref-name=v" + version, "--to=" + img}
		if plainHTTP {
			want = append(want, "--insecure")
		}
		require.ElementsMatch(t, want, push, "make %s", strings.Join(args, " "))
		require.Empty(t, unbuiltBinaries(out, bin), "make %s on a fresh clone", strings.Join(args, " "))
		require.Contains(t, out, "go build -trimpath", "make image-push builds the image first")
	}
}

// makeDryRun returns what `make -n args...` would run in the repository. Flags of an enclosing
// make (jobserver, -n, -k) must not change what it prints, and neither must the environment
// variables named in dropEnv (a variable the test wants at its Makefile default).
func makeDryRun(t *testing.T, makeBinary string, args []string, dropEnv ...string) string {
	t.Helper()
	cmd := exec.Command(makeBinary, append([]string{"-n", "--no-print-directory"}, args...)...)
	cmd.Dir = repoRoot
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}, name) || slices.Contains(dropEnv, name)
	})
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make -n %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// The check itself must be able to fail: a dry run that starts envtest and ExternalDNS without
// building them is caught.
func TestMakefile_UnbuiltBinaryCheckCatchesAHiddenPrerequisite(t *testing.T) {
	dryRun := strings.Join([]string{
		"cd hack/tools/etcd && go build -o /b/etcd .",
		"go build -o /b/demo ./hack/demo",
		"KUBEBUILDER_ASSETS=/b /b/demo --state-dir=/x/.demo",
		"/b/helm lint charts/x",
	}, "\n")
	problems := unbuiltBinaries(dryRun, "/b")
	for _, want := range []string{"kube-apiserver", "manager", "external-dns", "helm"} {
		require.True(t, slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "bin/"+want+" ") }),
			"%s is used unbuilt; problems found: %q", want, problems)
	}
	require.False(t, slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, "bin/etcd ") }),
		"etcd is built before use; problems found: %q", problems)
}

// unbuiltBinaries returns, for a `make -n` transcript, every use of a binary under bin before a
// command built it.
func unbuiltBinaries(dryRun, bin string) []string {
	built := map[string]bool{}
	var problems []string
	use := func(name, line string) {
		if !built[name] {
			problems = append(problems, "bin/"+name+" is used before anything builds it: "+line)
			built[name] = true // report each binary once
		}
	}
	// A recipe line continued with a backslash is one command.
	for _, line := range strings.Split(strings.ReplaceAll(dryRun, "\\\n", " "), "\n") {
		line = strings.TrimSpace(line)
		if outputs := goBuildOutputs(line, bin); outputs != nil {
			for _, o := range outputs {
				built[o] = true
			}
			continue
		}
		for _, n := range implicitNeeds {
			if n.command.MatchString(line) {
				for _, name := range n.needs {
					use(name, line)
				}
			}
		}
		for _, name := range commandsRun(line, bin) {
			use(name, line)
		}
	}
	return problems
}

var commandSeparators = regexp.MustCompile(`&&|\|\||[|;]|\$\(|\bthen\b|\bdo\b|\belse\b`)

// commandsRun returns the names of the bin binaries a shell line runs: the first word of each
// command, after any VAR=value assignments.
func commandsRun(line, bin string) []string {
	var names []string
	for _, command := range commandSeparators.Split(line, -1) {
		for _, word := range strings.Fields(command) {
			if strings.Contains(word, "=") && !strings.HasPrefix(word, "-") {
				continue // an environment assignment
			}
			if strings.HasPrefix(word, bin+"/") {
				names = append(names, strings.TrimPrefix(word, bin+"/"))
			}
			break
		}
	}
	return names
}

// goBuildOutputs returns the binaries a `go build -o` line writes into bin: the named file, or for
// `-o bin/` the last element of every package built. It returns nil for other lines.
func goBuildOutputs(line, bin string) []string {
	if !strings.Contains(line, "go build") {
		return nil
	}
	words := strings.Fields(line)
	for i, w := range words {
		if w != "-o" || i+1 >= len(words) {
			continue
		}
		out := words[i+1]
		if out == bin+"/" {
			var names []string
			for _, pkg := range words[i+2:] {
				names = append(names, path.Base(pkg))
			}
			return names
		}
		if strings.HasPrefix(out, bin+"/") {
			return []string{strings.TrimPrefix(out, bin+"/")}
		}
	}
	return nil
}
