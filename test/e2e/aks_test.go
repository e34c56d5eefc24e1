//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The AKS world: one cluster, aks01 in weu, and the three regional Azure Private DNS zones of the
// architecture (one zone of the same name per region, each in its own resource group) served by
// the Azure stand-in (test/azurestandin: Azure Resource Manager's Private DNS operations over TLS
// on 127.0.0.1, with its token endpoint). One real ExternalDNS per zone runs with
// --provider=azure-private-dns and exactly the arguments ExternalDNS's chart renders from
// docs/examples/external-dns/<region>-values.yaml (only --azure-config-file names a local
// azure.json instead of the Secret the chart mounts). The operator verifies every zone with
// verification.azurePrivateDNS, reading each zone through Resource Manager with its own azure.json,
// as an AKS cluster must: from weu, only the weu zone could ever be resolved.
type aksWorld struct {
	az     *framework.AzurePrivateDNS
	cl     *framework.Cluster
	op     *framework.Operator
	eds    map[string]*framework.ExternalDNS
	args   map[string][]string
	groups map[string]string // the resource group of each region's zone

	subscription, domain, envLetter string
	target                          string // aks01-weu-internal.<domain>
	lbIP                            string
}

const (
	aksCluster = "aks01"
	aksRegion  = "weu"
	aksLBIP    = "10.1.2.3"
	// throttledAnswer is what a zone's status says while Resource Manager refuses its reads.
	throttledAnswer = "no answer from Azure Resource Manager (Throttled: Retry-After 2s)"
)

// aksApp is an application of the AKS world: its DNSPolicy mode decides which zones it is
// published into.
type aksApp struct {
	namespace, route, service, hostname string
	spec                                routingv1alpha1.DNSPolicySpec
}

// short is a name relative to the zone, as Resource Manager names record sets.
func (w *aksWorld) short(name string) string { return strings.TrimSuffix(name, "."+w.domain) }

// TestAKS proves the azurePrivateDNS verification mode (issue 23) with the real ExternalDNS
// writing through Resource Manager:
//
//   - routes publish into the three regional zones in both policy modes (Active: the cluster's
//     own zone; RegionBound with sourceRegion weu: all three), and each route's status says
//     Published per zone, read through Resource Manager;
//   - a restart of every ExternalDNS keeps every record (no write, no deletion);
//   - a record set edited behind ExternalDNS's back makes its zone Drifted, a deleted one Pending;
//   - sustained 429s make every zone Unreachable, with the Retry-After in the status;
//   - when Resource Manager answers again and ExternalDNS runs, every zone is Published again.
func TestAKS(t *testing.T) {
	ctx := t.Context()
	w := startAKSWorld(ctx, t)
	active := w.app("shop", "cart-route", "cart", activeSpec)
	bound := w.app("central", "api-route", "api", regionBoundSpec)

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"RoutesPublishInBothPolicyModes", func(t *testing.T) { w.testPublish(ctx, t, active, bound) }},
		{"ExternalDNSRestartKeepsEveryRecord", func(t *testing.T) { w.testRestart(ctx, t, active, bound) }},
		{"EditedBehindExternalDNSsBackIsDrifted", func(t *testing.T) { w.testDrifted(ctx, t, bound) }},
		{"DeletedIsPending", func(t *testing.T) { w.testPending(ctx, t, active) }},
		{"SustainedThrottlingIsUnreachable", func(t *testing.T) { w.testThrottled(ctx, t, active, bound) }},
		{"BackToPublished", func(t *testing.T) { w.testBack(ctx, t, active, bound) }},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			t.Fatalf("%s failed; the later steps depend on its end state and are not run", s.name)
		}
	}
}

func startAKSWorld(ctx context.Context, t *testing.T) *aksWorld {
	t.Helper()
	start := time.Now()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	w := &aksWorld{eds: map[string]*framework.ExternalDNS{}, args: map[string][]string{}, groups: map[string]string{}, lbIP: aksLBIP}
	if w.az, err = framework.StartAzurePrivateDNS(t); err != nil {
		t.Fatal(err)
	}
	for _, r := range worldRegions {
		release := framework.RegionalControllerName(r)
		example, err := framework.RenderExternalDNSExample(ctx, filepath.Join(root, "docs", "examples", "external-dns", r+"-values.yaml"), release, aksCluster)
		if err != nil {
			t.Fatal(err)
		}
		if p := example.Flag("provider"); p != "azure-private-dns" {
			t.Fatalf("%s: --provider=%s, want azure-private-dns", example.ValuesFile, p)
		}
		w.subscription, w.domain = example.Flag("azure-subscription-id"), example.Flag("domain-filter")
		w.groups[r] = example.Flag("azure-resource-group")
		w.envLetter = strings.TrimSuffix(strings.TrimPrefix(example.Flag("txt-prefix"), r+"-"), "-")
		if w.subscription == "" || w.groups[r] == "" || w.domain == "" || len(w.envLetter) != 1 {
			t.Fatalf("%s: want --azure-subscription-id, --azure-resource-group, --domain-filter and --txt-prefix=%s-<letter>-: %q", example.ValuesFile, r, example.ChartArgs)
		}
		w.az.CreateZone(w.subscription, w.groups[r], w.domain)
		file, err := w.az.AzureJSON(w.subscription, w.groups[r])
		if err != nil {
			t.Fatal(err)
		}
		w.args[r] = example.AzureLocalArgs(file)
		t.Logf("%s rendered by the ExternalDNS chart, run as: %s", filepath.Base(example.ValuesFile), strings.Join(w.args[r], " "))
	}
	w.target = aksCluster + "-" + aksRegion + "-internal." + w.domain
	// The operator's own azure.json (a Secret mounted into its Pod in a cluster): the same
	// service principal; Reader on the zones would be enough.
	operatorConfig, err := w.az.AzureJSON(w.subscription, "operator")
	if err != nil {
		t.Fatal(err)
	}

	if w.cl, err = framework.StartCluster(ctx, t, framework.ClusterOptions{Name: aksCluster + "-" + aksRegion}); err != nil {
		t.Fatal(err)
	}
	w.configure(ctx, t, operatorConfig)
	// Settled records are checked every second instead of every 5 minutes and each zone is
	// listed at most once a second, so that what a zone holds shows in status within seconds.
	if w.op, err = w.cl.StartOperator(ctx, t, framework.OperatorOptions{ExtraArgs: []string{
		"--verification-fast-interval=200ms", "--verification-settled-interval=1s",
	}}); err != nil {
		t.Fatal(err)
	}
	t.Logf("AKS world ready in %s: Azure stand-in at %s", time.Since(start).Round(time.Millisecond), w.az.URL)
	return w
}

// configure creates the platform team's objects: ClusterIdentity, the DNSConfiguration of the
// three regional controllers, each verified through Resource Manager, the internal Gateway and its
// ingress Service.
func (w *aksWorld) configure(ctx context.Context, t *testing.T, operatorConfig string) {
	t.Helper()
	var controllers []clusterv1alpha1.ExternalDNSController
	for _, r := range worldRegions {
		controllers = append(controllers, clusterv1alpha1.ExternalDNSController{
			Name: framework.RegionalControllerName(r), Region: r,
			Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &clusterv1alpha1.AzurePrivateDNSVerification{
				SubscriptionID: w.subscription, ResourceGroup: w.groups[r], ZoneName: w.domain, ConfigFile: operatorConfig,
				Interval: &metav1.Duration{Duration: time.Second}, Timeout: &metav1.Duration{Duration: 5 * time.Second},
			}},
		})
	}
	configureAKSPlatform(ctx, t, w.cl.Client, clusterv1alpha1.ClusterIdentitySpec{Region: aksRegion, Cluster: aksCluster, Domain: w.domain, EnvironmentLetter: w.envLetter},
		controllers, w.lbIP)
}

func (w *aksWorld) app(namespace, route, service string, spec routingv1alpha1.DNSPolicySpec) aksApp {
	return aksApp{namespace: namespace, route: route, service: service, spec: spec,
		hostname: fmt.Sprintf("%s-ns-%s-dev-%s.%s", service, w.envLetter, namespace, w.domain)}
}

func (a aksApp) serviceRoute() *routingv1alpha1.ServiceRoute {
	return &routingv1alpha1.ServiceRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: a.route},
		Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: a.service, GatewayName: gatewayName, GatewayNamespace: gatewayNamespace,
			Environment: "dev", Application: a.namespace},
	}
}

// regions are the zones an application is published into.
func (a aksApp) regions() []string {
	if a.spec.Mode == routingv1alpha1.DNSPolicyModeRegionBound {
		return worldRegions
	}
	return []string{aksRegion}
}

// states is what the route's status must say, the same state in each of its zones.
func (a aksApp) states(s routingv1alpha1.ZoneState) map[string]routingv1alpha1.ZoneState {
	out := map[string]routingv1alpha1.ZoneState{}
	for _, r := range a.regions() {
		out[framework.RegionalControllerName(r)] = s
	}
	return out
}

func allZones(s routingv1alpha1.ZoneState) map[string]routingv1alpha1.ZoneState {
	out := map[string]routingv1alpha1.ZoneState{}
	for _, r := range worldRegions {
		out[framework.RegionalControllerName(r)] = s
	}
	return out
}

func (w *aksWorld) diag() []func() string {
	out := []func() string{w.op.Diagnostics, w.az.Diagnostics}
	for _, r := range worldRegions {
		if ed := w.eds[r]; ed != nil {
			out = append(out, ed.Diagnostics)
		}
	}
	return out
}

func (w *aksWorld) startExternalDNS(ctx context.Context, t *testing.T, region string) {
	t.Helper()
	ed, err := w.cl.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: framework.RegionalControllerName(region), Args: w.args[region]})
	if err != nil {
		t.Fatalf("%v\n%s", err, w.az.Diagnostics())
	}
	w.eds[region] = ed
}

func (w *aksWorld) stopExternalDNS(t *testing.T, region string) {
	t.Helper()
	if err := w.eds[region].Stop(); err != nil {
		t.Fatal(err)
	}
	w.eds[region] = nil
}

// zones is every zone's A, CNAME and TXT record sets, by region.
func (w *aksWorld) zones() map[string]map[string][]string {
	out := map[string]map[string][]string{}
	for _, r := range worldRegions {
		out[r] = w.az.Records(w.subscription, w.groups[r], w.domain)
	}
	return out
}

// testPublish creates an Active and a RegionBound application, then starts ExternalDNS (its
// example's interval is a minute: started after the DNSEndpoints exist, its first
// synchronization publishes them); the zones hold what each mode asks for and the routes'
// status says Published in each of their zones.
func (w *aksWorld) testPublish(ctx context.Context, t *testing.T, apps ...aksApp) {
	c := w.cl.Client
	for _, a := range apps {
		if err := framework.EnsureNamespace(ctx, c, a.namespace); err != nil {
			t.Fatal(err)
		}
		create(ctx, t, c, &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: a.namespace + "-dns"}, Spec: a.spec})
		create(ctx, t, c, a.serviceRoute())
	}
	want := map[string][]string{}
	for _, r := range worldRegions {
		want[framework.RegionalControllerName(r)] = []string{w.target + " A"}
	}
	for _, a := range apps {
		for _, r := range a.regions() {
			want[framework.RegionalControllerName(r)] = append(want[framework.RegionalControllerName(r)], a.hostname+" CNAME")
		}
	}
	waitDNSEndpoints(ctx, t, c, want, w.op.Diagnostics)
	started := time.Now()
	eds := make([]*framework.ExternalDNS, len(worldRegions))
	var starts []func() error
	for i, r := range worldRegions {
		starts = append(starts, func() error {
			var err error
			eds[i], err = w.cl.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: framework.RegionalControllerName(r), Args: w.args[r]})
			return err
		})
	}
	if err := parallel(starts...); err != nil {
		t.Fatalf("%v\n%s", err, w.az.Diagnostics())
	}
	for i, r := range worldRegions {
		w.eds[r] = eds[i]
	}
	for _, a := range apps {
		v := waitZoneStates(ctx, t, c, a.serviceRoute(), a.states(routingv1alpha1.ZonePublished), w.diag()...)
		for _, z := range v.zones {
			if want := "CNAME " + w.target + ". → A " + w.lbIP; z.Answer != want {
				t.Errorf("route %s, zone %s: answer %q, want %q", a.route, z.Controller, z.Answer, want)
			}
		}
		t.Logf("route %s (%s): %s, %s after ExternalDNS started", a.route, a.spec.Mode, v, time.Since(started).Round(10*time.Millisecond))
	}
	gw := waitZoneStates(ctx, t, c, &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: gatewayName}},
		allZones(routingv1alpha1.ZonePublished), w.diag()...)
	t.Logf("gateway %s: %s", gatewayName, gw)

	zones := w.zones()
	for _, r := range worldRegions {
		prefix := r + "-" + w.envLetter + "-"
		owner := "external-dns-" + r + "-" + aksCluster
		if got := zones[r][w.short(w.target)+" A"]; !slices.Equal(got, []string{w.lbIP}) {
			t.Errorf("zone %s: %s A %v, want %s", r, w.short(w.target), got, w.lbIP)
		}
		for _, a := range apps {
			published := slices.Contains(a.regions(), r)
			got, ok := zones[r][w.short(a.hostname)+" CNAME"]
			if ok != published || (published && !slices.Equal(got, []string{w.target})) {
				t.Errorf("zone %s: %s CNAME %v (present %t), want present %t pointing at %s", r, w.short(a.hostname), got, ok, published, w.target)
			}
			txt := zones[r][prefix+"cname-"+w.short(a.hostname)+" TXT"]
			if published && (len(txt) != 1 || !strings.Contains(txt[0], "external-dns/owner="+owner)) {
				t.Errorf("zone %s: ownership TXT %scname-%s = %v, want owner %s", r, prefix, w.short(a.hostname), txt, owner)
			}
		}
		t.Logf("zone %s (%s/%s) holds %d record sets: %v", r, w.groups[r], w.domain, len(zones[r]), slices.Sorted(maps.Keys(zones[r])))
	}
}

// testRestart stops and starts every ExternalDNS: their first synchronizations leave every record
// set as it is, and write or delete nothing.
func (w *aksWorld) testRestart(ctx context.Context, t *testing.T, apps ...aksApp) {
	before := w.zones()
	puts, deletes := w.az.Count("putRecordSet"), w.az.Count("deleteRecordSet")
	for _, r := range worldRegions {
		w.stopExternalDNS(t, r)
		// Returns after its first successful synchronization: the one that, without the
		// example's --label-filter, deleted every record the instance owned with ExternalDNS
		// v0.22.0 (TestExternalDNSExample_RestartKeepsTheZone). The example's next one comes a minute
		// later; waiting for it would prove nothing more.
		w.startExternalDNS(ctx, t, r)
	}
	if after := w.zones(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the zones changed across the restarts:\nbefore %v\nafter  %v", before, after)
	}
	if p, d := w.az.Count("putRecordSet")-puts, w.az.Count("deleteRecordSet")-deletes; p != 0 || d != 0 {
		t.Errorf("ExternalDNS wrote %d and deleted %d record sets while restarting", p, d)
	}
	for _, a := range apps {
		waitZoneStates(ctx, t, w.cl.Client, a.serviceRoute(), a.states(routingv1alpha1.ZonePublished), w.diag()...)
	}
	t.Logf("every ExternalDNS restarted: the three zones hold their record sets, none written or deleted")
}

// testDrifted stops weu's ExternalDNS (so that it does not repair the zone meanwhile) and points
// the RegionBound route's CNAME in the weu zone at another cluster, as someone editing the zone in
// the portal would: its weu zone turns Drifted, naming the CNAME found; the other zones stay
// Published.
func (w *aksWorld) testDrifted(ctx context.Context, t *testing.T, a aksApp) {
	w.stopExternalDNS(t, "weu")
	other := "aks02-neu-internal." + w.domain
	edited := time.Now()
	if err := w.az.SetCNAME(w.subscription, w.groups["weu"], w.domain, w.short(a.hostname), other); err != nil {
		t.Fatal(err)
	}
	want := a.states(routingv1alpha1.ZonePublished)
	want["external-dns-weu"] = routingv1alpha1.ZoneDrifted
	v := waitZoneStates(ctx, t, w.cl.Client, a.serviceRoute(), want, w.diag()...)
	for _, z := range v.zones {
		if z.Controller == "external-dns-weu" && !strings.HasPrefix(z.Answer, "CNAME "+other+".") {
			t.Errorf("zone weu: Drifted answer %q does not name the CNAME found, %s", z.Answer, other)
		}
	}
	t.Logf("route %s %s after the edit: %s", a.route, time.Since(edited).Round(10*time.Millisecond), v)
}

// testPending deletes the Active route's CNAME from the weu zone: the zone is Pending (the name
// is missing), not Drifted.
func (w *aksWorld) testPending(ctx context.Context, t *testing.T, a aksApp) {
	deleted := time.Now()
	if err := w.az.Delete(w.subscription, w.groups["weu"], w.domain, w.short(a.hostname), "CNAME"); err != nil {
		t.Fatal(err)
	}
	v := waitZoneStates(ctx, t, w.cl.Client, a.serviceRoute(), a.states(routingv1alpha1.ZonePending), w.diag()...)
	if len(v.zones) != 1 || v.zones[0].Answer != "NXDOMAIN" {
		t.Errorf("route %s: %s, want Pending with NXDOMAIN", a.route, v)
	}
	t.Logf("route %s %s after the deletion: %s", a.route, time.Since(deleted).Round(10*time.Millisecond), v)
}

// testThrottled makes Resource Manager refuse every read with 429 and Retry-After 2s: every zone
// of every route and of the gateway turns Unreachable, the status naming the throttling, and
// nothing is removed meanwhile.
func (w *aksWorld) testThrottled(ctx context.Context, t *testing.T, apps ...aksApp) {
	before := w.zones()
	w.az.ThrottleReads(2 * time.Second)
	throttled := time.Now()
	for _, a := range apps {
		v := waitZoneStates(ctx, t, w.cl.Client, a.serviceRoute(), a.states(routingv1alpha1.ZoneUnreachable), w.diag()...)
		for _, z := range v.zones {
			// The CNAME's own check, or that of the target's address records it leads to
			// ("CNAME … → no answer from …"), whichever failed three times in a row first.
			if !strings.HasSuffix(z.Answer, throttledAnswer) {
				t.Errorf("route %s, zone %s: Unreachable answer %q, want it to end with %q", a.route, z.Controller, z.Answer, throttledAnswer)
			}
		}
		t.Logf("route %s %s after the throttling began: %s", a.route, time.Since(throttled).Round(10*time.Millisecond), v)
	}
	waitZoneStates(ctx, t, w.cl.Client, &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: gatewayName}},
		allZones(routingv1alpha1.ZoneUnreachable), w.diag()...)
	if after := w.zones(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the zones changed while Resource Manager refused reads:\nbefore %v\nafter  %v", before, after)
	}
	t.Logf("%d requests refused with 429 in %s (the operator's three zone readers and two ExternalDNS)", w.az.Count("throttled"), time.Since(throttled).Round(time.Second))
}

// testBack ends the throttling and starts weu's ExternalDNS again: it repairs the edited CNAME
// and recreates the deleted one on its first synchronization, and every zone is Published.
func (w *aksWorld) testBack(ctx context.Context, t *testing.T, apps ...aksApp) {
	w.az.Unthrottle()
	w.startExternalDNS(ctx, t, "weu")
	for _, a := range apps {
		v := waitZoneStates(ctx, t, w.cl.Client, a.serviceRoute(), a.states(routingv1alpha1.ZonePublished), w.diag()...)
		t.Logf("route %s: %s", a.route, v)
	}
	waitZoneStates(ctx, t, w.cl.Client, &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: gatewayName}},
		allZones(routingv1alpha1.ZonePublished), w.diag()...)
	zones := w.zones()
	for _, a := range apps {
		for _, r := range a.regions() {
			if got := zones[r][w.short(a.hostname)+" CNAME"]; !slices.Equal(got, []string{w.target}) {
				t.Errorf("zone %s: %s CNAME %v, want %s", r, w.short(a.hostname), got, w.target)
			}
		}
	}
}
