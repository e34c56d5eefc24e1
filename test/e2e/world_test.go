//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The simulated world of the architecture's multi-region sections: one domain with a private
// DNS zone in each of three regions (weu, neu, frc: three named servers), and two clusters, aks01
// in weu and aks02 in neu, each running the operator and one ExternalDNS per regional zone
// configured as the architecture's "ExternalDNS Integration" section prescribes:
// --annotation-filter for the zone's controller, --txt-owner-id=external-dns-<zone region> (the
// same in both clusters) and --txt-prefix=<zone region>-<environment letter>-<cluster>- (unique per
// cluster). frc has a zone but no cluster.
const (
	worldDomain       = "example.com"
	worldEnvLetter    = "d"
	ingressController = "aks-istio-ingressgateway-internal"
	// Managed Istio on AKS runs its gateways in aks-istio-ingress, while Gateways live in
	// istio-system: the operator must find the Service across namespaces.
	ingressNamespace = "aks-istio-ingress"
	gatewayNamespace = "istio-system"
	gatewayName      = "default-gateway"
)

// worldRegions are the regional zones, in DNSConfiguration order.
var worldRegions = []string{"weu", "neu", "frc"}

// member is one cluster of the world.
type member struct {
	region  string // weu
	cluster string // aks01
	lbIP    string // the ingress load balancer address
	target  string // aks01-weu-internal.example.com: the gateway target hostname

	ownership ownershipConfig

	cl  *framework.Cluster
	op  *framework.Operator
	eds map[string]*framework.ExternalDNS // by zone region
}

func (m *member) String() string { return m.cluster + "-" + m.region }

// txtPrefix is the cluster's --txt-prefix for the zone of region.
func (m *member) txtPrefix(region string) string { return m.ownership.prefix(region, m.cluster) }

// owner is the cluster's --txt-owner-id for the zone of region.
func (m *member) owner(region string) string { return m.ownership.owner(region, m.cluster) }

// ownershipConfig is how the ExternalDNS instances of every cluster identify their records.
type ownershipConfig struct {
	prefix func(region, cluster string) string
	owner  func(region, cluster string) string
}

var (
	// architectureOwnership is the architecture document's configuration: the owner ID is the
	// regional controller's name in every cluster, the TXT prefix is unique per cluster.
	architectureOwnership = ownershipConfig{
		prefix: func(region, cluster string) string { return region + "-" + worldEnvLetter + "-" + cluster + "-" },
		owner:  func(region, _ string) string { return framework.RegionalControllerName(region) },
	}
	// recommendedOwnership is docs/EXTERNALDNS-INTEGRATION.md's: one TXT prefix per zone, shared by
	// every cluster, and an owner ID per cluster.
	recommendedOwnership = ownershipConfig{
		prefix: func(region, _ string) string { return region + "-" + worldEnvLetter + "-" },
		owner:  func(region, cluster string) string { return framework.RegionalControllerName(region) + "-" + cluster },
	}
)

// chain is what a service hostname CNAME'd to this cluster's gateway answers for an A query: the
// CNAME and, its target being in the same zone, the target's A record.
func (m *member) chain() framework.Expect {
	return framework.Resolves("CNAME "+m.target+".", "A "+m.lbIP)
}

type world struct {
	zones    map[string]*framework.BindServer
	aks01    *member // weu
	aks02    *member // neu
	timeline *timeline
}

func (w *world) members() []*member { return []*member{w.aks01, w.aks02} }

// allExternalDNS returns the six ExternalDNS instances.
func (w *world) allExternalDNS() []*framework.ExternalDNS {
	var out []*framework.ExternalDNS
	for _, m := range w.members() {
		for _, r := range worldRegions {
			out = append(out, m.eds[r])
		}
	}
	return out
}

// diag returns the diagnostics relevant to one zone: the zone, both clusters' ExternalDNS for
// it and both operators.
func (w *world) diag(region string) []func() string {
	return []func() string{
		w.zones[region].Diagnostics,
		w.aks01.eds[region].Diagnostics, w.aks02.eds[region].Diagnostics,
		w.aks01.op.Diagnostics, w.aks02.op.Diagnostics,
	}
}

// startWorld starts three zones, two clusters with their configuration, ingress Services,
// operators and ExternalDNS instances, and waits until both gateways' address records are in
// every zone.
func startWorld(ctx context.Context, t *testing.T, ownership ownershipConfig) *world {
	t.Helper()
	start := time.Now()
	w := &world{
		aks01:    &member{region: "weu", cluster: "aks01", lbIP: "10.1.2.3", ownership: ownership},
		aks02:    &member{region: "neu", cluster: "aks02", lbIP: "10.4.5.6", ownership: ownership},
		timeline: &timeline{},
	}
	for _, m := range w.members() {
		m.target = m.cluster + "-" + m.region + "-internal." + worldDomain
	}
	t.Cleanup(func() { w.timeline.log(t) })

	var err error
	if w.zones, err = framework.StartRegionalZones(ctx, t, worldDomain, worldRegions...); err != nil {
		t.Fatal(err)
	}
	for _, r := range worldRegions {
		t.Logf("zone %s of region %s: named on 127.0.0.1#%d", worldDomain, r, w.zones[r].Port)
	}

	// The two control planes start concurrently (each takes a few seconds).
	err = parallel(func() error {
		var err error
		w.aks01.cl, err = framework.StartCluster(ctx, t, framework.ClusterOptions{Name: w.aks01.String(), ControllerManager: true})
		return err
	}, func() error {
		var err error
		w.aks02.cl, err = framework.StartCluster(ctx, t, framework.ClusterOptions{Name: w.aks02.String(), ControllerManager: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	var starts []func() error
	for _, m := range w.members() {
		if err := configureMember(ctx, m); err != nil {
			t.Fatalf("cluster %s: %v", m, err)
		}
		m.eds = map[string]*framework.ExternalDNS{}
		var mu sync.Mutex
		starts = append(starts, func() error {
			var err error
			m.op, err = m.cl.StartOperator(ctx, t, framework.OperatorOptions{})
			return err
		})
		for _, r := range worldRegions {
			starts = append(starts, func() error {
				opts := framework.ExternalDNSOptions{
					Name:      framework.RegionalControllerName(r),
					OwnerID:   m.owner(r),
					TXTPrefix: m.txtPrefix(r),
				}.ForBind(w.zones[r])
				ed, err := m.cl.StartExternalDNS(ctx, t, opts)
				if err != nil {
					return fmt.Errorf("cluster %s: %w", m, err)
				}
				mu.Lock()
				m.eds[r] = ed
				mu.Unlock()
				return nil
			})
		}
	}
	if err := parallel(starts...); err != nil {
		t.Fatal(err)
	}
	t.Logf("external-dns-weu of aks01: %s", strings.Join(w.aks01.eds["weu"].Args, " "))

	// IngressDNS publishes each cluster's gateway address in every zone of the DNSConfiguration,
	// so that a CNAME to any cluster's gateway resolves in any zone.
	var checks []zoneCheck
	for _, r := range worldRegions {
		for _, m := range w.members() {
			checks = append(checks, zoneCheck{zone: r, name: m.target, want: framework.Resolves("A " + m.lbIP)})
		}
	}
	w.await(ctx, t, "setup", "both gateways' address records, every zone", start, checks)
	for _, r := range worldRegions {
		w.assertZone(ctx, t, r, w.baseline(r))
	}
	t.Logf("world ready in %s", time.Since(start).Round(time.Millisecond))
	return w
}

// configureMember creates what the platform team sets up once per cluster: ClusterIdentity,
// DNSConfiguration (the three regional controllers), the internal Gateway and the ingress
// gateway's LoadBalancer Service with its address.
func configureMember(ctx context.Context, m *member) error {
	c := m.cl.Client
	var controllers []clusterv1alpha1.ExternalDNSController
	for _, r := range worldRegions {
		controllers = append(controllers, clusterv1alpha1.ExternalDNSController{Name: framework.RegionalControllerName(r), Region: r})
	}
	objs := []client.Object{
		&clusterv1alpha1.ClusterIdentity{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster-identity"},
			Spec:       clusterv1alpha1.ClusterIdentitySpec{Region: m.region, Cluster: m.cluster, Domain: worldDomain, EnvironmentLetter: worldEnvLetter},
		},
		&clusterv1alpha1.DNSConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "dns-config"},
			Spec:       clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: controllers},
		},
		&routingv1alpha1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: gatewayName},
			// The AKS Istio add-on's ingress Services live in aks-istio-ingress, not beside the Gateway.
			Spec: routingv1alpha1.GatewaySpec{Controller: ingressController, CredentialName: "cert-aks-ingress", TargetPostfix: "internal", IngressNamespace: ingressNamespace},
		},
	}
	if err := framework.EnsureNamespace(ctx, c, gatewayNamespace); err != nil {
		return err
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
	}
	_, err := framework.CreateIngressService(ctx, c, framework.IngressService{
		Namespace: ingressNamespace, Name: ingressController, Controller: ingressController, IPs: []string{m.lbIP},
	})
	return err
}

// baseline is what a zone holds once both gateways are published and no route is: each
// cluster's address record with its ownership TXT.
func (w *world) baseline(region string) []string {
	var out []string
	for _, m := range w.members() {
		out = append(out,
			fmt.Sprintf("%s A %s", short(m.target), m.lbIP),
			fmt.Sprintf("%sa-%s TXT owner=%s", m.txtPrefix(region), short(m.target), m.owner(region)))
	}
	return out
}

// cnameLines are the zone lines of a CNAME published by m in the zone of region.
func (w *world) cnameLines(region string, m *member, hostname string) []string {
	return []string{
		fmt.Sprintf("%s CNAME %s", short(hostname), short(m.target)),
		fmt.Sprintf("%scname-%s TXT owner=%s", m.txtPrefix(region), short(hostname), m.owner(region)),
	}
}

// assertZone waits until the zone holds exactly want (zone lines, see zoneLines): every record
// ExternalDNS added, ownership TXT records included.
func (w *world) assertZone(ctx context.Context, t *testing.T, region string, want []string) {
	t.Helper()
	b := w.zones[region]
	slices.Sort(want)
	var got []string
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "zone "+region+" to hold exactly\n    "+strings.Join(want, "\n    "),
		func(ctx context.Context) (bool, string, error) {
			recs, err := b.ZoneRecords(ctx)
			if err != nil {
				return false, err.Error(), nil
			}
			got = zoneLines(recs)
			return slices.Equal(got, want), "\n    " + strings.Join(got, "\n    "), nil
		})
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(callAll(w.diag(region)), "\n"))
	}
	t.Logf("zone %s holds:\n    %s", region, strings.Join(got, "\n    "))
}

// zoneLines renders records as sorted "name TYPE data" lines relative to the domain; ownership
// TXT records are reduced to their owner: "weu-d-aks01-cname-api-ns-d-dev-myapp TXT
// owner=external-dns-weu".
func zoneLines(recs []framework.Record) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		data := short(r.Data)
		if r.Type == "TXT" {
			data = "(not an ownership record) " + r.Data
			for f := range strings.SplitSeq(strings.Trim(r.Data, `"`), ",") {
				if owner, ok := strings.CutPrefix(f, "external-dns/owner="); ok {
					data = "owner=" + owner
				}
			}
		}
		out = append(out, fmt.Sprintf("%s %s %s", short(r.Name), r.Type, data))
	}
	slices.Sort(out)
	return out
}

// short strips the domain: api-ns-d-dev-myapp.example.com. -> api-ns-d-dev-myapp.
func short(name string) string {
	name = strings.TrimSuffix(name, ".")
	return strings.TrimSuffix(name, "."+worldDomain)
}

// zoneCheck is one expected answer: an A query for name against the zone of a region.
type zoneCheck struct {
	zone string
	name string
	want framework.Expect
	// allowed are the other answers the query may give on the way (the state before the change,
	// NXDOMAIN during a hand-over); anything else seen is an error. Nil: anything.
	allowed []framework.Expect
}

// await waits, concurrently, for every check to get its answer, and records how long each took
// from the change made at since (the timeline is printed when the test ends).
func (w *world) await(ctx context.Context, t *testing.T, scenario, change string, since time.Time, checks []zoneCheck) {
	t.Helper()
	type result struct {
		tr   framework.Trace
		took time.Duration
		err  error
	}
	results := make([]result, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			waitStart := time.Now()
			tr, err := framework.Converge(ctx, w.zones[c.zone].Query(c.name, "A"), c.want, convergeTimeout, 50*time.Millisecond, w.diag(c.zone)...)
			results[i] = result{tr: tr, took: waitStart.Add(tr.Took).Sub(since), err: err}
		})
	}
	wg.Wait()
	var errs []error
	for i, c := range checks {
		r := results[i]
		if r.err != nil {
			errs = append(errs, fmt.Errorf("zone %s: %w", c.zone, r.err))
			continue
		}
		w.timeline.add(scenario, change, c, r.took, r.tr)
		t.Logf("converged in %-7s zone %s: %s -> %s   [seen: %s]", r.took.Round(time.Millisecond), c.zone, short(c.name), c.want, r.tr)
		if c.allowed != nil {
			for _, o := range r.tr.Seen {
				if o.Err == nil && !c.want.Matches(o.Answer) && !slices.ContainsFunc(c.allowed, func(e framework.Expect) bool { return e.Matches(o.Answer) }) {
					t.Errorf("zone %s: %s answered %s on the way to %s; only %v were expected in between", c.zone, short(c.name), o.Answer, c.want, c.allowed)
				}
			}
		}
	}
	if len(errs) > 0 {
		t.Fatal(errors.Join(errs...))
	}
}

// observeWindowSyncs is how many synchronizations every ExternalDNS must complete while a
// stability check watches the zones.
const observeWindowSyncs = 3

// assertStable watches the checks' queries for observeWindow and fails if any answer differs from
// its want at any moment, if named applied any update to one of the names, or if an ExternalDNS
// instance completed fewer than observeWindowSyncs synchronizations meanwhile (the window would
// prove nothing).
func (w *world) assertStable(ctx context.Context, t *testing.T, scenario string, checks []zoneCheck) {
	t.Helper()
	logsBefore := map[string]string{}
	for _, r := range worldRegions {
		logsBefore[r] = w.zones[r].Log()
	}
	observations := make([][]framework.Observation, len(checks))
	eds := w.allExternalDNS()
	syncs := make([]int, len(eds))
	syncErrs := make([]error, len(eds))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			observations[i] = framework.ObserveAnswers(ctx, w.zones[c.zone].Query(c.name, "A"), observeWindow, 100*time.Millisecond)
		})
	}
	for i, ed := range eds {
		wg.Go(func() { syncs[i], syncErrs[i] = ed.SyncsDuring(ctx, observeWindow) })
	}
	wg.Wait()

	for i, c := range checks {
		obs := observations[i]
		if len(obs) != 1 || obs[0].Err != nil || !c.want.Matches(obs[0].Answer) {
			t.Errorf("%s: zone %s: %s did not stay %s for %s; observed %v", scenario, c.zone, short(c.name), c.want, observeWindow, obs)
		}
		log := strings.TrimPrefix(w.zones[c.zone].Log(), logsBefore[c.zone])
		for line := range strings.SplitSeq(log, "\n") {
			if strings.Contains(line, "updating zone") && strings.Contains(line, "'"+c.name+"'") {
				t.Errorf("%s: zone %s: named applied an update to %s during the stability window: %s", scenario, c.zone, c.name, line)
			}
		}
	}
	var counts []string
	for i, ed := range eds {
		if syncErrs[i] != nil {
			t.Errorf("%s: %v", scenario, syncErrs[i])
		}
		owner := "aks01"
		if i >= len(worldRegions) {
			owner = "aks02"
		}
		counts = append(counts, fmt.Sprintf("%s/%s=%d", owner, ed.Name, syncs[i]))
		if syncs[i] < observeWindowSyncs {
			t.Errorf("%s: %s of %s completed %d synchronizations during the %s window, want at least %d", scenario, ed.Name, owner, syncs[i], observeWindow, observeWindowSyncs)
		}
	}
	t.Logf("%s: stable for %s (%d queries; ExternalDNS synchronizations meanwhile: %s)", scenario, observeWindow, len(checks), strings.Join(counts, " "))
}

// waitAllSynced waits until every ExternalDNS completed a synchronization that started after
// since: whatever they would do about the state at since is done.
func (w *world) waitAllSynced(ctx context.Context, t *testing.T, since time.Time) {
	t.Helper()
	waitSyncs(ctx, t, since, w.allExternalDNS()...)
}

// timeline collects every convergence of the run for the summary printed at the end.
type timeline struct {
	mu   sync.Mutex
	rows []string
}

func (tl *timeline) add(scenario, change string, c zoneCheck, took time.Duration, tr framework.Trace) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.rows = append(tl.rows, fmt.Sprintf("%-9s %-44s %-12s zone %-3s %-32s -> %-50s seen: %s",
		took.Round(10*time.Millisecond), scenario, change, c.zone, short(c.name), c.want, tr))
}

func (tl *timeline) log(t *testing.T) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.rows) == 0 {
		return
	}
	t.Logf("convergence (change -> dig answer), %d measurements:\n%s", len(tl.rows), strings.Join(tl.rows, "\n"))
}

// parallel runs the functions concurrently and joins their errors.
func parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func callAll(fns []func() string) []string {
	out := make([]string, 0, len(fns))
	for _, f := range fns {
		out = append(out, f())
	}
	return out
}

// firstLineWith returns the first line of log containing s.
func firstLineWith(log, s string) string {
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
