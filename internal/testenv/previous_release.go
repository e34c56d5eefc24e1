package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// The 0.1.0 release, the one an upgrade starts from: the last commit of 2026-11-22 (CHANGELOG;
// there is no tag). Its chart installs the CRDs from crds/, and its operator is what published the
// records an upgrade must keep.
const (
	PreviousRelease        = "1d8314e87a5e403a05e7537530869618fb4abb52"
	PreviousReleaseVersion = "0.1.0"
)

// ExternalDNSIntermediates is the last commit whose routes published each failover policy's
// intermediate name through ExternalDNS (its DNSEndpoints carried the intermediate's CNAME beside
// the name): the version an upgrade to operator-written intermediates starts from.
const ExternalDNSIntermediates = "a54f9d6ecb24f601910d9738f8d92a0d378e782f"

// ExtractPreviousRelease writes the tree of PreviousRelease into dir (ExtractCommit) and checks
// that it is that release (its chart's version).
func ExtractPreviousRelease(root, dir string) error {
	if err := ExtractCommit(root, PreviousRelease, dir); err != nil {
		return err
	}
	chart, err := os.ReadFile(filepath.Join(dir, "charts", "service-router-operator", "Chart.yaml"))
	if err != nil || !bytes.Contains(chart, []byte("\nversion: "+PreviousReleaseVersion+"\n")) {
		return fmt.Errorf("commit %s is not the %s release (its Chart.yaml: %v)", PreviousRelease, PreviousReleaseVersion, err)
	}
	return nil
}

// ExtractCommit writes the tree of commit into dir with git archive (the working tree and the
// index are left alone). It needs the repository's history: a shallow clone has no such commit.
func ExtractCommit(root, commit, dir string) error {
	archive := exec.Command("git", "archive", "--format=tar", commit)
	archive.Dir = root
	var tarball, stderr bytes.Buffer
	archive.Stdout, archive.Stderr = &tarball, &stderr
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive %s (the test needs the repository's history, not a shallow clone): %v: %s", commit, err, stderr.String())
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		return fmt.Errorf("tar: %v: %s", err, out)
	}
	return nil
}
