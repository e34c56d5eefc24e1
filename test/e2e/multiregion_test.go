//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestMultiRegion proves the traffic-flow tables of the architecture's "Multi-Region DNS
// Resolution" and "Multi-Region Behavior" sections by asking each regional zone with dig, in the
// world of startWorld: aks01 (weu) and aks02 (neu), zones weu, neu and frc. It runs twice: with
// the ExternalDNS ownership configuration of the architecture (owner ID per region, TXT prefix per
// cluster) and with the one docs/EXTERNALDNS-INTEGRATION.md recommends (TXT prefix per zone, owner
// ID per cluster).
//
// The scenarios run in order on the same world; each leaves it as the next one expects, and the
// last one proves that deleting the ServiceRoutes leaves every zone exactly as it was before any
// route existed.
func TestMultiRegion(t *testing.T) {
	t.Run("ArchitectureOwnership", func(t *testing.T) { testMultiRegion(t, architectureOwnership) })
	t.Run("RecommendedOwnership", func(t *testing.T) { testMultiRegion(t, recommendedOwnership) })
}

func testMultiRegion(t *testing.T, ownership ownershipConfig) {
	ctx := t.Context()
	w := startWorld(ctx, t, ownership)

	// myapp: the same DNSPolicy and ServiceRoute applied to both clusters (as GitOps would).
	myapp := newApp("myapp", "api-route", "api")
	// central: a RegionBound application, also applied to both clusters.
	central := newApp("central", "portal-route", "portal")

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"Active_EachZoneResolvesToItsOwnCluster", func(t *testing.T) { testActive(ctx, t, w, myapp) }},
		{"ActiveAdoptsFRC_FRCZoneResolvesToWEU", func(t *testing.T) { testAdoptedRegion(ctx, t, w, myapp) }},
		{"RegionBound_AllZonesResolveToSourceRegion", func(t *testing.T) { testRegionBound(ctx, t, w, central) }},
		{"SwitchActiveToRegionBoundAndBack", func(t *testing.T) { testSwitchModes(ctx, t, w, myapp) }},
		{"DeletingServiceRouteRemovesItsRecordsFromEveryZone", func(t *testing.T) { testDeleteRoutes(ctx, t, w, myapp, central) }},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			t.Fatalf("%s failed; the later scenarios depend on its end state and are not run", s.name)
		}
	}
}

// app is one application namespace with a DNSPolicy and a ServiceRoute, created identically in
// both clusters.
type app struct {
	namespace string
	route     string
	service   string
	hostname  string
}

func newApp(namespace, route, service string) app {
	return app{
		namespace: namespace, route: route, service: service,
		hostname: fmt.Sprintf("%s-ns-%s-dev-%s.%s", service, worldEnvLetter, namespace, worldDomain),
	}
}

func (a app) policy(spec routingv1alpha1.DNSPolicySpec) *routingv1alpha1.DNSPolicy {
	return &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: a.namespace + "-dns"}, Spec: spec}
}

func (a app) serviceRoute() *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: a.route},
		Spec: routingv1alpha1.ServiceRouteSpec{
			ServiceName: a.service, GatewayName: gatewayName, GatewayNamespace: gatewayNamespace,
			Environment: "dev", Application: a.namespace,
		},
	}
}

var (
	activeSpec      = routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}
	regionBoundSpec = routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeRegionBound, SourceRegion: "weu"}
)

// deploy creates the namespace, the DNSPolicy and the ServiceRoute in both clusters and returns
// the time before the first write.
func (w *world) deploy(ctx context.Context, t *testing.T, a app, spec routingv1alpha1.DNSPolicySpec) time.Time {
	t.Helper()
	at := time.Now()
	for _, m := range w.members() {
		if err := framework.EnsureNamespace(ctx, m.cl.Client, a.namespace); err != nil {
			t.Fatal(err)
		}
		create(ctx, t, m.cl.Client, a.policy(spec))
		create(ctx, t, m.cl.Client, a.serviceRoute())
	}
	return at
}

// setPolicy changes the app's DNSPolicy spec in aks01 then aks02 and returns the time before the
// first write.
func (w *world) setPolicy(ctx context.Context, t *testing.T, a app, spec routingv1alpha1.DNSPolicySpec) time.Time {
	t.Helper()
	at := time.Now()
	for _, m := range w.members() {
		p := &routingv1alpha1.DNSPolicy{}
		if err := m.cl.Client.Get(ctx, client.ObjectKey{Namespace: a.namespace, Name: a.namespace + "-dns"}, p); err != nil {
			t.Fatal(err)
		}
		orig := p.DeepCopy()
		p.Spec = spec
		if err := m.cl.Client.Patch(ctx, p, client.MergeFrom(orig)); err != nil {
			t.Fatalf("cluster %s: patching DNSPolicy %s/%s: %v", m, p.Namespace, p.Name, err)
		}
	}
	return at
}

// assertPolicy waits until the cluster's DNSPolicy of the app reports active and controllers for
// the current spec.
func assertPolicy(ctx context.Context, t *testing.T, m *member, a app, active bool, controllers ...string) {
	t.Helper()
	key := client.ObjectKey{Namespace: a.namespace, Name: a.namespace + "-dns"}
	err := framework.Poll(ctx, convergeTimeout, 100*time.Millisecond,
		fmt.Sprintf("DNSPolicy %s in %s: active=%t activeControllers=%v", key, m, active, controllers),
		func(ctx context.Context) (bool, string, error) {
			p := &routingv1alpha1.DNSPolicy{}
			if err := m.cl.Client.Get(ctx, key, p); err != nil {
				return false, "", err
			}
			st := p.Status
			return st.ObservedGeneration == p.Generation && st.Active == active && slices.Equal(st.ActiveControllers, controllers),
				fmt.Sprintf("generation %d, status %+v", p.Generation, st), nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

// assertRoute waits until the cluster's ServiceRoute of the app has the phase and Ready reason,
// and exactly the DNSEndpoints (by controller) in its namespace.
func assertRoute(ctx context.Context, t *testing.T, m *member, a app, phase routingv1alpha1.Phase, reason string, controllers ...string) {
	t.Helper()
	key := client.ObjectKey{Namespace: a.namespace, Name: a.route}
	err := framework.Poll(ctx, convergeTimeout, 100*time.Millisecond,
		fmt.Sprintf("ServiceRoute %s in %s: phase %s, reason %s, DNSEndpoints for %v", key, m, phase, reason, controllers),
		func(ctx context.Context) (bool, string, error) {
			r := &routingv1alpha1.ServiceRoute{}
			if err := m.cl.Client.Get(ctx, key, r); err != nil {
				return false, "", err
			}
			var eps externaldnsv1alpha1.DNSEndpointList
			if err := m.cl.Client.List(ctx, &eps, client.InNamespace(a.namespace)); err != nil {
				return false, "", err
			}
			var got []string
			for _, ep := range eps.Items {
				got = append(got, ep.Annotations[framework.ControllerAnnotation])
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(controllers))
			gotReason := ""
			for _, c := range r.Status.Conditions {
				if c.Type == "Ready" {
					gotReason = c.Reason
				}
			}
			return r.Status.Phase == phase && gotReason == reason && slices.Equal(got, want),
				fmt.Sprintf("phase %s, reason %s, DNSEndpoints for %v", r.Status.Phase, gotReason, got), nil
		})
	if err != nil {
		t.Fatal(err)
	}
}

// Active mode: each cluster publishes only in its own region's zone, so each region resolves to
// its own cluster, and frc (no cluster, not adopted) does not resolve.
func testActive(ctx context.Context, t *testing.T, w *world, a app) {
	at := w.deploy(ctx, t, a, activeSpec)
	w.await(ctx, t, "Active", "create", at, []zoneCheck{
		{zone: "weu", name: a.hostname, want: w.aks01.chain(), allowed: []framework.Expect{framework.NXDomain()}},
		{zone: "neu", name: a.hostname, want: w.aks02.chain(), allowed: []framework.Expect{framework.NXDomain()}},
	})
	assertPolicy(ctx, t, w.aks01, a, true, "external-dns-weu")
	assertPolicy(ctx, t, w.aks02, a, true, "external-dns-neu")
	assertRoute(ctx, t, w.aks01, a, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded, "external-dns-weu")
	assertRoute(ctx, t, w.aks02, a, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded, "external-dns-neu")

	// Nothing is published in frc: every ExternalDNS has seen the DNSEndpoints by now.
	w.waitAllSynced(ctx, t, time.Now())
	if got := framework.MustDig(ctx, t, w.zones["frc"].Query(a.hostname, "A")); !framework.NXDomain().Matches(got) {
		t.Errorf("zone frc answers %s for %s, want NXDOMAIN (no cluster in frc, none adopts it)", got, a.hostname)
	}
	w.assertZone(ctx, t, "weu", append(w.baseline("weu"), w.cnameLines("weu", w.aks01, a.hostname)...))
	w.assertZone(ctx, t, "neu", append(w.baseline("neu"), w.cnameLines("neu", w.aks02, a.hostname)...))
	w.assertZone(ctx, t, "frc", w.baseline("frc"))
}

// Active with adoptsRegions [frc] on aks01: aks01 also publishes in the frc zone, pointing at its
// own gateway; weu and neu are unchanged. Removing the adoption removes the frc record.
func testAdoptedRegion(ctx context.Context, t *testing.T, w *world, a app) {
	unchanged := []zoneCheck{
		{zone: "weu", name: a.hostname, want: w.aks01.chain()},
		{zone: "neu", name: a.hostname, want: w.aks02.chain()},
	}
	at := setAdoptedRegions(ctx, t, w.aks01, "frc")
	w.await(ctx, t, "ActiveAdoptsFRC", "adopt frc", at, []zoneCheck{
		{zone: "frc", name: a.hostname, want: w.aks01.chain(), allowed: []framework.Expect{framework.NXDomain()}},
	})
	assertPolicy(ctx, t, w.aks01, a, true, "external-dns-weu", "external-dns-frc")
	assertRoute(ctx, t, w.aks01, a, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded, "external-dns-weu", "external-dns-frc")
	w.assertStable(ctx, t, "ActiveAdoptsFRC", append(unchanged, zoneCheck{zone: "frc", name: a.hostname, want: w.aks01.chain()}))
	w.assertZone(ctx, t, "frc", append(w.baseline("frc"), w.cnameLines("frc", w.aks01, a.hostname)...))

	at = setAdoptedRegions(ctx, t, w.aks01)
	w.await(ctx, t, "ActiveAdoptsFRC", "unadopt frc", at, []zoneCheck{
		{zone: "frc", name: a.hostname, want: framework.NXDomain(), allowed: []framework.Expect{w.aks01.chain()}},
	})
	assertPolicy(ctx, t, w.aks01, a, true, "external-dns-weu")
	w.assertStable(ctx, t, "ActiveAdoptsFRC (undone)", append(unchanged, zoneCheck{zone: "frc", name: a.hostname, want: framework.NXDomain()}))
	w.assertZone(ctx, t, "frc", w.baseline("frc"))
}

func setAdoptedRegions(ctx context.Context, t *testing.T, m *member, regions ...string) time.Time {
	t.Helper()
	id := &clusterv1alpha1.ClusterIdentity{}
	if err := m.cl.Client.Get(ctx, client.ObjectKey{Name: "cluster-identity"}, id); err != nil {
		t.Fatal(err)
	}
	orig := id.DeepCopy()
	id.Spec.AdoptsRegions = regions
	at := time.Now()
	if err := m.cl.Client.Patch(ctx, id, client.MergeFrom(orig)); err != nil {
		t.Fatalf("cluster %s: setting adoptsRegions %v: %v", m, regions, err)
	}
	return at
}

// RegionBound with sourceRegion weu, applied to both clusters from the start: aks01 publishes in
// all three zones, aks02's policy is inactive and it never writes the name anywhere.
func testRegionBound(ctx context.Context, t *testing.T, w *world, a app) {
	logs := map[string]string{}
	for _, r := range worldRegions {
		logs[r] = w.zones[r].Log()
	}
	at := w.deploy(ctx, t, a, regionBoundSpec)
	var checks []zoneCheck
	for _, r := range worldRegions {
		checks = append(checks, zoneCheck{zone: r, name: a.hostname, want: w.aks01.chain(), allowed: []framework.Expect{framework.NXDomain()}})
	}
	w.await(ctx, t, "RegionBound", "create", at, checks)
	assertPolicy(ctx, t, w.aks01, a, true, "external-dns-weu", "external-dns-neu", "external-dns-frc")
	assertPolicy(ctx, t, w.aks02, a, false)
	assertRoute(ctx, t, w.aks01, a, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded, "external-dns-weu", "external-dns-neu", "external-dns-frc")
	assertRoute(ctx, t, w.aks02, a, routingv1alpha1.PhasePending, routingv1alpha1.ReasonDNSPolicyInactive)

	w.assertStable(ctx, t, "RegionBound", checks)
	for _, r := range worldRegions {
		// named logs every update: aks02's target was never written for this name.
		if log := w.zones[r].Log()[len(logs[r]):]; containsUpdate(log, a.hostname, w.aks02.target) {
			t.Errorf("zone %s: %s was published pointing at %s, whose policy is inactive", r, a.hostname, w.aks02.target)
		}
		recs := framework.LogZone(ctx, t, "RegionBound", w.zones[r])
		assertOwnerTXT(t, recs, w.aks01, r, a.hostname, true)
		assertOwnerTXT(t, recs, w.aks02, r, a.hostname, false)
	}
}

// assertOwnerTXT checks that the zone of region holds, or does not hold, m's ownership TXT record
// of the CNAME hostname.
func assertOwnerTXT(t *testing.T, recs []framework.Record, m *member, region, hostname string, present bool) {
	t.Helper()
	name := m.txtPrefix(region) + "cname-" + hostname + "."
	if got := framework.HasRecord(recs, name, "TXT", "external-dns/owner="+m.owner(region)+","); got != present {
		t.Errorf("zone %s: ownership TXT %s with owner %s present = %t, want %t", region, name, m.owner(region), got, present)
	}
}

// containsUpdate reports whether a named log holds an update adding a record at name with data.
func containsUpdate(log, name, data string) bool {
	return slices.ContainsFunc(strings.Split(log, "\n"), func(line string) bool {
		return strings.Contains(line, "adding an RR at '"+name+"'") && strings.Contains(line, data)
	})
}

// Switching myapp from Active to RegionBound(weu) and back. Both clusters get the change (aks01
// first, then aks02, as a rollout would).
//
// To RegionBound: weu keeps aks01's record; frc gets aks01's; in neu, aks02's policy turns
// inactive, the operator deletes its DNSEndpoint, aks02's external-dns-neu deletes its CNAME, and
// only then can aks01's external-dns-neu create its own: its TXT prefix differs, so it never sees
// aks02's ownership record, treats the record as foreign and waits. The neu zone goes
// aks02 -> (NXDOMAIN for up to one synchronization) -> aks01, with no takeover and no flapping.
//
// Back to Active: the reverse hand-over in neu (aks01's external-dns-neu deletes, aks02's
// creates), and frc loses the record.
func testSwitchModes(ctx context.Context, t *testing.T, w *world, a app) {
	nx := framework.NXDomain()
	at := w.setPolicy(ctx, t, a, regionBoundSpec)
	w.await(ctx, t, "Switch Active->RegionBound(weu)", "patch policy", at, []zoneCheck{
		{zone: "weu", name: a.hostname, want: w.aks01.chain(), allowed: []framework.Expect{}},
		{zone: "neu", name: a.hostname, want: w.aks01.chain(), allowed: []framework.Expect{w.aks02.chain(), nx}},
		{zone: "frc", name: a.hostname, want: w.aks01.chain(), allowed: []framework.Expect{nx}},
	})
	assertPolicy(ctx, t, w.aks01, a, true, "external-dns-weu", "external-dns-neu", "external-dns-frc")
	assertPolicy(ctx, t, w.aks02, a, false)
	assertRoute(ctx, t, w.aks02, a, routingv1alpha1.PhasePending, routingv1alpha1.ReasonDNSPolicyInactive)
	assertRoute(ctx, t, w.aks01, a, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded, "external-dns-weu", "external-dns-neu", "external-dns-frc")
	var all []zoneCheck
	for _, r := range worldRegions {
		all = append(all, zoneCheck{zone: r, name: a.hostname, want: w.aks01.chain()})
	}
	w.assertStable(ctx, t, "Switch Active->RegionBound(weu)", all)
	// aks02's ownership record went with its CNAME; aks01's took its place.
	recs := framework.LogZone(ctx, t, "after the switch to RegionBound", w.zones["neu"])
	assertOwnerTXT(t, recs, w.aks02, "neu", a.hostname, false)
	assertOwnerTXT(t, recs, w.aks01, "neu", a.hostname, true)
	if log := w.aks01.eds["neu"].Log(); !strings.Contains(log, "Skipping endpoint "+a.hostname) {
		t.Logf("aks01's external-dns-neu never had to wait for aks02's record to go (aks02 deleted it before aks01 tried)")
	} else {
		t.Logf("aks01's external-dns-neu waited while aks02's record existed: %q", firstLineWith(log, "Skipping endpoint "+a.hostname))
	}

	at = w.setPolicy(ctx, t, a, activeSpec)
	w.await(ctx, t, "Switch RegionBound(weu)->Active", "patch policy", at, []zoneCheck{
		{zone: "weu", name: a.hostname, want: w.aks01.chain(), allowed: []framework.Expect{}},
		{zone: "neu", name: a.hostname, want: w.aks02.chain(), allowed: []framework.Expect{w.aks01.chain(), nx}},
		{zone: "frc", name: a.hostname, want: nx, allowed: []framework.Expect{w.aks01.chain()}},
	})
	assertPolicy(ctx, t, w.aks01, a, true, "external-dns-weu")
	assertPolicy(ctx, t, w.aks02, a, true, "external-dns-neu")
	w.assertStable(ctx, t, "Switch RegionBound(weu)->Active", []zoneCheck{
		{zone: "weu", name: a.hostname, want: w.aks01.chain()},
		{zone: "neu", name: a.hostname, want: w.aks02.chain()},
		{zone: "frc", name: a.hostname, want: nx},
	})
}

// Deleting a ServiceRoute: the garbage collector removes its DNSEndpoints, and every ExternalDNS
// that published them deletes the records and their ownership TXT. Afterwards every zone is
// exactly as before any route existed: only the gateways' address records remain.
func testDeleteRoutes(ctx context.Context, t *testing.T, w *world, myapp, central app) {
	nx := framework.NXDomain()
	// central is RegionBound: published by aks01 in all three zones.
	at := remove(ctx, t, w.aks01.cl.Client, central.serviceRoute())
	var checks []zoneCheck
	for _, r := range worldRegions {
		checks = append(checks, zoneCheck{zone: r, name: central.hostname, want: nx, allowed: []framework.Expect{w.aks01.chain()}})
	}
	w.await(ctx, t, "Delete RegionBound route (aks01)", "delete", at, checks)

	// myapp is Active: aks01's record in weu, aks02's in neu.
	at = remove(ctx, t, w.aks01.cl.Client, myapp.serviceRoute())
	remove(ctx, t, w.aks02.cl.Client, myapp.serviceRoute())
	w.await(ctx, t, "Delete Active route (both)", "delete", at, []zoneCheck{
		{zone: "weu", name: myapp.hostname, want: nx, allowed: []framework.Expect{w.aks01.chain()}},
		{zone: "neu", name: myapp.hostname, want: nx, allowed: []framework.Expect{w.aks02.chain()}},
	})
	for _, r := range worldRegions {
		w.assertZone(ctx, t, r, w.baseline(r))
	}
	// The inactive copy of central in aks02 still exists and publishes nothing.
	assertRoute(ctx, t, w.aks02, central, routingv1alpha1.PhasePending, routingv1alpha1.ReasonDNSPolicyInactive)
	w.waitAllSynced(ctx, t, time.Now())
	for _, r := range worldRegions {
		w.assertZone(ctx, t, r, w.baseline(r))
	}
}
