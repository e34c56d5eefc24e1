//go:build node

package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestOLM_UpgradeFromThePreviousRelease upgrades along the catalog's `replaces` under OLM v0.38.0,
// as a subscriber who reviews upgrades does: a catalog serving 0.1.0 (its bundle, its operator
// image built from its commit) and the release's 0.2.0 replacing it, as docs/INSTALLATION.md#olm
// says a catalog keeps the previous bundle; subscribed at 0.1.0 (startingCSV, manual approval);
// 0.1.0's samples converged, their ingress Service where the AKS add-on keeps it; then the
// pending InstallPlan for 0.2.0 approved: the CSV replaced, 0.2.0's pods Ready, the Gateway
// patched with spec.ingressNamespace as docs/INSTALLATION.md#upgrading says; every DNSEndpoint
// and Istio Gateway the same object throughout (UIDs polled every 100 ms: none deleted, none
// recreated), and the real ExternalDNS (--policy=sync) writing the samples' weu zone on BIND
// never deleting a record (the zone transferred every 200 ms from 0.1.0's records until every
// record has 0.2.0's TTL).
func TestOLM_UpgradeFromThePreviousRelease(t *testing.T) {
	ctx := t.Context()
	w := startOLMWorld(t)
	dir := t.TempDir()
	run := func(d, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = d
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// 0.1.0's tree, operator image and bundle image, as its release would have pushed them.
	start := time.Now()
	old := archiveRelease010(t, w.root)
	oldImage := pushRelease010Image(ctx, t, old, w.Registry)
	csvPath := filepath.Join(old, "bundle", "manifests", "service-router-operator.clusterserviceversion.yaml")
	csv, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csvPath, bytes.ReplaceAll(csv, []byte("ghcr.io/service-router/service-router-operator:v"+release010Version), []byte(oldImage)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := func(name string) string { return filepath.Join(w.root, "bin", name) }
	digestFile := filepath.Join(dir, "bundle.digest")
	bundleRepo := w.Registry + "/service-router-operator-bundle"
	run(old, bin("release-tool"), "bundle-image", "--context="+old, "--dockerfile="+filepath.Join(old, "bundle.Dockerfile"),
		"--to="+bundleRepo+":v"+release010Version, "--insecure", "--digest-file="+digestFile)
	digest, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	// The catalog: the release's (the package, 0.2.0's bundle, the channel with 0.2.0 replacing
	// 0.1.0), plus 0.1.0's bundle and its channel entry.
	catalogDir := filepath.Join(dir, "catalog")
	run(dir, "tar", "-xzf", filepath.Join(w.releaseDir, "service-router-operator-catalog-"+w.version+".tar.gz"))
	release, err := os.ReadFile(filepath.Join(catalogDir, olmPackage, "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	oldBundle := strings.Replace(run(dir, bin("opm"), "render", filepath.Join(old, "bundle"), "--output=yaml"),
		"image: \"\"\n", "image: "+bundleRepo+"@"+strings.TrimSpace(string(digest))+"\n", 1)
	if !strings.HasSuffix(string(release), "    replaces: "+olmPackage+".v"+release010Version+"\n") {
		t.Fatalf("the release's catalog does not end with 0.2.0's entry replacing 0.1.0:\n%s", release)
	}
	catalog := string(release) + "  - name: " + olmPackage + ".v" + release010Version + "\n---\n" + oldBundle
	if err := os.WriteFile(filepath.Join(catalogDir, olmPackage, "catalog.yaml"), []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	run(dir, bin("opm"), "validate", catalogDir)
	catalogImage := w.Registry + "/service-router-operator-catalog:with-v" + release010Version
	run(dir, bin("release-tool"), "catalog-image", "--catalog="+catalogDir, "--version=v"+w.version,
		"--opm=linux/amd64="+bin("opm-linux-amd64"), "--grpc-health-probe=linux/amd64="+bin("grpc_health_probe-linux-amd64"),
		"--to="+catalogImage, "--insecure")
	t.Logf("0.1.0 built and pushed (operator, bundle) and the catalog with both made in %s", time.Since(start).Round(100*time.Millisecond))

	// Subscribed at 0.1.0, reviewing upgrades.
	oldCSV, newCSV := olmPackage+".v"+release010Version, olmPackage+".v"+w.version
	manifest := filepath.Join(dir, "subscription.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata:
  name: service-router
  namespace: olm
spec:
  sourceType: grpc
  image: `+catalogImage+`
---
apiVersion: v1
kind: Namespace
metadata:
  name: `+operatorNamespace+`
  labels:
    pod-security.kubernetes.io/enforce: restricted
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata:
  name: service-router
  namespace: `+operatorNamespace+`
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata:
  name: service-router-operator
  namespace: `+operatorNamespace+`
spec:
  channel: candidate
  name: `+olmPackage+`
  source: service-router
  sourceNamespace: olm
  startingCSV: `+oldCSV+`
  installPlanApproval: Manual
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ns := "-n " + operatorNamespace + " "
	approve := `kubectl ` + ns + `wait subscription/service-router-operator --for=jsonpath='{.status.state}'=UpgradePending --timeout=5m
plan=$(kubectl ` + ns + `get subscription/service-router-operator -o jsonpath='{.status.installPlanRef.name}')
kubectl ` + ns + `get installplan "$plan" -o jsonpath='{.spec.clusterServiceVersionNames}{"\n"}'
kubectl ` + ns + `patch installplan "$plan" --type merge -p '{"spec":{"approved":true}}'
`
	out, err := w.Cluster().RunScript(ctx, "kubectl apply -f "+manifest+"\n"+approve+
		"kubectl "+ns+"wait csv/"+oldCSV+" --for=create --timeout=2m\n"+
		"kubectl "+ns+"wait csv/"+oldCSV+" --for=jsonpath='{.status.phase}'=Succeeded --timeout=5m")
	if err != nil {
		t.Fatalf("subscribing at %s: %v\n%s\n%s", oldCSV, err, out, w.diagnose(ctx, operatorNamespace))
	}
	t.Logf("subscribed at %s:\n%s", oldCSV, out)
	if _, err := w.WaitDeploymentReady(ctx, operatorNamespace, olmDeployment, podTimeout); err != nil {
		t.Fatalf("%v\n%s", err, w.diagnose(ctx, operatorNamespace))
	}
	// The samples' weu zone on BIND, written by the real ExternalDNS (--policy=sync, the
	// controller external-dns-weu the samples name), from 0.1.0's records on.
	zone, err := framework.StartBind(ctx, t, framework.BindOptions{Name: "weu", Zone: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Cluster().StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: "external-dns-weu", Kubeconfig: w.Kubeconfig}.ForBind(zone)); err != nil {
		t.Fatal(err)
	}
	applySamples(t, w, filepath.Join(old, "config", "samples"))
	published := watchPublished(ctx, t, w.Client, samplesHost)
	var records map[string]string
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "the samples' records in the zone", func(ctx context.Context) (bool, string, error) {
		recs, err := zone.ZoneRecords(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		records = olmZoneState(recs)
		_, api := records[samplesHost+". CNAME"]
		_, web := records[samplesWebHost+". CNAME"]
		return api && web, fmt.Sprint(records), nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, zone.Diagnostics())
	}
	t.Logf("the zone under 0.1.0: %v", records)
	watched := watchOLMZone(ctx, t, zone, records)

	// The upgrade, approved.
	start = time.Now()
	out, err = w.Cluster().RunScript(ctx, approve+
		"kubectl "+ns+"wait csv/"+newCSV+" --for=create --timeout=2m\n"+
		"kubectl "+ns+"wait csv/"+newCSV+" --for=jsonpath='{.status.phase}'=Succeeded --timeout=5m\n"+
		"kubectl "+ns+"wait csv/"+oldCSV+" --for=delete --timeout=2m\n"+
		"kubectl "+ns+"get csv")
	if err != nil {
		t.Fatalf("upgrading to %s: %v\n%s\n%s", newCSV, err, out, w.diagnose(ctx, operatorNamespace))
	}
	t.Logf("upgraded in %s:\n%s", time.Since(start).Round(100*time.Millisecond), out)
	pods, err := w.WaitDeploymentReady(ctx, operatorNamespace, olmDeployment, podTimeout)
	if err != nil {
		t.Fatalf("%v\n%s", err, w.diagnose(ctx, operatorNamespace))
	}
	for _, p := range pods {
		if p.Spec.Containers[0].Image == oldImage {
			t.Errorf("pod %s still runs 0.1.0's image", p.Name)
		}
	}
	out, err = w.Cluster().RunScript(ctx, "kubectl -n myapp wait --for=condition=Ready serviceroute --all --timeout=90s")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// docs/INSTALLATION.md#upgrading: from 0.1.0, the new field right after approving. Until
	// then 0.2.0 finds no ingress Service in the Gateway's own namespace and keeps the address
	// records; then it takes them over where 0.1.0 wrote them.
	gateway := "-n istio-system gateways.routing.router.io/default-gateway"
	out, err = w.Cluster().RunScript(ctx, "kubectl wait "+gateway+" --for=jsonpath='{.status.conditions[?(@.type==\"Ready\")].reason}'="+routingv1alpha1.ReasonLoadBalancerNotFound+" --timeout=60s")
	if err != nil {
		t.Fatalf("0.2.0 before the patch: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(w.root, olmDoc))
	if err != nil {
		t.Fatal(err)
	}
	upgrading, err := framework.DocSection(string(data), upgradeHeading)
	if err != nil {
		t.Fatalf("%s: %v", olmDoc, err)
	}
	patch, err := framework.BlockWith(upgrading, `"ingressNamespace":"`+samplesIngressNamespace+`"`)
	if err != nil {
		t.Fatalf("%s, %s: the OLM upgrade's patch: %v", olmDoc, upgradeHeading, err)
	}
	out, err = w.Cluster().RunScript(ctx, patch+"kubectl wait "+gateway+" --for=condition=Ready --timeout=60s\n"+
		"kubectl -n "+samplesIngressNamespace+" get dnsendpoints -o custom-columns=NAME:.metadata.name,TTL:.spec.endpoints[0].recordTTL")
	if err != nil {
		t.Fatalf("the patch of %s: %v\n%s", olmDoc, err, out)
	}
	t.Logf("patched as %s says:\n%s", olmDoc, out)
	// The address records take 0.2.0's TTL in place; the zone follows at ExternalDNS's next
	// synchronization.
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "the records with 0.2.0's TTL in the zone", func(ctx context.Context) (bool, string, error) {
		recs, err := zone.ZoneRecords(ctx)
		if err != nil {
			return false, err.Error(), nil
		}
		state := olmZoneState(recs)
		for key, value := range state {
			if (strings.HasSuffix(key, " A") || strings.HasSuffix(key, " CNAME")) && !strings.Contains(value, "(ttl 300)") {
				return false, fmt.Sprint(state), nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	published.checkKept(t, "through the upgrade")
	watched.check(t, "through the upgrade")
}

// olmZoneState maps "name TYPE" to the record's data and TTL, for every record ExternalDNS wrote.
func olmZoneState(recs []framework.Record) map[string]string {
	state := map[string]string{}
	for _, r := range recs {
		key := strings.ToLower(r.Name) + " " + r.Type
		state[key] = strings.TrimSpace(state[key] + " " + fmt.Sprintf("%s (ttl %d)", r.Data, r.TTL))
	}
	return state
}

// olmZoneWatch transfers the zone every 200 ms and reports any name and type of the starting records
// that goes missing (deleted, even for a moment) and any whose data or TTL changes.
type olmZoneWatch struct {
	mu               sync.Mutex
	missing, changed []string
	transfers        int
}

func watchOLMZone(ctx context.Context, t *testing.T, zone *framework.BindServer, start map[string]string) *olmZoneWatch {
	zw := &olmZoneWatch{}
	watchCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() {
		last := start
		for watchCtx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			recs, err := zone.ZoneRecords(watchCtx)
			if err != nil {
				continue
			}
			now := olmZoneState(recs)
			zw.mu.Lock()
			zw.transfers++
			for key, was := range start {
				got, ok := now[key]
				switch {
				case !ok:
					zw.missing = append(zw.missing, time.Now().Format("15:04:05.000")+" "+key+" missing")
				case got != last[key]:
					zw.changed = append(zw.changed, fmt.Sprintf("%s %s: %s -> %s", time.Now().Format("15:04:05.000"), key, was, got))
				}
			}
			zw.mu.Unlock()
			last = now
		}
	}()
	return zw
}

func (zw *olmZoneWatch) check(t *testing.T, when string) {
	t.Helper()
	zw.mu.Lock()
	defer zw.mu.Unlock()
	t.Logf("%s: %d zone transfers watched; records changed: %v", when, zw.transfers, zw.changed)
	if len(zw.missing) > 0 {
		t.Errorf("%s: records deleted from the zone:\n%s", when, strings.Join(zw.missing, "\n"))
	}
}
