package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
)

// The SBOM is SPDX 2.3 JSON (https://spdx.github.io/spdx-spec/v2.3/), written from what the Go
// linker records in every binary (debug/buildinfo: the main module, each dependency module with
// its version and go.sum hash, the Go version). That is exactly the code in the image: the image
// is scratch plus the binary, so there is nothing else to list. It works offline and needs no
// scanner (syft, trivy): those download their own databases or binaries, which this machine and
// the Makefile's rule (everything from the Go module proxy) exclude. What it does not know:
// licenses (NOASSERTION; they would need the module sources), and C code (there is none:
// CGO_ENABLED=0).

type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name                  string            `json:"name"`
	SPDXID                string            `json:"SPDXID"`
	VersionInfo           string            `json:"versionInfo,omitempty"`
	Supplier              string            `json:"supplier,omitempty"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	LicenseConcluded      string            `json:"licenseConcluded"`
	LicenseDeclared       string            `json:"licenseDeclared"`
	CopyrightText         string            `json:"copyrightText"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose,omitempty"`
	Comment               string            `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

type binaryFlags map[string]string

func (b binaryFlags) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaryFlags) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want OS/ARCH=PATH, got %q", v)
	}
	b[platform] = path
	return nil
}

func sbomCommand(args []string) error {
	fs := newFlagSet("sbom")
	binaries := binaryFlags{}
	fs.Var(binaries, "binary", "OS/ARCH=PATH of a binary in the image; repeat for every platform")
	docName := fs.String("name", "service-router-operator", "name of the software")
	version := fs.String("version", "", "release version, e.g. v0.2.0")
	image := fs.String("image", "", "the pushed image, REPOSITORY@sha256:...")
	output := fs.String("output", "", "SPDX JSON file to write")
	_ = fs.Parse(args)
	if *version == "" || *image == "" || *output == "" || len(binaries) == 0 {
		return errors.New("--version, --image, --output and at least one --binary are required")
	}
	doc, err := buildSBOM(*docName, *version, *image, binaries)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*output, append(data, '\n'), 0o644)
}

var spdxIDUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// spdxID turns a name into an SPDX identifier (letters, digits, '.' and '-' only).
func spdxID(kind, name string) string {
	return "SPDXRef-" + kind + "-" + strings.Trim(spdxIDUnsafe.ReplaceAllString(name, "-"), "-")
}

// goPURL is the package URL of a Go module (https://github.com/package-url/purl-spec, type golang).
func goPURL(path, version string) string {
	return "pkg:golang/" + path + "@" + url.PathEscape(version)
}

func buildSBOM(docName, version, image string, binaries map[string]string) (*spdxDocument, error) {
	repository, digest, ok := strings.Cut(image, "@")
	algorithm, hexDigest, ok2 := strings.Cut(digest, ":")
	if !ok || !ok2 || algorithm != "sha256" {
		return nil, fmt.Errorf("--image %q is not REPOSITORY@sha256:HEX", image)
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return nil, err
	}
	doc := &spdxDocument{
		SPDXVersion: "SPDX-2.3",
		DataLicense: "CC0-1.0",
		SPDXID:      "SPDXRef-DOCUMENT",
		Name:        docName + "-" + version,
		// Unique per image: the digest identifies what the document describes.
		DocumentNamespace: "https://github.com/service-router/service-router-operator/spdx/" + version + "/" + hexDigest,
		CreationInfo: spdxCreationInfo{
			Created:  created.Format("2006-01-02T15:04:05Z"),
			Creators: []string{"Tool: service-router-operator hack/image/release sbom (Go build information)"},
		},
	}
	imageID := spdxID("Image", docName)
	imageName := repository[strings.LastIndex(repository, "/")+1:]
	doc.Packages = append(doc.Packages, spdxPackage{
		Name: docName, SPDXID: imageID, VersionInfo: version, DownloadLocation: "NOASSERTION",
		Checksums:        []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: hexDigest}},
		LicenseConcluded: "NOASSERTION", LicenseDeclared: "Apache-2.0", CopyrightText: "NOASSERTION",
		ExternalRefs: []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
			ReferenceLocator: "pkg:oci/" + imageName + "@" + url.QueryEscape(digest) + "?repository_url=" + url.QueryEscape(repository)}},
		PrimaryPackagePurpose: "CONTAINER",
		Comment:               "the multi-architecture image index " + image + "; the checksum is its digest",
	})
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", imageID})

	modules := map[string]spdxPackage{}
	platforms := make([]string, 0, len(binaries))
	for p := range binaries {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	for _, platform := range platforms {
		path := binaries[platform]
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		info, err := buildinfo.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: no Go build information: %w", path, err)
		}
		sum := sha256.Sum256(data)
		binaryID := spdxID("Binary", "manager-"+platform)
		mainVersion := info.Main.Version
		if mainVersion == "" || mainVersion == "(devel)" {
			mainVersion = version // built from the work tree: the version is the release's
		}
		var settings []string
		for _, s := range info.Settings {
			switch s.Key {
			case "GOOS", "GOARCH", "CGO_ENABLED", "-trimpath", "-ldflags", "vcs.revision", "vcs.modified":
				settings = append(settings, s.Key+"="+s.Value)
			}
		}
		doc.Packages = append(doc.Packages, spdxPackage{
			Name: info.Main.Path, SPDXID: binaryID, VersionInfo: mainVersion, DownloadLocation: "NOASSERTION",
			Checksums:        []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: hex.EncodeToString(sum[:])}},
			LicenseConcluded: "NOASSERTION", LicenseDeclared: "Apache-2.0", CopyrightText: "NOASSERTION",
			ExternalRefs: []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
				ReferenceLocator: goPURL(info.Main.Path, mainVersion)}},
			PrimaryPackagePurpose: "APPLICATION",
			Comment:               "/manager for " + platform + ", built with " + info.GoVersion + " (" + strings.Join(settings, " ") + ")",
		})
		doc.Relationships = append(doc.Relationships, spdxRelationship{imageID, "CONTAINS", binaryID})

		// The Go standard library is compiled in too, at the toolchain's version.
		stdlibVersion := strings.TrimPrefix(info.GoVersion, "go")
		deps := []spdxPackage{{Name: "stdlib", VersionInfo: info.GoVersion,
			ExternalRefs: []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
				ReferenceLocator: goPURL("stdlib", stdlibVersion)}}}}
		for _, dep := range info.Deps {
			m := dep
			if dep.Replace != nil {
				m = dep.Replace // what was compiled
			}
			pkg := spdxPackage{Name: m.Path, VersionInfo: m.Version,
				ExternalRefs: []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
					ReferenceLocator: goPURL(m.Path, m.Version)}}}
			if m.Sum != "" {
				// go.sum's h1: hash (base64 SHA-256 of the module's file tree), kept as a comment:
				// SPDX checksums are hex digests of the package's own bytes.
				pkg.Comment = "go.sum " + m.Sum
			}
			if dep.Replace != nil {
				pkg.Comment = strings.TrimSpace(pkg.Comment + "; replaces " + dep.Path + " " + dep.Version)
			}
			deps = append(deps, pkg)
		}
		for _, pkg := range deps {
			pkg.SPDXID = spdxID("Go", pkg.Name+"-"+pkg.VersionInfo)
			pkg.DownloadLocation = "NOASSERTION"
			pkg.LicenseConcluded, pkg.LicenseDeclared, pkg.CopyrightText = "NOASSERTION", "NOASSERTION", "NOASSERTION"
			pkg.PrimaryPackagePurpose = "LIBRARY"
			modules[pkg.SPDXID] = pkg
			doc.Relationships = append(doc.Relationships, spdxRelationship{binaryID, "CONTAINS", pkg.SPDXID})
		}
	}
	ids := make([]string, 0, len(modules))
	for id := range modules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		doc.Packages = append(doc.Packages, modules[id])
	}
	return doc, nil
}
