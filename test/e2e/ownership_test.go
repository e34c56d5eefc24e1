//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestRecommendedOwnership_PerClusterOwnerIDs verifies, with the real ExternalDNS, the
// configuration docs/EXTERNALDNS-INTEGRATION.md recommends instead of the architecture's: every
// cluster writing a zone uses the SAME --txt-prefix (one per zone) and its OWN --txt-owner-id
// (<controller>-<cluster>). Two clusters of one region (aks01 and aks02, both weu) share the weu
// zone, as in the architecture's "Cross-Cluster DNS Takeover" section.
//
// Proven in order:
//  1. Coexistence: each cluster's records (here their gateway address records) are left alone by
//     the other cluster's ExternalDNS: no mutual deletion, no flapping.
//  2. A name both clusters publish stays with the first publisher, and the second one's log says
//     who owns it (found: "external-dns-weu-aks01"), unlike with per-cluster prefixes (where
//     the record just looks unowned).
//  3. Hand-over: when the owner stops publishing (its DNSEndpoint is deleted, as when its DNSPolicy
//     turns inactive), it deletes the record and the other cluster creates its own at its next
//     synchronization.
//  4. Takeover from a cluster that is gone (its ExternalDNS no longer runs, so nothing deletes its
//     records): the survivor's ExternalDNS restarted with --migrate-from-txt-owner=<the lost
//     owner> rewrites the record to its own target in one update, with no NXDOMAIN in between,
//     and takes over the lost cluster's other records too (deleting the ones it does not publish
//     itself), the lost owner's ownership TXT values with them (ExternalDNS v0.22.0 left those
//     behind, for a person to delete: the procedure's step 4, still run here, finds nothing); the
//     flag is removed again.
//  5. The lost cluster comes back with its DNSEndpoints unchanged: it republishes what nobody owns
//     (its gateway address) and waits for the name the survivor now owns: no flapping.
//  6. When the survivor stops publishing the name, the returned cluster takes it as in 3.
func TestRecommendedOwnership_PerClusterOwnerIDs(t *testing.T) {
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
	weu, aks01, aks02, opts1, opts2, ed1, ed2 := z.weu, z.aks01, z.aks02, z.opts1, z.opts2, z.ed1, z.ed2
	t.Logf("aks01: %s", strings.Join(ed1.Args, " "))
	diag := func() []func() string { return []func() string{ed1.Diagnostics, ed2.Diagnostics, weu.Diagnostics} }
	chain1 := []string{"CNAME " + gw1 + ".", "A " + ip1}
	chain2 := []string{"CNAME " + gw2 + ".", "A " + ip2}
	txtName := prefix + "cname-" + name + "."

	// 1. Each cluster publishes its gateway address; aks01 publishes the service name.
	at := create(ctx, t, aks01.Client, dnsEndpoint(ns, "gateway", controller, gw1, "A", ip1))
	create(ctx, t, aks02.Client, dnsEndpoint(ns, "gateway", controller, gw2, "A", ip2))
	ep1 := dnsEndpoint(ns, "api", controller, name, "CNAME", gw1)
	create(ctx, t, aks01.Client, ep1)
	waitAnswer(ctx, t, at, weu.Query(name, "A"), chain1, diag()...)
	waitAnswer(ctx, t, at, weu.Query(gw2, "A"), []string{"A " + ip2}, diag()...)
	before := weu.Log()
	stable(t, "1. coexistence", []framework.Query{weu.Query(name, "A"), weu.Query(gw1, "A"), weu.Query(gw2, "A")},
		[][]string{chain1, {"A " + ip1}, {"A " + ip2}}, ed1, ed2)
	if n := strings.Count(strings.TrimPrefix(weu.Log(), before), "updating zone"); n != 0 {
		t.Errorf("1. named applied %d updates while both clusters' records should have been left alone", n)
	}
	recs := framework.LogZone(ctx, t, "1. coexistence", weu)
	assertTXT(t, recs, prefix+"a-"+gw1+".", true, owner1)
	assertTXT(t, recs, prefix+"a-"+gw2+".", true, owner2)
	assertTXT(t, recs, txtName, true, owner1)

	// 2. aks02 publishes the same name: nothing changes, and aks02 says who owns it.
	at = create(ctx, t, aks02.Client, dnsEndpoint(ns, "api", controller, name, "CNAME", gw2))
	waitSyncs(ctx, t, at, ed1, ed2)
	stable(t, "2. contested name", []framework.Query{weu.Query(name, "A")}, [][]string{chain1}, ed1, ed2)
	wantSkip := fmt.Sprintf(`Skipping endpoint %s 30 IN CNAME  %s [] because owner id does not match (found: \"%s\", required: \"%s\")`, name, gw2, owner1, owner2)
	if line := firstLineWith(ed2.Log(), wantSkip); line == "" {
		t.Errorf("2. aks02's ExternalDNS did not log that %s owns %s (want a line containing %s)\n%s", owner1, name, wantSkip, ed2.Diagnostics())
	} else {
		t.Logf("2. aks02's ExternalDNS: %s", line)
	}

	// 3. Hand-over: aks01 stops publishing the name.
	at = remove(ctx, t, aks01.Client, ep1)
	tr, err := framework.Converge(ctx, weu.Query(name, "A"), framework.Resolves(chain2...), convergeTimeout, 20*time.Millisecond, diag()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3. hand-over: converged %s after the delete; seen: %s", time.Since(at).Round(time.Millisecond), tr)
	recs = framework.LogZone(ctx, t, "3. after the hand-over", weu)
	assertTXT(t, recs, txtName, true, owner2)

	// 4. aks02 is lost: its ExternalDNS stops, its records stay. aks01 publishes the name again
	// and waits, since aks02 owns it.
	if err := ed2.Stop(); err != nil {
		t.Fatal(err)
	}
	at = create(ctx, t, aks01.Client, dnsEndpoint(ns, "api", controller, name, "CNAME", gw1))
	waitSyncs(ctx, t, at, ed1)
	stable(t, "4. aks02 lost, aks01 publishes", []framework.Query{weu.Query(name, "A")}, [][]string{chain2}, ed1)

	// aks01's ExternalDNS restarted with --migrate-from-txt-owner=<aks02's owner id>.
	if err := ed1.Stop(); err != nil {
		t.Fatal(err)
	}
	migrating := opts1
	migrating.ExtraArgs = []string{"--migrate-from-txt-owner=" + owner2}
	// The answers are watched from before the start, since the start returns after the first
	// synchronization, which is the one that takes over.
	var convErr error
	converged := make(chan struct{})
	at = time.Now()
	go func() {
		defer close(converged)
		tr, convErr = framework.Converge(ctx, weu.Query(name, "A"), framework.Resolves(chain1...), convergeTimeout, 20*time.Millisecond, weu.Diagnostics)
	}()
	ed1m, err := aks01.StartExternalDNS(ctx, t, migrating)
	<-converged
	if err != nil {
		t.Fatal(err)
	}
	if convErr != nil {
		t.Fatalf("%v\n%s", convErr, ed1m.Diagnostics())
	}
	t.Logf("4. takeover with --migrate-from-txt-owner: converged %s after the start; seen: %s", time.Since(at).Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, chain2) {
		t.Errorf("4. want a direct switch from aks02's target to aks01's, seen: %s", tr)
	}
	// aks02's gateway record is now aks01's, and aks01 does not publish it: deleted.
	waitAnswer(ctx, t, at, weu.Query(gw2, "A"), nil, ed1m.Diagnostics, weu.Diagnostics)
	// The lost owner's ownership values go with the takeover: ExternalDNS v0.23.0 deletes them by
	// their own content (v0.22.0's rfc2136 provider computed that content with the new owner and
	// left aks02's values behind, next to aks01's, for a person to delete).
	recs = framework.LogZone(ctx, t, "4. after the takeover", weu)
	assertTXT(t, recs, txtName, true, owner1)
	if framework.HasRecord(recs, txtName, "TXT", "external-dns/owner="+owner2+",") {
		t.Errorf("4. the lost owner's ownership value of %s is left behind", txtName)
	}
	assertTXT(t, recs, prefix+"a-"+gw2+".", false, "")
	before = weu.Log()
	syncs, err := ed1m.SyncsDuring(ctx, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("4. with --migrate-from-txt-owner still set: named applied %d updates in %d synchronizations",
		strings.Count(strings.TrimPrefix(weu.Log(), before), "updating zone"), syncs)

	// The flag is removed again, and whatever the lost owner left behind is deleted by hand (the
	// procedure's step for older versions: nothing with v0.23.0).
	if err := ed1m.Stop(); err != nil {
		t.Fatal(err)
	}
	if ed1, err = aks01.StartExternalDNS(ctx, t, opts1); err != nil {
		t.Fatal(err)
	}
	var deletes []string
	for _, r := range recs {
		if r.Type == "TXT" && strings.Contains(r.Data, "external-dns/owner="+owner2+",") {
			deletes = append(deletes, fmt.Sprintf("update delete %s TXT %s", r.Name, r.Data))
		}
	}
	if err := weu.Update(ctx, deletes...); err != nil {
		t.Fatal(err)
	}
	t.Logf("4. deleted %d leftover ownership TXT values of %s:\n    %s", len(deletes), owner2, strings.Join(deletes, "\n    "))
	before = weu.Log()
	stable(t, "4. after the clean-up", []framework.Query{weu.Query(name, "A"), weu.Query(gw1, "A")}, [][]string{chain1, {"A " + ip1}}, ed1)
	if n := strings.Count(strings.TrimPrefix(weu.Log(), before), "updating zone"); n != 0 {
		t.Errorf("4. named applied %d updates after the clean-up, want none", n)
	}
	recs = framework.LogZone(ctx, t, "4. after the clean-up", weu)
	assertTXT(t, recs, txtName, true, owner1)
	assertTXT(t, recs, prefix+"a-"+gw2+".", false, "")

	// 5. aks02 comes back with its DNSEndpoints unchanged: it republishes its gateway address
	// (nobody owns that name any more) and waits for the service name, which aks01 owns.
	at = time.Now()
	if ed2, err = aks02.StartExternalDNS(ctx, t, opts2); err != nil {
		t.Fatal(err)
	}
	waitAnswer(ctx, t, at, weu.Query(gw2, "A"), []string{"A " + ip2}, diag()...)
	stable(t, "5. aks02 back", []framework.Query{weu.Query(name, "A")}, [][]string{chain1}, ed1, ed2)

	// 6. And takes the name over as in 3 when aks01 stops publishing it.
	at = remove(ctx, t, aks01.Client, &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}})
	tr, err = framework.Converge(ctx, weu.Query(name, "A"), framework.Resolves(chain2...), convergeTimeout, 20*time.Millisecond, diag()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("6. hand-over back to aks02: converged %s after the delete; seen: %s", time.Since(at).Round(time.Millisecond), tr)
	recs = framework.LogZone(ctx, t, "6. after the hand-over", weu)
	assertTXT(t, recs, txtName, true, owner2)
	if framework.HasRecord(recs, txtName, "TXT", "external-dns/owner="+owner1+",") {
		t.Errorf("6. aks01's ownership TXT value %s is still there after aks01 deleted the record", txtName)
	}
}

// sharedZone is two weu clusters writing one BIND zone (example.com) in the recommended ownership
// configuration: the same --txt-prefix, an owner ID each, one ExternalDNS each, running.
type sharedZone struct {
	weu          *framework.BindServer
	aks01, aks02 *framework.Cluster
	opts1, opts2 framework.ExternalDNSOptions
	ed1, ed2     *framework.ExternalDNS
}

// startSharedZone starts the zone, the two clusters with the namespace ns, and their ExternalDNS.
func startSharedZone(t *testing.T, ns, controller, prefix, owner1, owner2 string) *sharedZone {
	t.Helper()
	ctx := t.Context()
	z := &sharedZone{}
	var err error
	if z.weu, err = framework.StartBind(ctx, t, framework.BindOptions{Name: "weu", Zone: "example.com"}); err != nil {
		t.Fatal(err)
	}
	z.aks01, z.aks02 = startWEUClusters(t, ns)
	z.opts1 = framework.ExternalDNSOptions{Name: controller, OwnerID: owner1, TXTPrefix: prefix}.ForBind(z.weu)
	z.opts2 = framework.ExternalDNSOptions{Name: controller, OwnerID: owner2, TXTPrefix: prefix}.ForBind(z.weu)
	err = parallel(func() error {
		var err error
		z.ed1, err = z.aks01.StartExternalDNS(ctx, t, z.opts1)
		return err
	}, func() error {
		var err error
		z.ed2, err = z.aks02.StartExternalDNS(ctx, t, z.opts2)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// startWEUClusters starts two weu clusters, aks01 and aks02, side by side, each with the
// namespace ns.
func startWEUClusters(t testing.TB, ns string) (aks01, aks02 *framework.Cluster) {
	t.Helper()
	ctx := t.Context()
	err := parallel(func() error {
		var err error
		aks01, err = framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "aks01-weu"})
		return err
	}, func() error {
		var err error
		aks02, err = framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "aks02-weu"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(ctx, t, aks01.Client, ns)
	createNamespace(ctx, t, aks02.Client, ns)
	return aks01, aks02
}

// stable watches the queries for observeWindow while counting the synchronizations of eds, and
// fails if any answer differs from its want at any moment or an instance synchronized fewer than
// observeWindowSyncs times (the window would prove nothing).
func stable(t testing.TB, title string, queries []framework.Query, wants [][]string, eds ...*framework.ExternalDNS) {
	t.Helper()
	ctx := t.Context()
	obs := make([][]framework.Observation, len(queries))
	syncs := make([]int, len(eds))
	errs := make([]error, len(eds))
	var fns []func() error
	for i, q := range queries {
		fns = append(fns, func() error {
			obs[i] = framework.ObserveAnswers(ctx, q, observeWindow, 50*time.Millisecond)
			return nil
		})
	}
	for i, ed := range eds {
		fns = append(fns, func() error { syncs[i], errs[i] = ed.SyncsDuring(ctx, observeWindow); return nil })
	}
	_ = parallel(fns...)
	for i, q := range queries {
		if len(obs[i]) != 1 || obs[i][0].Err != nil || !framework.SameRecords(obs[i][0].Answer, wants[i]) {
			t.Errorf("%s: %s did not stay %v for %s; observed %v", title, q, wants[i], observeWindow, obs[i])
		}
	}
	for i, ed := range eds {
		if errs[i] != nil {
			t.Errorf("%s: %v", title, errs[i])
		} else if syncs[i] < observeWindowSyncs {
			t.Errorf("%s: %s synchronized %d times in %s, want at least %d", title, ed.OwnerID, syncs[i], observeWindow, observeWindowSyncs)
		}
	}
	t.Logf("%s: %d queries stable for %s (synchronizations: %v)", title, len(queries), observeWindow, syncs)
}
