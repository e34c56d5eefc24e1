package integration

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/service-router/service-router-operator/controllers"
	"github.com/service-router/service-router-operator/internal/guard"
	"github.com/service-router/service-router-operator/internal/verify"
)

// operatorOptions vary the manager startOperatorWith runs.
type operatorOptions struct {
	// namespaces, when set, restrict the cache (and so the controllers and the state metrics) to
	// these namespaces; cluster-scoped objects are always cached. Objects other tests left in
	// the shared control plane then stay out of the metric values.
	namespaces []string
	// leaderElection elects a leader on a Lease in leaseNamespace, as in a cluster.
	leaderElection bool
	leaseNamespace string
	// metrics serves /metrics; by default there is no metrics endpoint.
	metrics *metricsserver.Options
	// noControllers starts only the manager (for the metrics endpoint alone).
	noControllers bool
	// deletionGuard enables the mass-deletion guard (off by default in tests, so that deletions
	// are immediate).
	deletionGuard guard.Settings
	// istioGatewayMaxBytes is the byte budget of the Istio Gateways (0: the default).
	istioGatewayMaxBytes int
	// verification tunes how often zones are checked (default verify.DefaultSettings).
	verification verify.Settings
}

// startOperatorWith is startOperator with options.
func startOperatorWith(t testing.TB, cfg *rest.Config, o operatorOptions) (stop func()) {
	t.Helper()
	skip := true // every test starts its own manager in this process; controller names repeat
	cacheOpts := controllers.CacheOptions()
	if len(o.namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	metricsOpts := metricsserver.Options{BindAddress: "0"}
	if o.metrics != nil {
		metricsOpts = *o.metrics
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        env.Scheme,
		Cache:                         cacheOpts,
		MapperProvider:                controllers.MapperProvider,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        "0",
		LeaderElection:                o.leaderElection,
		LeaderElectionID:              "service-router-operator-test",
		LeaderElectionNamespace:       o.leaseNamespace,
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &skip},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	if !o.noControllers {
		require.NoError(t, controllers.Setup(ctx, mgr, controllers.Options{ConflictRetryInterval: time.Second, DeletionGuard: o.deletionGuard,
			IstioGatewayMaxBytes: o.istioGatewayMaxBytes, Verification: o.verification}))
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	if !o.noControllers {
		require.True(t, mgr.GetCache().WaitForCacheSync(ctx), "the operator's caches did not sync")
	}
	if o.leaderElection {
		select {
		case <-mgr.Elected():
		case <-time.After(waitTimeout):
			t.Fatal("the operator was not elected leader")
		}
	}
	return stop
}

// freeAddress returns a 127.0.0.1 address with a port nothing listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// gather reads controller-runtime's registry, which /metrics serves.
func gather(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	return families
}

// seriesValues flattens the families whose name starts with prefix into
// `name{label="value",...}` → value, labels in the order the family has them.
func seriesValues(families []*dto.MetricFamily, prefix string) map[string]float64 {
	out := map[string]float64{}
	for _, mf := range families {
		if !strings.HasPrefix(mf.GetName(), prefix) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			var v float64
			switch {
			case m.GetGauge() != nil:
				v = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				v = m.GetCounter().GetValue()
			}
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// exportedSeriesNames lists the series names a scrape of families contains: a histogram
// family is exported as its _bucket, _sum and _count series, a summary as itself, _sum and _count.
func exportedSeriesNames(families []*dto.MetricFamily) map[string]bool {
	names := map[string]bool{}
	for _, mf := range families {
		name := mf.GetName()
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			names[name+"_bucket"], names[name+"_sum"], names[name+"_count"] = true, true, true
		case dto.MetricType_SUMMARY:
			names[name], names[name+"_sum"], names[name+"_count"] = true, true, true
		default:
			names[name] = true
		}
	}
	return names
}

// diffValues describes how got differs from want ("" when equal).
func diffValues(got, want map[string]float64) string {
	var problems []string
	for k, w := range want {
		if g, ok := got[k]; !ok {
			problems = append(problems, fmt.Sprintf("missing %s (want %g)", k, w))
		} else if g != w {
			problems = append(problems, fmt.Sprintf("%s = %g, want %g", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			problems = append(problems, fmt.Sprintf("unexpected %s = %g", k, g))
		}
	}
	sort.Strings(problems)
	return strings.Join(problems, "; ")
}

// only keeps the entries of values whose name is one of names.
func only(values map[string]float64, names ...string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range values {
		if slices.Contains(names, k[:strings.Index(k, "{")]) {
			out[k] = v
		}
	}
	return out
}

func namespaceObject(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
