package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The repository's krew template renders to a manifest naming each archive with its checksum,
// platforms in a stable order whatever the order of the flags.
func TestKrewManifest_FromTheRepositorysTemplate(t *testing.T) {
	dir := t.TempDir()
	amd64, arm64 := filepath.Join(dir, "kubectl-router-1.2.3-linux-amd64.tar.gz"), filepath.Join(dir, "kubectl-router-1.2.3-linux-arm64.tar.gz")
	for path, content := range map[string]string{amd64: "amd64", arm64: "arm64"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "router.yaml")
	err := krewManifestCommand([]string{"--template=" + filepath.Join("..", "..", "krew", "router.yaml"), "--version=1.2.3",
		"--url-base=https://example.com/releases/v1.2.3/", "--archive=linux/arm64=" + arm64, "--archive=linux/amd64=" + amd64, "--output=" + out})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	sum, err := fileSHA256(amd64)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kind: Plugin", "  name: router", "  version: v1.2.3",
		"        arch: amd64\n    uri: https://example.com/releases/v1.2.3/kubectl-router-1.2.3-linux-amd64.tar.gz\n    sha256: " + sum + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the manifest lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "arch: amd64") > strings.Index(got, "arch: arm64") {
		t.Errorf("platforms are not sorted:\n%s", got)
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
