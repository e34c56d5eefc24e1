package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"
)

// krewPlatform is one archive of the kubectl plugin, as the krew manifest names it: Bin is the
// binary in the archive, which krew links onto the PATH (kubectl-router.exe on Windows, where
// kubectl finds plugins by that extension).
type krewPlatform struct {
	OS, Arch, URI, SHA256, Bin string
}

// krewManifestCommand renders the krew manifest template with the version and, for each
// --archive=OS/ARCH=PATH, the archive's download URL (--url-base + its file name) and SHA-256.
func krewManifestCommand(args []string) error {
	fs := newFlagSet("krew-manifest")
	tmpl := fs.String("template", "hack/krew/router.yaml", "the krew manifest template")
	version := fs.String("version", "", "the version, without a leading v")
	urlBase := fs.String("url-base", "", "where the release serves the archives")
	output := fs.String("output", "", "the manifest to write")
	archives := binaryFlags{}
	fs.Var(archives, "archive", "OS/ARCH=PATH of a plugin archive (repeated)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *urlBase == "" || *output == "" || len(archives) == 0 {
		return errors.New("--version, --url-base, --output and at least one --archive are required")
	}
	text, err := os.ReadFile(*tmpl)
	if err != nil {
		return err
	}
	var platforms []krewPlatform
	for platform, path := range archives {
		goos, goarch, ok := strings.Cut(platform, "/")
		if !ok {
			return fmt.Errorf("--archive=%s=%s: want OS/ARCH=PATH", platform, path)
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return err
		}
		bin := "kubectl-router"
		if goos == "windows" {
			bin += ".exe"
		}
		platforms = append(platforms, krewPlatform{OS: goos, Arch: goarch, URI: strings.TrimSuffix(*urlBase, "/") + "/" + filepath.Base(path), SHA256: sum, Bin: bin})
	}
	out, err := krewManifest(string(text), *version, platforms)
	if err != nil {
		return err
	}
	return os.WriteFile(*output, out, 0o644)
}

// krewManifest renders the template, platforms sorted by OS then architecture.
func krewManifest(text, version string, platforms []krewPlatform) ([]byte, error) {
	t, err := template.New("krew").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	sort.Slice(platforms, func(i, j int) bool {
		if platforms[i].OS != platforms[j].OS {
			return platforms[i].OS < platforms[j].OS
		}
		return platforms[i].Arch < platforms[j].Arch
	})
	var b bytes.Buffer
	err = t.Execute(&b, struct {
		Version   string
		Platforms []krewPlatform
	}{version, platforms})
	return b.Bytes(), err
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
