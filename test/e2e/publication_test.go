//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The publication world: one cluster (aks01 in weu) whose DNSConfiguration verifies the three
// regional zones (weu, neu, frc: three named) it writes through three real ExternalDNS instances,
// one per zone, each selecting its DNSEndpoints by label as docs/EXTERNALDNS-INTEGRATION.md
// recommends. The neu instance synchronizes every 5 s instead of every second, so that a record
// changed behind its back stays changed long enough to be seen before its next run repairs it.
const (
	publicationRouteTTL = 120 // the application's DNSPolicy recordTTL
	publicationNeuSync  = 5 * time.Second
)

type publicationWorld struct {
	m     *member
	zones map[string]*framework.BindServer
	eds   map[string]*framework.ExternalDNS
	opts  map[string]framework.ExternalDNSOptions
}

// TestPublication proves the Published condition and status.zones against the real ExternalDNS
// and BIND: a RegionBound route becomes Published in all three zones (the time is logged); with
// one zone's ExternalDNS stopped, a new route is Pending in that zone only, and Published there
// once it runs again; a CNAME changed in a zone with nsupdate makes that zone Drifted until
// ExternalDNS's next synchronization repairs it. Every zone answers with the records' TTLs. The
// weu zone is asked name by name, neu and frc are read whole by zone transfer (transferZone):
// the pending and drifted zones are seen both ways.
func TestPublication(t *testing.T) {
	ctx := t.Context()
	w := startPublicationWorld(ctx, t)
	portal := newApp("central", "portal-route", "portal")
	search := newApp("central", "search-route", "search")

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"RouteBecomesPublishedInEveryZone", func(t *testing.T) { testPublishedEverywhere(ctx, t, w, portal) }},
		{"StoppedExternalDNSLeavesOnlyItsZonePending", func(t *testing.T) { testZonePending(ctx, t, w, portal, search) }},
		{"DriftIsSeenAndRepairedByTheNextSync", func(t *testing.T) { testDrift(ctx, t, w, portal) }},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			t.Fatalf("%s failed; the later steps depend on its end state and are not run", s.name)
		}
	}
}

func startPublicationWorld(ctx context.Context, t *testing.T) *publicationWorld {
	t.Helper()
	start := time.Now()
	w := &publicationWorld{
		m:    &member{region: "weu", cluster: "aks01", lbIP: "10.1.2.3", ownership: recommendedOwnership},
		eds:  map[string]*framework.ExternalDNS{},
		opts: map[string]framework.ExternalDNSOptions{},
	}
	w.m.target = "aks01-weu-internal." + worldDomain
	var err error
	if w.zones, err = framework.StartRegionalZones(ctx, t, worldDomain, worldRegions...); err != nil {
		t.Fatal(err)
	}
	if w.m.cl, err = framework.StartCluster(ctx, t, framework.ClusterOptions{Name: w.m.String(), ControllerManager: true}); err != nil {
		t.Fatal(err)
	}
	if err := configureMember(ctx, w.m); err != nil {
		t.Fatal(err)
	}
	// Verification of every zone against its named (weu name by name, neu and frc by zone
	// transfer), and the platform's TTL left at its default.
	err = framework.Change(ctx, w.m.cl.Client, &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dns-config"}}, func(cfg *clusterv1alpha1.DNSConfiguration) {
		for i, c := range cfg.Spec.ExternalDNSControllers {
			cfg.Spec.ExternalDNSControllers[i].Verification = &clusterv1alpha1.ZoneVerification{
				Nameservers: []string{fmt.Sprintf("127.0.0.1:%d", w.zones[c.Region].Port)}, Timeout: &metav1.Duration{Duration: time.Second}}
			if c.Region != "weu" {
				cfg.Spec.ExternalDNSControllers[i].Verification.TransferZone = worldDomain
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	w.m.op, err = w.m.cl.StartOperator(ctx, t, framework.OperatorOptions{ExtraArgs: []string{
		// Settled records are checked every second (5 minutes by default), so that the
		// drift below is seen within ExternalDNS's interval.
		"--verification-fast-interval=200ms", "--verification-settled-interval=1s",
	}})
	if err != nil {
		t.Fatal(err)
	}
	var starts []func() error
	var mu sync.Mutex
	for _, r := range worldRegions {
		opts := framework.ExternalDNSOptions{Name: framework.RegionalControllerName(r), OwnerID: w.m.owner(r), TXTPrefix: w.m.txtPrefix(r)}.ForBind(w.zones[r])
		if r == "neu" {
			opts.Interval = publicationNeuSync
		}
		w.opts[r] = opts
		starts = append(starts, func() error {
			ed, err := w.m.cl.StartExternalDNS(ctx, t, opts)
			mu.Lock()
			w.eds[r] = ed
			mu.Unlock()
			return err
		})
	}
	if err := parallel(starts...); err != nil {
		t.Fatal(err)
	}
	gw := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: gatewayName}}
	waitObjectZones(ctx, t, w, gw, map[string]routingv1alpha1.ZoneState{
		"external-dns-weu": "Published", "external-dns-neu": "Published", "external-dns-frc": "Published"})
	t.Logf("publication world ready in %s: gateway %s Published 3/3", time.Since(start).Round(time.Millisecond), w.m.target)
	return w
}

func (w *publicationWorld) diag() []func() string {
	out := []func() string{w.m.op.Diagnostics}
	for _, r := range worldRegions {
		out = append(out, w.zones[r].Diagnostics, w.eds[r].Diagnostics)
	}
	return out
}

// zoneView is what the test reads of an object's publication.
type zoneView struct {
	zones     []routingv1alpha1.ZoneStatus
	published string
	cond      *metav1.Condition
}

func (v zoneView) states() map[string]routingv1alpha1.ZoneState {
	out := map[string]routingv1alpha1.ZoneState{}
	for _, z := range v.zones {
		out[z.Controller] = z.State
	}
	return out
}

func (v zoneView) String() string {
	var parts []string
	for _, z := range v.zones {
		parts = append(parts, fmt.Sprintf("%s=%s (%s; processed=%t)", z.Controller, z.State, z.Answer, z.Processed))
	}
	c := "no Published condition"
	if v.cond != nil {
		c = fmt.Sprintf("Published=%s %s", v.cond.Status, v.cond.Reason)
	}
	return fmt.Sprintf("%s [%s] %s", v.published, strings.Join(parts, ", "), c)
}

func readZones(ctx context.Context, c client.Client, obj client.Object) (zoneView, error) {
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return zoneView{}, err
	}
	var v zoneView
	var conds []metav1.Condition
	switch o := obj.(type) {
	case *routingv1alpha1.ServiceRoute:
		v.zones, v.published, conds = o.Status.Zones, o.Status.Published, o.Status.Conditions
	case *routingv1alpha1.Gateway:
		v.zones, v.published, conds = o.Status.Zones, o.Status.Published, o.Status.Conditions
	}
	v.cond = meta.FindStatusCondition(conds, routingv1alpha1.ConditionPublished)
	return v, nil
}

// waitObjectZones waits until obj's zones are exactly want, and returns what it saw last.
func waitObjectZones(ctx context.Context, t *testing.T, w *publicationWorld, obj client.Object, want map[string]routingv1alpha1.ZoneState) zoneView {
	t.Helper()
	var v zoneView
	err := framework.Poll(ctx, convergeTimeout, 50*time.Millisecond, fmt.Sprintf("%s zones %v", obj.GetName(), want), func(ctx context.Context) (bool, string, error) {
		got, err := readZones(ctx, w.m.cl.Client, obj)
		if err != nil {
			return false, v.String(), nil // the last state read says more than a timed-out read
		}
		v = got
		return fmt.Sprint(v.states()) == fmt.Sprint(want), v.String(), nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(callAll(w.diag()), "\n"))
	}
	return v
}

// firstSeen polls obj until every zone reached its wanted state, and returns when each zone
// first showed it (measured from since).
func firstSeen(ctx context.Context, t *testing.T, w *publicationWorld, obj client.Object, since time.Time, want map[string]routingv1alpha1.ZoneState) map[string]time.Duration {
	t.Helper()
	seen := map[string]time.Duration{}
	var last zoneView
	err := framework.Poll(ctx, convergeTimeout, 50*time.Millisecond, fmt.Sprintf("%s zones %v", obj.GetName(), want), func(ctx context.Context) (bool, string, error) {
		v, err := readZones(ctx, w.m.cl.Client, obj)
		if err != nil {
			return false, last.String(), nil
		}
		last = v
		for c, s := range v.states() {
			if _, ok := seen[c]; !ok && want[c] == s {
				seen[c] = time.Since(since)
			}
		}
		return len(seen) == len(want) && fmt.Sprint(v.states()) == fmt.Sprint(want), v.String(), nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(callAll(w.diag()), "\n"))
	}
	return seen
}

var publishedEverywhere = map[string]routingv1alpha1.ZoneState{"external-dns-weu": "Published", "external-dns-neu": "Published", "external-dns-frc": "Published"}

// testPublishedEverywhere creates a RegionBound application and measures, per zone, when dig
// first answers the whole chain and when the route's status says Published.
func testPublishedEverywhere(ctx context.Context, t *testing.T, w *publicationWorld, a app) {
	c := w.m.cl.Client
	if err := framework.EnsureNamespace(ctx, c, a.namespace); err != nil {
		t.Fatal(err)
	}
	spec := regionBoundSpec
	spec.RecordTTL = ptr.To(int32(publicationRouteTTL))
	create(ctx, t, c, a.policy(spec))
	route := a.serviceRoute()
	since := create(ctx, t, c, route)

	digTimes := map[string]time.Duration{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range worldRegions {
		wg.Go(func() {
			tr, err := framework.Converge(ctx, w.zones[r].Query(a.hostname, "A"), w.m.chain(), convergeTimeout, 50*time.Millisecond)
			if err == nil {
				mu.Lock()
				digTimes[framework.RegionalControllerName(r)] = tr.Took
				mu.Unlock()
			}
		})
	}
	statusTimes := firstSeen(ctx, t, w, route, since, publishedEverywhere)
	wg.Wait()
	v, err := readZones(ctx, c, route)
	if err != nil {
		t.Fatal(err)
	}
	if v.cond == nil || v.cond.Status != metav1.ConditionTrue || v.cond.Reason != routingv1alpha1.ReasonZonesPublished || v.published != "3/3" {
		t.Fatalf("route %s: want Published=True ZonesPublished 3/3, got %s", a.route, v)
	}
	var last time.Duration
	for _, r := range worldRegions {
		name := framework.RegionalControllerName(r)
		last = max(last, statusTimes[name])
		z := v.zones[slices.IndexFunc(v.zones, func(z routingv1alpha1.ZoneStatus) bool { return z.Controller == name })]
		if !z.Processed || z.Answer != "CNAME "+w.m.target+". → A "+w.m.lbIP {
			t.Errorf("zone %s: %+v", name, z)
		}
		t.Logf("zone %s: dig answers the chain after %-7s status says Published after %-7s (%s)", r,
			digTimes[name].Round(10*time.Millisecond), statusTimes[name].Round(10*time.Millisecond), z.Answer)
	}
	t.Logf("route %s Published in all three zones %s after it was created (neu's ExternalDNS runs every %s, the others every second)",
		a.route, last.Round(10*time.Millisecond), publicationNeuSync)

	// The records carry their TTLs: the policy's for the CNAME, the platform's default for the
	// gateway address.
	for _, r := range worldRegions {
		ans := framework.MustDig(ctx, t, w.zones[r].Query(a.hostname, "A"))
		for _, rec := range ans.Records {
			want := 300
			if rec.Type == "CNAME" {
				want = publicationRouteTTL
			}
			if rec.TTL != want {
				t.Errorf("zone %s serves %s with TTL %d, want %d", r, rec, rec.TTL, want)
			}
		}
		t.Logf("zone %s: %s", r, ans)
	}
}

// testZonePending stops the frc zone's ExternalDNS, creates a second route and checks that only
// frc is Pending — not processed, NXDOMAIN — while the other zones publish it and the first route
// stays Published everywhere; once ExternalDNS runs again, frc is Published too.
func testZonePending(ctx context.Context, t *testing.T, w *publicationWorld, first, second app) {
	c := w.m.cl.Client
	if err := w.eds["frc"].Stop(); err != nil {
		t.Fatal(err)
	}
	route := second.serviceRoute()
	create(ctx, t, c, route)
	onlyFRCPending := map[string]routingv1alpha1.ZoneState{"external-dns-weu": "Published", "external-dns-neu": "Published", "external-dns-frc": "Pending"}
	v := waitObjectZones(ctx, t, w, route, onlyFRCPending)
	frc := v.zones[slices.IndexFunc(v.zones, func(z routingv1alpha1.ZoneStatus) bool { return z.Controller == "external-dns-frc" })]
	if frc.Processed || frc.Answer != "NXDOMAIN" {
		t.Errorf("frc zone of %s: want NXDOMAIN, not processed; got %+v", second.route, frc)
	}
	if v.cond.Reason != routingv1alpha1.ReasonZonesPending || v.published != "2/3" {
		t.Errorf("route %s: want 2/3 ZonesPending, got %s", second.route, v)
	}
	t.Logf("ExternalDNS for frc stopped: %s is %s", second.route, v)

	// It stays so, and the first route keeps every zone.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for obj, want := range map[client.Object]map[string]routingv1alpha1.ZoneState{route: onlyFRCPending, first.serviceRoute(): publishedEverywhere} {
			got, err := readZones(ctx, c, obj)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.states()) != fmt.Sprint(want) {
				t.Fatalf("%s changed to %s while frc's ExternalDNS was stopped", obj.GetName(), got)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}

	restarted := time.Now()
	ed, err := w.m.cl.StartExternalDNS(ctx, t, w.opts["frc"])
	if err != nil {
		t.Fatal(err)
	}
	w.eds["frc"] = ed
	took := firstSeen(ctx, t, w, route, restarted, publishedEverywhere)
	t.Logf("ExternalDNS for frc restarted: %s Published in frc %s later (start-up and first synchronization included)",
		second.route, took["external-dns-frc"].Round(10*time.Millisecond))
}

// testDrift changes the first route's CNAME in the neu zone right after neu's ExternalDNS
// synchronized: the zone is Drifted (answering the other target) until its next synchronization
// writes the published record back, then Published again.
func testDrift(ctx context.Context, t *testing.T, w *publicationWorld, a app) {
	c := w.m.cl.Client
	route := a.serviceRoute()
	if err := w.eds["neu"].WaitForSyncSince(ctx, time.Now(), syncTimeout); err != nil {
		t.Fatal(err)
	}
	other := "aks09-neu-internal." + worldDomain + "."
	changed := time.Now()
	if err := w.zones["neu"].Update(ctx, "update delete "+a.hostname+". CNAME", fmt.Sprintf("update add %s. 120 CNAME %s", a.hostname, other)); err != nil {
		t.Fatal(err)
	}
	drifted := map[string]routingv1alpha1.ZoneState{"external-dns-weu": "Published", "external-dns-neu": "Drifted", "external-dns-frc": "Published"}
	seen := firstSeen(ctx, t, w, route, changed, drifted)
	v, err := readZones(ctx, c, route)
	if err != nil {
		t.Fatal(err)
	}
	if v.cond.Reason != routingv1alpha1.ReasonZonesDrifted || !strings.Contains(v.cond.Message, "CNAME "+other) {
		t.Errorf("route %s: want ZonesDrifted naming %s, got %s: %s", a.route, other, v, v.cond.Message)
	}
	t.Logf("nsupdate changed %s in neu to CNAME %s: Drifted after %s: %s", a.hostname, other, seen["external-dns-neu"].Round(10*time.Millisecond), v.cond.Message)

	repaired := firstSeen(ctx, t, w, route, changed, publishedEverywhere)
	if _, err := framework.Converge(ctx, w.zones["neu"].Query(a.hostname, "A"), w.m.chain(), convergeTimeout, 50*time.Millisecond, w.diag()...); err != nil {
		t.Fatal(err)
	}
	t.Logf("ExternalDNS for neu repaired the record at its next synchronization: Published again %s after the change",
		repaired["external-dns-neu"].Round(10*time.Millisecond))
}
