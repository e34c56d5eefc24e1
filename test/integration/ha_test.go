package integration

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestHA_StandbyTakesOverWhenTheLeaderIsKilled runs two operator processes with leader election,
// each behind its own counting proxy. SIGKILL of the leader (no lease release) must not stop the
// service: a route created right after it is published by the standby once the lease expires.
// No process writes anything but its lease before it holds the lease. The time from the kill to
// the route being Ready is logged (not asserted): with the default lease it is about the lease
// duration, which the --leader-elect-* flags shorten.
func TestHA_StandbyTakesOverWhenTheLeaderIsKilled(t *testing.T) {
	binary := buildOperatorBinary(t)
	cases := []struct {
		name  string
		lease []string
	}{
		{"short lease 5s renew 4s retry 1s", []string{"--leader-elect-lease-duration=5s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}},
		{"default lease 15s renew 10s retry 2s", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.lease == nil && testing.Short() {
				t.Skip("the default lease takes about 20 s to fail over")
			}
			elapsed := failOver(t, binary, c.lease)
			t.Logf("failover with %s: a route created right after SIGKILL of the leader was Ready with its DNSEndpoint after %s",
				c.name, elapsed.Round(100*time.Millisecond))
		})
	}
}

// failOver kills the leader of two operator processes and returns how long a route created right
// after took to be Ready and published.
func failOver(t *testing.T, binary string, leaseArgs []string) time.Duration {
	f := newFixture(t)
	leaseNS := newNamespace(t, "lease")
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), namespaceObject(leaseNS)) })
	f.setIdentity(weuIdentity())
	f.setControllers("weu")

	replicas := []*operatorProcess{
		startOperatorProcess(t, binary, "replica-a", leaseNS, leaseArgs),
		startOperatorProcess(t, binary, "replica-b", leaseNS, leaseArgs),
	}
	var leader, standby *operatorProcess
	waitFor(t, "one replica to hold the lease", func() string {
		for i, r := range replicas {
			if !r.running() {
				return r.name + " exited: " + r.proc.LogTail(20)
			}
			if !r.leaseAcquired().IsZero() {
				leader, standby = r, replicas[1-i]
			}
		}
		if leader == nil {
			return "no lease write succeeded yet"
		}
		return ""
	}, time.Minute)
	t.Logf("%s leads, %s stands by", leader.name, standby.name)

	gw := f.gateway("default-gateway", "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	for _, svc := range []string{"api", "web", "shop"} {
		f.route("", svc+"-route", svc, gw.Name)
	}
	for _, svc := range []string{"api", "web", "shop"} {
		waitRoutePublished(t, f, svc+"-route", time.Minute)
	}
	f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.com")), istioHost(f.ns, f.hostname("shop", "example.com")), istioHost(f.ns, f.hostname("web", "example.com")))
	require.NotEmpty(t, leader.writesTo("externaldns.k8s.io/dnsendpoints"), "the leader's proxy saw no DNSEndpoint write: the counting is broken")
	// A standby reads the Lease and, while it is held, does not even write that. Replicas started
	// together may both find no Lease and both try to create it: the one answered 409 wrote nothing.
	lostCreateRace := func(r testenv.Request) bool {
		return r.Verb == "create" && r.Resource == "coordination.k8s.io/leases" && r.Code == http.StatusConflict
	}
	require.Empty(t, standby.writes(func(r testenv.Request) bool { return !lostCreateRace(r) }), "the standby wrote while another replica led")

	require.NoError(t, syscall.Kill(leader.proc.Pid(), syscall.SIGKILL))
	<-leader.proc.Exited()
	killed := time.Now()
	f.route("", "late-route", "late", gw.Name)
	waitRoutePublished(t, f, "late-route", 2*time.Minute)
	elapsed := time.Since(killed)

	require.True(t, standby.leaseAcquired().After(killed), "the standby held the lease before the leader was killed")
	require.NotEmpty(t, standby.writesTo("externaldns.k8s.io/dnsendpoints"), "the new leader did not publish the new route")
	for _, r := range replicas {
		require.Empty(t, r.writesBeforeLease(), "%s wrote before it held the lease", r.name)
	}
	return elapsed
}

// waitRoutePublished waits until the route is Ready with one DNSEndpoint.
func waitRoutePublished(t *testing.T, f *fixture, name string, timeout time.Duration) {
	t.Helper()
	waitFor(t, fmt.Sprintf("ServiceRoute %s to be Ready and published", name), func() string {
		r := &routingv1alpha1.ServiceRoute{}
		if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, r); err != nil {
			return err.Error()
		}
		if p := statusProblem(r.Generation, r.Status.ObservedGeneration, r.Status.Conditions, string(r.Status.Phase),
			string(routingv1alpha1.PhaseActive), routingv1alpha1.ReasonReconciliationSucceeded); p != "" {
			return p
		}
		if n := len(routeEndpoints(t, f.ns, name)); n != 1 {
			return fmt.Sprintf("%d DNSEndpoints", n)
		}
		return ""
	}, timeout)
}

// buildOperatorBinary builds the operator (the module root's main package) once for the test.
func buildOperatorBinary(t *testing.T) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), "service-router-operator")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", binary, ".")
	cmd.Dir = env.RepoRoot
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building the operator:\n%s", out)
	return binary
}

// operatorProcess is the operator binary running with leader election behind its own proxy,
// which counts what this process sends.
type operatorProcess struct {
	name  string
	proc  *framework.Process
	proxy *testenv.FaultProxy
}

func startOperatorProcess(t *testing.T, binary, name, leaseNS string, extraArgs []string) *operatorProcess {
	t.Helper()
	dir := t.TempDir()
	proxy, err := env.StartFaultProxy()
	require.NoError(t, err)
	t.Cleanup(proxy.Close)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, proxy.WriteKubeconfig(kubeconfig))
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=true",
		"--leader-election-namespace=" + leaseNS,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	}, extraArgs...)
	proc, err := framework.StartProcess(name, filepath.Join(dir, name+".log"), binary, args...)
	require.NoError(t, err)
	r := &operatorProcess{name: name, proc: proc, proxy: proxy}
	t.Cleanup(func() {
		_ = proc.Stop()
		if t.Failed() {
			t.Logf("--- %s: requests ---\n%s\n--- %s: log (last 30 lines) ---\n%s", name, testenv.Summary(proxy.Requests()), name, proc.LogTail(30))
		}
	})
	return r
}

func (r *operatorProcess) running() bool { return r.proc.Running() }

const leaseResource = "coordination.k8s.io/leases"

// leaseAcquired is when the process first wrote its Lease successfully (it then holds it: a
// replica writes the Lease only to take it or to renew it); zero when it never did.
func (r *operatorProcess) leaseAcquired() time.Time {
	for _, req := range r.proxy.Requests() {
		if req.Resource == leaseResource && req.IsWrite() && req.Code >= 200 && req.Code < 300 {
			return req.Time
		}
	}
	return time.Time{}
}

func (r *operatorProcess) writes(keep func(testenv.Request) bool) []string {
	var out []string
	for _, req := range r.proxy.Requests() {
		if req.IsWrite() && keep(req) {
			out = append(out, fmt.Sprintf("%s %s %s/%s → %d", req.Verb, req.Resource, req.Namespace, req.Name, req.Code))
		}
	}
	return out
}

func (r *operatorProcess) writesTo(resource string) []string {
	return r.writes(func(req testenv.Request) bool { return req.Resource == resource })
}

// writesBeforeLease lists the writes other than lease attempts sent before the process held the
// lease (all of them when it never did).
func (r *operatorProcess) writesBeforeLease() []string {
	acquired := r.leaseAcquired()
	return r.writes(func(req testenv.Request) bool {
		return req.Resource != leaseResource && (acquired.IsZero() || !req.Time.After(acquired))
	})
}
