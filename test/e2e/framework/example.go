package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ExternalDNSExample is an ExternalDNS configuration as a user deploys it: a values file (for
// example docs/examples/external-dns/weu-values.yaml) rendered by ExternalDNS's own Helm chart,
// and the container arguments the chart gives it. Tests run ExternalDNS with these arguments
// instead of the framework's own (ExternalDNSOptions.Args, via LocalArgs), so that what is
// proven is what users copy.
type ExternalDNSExample struct {
	ValuesFile string
	Release    string
	// ChartArgs are the arguments of the rendered Deployment's container, as in a cluster.
	ChartArgs []string
}

// exampleKubeVersion is the Kubernetes version the chart is rendered for: the control plane's.
const exampleKubeVersion = "1.37.2"

// HelmBinary returns $E2E_HELM_BINARY or <repo>/bin/helm (built by `make e2e`).
func HelmBinary() (string, error) {
	if p := os.Getenv("E2E_HELM_BINARY"); p != "" {
		return p, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	p := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found: run `make e2e` (it builds helm once): %w", p, err)
	}
	return p, nil
}

// ExternalDNSChart returns the directory of the Helm chart shipped in the sigs.k8s.io/external-dns
// module the operator's go.mod selects: the chart of the ExternalDNS version the suite runs.
func ExternalDNSChart(ctx context.Context) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "sigs.k8s.io/external-dns")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating the sigs.k8s.io/external-dns module: %w", err)
	}
	var module struct{ Dir string }
	if err := json.Unmarshal(out, &module); err != nil || module.Dir == "" {
		return "", fmt.Errorf("go mod download -json sigs.k8s.io/external-dns: no module directory in %s", out)
	}
	return filepath.Join(module.Dir, "charts", "external-dns"), nil
}

// RenderExternalDNSExample renders ExternalDNS's chart as release with valuesFile (`helm template`,
// namespace external-dns) in cluster, as docs/INSTALLATION.md's loop installs it (the owner ID
// <release>-<cluster> given with --set: the example values name none), and returns the container
// arguments of its Deployment.
func RenderExternalDNSExample(ctx context.Context, valuesFile, release, cluster string) (*ExternalDNSExample, error) {
	helm, err := HelmBinary()
	if err != nil {
		return nil, err
	}
	chart, err := ExternalDNSChart(ctx)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, helm, "template", release, chart, "--namespace", "external-dns",
		"--kube-version", exampleKubeVersion, "-f", valuesFile, "--set", "txtOwnerId="+release+"-"+cluster)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template %s with %s: %w\n%s", release, valuesFile, err, stderr.String())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var deployments []*appsv1.Deployment
	for {
		var doc struct {
			Kind string `json:"kind"`
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("the chart's output for %s: %w", valuesFile, err)
		}
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		if err := json.Unmarshal(raw, &doc); err != nil || doc.Kind != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := json.Unmarshal(raw, d); err != nil {
			return nil, err
		}
		deployments = append(deployments, d)
	}
	if len(deployments) != 1 || len(deployments[0].Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("the chart rendered %d Deployments for %s, want one with a container", len(deployments), valuesFile)
	}
	return &ExternalDNSExample{ValuesFile: valuesFile, Release: release, ChartArgs: deployments[0].Spec.Template.Spec.Containers[0].Args}, nil
}

// Flag returns the value of the last --name=value among the chart's arguments ("" if absent).
func (x *ExternalDNSExample) Flag(name string) string {
	v := ""
	for _, a := range x.ChartArgs {
		if rest, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			v = rest
		}
	}
	return v
}

// LocalArgs returns the arguments for an ExternalDNS process on this machine writing into b:
// the chart's arguments with only what cannot be the same here replaced, and the list of what was
// replaced. The provider (--provider and every flag of its family, e.g. --azure-*) becomes rfc2136
// against b: its address, port and zone, TSIG when b has a key (otherwise --rfc2136-insecure), and
// zone transfers (--rfc2136-axfr: without them the provider cannot list the zone, so it could
// never update or delete). Sources, filters, registry, owner ID, TXT prefix, policy, interval and
// domain filter stay the example's. The framework adds --kubeconfig and --metrics-address.
func (x *ExternalDNSExample) LocalArgs(b *BindServer) (args, replaced []string) {
	provider := x.Flag("provider")
	family := "--" + strings.SplitN(provider, "-", 2)[0] + "-"
	for _, a := range x.ChartArgs {
		if strings.HasPrefix(a, "--provider=") || (provider != "" && strings.HasPrefix(a, family)) {
			replaced = append(replaced, a)
			continue
		}
		args = append(args, a)
	}
	args = append(args,
		"--provider=rfc2136",
		"--rfc2136-host=127.0.0.1",
		"--rfc2136-port="+strconv.Itoa(b.Port),
		"--rfc2136-zone="+b.Zone,
		"--rfc2136-axfr",
	)
	return append(args, b.TSIG.ExternalDNSArgs()...), replaced
}
