package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The catalog image is what `opm generate dockerfile` describes, without its base image
// (quay.io/operator-framework/opm, which this machine cannot pull): opm itself at /bin/opm, built
// from the Go module proxy for each platform, and the file-based catalog in /configs, named by the
// label OLM and `opm render` read. It serves the catalog over gRPC on 50051 (`opm serve /configs`),
// building its cache at start in a temporary directory. It also carries grpc_health_probe at
// /bin/grpc_health_probe, with PATH=/bin: OLM v0 (v0.38.0, what OperatorHub clusters run; the
// registry pod is built in pkg/controller/registry/reconciler/reconciler.go) gives the pod it runs
// for a CatalogSource startup, readiness and liveness probes that exec `grpc_health_probe
// -addr=:50051` inside the catalog container; without the binary the pod never becomes Ready and
// the CatalogSource never READY (test/node/olm_test.go). A prebuilt cache (`--cache-dir`) would have to be made by running opm for each
// platform at build time, which needs a container runtime; a catalog of one package needs none.

const catalogConfigsLabel = "operators.operatorframework.io.index.configs.v1"

func catalogImageCommand(args []string) error {
	flags := newFlagSet("catalog-image")
	catalogDir := flags.String("catalog", "", "the file-based catalog directory (opm validate clean)")
	version := flags.String("version", "", "version label, e.g. v0.2.0")
	opms := binaryFlags{}
	flags.Var(opms, "opm", "OS/ARCH=PATH of a static opm binary; repeat for every platform")
	probes := binaryFlags{}
	flags.Var(probes, "grpc-health-probe", "OS/ARCH=PATH of a static grpc_health_probe binary; one for every --opm platform")
	to := flags.String("to", "", "destination REGISTRY/REPOSITORY:TAG")
	insecure := flags.Bool("insecure", false, "plain HTTP (a registry on localhost)")
	digestFile := flags.String("digest-file", "", "file to write the pushed digest to")
	_ = flags.Parse(args)
	if *catalogDir == "" || *version == "" || *to == "" || len(opms) == 0 {
		return errors.New("--catalog, --version, --to and at least one --opm are required")
	}
	for platform := range opms {
		if probes[platform] == "" {
			return fmt.Errorf("no --grpc-health-probe for %s: OLM's registry pod probes exec grpc_health_probe", platform)
		}
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	configs := map[string][]byte{}
	err = filepath.WalkDir(*catalogDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(*catalogDir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		configs["configs/"+filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		return err
	}
	if len(configs) == 0 {
		return fmt.Errorf("%s holds no catalog files", *catalogDir)
	}
	index := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range sortedKeys(opms) {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return err
		}
		img, err := catalogImage(*p, opms[platform], probes[platform], configs, *version, created)
		if err != nil {
			return err
		}
		index = mutate.AppendManifests(index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
	}
	ref, err := parseReference(*to, *insecure)
	if err != nil {
		return err
	}
	digest, err := pushIndex(ref, index)
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", ref.Context().Name(), digest)
	return writeDigestFile(*digestFile, digest.String())
}

// catalogImage is one platform's image: a layer with opm and grpc_health_probe, a layer with the
// catalog, one with /tmp.
func catalogImage(platform v1.Platform, opmPath, probePath string, configs map[string][]byte, version string, created time.Time) (v1.Image, error) {
	opm, err := os.ReadFile(opmPath)
	if err != nil {
		return nil, err
	}
	probe, err := os.ReadFile(probePath)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for _, l := range []struct {
		files     map[string][]byte
		mode      int64
		createdBy string
	}{
		{map[string][]byte{"bin/opm": opm, "bin/grpc_health_probe": probe}, 0o755, "make release: COPY opm grpc_health_probe /bin/"},
		{configs, 0o644, "make release: COPY catalog /configs"},
		{nil, 0, "make release: /tmp (opm serve writes its cache to a temporary directory)"},
	} {
		var data []byte
		var err error
		if l.files != nil {
			data, err = filesTarMode(l.files, l.mode, created)
		} else {
			data, err = tmpDirTar(created)
		}
		if err != nil {
			return nil, err
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, err
		}
		if img, err = mutate.Append(img, mutate.Addendum{
			Layer:     layer,
			History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: l.createdBy},
			MediaType: types.OCILayer,
		}); err != nil {
			return nil, err
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = platform.OS, platform.Architecture, platform.Variant
	cfg.Created = v1.Time{Time: created}
	cfg.Config.User = User
	cfg.Config.Entrypoint = []string{"/bin/opm"}
	// The probes exec grpc_health_probe by name: the runtime looks it up in the container's PATH.
	cfg.Config.Env = []string{"PATH=/bin"}
	cfg.Config.Cmd = []string{"serve", "/configs"}
	cfg.Config.ExposedPorts = map[string]struct{}{"50051/tcp": {}}
	cfg.Config.Labels = map[string]string{
		catalogConfigsLabel:                  "/configs",
		"org.opencontainers.image.title":     "service-router-operator-catalog",
		"org.opencontainers.image.source":    "https://github.com/service-router/service-router-operator",
		"org.opencontainers.image.version":   version,
		"org.opencontainers.image.licenses":  "Apache-2.0",
		"org.opencontainers.image.vendor":    "Service Router",
		"org.opencontainers.image.created":   created.Format(time.RFC3339),
		"org.opencontainers.image.base.name": "scratch",
	}
	return mutate.ConfigFile(img, cfg)
}

// tmpDirTar is a layer with /tmp, writable by everyone and sticky as on any Linux system: without
// --cache-dir, `opm serve` builds its cache in a new directory under $TMPDIR (default /tmp), and
// scratch has no /tmp.
func tmpDirTar(created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: created}); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// User is the unprivileged user the catalog server runs as, as the operator image does.
const User = "65532:65532"
