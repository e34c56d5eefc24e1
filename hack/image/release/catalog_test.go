package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// OLM v0.38.0's registry pod execs `grpc_health_probe -addr=:50051` in the catalog container for
// its startup, readiness and liveness probes: the catalog image carries the binary, executable,
// where the image's PATH finds it, next to opm serving /configs. (test/node/olm_test.go proves a
// CatalogSource with the released image becomes READY under a real OLM.)
func TestCatalogImage_CarriesGRPCHealthProbeOnItsPath(t *testing.T) {
	dir := t.TempDir()
	opm, probe := filepath.Join(dir, "opm"), filepath.Join(dir, "probe")
	for path, content := range map[string]string{opm: "opm", probe: "probe"} {
		if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	img, err := catalogImage(v1.Platform{OS: "linux", Architecture: "amd64"}, opm, probe,
		map[string][]byte{"configs/p/catalog.yaml": []byte("schema: olm.package\nname: p\n")}, "v0.0.1", time.Unix(0, 0).UTC())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Env; len(got) != 1 || got[0] != "PATH=/bin" {
		t.Errorf("Env = %q, want [PATH=/bin]", got)
	}
	if got := cfg.Config.Entrypoint; len(got) != 1 || got[0] != "/bin/opm" {
		t.Errorf("Entrypoint = %q", got)
	}
	files := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if h.Name == "bin/grpc_health_probe" {
			if data, _ := io.ReadAll(tr); string(data) != "probe" {
				t.Errorf("bin/grpc_health_probe holds %q", data)
			}
		}
	}
	for _, name := range []string{"bin/grpc_health_probe", "bin/opm"} {
		h := files[name]
		if h == nil {
			t.Errorf("%s missing; the image has %v", name, sortedKeys(files))
			continue
		}
		if h.Mode&0o111 != 0o111 {
			t.Errorf("%s mode %o: not executable by every user (the image runs as %s)", name, h.Mode, User)
		}
	}
	if files["configs/p/catalog.yaml"] == nil || files["tmp"] == nil {
		t.Errorf("configs or /tmp missing: %v", sortedKeys(files))
	}
}

// Every platform of the catalog image needs its probe: a release without one would publish a
// catalog that never becomes READY.
func TestCatalogImageCommand_RequiresAProbeForEveryPlatform(t *testing.T) {
	dir := t.TempDir()
	err := catalogImageCommand([]string{"--catalog=" + dir, "--version=v0.0.1", "--to=127.0.0.1:1/c:v0.0.1",
		"--opm=linux/amd64=" + filepath.Join(dir, "opm")})
	if err == nil {
		t.Fatal("accepted an --opm without --grpc-health-probe")
	}
}
