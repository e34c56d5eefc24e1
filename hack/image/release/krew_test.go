package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The repository's krew template renders to a manifest naming each archive with its checksum and
// the binary krew links (kubectl-router.exe on Windows), platforms in a stable order whatever the
// order of the flags.
func TestKrewManifest_FromTheRepositorysTemplate(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--template=" + filepath.Join("..", "..", "krew", "router.yaml"), "--version=1.2.3",
		"--url-base=https://example.com/releases/v1.2.3/"}
	archives := map[string]string{}
	for _, platform := range []string{"windows/amd64", "linux/arm64", "darwin/arm64", "linux/amd64", "darwin/amd64"} {
		path := filepath.Join(dir, "kubectl-router-1.2.3-"+strings.ReplaceAll(platform, "/", "-")+".tar.gz")
		if err := os.WriteFile(path, []byte(platform), 0o644); err != nil {
			t.Fatal(err)
		}
		archives[platform] = path
		args = append(args, "--archive="+platform+"="+path)
	}
	out := filepath.Join(dir, "router.yaml")
	if err := krewManifestCommand(append(args, "--output="+out)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	entry := func(platform, bin string) string {
		t.Helper()
		sum, err := fileSHA256(archives[platform])
		if err != nil {
			t.Fatal(err)
		}
		goos, goarch, _ := strings.Cut(platform, "/")
		return "        os: " + goos + "\n        arch: " + goarch + "\n" +
			"    uri: https://example.com/releases/v1.2.3/" + filepath.Base(archives[platform]) + "\n    sha256: " + sum + "\n" +
			"    bin: " + bin + "\n    files:\n    - from: " + bin + "\n      to: .\n"
	}
	for _, want := range []string{
		"kind: Plugin", "  name: router", "  version: v1.2.3",
		entry("linux/amd64", "kubectl-router"), entry("darwin/arm64", "kubectl-router"), entry("windows/amd64", "kubectl-router.exe"),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the manifest lacks %q:\n%s", want, got)
		}
	}
	order := []string{"os: darwin\n        arch: amd64", "os: darwin\n        arch: arm64", "os: linux\n        arch: amd64", "os: linux\n        arch: arm64", "os: windows"}
	for i := 1; i < len(order); i++ {
		if strings.Index(got, order[i-1]) > strings.Index(got, order[i]) {
			t.Errorf("platforms are not sorted by OS, then architecture:\n%s", got)
		}
	}
	if strings.Contains(got, "{{") {
		t.Errorf("template left unrendered:\n%s", got)
	}
}

func TestKrewManifest_RequiresEveryInput(t *testing.T) {
	if err := krewManifestCommand([]string{"--version=1.0.0"}); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("want a missing-input error, got %v", err)
	}
}
