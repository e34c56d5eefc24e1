package main

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// containerdImageName is the annotation containerd's importer (`ctr images import`, which `k3s ctr
// images import` and `kind load image-archive` run) names an imported image by.
const containerdImageName = "io.containerd.image.name"

// archiveCommand writes the index refName of an OCI layout as an OCI archive (a tar of a layout
// holding only that index) whose entry names it, so that a node's containerd imports it under
// that name: a cluster without a registry (k3s, kind) then runs it with imagePullPolicy Never.
func archiveCommand(args []string) error {
	fs := newFlagSet("archive")
	layoutDir := fs.String("layout", "", "OCI image layout directory (make image writes dist/image)")
	refName := fs.String("ref-name", "", "org.opencontainers.image.ref.name of the index, e.g. v0.2.0")
	imageName := fs.String("name", "", "the image's name in the nodes' containerd, REGISTRY/REPOSITORY:TAG (a registry host, e.g. localhost, so that the kubelet's name for it is the same)")
	output := fs.String("output", "", "the archive to write")
	_ = fs.Parse(args)
	if *layoutDir == "" || *refName == "" || *imageName == "" || *output == "" {
		return errors.New("--layout, --ref-name, --name and --output are required")
	}
	index, err := namedIndex(*layoutDir, *refName)
	if err != nil {
		return err
	}
	if err := writeArchive(index, *imageName, *output); err != nil {
		return err
	}
	digest, err := index.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s (%s@%s)\n", *output, *imageName, digest)
	return nil
}

// writeArchive writes index into a new OCI layout, its entry annotated with imageName, and that
// layout as a tar at output.
func writeArchive(index v1.ImageIndex, imageName, output string) error {
	tag, err := name.NewTag(imageName)
	if err != nil {
		return fmt.Errorf("--name %q: %w", imageName, err)
	}
	// The kubelet asks containerd for the image by its normalized name (a first component without
	// a dot, a colon or "localhost" gets docker.io/library/ or docker.io/ in front), and the
	// importer stores the name as given: only a name that is already normalized is found.
	host, _, found := strings.Cut(imageName, "/")
	if !found || (!strings.ContainsAny(host, ".:") && host != "localhost") {
		return fmt.Errorf("--name %q: start it with a registry host (localhost/%s): the kubelet looks an image up by its full name", imageName, imageName)
	}
	dir, err := os.MkdirTemp("", "image-archive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := path.AppendIndex(index, layout.WithAnnotations(map[string]string{
		containerdImageName: imageName,
		refNameAnnotation:   tag.TagStr(),
	})); err != nil {
		return err
	}
	return tarDirectory(dir, output)
}

// tarDirectory writes the files under dir into a tar at output, with fixed times and owners (the
// same image gives the same archive).
func tarDirectory(dir, output string) error {
	if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
		return err
	}
	f, err := os.Create(output)
	if err != nil {
		return err
	}
	epoch, err := sourceDateEpoch()
	if err != nil {
		f.Close()
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch, Mode: 0o644, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if d.IsDir() {
			hdr.Name, hdr.Mode, hdr.Typeflag = hdr.Name+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(hdr)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr.Size = info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}
