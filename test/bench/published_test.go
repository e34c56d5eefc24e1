package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/cacheview"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/ingress"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/policy"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// publishedZones are the regional zones of the time-to-Published benchmark: the cluster's own
// (weu) and two regions it adopts, so that in mode Active every route publishes into all three.
var publishedZones = []policy.Controller{{Name: "external-dns-weu", Region: "weu"}, {Name: "external-dns-neu", Region: "neu"},
	{Name: "external-dns-frc", Region: "frc"}}

// BenchmarkTimeToPublished measures what users ask: how long until a new route's name resolves in
// every zone, and the operator says so (Published=True). Each zone is a real BIND written by the
// real ExternalDNS (rfc2136, one synchronization a second). The floor is the same DNSEndpoints
// created by a bare client and ExternalDNS alone, timed until every name answers in every zone;
// the operator's run is timed per route from its creation until Published=True, and its names
// are timed in the zones the same way. Zones are watched by transferring them (AXFR) every 200 ms
// with a DNS library: one query per zone sees every name, and asking adds no load worth the name.
// PUBLISHED_ROUTES (default 3000) sets the size; verification runs with its default settings.
func BenchmarkTimeToPublished(b *testing.B) {
	n := envInt("PUBLISHED_ROUTES", 3000)
	namespaces := []string{"app-00", "app-01", "app-02", "app-03", "app-04", "app-05", "app-06", "app-07", "app-08", "app-09"}
	for range b.N {
		ctx, cancel := context.WithCancel(context.Background())
		floor := runPublished(b, ctx, n, namespaces, "", byQueries)
		binary := buildManager(b)
		runs := map[zoneReading]publishedRun{}
		for _, reading := range readings() {
			runs[reading] = runPublished(b, ctx, n, namespaces, binary, reading)
		}
		cancel()
		for unit, v := range printPublished(os.Stdout, n, floor, runs) {
			b.ReportMetric(v, unit)
		}
	}
}

// zoneReading is how the operator's verification reads the zones: one query per name (the
// default) or the whole zone by transfer (verification.transferZone).
type zoneReading string

const (
	byQueries  zoneReading = "queries"
	byTransfer zoneReading = "transfer"
)

// readings are the ways the operator's runs read the zones: both, or those PUBLISHED_READINGS
// names (comma-separated).
func readings() []zoneReading {
	env := os.Getenv("PUBLISHED_READINGS")
	if env == "" {
		return []zoneReading{byQueries, byTransfer}
	}
	var out []zoneReading
	for _, r := range strings.Split(env, ",") {
		out = append(out, zoneReading(strings.TrimSpace(r)))
	}
	return out
}

// publishedRun is one world's timings, per route.
type publishedRun struct {
	// answered is, per route, the time from its creation until its name answered in every zone.
	answered []time.Duration
	// published is, per route, the time from its creation until Published=True (operator only).
	published []time.Duration
	// sli is the operator's own histogram of the time from a change to its publication in a
	// zone (service_router_publish_duration_seconds), as quantiles of its buckets.
	sliP50, sliP95 float64
	load           string
}

// runPublished builds one world (a control plane, three BIND zones, three ExternalDNS) and times
// n routes in it: the operator's (binary) or, with no binary, the floor's DNSEndpoints.
func runPublished(b *testing.B, ctx context.Context, n int, namespaces []string, binary string, reading zoneReading) publishedRun {
	cl, err := framework.StartCluster(ctx, b, framework.ClusterOptions{Name: "published"})
	must(b, err)
	defer func() {
		// A slow stop on a loaded machine changes no figure: said, not failed.
		if err := cl.Stop(); err != nil {
			b.Logf("stopping the control plane: %v", err)
		}
	}()
	pinControlPlane(b, os.Getenv("SCALE_CONTROL_PLANE_CPUS"))
	worldCtx, stopWorld := context.WithCancel(ctx)
	defer stopWorld()
	w := newWorld(b, worldCtx, cl.Config)
	w.pollEvery = 200 * time.Millisecond
	zones := make([]*framework.BindServer, len(publishedZones))
	for i, c := range publishedZones {
		zones[i], err = framework.StartBind(ctx, b, framework.BindOptions{Name: c.Region, Zone: w.domain})
		must(b, err)
	}
	w.setupPublished(namespaces, zones, reading)
	for i, c := range publishedZones {
		kubeconfig, err := cl.NewKubeconfig(c.Name)
		must(b, err)
		_, err = cl.StartExternalDNS(ctx, b, framework.ExternalDNSOptions{Name: c.Name, Kubeconfig: kubeconfig}.ForBind(zones[i]))
		must(b, err)
	}
	var op *operator
	if binary != "" {
		op = startOperator(b, ctx, cl, binary)
		w.waitFor("the operator to publish the gateway's address records", 2*time.Minute, func() string {
			return zonesAnswer(zones, w.target(), "A")
		})
	} else {
		w.floorAddressRecords()
	}

	hostnames := make([]string, n)
	for i := range n {
		hostnames[i] = dns.Fqdn(w.hostname(newRoute(namespaces[i%len(namespaces)], i)))
	}
	watch := watchZones(ctx, zones, hostnames)
	run := publishedRun{load: loadAverage()}
	created := make([]time.Time, n)
	must(b, parallel(clients, n, func(i int) error {
		r := newRoute(namespaces[i%len(namespaces)], i)
		created[i] = time.Now()
		if binary != "" {
			return w.c.Create(w.ctx, r)
		}
		for _, c := range publishedZones {
			ep := desired.WithRecordTTL(desired.RouteEndpoint(r, c, w.hostname(r), w.target()), 300)
			ep.OwnerReferences = nil // no route exists in the floor's world
			if err := w.c.Create(w.ctx, ep); err != nil {
				return err
			}
		}
		return nil
	}))
	publishedAt := make([]time.Time, n)
	w.waitFor(fmt.Sprintf("%d names to answer in %d zones", n, len(zones)), 60*time.Minute, func() string {
		missing := watch.missing()
		if binary != "" {
			missing += w.markPublished(namespaces, n, publishedAt)
		}
		if missing > 0 {
			return fmt.Sprintf("%d names or routes to go", missing)
		}
		return ""
	})
	answeredAt := watch.stop()
	for i := range n {
		run.answered = append(run.answered, answeredAt[hostnames[i]].Sub(created[i]))
		if binary != "" {
			run.published = append(run.published, publishedAt[i].Sub(created[i]))
		}
	}
	if op != nil {
		run.sliP50, run.sliP95 = op.publishQuantiles(b, 0.5), op.publishQuantiles(b, 0.95)
		must(b, op.Stop())
	}
	return run
}

// setupPublished creates the time-to-Published world: the cluster in weu adopting neu and frc,
// three verified zones (the BIND servers' addresses, default verification settings, read as
// reading says), the Gateway with its ingress Service and the application namespaces with a
// DNSPolicy in mode Active.
func (w *world) setupPublished(namespaces []string, zones []*framework.BindServer, reading zoneReading) {
	ci := &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName},
		Spec: clusterv1alpha1.ClusterIdentitySpec{Region: region, Cluster: clusterName, Domain: w.domain, EnvironmentLetter: "d",
			AdoptsRegions: []string{"neu", "frc"}}}
	must(w.t, w.c.Create(w.ctx, ci))
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName}}
	for i, c := range publishedZones {
		cfg.Spec.ExternalDNSControllers = append(cfg.Spec.ExternalDNSControllers, clusterv1alpha1.ExternalDNSController{Name: c.Name, Region: c.Region,
			Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{fmt.Sprintf("127.0.0.1:%d", zones[i].Port)}}})
		if reading == byTransfer {
			cfg.Spec.ExternalDNSControllers[i].Verification.TransferZone = w.domain
		}
	}
	must(w.t, w.c.Create(w.ctx, cfg))
	w.setupGatewayAndNamespaces(namespaces)
}

// floorAddressRecords writes what the operator would publish for the gateway target in every
// zone, before the floor's routes: their CNAMEs point at it.
func (w *world) floorAddressRecords() {
	addrs := ingress.Addresses{IPv4: []string{"10.0.0.10"}}
	for _, c := range publishedZones {
		ep := desired.GatewayEndpoint(desired.Ingress{Controller: ingressName, TargetPostfix: postfix}, c, gatewayNS, w.target(),
			addrs.Records(w.target()))
		must(w.t, w.c.Create(w.ctx, desired.WithRecordTTL(ep, 300)))
	}
}

// markPublished records when each route was first seen Published=True (in the benchmark's own
// informer cache, read in place) and returns how many are not yet.
func (w *world) markPublished(namespaces []string, n int, at []time.Time) int {
	now := time.Now()
	index := make(map[string]int, n)
	for i := range n {
		index[namespaces[i%len(namespaces)]+"/"+routeName(i)] = i
	}
	routes, err := cacheview.All(w.ctx, w.cache, func() *routingv1alpha1.ServiceRoute { return &routingv1alpha1.ServiceRoute{} },
		func() client.ObjectList { return &routingv1alpha1.ServiceRouteList{} }, "")
	must(w.t, err)
	for _, r := range routes {
		i, ok := index[r.Namespace+"/"+r.Name]
		if ok && at[i].IsZero() && meta.IsStatusConditionTrue(r.Status.Conditions, routingv1alpha1.ConditionPublished) {
			at[i] = now
		}
	}
	missing := 0
	for _, t := range at {
		if t.IsZero() {
			missing++
		}
	}
	return missing
}

// zonesAnswer returns "" when every zone answers name with a record of type qtype.
func zonesAnswer(zones []*framework.BindServer, name, qtype string) string {
	for _, z := range zones {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.StringToType[qtype])
		in, err := dns.Exchange(m, fmt.Sprintf("127.0.0.1:%d", z.Port))
		if err != nil || len(in.Answer) == 0 {
			return fmt.Sprintf("%s does not answer %s %s yet", z.Name, name, qtype)
		}
	}
	return ""
}

// zoneWatch records when each name first appears as a CNAME in every zone, from zone transfers.
type zoneWatch struct {
	mu      sync.Mutex
	pending map[string]int // name -> zones that have not shown it yet
	seen    []map[string]bool
	at      map[string]time.Time // when the last zone showed it
	done    chan struct{}
	wg      sync.WaitGroup
}

func watchZones(ctx context.Context, zones []*framework.BindServer, names []string) *zoneWatch {
	zw := &zoneWatch{pending: make(map[string]int, len(names)), at: make(map[string]time.Time, len(names)), done: make(chan struct{})}
	for _, n := range names {
		zw.pending[strings.ToLower(n)] = len(zones)
	}
	for _, z := range zones {
		seen := map[string]bool{}
		zw.seen = append(zw.seen, seen)
		zw.wg.Add(1)
		go func() {
			defer zw.wg.Done()
			for {
				zw.transfer(z, seen)
				select {
				case <-ctx.Done():
					return
				case <-zw.done:
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}()
	}
	return zw
}

// transfer reads the zone once and records the names it shows for the first time.
func (zw *zoneWatch) transfer(z *framework.BindServer, seen map[string]bool) {
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(z.Zone))
	envelopes, err := new(dns.Transfer).In(m, fmt.Sprintf("127.0.0.1:%d", z.Port))
	if err != nil {
		return
	}
	now := time.Now()
	for env := range envelopes {
		for _, rr := range env.RR {
			name := strings.ToLower(rr.Header().Name)
			if rr.Header().Rrtype != dns.TypeCNAME || seen[name] {
				continue
			}
			seen[name] = true
			zw.mu.Lock()
			if left, ok := zw.pending[name]; ok {
				zw.pending[name] = left - 1
				if left == 1 {
					zw.at[name] = now
				}
			}
			zw.mu.Unlock()
		}
	}
}

// missing is the number of names some zone does not show yet.
func (zw *zoneWatch) missing() int {
	zw.mu.Lock()
	defer zw.mu.Unlock()
	return len(zw.pending) - len(zw.at)
}

// stop ends the transfers and returns when each name answered in every zone.
func (zw *zoneWatch) stop() map[string]time.Time {
	close(zw.done)
	zw.wg.Wait()
	return zw.at
}

// publishQuantiles estimates a quantile of the operator's publish-duration histogram (all zones)
// by linear interpolation inside its buckets, as Prometheus's histogram_quantile does.
func (op *operator) publishQuantiles(b *testing.B, q float64) float64 {
	m := op.histogram(b, metrics.PublishDurationName)
	return histogramQuantile(q, m)
}

// histogramQuantile computes the q-quantile of cumulative bucket counts (upper bound -> count).
func histogramQuantile(q float64, buckets map[float64]float64) float64 {
	bounds := slices.Sorted(func(yield func(float64) bool) {
		for k := range buckets {
			if !yield(k) {
				return
			}
		}
	})
	if len(bounds) == 0 {
		return 0
	}
	total := buckets[bounds[len(bounds)-1]]
	if total == 0 {
		return 0
	}
	rank, lower, below := q*total, 0.0, 0.0
	for _, upper := range bounds {
		count := buckets[upper]
		if count >= rank {
			if count == below {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/(count-below)
		}
		lower, below = upper, count
	}
	return bounds[len(bounds)-1]
}

// percentile is the p-th percentile (0-1) of ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	i := int(p*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// printPublished prints the time-to-Published table and returns the figures to report.
func printPublished(out io.Writer, n int, floor publishedRun, runs map[zoneReading]publishedRun) map[string]float64 {
	p := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	fp50, fp95 := percentile(floor.answered, 0.5), percentile(floor.answered, 0.95)
	p("")
	p("### Time to Published: %d routes, %d zones each (load average at start: floor %s)", n, len(publishedZones), floor.load)
	p("")
	p("| figure | p50 | p95 | / floor (p50, p95) |")
	p("| --- | --- | --- | --- |")
	p("| floor: DNSEndpoints by a bare client, until the name answers in every zone | %.1f s | %.1f s | |", fp50.Seconds(), fp95.Seconds())
	ratios := map[string]float64{}
	for _, reading := range readings() {
		op := runs[reading]
		p("| operator, zones read by %s: load average at start | %s | | |", reading, op.load)
		ap50, ap95 := percentile(op.answered, 0.5), percentile(op.answered, 0.95)
		pp50, pp95 := percentile(op.published, 0.5), percentile(op.published, 0.95)
		p("| operator, zones read by %s: route created until its name answers in every zone | %.1f s | %.1f s | %.2f, %.2f |", reading,
			ap50.Seconds(), ap95.Seconds(), ap50.Seconds()/fp50.Seconds(), ap95.Seconds()/fp95.Seconds())
		p("| operator, zones read by %s: route created until Published=True (goal ≤ 1.2 × floor) | %.1f s | %.1f s | %.2f, %.2f |", reading,
			pp50.Seconds(), pp95.Seconds(), pp50.Seconds()/fp50.Seconds(), pp95.Seconds()/fp95.Seconds())
		p("| operator, zones read by %s: its own SLI (%s, change → published in a zone, from its buckets) | %.1f s | %.1f s | |", reading,
			metrics.PublishDurationName, op.sliP50, op.sliP95)
		ratios["published-p50/floor-"+string(reading)] = pp50.Seconds() / fp50.Seconds()
		ratios["published-p95/floor-"+string(reading)] = pp95.Seconds() / fp95.Seconds()
	}
	return ratios
}

// histogram reads the cumulative bucket counts (upper bound -> count) of one of the operator's
// histograms, summed over its labels.
func (op *operator) histogram(b *testing.B, name string) map[float64]float64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", op.metricsPort))
	must(b, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	must(b, err)
	out := map[float64]float64{}
	for _, m := range families[name].GetMetric() {
		for _, bucket := range m.GetHistogram().GetBucket() {
			out[bucket.GetUpperBound()] += float64(bucket.GetCumulativeCount())
		}
	}
	return out
}
