//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The demo (hack/demo, `make demo`) is tested as users run it: the binary, from the repository
// root, with a state directory of its own.

// demoTimeout bounds one demo run; it converges in seconds on a warm machine.
const demoTimeout = 3 * time.Minute

// demoLines are what the report must show for the samples: the generated records, the Istio
// Gateway hosts and the dig answers of both service hostnames (CNAME to the gateway hostname and
// its A record with the load balancer address).
var demoLines = []*regexp.Regexp{
	regexp.MustCompile(`myapp/api-route-external-dns-weu\s+\[external-dns-weu, published in the zone below\]`),
	regexp.MustCompile(`CNAME api-ns-d-dev-myapp\.example\.com -> aks01-weu-internal\.example\.com`),
	regexp.MustCompile(`A aks01-weu-internal\.example\.com -> 10\.123\.45\.67`),
	regexp.MustCompile(`host myapp/api-ns-d-dev-myapp\.example\.com`), // namespace-scoped Istio hosts
	regexp.MustCompile(`host myapp/web-ns-d-dev-myapp\.example\.com`),
	regexp.MustCompile(`(?m)^  api-ns-d-dev-myapp\.example\.com\.\s+IN\s+CNAME\s+aks01-weu-internal\.example\.com\.$`),
	regexp.MustCompile(`(?m)^  web-ns-d-dev-myapp\.example\.com\.\s+IN\s+CNAME\s+aks01-weu-internal\.example\.com\.$`),
	regexp.MustCompile(`(?m)^  aks01-weu-internal\.example\.com\.\s+IN\s+A\s+10\.123\.45\.67$`),
	// The per-zone publication state the operator found by asking the zone's name server.
	regexp.MustCompile(`ServiceRoute myapp/api-route\s+PUBLISHED 1/1\s+external-dns-weu=Published \(CNAME aks01-weu-internal\.example\.com\. → A 10\.123\.45\.67\)`),
	regexp.MustCompile(`Gateway istio-system/default-gateway\s+PUBLISHED 1/3\s+external-dns-weu=Published \(A 10\.123\.45\.67\), external-dns-neu=Unverified, external-dns-frc=Unverified`),
}

// TestDemo_CheckModeReportsTheDNSChain runs `demo --check`: it must print the report with the
// whole DNS chain, exit 0, and leave no process and no state behind.
func TestDemo_CheckModeReportsTheDNSChain(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "demo-state")
	ctx, cancel := context.WithTimeout(t.Context(), demoTimeout)
	defer cancel()
	start := time.Now()
	cmd := demoCommand(ctx, t, "--check", "--state-dir="+stateDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo --check: %v\n%s", err, out)
	}
	t.Logf("demo --check took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	assertDemoReport(t, string(out))
	assertDemoGone(t, stateDir)
}

// TestDemo_GatewayAPIBackendReportsListenerSets runs `demo --check --backend=GatewayAPI`: the
// sample Gateway switched to the Gateway API backend, the ListenerSet of the routes' namespace in
// the report, and the same DNS chain.
func TestDemo_GatewayAPIBackendReportsListenerSets(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "demo-state")
	ctx, cancel := context.WithTimeout(t.Context(), demoTimeout)
	defer cancel()
	out, err := demoCommand(ctx, t, "--check", "--backend=GatewayAPI", "--state-dir="+stateDir).CombinedOutput()
	if err != nil {
		t.Fatalf("demo --check --backend=GatewayAPI: %v\n%s", err, out)
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`Gateway API Gateway istio-system/default-gateway \(gateway\.networking\.k8s\.io/v1, class istio`),
		regexp.MustCompile(`ListenerSet istio-system/default-gateway\.myapp \(routes of namespace myapp only\)`),
		regexp.MustCompile(`listener https-api-ns-d-dev-myapp\.example\.com\s+HTTPS 443\s+api-ns-d-dev-myapp\.example\.com\s+certificate cert-aks-ingress in aks-istio-ingress`),
		regexp.MustCompile(`ReferenceGrant aks-istio-ingress/service-router\.istio-system\.default-gateway`),
		regexp.MustCompile(`(?m)^  api-ns-d-dev-myapp\.example\.com\.\s+IN\s+CNAME\s+aks01-weu-internal\.example\.com\.$`),
		regexp.MustCompile(`(?m)^  aks01-weu-internal\.example\.com\.\s+IN\s+A\s+10\.123\.45\.67$`),
	} {
		if !re.Match(out) {
			t.Errorf("the demo's report lacks a line matching %s\n%s", re, out)
		}
	}
	assertDemoGone(t, stateDir)
}

// TestDemo_DownStopsARunningDemo runs the demo as `make demo` does, explores it as the printed
// instructions say (kubeconfig, kubectl, dig), then stops it with `demo --down` as `make
// demo-down` does: every process ends and the state directory is removed.
func TestDemo_DownStopsARunningDemo(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "demo-state")
	ctx, cancel := context.WithTimeout(t.Context(), demoTimeout)
	defer cancel()
	out := &syncBuffer{}
	cmd := demoCommand(ctx, t, "--state-dir="+stateDir)
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { // stops the demo if the test failed before stopping it
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})

	err := framework.Poll(ctx, demoTimeout, 100*time.Millisecond, "the demo to print its exploration instructions", func(context.Context) (bool, string, error) {
		select {
		case <-exited:
			return false, "", fmt.Errorf("the demo exited early: %v\n%s", waitErr, out.String())
		default:
		}
		return strings.Contains(out.String(), "Stop with Ctrl-C"), "", nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("demo ready in %s:\n%s", time.Since(start).Round(time.Millisecond), out.String())
	assertDemoReport(t, out.String())

	// The exploration instructions work: the kubeconfig reaches the cluster and dig the zone.
	env, err := os.ReadFile(filepath.Join(stateDir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^export (\w+)=(.*)$`).FindAllStringSubmatch(string(env), -1) {
		vars[m[1]] = m[2]
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := exec.CommandContext(ctx, filepath.Join(root, "bin", "kubectl"), "get", "router", "-A")
	kubectl.Env = append(os.Environ(), "KUBECONFIG="+vars["KUBECONFIG"])
	got, err := kubectl.CombinedOutput()
	if err != nil || !bytes.Contains(got, []byte("api-ns-d-dev-myapp.example.com")) {
		t.Errorf("kubectl get router -A with the demo's KUBECONFIG: %v\n%s", err, got)
	}
	port, err := strconv.Atoi(vars["DEMO_DNS_PORT"])
	if err != nil {
		t.Fatalf("DEMO_DNS_PORT in %s: %v", env, err)
	}
	ans, err := framework.Dig(ctx, port, "web-ns-d-dev-myapp.example.com", "A")
	if err != nil || !framework.Resolves("CNAME aks01-weu-internal.example.com.", "A 10.123.45.67").Matches(ans) {
		t.Errorf("dig web-ns-d-dev-myapp.example.com against the demo's zone: %s, %v", ans, err)
	}

	// `make demo-down`.
	downStart := time.Now()
	down := demoCommand(ctx, t, "--down", "--state-dir="+stateDir)
	if got, err := down.CombinedOutput(); err != nil {
		t.Fatalf("demo --down: %v\n%s", err, got)
	} else {
		t.Logf("demo --down took %s:\n%s", time.Since(downStart).Round(time.Millisecond), got)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("the demo exited with %v after demo --down, want 0\n%s", waitErr, out.String())
		}
	case <-ctx.Done():
		t.Fatal("the demo still runs after demo --down returned")
	}
	assertDemoGone(t, stateDir)
}

// demoCommand runs bin/demo from the repository root, as `make demo` does.
func demoCommand(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("E2E_DEMO_BINARY")
	if bin == "" {
		bin = filepath.Join(root, "bin", "demo")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s not found: run `make demo-build` (`make e2e` does): %v", bin, err)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// On timeout the demo gets SIGTERM, as from Ctrl-C, so that it still stops what it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Minute
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KUBEBUILDER_ASSETS="+filepath.Join(root, "bin"))
	return cmd
}

func assertDemoReport(t *testing.T, out string) {
	t.Helper()
	for _, re := range demoLines {
		if !re.MatchString(out) {
			t.Errorf("the demo's report lacks a line matching %s", re)
		}
	}
}

// assertDemoGone checks that the state directory is gone and that no process refers to it: every
// process the demo starts has a path under it (its TMPDIR) on its command line.
func assertDemoGone(t *testing.T, stateDir string) {
	t.Helper()
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Errorf("the state directory %s still exists (%v)", stateDir, err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(stateDir)) {
			t.Errorf("process %s still runs after the demo stopped: %s", e.Name(), bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a process writing while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
