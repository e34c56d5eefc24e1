//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestFailover_AnUpgradeTakesTheIntermediatesOverWithoutAGap upgrades both operators from the
// version whose routes published each policy's intermediate name through ExternalDNS
// (testenv.ExternalDNSIntermediates, built from the repository's history) to this one, which
// writes the intermediates itself, while every name is asked every 50 ms: aks01's operator
// releases the intermediate's ownership record to failover.IntermediateOwner (its write held 4 s on
// the way), then both clusters' routes stop publishing it, and no ExternalDNS deletes it. No name ever answers anything but
// aks01's gateway through the intermediate. Then aks01 is lost, and the names move to aks02 by
// one rewrite of the intermediate's CNAME, which nothing but the operators writes.
func TestFailover_AnUpgradeTakesTheIntermediatesOverWithoutAGap(t *testing.T) {
	ctx := t.Context()
	previous := buildOperatorAt(t, testenv.ExternalDNSIntermediates)
	var path *framework.DNSProxy // aks01's operator's path to the zone
	w, zone := startBindFailoverWorldVia(t, nil, func(zone *framework.BindServer, m *failoverMember) (int, int) {
		if m.cluster != "aks01" {
			return 0, 0
		}
		var err error
		if path, err = framework.StartDNSProxy(t, zone.Port); err != nil {
			t.Fatal(err)
		}
		return path.Port, 0
	}, func(m *failoverMember) { m.binary = previous })
	aks01, aks02 := w.aks01, w.aks02
	diag := func() []func() string { return append(w.diagnostics(), zone.Diagnostics) }
	routes := []string{"api", "web", "shop"}
	intermediate := naming.IntermediateName("internal", failoverNS, "weu", w.domain)
	intermediateTXT := "weu-d-cname-" + intermediate + "."
	var queries []framework.Query
	for _, svc := range routes {
		queries = append(queries, zone.Query(fmt.Sprintf("%s-ns-%s-dev-%s.%s", svc, worldEnvLetter, failoverNS, w.domain), "A"))
	}
	for _, m := range []*failoverMember{aks01, aks02} {
		create(ctx, t, m.cl.Client, failoverPolicy(failoverNS, &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}))
		for _, svc := range routes {
			create(ctx, t, m.cl.Client, &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: failoverNS, Name: svc},
				Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: svc, GatewayName: gatewayName, GatewayNamespace: gatewayNamespace, Environment: "dev", Application: failoverNS}})
		}
	}
	convergeAll(t, queries, w.chain(aks01), diag)
	for _, m := range []*failoverMember{aks01, aks02} {
		for _, svc := range routes {
			waitThrough(ctx, t, m, failoverNS, svc, intermediate)
		}
	}
	waitOwnershipTXT(ctx, t, zone, intermediateTXT)
	if owner := ownerIn(ctx, t, zone, intermediateTXT); owner != aks01.owner {
		t.Fatalf("before the upgrade the intermediate's ownership record names %q, want aks01's ExternalDNS (the earlier version's structure)", owner)
	}
	t.Logf("the earlier version's structure: the names through %s, owned by %s's ExternalDNS", intermediate, aks01.owner)

	// The upgrade, one cluster after the other, every name asked every 50 ms throughout.
	watchCtx, stopWatching := context.WithCancel(ctx)
	observed := make([][]framework.Observation, len(queries))
	var watches []func() error
	for i, q := range queries {
		watches = append(watches, func() error {
			observed[i] = framework.ObserveAnswers(watchCtx, q, 10*time.Minute, 50*time.Millisecond)
			return nil
		})
	}
	watched := make(chan error, 1)
	go func() { watched <- parallel(watches...) }()
	upgraded := time.Now()
	for _, m := range []*failoverMember{aks02, aks01} {
		if err := m.op.Stop(); err != nil {
			t.Fatal(err)
		}
		if m == aks01 {
			// Its release reaches the zone 4 s late, as over a slow network: the routes must
			// wait for a reading that shows it, or aks01's ExternalDNS, still the owner, deletes
			// the intermediate meanwhile.
			path.HoldConditionalUpdates(2, 4*time.Second)
		}
		m.binary = ""
		m.startOperator(t)
	}
	err := framework.Poll(ctx, 2*convergeTimeout, 200*time.Millisecond, "the intermediate released and no route publishing it", func(ctx context.Context) (bool, string, error) {
		owner := ownerIn(ctx, t, zone, intermediateTXT)
		published := 0
		for _, m := range []*failoverMember{aks01, aks02} {
			for _, svc := range routes {
				ep := &externaldnsv1alpha1.DNSEndpoint{}
				if err := m.cl.Client.Get(ctx, client.ObjectKey{Namespace: failoverNS, Name: naming.RouteEndpointName(svc, failoverController)}, ep); err != nil {
					return false, err.Error(), nil
				}
				published += len(ep.Spec.Endpoints) - 1
			}
		}
		return owner == failover.IntermediateOwner && published == 0, fmt.Sprintf("owner %q, %d DNSEndpoints still publishing the intermediate", owner, published), nil
	})
	// unchanged stops the watch and says whether every name kept aks01's answer throughout.
	unchanged := func() bool {
		stopWatching()
		if err := <-watched; err != nil {
			t.Fatal(err)
		}
		for i, q := range queries {
			if len(observed[i]) != 1 || observed[i][0].Err != nil || !framework.SameRecords(observed[i][0].Answer, w.chain(aks01)) {
				t.Errorf("%s changed during the upgrade, want aks01's gateway through the intermediate throughout: %v", q, observed[i])
			}
		}
		return !t.Failed()
	}
	if err != nil {
		unchanged()
		t.Fatal(err)
	}
	t.Logf("the intermediate is the operators' %s after the upgrade began", time.Since(upgraded).Round(time.Millisecond))
	// ExternalDNS synchronizes after the routes stopped publishing the intermediate: it must leave it.
	stable(t, "after the upgrade", queries, [][]string{w.chain(aks01), w.chain(aks01), w.chain(aks01)}, aks01.ed, aks02.ed)
	if !unchanged() {
		t.FailNow()
	}

	// The loss: the operators' one write moves every name.
	lost := w.lose()
	traces := convergeAll(t, queries, w.chain(aks02), diag)
	for i, tr := range traces {
		if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, w.chain(aks01)) {
			t.Errorf("%s: want a direct switch from aks01's gateway to aks02's, seen: %s", queries[i].Name, tr)
		}
	}
	t.Logf("every name answers aks02 %s after aks01 stopped", time.Since(lost).Round(time.Millisecond))
}

// ownerIn is the owner ID zone's ownership record txtName names ("" when it has none).
func ownerIn(ctx context.Context, t testing.TB, zone *framework.BindServer, txtName string) string {
	t.Helper()
	recs, err := zone.ZoneRecords(ctx)
	if err != nil {
		return ""
	}
	for _, r := range recs {
		if strings.EqualFold(strings.TrimSuffix(r.Name, "."), strings.TrimSuffix(txtName, ".")) && r.Type == "TXT" {
			return failover.OwnerOf(r.Data)
		}
	}
	return ""
}

// buildOperatorAt builds the operator of commit (from the repository's history) into the test's
// temporary directory.
func buildOperatorAt(t testing.TB, commit string) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	if err := testenv.ExtractCommit(root, commit, tree); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "manager")
	started := time.Now()
	build := exec.CommandContext(t.Context(), "go", "build", "-o", bin, ".")
	build.Dir, build.Env = tree, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the operator of %s: %v\n%s", commit, err, out)
	}
	t.Logf("the operator of %.12s built in %s", commit, time.Since(started).Round(time.Second))
	return bin
}
