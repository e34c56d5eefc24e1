//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/internal/zonewriter"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestFailover_OwnershipPassesByRewritingTheOwnershipTXT measures the mechanism the regional
// failover design rests on (docs/ARCHITECTURE.md#regional-failover-design), with the real
// ExternalDNS v0.23.0 and BIND, in the recommended ownership configuration (one --txt-prefix per
// zone, one --txt-owner-id per cluster):
//
//  1. Two clusters publish the same name; the first publisher (aks01) owns it, aks02's instance
//     skips it ("owner id does not match").
//  2. aks01 is lost: its ExternalDNS stops, its records stay.
//  3. One dynamic update rewrites the name's ownership TXT value to aks02's owner ID, sent by the
//     operator's zone writer (internal/zonewriter, failover.PassOwnership), as the survivor's
//     operator will; the same pass sent again from the value read before is refused (what keeps
//     two stand-ins from both taking a name). aks02's running ExternalDNS (not restarted: the same
//     process) takes the record over at its next synchronization and rewrites the CNAME to its
//     own target in place: the answer goes from aks01's target to aks02's directly, never
//     NXDOMAIN (dig every 50 ms).
//  4. aks01 comes back with its DNSEndpoints unchanged: the ownership TXT fences it, its
//     instance skips the name, and nothing flaps.
//  5. Names go back by the same write the other way: aks01's instance rewrites the CNAME at its
//     next synchronization, again without NXDOMAIN; aks02's instance then skips it.
//
// The alternatives measured beside it: the hand-over by deletion (TestRecommendedOwnership
// step 3: an NXDOMAIN window of up to one synchronization) and --migrate-from-txt-owner (step 4:
// a restart of the survivor's ExternalDNS per zone, which also deletes every record of the lost
// owner the survivor does not publish and leaves the lost owner's TXT values behind).
func TestFailover_OwnershipPassesByRewritingTheOwnershipTXT(t *testing.T) {
	ctx := t.Context()
	const (
		ns         = "myapp"
		controller = "external-dns-weu"
		prefix     = "weu-d-"
		owner1     = "external-dns-weu-aks01"
		owner2     = "external-dns-weu-aks02"
		name       = "api-ns-d-dev-myapp.example.com"
		gw1        = "aks01-weu-internal.example.com"
		gw2        = "aks02-weu-internal.example.com"
		ip1        = "10.1.2.3"
		ip2        = "10.1.2.4"
	)
	z := startSharedZone(t, ns, controller, prefix, owner1, owner2)
	weu, aks01, aks02, opts1, ed1, ed2 := z.weu, z.aks01, z.aks02, z.opts1, z.ed1, z.ed2
	diag := func() []func() string { return []func() string{ed1.Diagnostics, ed2.Diagnostics, weu.Diagnostics} }
	chain1 := []string{"CNAME " + gw1 + ".", "A " + ip1}
	chain2 := []string{"CNAME " + gw2 + ".", "A " + ip2}
	txtName := prefix + "cname-" + name + "."
	q := weu.Query(name, "A")

	// 1. Both publish their gateway address and the name; aks01 first, so it owns the name.
	at := create(ctx, t, aks01.Client, dnsEndpoint(ns, "gateway", controller, gw1, "A", ip1))
	create(ctx, t, aks02.Client, dnsEndpoint(ns, "gateway", controller, gw2, "A", ip2))
	create(ctx, t, aks01.Client, dnsEndpoint(ns, "api", controller, name, "CNAME", gw1))
	waitAnswer(ctx, t, at, q, chain1, diag()...)
	at = create(ctx, t, aks02.Client, dnsEndpoint(ns, "api", controller, name, "CNAME", gw2))
	waitAnswer(ctx, t, at, weu.Query(gw2, "A"), []string{"A " + ip2}, diag()...)
	waitSyncs(ctx, t, at, ed1, ed2)
	stable(t, "1. both publish, aks01 owns", []framework.Query{q}, [][]string{chain1}, ed1, ed2)
	assertTXT(t, framework.LogZone(ctx, t, "1. both publish", weu), txtName, true, owner1)

	// 2. aks01 is lost.
	if err := ed1.Stop(); err != nil {
		t.Fatal(err)
	}
	stable(t, "2. aks01 lost", []framework.Query{q}, [][]string{chain1}, ed2)

	// 3. The ownership TXT rewritten to aks02 in one dynamic update; aks02's instance runs on.
	writer := zonewriter.RFC2136{Server: fmt.Sprintf("127.0.0.1:%d", weu.Port), Zone: weu.Zone}
	takeover := func(step, from, to string, want, was []string, survivor *framework.ExternalDNS) time.Duration {
		t.Helper()
		pid := survivor.Pid()
		recs, err := weu.ZoneRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var owned *framework.Record
		for i, r := range recs {
			if r.Type == "TXT" && r.Name == txtName && strings.Contains(r.Data, "external-dns/owner="+from+",") {
				owned = &recs[i]
			}
		}
		if owned == nil {
			t.Fatalf("%s: no ownership TXT of %s at %s to pass:\n%v", step, from, txtName, recs)
		}
		passed, ok := failover.PassOwnership(owned.Data, from, to)
		if !ok {
			t.Fatalf("%s: %s is not an ownership value of %s", step, owned.Data, from)
		}
		// The name answers was before the write (the watch below may first look after the switch:
		// on a loaded machine one dig has taken 700 ms, longer than ExternalDNS's 500 ms interval).
		if got := framework.MustDig(ctx, t, q); !framework.SameRecords(got, was) {
			t.Fatalf("%s: before the write %s answers %v, want %v", step, q, got, was)
		}
		at := time.Now()
		if err := writer.PassOwnership(ctx, txtName, uint32(owned.TTL), owned.Data, passed); err != nil {
			t.Fatal(err)
		}
		tr, err := framework.Converge(ctx, q, framework.Resolves(want...), convergeTimeout, 20*time.Millisecond, diag()...)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(at)
		t.Logf("%s: %s -> %s by rewriting %s: converged %s after the write; seen: %s", step, from, to, txtName, took.Round(time.Millisecond), tr)
		// A direct switch: the old answer then the new, or the new at once; nothing in between.
		if answers := tr.Answers(); len(answers) > 2 || len(answers) == 2 && !framework.SameRecords(answers[0].Answer, was) {
			t.Errorf("%s: want a direct switch from %v to %v, seen: %s", step, was, want, tr)
		}
		if survivor.Pid() != pid {
			t.Errorf("%s: the taking ExternalDNS restarted (pid %d -> %d); the takeover must not need one", step, pid, survivor.Pid())
		}
		// A second stand-in passing the same record from what it read before: refused, and the
		// zone left as the first pass made it.
		if err := writer.PassOwnership(ctx, txtName, uint32(owned.TTL), owned.Data, passed); !errors.Is(err, zonewriter.ErrChanged) {
			t.Errorf("%s: passing %s again from the value it no longer has: %v, want ErrChanged", step, txtName, err)
		}
		recs = framework.LogZone(ctx, t, step, weu)
		assertTXT(t, recs, txtName, true, to)
		if framework.HasRecord(recs, txtName, "TXT", "external-dns/owner="+from+",") {
			t.Errorf("%s: %s's ownership value of %s is still there", step, from, txtName)
		}
		return took
	}
	took := takeover("3. takeover", owner1, owner2, chain2, chain1, ed2)

	// 4. aks01 comes back unchanged: fenced by the ownership TXT, it leaves the name alone.
	ed1, err := aks01.StartExternalDNS(ctx, t, opts1)
	if err != nil {
		t.Fatal(err)
	}
	stable(t, "4. aks01 back, fenced", []framework.Query{q, weu.Query(gw1, "A")}, [][]string{chain2, {"A " + ip1}}, ed1, ed2)
	wantSkip := fmt.Sprintf(`because owner id does not match (found: \"%s\", required: \"%s\")`, owner2, owner1)
	if line := firstLineWith(ed1.Log(), wantSkip); line == "" {
		t.Errorf("4. aks01's ExternalDNS did not log that %s owns %s now\n%s", owner2, name, ed1.Diagnostics())
	}

	// 5. Back to aks01 by the same write the other way.
	back := takeover("5. failback", owner2, owner1, chain1, chain2, ed1)
	stable(t, "5. after the failback", []framework.Query{q}, [][]string{chain1}, ed1, ed2)
	interval := "?"
	for _, arg := range ed1.Args {
		if strings.HasPrefix(arg, "--interval=") {
			interval = strings.TrimPrefix(arg, "--interval=")
		}
	}
	t.Logf("ownership passed in %s (takeover) and %s (failback), with --interval=%s", took.Round(time.Millisecond), back.Round(time.Millisecond), interval)
}

// TestZoneWriter_HeartbeatSignedWithTSIG: the operator's zone writer keeps one heartbeat per
// cluster in a zone that takes only updates signed with its TSIG key (as a production BIND does):
// written, it reads back as a fresh heartbeat; written again, it replaces the old value; unsigned,
// the server refuses it.
func TestZoneWriter_HeartbeatSignedWithTSIG(t *testing.T) {
	ctx := t.Context()
	zone, err := framework.StartBind(ctx, t, framework.BindOptions{Name: "weu", Zone: "example.com", TSIG: true})
	if err != nil {
		t.Fatal(err)
	}
	signed := zonewriter.RFC2136{Server: fmt.Sprintf("127.0.0.1:%d", zone.Port), Zone: zone.Zone,
		TSIGName: zone.TSIG.Name, TSIGAlgorithm: zone.TSIG.Algorithm, TSIGSecret: zone.TSIG.Secret}
	name := failover.HeartbeatName("aks01", "weu", zone.Zone) + "."
	read := func() []failover.Heartbeat {
		t.Helper()
		recs, err := zone.ZoneRecords(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var beats []failover.Heartbeat
		for _, r := range recs {
			if r.Type == "TXT" && r.Name == name {
				hb, ok := failover.ParseHeartbeat(zone.Zone, r.Data)
				if !ok {
					t.Errorf("%s holds %s, not a heartbeat", name, r.Data)
				}
				beats = append(beats, hb)
			}
		}
		return beats
	}
	first := time.Now().Add(-time.Minute).Truncate(time.Second)
	if err := signed.WriteHeartbeat(ctx, "aks01", "weu", failover.HeartbeatValue(failover.Heartbeat{At: first, GatewayAnswers: true})); err != nil {
		t.Fatal(err)
	}
	if beats := read(); len(beats) != 1 || !beats[0].At.Equal(first) || !beats[0].GatewayAnswers {
		t.Fatalf("after the first write: %+v, want one heartbeat at %s, gateway answering", beats, first)
	}
	second := first.Add(10 * time.Second)
	if err := signed.WriteHeartbeat(ctx, "aks01", "weu", failover.HeartbeatValue(failover.Heartbeat{At: second, GatewayAnswers: false})); err != nil {
		t.Fatal(err)
	}
	if beats := read(); len(beats) != 1 || !beats[0].At.Equal(second) || beats[0].GatewayAnswers {
		t.Errorf("after the second write: %+v, want one heartbeat at %s, gateway failing", beats, second)
	}
	unsigned := signed
	unsigned.TSIGName = ""
	if err := unsigned.WriteHeartbeat(ctx, "aks01", "weu", failover.HeartbeatValue(failover.Heartbeat{At: second.Add(10 * time.Second), GatewayAnswers: true})); err == nil {
		t.Error("an unsigned heartbeat was accepted by a zone that takes only signed updates")
	} else {
		t.Logf("unsigned: %v", err)
	}
	if beats := read(); len(beats) != 1 || !beats[0].At.Equal(second) {
		t.Errorf("after the refused write: %+v, want the second heartbeat still", beats)
	}

	// Past 255 bytes a value is several strings of one TXT record: a heartbeat naming 20 gateways,
	// and an ownership value as ExternalDNS writes it for a long namespace and name (a zone file's
	// parser splits it at 255 bytes; BIND's nsupdate takes the strings as given), which a pass's
	// prerequisite must match exactly.
	var targets []string
	for i := range 20 {
		targets = append(targets, fmt.Sprintf("aks01-weu-gateway-%02d.%s", i, zone.Zone))
	}
	if err := signed.WriteHeartbeat(ctx, "aks01", "weu", failover.HeartbeatValue(failover.Heartbeat{At: second.Add(20 * time.Second), GatewayAnswers: true, Owner: "external-dns-weu-aks01", Targets: targets})); err != nil {
		t.Fatal(err)
	}
	reading, err := signed.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if beats := reading.Beats["weu"]; len(beats) != 1 || !slices.Equal(beats[0].Targets, targets) {
		t.Errorf("a heartbeat naming 20 gateways reads back as %+v", beats)
	}
	ownership := func(owner string) string {
		return "heritage=external-dns,external-dns/owner=" + owner + ",external-dns/resource=crd/" + strings.Repeat("n", 63) + "/" + strings.Repeat("r", 200)
	}
	long := "weu-d-cname-long." + zone.Zone + "."
	var quoted []string
	for _, s := range failover.TXTStrings(ownership("external-dns-weu-aks01")) {
		quoted = append(quoted, `"`+s+`"`)
	}
	if err := zone.Update(ctx, "update add "+long+" 300 TXT "+strings.Join(quoted, " ")); err != nil {
		t.Fatal(err)
	}
	if err := signed.PassOwnership(ctx, long, 300, ownership("external-dns-weu-aks01"), ownership("external-dns-weu-aks02")); err != nil {
		t.Fatalf("passing a %d-byte ownership value: %v", len(ownership("")), err)
	}
	if reading, err = signed.Read(ctx); err != nil {
		t.Fatal(err)
	}
	if got := reading.TXT[strings.TrimSuffix(long, ".")].Values; !slices.Equal(got, []string{ownership("external-dns-weu-aks02")}) {
		t.Errorf("after the pass, %s holds %q", long, got)
	}
}

// TestFailover_OwnershipPassesInAzurePrivateDNS is the same measurement in an Azure Private DNS
// zone (the Azure stand-in, with Resource Manager's ETags), with two real ExternalDNS instances run
// with the arguments the ExternalDNS chart renders from docs/examples/external-dns/weu-values.yaml
// (provider azure-private-dns), an owner ID each and a 1 s interval: the operator's Azure zone
// writer passes the ownership record set with If-Match on its ETag; the survivor's running
// ExternalDNS rewrites the CNAME record set in place (it is never absent); the lost cluster's,
// back, leaves it alone.
func TestFailover_OwnershipPassesInAzurePrivateDNS(t *testing.T) {
	ctx := t.Context()
	const controller, ns = "external-dns-weu", "myapp"
	z := startAzureExampleZone(t, controller)
	az, sub, group, domain, prefix, argsFor := z.az, z.sub, z.group, z.domain, z.prefix, z.argsFor
	owner1, owner2 := controller+"-aks01", controller+"-aks02"
	aks01, aks02 := startWEUClusters(t, ns)
	ed1, err := aks01.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: controller, Args: argsFor(owner1)})
	if err != nil {
		t.Fatal(err)
	}
	ed2, err := aks02.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: controller, Args: argsFor(owner2)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("aks02's ExternalDNS: %s", strings.Join(ed2.Args, " "))

	label := "api-ns-d-dev-myapp"
	name, gw1, gw2 := label+"."+domain, "aks01-weu-internal."+domain, "aks02-weu-internal."+domain
	cnameKey, txtKey := label+" CNAME", prefix+"cname-"+label+" TXT"
	cname := func() string { return strings.Join(az.Records(sub, group, domain)[cnameKey], ",") }
	waitCNAME := func(step, want string) {
		t.Helper()
		err := framework.Poll(ctx, convergeTimeout, 50*time.Millisecond, step+": "+name+" CNAME "+want, func(context.Context) (bool, string, error) {
			got := cname()
			return got == want, got, nil
		})
		if err != nil {
			t.Fatalf("%v\n%s\n%s\n%s", err, ed1.Diagnostics(), ed2.Diagnostics(), az.Diagnostics())
		}
	}
	create(ctx, t, aks01.Client, dnsEndpoint(ns, "api", controller, name, "CNAME", gw1))
	waitCNAME("1. aks01 publishes", gw1)
	at := create(ctx, t, aks02.Client, dnsEndpoint(ns, "api", controller, name, "CNAME", gw2))
	waitSyncs(ctx, t, at, ed1, ed2)
	waitSyncs(ctx, t, time.Now(), ed1, ed2)
	if got := cname(); got != gw1 {
		t.Fatalf("1. both publish: %s CNAME %s, want aks01's %s", name, got, gw1)
	}
	values := az.Records(sub, group, domain)[txtKey]
	if len(values) != 1 || !strings.Contains(values[0], "external-dns/owner="+owner1+",") {
		t.Fatalf("1. the ownership record set %s holds %v, want one value of %s", txtKey, values, owner1)
	}

	// 2. aks01 lost; 3. the operator's Azure writer passes the record to aks02.
	if err := ed1.Stop(); err != nil {
		t.Fatal(err)
	}
	writer, err := zonewriter.NewAzurePrivateDNS(azureprivatedns.Zone{SubscriptionID: sub, ResourceGroup: group, ZoneName: domain, ConfigFile: z.file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	passed, ok := failover.PassOwnership(values[0], owner1, owner2)
	if !ok {
		t.Fatalf("%s is not an ownership value of %s", values[0], owner1)
	}
	pid := ed2.Pid()
	seen := []string{cname()}
	at = time.Now()
	if err := writer.PassOwnership(ctx, strings.TrimSuffix(txtKey, " TXT"), values[0], passed); err != nil {
		t.Fatal(err)
	}
	err = framework.Poll(ctx, convergeTimeout, 20*time.Millisecond, "3. takeover: "+name+" CNAME "+gw2, func(context.Context) (bool, string, error) {
		if got := cname(); got != seen[len(seen)-1] {
			seen = append(seen, got)
		}
		return seen[len(seen)-1] == gw2, strings.Join(seen, " -> "), nil
	})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, ed2.Diagnostics(), az.Diagnostics())
	}
	t.Logf("3. takeover in Azure Private DNS: %s CNAME %s, %s after the ownership write (ExternalDNS --interval=1s)", name, strings.Join(seen, " -> "), time.Since(at).Round(time.Millisecond))
	if len(seen) != 2 {
		t.Errorf("3. want the CNAME record set rewritten in place from %s to %s, seen %v (\"\" is absent)", gw1, gw2, seen)
	}
	if ed2.Pid() != pid {
		t.Errorf("3. aks02's ExternalDNS restarted; the takeover must not need one")
	}
	if err := writer.PassOwnership(ctx, strings.TrimSuffix(txtKey, " TXT"), values[0], passed); !errors.Is(err, zonewriter.ErrChanged) {
		t.Errorf("3. passing again from the value it no longer has: %v, want ErrChanged", err)
	}

	// 4. aks01 back, unchanged: fenced, it leaves the record set alone.
	if ed1, err = aks01.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: controller, Args: argsFor(owner1)}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		waitSyncs(ctx, t, time.Now(), ed1, ed2)
		if got := cname(); got != gw2 {
			t.Fatalf("4. aks01 back: %s CNAME %s, want aks02's %s to stay", name, got, gw2)
		}
	}
	if values := az.Records(sub, group, domain)[txtKey]; len(values) != 1 || !strings.Contains(values[0], "external-dns/owner="+owner2+",") {
		t.Errorf("4. the ownership record set %s holds %v, want aks02's only", txtKey, values)
	}
}

// azureExampleZone is the weu zone of docs/examples/external-dns/weu-values.yaml on the Azure
// stand-in, with its azure.json.
type azureExampleZone struct {
	az                               *framework.AzurePrivateDNS
	sub, group, domain, prefix, file string
	example                          *framework.ExternalDNSExample
}

// startAzureExampleZone starts the Azure stand-in with the zone the ExternalDNS chart renders
// from the weu example values for controller.
func startAzureExampleZone(t testing.TB, controller string) *azureExampleZone {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	z := &azureExampleZone{}
	if z.az, err = framework.StartAzurePrivateDNS(t); err != nil {
		t.Fatal(err)
	}
	if z.example, err = framework.RenderExternalDNSExample(t.Context(), filepath.Join(root, "docs", "examples", "external-dns", "weu-values.yaml"), controller, "aks01"); err != nil {
		t.Fatal(err)
	}
	e := z.example
	z.sub, z.group, z.domain, z.prefix = e.Flag("azure-subscription-id"), e.Flag("azure-resource-group"), e.Flag("domain-filter"), e.Flag("txt-prefix")
	z.az.CreateZone(z.sub, z.group, z.domain)
	if z.file, err = z.az.AzureJSON(z.sub, z.group); err != nil {
		t.Fatal(err)
	}
	return z
}

// failoverZone is m's controller entry for the zone (verification and failover through Resource
// Manager with the azure.json file, fast: a listing a second at most) and its ExternalDNS options.
func (z *azureExampleZone) failoverZone(controller string, m *failoverMember, file string) (clusterv1alpha1.ExternalDNSController, framework.ExternalDNSOptions) {
	return clusterv1alpha1.ExternalDNSController{Name: controller, Region: "weu",
			Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &clusterv1alpha1.AzurePrivateDNSVerification{
				SubscriptionID: z.sub, ResourceGroup: z.group, ZoneName: z.domain, ConfigFile: file,
				Interval: &metav1.Duration{Duration: time.Second}, Timeout: &metav1.Duration{Duration: 5 * time.Second}}},
			Failover: &clusterv1alpha1.ZoneFailover{OwnerID: m.owner, TXTPrefix: z.prefix}},
		framework.ExternalDNSOptions{Name: controller, Args: z.argsFor(m.owner)}
}

// argsFor is the chart's ExternalDNS command line for the zone, run here with owner's ID and a 1 s
// interval.
func (z *azureExampleZone) argsFor(owner string) []string {
	args := slices.DeleteFunc(z.example.AzureLocalArgs(z.file), func(a string) bool {
		return strings.HasPrefix(a, "--txt-owner-id=") || strings.HasPrefix(a, "--interval=")
	})
	return append(args, "--txt-owner-id="+owner, "--interval=1s")
}
