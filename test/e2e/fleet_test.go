//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/budget"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/azurestandin"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The fleet world: clusters aks01, aks02, … (regions r0, r1, … in turn), each a real operator
// process against a control plane of its own (the framework's: etcd and kube-apiserver, no
// kubelet), each authenticating to the Azure stand-in as a service principal of its own (its
// azure.json), all in one subscription. Every cluster takes part in failover in every one of the
// regional Azure Private DNS zones (one per region, in its resource group rg-dns-<region>, all
// named after the domain, as the architecture has them), verified through Resource Manager with the
// documented defaults (no interval, page size or timeout set; the operator's verification flags
// left alone) and failover's defaults but the probe port. Each zone holds names as ExternalDNS's
// TXT registry leaves them (a CNAME and its ownership TXT record set per name) and every cluster's
// gateway address, written into the stand-in directly: the seeding costs no request. Every
// cluster's gateway is a TCP listener on its load balancer address that answers the others'
// probes, so that no region is ever suspect: the fleet is at rest.
//
// The stand-in enforces Resource Manager's limits and counts what it admits and refuses per
// principal (Usage); the operators count their own requests per zone
// (service_router_azure_requests_total, scraped from --metrics-secure=false endpoints).

// fleetOptions size a fleet.
type fleetOptions struct {
	clusters, zones, names int
	// externalDNS runs the real ExternalDNS (azure-private-dns, the ExternalDNS chart's arguments
	// for docs/examples/external-dns/weu-values.yaml) for the first zone of the first cluster, as a
	// principal of its own, at the interval the operator guide recommends for the fleet's size
	// (fleet.edInterval: the example's 1 minute lists a zone of 3,000 names 61 times a run, and two
	// clusters' instances at that interval with their operators cross the zone's 100 lists a
	// minute); every other cluster-zone's ExternalDNS is modelled from its counts, not run.
	// Without it, that cluster's gateway address is seeded into that zone as well.
	externalDNS bool
}

// fleetMember is one cluster of the fleet.
type fleetMember struct {
	cluster, region, lbIP, principal string
	cl                               *framework.Cluster
	op                               *framework.Operator
	metricsPort                      int
	// gateway is the listener on lbIP that answers the others' probes.
	gateway net.Listener
	// started is the time just before the operator process started: its first whole reading of
	// each zone, and its first verification listing, came after it.
	started time.Time
}

// fleet is a running fleet world.
type fleet struct {
	tb                     testing.TB
	opts                   fleetOptions
	az                     *framework.AzurePrivateDNS
	sub, domain, envLetter string
	regions                []string
	members                []*fleetMember
	// port is where every gateway listens and every cluster probes.
	port int
	// example is the ExternalDNS chart's rendering of the weu example; ed the real ExternalDNS run
	// from it, edPrincipal its principal.
	example     *framework.ExternalDNSExample
	ed          *framework.ExternalDNS
	edPrincipal string
	// edEvery is the real ExternalDNS's --interval.
	edEvery time.Duration
}

// fleetGroup is the resource group of region's zone.
func fleetGroup(region string) string { return "rg-dns-" + region }

// fleetOwner is the ExternalDNS owner ID of cluster's instance for region's zone.
func fleetOwner(region, cluster string) string { return "external-dns-" + region + "-" + cluster }

func (f *fleet) prefix(region string) string { return region + "-" + f.envLetter + "-" }

func (f *fleet) target(m *fleetMember) string {
	return naming.TargetHostname(m.cluster, m.region, "internal", f.domain)
}

// realZone says whether m's gateway in region's zone is ExternalDNS's to write (the one instance
// run for real), not the seeding's.
func (f *fleet) realZone(m *fleetMember, region string) bool {
	return f.opts.externalDNS && m == f.members[0] && region == f.regions[0]
}

// startFleet starts the fleet: the stand-in and its zones, seeded; the clusters side by side; on
// each the platform team's objects and the operator; then the real ExternalDNS, if asked for.
func startFleet(tb testing.TB, opts fleetOptions) *fleet {
	tb.Helper()
	ctx := tb.Context()
	began := time.Now()
	if opts.clusters < 2 {
		tb.Fatalf("a fleet needs two clusters at least, got %d", opts.clusters)
	}
	f := &fleet{tb: tb, opts: opts}
	var err error
	if f.az, err = framework.StartAzurePrivateDNS(tb); err != nil {
		tb.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	binary, err := framework.ManagerBinary()
	if err != nil {
		tb.Fatal(err)
	}
	for i := range opts.zones {
		f.regions = append(f.regions, fmt.Sprintf("r%d", i))
	}
	var addrs []string
	for i := range opts.clusters {
		m := &fleetMember{cluster: fmt.Sprintf("aks%02d", i+1), region: f.regions[i%len(f.regions)], lbIP: fmt.Sprintf("127.0.3.%d", i+1),
			principal: fmt.Sprintf("f1ee7000-0000-4000-8000-%012d", i+1)}
		f.az.AddServicePrincipal(m.principal, "secret-"+m.cluster)
		f.members = append(f.members, m)
		addrs = append(addrs, m.lbIP)
	}
	var listeners []net.Listener
	f.port, listeners = listenOnOnePort(tb, nil, addrs...)
	serveGateway(tb, listeners...)
	for i, m := range f.members {
		m.gateway = listeners[i]
	}
	// The zones, with the subscription, the domain and the environment letter of the documented
	// example, are made and seeded while the control planes start.
	starts := []func() error{func() error {
		var err error
		f.example, err = framework.RenderExternalDNSExample(ctx, filepath.Join(root, "docs", "examples", "external-dns", "weu-values.yaml"),
			framework.RegionalControllerName(f.regions[0]), f.members[0].cluster)
		if err != nil {
			return err
		}
		f.sub, f.domain = f.example.Flag("azure-subscription-id"), f.example.Flag("domain-filter")
		f.envLetter = strings.TrimSuffix(strings.TrimPrefix(f.example.Flag("txt-prefix"), "weu-"), "-")
		for _, r := range f.regions {
			f.az.CreateZone(f.sub, fleetGroup(r), f.domain)
		}
		return f.seed()
	}}
	for _, m := range f.members {
		starts = append(starts, func() error {
			var err error
			m.cl, err = framework.StartCluster(ctx, tb, framework.ClusterOptions{Name: m.cluster + "-" + m.region})
			return err
		})
	}
	if err := parallel(starts...); err != nil {
		tb.Fatal(err)
	}
	planes := time.Since(began)
	starts = nil
	for _, m := range f.members {
		starts = append(starts, func() error { return f.startMember(ctx, m) })
	}
	if err := parallel(starts...); err != nil {
		tb.Fatalf("%v%s", err, f.diagnostics())
	}
	if opts.externalDNS {
		f.startExternalDNS(ctx)
	}
	tb.Logf("fleet of %d clusters, %d zones of %d names each, started in %s (control planes and zones %s): each cluster its own etcd and kube-apiserver (the e2e framework's control plane) and operator process (%s), its own service principal; one subscription; Azure stand-in at %s",
		opts.clusters, opts.zones, opts.names, time.Since(began).Round(time.Second), planes.Round(time.Second), binary, f.az.URL)
	return f
}

// seed writes every zone's names and every cluster's gateway address, as ExternalDNS would have:
// each name a CNAME to one of the clusters' gateways, owned by that cluster's instance for the
// zone (never by the instance run for real, whose synchronization would delete what no
// DNSEndpoint of its cluster asks for).
func (f *fleet) seed() error {
	for _, r := range f.regions {
		records := make([]framework.RegistryRecord, 0, f.opts.names+len(f.members))
		for i := range f.opts.names {
			m := f.members[i%len(f.members)]
			if f.realZone(m, r) {
				m = f.members[1]
			}
			team := fmt.Sprintf("team%02d", i%50)
			records = append(records, framework.RegistryRecord{Name: fmt.Sprintf("app%04d-ns-%s-dev-%s", i, f.envLetter, team), Type: "CNAME",
				Value: f.target(m), Owner: fleetOwner(r, m.cluster), Resource: fmt.Sprintf("crd/%s/app%04d-route-%s", team, i, framework.RegionalControllerName(r))})
		}
		for _, m := range f.members {
			if f.realZone(m, r) {
				continue
			}
			records = append(records, framework.RegistryRecord{Name: strings.TrimSuffix(f.target(m), "."+f.domain), Type: "A", Value: m.lbIP,
				Owner: fleetOwner(r, m.cluster), Resource: fmt.Sprintf("crd/%s/%s-%s", gatewayNamespace, gatewayName, framework.RegionalControllerName(r))})
		}
		if err := f.az.SeedRegistry(f.sub, fleetGroup(r), f.domain, f.prefix(r), records); err != nil {
			return err
		}
	}
	return nil
}

// startMember creates m's platform objects (the failover world's, with one controller per zone,
// each verified through Resource Manager as m's principal and taking part in failover) and starts
// its operator, its metrics served on 127.0.0.1 without authentication.
func (f *fleet) startMember(ctx context.Context, m *fleetMember) error {
	file, err := f.az.AzureJSONAs(f.sub, "operator", m.principal, "secret-"+m.cluster)
	if err != nil {
		return err
	}
	var controllers []clusterv1alpha1.ExternalDNSController
	for _, r := range f.regions {
		controllers = append(controllers, clusterv1alpha1.ExternalDNSController{Name: framework.RegionalControllerName(r), Region: r,
			Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &clusterv1alpha1.AzurePrivateDNSVerification{
				SubscriptionID: f.sub, ResourceGroup: fleetGroup(r), ZoneName: f.domain, ConfigFile: file}},
			Failover: &clusterv1alpha1.ZoneFailover{OwnerID: fleetOwner(r, m.cluster), TXTPrefix: f.prefix(r)}})
	}
	c := m.cl.Client
	if err := framework.EnsureNamespace(ctx, c, gatewayNamespace); err != nil {
		return err
	}
	for _, obj := range []client.Object{
		&clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "cluster-identity"},
			Spec: clusterv1alpha1.ClusterIdentitySpec{Region: m.region, Cluster: m.cluster, Domain: f.domain, EnvironmentLetter: f.envLetter}},
		&clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dns-config"},
			Spec: clusterv1alpha1.DNSConfigurationSpec{Failover: &clusterv1alpha1.FailoverSettings{ProbePort: ptr.To(int32(f.port))}, ExternalDNSControllers: controllers}},
		&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: gatewayName},
			Spec: routingv1alpha1.GatewaySpec{Controller: ingressController, CredentialName: "cert-aks-ingress", TargetPostfix: "internal", IngressNamespace: ingressNamespace}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("%s: creating %T %s: %w", m.cluster, obj, obj.GetName(), err)
		}
	}
	if _, err := framework.CreateIngressService(ctx, c, framework.IngressService{
		Namespace: ingressNamespace, Name: ingressController, Controller: ingressController, IPs: []string{m.lbIP}}); err != nil {
		return err
	}
	if m.metricsPort, err = framework.FreePort(); err != nil {
		return err
	}
	m.started = time.Now()
	m.op, err = m.cl.StartOperator(ctx, f.tb, framework.OperatorOptions{ExtraArgs: []string{
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(m.metricsPort), "--metrics-secure=false"}})
	return err
}

// startExternalDNS runs the real ExternalDNS for the first zone of the first cluster: the chart's
// arguments for the weu example with that zone's controller, TXT prefix and resource group in
// place of weu's, its own principal, and the interval the operator guide recommends for the
// fleet's size (edInterval) in place of the example's minute. It starts once the
// operator has written the gateway's DNSEndpoint for the zone, so that its first synchronization
// publishes the gateway's address.
func (f *fleet) startExternalDNS(ctx context.Context) {
	tb, m, r := f.tb, f.members[0], f.regions[0]
	controller := framework.RegionalControllerName(r)
	f.edPrincipal = "f1ee7000-0000-4000-8000-e0000000d501"
	f.az.AddServicePrincipal(f.edPrincipal, "secret-external-dns")
	file, err := f.az.AzureJSONAs(f.sub, fleetGroup(r), f.edPrincipal, "secret-external-dns")
	if err != nil {
		tb.Fatal(err)
	}
	f.edEvery = f.edInterval()
	args := withFlags(f.example.AzureLocalArgs(file), map[string]string{
		"annotation-filter": framework.ControllerAnnotation + "=" + controller, "label-filter": naming.LabelController + "=" + controller,
		"txt-prefix": f.prefix(r), "azure-resource-group": fleetGroup(r), "interval": f.edEvery.String()})
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, m.cluster+"'s gateway DNSEndpoint for "+controller, func(ctx context.Context) (bool, string, error) {
		list := &externaldnsv1alpha1.DNSEndpointList{}
		if err := m.cl.Client.List(ctx, list, client.MatchingLabels{naming.LabelController: controller}); err != nil {
			return false, err.Error(), nil
		}
		return len(list.Items) > 0, fmt.Sprintf("%d DNSEndpoints", len(list.Items)), nil
	})
	if err != nil {
		tb.Fatalf("%v%s", err, f.diagnostics())
	}
	if f.ed, err = m.cl.StartExternalDNS(ctx, tb, framework.ExternalDNSOptions{Name: controller, Args: args}); err != nil {
		tb.Fatalf("%v%s", err, f.diagnostics())
	}
	tb.Logf("ExternalDNS for zone %s of %s (real, the chart's arguments): %s", r, m.cluster, strings.Join(args, " "))
}

// edInterval is the shortest ExternalDNS --interval that keeps a zone of the fleet within Private
// DNS's 100 lists a minute when every cluster's instance lists it whole each run beside the
// operators' planned lists (budget.ExternalDNSInterval, the operator guide's table).
func (f *fleet) edInterval() time.Duration {
	recordSets := len(f.az.Records(f.sub, fleetGroup(f.regions[0]), f.domain))
	zones := make([]budget.Zone, len(f.regions))
	for i := range zones {
		zones[i] = budget.Zone{SubscriptionID: f.sub, Failover: true, RecordSets: recordSets}
	}
	operators := budget.Fleet(budget.Input{Zones: zones}, len(f.members)).Zones[0].AtRest().Reads
	every, ok := budget.ExternalDNSInterval(len(f.members), recordSets, operators)
	if !ok {
		f.tb.Fatalf("%d clusters' operators list each zone %.1f times a minute: no ExternalDNS interval fits the zone's 100", len(f.members), operators)
	}
	return every
}

// withFlags is args with the value of each named --flag replaced.
func withFlags(args []string, values map[string]string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		name, _, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if v, replace := values[name]; ok && replace {
			out[i] = "--" + name + "=" + v
		}
	}
	return out
}

func (f *fleet) diagnostics() string {
	var b strings.Builder
	for _, m := range f.members {
		if m.op != nil {
			b.WriteString("\n" + m.cluster + ": " + m.op.Diagnostics())
		}
	}
	if f.ed != nil {
		b.WriteString("\n" + f.ed.Diagnostics())
	}
	return b.String() + "\n" + f.az.Diagnostics()
}

// settle waits until the fleet is at rest: every cluster's gateway Published in every zone (its
// verification listed each zone and found its address), every other cluster's region judged
// Serving (its heartbeats read, its gateway probed), and every zone read by every operator (its
// first whole reading done). It returns how long that took.
func (f *fleet) settle() time.Duration {
	tb, ctx := f.tb, f.tb.Context()
	began := time.Now()
	err := framework.Poll(ctx, 5*time.Minute, time.Second, "the fleet at rest", func(ctx context.Context) (bool, string, error) {
		for _, m := range f.members {
			gw, err := readZones(ctx, m.cl.Client, &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: gatewayName}})
			if err != nil {
				return false, m.cluster + ": " + err.Error(), nil
			}
			states := gw.states()
			for _, r := range f.regions {
				if s := states[framework.RegionalControllerName(r)]; s != routingv1alpha1.ZonePublished {
					return false, fmt.Sprintf("%s's gateway in zone %s: %q (%s)", m.cluster, r, s, gw), nil
				}
			}
			cfg := &clusterv1alpha1.DNSConfiguration{}
			if err := m.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
				return false, m.cluster + ": " + err.Error(), nil
			}
			for _, o := range f.members {
				if o.region == m.region {
					continue
				}
				i := slices.IndexFunc(cfg.Status.Failover, func(s clusterv1alpha1.RegionFailoverStatus) bool { return s.Region == o.region })
				if i < 0 || cfg.Status.Failover[i].State != "Serving" {
					return false, fmt.Sprintf("%s's view of region %s: %+v", m.cluster, o.region, cfg.Status.Failover), nil
				}
			}
			zones, err := f.requests(ctx, m)
			if err != nil {
				return false, m.cluster + ": " + err.Error(), nil
			}
			for _, r := range f.regions {
				if zones[r].reads == 0 {
					return false, fmt.Sprintf("%s has not read zone %s yet", m.cluster, r), nil
				}
			}
		}
		return true, "", nil
	})
	if err != nil {
		tb.Fatalf("%v%s", err, f.diagnostics())
	}
	return time.Since(began)
}

// zoneRequests are an operator's Resource Manager requests to one zone, as it counts them.
type zoneRequests struct {
	reads, writes, deletes int
	// throttled were answered 429; held not sent, the principal waiting out a Retry-After.
	throttled, held int
}

func (z zoneRequests) minus(o zoneRequests) zoneRequests {
	return zoneRequests{z.reads - o.reads, z.writes - o.writes, z.deletes - o.deletes, z.throttled - o.throttled, z.held - o.held}
}

var metricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// requests are m's requests by zone region, from its service_router_azure_requests_total (every
// attempt: answered, throttled or failed; held ones apart).
func (f *fleet) requests(ctx context.Context, m *fleetMember) (map[string]zoneRequests, error) {
	samples, err := framework.ScrapeMetrics(ctx, m.metricsPort)
	if err != nil {
		return nil, err
	}
	out := map[string]zoneRequests{}
	for key, v := range samples {
		labels, ok := strings.CutPrefix(key, "service_router_azure_requests_total{")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, kv := range metricLabel.FindAllStringSubmatch(labels, -1) {
			l[kv[1]] = kv[2]
		}
		region := strings.TrimPrefix(l["resource_group"], "rg-dns-")
		z, n := out[region], int(v)
		switch l["outcome"] {
		case "held":
			z.held += n
			out[region] = z
			continue
		case "throttled":
			z.throttled += n
		}
		switch l["operation"] {
		case "read":
			z.reads += n
		case "write":
			z.writes += n
		case "delete":
			z.deletes += n
		}
		out[region] = z
	}
	return out, nil
}

// fleetWindow is what a steady-state window counted.
type fleetWindow struct {
	from, to time.Time
	// usage is the stand-in's count over the window (ResetUsage at its start).
	usage azurestandin.Usage
	// zones are each operator's own counts over the window, by cluster and zone region.
	zones map[string]map[string]zoneRequests
	// recordSets is the largest zone's record sets at the window's start, pages what one whole
	// listing of it takes at 1,000 a request.
	recordSets, pages int
	// heartbeatListings are the name-suffix listings of TXT record sets the stand-in served over
	// the window (failover's heartbeat readings: no one else lists so).
	heartbeatListings int
}

func (w fleetWindow) minutes() float64 { return w.to.Sub(w.from).Minutes() }

// measure counts a steady-state window of the given length: the stand-in's usage started anew and
// each operator's counters read at both ends.
func (f *fleet) measure(window time.Duration) fleetWindow {
	tb, ctx := f.tb, f.tb.Context()
	w := fleetWindow{zones: map[string]map[string]zoneRequests{}}
	for _, r := range f.regions {
		w.recordSets = max(w.recordSets, len(f.az.Records(f.sub, fleetGroup(r), f.domain))+1) // and the SOA record set
	}
	w.pages = (w.recordSets + 999) / 1000
	before := map[string]map[string]zoneRequests{}
	scrape := func(into map[string]map[string]zoneRequests) {
		for _, m := range f.members {
			zones, err := f.requests(ctx, m)
			if err != nil {
				tb.Fatalf("%s's metrics: %v%s", m.cluster, err, f.diagnostics())
			}
			into[m.cluster] = zones
		}
	}
	scrape(before)
	listings := f.az.Count("listRecordSetsByType")
	f.az.ResetUsage()
	w.from = time.Now()
	select {
	case <-ctx.Done():
		tb.Fatal(ctx.Err())
	case <-time.After(window):
	}
	w.usage = f.az.Usage()
	w.heartbeatListings = f.az.Count("listRecordSetsByType") - listings
	w.to = time.Now()
	scrape(w.zones)
	for cluster, zones := range w.zones {
		for r, z := range zones {
			zones[r] = z.minus(before[cluster][r])
		}
	}
	return w
}

// restSchedule is the documented schedule of one cluster's Resource Manager requests to one zone
// at rest, with the defaults (docs/OPERATOR-GUIDE.md, "The request budget of failover and
// verification"): failover lists the zone's heartbeats (one request) every heartbeatStaleAfter,
// verification lists the whole zone when its settled records are due (every 5 minutes ± 10 %
// jitter), which failover takes as its whole reading, reading the zone whole itself only when no
// listing came for 6 minutes (5.5 + heartbeatStaleAfter), and failover writes the heartbeat every
// heartbeatInterval, or every clusters × Azure zones × 0.6 s when that is longer.
type restSchedule struct {
	witness, whole, settled, heartbeat time.Duration
	// slack bounds how long after its own clock reading a round's requests reach Resource Manager
	// (the round probes and writes its heartbeats first): readings due 30 s apart may arrive up to
	// that much closer.
	slack time.Duration
}

var documentedRest = restSchedule{witness: 30 * time.Second, whole: 6 * time.Minute, settled: 270 * time.Second, heartbeat: 10 * time.Second,
	slack: 5 * time.Second}

// heartbeatEvery is the heartbeat's interval in a fleet of clusters writing into zones.
func (s restSchedule) heartbeatEvery(clusters, zones int) time.Duration {
	return max(s.heartbeat, time.Duration(clusters*zones)*600*time.Millisecond)
}

// perMinute is the schedule's average rate of reads (failover's heartbeat listings, and
// verification's listings, failover's whole readings too) and writes to one zone of pages pages.
func (s restSchedule) perMinute(pages, clusters, zones int) (failoverReads, verificationReads, writes float64) {
	per := func(d time.Duration) float64 { return time.Minute.Seconds() / d.Seconds() }
	listed := s.settled * 10 / 9 // the settled interval without its jitter
	return per(s.witness) - per(listed), float64(pages) * per(listed), per(s.heartbeatEvery(clusters, zones))
}

// atMost is how many times something done at most once per interval can happen within span.
func atMost(span, interval time.Duration) int {
	if span < 0 {
		return 0
	}
	return int(span/interval) + 1
}

// zoneBound is the most reads and writes the schedule lets one cluster send one zone of pages
// pages within [from, to], for an operator started at start: its first whole reading and
// verification listing came after start (the fleet settled on them), so the next are due no
// earlier than start plus 6 minutes (failover's own, were verification's late), or plus the
// settled interval. Heartbeat listings are the reads between them, at least heartbeatStaleAfter
// apart.
func (s restSchedule) zoneBound(start, from, to time.Time, pages, clusters, zones int) (reads, writes int) {
	again := func(every time.Duration) int { return atMost(to.Sub(maxTime(from, start.Add(every)))+s.slack, every) }
	span := to.Sub(from) + s.slack
	return atMost(span, s.witness) + again(s.whole)*pages + again(s.settled)*pages, atMost(span, s.heartbeatEvery(clusters, zones))
}

// TestFleet_AtRestStaysWithinTheDocumentedBudget runs a small fleet, 2 clusters in 3 zones of
// 3,000 names each (about 6,000 record sets), through a 2-minute steady-state window after it
// settled, and fails if an operator sent a zone more reads (failover's and verification's) or
// writes than the documented schedule allows in that window, or any delete, if the fleet listed
// the heartbeats more often than every heartbeatStaleAfter per cluster and zone, if a zone's
// record-set operations crossed one of Private DNS's per-zone limits, or if Resource Manager
// throttled any request. The bound is exact, not an average with a margin: the heartbeat listings at most
// every 30 s, plus a whole listing (⌈record sets / 1,000⌉ pages) for each settled listing of
// verification (at least 4.5 minutes apart) and each 6-minute reading of failover's own the window
// can hold, given when the operators started. A window that ends before the first are due may hold
// only heartbeat listings (5 at most in 2 minutes); one that may hold them allows their pages too. The real ExternalDNS does not
// run here (BenchmarkFleet_AzureBudget runs it); every gateway address is seeded.
func TestFleet_AtRestStaysWithinTheDocumentedBudget(t *testing.T) {
	opts := fleetOptions{clusters: 2, zones: 3, names: 3000}
	began := time.Now()
	f := startFleet(t, opts)
	t.Logf("settled in %s", f.settle().Round(time.Second))
	w := f.measure(2 * time.Minute)
	f.log(t, w)
	s := documentedRest
	for _, m := range f.members {
		reads, writes := s.zoneBound(m.started, w.from, w.to, w.pages, opts.clusters, opts.zones)
		fr, vr, wr := s.perMinute(w.pages, opts.clusters, opts.zones)
		t.Logf("%s: at most %d reads and %d writes per zone in the %s window (the documented averages: %.1f failover + %.1f verification reads, %.1f writes a minute)",
			m.cluster, reads, writes, w.to.Sub(w.from).Round(time.Second), fr, vr, wr)
		for _, r := range f.regions {
			z := w.zones[m.cluster][r]
			if z.reads > reads || z.writes > writes {
				t.Errorf("%s sent zone %s %d reads and %d writes in %s, the documented schedule allows %d and %d", m.cluster, r, z.reads, z.writes,
					w.to.Sub(w.from).Round(time.Second), reads, writes)
			}
			if z.deletes > 0 {
				t.Errorf("%s sent zone %s %d deletes in %s: the documented schedule deletes nothing at rest", m.cluster, r, z.deletes, w.to.Sub(w.from).Round(time.Second))
			}
			if z.reads == 0 || z.writes == 0 {
				t.Errorf("%s sent zone %s %d reads and %d writes in %s: the window proves nothing", m.cluster, r, z.reads, z.writes, w.to.Sub(w.from).Round(time.Second))
			}
			if z.throttled > 0 || z.held > 0 {
				t.Errorf("%s: %d requests to zone %s throttled, %d held", m.cluster, z.throttled, r, z.held)
			}
		}
		// The stand-in's own count, per principal, against the same bound for all the zones.
		if u := w.usage.Principals[m.principal]; u.Read.Admitted > reads*opts.zones || u.Write.Admitted > writes*opts.zones || u.Delete.Admitted+u.Delete.Throttled > 0 {
			t.Errorf("%s's principal: %d reads, %d writes and %d deletes admitted, the documented schedule allows %d, %d and none for %d zones",
				m.cluster, u.Read.Admitted, u.Write.Admitted, u.Delete.Admitted, reads*opts.zones, writes*opts.zones, opts.zones)
		}
	}
	// The heartbeat listings alone, counted by the stand-in (no one else lists by name suffix):
	// at most one per heartbeatStaleAfter per cluster and zone. The reads' bound above leaves room
	// for the whole listings the window may hold; this one does not, so that heartbeats listed
	// twice as often as documented fail the test whatever else the window held.
	span := w.to.Sub(w.from) + s.slack
	if most := len(f.members) * opts.zones * atMost(span, s.witness); w.heartbeatListings > most {
		t.Errorf("%d heartbeat listings in %s, the documented schedule allows %d (%d clusters × %d zones, one every %s)", w.heartbeatListings,
			w.to.Sub(w.from).Round(time.Second), most, len(f.members), opts.zones, s.witness)
	}
	for _, finding := range f.zoneLimitFindings(w) {
		t.Error(finding)
	}
	for sub, u := range w.usage.Subscriptions {
		if th := u.Total().Throttled; th > 0 {
			t.Errorf("subscription %s: %d requests throttled (429)%s", sub, th, f.diagnostics())
		}
	}
	t.Logf("took %s", time.Since(began).Round(time.Second))
}

// Resource Manager's documented limits the figures are held against (the stand-in enforces them:
// azurestandin.DocumentedLimits).
var armLimits = azurestandin.DocumentedLimits

// zoneLimits are Azure Private DNS's limits per zone and minute the figures are held against (the
// stand-in enforces them too: azurestandin.DocumentedZoneLimits).
var zoneLimits = azurestandin.DocumentedZoneLimits

// zoneRates are one zone's record-set operations a minute over a window, every principal's
// together, as Private DNS's per-zone limits count them; limited is how many the stand-in refused
// for those limits.
type zoneRates struct {
	creates, updates, deletes, gets, lists float64
	limited                                int
}

// zoneRates are each zone's rates over the window, by region.
func (f *fleet) zoneRates(w fleetWindow) map[string]zoneRates {
	out := map[string]zoneRates{}
	minutes := w.minutes()
	per := func(t azurestandin.Tally) float64 { return float64(t.Admitted+t.Throttled) / minutes }
	for _, r := range f.regions {
		u := w.usage.ZoneOperations[azurestandin.ZoneIDOf(f.sub, fleetGroup(r), f.domain)]
		out[r] = zoneRates{creates: per(u.Create), updates: per(u.Update), deletes: per(u.Delete), gets: per(u.Get), lists: per(u.List), limited: u.ZoneLimited}
	}
	return out
}

// zoneLimitFindings are the zones whose record-set operations crossed a per-zone limit in the
// window: a request refused for one, or a rate above one (a window's average: the stand-in
// refuses the request that would cross it in any minute).
func (f *fleet) zoneLimitFindings(w fleetWindow) []string {
	var out []string
	for _, r := range f.regions {
		z := f.zoneRates(w)[r]
		for _, c := range []struct {
			what  string
			rate  float64
			limit int
		}{{"creates", z.creates, zoneLimits.Creates}, {"updates", z.updates, zoneLimits.Updates}, {"deletes", z.deletes, zoneLimits.Deletes},
			{"gets", z.gets, zoneLimits.Gets}, {"lists", z.lists, zoneLimits.Lists}} {
			if c.rate > float64(c.limit) {
				out = append(out, fmt.Sprintf("zone %s: %.1f record set %s a minute over %s, above Private DNS's %d per zone", r, c.rate, c.what, w.to.Sub(w.from).Round(time.Second), c.limit))
			}
		}
		if z.limited > 0 {
			out = append(out, fmt.Sprintf("zone %s: %d requests refused (429) for Private DNS's per-zone limits%s", r, z.limited, f.diagnostics()))
		}
	}
	return out
}

// fleetClusters is the fleet size the figures are extrapolated to.
const fleetClusters = 20

// fleetFigures are a window's figures, per minute unless said otherwise.
type fleetFigures struct {
	clusters []clusterFigures
	// operatorReads and operatorWrites are the mean of the clusters' requests per zone (writes
	// and deletes together, as the provider counts them).
	operatorReads, operatorWrites float64
	// heartbeatReads are the heartbeat listings of operatorReads, wholeListings how many whole
	// listings of pages pages (failover's and verification's) the rest of them made in the
	// window; longRunReads is the heartbeat listings' rate with the whole listings counted at
	// their documented period (verification's settled listing, which failover takes as its whole
	// reading, every 5 minutes) instead of as the window happened to hold them.
	heartbeatReads, wholeListings, longRunReads float64
	// edReads, edWrites are one ExternalDNS instance's requests; edMeasured says they were
	// measured (the real one), not taken from the documented ⌈record sets / 100⌉ + 1 per run.
	edReads, edWrites float64
	edMeasured        bool
	// subscription is the stand-in's count for the subscription over the window.
	subscription azurestandin.Tallies
	// crossings are the documented limits the figures extrapolated to fleetClusters clusters
	// cross at rest, ExternalDNS at the interval the operator guide recommends for them.
	crossings []string
}

// clusterFigures are one cluster's operator requests: from the stand-in per principal (reads,
// writes per zone), and from its own counts the least and most read zone.
type clusterFigures struct {
	m                          *fleetMember
	reads, writes              float64 // per zone
	minZoneReads, maxZoneReads float64
	throttled, held            int
}

func (f *fleet) figures(w fleetWindow) fleetFigures {
	minutes := w.minutes()
	var out fleetFigures
	zones := float64(len(f.regions))
	for _, m := range f.members {
		u := w.usage.Principals[m.principal]
		c := clusterFigures{m: m, reads: float64(u.Read.Admitted+u.Read.Throttled) / zones / minutes,
			writes:    float64(u.Write.Admitted+u.Write.Throttled+u.Delete.Admitted+u.Delete.Throttled) / zones / minutes,
			throttled: u.Total().Throttled, minZoneReads: -1}
		for _, r := range f.regions {
			z := w.zones[m.cluster][r]
			reads := float64(z.reads) / minutes
			if c.minZoneReads < 0 || reads < c.minZoneReads {
				c.minZoneReads = reads
			}
			c.maxZoneReads = max(c.maxZoneReads, reads)
			c.held += z.held
		}
		out.clusters = append(out.clusters, c)
		out.operatorReads += c.reads / float64(len(f.members))
		out.operatorWrites += c.writes / float64(len(f.members))
	}
	cz := float64(len(f.members)) * zones
	out.heartbeatReads = float64(w.heartbeatListings) / cz / minutes
	out.wholeListings = (out.operatorReads - out.heartbeatReads) * minutes / float64(w.pages)
	out.longRunReads = out.heartbeatReads + float64(w.pages)*time.Minute.Seconds()/(documentedRest.settled*10/9).Seconds()
	if f.ed != nil {
		u := w.usage.Principals[f.edPrincipal]
		out.edReads, out.edWrites, out.edMeasured = float64(u.Read.Admitted+u.Read.Throttled)/minutes, float64(u.Write.Admitted+u.Delete.Admitted)/minutes, true
	} else {
		out.edReads = float64((w.recordSets+99)/100 + 1)
	}
	out.subscription = w.usage.Subscriptions[strings.ToLower(f.sub)]
	return out
}

// share formats n of limit as "n (p % of limit)".
func share(n, limit float64) string {
	return fmt.Sprintf("%.0f (%.0f %% of %.0f)", n, 100*n/limit, limit)
}

func verdict(n, limit float64) string {
	if n <= limit {
		return "meets"
	}
	return "BREAKS"
}

// log prints a window's figures: per cluster and zone, per principal, per subscription against
// Resource Manager's limits, and the same extrapolated to fleetClusters clusters.
func (f *fleet) log(tb testing.TB, w fleetWindow) fleetFigures {
	tb.Helper()
	fig := f.figures(w)
	n, z := len(f.members), len(f.regions)
	fr, vr, wr := documentedRest.perMinute(w.pages, n, z)
	var b strings.Builder
	fmt.Fprintf(&b, "fleet of %d clusters × %d zones (%d record sets per zone: %d pages of 1,000), window %s (%s to %s):\n",
		n, z, w.recordSets, w.pages, w.to.Sub(w.from).Round(time.Second), w.from.Format("15:04:05"), w.to.Format("15:04:05"))
	fmt.Fprintf(&b, "  arrangement: each cluster its own etcd + kube-apiserver (the e2e framework's control plane) and the operator binary as a process, leader without election, its own service principal; one subscription; verification and failover at their defaults (probe port aside); ExternalDNS: %s\n",
		map[bool]string{true: "the real one for zone " + f.regions[0] + " of " + f.members[0].cluster + " (--interval=" + f.edEvery.String() + "), every other cluster-zone's modelled from its counts, not run",
			false: "not run; modelled from the documented ⌈record sets / 100⌉ + 1 reads per 1-minute run"}[fig.edMeasured])
	fmt.Fprintf(&b, "  documented averages per cluster and zone: %.1f failover + %.1f verification reads, %.1f heartbeat writes a minute\n", fr, vr, wr)
	fmt.Fprintf(&b, "  %-7s %-6s %-33s %15s %20s %21s %4s %4s\n", "cluster", "region", "reads/zone/min (least–most zone)", "writes/zone/min",
		"principal reads/5min", "principal writes/5min", "429", "held")
	for _, c := range fig.clusters {
		fmt.Fprintf(&b, "  %-7s %-6s %-33s %15.2f %20.0f %21.0f %4d %4d\n", c.m.cluster, c.m.region, fmt.Sprintf("%.2f (%.2f–%.2f)", c.reads, c.minZoneReads, c.maxZoneReads),
			c.writes, c.reads*float64(z)*5, c.writes*float64(z)*5, c.throttled, c.held)
	}
	fmt.Fprintf(&b, "  of the reads per zone: %.2f heartbeat listings a minute and %.1f whole listings of %d pages in the window (verification's settled listings, failover's whole readings too, and failover's own when verification's came 6 minutes late); at one a 5 minutes, %.2f reads a minute in the long run\n",
		fig.heartbeatReads, fig.wholeListings, w.pages, fig.longRunReads)
	edKind := "real, 1 instance"
	if !fig.edMeasured {
		edKind = "documented, per instance"
	}
	fmt.Fprintf(&b, "  ExternalDNS (%s): %.1f reads, %.1f writes a minute\n", edKind, fig.edReads, fig.edWrites)
	opReads, opWrites := fig.operatorReads*float64(n*z)*5, fig.operatorWrites*float64(n*z)*5
	edInstances := n * z
	modelled := edInstances
	if fig.edMeasured {
		modelled--
	}
	measuredReads := float64(fig.subscription.Read.Admitted+fig.subscription.Read.Throttled) / w.minutes() * 5
	measuredWrites := float64(fig.subscription.Write.Admitted+fig.subscription.Write.Throttled+fig.subscription.Delete.Admitted+fig.subscription.Delete.Throttled) / w.minutes() * 5
	fmt.Fprintf(&b, "  subscription per 5 minutes (Microsoft.Network: %d reads, %d writes and deletes):\n", armLimits.Provider.Reads, armLimits.Provider.Writes)
	fmt.Fprintf(&b, "    operators, measured:                 %7.0f reads %7.0f writes\n", opReads, opWrites)
	fmt.Fprintf(&b, "    all requests the stand-in saw:        %7.0f reads %7.0f writes (%d throttled)\n", measuredReads, measuredWrites, fig.subscription.Total().Throttled)
	fmt.Fprintf(&b, "    + ExternalDNS modelled (%3d instances, not run): %7.0f reads\n", modelled, fig.edReads*float64(modelled)*5)
	total := measuredReads + fig.edReads*float64(modelled)*5
	fmt.Fprintf(&b, "    = %s reads: %s; %s writes: %s\n", share(total, float64(armLimits.Provider.Reads)), verdict(total, float64(armLimits.Provider.Reads)),
		share(measuredWrites, float64(armLimits.Provider.Writes)), verdict(measuredWrites, float64(armLimits.Provider.Writes)))
	largestBurst := 2 * z * w.pages // every zone read whole by failover and listed by verification at once
	fmt.Fprintf(&b, "  token buckets: a principal reads %.2f/s on average against %g/s refilled (largest burst the schedule allows: %d reads against %d); the subscription, modelled ExternalDNS included, %.2f/s against %g/s\n",
		fig.operatorReads*float64(z)/60, armLimits.Reads.Refill, largestBurst, armLimits.Reads.Size, total/300, armLimits.Reads.Refill*armLimits.Global)
	// Extrapolated: the clusters' rate × fleetClusters, ExternalDNS modelled in every cluster-zone.
	xReads, xWrites := fig.operatorReads*float64(fleetClusters*z)*5, fig.operatorWrites*float64(fleetClusters*z)*5
	xED := fig.edReads * float64(fleetClusters*z) * 5
	sized := float64(fleetClusters*z) * 5 * time.Minute.Seconds() / documentedRest.heartbeatEvery(fleetClusters, z).Seconds()
	fmt.Fprintf(&b, "  extrapolated to %d clusters × %d zones (per-cluster rate × %d):\n", fleetClusters, z, fleetClusters)
	xLong := fig.longRunReads * float64(fleetClusters*z) * 5
	fmt.Fprintf(&b, "    operators: %s reads per 5 min: %s (long run: %s: %s); with ExternalDNS (%d instances): %s: %s\n", share(xReads, float64(armLimits.Provider.Reads)),
		verdict(xReads, float64(armLimits.Provider.Reads)), share(xLong, float64(armLimits.Provider.Reads)), verdict(xLong, float64(armLimits.Provider.Reads)),
		fleetClusters*z, share(xReads+xED, float64(armLimits.Provider.Reads)), verdict(xReads+xED, float64(armLimits.Provider.Reads)))
	fmt.Fprintf(&b, "    operators: %s writes per 5 min linearly: %s; with the heartbeat interval %d clusters size it to (%s, documented, not run): %s: %s\n",
		share(xWrites, float64(armLimits.Provider.Writes)), verdict(xWrites, float64(armLimits.Provider.Writes)), fleetClusters,
		documentedRest.heartbeatEvery(fleetClusters, z), share(sized, float64(armLimits.Provider.Writes)), verdict(sized, float64(armLimits.Provider.Writes)))
	fmt.Fprintf(&b, "    a principal: %.2f reads/s against %g/s (unchanged by the fleet's size); the subscription's global bucket: %.1f reads/s against %g/s: %s\n",
		fig.operatorReads*float64(z)/60, armLimits.Reads.Refill, (xReads+xED)/300, armLimits.Reads.Refill*armLimits.Global, verdict((xReads+xED)/300, armLimits.Reads.Refill*armLimits.Global))

	// Private DNS's limits per zone, measured: the busiest zone's rate of each operation, every
	// principal together.
	var busiest zoneRates
	for _, r := range f.zoneRates(w) {
		busiest = zoneRates{creates: max(busiest.creates, r.creates), updates: max(busiest.updates, r.updates), deletes: max(busiest.deletes, r.deletes),
			gets: max(busiest.gets, r.gets), lists: max(busiest.lists, r.lists), limited: busiest.limited + r.limited}
	}
	fmt.Fprintf(&b, "  per zone a minute, measured, every principal (the busiest zone of each; Private DNS allows %d lists, %d gets, %d creates, %d updates, %d deletes): "+
		"%.1f lists, %.1f gets, %.1f creates, %.1f updates, %.1f deletes; %d requests refused for these limits\n",
		zoneLimits.Lists, zoneLimits.Gets, zoneLimits.Creates, zoneLimits.Updates, zoneLimits.Deletes, busiest.lists, busiest.gets, busiest.creates, busiest.updates, busiest.deletes, busiest.limited)
	// The same extrapolated: every read of the operators is a page of a listing, every write at
	// rest a heartbeat update; each cluster's ExternalDNS instance for the zone lists it whole
	// each synchronization, at the interval that keeps the zone within its lists
	// (budget.ExternalDNSInterval: what the operator guide recommends).
	recordSets := w.recordSets - 1 // the SOA record set is counted by ExternalDNSListsPerSync
	// The long-run rate when it is the larger: a short window may hold no whole listing.
	xZoneLists := max(fig.operatorReads, fig.longRunReads) * fleetClusters
	xZoneUpdates := fleetClusters * time.Minute.Seconds() / documentedRest.heartbeatEvery(fleetClusters, z).Seconds()
	edEvery, fits := budget.ExternalDNSInterval(fleetClusters, recordSets, xZoneLists)
	edLists := 0.0
	if fits {
		edLists = float64(fleetClusters*budget.ExternalDNSListsPerSync(recordSets)) / edEvery.Minutes()
	} else {
		fig.crossings = append(fig.crossings, fmt.Sprintf("extrapolated to %d clusters, the operators alone list each zone %.1f times a minute: no ExternalDNS interval keeps it within %d",
			fleetClusters, xZoneLists, zoneLimits.Lists))
	}
	fmt.Fprintf(&b, "    per zone a minute: the operators' lists %s, with %d ExternalDNS instances at --interval=%s (%d lists each run; the shortest that fits): %s: %s; at --interval=1m: %.0f; heartbeat updates %s: %s",
		share(xZoneLists, float64(zoneLimits.Lists)), fleetClusters, edEvery, budget.ExternalDNSListsPerSync(recordSets), share(xZoneLists+edLists, float64(zoneLimits.Lists)),
		verdict(xZoneLists+edLists, float64(zoneLimits.Lists)), xZoneLists+float64(fleetClusters*budget.ExternalDNSListsPerSync(recordSets)),
		share(xZoneUpdates, float64(zoneLimits.Updates)), verdict(xZoneUpdates, float64(zoneLimits.Updates)))
	if xZoneUpdates > float64(zoneLimits.Updates) {
		fig.crossings = append(fig.crossings, fmt.Sprintf("extrapolated to %d clusters, %.1f heartbeat updates a minute per zone, above Private DNS's %d", fleetClusters, xZoneUpdates, zoneLimits.Updates))
	}
	// The subscription with ExternalDNS at that interval: each run lists the resource group's
	// zones too.
	if fits {
		xEDRecommended := float64(budget.ExternalDNSListsPerSync(recordSets)+1) / edEvery.Minutes() * float64(fleetClusters*z) * 5
		fmt.Fprintf(&b, "; the subscription's reads per 5 minutes, ExternalDNS at --interval=%s: %s: %s", edEvery,
			share(xReads+xEDRecommended, float64(armLimits.Provider.Reads)), verdict(xReads+xEDRecommended, float64(armLimits.Provider.Reads)))
		if xReads+xEDRecommended > float64(armLimits.Provider.Reads) {
			fig.crossings = append(fig.crossings, fmt.Sprintf("extrapolated to %d clusters × %d zones with ExternalDNS at --interval=%s, %.0f reads per 5 minutes, above Microsoft.Network's %d",
				fleetClusters, z, edEvery, xReads+xEDRecommended, armLimits.Provider.Reads))
		}
	}
	if xLong > float64(armLimits.Provider.Reads) || xReads > float64(armLimits.Provider.Reads) {
		fig.crossings = append(fig.crossings, fmt.Sprintf("extrapolated to %d clusters × %d zones, the operators' %.0f reads per 5 minutes (long run %.0f), above Microsoft.Network's %d",
			fleetClusters, z, xReads, xLong, armLimits.Provider.Reads))
	}
	if sized > float64(armLimits.Provider.Writes) {
		fig.crossings = append(fig.crossings, fmt.Sprintf("extrapolated to %d clusters × %d zones, the heartbeats' %.0f writes per 5 minutes, above Microsoft.Network's %d",
			fleetClusters, z, sized, armLimits.Provider.Writes))
	}
	tb.Log(b.String())
	return fig
}

// loss is how long each other cluster took to judge a lost cluster's region Lost, and what the
// others asked of the zones meanwhile.
type loss struct {
	lost     *fleetMember
	interval time.Duration // the lost cluster's last heartbeat interval, as the fleet sizes it
	judged   map[string]time.Duration
	// usage is the stand-in's count from the loss until heartbeatStaleAfter after the last
	// judgement (a whole reading of each zone while the lost region's names may move), over
	// span; survivorLists the survivors' mean list requests a minute per zone (every read of
	// theirs is a page of a listing).
	usage         azurestandin.Usage
	span          time.Duration
	survivorLists float64
}

// bound is the design's detection time: the heartbeat, written up to one interval before the loss,
// goes stale three intervals (or heartbeatStaleAfter) after it was seen, plus a probe round to see
// it and one to judge.
func (l loss) bound() time.Duration {
	return max(30*time.Second, 3*l.interval) + l.interval + 2*5*time.Second
}

// lose takes the first cluster away at once, as a lost region goes (its gateway stops answering,
// its operator stops writing its heartbeat), and waits for every other cluster to judge its region
// Lost, by its dns-config status.
func (f *fleet) lose() loss {
	tb, ctx := f.tb, f.tb.Context()
	l := loss{lost: f.members[0], interval: documentedRest.heartbeatEvery(len(f.members), len(f.regions)), judged: map[string]time.Duration{}}
	l.interval = (l.interval + 5*time.Second - 1) / (5 * time.Second) * (5 * time.Second) // in whole probe intervals
	f.az.ResetUsage()
	_ = l.lost.gateway.Close()
	began := time.Now()
	if err := l.lost.op.Stop(); err != nil {
		tb.Logf("stopping %s's operator: %v", l.lost.cluster, err)
	}
	err := framework.Poll(ctx, 2*l.bound(), time.Second, "every other cluster judging region "+l.lost.region+" lost", func(ctx context.Context) (bool, string, error) {
		for _, m := range f.members[1:] {
			if _, ok := l.judged[m.cluster]; ok || m.region == l.lost.region {
				continue
			}
			cfg := &clusterv1alpha1.DNSConfiguration{}
			if err := m.cl.Client.Get(ctx, client.ObjectKey{Name: "dns-config"}, cfg); err != nil {
				return false, m.cluster + ": " + err.Error(), nil
			}
			if i := slices.IndexFunc(cfg.Status.Failover, func(s clusterv1alpha1.RegionFailoverStatus) bool { return s.Region == l.lost.region }); i >= 0 && cfg.Status.Failover[i].State == "Lost" {
				l.judged[m.cluster] = time.Since(began)
			}
		}
		return len(l.judged) == len(f.members)-1, fmt.Sprintf("judged so far: %v", l.judged), nil
	})
	if err != nil {
		tb.Errorf("%v%s", err, f.diagnostics())
	}
	select {
	case <-ctx.Done():
	case <-time.After(documentedRest.witness):
	}
	l.usage, l.span = f.az.Usage(), time.Since(began)
	for _, m := range f.members[1:] {
		u := l.usage.Principals[m.principal]
		l.survivorLists += float64(u.Read.Admitted+u.Read.Throttled) / float64(len(f.regions)) / l.span.Minutes() / float64(len(f.members)-1)
	}
	return l
}

// findings are the documented limits the loss crossed: any request throttled, and the
// survivors' listings extrapolated to fleetClusters clusters (fleetClusters − 1 survivors)
// against Private DNS's lists per zone.
func (l loss) findings(f *fleet) []string {
	var out []string
	for sub, u := range l.usage.Subscriptions {
		if th := u.Total().Throttled; th > 0 {
			out = append(out, fmt.Sprintf("during the loss, subscription %s: %d requests throttled (429)", sub, th))
		}
	}
	for id, z := range l.usage.ZoneOperations {
		if z.ZoneLimited > 0 {
			out = append(out, fmt.Sprintf("during the loss, zone %s/%s: %d requests refused for Private DNS's per-zone limits", id.ResourceGroup, id.Name, z.ZoneLimited))
		}
	}
	if x := l.survivorLists * (fleetClusters - 1); x > float64(zoneLimits.Lists) {
		out = append(out, fmt.Sprintf("during the loss each survivor listed each zone %.1f times a minute (heartbeats every probe round, the whole zone every heartbeatStaleAfter): "+
			"%d survivors of a fleet of %d would list it %.0f times a minute, above Private DNS's %d per zone", l.survivorLists, fleetClusters-1, fleetClusters, x, zoneLimits.Lists))
	}
	return out
}

// String is the loss's line of the report.
func (l loss) String() string {
	var least, most time.Duration
	for _, d := range l.judged {
		if least == 0 || d < least {
			least = d
		}
		most = max(most, d)
	}
	return fmt.Sprintf("%s (region %s) lost at once (gateway closed, operator stopped): judged Lost by the %d other clusters %s–%s later; heartbeats every %s, the design's bound %s; "+
		"over the %s from the loss, each survivor sent each zone %.1f list requests a minute (%d throttled)",
		l.lost.cluster, l.lost.region, len(l.judged), least.Round(100*time.Millisecond), most.Round(100*time.Millisecond), l.interval, l.bound(),
		l.span.Round(time.Second), l.survivorLists, l.throttled())
}

// throttled is the requests answered 429 during the loss.
func (l loss) throttled() int {
	n := 0
	for _, u := range l.usage.Subscriptions {
		n += u.Total().Throttled
	}
	return n
}

// slowest is the longest detection.
func (l loss) slowest() time.Duration {
	var most time.Duration
	for _, d := range l.judged {
		most = max(most, d)
	}
	return most
}
