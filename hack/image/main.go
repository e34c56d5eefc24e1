// Command image assembles the operator's container image as an OCI image layout, without a
// container daemon: a multi-architecture index with one image per platform, each made of a single
// layer holding the static manager binary at /manager, on an empty (scratch) base: no shell, no
// package manager, nothing else to patch. The image runs as 65532:65532 with /manager as entrypoint,
// as the Dockerfile describes (test/packaging checks that they agree).
//
// The binaries are built by `make image` (CGO_ENABLED=0, -trimpath, the version ldflags of
// `make build`). The image is reproducible: every timestamp is SOURCE_DATE_EPOCH (default 0), so the
// same binaries give the same digests.
//
// Usage:
//
//	image --output=DIR --ref-name=v0.1.0 --version=v0.1.0 [--revision=COMMIT] \
//	    --binary=linux/amd64=PATH --binary=linux/arm64=PATH
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// User is the unprivileged user and group the operator runs as (distroless' "nonroot").
	User = "65532:65532"
	// Entrypoint is the manager binary's path in the image.
	Entrypoint = "/manager"
)

// platformBinary is a manager binary and the platform it was built for.
type platformBinary struct {
	Platform v1.Platform
	Path     string
}

// metadata is what the image says about itself.
type metadata struct {
	Version  string
	Revision string
	Created  time.Time
}

// labels are the OCI annotations (https://github.com/opencontainers/image-spec/blob/main/annotations.md)
// the image carries as config labels.
func (m metadata) labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "service-router-operator",
		"org.opencontainers.image.description": "Multi-region DNS (ExternalDNS DNSEndpoints) and Istio ingress routing as Kubernetes resources",
		"org.opencontainers.image.source":      "https://github.com/service-router/service-router-operator",
		"org.opencontainers.image.url":         "https://github.com/service-router/service-router-operator",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.vendor":      "Service Router",
		"org.opencontainers.image.version":     m.Version,
		"org.opencontainers.image.created":     m.Created.UTC().Format(time.RFC3339),
	}
	if m.Revision != "" {
		l["org.opencontainers.image.revision"] = m.Revision
	}
	return l
}

type binaryFlags []platformBinary

func (b *binaryFlags) String() string { return fmt.Sprint(*b) }

func (b *binaryFlags) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want OS/ARCH=PATH, got %q", v)
	}
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return err
	}
	*b = append(*b, platformBinary{Platform: *p, Path: path})
	return nil
}

func main() {
	var (
		binaries binaryFlags
		meta     metadata
		output   string
		refName  string
	)
	flag.Var(&binaries, "binary", "OS/ARCH=PATH of a static manager binary; repeat for every platform")
	flag.StringVar(&output, "output", "", "directory of the OCI image layout to write (replaced)")
	flag.StringVar(&refName, "ref-name", "", "org.opencontainers.image.ref.name of the index in the layout, usually the tag")
	flag.StringVar(&meta.Version, "version", "", "version label, e.g. v0.1.0")
	flag.StringVar(&meta.Revision, "revision", "", "source revision label (git commit); omitted when empty")
	flag.Parse()
	if output == "" || refName == "" || meta.Version == "" || len(binaries) == 0 {
		fmt.Fprintln(os.Stderr, "image: --output, --ref-name, --version and at least one --binary are required")
		os.Exit(2)
	}
	created, err := sourceDateEpoch()
	if err != nil {
		fatal(err)
	}
	meta.Created = created
	index, err := buildIndex(binaries, meta)
	if err != nil {
		fatal(err)
	}
	if err := writeLayout(output, refName, index); err != nil {
		fatal(err)
	}
	digest, err := index.Digest()
	if err != nil {
		fatal(err)
	}
	fmt.Printf("image: wrote %s (%s, %s)\n", output, refName, digest)
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "image: %v\n", err)
	os.Exit(1)
}

// sourceDateEpoch returns the time of SOURCE_DATE_EPOCH (https://reproducible-builds.org), or the
// Unix epoch.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
	}
	return time.Unix(secs, 0).UTC(), nil
}

// buildIndex returns the multi-architecture index of one image per binary.
func buildIndex(binaries []platformBinary, meta metadata) (v1.ImageIndex, error) {
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for _, b := range binaries {
		if seen[b.Platform.String()] {
			return nil, fmt.Errorf("two binaries for %s", b.Platform.String())
		}
		seen[b.Platform.String()] = true
		img, err := buildImage(b, meta)
		if err != nil {
			return nil, err
		}
		platform := b.Platform
		index = mutate.AppendManifests(index, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &platform},
		})
	}
	return index, nil
}

// buildImage returns the image of one platform: scratch plus one layer with the binary.
func buildImage(b platformBinary, meta metadata) (v1.Image, error) {
	binary, err := os.ReadFile(b.Path)
	if err != nil {
		return nil, err
	}
	layerTar, err := singleFileTar(strings.TrimPrefix(Entrypoint, "/"), binary, meta.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{Created: v1.Time{Time: meta.Created}, CreatedBy: "make image: COPY manager /manager", Comment: "the static manager binary"},
		MediaType: types.OCILayer,
	}); err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS = b.Platform.OS
	cfg.Architecture = b.Platform.Architecture
	cfg.Variant = b.Platform.Variant
	cfg.Created = v1.Time{Time: meta.Created}
	cfg.Config.User = User
	cfg.Config.Entrypoint = []string{Entrypoint}
	cfg.Config.Cmd = nil
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = meta.labels()
	return mutate.ConfigFile(img, cfg)
}

// singleFileTar returns a tar stream holding one executable file owned by root.
func singleFileTar(name string, content []byte, modified time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o755,
		Size:     int64(len(content)),
		ModTime:  modified,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(content); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeLayout replaces dir with an OCI image layout whose index.json names the multi-architecture
// index refName (what `skopeo copy --all oci:DIR:REF docker://...` pushes).
func writeLayout(dir, refName string, index v1.ImageIndex) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	path, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return path.AppendIndex(index, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": refName,
	}))
}
