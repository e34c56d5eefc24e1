//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestCrossClusterSameOwnerID records what ExternalDNS v0.23.0 really does when two clusters
// (two control planes, one ExternalDNS each) manage the same zone with the same --txt-owner-id,
// as the architecture's "Cross-Cluster DNS Takeover" section describes, and publish the same name
// with different targets.
//
// Observed (and asserted):
//   - Different --txt-prefix (weu-p-aks01-, weu-p-aks02-): no takeover and no flapping. The first
//     publisher keeps the record; the second finds no ownership TXT under its own prefix, treats
//     the record as unowned ("owner id does not match (found: \"\" ...)") and leaves it alone.
//     When the first cluster deletes its DNSEndpoint (policy sync), it deletes the record and
//     its TXT, and on its next synchronization the second creates its own record and TXT: a
//     hand-over through a short NXDOMAIN window, not a takeover. The first cluster re-publishing
//     afterwards changes nothing.
//   - Same --txt-prefix: both find "their" TXT, both own the record, and each synchronization
//     rewrites it to its own target: the record flaps about once per interval, indefinitely. A
//     record only one cluster publishes flaps too: the other cluster owns it, does not publish
//     it, and deletes it on every synchronization.
func TestCrossClusterSameOwnerID(t *testing.T) {
	ctx := t.Context()
	const (
		zone    = "example.com"
		ns      = "myapp"
		owner   = "external-dns-weu"
		target1 = "aks01-weu-gateway.example.com"
		target2 = "aks02-weu-gateway.example.com"
	)
	weu, err := framework.StartBind(ctx, t, framework.BindOptions{Name: "weu", Zone: zone})
	if err != nil {
		t.Fatal(err)
	}
	aks01, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "aks01"})
	if err != nil {
		t.Fatal(err)
	}
	aks02, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "aks02"})
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(ctx, t, aks01.Client, ns)
	createNamespace(ctx, t, aks02.Client, ns)

	// One ExternalDNS per cluster for the scenario, stopped when the subtest ends.
	startPair := func(t *testing.T, controller, prefix1, prefix2 string) (ed1, ed2 *framework.ExternalDNS, diag []func() string) {
		t.Helper()
		var err error
		ed1, err = aks01.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: controller, OwnerID: owner, TXTPrefix: prefix1}.ForBind(weu))
		if err != nil {
			t.Fatal(err)
		}
		ed2, err = aks02.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: controller, OwnerID: owner, TXTPrefix: prefix2}.ForBind(weu))
		if err != nil {
			t.Fatal(err)
		}
		return ed1, ed2, []func() string{ed1.Diagnostics, ed2.Diagnostics, weu.Diagnostics}
	}

	t.Run("DifferentPrefixes", func(t *testing.T) {
		const (
			controller = "external-dns-weu"
			name       = "api.example.com"
			txt1       = "weu-p-aks01-cname-api.example.com."
			txt2       = "weu-p-aks02-cname-api.example.com."
		)
		ed1, ed2, diag := startPair(t, controller, "weu-p-aks01-", "weu-p-aks02-")
		q := weu.Query(name, "CNAME")

		// 1. aks01 publishes first.
		ep1 := dnsEndpoint(ns, "api", controller, name, "CNAME", target1)
		at := create(ctx, t, aks01.Client, ep1)
		waitAnswer(ctx, t, at, q, []string{"CNAME " + target1}, diag...)
		waitOwnershipTXT(ctx, t, weu, txt1)
		recs := framework.LogZone(ctx, t, "1. aks01 published "+name, weu)
		assertTXT(t, recs, txt1, true, owner)

		// 2. aks02 publishes the same name with its own target: nothing changes.
		at = create(ctx, t, aks02.Client, dnsEndpoint(ns, "api", controller, name, "CNAME", target2))
		waitSyncs(ctx, t, at, ed1, ed2)
		obs := observe(ctx, t, "2. aks02 publishes "+name, q)
		if len(obs) != 1 || !framework.SameRecords(obs[0].Answer, []string{"CNAME " + target1}) {
			t.Errorf("after aks02 published, want %s to stay CNAME %s, observed %v", name, target1, obs)
		}
		recs = framework.LogZone(ctx, t, "2. aks02 published "+name, weu)
		assertTXT(t, recs, txt1, true, owner)
		assertTXT(t, recs, txt2, false, "")
		if log := ed2.Log(); !strings.Contains(log, "Skipping endpoint "+name) || !strings.Contains(log, `because owner id does not match (found: \"\", required: \"`+owner+`\")`) {
			t.Errorf("aks02's ExternalDNS did not log that it skips %s for lack of ownership\n%s", name, ed2.Diagnostics())
		}

		// 3. aks01 deletes its DNSEndpoint: aks01 deletes the record, aks02 then creates its own.
		at = remove(ctx, t, aks01.Client, ep1)
		// Watch the hand-over as it happens (the NXDOMAIN window between aks01's delete and
		// aks02's create is usually visible), then make sure it completed.
		obsStart := time.Now()
		obs = framework.ObserveAnswers(ctx, q, 4*time.Second, 50*time.Millisecond)
		handedOver := false
		for _, o := range obs {
			t.Logf("3. aks01 deleted its DNSEndpoint: %s", o)
			if o.Err == nil && framework.SameRecords(o.Answer, []string{"CNAME " + target2}) && !handedOver {
				handedOver = true
				t.Logf("handed over %s after the delete -> CNAME %s", (obsStart.Sub(at) + o.At).Round(time.Millisecond), target2)
			}
		}
		if !handedOver {
			waitAnswer(ctx, t, at, q, []string{"CNAME " + target2}, diag...)
		}
		waitOwnershipTXT(ctx, t, weu, txt2)
		recs = framework.LogZone(ctx, t, "3. aks01 deleted its DNSEndpoint", weu)
		assertTXT(t, recs, txt1, false, "")
		assertTXT(t, recs, txt2, true, owner)

		// 4. aks01 publishes again: aks02 keeps the record.
		at = create(ctx, t, aks01.Client, dnsEndpoint(ns, "api", controller, name, "CNAME", target1))
		waitSyncs(ctx, t, at, ed1, ed2)
		obs = observe(ctx, t, "4. aks01 publishes again", q)
		if len(obs) != 1 || !framework.SameRecords(obs[0].Answer, []string{"CNAME " + target2}) {
			t.Errorf("after aks01 re-published, want %s to stay CNAME %s, observed %v", name, target2, obs)
		}
		framework.LogZone(ctx, t, "4. aks01 published again", weu)
	})

	t.Run("SamePrefix", func(t *testing.T) {
		const (
			controller = "external-dns-weu-shared"
			name       = "web.example.com"
			txt        = "weu-p-cname-web.example.com."
		)
		_, _, diag := startPair(t, controller, "weu-p-", "weu-p-")
		q := weu.Query(name, "CNAME")

		at := create(ctx, t, aks01.Client, dnsEndpoint(ns, "web", controller, name, "CNAME", target1))
		waitAnswer(ctx, t, at, q, []string{"CNAME " + target1}, diag...)
		// Judged on the reading that held the record: aks02's instance shares the owner ID and
		// the prefix, owns the record without publishing it, and deletes it at its next
		// synchronization (step 3 below), so a second reading may already miss it.
		recs := waitOwnershipTXT(ctx, t, weu, txt)
		for _, r := range recs {
			t.Logf("1. aks01 published %s: %s", name, r)
		}
		assertTXT(t, recs, txt, true, owner)

		// Both instances now own the record and rewrite it on every synchronization. named logs
		// every dynamic update, so count the rewrites to each target during the window.
		at = create(ctx, t, aks02.Client, dnsEndpoint(ns, "web", controller, name, "CNAME", target2))
		waitAnswer(ctx, t, at, q, []string{"CNAME " + target2}, diag...)
		before := weu.Log()
		obs := observe(ctx, t, "2. aks02 publishes "+name+" with the same prefix", q)
		add1, add2 := fmt.Sprintf("adding an RR at '%s' CNAME %s.", name, target1), fmt.Sprintf("adding an RR at '%s' CNAME %s.", name, target2)
		seen, took, ok := waitZoneLog(ctx, weu, before, map[string]int{add1: 2, add2: 2})
		t.Logf("2. named applied %d updates to %s and %d to %s in %s; dig saw %d distinct answers in a row in the first %s",
			seen[add1], target1, seen[add2], target2, took.Round(100*time.Millisecond), len(obs), observeWindow)
		if !ok {
			t.Errorf("want the record to flap (each target written at least twice within %s), got %d x %s and %d x %s",
				flapTimeout, seen[add1], target1, seen[add2], target2)
		}
		recs = framework.LogZone(ctx, t, "2. both publish "+name, weu)
		assertTXT(t, recs, txt, true, owner)

		// 3. Sharing the ownership also breaks names only one cluster publishes: aks02's
		// instance owns aks01's record, does not publish it, and deletes it (--policy=sync);
		// aks01's recreates it on its next synchronization.
		const only1 = "only-aks01.example.com"
		at = create(ctx, t, aks01.Client, dnsEndpoint(ns, "only-aks01", controller, only1, "A", "10.9.9.1"))
		waitAnswer(ctx, t, at, weu.Query(only1, "A"), []string{"A 10.9.9.1"}, diag...)
		before = weu.Log()
		obs = observe(ctx, t, "3. aks01 alone publishes "+only1, weu.Query(only1, "A"))
		del, add := "deleting an RR at "+only1+" A", "adding an RR at '"+only1+"' A"
		seen, took, ok = waitZoneLog(ctx, weu, before, map[string]int{del: 2, add: 2})
		t.Logf("3. named deleted %s %d times and added it %d times in %s; dig saw %d distinct answers in a row in the first %s",
			only1, seen[del], seen[add], took.Round(100*time.Millisecond), len(obs), observeWindow)
		if !ok {
			t.Errorf("want aks02 to keep deleting the record only aks01 publishes (at least twice within %s), got %d deletes and %d adds", flapTimeout, seen[del], seen[add])
		}
	})
}

// observeWindow is how long a "does it stay put" observation lasts: about five synchronizations
// of each ExternalDNS.
const observeWindow = 5 * time.Second

// flapTimeout bounds the wait for a flapping record's rewrites: each ExternalDNS synchronizes
// every second when idle, far less often on a loaded machine, so the test waits for the rewrites
// it counts rather than counting them in a fixed window.
const flapTimeout = 60 * time.Second

// waitZoneLog waits until named's log, past before, holds each line of want at least as many
// times as want says (or flapTimeout passes), and returns the counts, how long it took and
// whether every count was reached.
func waitZoneLog(ctx context.Context, zone *framework.BindServer, before string, want map[string]int) (map[string]int, time.Duration, bool) {
	start := time.Now()
	seen := map[string]int{}
	for {
		window := strings.TrimPrefix(zone.Log(), before)
		done := true
		for line, n := range want {
			if seen[line] = strings.Count(window, line); seen[line] < n {
				done = false
			}
		}
		if done || time.Since(start) > flapTimeout || ctx.Err() != nil {
			return seen, time.Since(start), done
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// observe logs every change of answer to q during observeWindow and returns them.
func observe(ctx context.Context, t *testing.T, title string, q framework.Query) []framework.Observation {
	t.Helper()
	obs := framework.ObserveAnswers(ctx, q, observeWindow, 50*time.Millisecond)
	for _, o := range obs {
		t.Logf("%s: %s", title, o)
	}
	return obs
}

// waitSyncs waits until every ExternalDNS has completed a synchronization that started after
// since, i.e. has seen the change made at since.
func waitSyncs(ctx context.Context, t testing.TB, since time.Time, eds ...*framework.ExternalDNS) {
	t.Helper()
	for _, ed := range eds {
		if err := ed.WaitForSyncSince(ctx, since, syncTimeout); err != nil {
			t.Fatal(err)
		}
	}
}

// assertTXT checks that the ownership TXT record name exists with the owner, or does not exist.
// waitOwnershipTXT waits until zone holds ExternalDNS's ownership TXT name: ExternalDNS's RFC 2136
// provider may send a record and its ownership TXT in separate updates, so the record's answer
// alone does not say the TXT is there yet.
func waitOwnershipTXT(ctx context.Context, t *testing.T, zone *framework.BindServer, name string) []framework.Record {
	t.Helper()
	var recs []framework.Record
	if err := framework.Poll(ctx, convergeTimeout, 100*time.Millisecond, "ownership TXT "+name, func(ctx context.Context) (bool, string, error) {
		var err error
		if recs, err = zone.ZoneRecords(ctx); err != nil {
			return false, err.Error(), nil
		}
		return framework.HasRecord(recs, name, "TXT", "heritage=external-dns"), "", nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

func assertTXT(t *testing.T, recs []framework.Record, name string, present bool, owner string) {
	t.Helper()
	found := framework.HasRecord(recs, name, "TXT", "heritage=external-dns")
	switch {
	case present && !found:
		t.Errorf("ownership TXT %s missing", name)
	case present && !framework.HasRecord(recs, name, "TXT", "external-dns/owner="+owner+","):
		t.Errorf("ownership TXT %s does not name owner %s", name, owner)
	case !present && found:
		t.Errorf("ownership TXT %s present, want none", name)
	}
}
