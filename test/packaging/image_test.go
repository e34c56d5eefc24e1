package packaging

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The image layout is read with nothing but the OCI image-layout specification
// (https://github.com/opencontainers/image-spec/blob/main/image-layout.md), independently of the
// library that wrote it.
type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type ociIndex struct {
	MediaType string          `json:"mediaType"`
	Manifests []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	MediaType string          `json:"mediaType"`
	Config    ociDescriptor   `json:"config"`
	Layers    []ociDescriptor `json:"layers"`
}

type ociConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Env        []string          `json:"Env"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

// imageLayout is the OCI image layout `make image` writes.
type imageLayout struct {
	t   *testing.T
	dir string
}

func openImageLayout(t *testing.T) imageLayout {
	t.Helper()
	dir := repoPath("dist", "image")
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		t.Fatalf("no OCI image layout in %s: run `make image` (`make test` does): %v", dir, err)
	}
	return imageLayout{t: t, dir: dir}
}

// blob returns a blob's content after checking its digest and size.
func (l imageLayout) blob(d ociDescriptor) []byte {
	l.t.Helper()
	algorithm, hexDigest, ok := strings.Cut(d.Digest, ":")
	require.True(l.t, ok && algorithm == "sha256", "digest %q", d.Digest)
	data, err := os.ReadFile(filepath.Join(l.dir, "blobs", "sha256", hexDigest))
	require.NoError(l.t, err)
	sum := sha256.Sum256(data)
	require.Equal(l.t, hexDigest, hex.EncodeToString(sum[:]), "blob %s is corrupt", d.Digest)
	require.EqualValues(l.t, d.Size, len(data), "size of blob %s", d.Digest)
	return data
}

func (l imageLayout) decode(d ociDescriptor, into any) {
	l.t.Helper()
	require.NoError(l.t, json.Unmarshal(l.blob(d), into), "blob %s", d.Digest)
}

// platformImage is one image of the multi-architecture index.
type platformImage struct {
	platform string
	config   ociConfig
	files    map[string]*tar.Header
	manager  []byte
}

// images returns the images of the layout's one multi-architecture index, by platform.
func (l imageLayout) images() map[string]platformImage {
	l.t.Helper()
	var top ociIndex
	data, err := os.ReadFile(filepath.Join(l.dir, "index.json"))
	require.NoError(l.t, err)
	require.NoError(l.t, json.Unmarshal(data, &top))
	require.Len(l.t, top.Manifests, 1, "index.json names one multi-architecture index")
	require.Equal(l.t, "application/vnd.oci.image.index.v1+json", top.Manifests[0].MediaType)
	require.NotEmpty(l.t, top.Manifests[0].Annotations["org.opencontainers.image.ref.name"], "the index is named (the tag)")

	var index ociIndex
	l.decode(top.Manifests[0], &index)
	out := map[string]platformImage{}
	for _, d := range index.Manifests {
		require.NotNil(l.t, d.Platform, "manifest %s has no platform", d.Digest)
		var m ociManifest
		l.decode(d, &m)
		require.Equal(l.t, "application/vnd.oci.image.manifest.v1+json", m.MediaType)
		img := platformImage{platform: d.Platform.OS + "/" + d.Platform.Architecture, files: map[string]*tar.Header{}}
		l.decode(m.Config, &img.config)
		for _, layer := range m.Layers {
			l.readLayer(layer, &img)
		}
		out[img.platform] = img
	}
	return out
}

func (l imageLayout) readLayer(d ociDescriptor, img *platformImage) {
	l.t.Helper()
	var r io.Reader = strings.NewReader(string(l.blob(d)))
	if strings.HasSuffix(d.MediaType, "+gzip") {
		gz, err := gzip.NewReader(r)
		require.NoError(l.t, err)
		r = gz
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(l.t, err)
		name := "/" + strings.TrimPrefix(h.Name, "./")
		img.files[name] = h
		if name == "/manager" {
			img.manager, err = io.ReadAll(tr)
			require.NoError(l.t, err)
		}
	}
}

func TestImage_MultiArchScratchImageOfTheManager(t *testing.T) {
	images := openImageLayout(t).images()
	platforms := make([]string, 0, len(images))
	for p := range images {
		platforms = append(platforms, p)
	}
	slices.Sort(platforms)
	require.Equal(t, []string{"linux/amd64", "linux/arm64"}, platforms)

	version := "v" + chartAppVersion(t)
	elfMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, platform := range platforms {
		img := images[platform]
		arch := strings.TrimPrefix(platform, "linux/")
		t.Run(platform, func(t *testing.T) {
			cfg := img.config
			require.Equal(t, "linux", cfg.OS)
			require.Equal(t, arch, cfg.Architecture)
			require.Equal(t, "65532:65532", cfg.Config.User, "runs as the unprivileged 65532")
			require.Equal(t, []string{"/manager"}, cfg.Config.Entrypoint)
			require.Empty(t, cfg.Config.Cmd)
			require.Equal(t, version, cfg.Config.Labels["org.opencontainers.image.version"])
			for _, label := range []string{"title", "source", "licenses", "created"} {
				require.NotEmpty(t, cfg.Config.Labels["org.opencontainers.image."+label], "OCI label %s", label)
			}

			// Scratch: the manager is the only file, so there is no shell (or anything else) to run.
			files := slices.Sorted(func(yield func(string) bool) {
				for name := range img.files {
					if !yield(name) {
						return
					}
				}
			})
			require.Equal(t, []string{"/manager"}, files)
			require.NotContains(t, img.files, "/bin/sh")
			require.EqualValues(t, 0o755, img.files["/manager"].Mode&0o777)

			// The binary is the operator, for the image's architecture, static and reproducible.
			bin := filepath.Join(t.TempDir(), "manager")
			require.NoError(t, os.WriteFile(bin, img.manager, 0o755))
			f, err := elf.Open(bin)
			require.NoError(t, err)
			defer f.Close()
			require.Equal(t, elfMachine[arch], f.Machine)
			for _, p := range f.Progs {
				require.NotEqual(t, elf.PT_INTERP, p.Type, "the binary must be static: it asks for a dynamic loader")
			}
			info, err := buildinfo.ReadFile(bin)
			require.NoError(t, err)
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			require.Equal(t, "0", settings["CGO_ENABLED"])
			require.Equal(t, "true", settings["-trimpath"])
			require.Equal(t, arch, settings["GOARCH"])
			require.Equal(t, "github.com/service-router/service-router-operator", info.Path)

			// The image has no CA bundle: the binary carries Mozilla's roots itself
			// (internal/azureprivatedns parses them on its first zone read), for the
			// azurePrivateDNS verification's TLS to Azure. What
			// `go version -m` lists: the module is linked only when a package of it is.
			var deps []string
			for _, d := range info.Deps {
				deps = append(deps, d.Path)
			}
			require.Contains(t, deps, "golang.org/x/crypto/x509roots/fallback",
				"the binary has no compiled-in CA roots, and the image no CA bundle: TLS to Azure cannot be verified")
		})
	}

	t.Run("the amd64 binary runs", func(t *testing.T) {
		if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
			t.Skipf("this machine (%s/%s) cannot run a linux/amd64 binary", runtime.GOOS, runtime.GOARCH)
		}
		bin := filepath.Join(t.TempDir(), "manager")
		require.NoError(t, os.WriteFile(bin, images["linux/amd64"].manager, 0o755))
		out, err := exec.Command(bin, "--help").CombinedOutput()
		require.NoError(t, err, "manager --help:\n%s", out)
		require.Contains(t, string(out), "-metrics-bind-address")
		require.Contains(t, string(out), "-leader-elect")
	})
}

// The Dockerfile, for people with Docker, describes the image `make image` builds.
func TestImage_DockerfileDescribesTheSameImage(t *testing.T) {
	final := dockerfileFinalStage(t)
	require.Equal(t, []string{"scratch"}, final["FROM"], "the final stage's base: nothing but the binary, no shell")
	images := openImageLayout(t).images()
	for platform, img := range images {
		require.Equal(t, []string{img.config.Config.User}, final["USER"], "USER of the Dockerfile and of the %s image", platform)
		entrypoint, err := json.Marshal(img.config.Config.Entrypoint)
		require.NoError(t, err)
		require.Equal(t, []string{string(entrypoint)}, final["ENTRYPOINT"], "ENTRYPOINT of the Dockerfile and of the %s image", platform)
		for _, copied := range final["COPY"] {
			dst := copied[strings.LastIndex(copied, " ")+1:]
			require.Contains(t, img.files, dst, "the Dockerfile copies %s, the %s image has no such file", dst, platform)
		}
		require.Len(t, img.files, len(final["COPY"]), "the %s image has files the Dockerfile does not copy", platform)
	}
}

// dockerfileFinalStage returns the arguments of each instruction of the Dockerfile's last stage.
func dockerfileFinalStage(t *testing.T) map[string][]string {
	t.Helper()
	f, err := os.Open(repoPath("Dockerfile"))
	require.NoError(t, err)
	defer f.Close()
	var stage map[string][]string
	scanner := bufio.NewScanner(f)
	continued := ""
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			continued += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		line, continued = continued+line, ""
		instruction, args, _ := strings.Cut(line, " ")
		instruction = strings.ToUpper(instruction)
		if instruction == "FROM" {
			stage = map[string][]string{}
			args, _, _ = strings.Cut(args, " ") // FROM image [AS name]
		}
		if stage != nil {
			stage[instruction] = append(stage[instruction], strings.TrimSpace(args))
		}
	}
	require.NoError(t, scanner.Err())
	require.NotNil(t, stage, "the Dockerfile has no FROM")
	return stage
}

// chartAppVersion returns the chart's appVersion, the version `make image` stamps by default.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	for _, line := range strings.Split(readFile(t, repoPath(chartPath, "Chart.yaml")), "\n") {
		if v, ok := strings.CutPrefix(line, "appVersion:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	t.Fatal("Chart.yaml has no appVersion")
	return ""
}
