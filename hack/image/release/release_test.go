package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The repository's own bundle.Dockerfile is what bundle-image reads: every LABEL and COPY of it is
// understood, and the image holds the bundle's files under the label's directories.
func TestBundleImage_FromTheRepositorysBundleDockerfile(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	img, err := bundleImage(root, filepath.Join(root, "bundle.Dockerfile"), time.Unix(0, 0).UTC())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.package.v1":   "service-router-operator",
	} {
		if got := cfg.Config.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("want one layer, got %d (%v)", len(layers), err)
	}
}

func TestParseBundleDockerfile_RejectsWhatItCannotBuild(t *testing.T) {
	for name, content := range map[string]string{
		"a base image": "FROM alpine\n",
		"a RUN":        "FROM scratch\nRUN true\n",
	} {
		path := filepath.Join(t.TempDir(), "Dockerfile")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := parseBundleDockerfile(path); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The SBOM of a Go binary (this test binary) lists the modules its build information names, with
// purls, and the image it is given.
func TestBuildSBOM_ListsTheModulesOfTheBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	doc, err := buildSBOM("service-router-operator", "v1.2.3", "registry.example.com/o/service-router-operator@"+digest,
		map[string]string{"linux/amd64": self})
	if err != nil {
		t.Fatal(err)
	}
	purls := map[string]bool{}
	for _, p := range doc.Packages {
		for _, r := range p.ExternalRefs {
			purls[r.ReferenceLocator] = true
		}
	}
	var haveGCR, haveStdlib bool
	for purl := range purls {
		haveGCR = haveGCR || strings.HasPrefix(purl, "pkg:golang/github.com/google/go-containerregistry@v")
		haveStdlib = haveStdlib || strings.HasPrefix(purl, "pkg:golang/stdlib@")
	}
	if !haveGCR || !haveStdlib {
		t.Errorf("go-containerregistry listed: %v, stdlib listed: %v; purls %v", haveGCR, haveStdlib, purls)
	}
	if doc.Packages[0].Checksums[0].ChecksumValue != strings.TrimPrefix(digest, "sha256:") {
		t.Errorf("the image package's checksum is not the digest: %+v", doc.Packages[0])
	}
	if _, err := buildSBOM("x", "v1", "registry.example.com/x:latest", map[string]string{"linux/amd64": self}); err == nil {
		t.Error("an image named by a tag was accepted")
	}
}
