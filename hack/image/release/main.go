// Command release publishes what `make image` and `make bundle` produced, without a container
// daemon (`make release`, hack/make/release.mk):
//
//	release push --layout=DIR --ref-name=v0.2.0 --to=REGISTRY/REPO:TAG [--insecure] [--digest-file=F]
//	    pushes the multi-architecture index named REF-NAME in the OCI image layout DIR (what
//	    `make image` writes) to TO, checks that the registry serves it under the same digest, and
//	    prints (and writes to --digest-file) that digest: the image is referred to by it from then
//	    on (the chart, the bundle, the SBOM).
//	release sbom --name=N --version=V --image=REPO@DIGEST --binary=OS/ARCH=PATH... --output=FILE
//	    writes an SPDX 2.3 JSON SBOM of the image and its binaries: the Go modules each binary was
//	    built from, read from the build information the Go linker embeds (what `go version -m`
//	    prints), so it needs neither the network nor a scanner.
//	release bundle-image --context=DIR --dockerfile=FILE --to=REGISTRY/REPO:TAG [--insecure] [--digest-file=F]
//	    builds the OLM bundle image bundle.Dockerfile describes (its LABELs, and its COPY lines
//	    relative to --context) as a single-layer OCI image on scratch, and pushes it.
//	release catalog-image --catalog=DIR --version=V --opm=OS/ARCH=PATH... --grpc-health-probe=OS/ARCH=PATH... --to=REGISTRY/REPO:TAG [--insecure] [--digest-file=F]
//	    builds the multi-architecture file-based catalog image (opm serving DIR from /configs) and
//	    pushes it.
//	release krew-manifest --template=hack/krew/router.yaml --version=V --url-base=URL --archive=OS/ARCH=PATH... --output=FILE
//	    renders the kubectl plugin's krew manifest: the version and, per platform, the archive's
//	    download URL (URL-BASE/its file name) and SHA-256.
//	release archive --layout=DIR --ref-name=v0.2.0 --name=REGISTRY/REPO:TAG --output=FILE
//	    writes the index REF-NAME of the layout as an OCI archive whose entry names it NAME, which
//	    a node's containerd imports under that name (`k3s ctr images import`, `kind load
//	    image-archive`): a cluster without a registry then runs it.
//
// Credentials come from the Docker configuration ($DOCKER_CONFIG or ~/.docker/config.json, what
// `docker login` and CI login actions write), through go-containerregistry's default keychain.
// --insecure talks plain HTTP, for a registry on localhost (the release test).
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "push":
		err = pushCommand(os.Args[2:])
	case "sbom":
		err = sbomCommand(os.Args[2:])
	case "bundle-image":
		err = bundleImageCommand(os.Args[2:])
	case "catalog-image":
		err = catalogImageCommand(os.Args[2:])
	case "krew-manifest":
		err = krewManifestCommand(os.Args[2:])
	case "archive":
		err = archiveCommand(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "release %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: release push|sbom|bundle-image|catalog-image|krew-manifest|archive [flags] (see the package comment)")
	os.Exit(2)
}

// newFlagSet returns a flag set that exits on a parse error, as the command's top-level flags would.
func newFlagSet(name string) *flag.FlagSet {
	return flag.NewFlagSet("release "+name, flag.ExitOnError)
}

// writeDigestFile writes digest and a newline to path, when path is set.
func writeDigestFile(path, digest string) error {
	if path == "" {
		return nil
	}
	return os.WriteFile(path, []byte(digest+"\n"), 0o644)
}

// sourceDateEpoch returns the time of SOURCE_DATE_EPOCH (https://reproducible-builds.org), or the
// Unix epoch, as hack/image does: what the release writes is the same for the same sources.
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
