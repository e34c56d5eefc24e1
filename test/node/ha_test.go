//go:build node

package node

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The Lease the operator's replicas compete for (main.go's leaderElectionID), and how often
// replicas try to acquire it (main.go's --leader-elect-retry-period default, which the chart keeps).
const (
	leaderLease       = "service-router-operator.router.io"
	leaderRetryPeriod = 2 * time.Second
)

// TestChart_HighAvailabilityInPods installs the chart as a production cluster runs it (two
// replicas, the PodDisruptionBudget, the ServiceMonitor with its scraper token) on two nodes, and
// shows what a platform admin relies on:
//   - the leader's pod killed (its process SIGKILLed, the pod force-deleted: no graceful release
//     of the Lease), the other replica leads as soon as client-go's leader election allows once
//     the dead leader's Lease expires (takeoverDelay), and no DNSEndpoint or Istio Gateway is
//     written, deleted or recreated on the way (watched throughout);
//   - a node drained with `kubectl drain`: the eviction API honours the budget, one replica is
//     Ready at every moment, and again nothing published is touched;
//   - the metrics, scraped through the chart's Service with the token the ServiceMonitor uses,
//     answer; a token without the metrics-reader role gets 403, none at all 401.
func TestChart_HighAvailabilityInPods(t *testing.T) {
	ctx := t.Context()
	w := startWorld(t, 2)
	cl := w.Cluster()
	installCRDs(ctx, t, w, istioCRDs, externalDNSCRDs, prometheusOperatorCRDs)
	repo, err := w.PushOperatorImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	diagnose := operatorDiagnostics(ctx, w)
	out, err := cl.RunScript(ctx, strings.Join([]string{
		"kubectl create namespace " + operatorNamespace,
		"kubectl label namespace " + operatorNamespace + " pod-security.kubernetes.io/enforce=restricted",
		"helm install service-router-operator charts/service-router-operator --namespace " + operatorNamespace +
			" --set image.repository=" + repo + " --set podDisruptionBudget.enabled=true --set metrics.serviceMonitor.enabled=true",
	}, "\n"))
	if err != nil {
		t.Fatalf("installing the chart: %v\n%s", err, diagnose())
	}
	t.Logf("chart installed:\n%s", lastLines(out, 4))
	pods, err := w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout)
	if err != nil {
		t.Fatalf("%v\n%s", err, diagnose())
	}
	checkOperatorPods(t, pods, 2, repo, w.Registry)

	// Something published: the homelab example's platform and application (its verification
	// pointed at the node, where no DNS server answers: Published is not this test's subject).
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := framework.CreateIngressService(ctx, w.Client, framework.IngressService{
		Namespace: "istio-system", Name: "istio-ingressgateway", Controller: "ingressgateway", IPs: []string{"192.168.1.240"},
	}); err != nil {
		t.Fatal(err)
	}
	platform, err := os.ReadFile(filepath.Join(root, homelabPlatform))
	if err != nil {
		t.Fatal(err)
	}
	localPlatform := filepath.Join(t.TempDir(), "platform.yaml")
	if err := os.WriteFile(localPlatform, []byte(strings.ReplaceAll(string(platform), "192.168.1.53:53", framework.NodeIP(1)+":53")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cl.RunScript(ctx, "kubectl apply -f "+localPlatform+" -f "+homelabApp+"\nkubectl -n blog wait --for=condition=Ready serviceroute/web-route --timeout=90s"); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, diagnose())
	}
	published := watchPublished(ctx, t, w.Client, "web-ns-d-dev-blog.home.example.com")

	// The leader's pod killed.
	leader := leaderPod(ctx, t, w)
	t.Logf("leader: pod %s on %s", leader.Name, leader.Spec.NodeName)
	killed := time.Now()
	killContainer(t, leader)
	if err := w.Client.Delete(ctx, leader, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	// The dead leader renews nothing more: the Lease read now holds its last renewal.
	var last coordinationv1.Lease
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: leaderLease}, &last); err != nil {
		t.Fatal(err)
	}
	var acquired coordinationv1.Lease
	err = framework.Poll(ctx, 60*time.Second, 100*time.Millisecond, "another replica holding the Lease", func(ctx context.Context) (bool, string, error) {
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: leaderLease}, &acquired); err != nil {
			return false, err.Error(), nil
		}
		holder := ptr.Deref(acquired.Spec.HolderIdentity, "")
		return holder != "" && !strings.HasPrefix(holder, leader.Name+"_"), "held by " + holder, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, diagnose())
	}
	takeover := time.Since(killed)
	if last.Spec.RenewTime == nil || acquired.Spec.AcquireTime == nil {
		t.Fatalf("the Lease lacks a renewal or acquisition time: before %+v, after %+v", last.Spec, acquired.Spec)
	}
	// values.yaml: the chart leaves the manager's 15 s Lease, which the takeover waits out.
	if d := ptr.Deref(last.Spec.LeaseDurationSeconds, 0); d != 15 {
		t.Errorf("the operator's Lease lasts %d s, want the 15 s values.yaml states", d)
	}
	late, bound := takeoverDelay(last, acquired, leaderRetryPeriod)
	t.Logf("the leader %s was killed; %s leads %s later, %s after its Lease expired", leader.Name, *acquired.Spec.HolderIdentity,
		takeover.Round(time.Millisecond), late.Round(time.Millisecond))
	if late > bound {
		t.Errorf("the other replica acquired the Lease %s after the dead leader's lease expired (renewed %s, %ds), want within %s (%s retry period and its jitter)",
			late.Round(time.Millisecond), last.Spec.RenewTime.Format("15:04:05.000"), ptr.Deref(last.Spec.LeaseDurationSeconds, 0), bound, leaderRetryPeriod)
	}
	if _, err := w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout); err != nil {
		t.Fatalf("%v\n%s", err, diagnose())
	}
	// The new leader has synced and reconciled everything by now; give a write time to show.
	time.Sleep(10 * time.Second)
	published.check(t, "after the leader's pod was killed")

	// A node drained, the budget honoured: both replicas first gathered on the node to drain
	// (the other cordoned while the Deployment restarts), so that evicting the second must wait
	// until the first's replacement is Ready elsewhere.
	drained, other := w.Nodes[0].Name, w.Nodes[1].Name
	if out, err := cl.RunScript(ctx, "kubectl cordon "+other+"\nkubectl -n "+operatorNamespace+" rollout restart deployment/"+operatorDeployment); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout); err != nil {
		t.Fatalf("%v\n%s", err, diagnose())
	}
	if out, err := cl.RunScript(ctx, "kubectl uncordon "+other); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	minReady := readyFloor(ctx, w.Client)
	started := time.Now()
	out, err = cl.RunScript(ctx, "kubectl drain "+drained+" --ignore-daemonsets --delete-emptydir-data --timeout=3m")
	floor := minReady()
	if err != nil {
		t.Fatalf("kubectl drain %s: %v\n%s\n%s", drained, err, out, diagnose())
	}
	t.Logf("kubectl drain %s in %s; fewest Ready operator pods meanwhile: %d\n%s", drained, time.Since(started).Round(time.Millisecond), floor, lastLines(out, 6))
	if floor < 1 {
		t.Errorf("while %s was drained, %d operator pods were Ready at some moment: the PodDisruptionBudget (minAvailable 1) was not honoured", drained, floor)
	}
	if !strings.Contains(out, "disruption budget") {
		t.Errorf("kubectl drain %s never waited for the PodDisruptionBudget with both replicas on the node:\n%s", drained, out)
	}
	pods, err = w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout)
	if err != nil {
		t.Fatalf("%v\n%s", err, diagnose())
	}
	for _, p := range pods {
		if p.Spec.NodeName == drained {
			t.Errorf("pod %s still runs on the drained node %s", p.Name, drained)
		}
	}
	time.Sleep(5 * time.Second)
	published.check(t, "after "+drained+" was drained")

	checkMetricsAccess(ctx, t, w)
}

// publishedWatch records every change of the DNSEndpoints and Istio Gateways from a starting
// point: an object written, deleted or recreated (UID or resourceVersion changed).
type publishedWatch struct {
	mu      sync.Mutex
	start   map[string]string
	changes []publishedChange
}

// publishedChange is one object's state before and after a change the watch saw; a state is
// "UID@resourceVersion" (with the hosts for an Istio Gateway), "" once the object is gone.
type publishedChange struct {
	at            time.Time
	key, was, got string
}

func (c publishedChange) String() string {
	return fmt.Sprintf("%s %s: %s -> %s", c.at.Format("15:04:05.000"), c.key, c.was, c.got)
}

// replaced reports whether the object was deleted or came back as another object.
func (c publishedChange) replaced() bool {
	uidWas, _, _ := strings.Cut(c.was, "@")
	uidGot, _, _ := strings.Cut(c.got, "@")
	return uidWas != uidGot
}

// watchPublished waits until the DNSEndpoints and an Istio Gateway listing host exist, snapshots
// them and polls them every 100 ms until the test ends.
func watchPublished(ctx context.Context, t *testing.T, c client.Client, host string) *publishedWatch {
	t.Helper()
	snapshot := func() (map[string]string, error) {
		state := map[string]string{}
		var eps externaldnsv1alpha1.DNSEndpointList
		if err := c.List(ctx, &eps); err != nil {
			return nil, err
		}
		for _, e := range eps.Items {
			state["DNSEndpoint "+e.Namespace+"/"+e.Name] = string(e.UID) + "@" + e.ResourceVersion
		}
		var gws istionetworkingv1.GatewayList
		if err := c.List(ctx, &gws); err != nil {
			return nil, err
		}
		for _, g := range gws.Items {
			state["Istio Gateway "+g.Namespace+"/"+g.Name] = string(g.UID) + "@" + g.ResourceVersion + " hosts " + strings.Join(g.Spec.GetServers()[0].GetHosts(), ",")
		}
		return state, nil
	}
	// The Istio Gateway is written after the routes are Ready (the operator coalesces its writes):
	// the watch starts once it lists the routes' hosts.
	var start map[string]string
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "DNSEndpoints and an Istio Gateway listing "+host, func(context.Context) (bool, string, error) {
		var err error
		if start, err = snapshot(); err != nil {
			return false, err.Error(), nil
		}
		endpoints, gateway := 0, false
		for key, state := range start {
			endpoints += strings.Count(key, "DNSEndpoint ")
			gateway = gateway || strings.HasPrefix(key, "Istio Gateway ") && strings.Contains(state, host)
		}
		return endpoints > 0 && gateway, fmt.Sprint(start), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pw := &publishedWatch{start: start}
	t.Logf("watching %d published objects: %v", len(start), start)
	watchCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() {
		for watchCtx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			now, err := snapshot()
			if err != nil {
				continue
			}
			pw.mu.Lock()
			for key, was := range pw.start {
				if got := now[key]; got != was {
					pw.changes = append(pw.changes, publishedChange{at: time.Now(), key: key, was: was, got: got})
					pw.start[key] = got
				}
			}
			pw.mu.Unlock()
		}
	}()
	return pw
}

// check fails the test for any change: an object written, deleted or recreated.
func (pw *publishedWatch) check(t *testing.T, when string) {
	t.Helper()
	if writes := pw.writes(); len(writes) > 0 {
		t.Errorf("%s: published objects were touched:\n%s", when, strings.Join(writes, "\n"))
	}
}

// checkKept fails the test for every object deleted or recreated (its UID changed) and logs the
// writes in place, which an upgrade makes.
func (pw *publishedWatch) checkKept(t *testing.T, when string) {
	t.Helper()
	pw.mu.Lock()
	defer pw.mu.Unlock()
	var replaced, inPlace []string
	for _, c := range pw.changes {
		if c.replaced() {
			replaced = append(replaced, c.String())
		} else {
			inPlace = append(inPlace, c.String())
		}
	}
	t.Logf("%s: %d writes in place:\n%s", when, len(inPlace), strings.Join(inPlace, "\n"))
	if len(replaced) > 0 {
		t.Errorf("%s: published objects deleted or recreated:\n%s", when, strings.Join(replaced, "\n"))
	}
}

// uids returns the UID of every object the watch follows, as last seen ("" once deleted).
func (pw *publishedWatch) uids() map[string]string {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	out := make(map[string]string, len(pw.start))
	for key, state := range pw.start {
		uid, _, _ := strings.Cut(state, "@")
		out[key] = uid
	}
	return out
}

// writes returns every change the watch saw (writes in place included).
func (pw *publishedWatch) writes() []string {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	out := make([]string, len(pw.changes))
	for i, c := range pw.changes {
		out[i] = c.String()
	}
	return out
}

// takeoverDelay returns how long after the dead leader's Lease expired (its last renewal plus the
// lease duration) the new holder acquired it, and the most client-go's leader election allows: a
// standby counts the duration from when it saw the last renewal, which its next try (every retry
// period, plus up to 1.2 of it as jitter) may see that late, and acquires on the try after expiry,
// as late again. One second more for a loaded node's scheduling. Measuring from the expiry, not
// from the kill, leaves out where in its renewal cycle the leader died (0-2 s) and the API
// server's latency, which a loaded CI machine stretches.
func takeoverDelay(last, acquired coordinationv1.Lease, retryPeriod time.Duration) (late, bound time.Duration) {
	expiry := last.Spec.RenewTime.Add(time.Duration(ptr.Deref(last.Spec.LeaseDurationSeconds, 0)) * time.Second)
	late = acquired.Spec.AcquireTime.Sub(expiry)
	const jitter = 1.2
	bound = 2*time.Duration(float64(retryPeriod)*(1+jitter)) + time.Second
	return late, bound
}

func leaseHolder(ctx context.Context, c client.Client) (string, error) {
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: leaderLease}, &lease); err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// leaderPod returns the pod whose replica holds the Lease (controller-runtime's identity is the
// pod's hostname, its name, then "_" and a UUID).
func leaderPod(ctx context.Context, t *testing.T, w *framework.NodeWorld) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := framework.Poll(ctx, 60*time.Second, 200*time.Millisecond, "a replica holding the Lease", func(ctx context.Context) (bool, string, error) {
		holder, err := leaseHolder(ctx, w.Client)
		if err != nil || holder == "" {
			return false, fmt.Sprint("no holder: ", err), nil
		}
		name, _, _ := strings.Cut(holder, "_")
		pod = &corev1.Pod{}
		return w.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, pod) == nil, "held by " + holder, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}

// killContainer SIGKILLs the processes of the pod's containers (found by the pod's cgroup), as an
// out-of-memory kill or a node's crash ends them: nothing runs the operator's shutdown.
func killContainer(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	marker := "pod" + string(pod.UID)
	entries, _ := os.ReadDir("/proc")
	killed := 0
	for _, e := range entries {
		cgroup, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		if err != nil || !strings.Contains(string(cgroup), marker) {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if strings.TrimSpace(string(comm)) != "manager" {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	if killed == 0 {
		t.Fatalf("no manager process found in the cgroups of pod %s", pod.Name)
	}
}

// readyFloor polls the operator's Ready pods every 100 ms from now; the function it returns stops
// polling and returns the fewest seen.
func readyFloor(ctx context.Context, c client.Client) func() int {
	var mu sync.Mutex
	floor := 1 << 30
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": operatorDeployment}); err == nil {
				ready := 0
				for _, p := range pods.Items {
					for _, cond := range p.Status.Conditions {
						if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
							ready++
						}
					}
				}
				mu.Lock()
				floor = min(floor, ready)
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() int {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return floor
	}
}

// checkMetricsAccess scrapes /metrics through the chart's metrics Service as the ServiceMonitor
// does (the scraper's token from the Secret the chart creates, TLS without verification as
// insecureSkipVerify says), and with a token lacking the metrics-reader role, and with none.
func checkMetricsAccess(ctx context.Context, t *testing.T, w *framework.NodeWorld) {
	t.Helper()
	var svc corev1.Service
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorDeployment + "-metrics"}, &svc); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://%s:%d/metrics", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	var secret corev1.Secret
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorDeployment + "-metrics-scraper-token"}, &secret); err != nil {
		t.Fatal(err)
	}
	clientset, err := kubernetes.NewForConfig(w.Config)
	if err != nil {
		t.Fatal(err)
	}
	intruder := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "intruder", Namespace: "default"}}
	if err := w.Client.Create(ctx, intruder); err != nil {
		t.Fatal(err)
	}
	tr, err := clientset.CoreV1().ServiceAccounts("default").CreateToken(ctx, "intruder", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	scrape := func(token string) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	for _, c := range []struct {
		who, token string
		want       int
	}{
		{"the ServiceMonitor's scraper token", string(secret.Data["token"]), http.StatusOK},
		{"a token without the metrics-reader role", tr.Status.Token, http.StatusForbidden},
		{"no token", "", http.StatusUnauthorized},
	} {
		var code int
		var body string
		err := framework.Poll(ctx, 30*time.Second, 500*time.Millisecond, "an answer from "+url, func(context.Context) (bool, string, error) {
			var err error
			code, body, err = scrape(c.token)
			return err == nil, fmt.Sprint(err), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if code != c.want {
			t.Errorf("GET %s with %s: %d, want %d", url, c.who, code, c.want)
		}
		if c.want == http.StatusOK && !strings.Contains(body, "service_router_build_info") {
			t.Errorf("GET %s with %s: no service_router_build_info in the answer:\n%s", url, c.who, lastLines(body, 10))
		}
		t.Logf("GET %s with %s: %d", url, c.who, code)
	}
}
