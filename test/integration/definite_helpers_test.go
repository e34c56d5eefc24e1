package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/controllers"
	"github.com/service-router/service-router-operator/internal/testenv"
)

// outageRecorder watches, through API watches (every change, not samples), what serves traffic:
// the DNSEndpoints of some namespaces, the generated Istio Gateways of others and, when asked,
// the Ready condition of the ServiceRoutes that exist in a namespace at the start. It records
// every event a user would notice as an outage: a DNSEndpoint or Istio Gateway deleted,
// re-created under the same name with another UID, a DNSEndpoint losing a DNS name, an Istio
// Gateway losing a host, a route leaving Ready=True. DNSEndpoints and Istio Gateways created
// during the recording are watched the same way.
type outageRecorder struct {
	t       testing.TB
	scope   watchScope
	started time.Time
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stopped bool

	mu       sync.Mutex
	problems []string
	uids     map[string]types.UID // kind namespace/name → UID of every object seen
	initial  map[string]types.UID // the same, for the objects that existed at the start
	names    map[string][]string  // kind namespace/name → DNS names (DNSEndpoint) or hosts (Istio Gateway)
}

// watchScope says what an outageRecorder watches and what it counts as an outage.
type watchScope struct {
	endpointNamespaces []string // DNSEndpoints of these namespaces
	istioNamespaces    []string // Istio Gateways of these namespaces
	// readyRoutesNamespace, when set, requires every ServiceRoute of that namespace to stay
	// Ready=True throughout.
	readyRoutesNamespace string
	// unpublishable names must appear on no DNSEndpoint and no Istio Gateway.
	unpublishable []string
	// namesMayChange is for a transition that legitimately renames everything (a new cluster
	// domain): only unpublishable names count as outages.
	namesMayChange bool
}

// recordOutages starts watching and returns once every watch is established, so that the
// caller's next change is seen.
func recordOutages(t testing.TB, scope watchScope) *outageRecorder {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &outageRecorder{t: t, scope: scope, started: time.Now(), cancel: cancel,
		uids: map[string]types.UID{}, initial: map[string]types.UID{}, names: map[string][]string{}}
	// A test that fails before convergence still reports what the watches saw until then.
	t.Cleanup(func() { r.stop("until the test ended (before convergence)") })
	for _, ns := range scope.endpointNamespaces {
		r.start(ctx, wc, &externaldnsv1alpha1.DNSEndpointList{}, ns, r.onEndpoint)
	}
	for _, ns := range scope.istioNamespaces {
		r.start(ctx, wc, &istionetworkingv1.GatewayList{}, ns, r.onIstioGateway)
	}
	if scope.readyRoutesNamespace != "" {
		r.start(ctx, wc, &routingv1alpha1.ServiceRouteList{}, scope.readyRoutesNamespace, r.onRoute)
	}
	return r
}

// start lists the objects (the state before the transition), then watches from that list's
// resourceVersion so that no change between the two is missed.
func (r *outageRecorder) start(ctx context.Context, wc client.WithWatch, list client.ObjectList, ns string, handle func(watch.EventType, client.Object)) {
	r.t.Helper()
	require.NoError(r.t, wc.List(ctx, list, client.InNamespace(ns)))
	require.NoError(r.t, meta.EachListItem(list, func(o runtime.Object) error {
		obj := o.(client.Object)
		key := objectKey(obj)
		r.mu.Lock()
		r.initial[key] = obj.GetUID()
		r.mu.Unlock()
		handle(watch.Added, obj)
		return nil
	}))
	rv := list.GetResourceVersion()
	w, err := wc.Watch(ctx, list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	require.NoError(r.t, err)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			for ev := range w.ResultChan() {
				if ctx.Err() != nil {
					return // stopped: the watch ends with a cancellation error, not an outage
				}
				if ev.Type == watch.Error {
					r.problem("the watch of %T in %s failed: %v", list, ns, apierrors.FromObject(ev.Object))
					continue
				}
				if ev.Type == watch.Bookmark {
					continue
				}
				obj := ev.Object.(client.Object)
				rv = obj.GetResourceVersion()
				handle(ev.Type, obj)
			}
			if ctx.Err() != nil {
				return
			}
			// The server ends watches after a while; resume where this one stopped.
			if w, err = wc.Watch(ctx, list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}}); err != nil {
				if ctx.Err() == nil {
					r.problem("re-opening the watch of %T in %s: %v", list, ns, err)
				}
				return
			}
		}
	}()
}

func objectKey(obj client.Object) string {
	kind := "DNSEndpoint"
	switch obj.(type) {
	case *istionetworkingv1.Gateway:
		kind = "Istio Gateway"
	case *routingv1alpha1.ServiceRoute:
		kind = "ServiceRoute"
	case *routingv1alpha1.Gateway:
		kind = "Gateway"
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

func (r *outageRecorder) problem(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.problems = append(r.problems, fmt.Sprintf("+%.1fs ", time.Since(r.started).Seconds())+fmt.Sprintf(format, args...))
}

// onIdentity handles the events every watched kind shares: deletion and re-creation.
func (r *outageRecorder) onIdentity(ev watch.EventType, obj client.Object) {
	key := objectKey(obj)
	r.mu.Lock()
	previous, seen := r.uids[key]
	r.uids[key] = obj.GetUID()
	r.mu.Unlock()
	if r.scope.namesMayChange {
		return
	}
	switch {
	case ev == watch.Deleted:
		r.problem("%s DELETED (uid %s)", key, obj.GetUID())
	case ev == watch.Added && seen && previous != obj.GetUID():
		r.problem("%s re-created: uid %s, was %s", key, obj.GetUID(), previous)
	}
}

// onNames compares the names an object serves with those it served before: losing one is an
// outage for that name.
func (r *outageRecorder) onNames(ev watch.EventType, obj client.Object, what string, names []string) {
	key := objectKey(obj)
	r.mu.Lock()
	before := r.names[key]
	if ev == watch.Deleted {
		delete(r.names, key)
	} else {
		r.names[key] = names
	}
	r.mu.Unlock()
	if ev == watch.Modified && !r.scope.namesMayChange {
		var dropped []string
		for _, n := range before {
			if !slices.Contains(names, n) {
				dropped = append(dropped, n)
			}
		}
		switch {
		case len(names) == 0 && len(before) > 0:
			r.problem("%s MODIFIED to have no %s at all (had %v)", key, what, before)
		case len(dropped) > 0:
			r.problem("%s MODIFIED dropping %s %v", key, what, dropped)
		}
	}
	for _, n := range names {
		// An Istio host may be namespace-scoped (namespace/hostname): the hostname is what counts.
		hostname := n[strings.LastIndex(n, "/")+1:]
		if ev != watch.Deleted && slices.Contains(r.scope.unpublishable, hostname) {
			r.problem("%s %s lists the unpublishable name %s", key, ev, n)
		}
	}
}

func (r *outageRecorder) onEndpoint(ev watch.EventType, obj client.Object) {
	r.onIdentity(ev, obj)
	var names []string
	for _, e := range obj.(*externaldnsv1alpha1.DNSEndpoint).Spec.Endpoints {
		names = append(names, e.DNSName)
	}
	r.onNames(ev, obj, "DNS names", names)
}

func (r *outageRecorder) onIstioGateway(ev watch.EventType, obj client.Object) {
	r.onIdentity(ev, obj)
	r.onNames(ev, obj, "hosts", istioHosts(obj.(*istionetworkingv1.Gateway)))
}

func istioHosts(ig *istionetworkingv1.Gateway) []string {
	var hosts []string
	for _, s := range ig.Spec.Servers {
		hosts = append(hosts, s.Hosts...)
	}
	return hosts
}

func (r *outageRecorder) onRoute(ev watch.EventType, obj client.Object) {
	route := obj.(*routingv1alpha1.ServiceRoute)
	key := objectKey(obj)
	r.mu.Lock()
	_, existed := r.initial[key]
	r.mu.Unlock()
	if !existed {
		return // a route created during the recording has no Ready state to keep yet
	}
	if ev == watch.Deleted {
		r.problem("%s DELETED", key)
		return
	}
	ready := meta.FindStatusCondition(route.Status.Conditions, routingv1alpha1.ConditionReady)
	switch {
	case ready == nil:
		r.problem("%s %s without a Ready condition", key, ev)
	case ready.Status != metav1.ConditionTrue:
		r.problem("%s %s with Ready=%s %s: %s", key, ev, ready.Status, ready.Reason, ready.Message)
	}
}

// stop ends the recording once the system has converged again and fails the test with every
// outage seen. It also checks, independently of the events, that every DNSEndpoint and Istio
// Gateway that existed at the start still exists with the same UID.
func (r *outageRecorder) stop(transition string) {
	r.t.Helper()
	if r.stopped {
		return
	}
	r.stopped = true
	// A change the operator made just before convergence was detected is delivered within
	// milliseconds; leave it the time to arrive.
	time.Sleep(time.Second)
	r.cancel()
	r.wg.Wait()
	for key, uid := range r.initial {
		if strings.HasPrefix(key, "ServiceRoute ") || r.scope.namesMayChange {
			continue
		}
		ns, name, _ := strings.Cut(key[strings.LastIndex(key, " ")+1:], "/")
		var obj client.Object = &externaldnsv1alpha1.DNSEndpoint{}
		if strings.HasPrefix(key, "Istio Gateway ") {
			obj = &istionetworkingv1.Gateway{}
		}
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			r.problem("at the end %s is gone (uid %s)", key, uid)
		case err != nil:
			r.problem("at the end reading %s: %v", key, err)
		case obj.GetUID() != uid:
			r.problem("at the end %s has uid %s, had %s at the start", key, obj.GetUID(), uid)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.problems) > 0 {
		r.t.Errorf("%s: %d outage event(s) seen while watching (times from the start of the watch):\n  %s",
			transition, len(r.problems), strings.Join(r.problems, "\n  "))
	}
}

// keepSingletons restores the ClusterIdentity and DNSConfiguration singletons as they were when
// the test started (deleting them if they did not exist), so that a test that deletes or breaks
// them leaves the shared control plane as it found it.
func keepSingletons(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	ci := &clusterv1alpha1.ClusterIdentity{}
	ciErr := env.Client.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.ClusterIdentityName}, ci)
	require.NoError(t, client.IgnoreNotFound(ciErr))
	cfg := &clusterv1alpha1.DNSConfiguration{}
	cfgErr := env.Client.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg)
	require.NoError(t, client.IgnoreNotFound(cfgErr))
	t.Cleanup(func() {
		identity := &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName}}
		restoreSingleton(t, identity, ciErr == nil, func() { identity.Spec = ci.Spec })
		dnsConfig := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName}}
		restoreSingleton(t, dnsConfig, cfgErr == nil, func() { dnsConfig.Spec = cfg.Spec })
	})
}

func restoreSingleton(t testing.TB, obj client.Object, existed bool, setSpec func()) {
	ctx := context.Background()
	var err error
	if existed {
		_, err = createOrUpdate(ctx, obj, func() error { setSpec(); return nil })
	} else {
		err = client.IgnoreNotFound(env.Client.Delete(ctx, obj))
	}
	if err != nil {
		t.Errorf("restoring %s: %v", obj.GetName(), err)
	}
}

// useControlPlane makes the package's helpers (fixture, waits) act on e instead of the shared
// control plane until the test ends. Register it before anything that cleans up on e, so that
// those cleanups still see e.
func useControlPlane(t testing.TB, e *testenv.Env) {
	shared := env
	env = e
	t.Cleanup(func() { env = shared })
}

// startControlPlane starts a control plane of the test's own (for what must not touch the shared
// one, like missing CRDs), stopped when the test ends.
func startControlPlane(t testing.TB, opts testenv.Options) *testenv.Env {
	t.Helper()
	e, err := testenv.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Logf("stopping the test's own control plane: %v", err)
		}
	})
	return e
}

// runningOperator is a manager started like startOperator, whose exit the test can observe: an
// operator that gives up (controller-runtime stops the manager when a watch does not sync within
// its cache-sync timeout) must be seen as such, not only at the end of the test.
type runningOperator struct {
	exited chan struct{}
	err    error
}

// stillRunning returns "" while the manager runs, else how it ended.
func (o *runningOperator) stillRunning() string {
	select {
	case <-o.exited:
		return fmt.Sprintf("the operator's manager exited: %v", o.err)
	default:
		return ""
	}
}

// startObservedOperator builds the manager the way startOperatorWith does (the shipped cache
// options and controllers.Setup) but does not require every informer to sync before returning,
// since the point is to see what the operator does when some cannot. Its controllers give up
// waiting for their watches after observedCacheSyncTimeout instead of controller-runtime's default
// two minutes: a controller watching a kind the API server does not serve would stop the manager
// the same way, only sooner, so the tests see it without waiting two minutes each.
func startObservedOperator(t testing.TB, cfg *rest.Config) *runningOperator {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Cache:                  controllers.CacheOptions(),
		MapperProvider:         controllers.MapperProvider,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip, CacheSyncTimeout: observedCacheSyncTimeout},
	})
	require.NoError(t, err, "the operator could not build its manager")
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, controllers.Setup(ctx, mgr, controllers.Options{ConflictRetryInterval: time.Second}), "the operator could not set up its controllers")
	o := &runningOperator{exited: make(chan struct{})}
	go func() {
		o.err = mgr.Start(ctx)
		close(o.exited)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-o.exited:
		case <-time.After(waitTimeout):
			t.Error("the operator did not stop within the wait timeout")
		}
	})
	return o
}
