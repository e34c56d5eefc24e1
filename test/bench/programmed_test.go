package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// BenchmarkTimeToProgrammed measures how long until a new route's hostname is programmed into the
// ingress gateway, the step after the API server: istiod (a process, out of the cluster) turns
// the Istio Gateway the operator writes into listeners, and an xDS client posing as the gateway
// pod sees each hostname appear among the SNI names of the HTTPS (443) filter chain. Per route it
// times, from the route's creation, (a) Ready=True (ReconciliationSucceeded, the state the scale
// benchmark counts as published; the world has no DNS zones to verify) and (b) its hostname in
// istiod's push. The floor, in a world of its own: the same routes created with no operator
// while a bare client rewrites the Istio Gateway with every host created so far, as often as
// istiod's debounce lets each write be pushed (floorWriteEvery), timed per route the same way.
//
// SCALE_ROUTES (default 3000) lists the sizes, SCALE_NAMESPACES (10) the application namespaces,
// SCALE_CONTROL_PLANE_CPUS pins the API server and etcd (istiod runs beside the operator).
// istiod is bin/istio/pilot-discovery (`make istio`) or $ISTIOD_BINARY.
func BenchmarkTimeToProgrammed(b *testing.B) {
	if _, err := framework.IstiodBinary(); err != nil {
		b.Fatalf("istiod is needed (run make istio): %v", err)
	}
	for _, n := range framework.EnvInts("SCALE_ROUTES", 3000) {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			var namespaces []string
			for i := range envInt("SCALE_NAMESPACES", 10) {
				namespaces = append(namespaces, fmt.Sprintf("app-%02d", i))
			}
			for range b.N {
				ctx, cancel := context.WithCancel(context.Background())
				floor := runProgrammed(b, ctx, n, namespaces, "")
				op := runProgrammed(b, ctx, n, namespaces, buildManager(b))
				cancel()
				for unit, v := range printProgrammed(os.Stdout, n, floor, op) {
					b.ReportMetric(v, unit)
				}
			}
		})
	}
}

// programmedRun is one world's timings, per route (index i: routeName(i)).
type programmedRun struct {
	// ready is the time from creation to Ready=True (operator only).
	ready []time.Duration
	// programmed is the time from creation to the hostname in istiod's push to the gateway.
	programmed []time.Duration
	// pushes is how many LDS/RDS responses istiod sent the gateway while the routes came in.
	pushes int
	load   string
}

// runProgrammed builds one world (a control plane, istiod, the xDS client as the bench's ingress
// gateway pod) and times n routes in it: the operator's (binary) or, with no binary, the floor's.
func runProgrammed(b *testing.B, ctx context.Context, n int, namespaces []string, binary string) programmedRun {
	cl, w, stopWorld := startWorld(b, ctx, n, namespaces)
	defer stopWorld()
	// The Gateway's credential exists, as in a cluster.
	must(b, w.c.Create(ctx, tlsSecret(gatewayNS, "bench-cert")))

	hostIndex := make(map[string]int, n)
	for i := range n {
		hostIndex[w.hostname(newRoute(namespaces[i%len(namespaces)], i))] = i
	}
	var (
		mu           sync.Mutex
		created      = make([]time.Time, n)
		programmedAt = make([]time.Time, n)
		readyAt      = make([]time.Time, n)
		programmed   int
		lastPushes   int
	)
	// Each push is read as it arrives (the client's goroutine): a hostname's time is the arrival
	// of the first push that has it on 443.
	onSnapshot := func(s framework.XDSSnapshot) {
		names := s.ServerNames(443)
		mu.Lock()
		defer mu.Unlock()
		lastPushes = s.Pushes
		for name := range names {
			if i, ok := hostIndex[name]; ok && programmedAt[i].IsZero() {
				programmedAt[i] = s.At
				programmed++
			}
		}
	}
	istiod, xds := startIstiod(b, ctx, cl, onSnapshot)
	defer func() {
		must(b, xds.Close())
		must(b, istiod.Stop())
	}()
	if _, err := xds.Wait(ctx, time.Minute, func(s framework.XDSSnapshot) bool { return s.Pushes > 0 }); err != nil {
		b.Fatalf("istiod did not answer the gateway's first request: %v", err)
	}

	var op *operator
	ready := 0
	if binary != "" {
		// Ready is recorded by the benchmark's informer when the update arrives, not by polling.
		inf, err := w.cache.GetInformer(ctx, &routingv1alpha1.ServiceRoute{})
		must(b, err)
		index := make(map[string]int, n)
		for i := range n {
			index[namespaces[i%len(namespaces)]+"/"+routeName(i)] = i
		}
		markReady := func(o any) {
			r, ok := o.(*routingv1alpha1.ServiceRoute)
			if !ok {
				return
			}
			c := meta.FindStatusCondition(r.Status.Conditions, "Ready")
			if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != r.Generation {
				return
			}
			now := time.Now()
			mu.Lock()
			if i, ok := index[r.Namespace+"/"+r.Name]; ok && readyAt[i].IsZero() {
				readyAt[i] = now
				ready++
			}
			mu.Unlock()
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: markReady, UpdateFunc: func(_, o any) { markReady(o) }})
		must(b, err)
		op = startOperator(b, ctx, cl, binary)
		op.routes = n
		w.waitFor("the operator to settle on the empty world", 2*time.Minute, func() string { return op.idle(b) })
	}

	run := programmedRun{load: loadAverage()}
	mu.Lock()
	pushesBefore := lastPushes
	mu.Unlock()
	var floorDone chan struct{}
	var floorErr error        // set under mu
	var createdHosts []string // the floor's: hostnames whose route exists, in creation order
	if binary == "" {
		floorDone = make(chan struct{})
		go func() {
			defer close(floorDone)
			err := w.floorIstioGateway(n, func() []string {
				mu.Lock()
				defer mu.Unlock()
				return createdHosts
			})
			mu.Lock()
			floorErr = err
			mu.Unlock()
		}()
	}
	must(b, parallel(clients, n, func(i int) error {
		r := newRoute(namespaces[i%len(namespaces)], i)
		mu.Lock()
		created[i] = time.Now()
		mu.Unlock()
		if err := w.c.Create(w.ctx, r); err != nil {
			return err
		}
		if binary == "" {
			mu.Lock()
			createdHosts = append(createdHosts, w.hostname(r))
			mu.Unlock()
		}
		return nil
	}))
	w.waitFor(fmt.Sprintf("%d hostnames to be programmed", n), 30*time.Minute, func() string {
		mu.Lock()
		defer mu.Unlock()
		must(b, floorErr)
		if programmed < n || (binary != "" && ready < n) {
			return fmt.Sprintf("%d of %d programmed, %d ready, after %d pushes", programmed, n, ready, lastPushes-pushesBefore)
		}
		return ""
	})
	if floorDone != nil {
		<-floorDone
	}
	mu.Lock()
	defer mu.Unlock()
	run.pushes = lastPushes - pushesBefore
	for i := range n {
		run.programmed = append(run.programmed, programmedAt[i].Sub(created[i]))
		if binary != "" {
			run.ready = append(run.ready, readyAt[i].Sub(created[i]))
		}
	}
	if op != nil {
		must(b, op.Stop())
	}
	return run
}

// floorWriteEvery paces the floor's writer. istiod pushes a change once no configuration changed
// for PILOT_DEBOUNCE_AFTER (100 ms), or after PILOT_DEBOUNCE_MAX (10 s) of changes: a writer
// rewriting the Gateway as fast as its writes return holds every push until it stops (measured at
// 3,000 routes: 173 writes became one push 5 s after the first). Writing every 200 ms leaves istiod
// a quiet 100 ms after each write, so each write is pushed: the fastest programming a writer gets.
const floorWriteEvery = 200 * time.Millisecond

// floorIstioGateway is the floor's writer: it writes the Istio Gateway the operator would write
// for the hosts created so far, every floorWriteEvery while new hosts exist, until it has written
// all n. One writer, as the operator has: its writes never conflict.
func (w *world) floorIstioGateway(n int, createdHosts func() []string) error {
	gw := &routingv1alpha1.Gateway{}
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: gatewayNS, Name: gatewayName}, gw); err != nil {
		return err
	}
	var ig *istionetworkingv1.Gateway
	written := 0 // hosts in the last write: a Gateway with no host is not written
	for written < n {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		hosts := createdHosts()
		if len(hosts) == written {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		want := desired.IstioGateway(gw, slices.Sorted(slices.Values(hosts)))
		var err error
		if ig == nil {
			ig = want
			err = w.c.Create(w.ctx, ig)
		} else {
			ig.Spec.Servers = want.Spec.Servers
			err = w.c.Update(w.ctx, ig)
		}
		if err != nil {
			return fmt.Errorf("the floor writing the Istio Gateway with %d hosts: %w", len(hosts), err)
		}
		written = len(hosts)
		time.Sleep(floorWriteEvery)
	}
	return nil
}

// printProgrammed prints the time-to-programmed table and returns the figures to report.
func printProgrammed(out io.Writer, n int, floor, op programmedRun) map[string]float64 {
	p := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	type q struct{ p50, p95, max time.Duration }
	quantiles := func(ds []time.Duration) q { return q{percentile(ds, 0.5), percentile(ds, 0.95), percentile(ds, 1)} }
	row := func(what string, v q) {
		p("| %s | %.2f s | %.2f s | %.2f s |", what, v.p50.Seconds(), v.p95.Seconds(), v.max.Seconds())
	}
	ratio := func(what string, a, b q) {
		p("| %s | %.2f | %.2f | %.2f |", what, a.p50.Seconds()/b.p50.Seconds(), a.p95.Seconds()/b.p95.Seconds(), a.max.Seconds()/b.max.Seconds())
	}
	f, ready, prog := quantiles(floor.programmed), quantiles(op.ready), quantiles(op.programmed)
	p("")
	p("### Time to programmed: %d routes, istiod's pushes to the ingress gateway (load average at start: floor %s, operator %s)", n, floor.load, op.load)
	p("")
	p("| figure | p50 | p95 | max |")
	p("| --- | --- | --- | --- |")
	row(fmt.Sprintf("floor: a bare client rewrites the Istio Gateway with every host created so far, every %v; route created until its host is in istiod's push (%d pushes)", floorWriteEvery, floor.pushes), f)
	row("operator: route created until Ready=True", ready)
	row(fmt.Sprintf("operator: route created until its host is in istiod's push (%d pushes)", op.pushes), prog)
	ratio("operator programmed / floor", prog, f)
	ratio("operator programmed / operator Ready", prog, ready)
	return map[string]float64{
		"programmed-p50/floor": prog.p50.Seconds() / f.p50.Seconds(), "programmed-p95/floor": prog.p95.Seconds() / f.p95.Seconds(),
		"programmed-p50/ready": prog.p50.Seconds() / ready.p50.Seconds(), "programmed-p95/ready": prog.p95.Seconds() / ready.p95.Seconds(),
		"programmed-p50-s": prog.p50.Seconds(), "programmed-p95-s": prog.p95.Seconds(), "ready-p50-s": ready.p50.Seconds(),
		"ready-p95-s": ready.p95.Seconds(), "floor-p50-s": f.p50.Seconds(), "floor-p95-s": f.p95.Seconds(),
	}
}
