//go:build e2e

package e2e

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	routerapp "github.com/service-router/service-router-operator/cmd/kubectl-router/app"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/testenv"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

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

// listenGateway listens on each of the addresses and serves them as one gateway.
func listenGateway(t testing.TB, addrs ...string) *gatewayListener {
	t.Helper()
	var ls []net.Listener
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("gateway listener on %s: %v", a, err)
		}
		ls = append(ls, l)
	}
	return serveGateway(t, ls...)
}

// serveGateway accepts (and closes) connections on the listeners until the gateway is closed.
func serveGateway(t testing.TB, ls ...net.Listener) *gatewayListener {
	g := &gatewayListener{ls: ls}
	for _, l := range ls {
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

// listenOnOnePort binds one TCP port, which the kernel picks (but none of avoid), on every one of
// the addresses and keeps the listeners open: the port is the test's from the moment it is picked.
// (Picking a port, closing it and binding it again later lost it once in CI to another process, or
// to the next pick, which the kernel may answer with the same port.)
func listenOnOnePort(t testing.TB, avoid []int, addrs ...string) (int, []net.Listener) {
	t.Helper()
	for range 20 {
		first, err := net.Listen("tcp", addrs[0]+":0")
		if err != nil {
			t.Fatal(err)
		}
		port := first.Addr().(*net.TCPAddr).Port
		ls := []net.Listener{first}
		for _, a := range addrs[1:] {
			l, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(port)))
			if err != nil {
				break
			}
			ls = append(ls, l)
		}
		if len(ls) == len(addrs) && !slices.Contains(avoid, port) {
			return port, ls
		}
		for _, l := range ls {
			_ = l.Close()
		}
	}
	t.Fatalf("no port free on all of %v", addrs)
	return 0, nil
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
	// eds are its ExternalDNS instances, one per zone (ed the first: the weu zone's), started with
	// edOpts.
	eds    []*framework.ExternalDNS
	ed     *framework.ExternalDNS
	edOpts []framework.ExternalDNSOptions
	// metricsPort is where its operator serves /metrics (plain HTTP on 127.0.0.1).
	metricsPort int
	// binary is its operator's executable ("": framework.ManagerBinary).
	binary string
}

// metrics scrapes m's operator.
func (m *failoverMember) metrics(ctx context.Context, t testing.TB) map[string]float64 {
	t.Helper()
	samples, err := framework.ScrapeMetrics(ctx, m.metricsPort)
	if err != nil {
		t.Fatalf("%s's metrics: %v", m.cluster, err)
	}
	return samples
}

func (m *failoverMember) target(domain string) string {
	return m.cluster + "-" + m.region + "-internal." + domain
}

// The failover world's namespaces: the team's, whose DNSPolicy lists stand-ins, and another
// team's, whose policy does not.
const failoverNS, failoverOtherNS = "myapp", "otherteam"

// failoverWorld is two clusters sharing the weu zone: aks01 (region weu) and aks02 (region neu,
// adopting weu), each with its operator, its ExternalDNS instance for the zone, its gateway (a
// TCP listener on its load balancer address) and fast failover settings (1 s probes, threshold 3,
// 1 s heartbeats stale after 5 s, failback after 3 s).
type failoverWorld struct {
	t            testing.TB
	domain       string
	aks01, aks02 *failoverMember
	// port is where both gateways listen. Each cluster probes a port of its own where only its own
	// gateway listens, so that its probes of the other's gateway fail while its own answer: the
	// path between the two is cut both ways (aks01 probes probePort01, aks02 probePort02).
	port, probePort01, probePort02 int
	// gateway1 is aks01's gateway: its listeners on port and probePort01.
	gateway1 *gatewayListener
}

// startFailoverWorld starts the world with the weu zone alone; zone gives a member's ExternalDNS
// controller entry (its verification and failover settings) and its ExternalDNS options.
func startFailoverWorld(t testing.TB, domain string, zone func(*failoverMember) (clusterv1alpha1.ExternalDNSController, framework.ExternalDNSOptions)) *failoverWorld {
	t.Helper()
	return startFailoverZones(t, domain, nil, []string{"weu"}, func(m *failoverMember) ([]clusterv1alpha1.ExternalDNSController, []framework.ExternalDNSOptions) {
		c, o := zone(m)
		return []clusterv1alpha1.ExternalDNSController{c}, []framework.ExternalDNSOptions{o}
	})
}

// startFailoverZones starts the world with several zones: aks01 adopts adopts01, aks02 adopts02;
// zones gives a member's ExternalDNS controller entries and the options of its instances.
func startFailoverZones(t testing.TB, domain string, adopts01, adopts02 []string,
	zones func(*failoverMember) ([]clusterv1alpha1.ExternalDNSController, []framework.ExternalDNSOptions)) *failoverWorld {
	t.Helper()
	w := &failoverWorld{t: t, domain: domain,
		aks01: &failoverMember{cluster: "aks01", region: "weu", lbIP: "127.0.0.11", owner: "external-dns-weu-aks01"},
		aks02: &failoverMember{cluster: "aks02", region: "neu", lbIP: "127.0.0.12", owner: "external-dns-weu-aks02"}}
	w.aks01.cl, w.aks02.cl = startWEUClusters(t, failoverNS)
	var shared, probe01, probe02 []net.Listener
	w.port, shared = listenOnOnePort(t, nil, w.aks01.lbIP, w.aks02.lbIP)
	w.probePort01, probe01 = listenOnOnePort(t, nil, w.aks01.lbIP)
	// Each cluster probes the other's address on its own probe port, where nothing may listen
	// while the two are partitioned: the two probe ports differ.
	w.probePort02, probe02 = listenOnOnePort(t, []int{w.probePort01}, w.aks02.lbIP)
	w.gateway1 = serveGateway(t, shared[0], probe01[0])
	serveGateway(t, shared[1], probe02[0])
	for _, m := range []*failoverMember{w.aks01, w.aks02} {
		probePort, adopts := w.probePort01, adopts01
		if m == w.aks02 {
			probePort, adopts = w.probePort02, adopts02
		}
		controllers, edOpts := zones(m)
		w.startMember(m, w.settings(probePort), adopts, controllers, edOpts)
	}
	return w
}

// startMember sets up m's cluster as the failover worlds do (its namespaces, ClusterIdentity
// adopting adopts, dns-config with settings and controllers, Gateway, ingress Service on its load
// balancer address) and starts its ExternalDNS instances (edOpts) and its operator.
func (w *failoverWorld) startMember(m *failoverMember, settings *clusterv1alpha1.FailoverSettings, adopts []string,
	controllers []clusterv1alpha1.ExternalDNSController, edOpts []framework.ExternalDNSOptions) {
	t, ctx := w.t, w.t.Context()
	t.Helper()
	createNamespace(ctx, t, m.cl.Client, failoverOtherNS)
	if err := framework.EnsureNamespace(ctx, m.cl.Client, gatewayNamespace); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "cluster-identity"},
			Spec: clusterv1alpha1.ClusterIdentitySpec{Region: m.region, Cluster: m.cluster, Domain: w.domain, EnvironmentLetter: worldEnvLetter, AdoptsRegions: adopts}},
		&clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dns-config"},
			Spec: clusterv1alpha1.DNSConfigurationSpec{Failover: settings, ExternalDNSControllers: controllers}},
		&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: gatewayName},
			Spec: routingv1alpha1.GatewaySpec{Controller: ingressController, CredentialName: "cert-aks-ingress", TargetPostfix: "internal", IngressNamespace: ingressNamespace}},
	} {
		create(ctx, t, m.cl.Client, obj)
	}
	if _, err := framework.CreateIngressService(ctx, m.cl.Client, framework.IngressService{
		Namespace: ingressNamespace, Name: ingressController, Controller: ingressController, IPs: []string{m.lbIP}}); err != nil {
		t.Fatal(err)
	}
	m.edOpts = edOpts
	m.startExternalDNS(t)
	m.startOperator(t)
}

// startOperator starts the member's operator (its binary), serving its metrics on a port of its
// own.
func (m *failoverMember) startOperator(t testing.TB) {
	t.Helper()
	var err error
	if m.metricsPort, err = framework.FreePort(); err != nil {
		t.Fatal(err)
	}
	if m.op, err = m.cl.StartOperator(t.Context(), t, framework.OperatorOptions{Binary: m.binary, ExtraArgs: []string{
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(m.metricsPort), "--metrics-secure=false"}}); err != nil {
		t.Fatal(err)
	}
}

// startExternalDNS starts the member's ExternalDNS instances, one per zone.
func (m *failoverMember) startExternalDNS(t testing.TB) {
	t.Helper()
	m.eds = nil
	for _, o := range m.edOpts {
		ed, err := m.cl.StartExternalDNS(t.Context(), t, o)
		if err != nil {
			t.Fatal(err)
		}
		m.eds = append(m.eds, ed)
	}
	m.ed = m.eds[0]
}

// settings are a member's failover settings: the world's fast ones, or with FAILOVER_SETTINGS=defaults
// (the benchmark's second run) the operator's defaults but the probe port.
func (w *failoverWorld) settings(probePort int) *clusterv1alpha1.FailoverSettings {
	if os.Getenv("FAILOVER_SETTINGS") == "defaults" {
		return &clusterv1alpha1.FailoverSettings{ProbePort: ptr.To(int32(probePort))}
	}
	return &clusterv1alpha1.FailoverSettings{ProbePort: ptr.To(int32(probePort)), ProbeInterval: &metav1.Duration{Duration: time.Second},
		FailureThreshold: ptr.To(int32(3)), HeartbeatInterval: &metav1.Duration{Duration: time.Second},
		HeartbeatStaleAfter: &metav1.Duration{Duration: 5 * time.Second}, FailbackAfter: &metav1.Duration{Duration: 3 * time.Second}}
}

func (w *failoverWorld) diagnostics() []func() string {
	out := []func() string{w.aks01.op.Diagnostics, w.aks02.op.Diagnostics}
	for _, m := range []*failoverMember{w.aks01, w.aks02} {
		for _, ed := range m.eds {
			out = append(out, ed.Diagnostics)
		}
	}
	return out
}

// hostname is the api route's hostname in namespace.
func (w *failoverWorld) hostname(namespace string) string {
	return "api-ns-" + worldEnvLetter + "-dev-" + namespace + "." + w.domain
}

// chain is what the weu zone answers for the team's name (failoverNS, whose policy lists
// stand-ins) while m serves it: the CNAME to the policy's intermediate name, its CNAME to m's
// gateway target, then the target's address (chainIn).
func (w *failoverWorld) chain(m *failoverMember) []string { return w.chainIn(failoverNS, "weu", m) }

// chainIn is what region's zone answers for namespace's name, whose policy lists stand-ins, while
// m serves it: through the policy's intermediate name there (naming.IntermediateName), which a
// move rewrites.
func (w *failoverWorld) chainIn(namespace, region string, m *failoverMember) []string {
	return append([]string{"CNAME " + naming.IntermediateName("internal", namespace, region, w.domain) + "."}, w.direct(m)...)
}

// teamIn is what region's zone answers for the team's name while m serves it, once aks01 (weu)
// published first: through the intermediate in weu's zone, whose own region created it, and in
// m's own region's zone (m created the intermediate there and holds it). In another region's
// zone aks01 holds the name and the zone's own region (aks02, or nobody) the intermediate, so
// aks01 keeps its name direct (failover.FormIn); and in a zone whose region has no cluster (frc)
// nobody creates one, so a takeover passes the name itself.
func (w *failoverWorld) teamIn(region string, m *failoverMember) []string {
	if region == w.aks01.region || region == m.region {
		return w.chainIn(failoverNS, region, m)
	}
	return w.direct(m)
}

// direct is what a zone answers for a name m serves whose policy lists no stand-ins: the seed's
// CNAME to m's gateway target, then its address.
func (w *failoverWorld) direct(m *failoverMember) []string {
	return []string{"CNAME " + m.target(w.domain) + ".", "A " + m.lbIP}
}

// publishBoth publishes the routes from aks01, then from aks02 (so that aks01 owns the names),
// and waits until each of zones answers aks01's gateway for the team's name and holds aks02's
// gateway record, and every ExternalDNS instance has synchronised since.
func (w *failoverWorld) publishBoth(diag func() []func() string, zones ...*framework.BindServer) {
	t, ctx := w.t, w.t.Context()
	t.Helper()
	at := w.publish(w.aks01)
	for _, z := range zones {
		waitAnswer(ctx, t, at, z.Query(w.hostname(failoverNS), "A"), w.teamIn(z.Name, w.aks01), diag()...)
	}
	at = w.publish(w.aks02)
	for _, z := range zones {
		waitAnswer(ctx, t, at, z.Query(w.aks02.target(w.domain), "A"), []string{"A " + w.aks02.lbIP}, diag()...)
	}
	waitSyncs(ctx, t, at, append(slices.Clone(w.aks01.eds), w.aks02.eds...)...)
}

// publish creates m's DNSPolicies (stand-in neu for the team's namespace, none for the other
// team's) and the api route in each, and waits until m's route publishes the team's name through
// its intermediate in the weu zone (aks01, its home, at once; a stand-in once its operator has
// read the intermediate there: aks01 must have published first); it returns the time before.
func (w *failoverWorld) publish(m *failoverMember) time.Time {
	ctx := w.t.Context()
	at := time.Now()
	for _, ns := range []string{failoverNS, failoverOtherNS} {
		var fo *routingv1alpha1.PolicyFailover
		if ns == failoverNS {
			fo = &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}
		}
		create(ctx, w.t, m.cl.Client, failoverPolicy(ns, fo))
		create(ctx, w.t, m.cl.Client, apiRoute(ns, ns))
	}
	waitThrough(ctx, w.t, m, failoverNS, "api-route", naming.IntermediateName("internal", failoverNS, "weu", w.domain))
	return at
}

// waitThrough waits until m's DNSEndpoint of route in the weu zone publishes the route's name as a
// CNAME to intermediate. A stand-in's route waits for its operator's whole reading of the zone
// that shows the intermediate, at the holding pace: in an Azure world with four worlds beside it
// on 2 cores, that took over a minute, so the wait allows two.
func waitThrough(ctx context.Context, t testing.TB, m *failoverMember, namespace, route, intermediate string) {
	t.Helper()
	name := naming.RouteEndpointName(route, failoverController)
	err := framework.Poll(ctx, 2*convergeTimeout, 100*time.Millisecond, m.cluster+"'s "+name+" through "+intermediate, func(ctx context.Context) (bool, string, error) {
		ep := &externaldnsv1alpha1.DNSEndpoint{}
		if err := m.cl.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, ep); err != nil {
			return false, err.Error(), nil
		}
		if len(ep.Spec.Endpoints) == 0 {
			return false, "no record", nil
		}
		return slices.Contains(ep.Spec.Endpoints[0].Targets, intermediate), strings.Join(ep.Spec.Endpoints[0].Targets, ","), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// failoverPolicy is namespace's DNSPolicy: Active, with failover (nil: none).
func failoverPolicy(namespace string, failover *routingv1alpha1.PolicyFailover) *routingv1alpha1.DNSPolicy {
	return &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "dns"},
		Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive, Failover: failover}}
}

// apiRoute is the api route of namespace, for application (its hostname's last label).
func apiRoute(namespace, application string) *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "api-route"},
		Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: gatewayName, GatewayNamespace: gatewayNamespace, Environment: "dev", Application: application}}
}

// tenantClient acts as user, an application team with the built-in edit role in namespace and
// nothing else: bound to edit and to the operator's shipped editor role, which a cluster running
// the operator aggregates into edit (config/rbac/editor_role.yaml).
func tenantClient(t testing.TB, cl *framework.Cluster, user, namespace string) client.Client {
	t.Helper()
	ctx := t.Context()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	roles, err := framework.ReadManifests(filepath.Join(root, "config", "rbac", "editor_role.yaml"))
	if err != nil || len(roles) != 1 {
		t.Fatalf("the shipped editor role: %v (%d objects)", err, len(roles))
	}
	roles[0].SetName("service-router-editor")
	if err := cl.Client.Create(ctx, roles[0]); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, role := range []string{"edit", "service-router-editor"} {
		create(ctx, t, cl.Client, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user + "-" + role},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})
	}
	cfg := rest.CopyConfig(cl.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: cl.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// The tenant cannot touch what the platform owns: the failover settings are cluster-scoped.
	cfgObj := &clusterv1alpha1.DNSConfiguration{}
	if err := c.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfgObj); !apierrors.IsForbidden(err) {
		t.Fatalf("%s reads dns-config: %v, want Forbidden", user, err)
	}
	return c
}

// lose stops everything of aks01 at once: its operator, its ExternalDNS and its gateway.
func (w *failoverWorld) lose() time.Time {
	at := time.Now()
	stops := []func() error{w.aks01.op.Stop}
	for _, ed := range w.aks01.eds {
		stops = append(stops, ed.Stop)
	}
	if err := parallel(stops...); err != nil {
		w.t.Fatal(err)
	}
	w.gateway1.close()
	return at
}

// kill kills everything of aks01 at once with SIGKILL, as a region's sudden death would: its
// operator (no lease released, no last heartbeat), its ExternalDNS instances and its gateway.
func (w *failoverWorld) kill() time.Time {
	at := time.Now()
	kills := []func() error{func() error { w.aks01.op.Kill(); return nil }}
	for _, ed := range w.aks01.eds {
		kills = append(kills, func() error { ed.Kill(); return nil })
	}
	_ = parallel(kills...)
	w.gateway1.close()
	return at
}

// comeBack restarts aks01's gateway, ExternalDNS and operator.
func (w *failoverWorld) comeBack() {
	t, m := w.t, w.aks01
	w.gateway1 = listenGateway(t, net.JoinHostPort(m.lbIP, strconv.Itoa(w.port)), net.JoinHostPort(m.lbIP, strconv.Itoa(w.probePort01)))
	m.startExternalDNS(t)
	m.startOperator(t)
}

// TestFailover_OperatorTakesOverALostRegion runs regional failover as it ships, with the real
// ExternalDNS and BIND (a zone that takes only TSIG-signed updates) and both clusters' operators:
// aks01 (weu) and aks02 (neu, adopting weu) publish the same route into the weu zone; aks01 owns
// it. Each operator refreshes its heartbeat in the zone and probes the other's gateway (a TCP
// listener on the load balancer address the zone publishes). The zone is watched with dig every
// 50 ms throughout.
//
//  1. Partitioned, not lost: neither cluster reaches the other's gateway (each probes a port only
//     its own gateway listens on), but both heartbeats stay fresh and say their gateways answer:
//     each reports the other's region Unreachable (WitnessSaysAlive) and nothing moves.
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
	const controller = failoverController
	w, zone := startBindFailoverWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	diag := func() []func() string { return append(w.diagnostics(), zone.Diagnostics) }

	// The routes: the team's, under a policy with stand-ins, and another team's without; aks01
	// publishes first, so it owns both names.
	name, otherName := w.hostname(failoverNS), w.hostname(failoverOtherNS)
	chain, direct := w.chain, w.direct
	q, otherQ := zone.Query(name, "A"), zone.Query(otherName, "A")
	at := w.publish(aks01)
	waitAnswer(ctx, t, at, q, chain(aks01), diag()...)
	waitAnswer(ctx, t, at, otherQ, direct(aks01), diag()...)
	// A third team, solo, publishes only from aks01. In aks02, where no namespace claims solo's
	// hostname, a tenant of namespace thief (edit there and nothing else) copies solo's route,
	// under a policy naming neu as stand-in: aks02 publishes solo's name from thief.
	const soloNS, thiefNS = "solo", "thief"
	soloName := w.hostname(soloNS)
	soloQ := zone.Query(soloName, "A")
	createNamespace(ctx, t, aks01.cl.Client, soloNS)
	createNamespace(ctx, t, aks02.cl.Client, thiefNS)
	standIn := &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}
	solo, thief := tenantClient(t, aks01.cl, "solo-team", soloNS), tenantClient(t, aks02.cl, "thief-team", thiefNS)
	at = create(ctx, t, solo, failoverPolicy(soloNS, standIn))
	create(ctx, t, solo, apiRoute(soloNS, soloNS))
	waitAnswer(ctx, t, at, soloQ, w.chainIn(soloNS, "weu", aks01), diag()...)
	create(ctx, t, thief, failoverPolicy(thiefNS, standIn))
	create(ctx, t, thief, apiRoute(thiefNS, soloNS))

	at = w.publish(aks02)
	waitAnswer(ctx, t, at, zone.Query(aks02.target(w.domain), "A"), []string{"A " + aks02.lbIP}, diag()...)
	waitSyncs(ctx, t, at, aks01.ed, aks02.ed)
	ep := &externaldnsv1alpha1.DNSEndpoint{}
	if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Namespace: thiefNS, Name: "api-route-" + controller}, ep); err != nil || ep.Spec.Endpoints[0].DNSName != soloName {
		t.Fatalf("aks02 does not publish solo's name from thief (the attack needs it): %v %+v", err, ep.Spec.Endpoints)
	}

	// What aks02 would do, as `kubectl router plan` previews it: take the names it publishes under
	// stand-in policies where weu holds them from the same namespace (the team's; thief's copy of
	// solo's is listed, but weu holds solo's name from solo), leave the other team's.
	plan := routerPlugin(t, aks02, "plan", "--region-lost", "weu")
	for _, want := range []string{"If region weu were lost, this cluster (region neu) would:",
		"take over 2 name(s), where the lost region holds them, published from the same namespace:\n    " + failoverNS + ": " + name + "\n    " + thiefNS + ": " + soloName,
		"move nothing for 1 name(s) whose policy lists no serving stand-in: " + failoverOtherNS + ": " + otherName} {
		if !strings.Contains(plan, want) {
			t.Errorf("kubectl router plan --region-lost weu lacks %q:\n%s", want, plan)
		}
	}

	// 1. Partitioned both ways: each cluster's probes of the other's gateway fail, and the other's
	// heartbeat vouches for it.
	waitRegion(ctx, t, aks02, "weu", "Unreachable", "WitnessSaysAlive", diag)
	waitRegion(ctx, t, aks01, "neu", "Unreachable", "WitnessSaysAlive", diag)
	stable(t, "1. partitioned, not lost", []framework.Query{q, otherQ}, [][]string{chain(aks01), direct(aks01)}, aks01.ed, aks02.ed)
	assertRegion(ctx, t, aks02, "weu", "Unreachable")
	assertRegion(ctx, t, aks01, "neu", "Unreachable")

	// 2. Lost: aks01's operator, ExternalDNS and gateway stop at once.
	lost := w.lose()
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
	waitRouteZone(ctx, t, aks02, controller, routingv1alpha1.ZonePublished, "served by this cluster, of region neu, for region weu")
	if status, want := routerPlugin(t, aks02, "status"), "weu: Lost (HeartbeatStale) since "; !strings.Contains(status, want) ||
		!strings.Contains(status, "this cluster serves its names: 1 in "+controller) {
		t.Errorf("2. kubectl router status does not say weu is lost and 1 name is served here:\n%s", status)
	}
	stable(t, "2. lost, taken over; another team's name, without stand-ins, stays; solo's name, which aks02 publishes only from thief, is not taken",
		[]framework.Query{q, otherQ, soloQ}, [][]string{chain(aks02), direct(aks01), w.chainIn(soloNS, "weu", aks01)}, aks02.ed)

	// 2b. A new leader in aks02 (its operator restarted) counts the takeover it did not make (the
	// DNSEndpoint's mark says from which region, the zone that aks02 owns the name), and keeps weu
	// Lost since the earlier leader said so while its own probes decide.
	if got := endpointAnnotation(ctx, t, aks02, failoverNS, "api-route-"+controller, naming.AnnotationTakenFrom); got != "weu" {
		t.Errorf("2b. aks02's DNSEndpoint is marked as taken from %q, want weu", got)
	}
	before := regionStatus(ctx, t, aks02, "weu")
	if err := aks02.op.Stop(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	if aks02.op, err = aks02.cl.StartOperator(ctx, t, framework.OperatorOptions{}); err != nil {
		t.Fatal(err)
	}
	// The new leader's rounds show in the zone: its heartbeats. Three written after the restart mean
	// its first round, which judged the regions, is over, and the status written.
	heartbeat := zone.Query(failover.HeartbeatName(aks02.cluster, aks02.region, w.domain), "TXT")
	var beats []time.Time
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "three heartbeats of aks02's new leader", func(ctx context.Context) (bool, string, error) {
		ans, err := framework.Dig(ctx, heartbeat.Port, heartbeat.Name, heartbeat.Type)
		if err != nil || len(ans.Records) != 1 {
			return false, fmt.Sprintf("%v %v", ans, err), nil
		}
		hb, ok := failover.ParseHeartbeat(aks02.region, ans.Records[0].Data)
		if ok && hb.At.After(restarted) && !slices.Contains(beats, hb.At) {
			beats = append(beats, hb.At)
		}
		return len(beats) >= 3, fmt.Sprintf("heartbeats since the restart: %v", beats), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg = &clusterv1alpha1.DNSConfiguration{}
	if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
		t.Fatal(err)
	}
	if got := takenNames(cfg, "weu", controller); got != 1 {
		t.Errorf("2b. aks02's new leader says it holds %d names taken from weu, want 1: %+v", got, cfg.Status.Failover)
	}
	if after := regionStatus(ctx, t, aks02, "weu"); after.State != "Lost" || !after.Since.Equal(before.Since) {
		t.Errorf("2b. aks02's new leader says weu is %s since %s, want Lost since %s (the earlier leader's)", after.State, after.Since, before.Since)
	}

	// 3. Back: aks01 returns; the ownership record fences it.
	w.comeBack()
	stable(t, "3. aks01 back, fenced", []framework.Query{q, otherQ}, [][]string{chain(aks02), direct(aks01)}, aks01.ed, aks02.ed)
	waitRouteZone(ctx, t, aks01, controller, routingv1alpha1.ZoneDrifted, "served by cluster aks02, of region neu, for region weu")
	wantSkip := fmt.Sprintf(`because owner id does not match (found: \"%s\", required: \"%s\")`, aks02.owner, aks01.owner)
	if line := firstLineWith(aks01.ed.Log(), wantSkip); line == "" {
		t.Errorf("3. aks01's ExternalDNS did not log that %s owns %s now\n%s", aks02.owner, name, aks01.ed.Diagnostics())
	}

	// 4. Failback Automatic, in the home cluster's policy. The watch starts before the switch: a
	// failback is one CNAME rewrite, which can land before a watch started after it digs once.
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		tr, err = framework.Converge(ctx, q, framework.Resolves(chain(aks01)...), convergeTimeout, 50*time.Millisecond, diag()...)
	}()
	time.Sleep(200 * time.Millisecond)
	at = time.Now()
	setFailback(ctx, t, aks01, routingv1alpha1.FailbackAutomatic)
	<-watched
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
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "aks02's mark of the name to go", func(ctx context.Context) (bool, string, error) {
		got := endpointAnnotation(ctx, t, aks02, failoverNS, "api-route-"+controller, naming.AnnotationTakenFrom)
		return got == "", "taken from " + got, nil
	})
	if err != nil {
		t.Error(err)
	}
	stable(t, "4. back home", []framework.Query{q, otherQ}, [][]string{chain(aks01), direct(aks01)}, aks01.ed, aks02.ed)
	// Nothing lost on the way: every record a live route or gateway publishes is in the zone, with
	// its owner's ownership record.
	w.assertAllHome(t, "4. at the end", zone)
}

// assertAllHome checks the BIND world's zone holds both names pointing at aks01 (the team's
// through its policy's intermediate), owned by aks01, and both gateways' address records:
// nothing lost on the way.
func (w *failoverWorld) assertAllHome(t testing.TB, step string, zone *framework.BindServer) {
	t.Helper()
	aks01, aks02 := w.aks01, w.aks02
	name, otherName := w.hostname(failoverNS), w.hostname(failoverOtherNS)
	recs := framework.LogZone(t.Context(), t, step, zone)
	intermediate := naming.IntermediateName("internal", failoverNS, "weu", w.domain)
	for _, want := range []struct{ name, rtype, data string }{
		{name + ".", "CNAME", intermediate + "."}, {intermediate + ".", "CNAME", aks01.target(w.domain) + "."},
		{otherName + ".", "CNAME", aks01.target(w.domain) + "."},
		{aks01.target(w.domain) + ".", "A", aks01.lbIP}, {aks02.target(w.domain) + ".", "A", aks02.lbIP},
		{"weu-d-cname-" + name + ".", "TXT", "external-dns/owner=" + aks01.owner + ","},
		{"weu-d-cname-" + otherName + ".", "TXT", "external-dns/owner=" + aks01.owner + ","},
	} {
		if !framework.HasRecord(recs, want.name, want.rtype, want.data) {
			t.Errorf("%s: the zone lacks %s %s %s", step, want.name, want.rtype, want.data)
		}
	}
	// The operators write the intermediate: no ExternalDNS owns it.
	if framework.HasRecord(recs, "weu-d-cname-"+intermediate+".", "TXT", "heritage=external-dns") {
		t.Errorf("%s: an ExternalDNS ownership record for the intermediate %s", step, intermediate)
	}
}

// regionStatus is what m's dns-config says of region.
func regionStatus(ctx context.Context, t testing.TB, m *failoverMember, region string) clusterv1alpha1.RegionFailoverStatus {
	t.Helper()
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if err := m.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
		t.Fatal(err)
	}
	for _, r := range cfg.Status.Failover {
		if r.Region == region {
			return r
		}
	}
	t.Fatalf("%s's dns-config says nothing of region %s: %+v", m.cluster, region, cfg.Status.Failover)
	return clusterv1alpha1.RegionFailoverStatus{}
}

// endpointAnnotation is the annotation key of m's DNSEndpoint namespace/name ("" when unset).
func endpointAnnotation(ctx context.Context, t testing.TB, m *failoverMember, namespace, name, key string) string {
	t.Helper()
	ep := &externaldnsv1alpha1.DNSEndpoint{}
	if err := m.cl.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, ep); err != nil {
		t.Fatal(err)
	}
	return ep.Annotations[key]
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
func waitRegion(ctx context.Context, t testing.TB, m *failoverMember, region, state, reason string, diag func() []func() string) {
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
func assertRegion(ctx context.Context, t testing.TB, m *failoverMember, region, state string) {
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

// failoverController is the weu zone's ExternalDNS controller in the failover worlds.
const failoverController = "external-dns-weu"

// startBindFailoverWorld starts the failover world on a BIND zone that takes only TSIG-signed
// updates, the operators signing theirs with the key from a file, as they would in a pod.
func startBindFailoverWorld(t testing.TB) (*failoverWorld, *framework.BindServer) {
	t.Helper()
	return startBindFailoverWorldWith(t, nil)
}

// startBindFailoverWorldWith is startBindFailoverWorld with each member's ExternalDNS options
// changed by ed (nil: the framework's, a 500 ms interval).
func startBindFailoverWorldWith(t testing.TB, ed func(*framework.ExternalDNSOptions)) (*failoverWorld, *framework.BindServer) {
	t.Helper()
	return startBindFailoverWorldVia(t, ed, nil)
}

// startBindFailoverWorldVia is startBindFailoverWorldWith with each member's operator and
// ExternalDNS reaching the zone's server on the ports via gives them (nil, or 0: the server's
// own), for paths of their own that a test can cut (framework.DNSProxy), and each member changed
// by members before it starts (its operator's binary, for example).
func startBindFailoverWorldVia(t testing.TB, ed func(*framework.ExternalDNSOptions),
	via func(*framework.BindServer, *failoverMember) (operator, externalDNS int), members ...func(*failoverMember)) (*failoverWorld, *framework.BindServer) {
	t.Helper()
	const prefix = "weu-d-"
	zone, err := framework.StartBind(t.Context(), t, framework.BindOptions{Name: "weu", Zone: worldDomain, TSIG: true})
	if err != nil {
		t.Fatal(err)
	}
	keys := t.TempDir()
	w := startFailoverWorld(t, worldDomain, func(m *failoverMember) (clusterv1alpha1.ExternalDNSController, framework.ExternalDNSOptions) {
		for _, change := range members {
			change(m)
		}
		// Each cluster's key in a file of its own, as each mounts its own Secret.
		keyFile := filepath.Join(keys, m.cluster+".tsig.secret")
		if err := os.WriteFile(keyFile, []byte(zone.TSIG.Secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		port, edPort := zone.Port, zone.Port
		if via != nil {
			op, ed := via(zone, m)
			port, edPort = cmp.Or(op, port), cmp.Or(ed, edPort)
		}
		o := framework.ExternalDNSOptions{Name: failoverController, OwnerID: m.owner, TXTPrefix: prefix}.ForBind(zone)
		o.DNSPort = edPort
		return clusterv1alpha1.ExternalDNSController{Name: failoverController, Region: "weu",
				Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{fmt.Sprintf("127.0.0.1:%d", port)}},
				Failover: &clusterv1alpha1.ZoneFailover{OwnerID: m.owner, TXTPrefix: prefix,
					TSIG: &clusterv1alpha1.TSIGKey{KeyName: zone.TSIG.Name, Algorithm: zone.TSIG.Algorithm, SecretFile: keyFile}}},
			edOptions(o, ed)
	})
	return w, zone
}

// edOptions is o changed by ed, when not nil.
func edOptions(o framework.ExternalDNSOptions, ed func(*framework.ExternalDNSOptions)) framework.ExternalDNSOptions {
	if ed != nil {
		ed(&o)
	}
	return o
}

// TestFailover_OperatorTakesOverInAzurePrivateDNS is regional failover in the AKS world: the weu
// zone is an Azure Private DNS zone (the Azure stand-in, with Resource Manager's ETags), written by
// two real ExternalDNS instances run with the arguments the ExternalDNS chart renders from
// docs/examples/external-dns/weu-values.yaml (an owner ID each), and read and written by both
// operators through Resource Manager with their verification credentials. aks01's operator
// creates the policy's intermediate name; when everything of aks01 stops, aks02's operator
// rewrites its CNAME record set in place (If-Match on its ETag): it is never absent. aks01, back,
// is fenced.
func TestFailover_OperatorTakesOverInAzurePrivateDNS(t *testing.T) {
	ctx := t.Context()
	const controller = failoverController
	z := startAzureExampleZone(t, controller)
	az, sub, group, domain := z.az, z.sub, z.group, z.domain
	w := startFailoverWorld(t, domain, func(m *failoverMember) (clusterv1alpha1.ExternalDNSController, framework.ExternalDNSOptions) {
		return z.failoverZone(controller, m, z.file)
	})
	aks01, aks02 := w.aks01, w.aks02
	diag := func() string {
		var b strings.Builder
		for _, d := range append(w.diagnostics(), az.Diagnostics) {
			b.WriteString("\n" + d())
		}
		return b.String()
	}
	// The team's name goes through its policy's intermediate name, whose record set a move rewrites.
	label := strings.TrimSuffix(naming.IntermediateName("internal", failoverNS, "weu", domain), "."+domain)
	cname := func() string { return strings.Join(az.Records(sub, group, domain)[label+" CNAME"], ",") }
	// watch polls the CNAME record set every 50 ms until it holds want, recording every distinct
	// value on the way ("" is absent).
	watch := func(step, want string) []string {
		t.Helper()
		seen := []string{cname()}
		err := framework.Poll(ctx, 2*convergeTimeout, 50*time.Millisecond, step+": "+label+" CNAME "+want, func(context.Context) (bool, string, error) {
			if got := cname(); got != seen[len(seen)-1] {
				seen = append(seen, got)
			}
			return seen[len(seen)-1] == want, strings.Join(seen, " -> "), nil
		})
		if err != nil {
			t.Fatalf("%v%s", err, diag())
		}
		return seen
	}
	gw1, gw2 := aks01.target(domain), aks02.target(domain)

	at := w.publish(aks01)
	watch("1. aks01 publishes", gw1)
	w.publish(aks02)
	waitSyncs(ctx, t, at, aks01.ed, aks02.ed)
	waitSyncs(ctx, t, time.Now(), aks01.ed, aks02.ed)
	if got := cname(); got != gw1 {
		t.Fatalf("1. both publish: %s CNAME %s, want aks01's %s%s", label, got, gw1, diag())
	}

	lost := w.lose()
	seen := watch("2. lost", gw2)
	t.Logf("2. lost: %s CNAME %s, %s after aks01 stopped (ExternalDNS --interval=1s)", label, strings.Join(seen, " -> "), time.Since(lost).Round(time.Millisecond))
	if len(seen) != 2 {
		t.Errorf("2. want the CNAME record set rewritten in place from %s to %s, seen %v (\"\" is absent)", gw1, gw2, seen)
	}
	waitRegion(ctx, t, aks02, "weu", "Lost", "HeartbeatStale", func() []func() string { return []func() string{diag} })

	w.comeBack()
	waitSyncs(ctx, t, time.Now(), aks01.ed, aks02.ed)
	waitSyncs(ctx, t, time.Now(), aks01.ed, aks02.ed)
	if got := cname(); got != gw2 {
		t.Errorf("3. aks01 back: %s CNAME %s, want aks02's %s still: the ownership record set fences aks01%s", label, got, gw2, diag())
	}
}

// routerPlugin runs the kubectl plugin (`kubectl router …`) against m's cluster, as its admin.
func routerPlugin(t testing.TB, m *failoverMember, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := routerapp.NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append(args, "--kubeconfig", m.cl.Kubeconfig))
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("kubectl router %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// waitRouteZone waits until the team's route in m reports state in the zone of controller, with an
// answer that says note (who serves it).
func waitRouteZone(ctx context.Context, t testing.TB, m *failoverMember, controller string, state routingv1alpha1.ZoneState, note string) {
	t.Helper()
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, fmt.Sprintf("%s's route to say %s, %q, in %s", m.cluster, state, note, controller),
		func(ctx context.Context) (bool, string, error) {
			r := &routingv1alpha1.ServiceRoute{}
			if err := m.cl.Client.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: "api-route"}, r); err != nil {
				return false, "", err
			}
			for _, z := range r.Status.Zones {
				if z.Controller == controller {
					return z.State == state && strings.Contains(z.Answer, note), fmt.Sprintf("%s: %s", z.State, z.Answer), nil
				}
			}
			return false, fmt.Sprintf("no zone %s: %+v", controller, r.Status.Zones), nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

// flappingGateway answers one connection, then refuses connections for down, again and again: a
// gateway that answers about every other probe a second apart.
func flappingGateway(t testing.TB, addr string, down time.Duration) (accepted *atomic.Int32, stop func()) {
	t.Helper()
	accepted = &atomic.Int32{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("flapping gateway on %s: %v", addr, err)
				return
			}
			go func() { <-done; _ = l.Close() }()
			c, err := l.Accept()
			_ = l.Close()
			if err != nil {
				return // stopped
			}
			_ = c.Close()
			accepted.Add(1)
			select {
			case <-done:
				return
			case <-time.After(down):
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return accepted, stop
}

// TestFailover_FlappingGatewayMovesNothing: aks01's operator is gone, so its heartbeat goes
// stale in the zone, and its gateway answers about every other probe of aks02's (it refuses
// connections for 1.5 s after each one it accepts, probes come every second). The failures never
// reach the threshold (3) in a row: aks02 never judges weu lost and the name stays, without a
// single change of answer. Once the gateway stops answering for good, the name moves.
func TestFailover_FlappingGatewayMovesNothing(t *testing.T) {
	ctx := t.Context()
	w, zone := startBindFailoverWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	name, chain := w.hostname(failoverNS), w.chain
	q := zone.Query(name, "A")
	at := w.publish(aks01)
	waitAnswer(ctx, t, at, q, chain(aks01), zone.Diagnostics)
	at = w.publish(aks02)
	waitSyncs(ctx, t, at, aks01.ed, aks02.ed)

	// aks02 now probes aks01's gateway where it flaps; aks01's operator stops (its ExternalDNS runs on).
	w.gateway1.close()
	accepted, stopFlapping := flappingGateway(t, net.JoinHostPort(aks01.lbIP, strconv.Itoa(w.port)), 1500*time.Millisecond)
	updateConfig(ctx, t, aks02, func(cfg *clusterv1alpha1.DNSConfiguration) { cfg.Spec.Failover.ProbePort = ptr.To(int32(w.port)) })
	if err := aks01.op.Stop(); err != nil {
		t.Fatal(err)
	}
	// Beyond the heartbeat's staleness (5 s), for 20 probes: weu is never Lost, the name never
	// moves (dig every 100 ms).
	var states, others []string
	before := accepted.Load()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ans, err := framework.Dig(ctx, q.Port, q.Name, q.Type); err == nil && !framework.SameRecords(ans, chain(aks01)) {
			others = append(others, strings.Join(ans.Shorts(), " | "))
		}
		c := &clusterv1alpha1.DNSConfiguration{}
		if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, c); err != nil {
			continue
		}
		for _, r := range c.Status.Failover {
			if r.Region == "weu" && (len(states) == 0 || states[len(states)-1] != r.State+" "+r.Reason) {
				states = append(states, r.State+" "+r.Reason)
			}
		}
	}
	answered := accepted.Load() - before
	t.Logf("aks02's view of weu over 20 s of a flapping gateway and a stale heartbeat: %v; the gateway answered %d of about 20 probes", states, answered)
	if answered < 4 || answered > 16 {
		t.Errorf("the gateway answered %d of about 20 probes: it did not flap", answered)
	}
	if len(others) > 0 {
		t.Errorf("%s answered other than aks01's gateway: %v", name, others)
	}
	for _, s := range states {
		if strings.HasPrefix(s, "Lost") {
			t.Errorf("a flapping gateway was judged lost: %v", states)
		}
	}

	// The gateway stops answering for good: three failures in a row, and the name moves.
	lost := time.Now()
	stopFlapping()
	tr, err := framework.Converge(ctx, q, framework.Resolves(chain(aks02)...), 2*convergeTimeout, 50*time.Millisecond, append(w.diagnostics(), zone.Diagnostics)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the gateway gone for good: %s answers aks02's gateway %s later; seen: %s", name, time.Since(lost).Round(time.Millisecond), tr)
}

// TestFailover_EveryZoneFollows runs the loss in the multi-region world: two clusters, three
// regional zones (weu, neu, frc, each a BIND), six ExternalDNS instances (one per cluster and
// zone, an owner ID each, one TXT prefix per zone). aks01 (weu) adopts neu and frc, aks02 (neu)
// adopts weu and frc, so both publish every name into every zone, and aks01, first, owns them
// all. Each operator beats in all three zones. When everything of aks01 stops, its heartbeat goes
// stale in all three (a majority), and aks02 takes the name over in each: every zone, watched with
// dig every 50 ms, switches directly from aks01's gateway to aks02's.
//
// aks02's ExternalDNS instances run as the homelab walkthrough runs its own, with --events, and an
// interval (10 minutes) no wait here reaches: each synchronises only when a DNSEndpoint it reads
// changes. After passing a name's ownership the operator marks the DNSEndpoint that publishes it
// (router.io/ownership-passed-at), and that update is what makes them point the name at aks02.
func TestFailover_EveryZoneFollows(t *testing.T) {
	ctx := t.Context()
	w, zones := startEveryZoneWorld(t)
	aks01, aks02 := w.aks01, w.aks02
	name := w.hostname(failoverNS)
	diag := func() []func() string { return zonesDiagnostics(w, zones) }
	w.publishBoth(diag, inRegionOrder(zones)...)
	// Each status write of aks02's ExternalDNS (observedGeneration) is an update it runs again on:
	// wait out that run, so that nothing but the takeover's mark can make it run after the loss.
	waitSyncs(ctx, t, waitProcessed(ctx, t, aks02), aks02.eds...)

	lost := w.lose()
	traces := followZones(t, zones, worldRegions, name, func(r string) []string { return w.teamIn(r, aks02) }, diag)
	for _, r := range worldRegions {
		tr := traces[r]
		t.Logf("zone %s: %s answers aks02's gateway %s after aks01 stopped; seen: %s", r, name, tr.Took.Round(time.Millisecond), tr)
		if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, w.teamIn(r, aks01)) {
			t.Errorf("zone %s: want a direct switch from aks01's gateway to aks02's, seen: %s", r, tr)
		}
	}
	took := time.Since(lost)
	t.Logf("every zone follows %s after the loss (aks02's ExternalDNS: --events, --interval=%s)", took.Round(time.Millisecond), eventsOnlyInterval)
	// The bound: the heartbeat goes stale 5 s after its last refresh, then one round (1 s), the
	// writes, and ExternalDNS's run on the DNSEndpoint's update (at most 5 s later: --events
	// schedules it so).
	// Without the mark nothing would move at all (the interval is 10 minutes); the bound is loose
	// (10 s for a loaded machine: 10.9 s was measured in CI) so that load alone does not fail it.
	if bound := 5*time.Second + 3*time.Second + 5*time.Second; took > bound+10*time.Second {
		t.Errorf("the takeover took %s, beyond the design's bound of %s plus 10 s of a loaded machine", took.Round(time.Millisecond), bound)
	}
	waitRegion(ctx, t, aks02, "weu", "Lost", "HeartbeatStale", diag)
	cfg := &clusterv1alpha1.DNSConfiguration{}
	if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
		t.Fatal(err)
	}
	for _, r := range worldRegions {
		controller := framework.RegionalControllerName(r)
		if got := takenNames(cfg, "weu", controller); got != 1 {
			t.Errorf("aks02's dns-config says it took %d names from weu in %s, want 1: %+v", got, controller, cfg.Status.Failover)
		}
		ep := &externaldnsv1alpha1.DNSEndpoint{}
		if err := aks02.cl.Client.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: "api-route-" + controller}, ep); err != nil {
			t.Fatal(err)
		}
		if at, err := time.Parse(time.RFC3339, ep.Annotations[naming.AnnotationOwnershipPassed]); err != nil || at.Before(lost.Truncate(time.Second)) {
			t.Errorf("aks02's DNSEndpoint %s does not say when its name passed (after the loss at %s): %q", ep.Name, lost.Format(time.RFC3339), ep.Annotations)
		}
	}
}

// startEveryZoneWorld starts the multi-region failover world: three regional zones (weu, neu, frc,
// each a BIND), aks01 adopting neu and frc, aks02 adopting weu and frc, each with an ExternalDNS
// instance per zone (aks02's with --events and an interval no wait reaches).
func startEveryZoneWorld(t testing.TB) (*failoverWorld, map[string]*framework.BindServer) {
	t.Helper()
	zones, err := framework.StartRegionalZones(t.Context(), t, worldDomain, worldRegions...)
	if err != nil {
		t.Fatal(err)
	}
	w := startFailoverZones(t, worldDomain, []string{"neu", "frc"}, []string{"weu", "frc"},
		func(m *failoverMember) ([]clusterv1alpha1.ExternalDNSController, []framework.ExternalDNSOptions) {
			var controllers []clusterv1alpha1.ExternalDNSController
			var opts []framework.ExternalDNSOptions
			for _, r := range worldRegions {
				name, owner, prefix := framework.RegionalControllerName(r), "external-dns-"+r+"-"+m.cluster, r+"-"+worldEnvLetter+"-"
				controllers = append(controllers, clusterv1alpha1.ExternalDNSController{Name: name, Region: r,
					Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{fmt.Sprintf("127.0.0.1:%d", zones[r].Port)}},
					Failover:     &clusterv1alpha1.ZoneFailover{OwnerID: owner, TXTPrefix: prefix}})
				o := framework.ExternalDNSOptions{Name: name, OwnerID: owner, TXTPrefix: prefix}.ForBind(zones[r])
				if m.cluster == "aks02" {
					o.Interval, o.ExtraArgs = eventsOnlyInterval, []string{"--events"}
				}
				opts = append(opts, o)
			}
			return controllers, opts
		})
	return w, zones
}

// inRegionOrder are the zones of the world's regions, in worldRegions' order.
func inRegionOrder(zones map[string]*framework.BindServer) []*framework.BindServer {
	out := make([]*framework.BindServer, len(worldRegions))
	for i, r := range worldRegions {
		out[i] = zones[r]
	}
	return out
}

// zonesDiagnostics are the world's diagnostics and every zone's.
func zonesDiagnostics(w *failoverWorld, zones map[string]*framework.BindServer) []func() string {
	out := w.diagnostics()
	for _, r := range worldRegions {
		out = append(out, zones[r].Diagnostics)
	}
	return out
}

// followZones watches name in the zones of regions with dig every 50 ms, all at once, until each
// answers want, and returns what each showed.
func followZones(t testing.TB, zones map[string]*framework.BindServer, regions []string, name string, want func(region string) []string, diag func() []func() string) map[string]framework.Trace {
	t.Helper()
	traces := make(map[string]framework.Trace, len(regions))
	var mu sync.Mutex
	var watches []func() error
	for _, r := range regions {
		watches = append(watches, func() error {
			tr, err := framework.Converge(t.Context(), zones[r].Query(name, "A"), framework.Resolves(want(r)...), 2*convergeTimeout, 50*time.Millisecond, diag()...)
			mu.Lock()
			traces[r] = tr
			mu.Unlock()
			return err
		})
	}
	if err := parallel(watches...); err != nil {
		t.Fatal(err)
	}
	return traces
}

// waitProcessed waits until m's ExternalDNS instances have processed every DNSEndpoint of m
// (status.observedGeneration is the generation) and returns the time they were found so.
func waitProcessed(ctx context.Context, t testing.TB, m *failoverMember) time.Time {
	t.Helper()
	err := framework.Poll(ctx, syncTimeout, 100*time.Millisecond, m.cluster+"'s DNSEndpoints processed by its ExternalDNS", func(ctx context.Context) (bool, string, error) {
		list := &externaldnsv1alpha1.DNSEndpointList{}
		if err := m.cl.Client.List(ctx, list); err != nil {
			return false, "", err
		}
		for _, ep := range list.Items {
			if ep.Status.ObservedGeneration != ep.Generation {
				return false, ep.Namespace + "/" + ep.Name + " not processed", nil
			}
		}
		return len(list.Items) > 0, fmt.Sprintf("%d DNSEndpoints", len(list.Items)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// eventsOnlyInterval is an ExternalDNS --interval longer than any wait of the tests: an instance
// run with it and --events synchronises only when what it reads changes.
const eventsOnlyInterval = 10 * time.Minute
