package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/testenv"
)

// startFaultProxy puts a fault-injecting proxy in front of the test API server for one test and
// logs what went through it at the end.
func startFaultProxy(t *testing.T) *testenv.FaultProxy {
	t.Helper()
	p, err := env.StartFaultProxy()
	require.NoError(t, err)
	t.Cleanup(func() {
		t.Logf("requests through the proxy (user agent, verb, resource, status):\n%s", testenv.Summary(p.Requests()))
		p.Close()
	})
	return p
}

// TestFaults_APIErrorsNeverDeleteOrRecreatePublishedObjects: with the operator behind a proxy
// that fails 30% of its requests in bursts (5xx, timeouts, conflicts on writes, cut watches)
// while the platform makes harmless edits, no DNSEndpoint and no Istio Gateway is deleted,
// re-created or loses a record or host; once the faults stop everything converges, the routes
// added meanwhile included.
func TestFaults_APIErrorsNeverDeleteOrRecreatePublishedObjects(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu", "frc")
	controllers := []string{"external-dns-weu", "external-dns-neu", "external-dns-frc"}
	const target = "aks01-weu-internal.example.com"

	proxy := startFaultProxy(t)
	operatorCfg := proxy.Config()
	operatorCfg.QPS, operatorCfg.Burst = env.Config.QPS, env.Config.Burst
	startOperatorWith(t, operatorCfg, operatorOptions{namespaces: []string{f.ns, f.gatewayNS}})

	gw := f.gateway("default-gateway", "internal")
	svc := f.ingressService(lbIP...)
	f.policy(weuBound) // every controller, from this (weu) cluster
	var routes []string
	addRoutes := func(from, to int) {
		for i := from; i < to; i++ {
			name := fmt.Sprintf("route-%02d", i)
			f.route("", name, fmt.Sprintf("svc%02d", i), gw.Name)
			routes = append(routes, name)
		}
	}
	addRoutes(0, 20)
	f.waitRoutesPublished(routes, target, controllers, waitTimeout)
	f.waitIstioHosts(gw.Name, f.istioHosts(routes)...)
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.123.45.67"}}, controllers...)

	watched := watchPublished(t, f)
	defer func() { // also when a wait below fails: what happened during the faults matters most
		if problems := watched.stop(); len(problems) > 0 {
			t.Errorf("published objects were removed, re-created or lost content while the API server failed requests:\n%s", strings.Join(problems, "\n"))
		}
	}()

	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("FAULT_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("faults: 30%% of requests in bursts of 4 s every 6 s for 24 s, seed %d (FAULT_SEED reproduces the choice)", seed)
	proxy.SetFaults(testenv.Faults{Share: 0.3, Burst: 4 * time.Second, Pause: 2 * time.Second, Hold: 2 * time.Second, Seed: seed})
	faultsStart := time.Now()

	// Harmless platform and application edits while the faults last.
	sleepUntil(faultsStart.Add(2 * time.Second))
	addRoutes(20, 25)
	sleepUntil(faultsStart.Add(6 * time.Second))
	f.touchLabel(&routingv1alpha1.ServiceRoute{}, f.ns, "route-03", "route-07", "route-11")
	f.touchLabel(&routingv1alpha1.Gateway{}, f.gatewayNS, gw.Name)
	f.touchLabel(svc, f.gatewayNS, svc.Name)
	sleepUntil(faultsStart.Add(10 * time.Second))
	// The same meaning: the policy already applied only here, in aks01.
	f.updatePolicy(routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeRegionBound, SourceRegion: "weu", SourceCluster: "aks01"})
	sleepUntil(faultsStart.Add(16 * time.Second))
	f.touchLabel(&routingv1alpha1.ServiceRoute{}, f.ns, "route-15", "route-21")
	sleepUntil(faultsStart.Add(24 * time.Second))
	proxy.FaultsOff()

	injected := map[testenv.FaultKind]int{}
	for _, r := range proxy.Requests() {
		if r.Fault != "" {
			injected[r.Fault]++
		}
	}
	t.Logf("faults injected: %v", injected)
	require.NotZero(t, injected[testenv.FaultServerError]+injected[testenv.FaultTimeout]+injected[testenv.FaultConflict],
		"the proxy injected no error: the test would prove nothing")

	// Converged again, with the routes added during the faults.
	f.waitRoutesPublished(routes, target, controllers, 2*time.Minute)
	f.waitIstioHosts(gw.Name, f.istioHosts(routes)...)
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.123.45.67"}}, controllers...)
	f.waitPolicy(routingv1alpha1.PhaseActive, routingv1alpha1.ReasonPolicyActive)
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
}

func sleepUntil(deadline time.Time) { time.Sleep(time.Until(deadline)) }

// hostnames are the hostnames of the fixture's routes named route-NN for service svcNN, sorted
// as the Istio Gateway lists them.
// istioHosts are the Istio Gateway hosts of the fixture's routes (namespace-scoped), sorted.
func (f *fixture) istioHosts(routes []string) []string {
	var hosts []string
	for _, r := range routes {
		hosts = append(hosts, istioHost(f.ns, f.hostname("svc"+strings.TrimPrefix(r, "route-"), "example.com")))
	}
	sort.Strings(hosts)
	return hosts
}

// waitRoutesPublished waits until every route is Ready and has one CNAME DNSEndpoint per
// controller.
func (f *fixture) waitRoutesPublished(routes []string, target string, controllers []string, timeout time.Duration) {
	f.t.Helper()
	waitFor(f.t, fmt.Sprintf("%d routes to be Ready and published", len(routes)), func() string {
		for _, name := range routes {
			r := &routingv1alpha1.ServiceRoute{}
			if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.ns, Name: name}, r); err != nil {
				return err.Error()
			}
			if p := statusProblem(r.Generation, r.Status.ObservedGeneration, r.Status.Conditions, string(r.Status.Phase),
				string(routingv1alpha1.PhaseActive), routingv1alpha1.ReasonReconciliationSucceeded); p != "" {
				return name + ": " + p
			}
			eps := routeEndpoints(f.t, f.ns, name)
			if len(eps) != len(controllers) {
				return fmt.Sprintf("%s has %d DNSEndpoints, want %d", name, len(eps), len(controllers))
			}
			for _, ep := range eps {
				if len(ep.Spec.Endpoints) != 1 || ep.Spec.Endpoints[0].DNSName != r.Status.Hostname ||
					!slices.Equal(ep.Spec.Endpoints[0].Targets, []string{target}) {
					return fmt.Sprintf("%s has records %s", ep.Name, recordsOf(&ep))
				}
			}
		}
		return ""
	}, timeout)
}

// touchLabel sets a label nobody selects on the named objects: a metadata-only change.
func (f *fixture) touchLabel(obj client.Object, ns string, names ...string) {
	f.t.Helper()
	for _, name := range names {
		o := obj.DeepCopyObject().(client.Object)
		o.SetNamespace(ns)
		o.SetName(name)
		patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"touched-at":"%d"}}}`, time.Now().UnixNano()))
		require.NoError(f.t, env.Client.Patch(f.ctx, o, client.RawPatch("application/merge-patch+json", patch)))
	}
}

func recordsOf(ep *externaldnsv1alpha1.DNSEndpoint) string {
	var parts []string
	for _, r := range ep.Spec.Endpoints {
		targets := slices.Clone([]string(r.Targets))
		slices.Sort(targets)
		parts = append(parts, fmt.Sprintf("%s %s %s", r.DNSName, r.RecordType, strings.Join(targets, ",")))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// publishedWatch watches the DNSEndpoints and Istio Gateways of a fixture's namespaces on the
// API server directly (not through any proxy), from a listed resourceVersion on, so that no
// change escapes it, and records every deletion, re-creation (a new UID under a known name),
// DNSEndpoint whose records change and Istio Gateway that loses a host.
type publishedWatch struct {
	t        *testing.T
	client   client.WithWatch
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	problems []string
	streams  []*watchedStream
}

// watchedStream is one kind in one namespace.
type watchedStream struct {
	kind    string
	ns      string
	newList func() client.ObjectList
	// lost describes what after lacks that before had ("" when nothing).
	lost func(before, after client.Object) string
	// last is the latest version seen of each object, by name.
	last map[string]client.Object
	rv   string
}

func watchPublished(t *testing.T, f *fixture) *publishedWatch {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w := &publishedWatch{t: t, client: c, cancel: cancel}
	endpointsLost := func(before, after client.Object) string {
		b, a := recordsOf(before.(*externaldnsv1alpha1.DNSEndpoint)), recordsOf(after.(*externaldnsv1alpha1.DNSEndpoint))
		if a != b {
			return fmt.Sprintf("records changed from [%s] to [%s]", b, a)
		}
		return ""
	}
	hostsLost := func(before, after client.Object) string {
		have := istioHosts(after.(*istionetworkingv1.Gateway))
		var dropped []string
		for _, h := range istioHosts(before.(*istionetworkingv1.Gateway)) {
			if !slices.Contains(have, h) {
				dropped = append(dropped, h)
			}
		}
		if len(dropped) > 0 {
			return fmt.Sprintf("hosts dropped: %v (%d left)", dropped, len(have))
		}
		return ""
	}
	for _, ns := range []string{f.ns, f.gatewayNS} {
		w.streams = append(w.streams, &watchedStream{kind: "DNSEndpoint", ns: ns, lost: endpointsLost,
			newList: func() client.ObjectList { return &externaldnsv1alpha1.DNSEndpointList{} }})
	}
	w.streams = append(w.streams, &watchedStream{kind: "IstioGateway", ns: f.gatewayNS, lost: hostsLost,
		newList: func() client.ObjectList { return &istionetworkingv1.GatewayList{} }})
	for _, s := range w.streams {
		require.NoError(t, w.relist(ctx, s, true))
		w.wg.Add(1)
		go w.run(ctx, s)
	}
	return w
}

func (w *publishedWatch) problem(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.problems = append(w.problems, time.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
}

// relist lists the stream's objects; after the first list it compares them with the last
// versions seen, for the changes a broken watch may have missed.
func (w *publishedWatch) relist(ctx context.Context, s *watchedStream, first bool) error {
	list := s.newList()
	if err := w.client.List(ctx, list, client.InNamespace(s.ns)); err != nil {
		return err
	}
	now := map[string]client.Object{}
	if err := meta.EachListItem(list, func(o runtime.Object) error {
		obj := o.(client.Object)
		now[obj.GetName()] = obj
		return nil
	}); err != nil {
		return err
	}
	if !first {
		for name, before := range s.last {
			after, ok := now[name]
			switch {
			case !ok:
				w.problem("%s %s/%s is gone (seen on a re-list)", s.kind, s.ns, name)
			case after.GetUID() != before.GetUID():
				w.problem("%s %s/%s was re-created (seen on a re-list)", s.kind, s.ns, name)
			default:
				if lost := s.lost(before, after); lost != "" {
					w.problem("%s %s/%s: %s (seen on a re-list)", s.kind, s.ns, name, lost)
				}
			}
		}
	}
	s.last, s.rv = now, list.(metav1.ListInterface).GetResourceVersion()
	return nil
}

func (w *publishedWatch) run(ctx context.Context, s *watchedStream) {
	defer w.wg.Done()
	for ctx.Err() == nil {
		wi, err := w.client.Watch(ctx, s.newList(), client.InNamespace(s.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: s.rv}})
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		w.consume(s, wi)
		wi.Stop()
		if ctx.Err() == nil {
			_ = w.relist(ctx, s, false) // the watch ended: catch up on anything it did not deliver
		}
	}
}

func (w *publishedWatch) consume(s *watchedStream, wi watch.Interface) {
	for ev := range wi.ResultChan() {
		obj, ok := ev.Object.(client.Object)
		if !ok || ev.Type == watch.Error {
			return
		}
		s.rv = obj.GetResourceVersion()
		name := obj.GetName()
		before, known := s.last[name]
		switch ev.Type {
		case watch.Deleted:
			w.problem("%s %s/%s was DELETED", s.kind, s.ns, name)
			delete(s.last, name)
			continue
		case watch.Added, watch.Modified:
			switch {
			case !known && ev.Type == watch.Added:
			case !known:
				w.problem("%s %s/%s appeared as %s without being seen before", s.kind, s.ns, name, ev.Type)
			case before.GetUID() != obj.GetUID():
				w.problem("%s %s/%s was re-created (UID %s → %s)", s.kind, s.ns, name, before.GetUID(), obj.GetUID())
			default:
				if lost := s.lost(before, obj); lost != "" {
					w.problem("%s %s/%s: %s", s.kind, s.ns, name, lost)
				}
			}
		}
		s.last[name] = obj
	}
}

// stop ends the watches, compares a final list with what they saw last, and returns the
// problems recorded.
func (w *publishedWatch) stop() []string {
	w.cancel()
	w.wg.Wait()
	for _, s := range w.streams {
		require.NoError(w.t, w.relist(context.Background(), s, false))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.problems...)
}
