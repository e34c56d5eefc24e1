package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/ownwrite"
	"github.com/service-router/service-router-operator/internal/policy"
	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
)

// The benchmark's world: one cluster identity in region weu, two ExternalDNS controllers (weu,
// neu), a DNSPolicy in mode Active in every application namespace (so each route has exactly one
// DNSEndpoint, the weu one), one Gateway with its ingress Service, and the routes.
const (
	gatewayNS   = "istio-system"
	gatewayName = "bench-gateway"
	ingressName = "bench-ingress"
	application = "bench"
	environment = "dev"
	clusterName = "aks01"
	region      = "weu"
	postfix     = "internal"
)

var weuController = policy.Controller{Name: "external-dns-weu", Region: region}

// world is the benchmark's view of the cluster: an admin client without client-side throttling
// (the floor and the route creators must not be slowed by their own client) and an informer cache
// to observe convergence without loading the API server with polling lists.
type world struct {
	t   testing.TB
	ctx context.Context
	cfg *rest.Config
	c   client.Client
	// writer sends the floor's writes of DNSEndpoints and statuses as the operator sends its own
	// (internal/ownwrite: metadata-only answers), so the floor pays no decoding the operator skips.
	writer *ownwrite.Writer
	cache  cache.Cache
	domain string
	// pollEvery is how often waitFor checks: a check scans every route in the benchmark's own
	// process, on the cores the API server and the operator use, so it is spaced out with size.
	pollEvery time.Duration
	// eventsMayTrail: quiet does not wait for Events, which the operator's rate limit (a burst
	// of 100, then 5 a second) lets trail a phase by up to 50 s; the scale check of `make test`
	// counts none of them.
	eventsMayTrail bool
}

func newWorld(t testing.TB, ctx context.Context, admin *rest.Config) *world {
	cfg := rest.CopyConfig(admin)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit: the API server is what is measured
	scheme := operatorscheme.New()
	httpClient, err := rest.HTTPClientFor(cfg)
	must(t, err)
	c, err := client.New(cfg, client.Options{Scheme: scheme, HTTPClient: httpClient})
	must(t, err)
	writer, err := ownwrite.NewWriter(cfg, httpClient, c.RESTMapper(), scheme, "bench-floor")
	must(t, err)
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()})
	must(t, err)
	for _, obj := range []client.Object{&routingv1alpha1.ServiceRoute{}, &routingv1alpha1.Gateway{}, &routingv1alpha1.DNSPolicy{},
		&externaldnsv1alpha1.DNSEndpoint{}, &istionetworkingv1.Gateway{}} {
		_, err := ca.GetInformer(ctx, obj)
		must(t, err)
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		t.Fatal("the benchmark's informer cache did not sync")
	}
	return &world{t: t, ctx: ctx, cfg: cfg, c: c, writer: writer, cache: ca, domain: "example.com"}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (w *world) namespace(name string) {
	must(w.t, w.c.Create(w.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
}

// setup creates the singletons, the Gateway, its ingress Service (with a load balancer address)
// and the application namespaces with their DNSPolicy.
func (w *world) setup(namespaces []string) {
	ci := &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName},
		Spec: clusterv1alpha1.ClusterIdentitySpec{Region: region, Cluster: clusterName, Domain: w.domain, EnvironmentLetter: "d"}}
	must(w.t, w.c.Create(w.ctx, ci))
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName},
		Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
			{Name: "external-dns-weu", Region: "weu"}, {Name: "external-dns-neu", Region: "neu"}}}}
	must(w.t, w.c.Create(w.ctx, cfg))
	w.setupGatewayAndNamespaces(namespaces)
}

// setupGatewayAndNamespaces creates the Gateway, its ingress Service (with a load balancer
// address) and the application namespaces with their DNSPolicy in mode Active.
func (w *world) setupGatewayAndNamespaces(namespaces []string) {
	w.namespace(gatewayNS)
	must(w.t, w.c.Create(w.ctx, &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: gatewayName, Namespace: gatewayNS},
		Spec: routingv1alpha1.GatewaySpec{Controller: ingressName, CredentialName: "bench-cert", TargetPostfix: postfix}}))
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: ingressName, Namespace: gatewayNS, Labels: map[string]string{"istio": ingressName}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
	must(w.t, w.c.Create(w.ctx, svc))
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.10"}}
	must(w.t, w.c.Status().Update(w.ctx, svc))
	for _, ns := range namespaces {
		w.namespace(ns)
		must(w.t, w.c.Create(w.ctx, &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: ns},
			Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}}))
	}
}

// setDomain changes the ClusterIdentity's domain: every hostname and target changes.
func (w *world) setDomain(domain string) {
	ci := &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName}}
	_, err := ctrl.CreateOrUpdate(w.ctx, w.c, ci, func() error { ci.Spec.Domain = domain; return nil })
	must(w.t, err)
	w.domain = domain
}

func routeName(i int) string { return fmt.Sprintf("route-%05d", i) }

func newRoute(ns string, i int) *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{
		ObjectMeta: metav1.ObjectMeta{Name: routeName(i), Namespace: ns},
		Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: fmt.Sprintf("svc%05d", i), GatewayName: gatewayName,
			GatewayNamespace: gatewayNS, Environment: environment, Application: application},
	}
}

func (w *world) hostname(r *routingv1alpha1.ServiceRoute) string {
	return naming.SourceHostname(r.Spec.ServiceName, "d", environment, application, w.domain)
}

func (w *world) target() string { return naming.TargetHostname(clusterName, region, postfix, w.domain) }

// parallel runs work(0..n-1) on workers goroutines and returns the first error.
func parallel(workers, n int, work func(i int) error) error {
	next := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := work(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// createRoutes creates n ServiceRoutes spread over the namespaces with the given parallelism, as a
// GitOps sync would.
func (w *world) createRoutes(namespaces []string, n, workers int) {
	must(w.t, parallel(workers, n, func(i int) error {
		return w.c.Create(w.ctx, newRoute(namespaces[i%len(namespaces)], i))
	}))
}

// floorRoute is what the bare client wrote for one route.
type floorRoute struct {
	route    *routingv1alpha1.ServiceRoute
	endpoint *externaldnsv1alpha1.DNSEndpoint
}

// floorCold does what cold convergence cannot avoid, with nothing else running: create each route,
// its DNSEndpoint and write its status once (the same objects and patch the operator sends).
func (w *world) floorCold(namespaces []string, n, workers int) []floorRoute {
	out := make([]floorRoute, n)
	must(w.t, parallel(workers, n, func(i int) error {
		r := newRoute(namespaces[i%len(namespaces)], i)
		if err := w.c.Create(w.ctx, r); err != nil {
			return err
		}
		ep := desired.RouteEndpoint(r, weuController, w.hostname(r), w.target())
		if err := w.writer.Create(w.ctx, ep); err != nil {
			return err
		}
		if err := w.patchRouteStatus(r, ep); err != nil {
			return err
		}
		out[i] = floorRoute{route: r, endpoint: ep}
		return nil
	}))
	return out
}

// floorFanOut does what a domain change cannot avoid: update each DNSEndpoint and write each
// route's status once.
func (w *world) floorFanOut(routes []floorRoute, workers int) {
	must(w.t, parallel(workers, len(routes), func(i int) error {
		fr := routes[i]
		want := desired.RouteEndpoint(fr.route, weuController, w.hostname(fr.route), w.target())
		fr.endpoint.Spec = want.Spec
		if err := w.writer.Update(w.ctx, fr.endpoint); err != nil {
			return err
		}
		return w.patchRouteStatus(fr.route, fr.endpoint)
	}))
}

func (w *world) patchRouteStatus(r *routingv1alpha1.ServiceRoute, ep *externaldnsv1alpha1.DNSEndpoint) error {
	original := r.DeepCopy()
	hostname, target := w.hostname(r), w.target()
	r.Status.Phase, r.Status.Hostname, r.Status.TargetHostname = routingv1alpha1.PhaseActive, hostname, target
	r.Status.DNSEndpoint = ep.Name
	r.Status.Endpoints = []routingv1alpha1.ManagedEndpoint{{Name: ep.Name, Controller: weuController.Name, Region: weuController.Region}}
	r.Status.ObservedGeneration = r.Generation
	meta.SetStatusCondition(&r.Status.Conditions, metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, ObservedGeneration: r.Generation,
		Reason: routingv1alpha1.ReasonReconciliationSucceeded, Message: fmt.Sprintf("%s → %s published through %s", hostname, target, weuController.Name)})
	// The status a user reads carries the publication state too; the floor writes it as the
	// operator does (without verification settings: one unverified zone), so that both write
	// objects of the same size.
	r.Status.Zones = []routingv1alpha1.ZoneStatus{{Controller: weuController.Name, Region: weuController.Region, State: routingv1alpha1.ZoneUnverified}}
	r.Status.Published = "0/1"
	meta.SetStatusCondition(&r.Status.Conditions, metav1.Condition{Type: routingv1alpha1.ConditionPublished, Status: metav1.ConditionUnknown,
		ObservedGeneration: r.Generation, Reason: routingv1alpha1.ReasonVerificationNotConfigured,
		Message: fmt.Sprintf("not known: no verification settings in DNSConfiguration dns-config for %s (not processed by ExternalDNS yet)", weuController.Name)})
	version, err := w.writer.PatchStatus(w.ctx, r, original.Status, r.Status, original.ResourceVersion)
	r.ResourceVersion = cmp.Or(version, r.ResourceVersion)
	return err
}

// waitFor polls check (from the cache: cheap) until it returns "", failing after timeout with its
// last answer. Benchmarks only: the timeout is generous and only guards against a hang.
func (w *world) waitFor(what string, timeout time.Duration, check func() string) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		last := check()
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("waiting for %s: %s", what, last)
		}
		time.Sleep(cmp.Or(w.pollEvery, 100*time.Millisecond))
	}
}

// convergence is the state of the application routes as the cache sees it.
type convergence struct {
	routes, published, leftOff, settled int
	endpointsCurrent                    int
	gatewayHosts                        int32
	istioHosts                          int
	istioCurrent                        bool
}

func (c convergence) String() string {
	return fmt.Sprintf("%d routes: %d settled (%d published, %d left off by the host limit), %d current DNSEndpoints, Gateway status %d hosts, Istio Gateway %d hosts (current domain: %v)",
		c.routes, c.settled, c.published, c.leftOff, c.endpointsCurrent, c.gatewayHosts, c.istioHosts, c.istioCurrent)
}

// observe reads the convergence state of the routes in namespaces for the current domain. It
// runs every pollEvery during the operator's phases (the floor needs no polling), on the cores
// the API server and the operator use: it reads the cache in place (cacheview), copying nothing,
// so that it costs the system under test next to nothing.
func (w *world) observe(namespaces []string) convergence {
	var c convergence
	suffix := "." + w.domain
	for _, ns := range namespaces {
		routes, err := cacheview.All(w.ctx, w.cache, func() *routingv1alpha1.ServiceRoute { return &routingv1alpha1.ServiceRoute{} },
			func() client.ObjectList { return &routingv1alpha1.ServiceRouteList{} }, ns)
		must(w.t, err)
		eps, err := cacheview.All(w.ctx, w.cache, func() *externaldnsv1alpha1.DNSEndpoint { return &externaldnsv1alpha1.DNSEndpoint{} },
			func() client.ObjectList { return &externaldnsv1alpha1.DNSEndpointList{} }, ns)
		must(w.t, err)
		for _, r := range routes {
			c.routes++
			ready := meta.FindStatusCondition(r.Status.Conditions, "Ready")
			if ready == nil || ready.ObservedGeneration != r.Generation || !strings.HasSuffix(r.Status.Hostname, suffix) {
				continue
			}
			switch ready.Reason {
			case routingv1alpha1.ReasonReconciliationSucceeded:
				if strings.HasSuffix(r.Status.TargetHostname, suffix) {
					c.published++
					c.settled++
				}
			case "GatewayHostLimit":
				c.leftOff++
				c.settled++
			}
		}
		for _, ep := range eps {
			e := ep.Spec.Endpoints
			if len(e) == 1 && strings.HasSuffix(e[0].DNSName, suffix) && len(e[0].Targets) == 1 && strings.HasSuffix(e[0].Targets[0], suffix) {
				c.endpointsCurrent++
			}
		}
	}
	inPlace := cacheview.Reader{Cache: w.cache}
	gw := &routingv1alpha1.Gateway{}
	if err := inPlace.Get(w.ctx, client.ObjectKey{Namespace: gatewayNS, Name: gatewayName}, gw); err == nil {
		c.gatewayHosts = gw.Status.Hosts
	}
	// Thousands of hosts, not copied either (a protobuf message is read where it is, not copied).
	igs, err := cacheview.All(w.ctx, w.cache, func() *istionetworkingv1.Gateway { return &istionetworkingv1.Gateway{} },
		func() client.ObjectList { return &istionetworkingv1.GatewayList{} }, gatewayNS)
	must(w.t, err)
	for _, ig := range igs {
		if ig.Name != gatewayName {
			continue
		}
		c.istioCurrent = true
		for _, s := range ig.Spec.Servers {
			c.istioHosts += len(s.Hosts)
			for _, h := range s.Hosts {
				if !strings.HasSuffix(h, suffix) {
					c.istioCurrent = false
				}
			}
		}
	}
	return c
}

// converged says whether every route has settled for the current domain, every published route's
// DNSEndpoint is current, and the Gateway's status and Istio Gateway list exactly the published
// hosts.
func (c convergence) converged(n int) bool {
	return c.routes == n && c.settled == n && c.endpointsCurrent == c.published &&
		int(c.gatewayHosts) == c.published && c.istioHosts == c.published && c.istioCurrent
}

// istioGatewayBytes is the size of the generated Istio Gateway as the API server returns it
// (JSON, managed fields included): what etcd stores and what its request limit applies to.
func (w *world) istioGatewayBytes() int {
	cs, err := kubernetes.NewForConfig(w.cfg)
	must(w.t, err)
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/apis/networking.istio.io/v1/namespaces", gatewayNS, "gateways", gatewayName).DoRaw(w.ctx)
	if err != nil {
		return 0
	}
	return len(body)
}
