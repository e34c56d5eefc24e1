package integration

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// BenchmarkOperator_ConvergeRoutes measures how fast the operator publishes many ServiceRoutes on
// one Gateway — RegionBound over two ExternalDNS controllers, so two DNSEndpoints per route and
// every host on one Istio Gateway — from the first create until every route is Ready and the
// Istio Gateway lists every host. SCALE_ROUTES sets the number of routes (default 1000).
// Run with `make bench`.
func BenchmarkOperator_ConvergeRoutes(b *testing.B) {
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("SCALE_ROUTES")); err == nil && v > 0 {
		n = v
	}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newFixture(b)
		f.setIdentity(weuIdentity())
		f.setControllers("weu", "neu")
		stop := startOperator(b, env.Config)
		gw := f.gateway("default-gateway", "internal")
		f.ingressService(lbIP...)
		f.policy(weuBound)
		f.waitPolicy(routingv1alpha1.PhaseActive, routingv1alpha1.ReasonPolicyActive)
		b.StartTimer()

		start := time.Now()
		createRoutes(b, f, gw.Name, n)
		created := time.Since(start)
		waitFor(b, fmt.Sprintf("%d Ready routes and Istio hosts", n), func() string {
			list := &routingv1alpha1.ServiceRouteList{}
			require.NoError(b, env.Client.List(f.ctx, list, client.InNamespace(f.ns)))
			ready := 0
			for i := range list.Items {
				if meta.IsStatusConditionTrue(list.Items[i].Status.Conditions, "Ready") {
					ready++
				}
			}
			g := &routingv1alpha1.Gateway{}
			require.NoError(b, env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), g))
			if ready < n || int(g.Status.Hosts) < n {
				return fmt.Sprintf("%d/%d routes Ready, %d hosts on the Istio Gateway", ready, n, g.Status.Hosts)
			}
			return ""
		}, 10*time.Minute)
		converged := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(n)/converged.Seconds(), "routes/s")
		b.ReportMetric(created.Seconds(), "s-to-create")
		b.ReportMetric(converged.Seconds(), "s-to-converge")
		stop()
	}
}

// createRoutes creates n ServiceRoutes with 8 concurrent clients, as a GitOps sync would.
func createRoutes(b *testing.B, f *fixture, gateway string, n int) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := &routingv1alpha1.ServiceRoute{}
				r.Name, r.Namespace = fmt.Sprintf("route-%05d", i), f.ns
				r.Spec = routingv1alpha1.ServiceRouteSpec{ServiceName: fmt.Sprintf("svc%05d", i), GatewayName: gateway,
					GatewayNamespace: f.gatewayNS, Environment: "dev", Application: f.app}
				if err := env.Client.Create(f.ctx, r); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("creating routes: %v", err)
	}
}
