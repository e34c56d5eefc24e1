// Command tar is the `tar` of the node world's scorecard-untar image. Upstream's image is ubi9 with
// GNU tar, and operator-sdk scorecard's test pods run it as their init container with
// `tar xvzf /scorecard/bundle.tar.gz -C /scorecard-bundle` to unpack the bundle from a ConfigMap.
// This extracts a gzipped tar of directories and regular files into a directory, printing each
// name as -v does, and nothing more.
package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	args := os.Args[1:]
	if len(args) != 4 || strings.TrimLeft(args[0], "-") != "xvzf" || args[2] != "-C" {
		fail(errors.New("usage: tar xvzf ARCHIVE -C DIR"))
	}
	if err := extract(args[1], args[3]); err != nil {
		fail(err)
	}
}

func extract(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("%s: outside the target directory", h.Name)
		}
		target := filepath.Join(dir, name)
		fmt.Println(h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, os.FileMode(h.Mode).Perm()|0o600)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: unsupported entry type %c", h.Name, h.Typeflag)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tar:", err)
	os.Exit(2)
}
