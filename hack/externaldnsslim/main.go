// Command externaldnsslim prepares the build of bin/external-dns with only the DNS providers this
// project runs (rfc2136 for the demo and the end-to-end suite, azure-private-dns for the AKS
// world), so that a first `make demo` does not download and compile the SDKs of the twenty other
// providers: about a third of ExternalDNS' packages.
//
// ExternalDNS cannot be built that way as it is published: its main calls controller.Execute,
// whose package imports provider/factory, which imports every provider unconditionally (no build
// tags). So this command copies the ExternalDNS module the tools module selects
// (hack/tools/external-dns, from the Go module cache) into --out, drops the other providers from
// the copy's provider/factory/provider.go (their import lines and their entries in the table of
// constructors; nothing else in the module changes), and writes a go.mod and go.sum for
// `go build -modfile`: the tools module's own, replacing sigs.k8s.io/external-dns with the copy.
// Every other module, and every line of ExternalDNS but those table entries, is what upstream
// ships in that version. A provider the table no longer holds is refused as ExternalDNS refuses an unknown
// one ("unknown dns provider").
//
// It is run by the bin/external-dns rule of hack/make/tools.mk.
//
// Usage:
//
//	externaldnsslim --tools-module=hack/tools/external-dns --out=DIR --keep=rfc2136,azure
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

const (
	externalDNSModule = "sigs.k8s.io/external-dns"
	// factoryFile is the file of the module that imports every provider.
	factoryFile = "provider/factory/provider.go"
)

func main() {
	toolsModule := flag.String("tools-module", "hack/tools/external-dns", "the tools module that requires "+externalDNSModule)
	out := flag.String("out", "", "where to write the module copy (src/), go.mod and go.sum")
	keep := flag.String("keep", "rfc2136,azure", "the provider packages (provider/<name>) to keep, comma-separated")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "externaldnsslim: --out is required")
		os.Exit(2)
	}
	if err := run(*toolsModule, *out, strings.Split(*keep, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "externaldnsslim:", err)
		os.Exit(1)
	}
}

func run(toolsModule, out string, keep []string) error {
	moduleDir, err := downloadedModule(toolsModule)
	if err != nil {
		return err
	}
	out, err = filepath.Abs(out)
	if err != nil {
		return err
	}
	src := filepath.Join(out, "src")
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	// The module cache's files are read-only; the copies are writable (os.CopyFS).
	if err := os.CopyFS(src, os.DirFS(moduleDir)); err != nil {
		return err
	}
	factory, err := os.ReadFile(filepath.Join(src, factoryFile))
	if err != nil {
		return err
	}
	slim, err := keepProviders(string(factory), keep)
	if err != nil {
		return fmt.Errorf("%s of %s: %w", factoryFile, moduleDir, err)
	}
	if err := os.WriteFile(filepath.Join(src, factoryFile), []byte(slim), 0o644); err != nil {
		return err
	}
	goMod, err := os.ReadFile(filepath.Join(toolsModule, "go.mod"))
	if err != nil {
		return err
	}
	goSum, err := os.ReadFile(filepath.Join(toolsModule, "go.sum"))
	if err != nil {
		return err
	}
	replace := fmt.Sprintf("\n// Written by hack/externaldnsslim: ExternalDNS with the providers %s only.\nreplace %s => %s\n",
		strings.Join(keep, ", "), externalDNSModule, src)
	if err := os.WriteFile(filepath.Join(out, "go.mod"), append(goMod, replace...), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "go.sum"), goSum, 0o644)
}

// downloadedModule returns the module cache directory of the ExternalDNS version the tools module
// requires, downloading it (from the module proxy, checked against go.sum) if needed.
func downloadedModule(toolsModule string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", externalDNSModule)
	cmd.Dir = toolsModule
	cmd.Stderr = os.Stderr
	data, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s in %s: %w", externalDNSModule, toolsModule, err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(data, &m); err != nil {
		return "", err
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", externalDNSModule, cmp.Or(m.Error, "no module directory"))
	}
	return m.Dir, nil
}

var (
	providerImport = regexp.MustCompile(`^\s*"sigs\.k8s\.io/external-dns/provider/([a-z0-9]+)"\s*$`)
	// an entry of the constructors' table: `externaldns.ProviderRFC2136: rfc2136.New,`
	providerEntry = regexp.MustCompile(`^\s*externaldns\.Provider\w+:\s*([a-z0-9]+)\.\w+,\s*$`)
)

// keepProviders returns provider/factory/provider.go without the import lines and table entries of
// the providers not in keep. It fails when the file is not shaped as expected (an ExternalDNS
// upgrade that moved the table), when a kept provider is not there, or when a dropped provider's
// package is still used elsewhere in the file: better no build than a binary that differs from
// upstream in more than the table.
func keepProviders(file string, keep []string) (string, error) {
	var lines, dropped []string
	entries := map[string]int{}
	for line := range strings.SplitSeq(file, "\n") {
		if m := providerImport.FindStringSubmatch(line); m != nil && !slices.Contains(keep, m[1]) {
			dropped = append(dropped, m[1])
			continue
		}
		if m := providerEntry.FindStringSubmatch(line); m != nil {
			if !slices.Contains(keep, m[1]) {
				continue
			}
			entries[m[1]]++
		}
		lines = append(lines, line)
	}
	if len(dropped) == 0 {
		return "", errors.New("no provider import found: the file is not shaped as this command expects")
	}
	for _, name := range keep {
		if entries[name] == 0 {
			return "", fmt.Errorf("provider %q: no entry in the table of constructors", name)
		}
	}
	slim := strings.Join(lines, "\n")
	for _, name := range dropped {
		if regexp.MustCompile(`\b` + name + `\.`).MatchString(slim) {
			return "", fmt.Errorf("provider %q is used outside the import list and the table", name)
		}
	}
	return slim, nil
}
