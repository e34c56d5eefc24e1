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

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The 0.1.0 release (test/packaging/upgrade_test.go's previousRelease: no tag, the last commit of
// 2026-11-22) and its CSV.
const (
	olmPreviousRelease = "1d8314e87a5e403a05e7537530869618fb4abb52"
	olmPreviousVersion = "0.1.0"
)

// TestOLM_UpgradeFromThePreviousRelease upgrades along the catalog's `replaces` under OLM v0.38.0,
// as a subscriber who reviews upgrades does: a catalog serving 0.1.0 (its bundle, its operator
// image built from its commit) and the release's 0.2.0 replacing it, as docs/INSTALLATION.md#olm
// says a catalog keeps the previous bundle; subscribed at 0.1.0 (startingCSV, manual approval);
// 0.1.0's samples converged; then the pending InstallPlan for 0.2.0 approved: the CSV replaced,
// 0.2.0's pods Ready, every DNSEndpoint and Istio Gateway the same object throughout (UIDs
// polled every 100 ms: none deleted, none recreated), and the real ExternalDNS (--policy=sync)
// writing the samples' weu zone on BIND never deleting a record (the zone transferred every
// 200 ms from 0.1.0's records to the end).
func TestOLM_UpgradeFromThePreviousRelease(t *testing.T) {
	ctx := t.Context()
	w := startOLMWorld(t)
	dir := t.TempDir()
	old := filepath.Join(dir, "v"+olmPreviousVersion)
	run := func(d, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = d
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// 0.1.0's tree, operator image and bundle image, as its release would have pushed them.
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", olmPreviousRelease)
	archive.Dir = w.root
	tarball, err := archive.Output()
	if err != nil {
		t.Fatalf("git archive %s (the test needs the repository's history): %v", olmPreviousRelease, err)
	}
	untar := exec.CommandContext(ctx, "tar", "-x", "-C", old)
	untar.Stdin = bytes.NewReader(tarball)
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	start := time.Now()
	run(old, "go", "build", "-trimpath", "-o", filepath.Join(dir, "manager"), ".")
	oldImage, err := framework.PushBinaryImage(ctx, w.Registry, framework.BinaryImage{
		Repository: "service-router-operator", Tag: "v" + olmPreviousVersion,
		Files: map[string]string{"/manager": filepath.Join(dir, "manager")}, Entrypoint: []string{"/manager"}, User: "65532:65532",
	})
	if err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(old, "bundle", "manifests", "service-router-operator.clusterserviceversion.yaml")
	csv, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csvPath, bytes.ReplaceAll(csv, []byte("ghcr.io/service-router/service-router-operator:v"+olmPreviousVersion), []byte(oldImage)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := func(name string) string { return filepath.Join(w.root, "bin", name) }
	digestFile := filepath.Join(dir, "bundle.digest")
	bundleRepo := w.Registry + "/service-router-operator-bundle"
	run(old, bin("release-tool"), "bundle-image", "--context="+old, "--dockerfile="+filepath.Join(old, "bundle.Dockerfile"),
		"--to="+bundleRepo+":v"+olmPreviousVersion, "--insecure", "--digest-file="+digestFile)
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
	if !strings.HasSuffix(string(release), "    replaces: "+olmPackage+".v"+olmPreviousVersion+"\n") {
		t.Fatalf("the release's catalog does not end with 0.2.0's entry replacing 0.1.0:\n%s", release)
	}
	catalog := string(release) + "  - name: " + olmPackage + ".v" + olmPreviousVersion + "\n---\n" + oldBundle
	if err := os.WriteFile(filepath.Join(catalogDir, olmPackage, "catalog.yaml"), []byte(catalog), 0o644); err != nil {
		t.Fatal(err)
	}
	run(dir, bin("opm"), "validate", catalogDir)
	catalogImage := w.Registry + "/service-router-operator-catalog:with-v" + olmPreviousVersion
	run(dir, bin("release-tool"), "catalog-image", "--catalog="+catalogDir, "--version=v"+w.version,
		"--opm=linux/amd64="+bin("opm-linux-amd64"), "--grpc-health-probe=linux/amd64="+bin("grpc_health_probe-linux-amd64"),
		"--to="+catalogImage, "--insecure")
	t.Logf("0.1.0 built and pushed (operator, bundle) and the catalog with both made in %s", time.Since(start).Round(100*time.Millisecond))

	// Subscribed at 0.1.0, reviewing upgrades.
	oldCSV, newCSV := olmPackage+".v"+olmPreviousVersion, olmPackage+".v"+w.version
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
	uids := watchUIDs(ctx, t, w)
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
	time.Sleep(5 * time.Second)
	// Known and open: 0.2.0 keeps a gateway target's address DNSEndpoints in the Gateway's
	// namespace, where 0.1.0 kept them in the ingress Service's (the samples' aks-istio-ingress),
	// so the upgrade replaces those three by new ones in istio-system. The zone keeps their records
	// throughout (ExternalDNS rewrites only the TXT's resource: watched.check); every other
	// DNSEndpoint and the Istio Gateway must keep its UID.
	uids.check(t, "through the upgrade", "DNSEndpoint aks-istio-ingress/")
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

// uidWatch records every DNSEndpoint and Istio Gateway by UID and reports any that disappears or
// comes back as another object.
type uidWatch struct {
	mu      sync.Mutex
	start   map[string]string
	changes []string
}

func watchUIDs(ctx context.Context, t *testing.T, w *olmWorld) *uidWatch {
	t.Helper()
	snapshot := func() (map[string]string, error) {
		state := map[string]string{}
		var eps externaldnsv1alpha1.DNSEndpointList
		if err := w.Client.List(ctx, &eps); err != nil {
			return nil, err
		}
		for _, e := range eps.Items {
			state["DNSEndpoint "+e.Namespace+"/"+e.Name] = string(e.UID)
		}
		var gws istionetworkingv1.GatewayList
		if err := w.Client.List(ctx, &gws); err != nil {
			return nil, err
		}
		for _, g := range gws.Items {
			state["Istio Gateway "+g.Namespace+"/"+g.Name] = string(g.UID)
		}
		return state, nil
	}
	start, err := snapshot()
	if err != nil || len(start) < 2 {
		t.Fatalf("nothing published to watch: %v %v", start, err)
	}
	t.Logf("watching the UIDs of %d published objects", len(start))
	uw := &uidWatch{start: start}
	watchCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go func() {
		for watchCtx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			now, err := snapshot()
			if err != nil {
				continue
			}
			uw.mu.Lock()
			for key, was := range uw.start {
				if got := now[key]; got != was {
					uw.changes = append(uw.changes, fmt.Sprintf("%s %s: UID %q -> %q", time.Now().Format("15:04:05.000"), key, was, got))
					uw.start[key] = got
				}
			}
			uw.mu.Unlock()
		}
	}()
	return uw
}

// check fails the test for every object deleted or recreated, but those whose key starts with
// moved: objects the upgrade is known to replace, which it logs.
func (uw *uidWatch) check(t *testing.T, when, moved string) {
	t.Helper()
	uw.mu.Lock()
	defer uw.mu.Unlock()
	var unexpected, replaced []string
	for _, c := range uw.changes {
		if moved != "" && strings.Contains(c, " "+moved) {
			replaced = append(replaced, c)
		} else {
			unexpected = append(unexpected, c)
		}
	}
	if len(replaced) > 0 {
		t.Logf("%s: replaced, as 0.2.0 does (see the test): %s", when, strings.Join(replaced, "; "))
	}
	if len(unexpected) > 0 {
		t.Errorf("%s: published objects deleted or recreated:\n%s", when, strings.Join(unexpected, "\n"))
	}
}
