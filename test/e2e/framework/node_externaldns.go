package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ExternalDNSImageTag is the tag the world's ExternalDNS image carries: the version the example
// values pin (image.tag), of the module the tools build.
const ExternalDNSImageTag = "v0.23.0"

// PushExternalDNSImage packages bin/external-dns (the slim static build, ExternalDNS' own main)
// as an image like the project's: the binary at /bin/external-dns on an empty base, run as
// 65532, and pushes it to the world's registry as external-dns/external-dns:v0.23.0
// (ExternalDNSImageTag). It returns the repository, for the chart's image.repository.
func (w *NodeWorld) PushExternalDNSImage(ctx context.Context) (string, error) {
	binary, err := ExternalDNSBinary()
	if err != nil {
		return "", err
	}
	if out, err := exec.CommandContext(ctx, "file", binary).Output(); err == nil && strings.Contains(string(out), "dynamically linked") {
		return "", fmt.Errorf("%s is dynamically linked: remove it and run `make external-dns` (it builds it static)", binary)
	}
	repository := "external-dns/external-dns"
	_, err = PushBinaryImage(ctx, w.Registry, BinaryImage{
		Repository: repository, Tag: ExternalDNSImageTag,
		Files: map[string]string{"/bin/external-dns": binary}, Entrypoint: []string{"/bin/external-dns"}, User: "65532:65532",
	})
	return w.Registry + "/" + repository, err
}

// ExternalDNSRelease is an ExternalDNS installed in the world with ExternalDNS' own chart.
type ExternalDNSRelease struct {
	// Release is the Helm release, also its Deployment's and service account's name.
	Release, Namespace string
}

// InstallExternalDNSChart installs ExternalDNS' chart (the one in the module go.mod selects) as
// release in namespace external-dns with bin/helm, the values files and --set arguments given
// (what a user's `helm install external-dns/external-dns -f … --set …` would be), the image from
// the world's registry, and waits until its Deployment has rolled out. An upgrade of the same
// release is InstallExternalDNSChart again (helm upgrade --install).
func (w *NodeWorld) InstallExternalDNSChart(ctx context.Context, release string, valuesFiles []string, set ...string) (*ExternalDNSRelease, string, error) {
	helm, err := HelmBinary()
	if err != nil {
		return nil, "", err
	}
	chart, err := ExternalDNSChart(ctx)
	if err != nil {
		return nil, "", err
	}
	args := []string{"upgrade", "--install", release, chart, "--namespace", "external-dns", "--create-namespace",
		"--kubeconfig", w.Kubeconfig, "--set", "image.repository=" + w.Registry + "/external-dns/external-dns"}
	for _, f := range valuesFiles {
		args = append(args, "-f", f)
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	cmd := exec.CommandContext(ctx, helm, args...)
	cmd.Dir = w.root
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(w.Dir, "helm"), "HELM_CACHE_HOME="+filepath.Join(w.Dir, "helm-cache"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, string(out), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	r := &ExternalDNSRelease{Release: release, Namespace: "external-dns"}
	if _, err := w.WaitDeploymentReady(ctx, r.Namespace, release, 2*time.Minute); err != nil {
		return r, string(out), fmt.Errorf("%w\n%s", err, w.Diagnostics(ctx, r.Namespace))
	}
	return r, string(out), nil
}
