package main

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func testBinaries(t *testing.T) []platformBinary {
	t.Helper()
	dir := t.TempDir()
	var out []platformBinary
	for _, arch := range []string{"amd64", "arm64"} {
		path := filepath.Join(dir, "manager-"+arch)
		if err := os.WriteFile(path, []byte("binary for "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, platformBinary{Platform: v1.Platform{OS: "linux", Architecture: arch}, Path: path})
	}
	return out
}

func TestBuildIndex_OneScratchImagePerPlatform(t *testing.T) {
	meta := metadata{Version: "v1.2.3", Revision: "abc", Created: time.Unix(0, 0).UTC()}
	index, err := buildIndex(testBinaries(t), meta)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := index.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index media type %s", mt)
	}
	manifest, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(manifest.Manifests) != 2 {
		t.Fatalf("want 2 manifests, got %d", len(manifest.Manifests))
	}
	for i, arch := range []string{"amd64", "arm64"} {
		desc := manifest.Manifests[i]
		if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != arch {
			t.Errorf("manifest %d: platform %v, want linux/%s", i, desc.Platform, arch)
		}
		img, err := index.Image(desc.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != arch || cfg.OS != "linux" {
			t.Errorf("config platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, arch)
		}
		if cfg.Config.User != "65532:65532" || !reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/manager"}) || cfg.Config.Cmd != nil {
			t.Errorf("user %q entrypoint %q cmd %q", cfg.Config.User, cfg.Config.Entrypoint, cfg.Config.Cmd)
		}
		if cfg.Config.Labels["org.opencontainers.image.version"] != "v1.2.3" || cfg.Config.Labels["org.opencontainers.image.revision"] != "abc" {
			t.Errorf("labels %v", cfg.Config.Labels)
		}
		files := layerFiles(t, img)
		want := map[string]string{"manager": "binary for " + arch}
		if !reflect.DeepEqual(files, want) {
			t.Errorf("files %v, want %v", files, want)
		}
	}
}

func TestBuildIndex_SameInputsSameDigest(t *testing.T) {
	binaries := testBinaries(t)
	meta := metadata{Version: "v1", Created: time.Unix(1700000000, 0).UTC()}
	digests := map[v1.Hash]bool{}
	for range 2 {
		index, err := buildIndex(binaries, meta)
		if err != nil {
			t.Fatal(err)
		}
		d, err := index.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests[d] = true
	}
	if len(digests) != 1 {
		t.Errorf("two builds of the same binaries gave different digests: %v", digests)
	}
}

func TestBuildIndex_RejectsTwoBinariesForOnePlatform(t *testing.T) {
	b := testBinaries(t)
	if _, err := buildIndex([]platformBinary{b[0], b[0]}, metadata{Version: "v1"}); err == nil {
		t.Fatal("want an error for two linux/amd64 binaries")
	}
}

func TestWriteLayout_NamesTheIndex(t *testing.T) {
	index, err := buildIndex(testBinaries(t), metadata{Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "layout")
	if err := writeLayout(dir, "v1", index); err != nil {
		t.Fatal(err)
	}
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := index.Digest()
	if len(manifest.Manifests) != 1 || manifest.Manifests[0].Digest != want ||
		manifest.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Errorf("index.json: %+v, want one entry %s named v1", manifest.Manifests, want)
	}
}

// layerFiles returns every regular file of the image's layers and its content.
func layerFiles(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = string(data)
		}
		rc.Close()
	}
	return files
}
