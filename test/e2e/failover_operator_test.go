//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// gatewayListener stands in for a cluster's gateway data plane: a TCP listener on the load
// balancer address the zone publishes, accepting connections until it is closed.
type gatewayListener struct {
	ls []net.Listener
	wg sync.WaitGroup
}

func listenGateway(t *testing.T, addrs ...string) *gatewayListener {
	t.Helper()
	g := &gatewayListener{}
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("gateway listener on %s: %v", a, err)
		}
		g.ls = append(g.ls, l)
		g.wg.Go(func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
			}
		})
	}
	t.Cleanup(g.close)
	return g
}

func (g *gatewayListener) close() {
	for _, l := range g.ls {
		_ = l.Close()
	}
	g.wg.Wait()
}

// failoverMember is one cluster of the failover world.
type failoverMember struct {
	cluster, region, lbIP, owner string
	cl                           *framework.Cluster
	op                           *framework.Operator
	ed                           *framework.ExternalDNS
	edOpts                       framework.ExternalDNSOptions
}

func (m *failoverMember) target() string {
	return m.cluster + "-" + m.region + "-internal." + worldDomain
}

// TestFailover_OperatorTakesOverALostRegion runs regional failover as it ships, with the real
// ExternalDNS and BIND (a zone that takes only TSIG-signed updates) and both clusters' operators:
// aks01 (weu) and aks02 (neu, adopting weu) publish the same route into the weu zone; aks01 owns
// it. Each operator refreshes its heartbeat in the zone and probes the other's gateway (a TCP
// listener on the load balancer address the zone publishes). The zone is watched with dig every
// 50 ms throughout.
//
//  1. Partitioned, not lost: aks02 cannot reach aks01's gateway (its probes go to a port nothing
//     listens on there), but aks01's heartbeat stays fresh and says its gateway answers: aks02
//     reports weu Unreachable (WitnessSaysAlive) and nothing moves.
//  2. Lost: aks01's operator, its ExternalDNS and its gateway stop at once. Once the heartbeat is
//     stale, aks02's operator passes the name's ownership to its own ExternalDNS, which points the
//     name at aks02's gateway: a direct switch, no NXDOMAIN. Another team's route, whose policy
//     lists no stand-ins, stays with aks01: failover is opt-in per DNSPolicy.
//  3. Back: aks01's ExternalDNS and operator return; the ownership record fences them, and with the
//     policy's failback Manual the name stays with aks02.
//  4. Failback Automatic: aks01's team switches its policy's failback to Automatic; once aks01's
//     gateway has answered for failbackAfter, aks01's operator passes the name back to its own
//     ExternalDNS: a direct switch back, and aks02's dns-config no longer counts it as taken.
func TestFailover_OperatorTakesOverALostRegion(t *testing.T) {
	ctx := t.Context()
	const ns, otherNS, controller, prefix = "myapp", "otherteam", "external-dns-weu", "weu-d-"
	zone, err := framework.StartBind(ctx, t, framework.BindOptions{Name: "weu", Zone: worldDomain, TSIG: true})
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "tsig.secret")
	if err := os.WriteFile(keyFile, []byte(zone.TSIG.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	aks01 := &failoverMember{cluster: "aks01", region: "weu", lbIP: "127.0.0.11", owner: "external-dns-weu-aks01"}
	aks02 := &failoverMember{cluster: "aks02", region: "neu", lbIP: "127.0.0.12", owner: "external-dns-weu-aks02"}
	aks01.cl, aks02.cl = startWEUClusters(t, ns)

	// The gateways: aks01's on port P; aks02's on P and on Q, the port aks02 probes at first (aks01
	// has nothing there: aks02's path to aks01's gateway is cut).
	gw1 := listenGateway(t, aks01.lbIP+":0")
	port := gw1.ls[0].Addr().(*net.TCPAddr).Port
	cut := listenGateway(t, aks02.lbIP+":0")
	cutPort := cut.ls[0].Addr().(*net.TCPAddr).Port
	listenGateway(t, net.JoinHostPort(aks02.lbIP, strconv.Itoa(port)))

	settings := func(probePort int) *clusterv1alpha1.FailoverSettings {
		return &clusterv1alpha1.FailoverSettings{ProbePort: ptr.To(int32(probePort)), ProbeInterval: &metav1.Duration{Duration: time.Second},
			FailureThreshold: ptr.To(int32(3)), HeartbeatInterval: &metav1.Duration{Duration: time.Second},
			HeartbeatStaleAfter: &metav1.Duration{Duration: 5 * time.Second}, FailbackAfter: &metav1.Duration{Duration: 3 * time.Second}}
	}
	for _, m := range []*failoverMember{aks01, aks02} {
		probePort := port
		if m == aks02 {
			probePort = cutPort
		}
		adopts := []string(nil)
		if m == aks02 {
			adopts = []string{"weu"}
		}
		createNamespace(ctx, t, m.cl.Client, otherNS)
		for _, obj := range []client.Object{
			&clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "cluster-identity"},
				Spec: clusterv1alpha1.ClusterIdentitySpec{Region: m.region, Cluster: m.cluster, Domain: worldDomain, EnvironmentLetter: worldEnvLetter, AdoptsRegions: adopts}},
			&clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dns-config"},
				Spec: clusterv1alpha1.DNSConfigurationSpec{Failover: settings(probePort), ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{{
					Name: controller, Region: "weu",
					Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{fmt.Sprintf("127.0.0.1:%d", zone.Port)}},
					Failover: &clusterv1alpha1.ZoneFailover{OwnerID: m.owner, TXTPrefix: prefix,
						TSIG: &clusterv1alpha1.TSIGKey{KeyName: zone.TSIG.Name, Algorithm: zone.TSIG.Algorithm, SecretFile: keyFile}},
				}}}},
			&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: gatewayName},
				Spec: routingv1alpha1.GatewaySpec{Controller: ingressController, CredentialName: "cert-aks-ingress", TargetPostfix: "internal", IngressNamespace: ingressNamespace}},
		} {
			if _, ok := obj.(*routingv1alpha1.Gateway); ok {
				if err := framework.EnsureNamespace(ctx, m.cl.Client, gatewayNamespace); err != nil {
					t.Fatal(err)
				}
			}
			create(ctx, t, m.cl.Client, obj)
		}
		if _, err := framework.CreateIngressService(ctx, m.cl.Client, framework.IngressService{
			Namespace: ingressNamespace, Name: ingressController, Controller: ingressController, IPs: []string{m.lbIP}}); err != nil {
			t.Fatal(err)
		}
		m.edOpts = framework.ExternalDNSOptions{Name: controller, OwnerID: m.owner, TXTPrefix: prefix}.ForBind(zone)
		if m.ed, err = m.cl.StartExternalDNS(ctx, t, m.edOpts); err != nil {
			t.Fatal(err)
		}
		if m.op, err = m.cl.StartOperator(ctx, t, framework.OperatorOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	diag := func() []func() string {
		return []func() string{aks01.op.Diagnostics, aks02.op.Diagnostics, aks01.ed.Diagnostics, aks02.ed.Diagnostics, zone.Diagnostics}
	}

	// The routes: the team's, under a policy with stand-ins, and another team's without; aks01
	// publishes first, so it owns both names.
	route := func(namespace string) *routingv1alpha1.ServiceRoute {
		return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "api-route"},
			Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: gatewayName, GatewayNamespace: gatewayNamespace, Environment: "dev", Application: namespace}}
	}
	policy := func(namespace string, failover *routingv1alpha1.PolicyFailover) *routingv1alpha1.DNSPolicy {
		return &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "dns"},
			Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive, Failover: failover}}
	}
	name := "api-ns-" + worldEnvLetter + "-dev-" + ns + "." + worldDomain
	otherName := "api-ns-" + worldEnvLetter + "-dev-" + otherNS + "." + worldDomain
	chain := func(m *failoverMember) []string { return []string{"CNAME " + m.target() + ".", "A " + m.lbIP} }
	q, otherQ := zone.Query(name, "A"), zone.Query(otherName, "A")
	for _, m := range []*failoverMember{aks01, aks02} {
		create(ctx, t, m.cl.Client, policy(ns, &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}))
		create(ctx, t, m.cl.Client, policy(otherNS, nil))
		at := create(ctx, t, m.cl.Client, route(ns))
		create(ctx, t, m.cl.Client, route(otherNS))
		if m == aks01 {
			waitAnswer(ctx, t, at, q, chain(aks01), diag()...)
			waitAnswer(ctx, t, at, otherQ, chain(aks01), diag()...)
		} else {
			waitAnswer(ctx, t, at, zone.Query(aks02.target(), "A"), []string{"A " + aks02.lbIP}, diag()...)
			waitSyncs(ctx, t, at, aks01.ed, aks02.ed)
		}
	}

	// 1. Partitioned: aks02's probes of aks01's gateway fail, aks01's heartbeat vouches for it.
	waitRegion(ctx, t, aks02, "weu", "Unreachable", "WitnessSaysAlive", diag)
	stable(t, "1. partitioned, not lost", []framework.Query{q, otherQ}, [][]string{chain(aks01), chain(aks01)}, aks01.ed, aks02.ed)
	assertRegion(ctx, t, aks02, "weu", "Unreachable")

	// 2. Lost: aks01's operator, ExternalDNS and gateway stop at once.
	lost := time.Now()
	for _, stop := range []func() error{aks01.op.Stop, aks01.ed.Stop} {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	gw1.close()
	tr, err := framework.Converge(ctx, q, framework.Resolves(chain(aks02)...), 2*convergeTimeout, 50*time.Millisecond, diag()...)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(lost)
	t.Logf("2. lost: %s answers aks02's gateway %s after aks01 stopped; seen: %s", name, took.Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, chain(aks01)) {
		t.Errorf("2. want a direct switch from aks01's gateway to aks02's, seen: %s", tr)
	}
	// The bound: the heartbeat goes stale 5 s after its last refresh, then one round (1 s), the
	// write, and one ExternalDNS synchronization (500 ms).
	if bound := 5*time.Second + 3*time.Second + 2*time.Second; took > bound+5*time.Second {
		t.Errorf("2. the takeover took %s, beyond the design's bound of %s plus 5 s of a loaded machine", took.Round(time.Millisecond), bound)
	}
	waitRegion(ctx, t, aks02, "weu", "Lost", "HeartbeatStale", diag)
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
		t.Fatal(err)
	}
	if got := takenNames(cfg, "weu", controller); got != 1 {
		t.Errorf("2. aks02's dns-config says it took %d names in %s from weu, want 1: %+v", got, controller, cfg.Status.Failover)
	}
	stable(t, "2. lost, taken over; another team's name, without stand-ins, stays", []framework.Query{q, otherQ}, [][]string{chain(aks02), chain(aks01)}, aks02.ed)

	// 3. Back: aks01 returns; the ownership record fences it.
	listenGateway(t, net.JoinHostPort(aks01.lbIP, strconv.Itoa(port)))
	if aks01.ed, err = aks01.cl.StartExternalDNS(ctx, t, aks01.edOpts); err != nil {
		t.Fatal(err)
	}
	if aks01.op, err = aks01.cl.StartOperator(ctx, t, framework.OperatorOptions{}); err != nil {
		t.Fatal(err)
	}
	stable(t, "3. aks01 back, fenced", []framework.Query{q, otherQ}, [][]string{chain(aks02), chain(aks01)}, aks01.ed, aks02.ed)
	wantSkip := fmt.Sprintf(`because owner id does not match (found: \"%s\", required: \"%s\")`, aks02.owner, aks01.owner)
	if line := firstLineWith(aks01.ed.Log(), wantSkip); line == "" {
		t.Errorf("3. aks01's ExternalDNS did not log that %s owns %s now\n%s", aks02.owner, name, aks01.ed.Diagnostics())
	}

	// 4. Failback Automatic, in the home cluster's policy.
	p := &routingv1alpha1.DNSPolicy{}
	if err := aks01.cl.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "dns"}, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Failover.Failback = routingv1alpha1.FailbackAutomatic
	at := time.Now()
	if err := aks01.cl.Client.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	tr, err = framework.Converge(ctx, q, framework.Resolves(chain(aks01)...), convergeTimeout, 50*time.Millisecond, diag()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("4. failback: %s answers aks01's gateway again %s after the policy said Automatic; seen: %s", name, time.Since(at).Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, chain(aks02)) {
		t.Errorf("4. want a direct switch back from aks02's gateway to aks01's, seen: %s", tr)
	}
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "aks02's dns-config to count no name taken", func(ctx context.Context) (bool, string, error) {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
			return false, "", err
		}
		n := takenNames(cfg, "weu", controller)
		return n == 0, fmt.Sprintf("%d taken: %+v", n, cfg.Status.Failover), nil
	})
	if err != nil {
		t.Error(err)
	}
	stable(t, "4. back home", []framework.Query{q, otherQ}, [][]string{chain(aks01), chain(aks01)}, aks01.ed, aks02.ed)
}

// takenNames is how many names a dns-config's status says this cluster took from region in zone.
func takenNames(cfg *clusterv1alpha1.DNSConfiguration, region, controller string) int32 {
	for _, r := range cfg.Status.Failover {
		if r.Region != region {
			continue
		}
		for _, z := range r.Taken {
			if z.Controller == controller {
				return z.Names
			}
		}
	}
	return 0
}

// waitRegion waits until m's dns-config reports region in state for reason.
func waitRegion(ctx context.Context, t *testing.T, m *failoverMember, region, state, reason string, diag func() []func() string) {
	t.Helper()
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, fmt.Sprintf("%s's dns-config to report region %s %s (%s)", m.cluster, region, state, reason),
		func(ctx context.Context) (bool, string, error) {
			cfg := &clusterv1alpha1.DNSConfiguration{}
			if err := m.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
				return false, "", err
			}
			for _, r := range cfg.Status.Failover {
				if r.Region == region {
					return r.State == state && r.Reason == reason, fmt.Sprintf("%s (%s): %s", r.State, r.Reason, r.Message), nil
				}
			}
			return false, fmt.Sprintf("no view of %s: %+v", region, cfg.Status.Failover), nil
		})
	if err != nil {
		var b strings.Builder
		for _, d := range diag() {
			b.WriteString("\n" + d())
		}
		t.Fatalf("%v%s", err, b.String())
	}
}

// assertRegion checks m's dns-config still reports region in state.
func assertRegion(ctx context.Context, t *testing.T, m *failoverMember, region, state string) {
	t.Helper()
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if err := m.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
		t.Fatal(err)
	}
	for _, r := range cfg.Status.Failover {
		if r.Region == region && r.State != state {
			t.Errorf("%s's dns-config reports region %s %s (%s: %s), want %s", m.cluster, region, r.State, r.Reason, r.Message, state)
		}
	}
}
