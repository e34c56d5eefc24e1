// Command cp is the `cp` of the node world's OLM image. Upstream's image is distroless/static:debug,
// whose busybox gives /bin/cp, and OLM's pods exec it: the bundle unpack Job's init container runs
// `/bin/cp -Rv /bin/cpb /util/cpb`, a CatalogSource with spec.grpcPodConfig.extractContent runs
// `cp /bin/copy-content /utilities/copy-content`. Both copy one regular file into an empty volume;
// this does that (keeping the mode, so the copy stays executable) and nothing more: -R and -v are
// accepted and -v prints what busybox prints.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	var verbose bool
	var paths []string
	for _, a := range os.Args[1:] {
		switch {
		case len(a) > 1 && a[0] == '-':
			for _, f := range a[1:] {
				switch f {
				case 'v':
					verbose = true
				case 'R', 'r', 'f', 'p':
				default:
					fail(fmt.Errorf("unsupported option -%c", f))
				}
			}
		default:
			paths = append(paths, a)
		}
	}
	if len(paths) != 2 {
		fail(fmt.Errorf("usage: cp [-Rv] SOURCE DEST"))
	}
	src, dst := paths[0], paths[1]
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		dst = filepath.Join(dst, filepath.Base(src))
	}
	if err := copyFile(src, dst); err != nil {
		fail(err)
	}
	if verbose {
		fmt.Printf("'%s' -> '%s'\n", src, dst)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", src)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "cp:", err)
	os.Exit(1)
}
