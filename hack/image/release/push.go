package main

import (
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const refNameAnnotation = "org.opencontainers.image.ref.name"

func pushCommand(args []string) error {
	fs := newFlagSet("push")
	layoutDir := fs.String("layout", "", "OCI image layout directory (make image writes dist/image)")
	refName := fs.String("ref-name", "", "org.opencontainers.image.ref.name of the index to push, e.g. v0.2.0")
	to := fs.String("to", "", "destination REGISTRY/REPOSITORY:TAG")
	insecure := fs.Bool("insecure", false, "plain HTTP (a registry on localhost)")
	digestFile := fs.String("digest-file", "", "file to write the pushed digest to")
	_ = fs.Parse(args)
	if *layoutDir == "" || *refName == "" || *to == "" {
		return errors.New("--layout, --ref-name and --to are required")
	}
	index, err := namedIndex(*layoutDir, *refName)
	if err != nil {
		return err
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

// parseReference parses a destination; insecure allows plain HTTP (name.Insecure), which
// go-containerregistry otherwise uses only for localhost names, not for 127.0.0.1 with a port.
func parseReference(s string, insecure bool) (name.Reference, error) {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(s, opts...)
	if err != nil {
		return nil, fmt.Errorf("destination %q: %w", s, err)
	}
	return ref, nil
}

// namedIndex returns the image index the layout's index.json names refName.
func namedIndex(dir, refName string) (v1.ImageIndex, error) {
	path, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("opening the OCI layout %s (run `make image`): %w", dir, err)
	}
	top, err := path.ImageIndex()
	if err != nil {
		return nil, err
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, d := range manifest.Manifests {
		names = append(names, d.Annotations[refNameAnnotation])
		if d.Annotations[refNameAnnotation] == refName {
			if !d.MediaType.IsIndex() {
				return nil, fmt.Errorf("%s in %s is a %s, not a multi-architecture index", refName, dir, d.MediaType)
			}
			return top.ImageIndex(d.Digest)
		}
	}
	return nil, fmt.Errorf("the layout %s has no index named %q (it has %q): was it built with this VERSION?", dir, refName, names)
}

// pushIndex pushes index (every platform image and the index itself) to ref and returns the digest
// the registry serves it under, which must be the layout's: the chart pins that digest.
func pushIndex(ref name.Reference, index v1.ImageIndex) (v1.Hash, error) {
	want, err := index.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	opts := []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if err := remote.WriteIndex(ref, index, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing to %s: %w", ref, err)
	}
	return checkPushed(ref, want, opts)
}

// checkPushed asks the registry for ref and fails unless it is the digest pushed.
func checkPushed(ref name.Reference, want v1.Hash, opts []remote.Option) (v1.Hash, error) {
	got, err := remote.Head(ref, opts...)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("reading back %s: %w", ref, err)
	}
	if got.Digest != want {
		return v1.Hash{}, fmt.Errorf("the registry serves %s as %s, pushed %s", ref, got.Digest, want)
	}
	return want, nil
}

// pushImage pushes a single-platform image to ref and returns the digest the registry serves.
func pushImage(ref name.Reference, img v1.Image) (v1.Hash, error) {
	want, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	opts := []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if err := remote.Write(ref, img, opts...); err != nil {
		return v1.Hash{}, fmt.Errorf("pushing to %s: %w", ref, err)
	}
	return checkPushed(ref, want, opts)
}
