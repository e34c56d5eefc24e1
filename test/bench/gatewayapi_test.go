package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// BenchmarkGatewayAPI runs the operator with the Gateway API backend (the benchmark's Gateway with
// backend GatewayAPI, HTTPS only: one listener per hostname) on a control plane with the Gateway
// API's standard-channel CRDs, creates N routes in the world's namespaces, and reports what the
// backend produces: the objects, their listeners against the 64-listener cap, the largest object
// as the API server stores it, and the writes per route (cold, then for one route added to the
// converged cluster). GATEWAYAPI_ROUTES lists the sizes (default "3000,10000").
func BenchmarkGatewayAPI(b *testing.B) {
	for _, n := range framework.EnvInts("GATEWAYAPI_ROUTES", 3000, 10000) {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			for range b.N {
				r := runGatewayAPI(b, n, envInt("SCALE_NAMESPACES", 10))
				r.print(os.Stdout)
				for unit, v := range r.metrics() {
					b.ReportMetric(v, unit)
				}
			}
		})
	}
}

type gatewayAPIReport struct {
	routes, namespaces int
	listenerSets       int
	gatewayListeners   int
	maxListeners       int
	largestName        string
	largestBytes       int
	cold               time.Duration
	coldWrites         requests
	oneMoreWrites      requests
	restartWrites      float64
}

func (r *gatewayAPIReport) apiWrites(w requests) float64 {
	return w.total(func(k requestKey) bool { return strings.HasSuffix(k.Resource, "."+gwv1.GroupName) })
}

// operatorWrites counts the operator's writes: every write but the benchmark's own route creates
// (and leases).
func operatorWrites(w requests) float64 {
	return w.total(func(k requestKey) bool { return notLease(k) && k.Resource != "serviceroutes.routing.router.io" })
}

func (r *gatewayAPIReport) metrics() map[string]float64 {
	return map[string]float64{
		"objects":                    float64(r.listenerSets + 1),
		"max-listeners":              float64(r.maxListeners),
		"largest-bytes":              float64(r.largestBytes),
		"gatewayapi-writes/route":    r.apiWrites(r.coldWrites) / float64(r.routes),
		"operator-writes/route":      operatorWrites(r.coldWrites) / float64(r.routes),
		"gatewayapi-writes-one-more": r.apiWrites(r.oneMoreWrites),
		"restart-writes":             r.restartWrites,
	}
}

func (r *gatewayAPIReport) print(out io.Writer) {
	fmt.Fprintf(out, "\nGateway API backend, %d routes in %d namespaces (HTTPS only: one listener per hostname; cap %d per Gateway and per ListenerSet):\n",
		r.routes, r.namespaces, desired.MaxListeners)
	fmt.Fprintln(out, "| figure | value |")
	fmt.Fprintln(out, "| --- | --- |")
	fmt.Fprintf(out, "| objects (Gateway API Gateway + ListenerSets) | 1 + %d |\n", r.listenerSets)
	fmt.Fprintf(out, "| listeners: Gateway / largest ListenerSet | %d / %d |\n", r.gatewayListeners, r.maxListeners)
	fmt.Fprintf(out, "| largest object as stored (JSON) | %s, %d bytes |\n", r.largestName, r.largestBytes)
	fmt.Fprintf(out, "| cold convergence | %.1f s |\n", r.cold.Seconds())
	fmt.Fprintf(out, "| Gateway API writes, cold (per route) | %.0f (%.3f) |\n", r.apiWrites(r.coldWrites), r.apiWrites(r.coldWrites)/float64(r.routes))
	fmt.Fprintf(out, "| all the operator's writes, cold, events included (per route) | %.0f (%.2f) |\n", operatorWrites(r.coldWrites), operatorWrites(r.coldWrites)/float64(r.routes))
	fmt.Fprintf(out, "| Gateway API writes for one more route on the converged cluster | %.0f |\n", r.apiWrites(r.oneMoreWrites))
	fmt.Fprintf(out, "| writes of a restarted operator on the converged cluster | %.0f |\n", r.restartWrites)
	by := r.coldWrites.byResource()
	for _, res := range slices.Sorted(func(yield func(string) bool) {
		for k := range by {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(out, "| cold writes of %s | %.0f |\n", res, by[res])
	}
}

func runGatewayAPI(b *testing.B, n, nsCount int) *gatewayAPIReport {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	binary := buildManager(b)
	var namespaces []string
	for i := range nsCount {
		namespaces = append(namespaces, fmt.Sprintf("app-%02d", i))
	}
	rep := &gatewayAPIReport{routes: n, namespaces: nsCount}
	cl, err := framework.StartCluster(ctx, b, framework.ClusterOptions{Name: "bench-gatewayapi", GatewayAPICRDs: true})
	must(b, err)
	pinControlPlane(b, os.Getenv("SCALE_CONTROL_PLANE_CPUS"))
	worldCtx, stopWorld := context.WithCancel(ctx)
	defer stopWorld()
	w := newWorld(b, worldCtx, cl.Config)
	w.pollEvery = min(time.Second, max(100*time.Millisecond, time.Duration(n)*time.Second/30000))
	_, err = w.cache.GetInformer(ctx, &gwv1.ListenerSet{})
	must(b, err)
	w.setup(namespaces)
	gw := &routingv1alpha1.Gateway{}
	must(b, w.c.Get(ctx, client.ObjectKey{Namespace: gatewayNS, Name: gatewayName}, gw))
	gw.Spec.Backend = routingv1alpha1.BackendGatewayAPI
	must(b, w.c.Update(ctx, gw))

	op := startOperator(b, ctx, cl, binary)
	op.routes = n
	w.waitFor("the Gateway API Gateway", 2*time.Minute, func() string {
		return errText(w.c.Get(ctx, client.ObjectKey{Namespace: gatewayNS, Name: gatewayName}, &gwv1.Gateway{}))
	})
	m0 := w.quiet()
	start := time.Now()
	w.createRoutes(namespaces, n, clients)
	w.waitFor(fmt.Sprintf("%d routes published on %d listeners", n, n), 30*time.Minute, func() string { return w.gatewayAPIConverged(namespaces, n) })
	rep.cold = time.Since(start)
	m1 := w.quiet()
	rep.coldWrites = m1.since(m0)

	// One more route on the converged cluster: only its ListenerSet is written.
	must(b, w.c.Create(ctx, newRoute(namespaces[0], n)))
	w.waitFor("one more route", 5*time.Minute, func() string { return w.gatewayAPIConverged(namespaces, n+1) })
	m2 := w.quiet()
	rep.oneMoreWrites = m2.since(m1)
	w.measureGatewayAPIObjects(rep)
	must(b, op.Stop())

	// A restarted operator on the converged cluster writes nothing.
	op = startOperator(b, ctx, cl, binary)
	op.routes = n + 1
	w.waitFor("the restarted operator to reconcile everything", 30*time.Minute, func() string { return op.reconciledAll(b, n+1) })
	rep.restartWrites = w.quiet().since(m2).total(notLease)
	must(b, op.Stop())
	if rep.restartWrites > 0 {
		b.Errorf("the restarted operator wrote %.0f times on a converged cluster; it must write nothing", rep.restartWrites)
	}
	if rep.maxListeners > desired.MaxListeners || rep.gatewayListeners > desired.MaxListeners {
		b.Errorf("an object has more than %d listeners", desired.MaxListeners)
	}
	return rep
}

func errText(err error) string {
	if err != nil {
		return err.Error()
	}
	return ""
}

// gatewayAPIConverged says what is still missing ("" once every route is published and the
// ListenerSets hold exactly one listener per route).
func (w *world) gatewayAPIConverged(namespaces []string, n int) string {
	c := w.observe(namespaces)
	sets, err := cacheview.All(w.ctx, w.cache, func() *gwv1.ListenerSet { return &gwv1.ListenerSet{} },
		func() client.ObjectList { return &gwv1.ListenerSetList{} }, gatewayNS)
	must(w.t, err)
	listeners := 0
	for _, s := range sets {
		listeners += len(s.Spec.Listeners)
	}
	if c.routes != n || c.published != n || c.endpointsCurrent != n || int(c.gatewayHosts) != n || listeners != n {
		return fmt.Sprintf("%d routes, %d published, %d current DNSEndpoints, Gateway status %d hosts, %d listeners in %d ListenerSets",
			c.routes, c.published, c.endpointsCurrent, c.gatewayHosts, listeners, len(sets))
	}
	return ""
}

// measureGatewayAPIObjects counts the generated objects and their listeners, and reads each as the
// API server returns it (JSON, managed fields included) for the largest.
func (w *world) measureGatewayAPIObjects(rep *gatewayAPIReport) {
	sets := &gwv1.ListenerSetList{}
	must(w.t, w.c.List(w.ctx, sets, client.InNamespace(gatewayNS)))
	rep.listenerSets = len(sets.Items)
	g := &gwv1.Gateway{}
	must(w.t, w.c.Get(w.ctx, client.ObjectKey{Namespace: gatewayNS, Name: gatewayName}, g))
	rep.gatewayListeners = len(g.Spec.Listeners)
	cs, err := kubernetes.NewForConfig(w.cfg)
	must(w.t, err)
	size := func(resource, name string) int {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/apis/"+gwv1.GroupName+"/v1/namespaces", gatewayNS, resource, name).DoRaw(w.ctx)
		must(w.t, err)
		return len(body)
	}
	rep.largestName, rep.largestBytes = "Gateway "+g.Name, size("gateways", g.Name)
	for _, s := range sets.Items {
		rep.maxListeners = max(rep.maxListeners, len(s.Spec.Listeners))
		if b := size("listenersets", s.Name); b > rep.largestBytes {
			rep.largestName, rep.largestBytes = "ListenerSet "+s.Name, b
		}
	}
}
