package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// The archive is an OCI layout holding the one index, named for containerd's importer and by its
// tag, with every blob of every platform image: what `ctr images import` needs.
func TestWriteArchive_NamesTheIndexForContainerd(t *testing.T) {
	index, err := random.Index(64, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	output := filepath.Join(t.TempDir(), "image.tar")
	if err := writeArchive(index, "localhost/service-router-operator:v0.2.0", output); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	untar(t, output, dir)
	path, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := path.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := index.Digest()
	if len(manifest.Manifests) != 1 || manifest.Manifests[0].Digest != want {
		t.Fatalf("index.json lists %+v, want only %s", manifest.Manifests, want)
	}
	annotations := manifest.Manifests[0].Annotations
	if annotations[containerdImageName] != "localhost/service-router-operator:v0.2.0" || annotations[refNameAnnotation] != "v0.2.0" {
		t.Errorf("annotations %v", annotations)
	}
	// Every platform image reads back whole from the archive's blobs.
	inner, err := top.ImageIndex(want)
	if err != nil {
		t.Fatal(err)
	}
	platforms, err := inner.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range platforms.Manifests {
		img, err := inner.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		layers, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range layers {
			rc, err := l.Compressed()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, rc); err != nil {
				t.Fatalf("layer of %s: %v", d.Digest, err)
			}
			rc.Close()
		}
	}
}

// A name the kubelet would look up under another name (docker.io/library/...) is refused.
func TestWriteArchive_RefusesANameWithoutARegistryHost(t *testing.T) {
	index, err := random.Index(64, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"service-router-operator:v0.2.0", "team/service-router-operator:v0.2.0", "localhost/x:"} {
		if err := writeArchive(index, n, filepath.Join(t.TempDir(), "image.tar")); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
	for _, n := range []string{"localhost/service-router-operator:v0.2.0", "registry.home.arpa:5000/sro:v1", "localhost:5000/sro:v1"} {
		if err := writeArchive(index, n, filepath.Join(t.TempDir(), "image.tar")); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(hdr.Name, "/")))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
