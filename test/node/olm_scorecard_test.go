//go:build node

package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The images bundle/tests/scorecard/config.yaml and operator-sdk v1.42.2 name, by repository.
const (
	scorecardUpstream = "quay.io/operator-framework/"
	scorecardVersion  = "v1.42.2"
)

// TestOLM_Scorecard runs `operator-sdk scorecard` on the bundle as OperatorHub's community
// pipeline does: every test of bundle/tests/scorecard/config.yaml (the basic suite and the OLM
// suite), each as a pod on the node, all passing. The images come from the world's registry: the
// scorecard-test image is operator-sdk's own command (bin/scorecard-test, built from the module
// `make olm` builds operator-sdk from), the scorecard-untar image a tar (test/e2e/framework/tar)
// for upstream's ubi9 with GNU tar; in the config only their registry host is replaced.
func TestOLM_Scorecard(t *testing.T) {
	ctx := t.Context()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := func(name string) string {
		p := filepath.Join(root, "bin", name)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s not found: run `make olm` (it builds operator-sdk and scorecard-test)", p)
		}
		return p
	}
	operatorSDK, scorecardTest := bin("operator-sdk"), bin("scorecard-test")
	w := startWorld(t, 1)
	dir := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(dir, "tar"), "./test/e2e/framework/tar")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building tar: %v\n%s", err, out)
	}
	registry := w.Registry + "/operator-framework/"
	if _, err := framework.PushBinaryImage(ctx, w.Registry, framework.BinaryImage{
		Repository: "operator-framework/scorecard-test", Tag: scorecardVersion,
		Files:      map[string]string{"/usr/local/bin/scorecard-test": scorecardTest},
		Entrypoint: []string{"/usr/local/bin/scorecard-test"}, User: "1001",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := framework.PushBinaryImage(ctx, w.Registry, framework.BinaryImage{
		Repository: "operator-framework/scorecard-untar", Tag: scorecardVersion,
		Files: map[string]string{"/bin/tar": filepath.Join(dir, "tar")}, User: "1001",
	}); err != nil {
		t.Fatal(err)
	}
	// The bundle, its scorecard configuration's images from the world's registry.
	bundle := filepath.Join(dir, "bundle")
	if out, err := exec.CommandContext(ctx, "cp", "-R", filepath.Join(root, "bundle"), bundle).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	config := filepath.Join(bundle, "tests", "scorecard", "config.yaml")
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	tests := strings.Count(string(data), "image: "+scorecardUpstream+"scorecard-test:"+scorecardVersion)
	if tests == 0 {
		t.Fatalf("%s names no %sscorecard-test:%s", config, scorecardUpstream, scorecardVersion)
	}
	if err := os.WriteFile(config, []byte(strings.ReplaceAll(string(data), scorecardUpstream, registry)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, w.Client, "scorecard"); err != nil {
		t.Fatal(err)
	}
	// The scorecard's pods run as the namespace's default service account, which
	// kube-controller-manager creates a moment after the namespace (a fresh-clone run lost the race).
	if out, err := w.Cluster().RunScript(ctx, "kubectl -n scorecard wait --for=create serviceaccount/default --timeout=60s"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, operatorSDK, "scorecard", bundle, "--kubeconfig", w.Kubeconfig, "--namespace", "scorecard",
		"--untar-image", registry+"scorecard-untar:"+scorecardVersion, "--wait-time", "180s", "--output", "text")
	out, err := cmd.CombinedOutput()
	t.Logf("operator-sdk scorecard (%s):\n%s", time.Since(start).Round(100*time.Millisecond), out)
	if err != nil {
		t.Fatalf("operator-sdk scorecard: %v\n%s", err, w.Diagnostics(ctx, "scorecard"))
	}
	if got := strings.Count(string(out), "State: pass"); got != tests {
		t.Errorf("%d tests passed, want all %d of %s", got, tests, config)
	}
}
