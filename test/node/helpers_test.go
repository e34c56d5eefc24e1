//go:build node

package node

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

const (
	// The chart's release as the walkthroughs install it: namespace, release and Deployment name.
	operatorNamespace  = "service-router-system"
	operatorDeployment = "service-router-operator"
	operatorContainer  = "manager"
	// podTimeout bounds a rollout: an image pull from the world's registry and a start.
	podTimeout = 2 * time.Minute
	// convergeTimeout bounds the operator's and ExternalDNS' work after a change.
	convergeTimeout = 90 * time.Second
)

// startWorld starts a node world of n nodes for the test, or fails it with the world's logs.
func startWorld(t *testing.T, nodes int) *framework.NodeWorld {
	t.Helper()
	w, err := framework.StartNodeWorld(t.Context(), t, t.Logf, framework.NodeWorldOptions{Nodes: nodes})
	if err != nil {
		if w != nil {
			t.Logf("logs:\n%s", w.Logs())
		}
		t.Fatal(err)
	}
	return w
}

// checkOperatorPods checks what a user sees of the operator's pods: n of them, Running and Ready
// through their probes (readiness and liveness declared), never restarted, running the image
// pushed to registry in place of docRegistry.
func checkOperatorPods(t *testing.T, pods []corev1.Pod, n int, docRegistry, registry string) {
	t.Helper()
	if len(pods) != n {
		t.Fatalf("%d operator pods, want %d", len(pods), n)
	}
	for _, p := range pods {
		var c *corev1.Container
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == operatorContainer {
				c = &p.Spec.Containers[i]
			}
		}
		if c == nil {
			t.Fatalf("pod %s has no container %s", p.Name, operatorContainer)
		}
		if !strings.HasPrefix(c.Image, registry+"/") {
			t.Errorf("pod %s runs %s; the walkthrough pushed to %s (in place of %s)", p.Name, c.Image, registry, docRegistry)
		}
		if c.ReadinessProbe == nil || c.LivenessProbe == nil {
			t.Errorf("pod %s: the operator's container declares no readiness or liveness probe", p.Name)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount > 0 || !cs.Ready || cs.State.Running == nil {
				t.Errorf("pod %s container %s: ready %v, running %v, %d restarts", p.Name, cs.Name, cs.Ready, cs.State.Running != nil, cs.RestartCount)
			}
		}
	}
}

// operatorDiagnostics returns a function describing the operator's pods, for failure messages.
func operatorDiagnostics(ctx context.Context, w *framework.NodeWorld) func() string {
	return func() string { return w.Diagnostics(ctx, operatorNamespace) }
}

func describeAll(fns []func() string) string {
	parts := make([]string, 0, len(fns))
	for _, f := range fns {
		parts = append(parts, f())
	}
	return strings.Join(parts, "\n")
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// The projects whose CRDs a test installs in its world (installCRDs).
const (
	istioCRDs              = "Istio"
	externalDNSCRDs        = "ExternalDNS"
	prometheusOperatorCRDs = "Prometheus Operator"
	gatewayAPICRDs         = "Gateway API"
)

// installCRDs installs in w the CRDs of projects, as each project's own install would, or fails
// the test.
func installCRDs(ctx context.Context, t *testing.T, w *framework.NodeWorld, projects ...string) {
	t.Helper()
	install := map[string]func() error{
		istioCRDs:              w.InstallIstioCRDs,
		externalDNSCRDs:        w.InstallExternalDNSCRDs,
		gatewayAPICRDs:         w.InstallGatewayAPICRDs,
		prometheusOperatorCRDs: func() error { return w.InstallPrometheusOperatorCRDs(ctx) },
	}
	for _, p := range projects {
		if err := install[p](); err != nil {
			t.Fatalf("installing the %s CRDs: %v", p, err)
		}
	}
}

// docSection is a section of one of the repository's documents, as a test follows it.
type docSection struct {
	t             *testing.T
	file, heading string
	// text is the section, from its heading to the next of the same level.
	text string
}

// readDocSection reads the section heading of the repository's file, or fails the test.
func readDocSection(t *testing.T, file, heading string) docSection {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	text, err := framework.DocSection(string(data), heading)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return docSection{t: t, file: file, heading: heading, text: text}
}

// block is the section's one fenced block that contains substr, or fails the test.
func (d docSection) block(substr string) string {
	d.t.Helper()
	b, err := framework.BlockWith(d.text, substr)
	if err != nil {
		d.t.Fatalf("%s, section %q: %v", d.file, d.heading, err)
	}
	return b
}
