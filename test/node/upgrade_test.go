//go:build node

package node

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/yaml"

	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The 0.1.0 release (CHANGELOG: 2026-11-22; no tag, test/packaging's previousRelease) and what
// says how to upgrade from it.
const (
	release010        = testenv.PreviousRelease
	release010Version = testenv.PreviousReleaseVersion
	changelogFile     = "CHANGELOG.md"
	changelogUpgrade  = "### Upgrading to 0.2.0"
	upgradeHeading    = "### Upgrading" // in docs/INSTALLATION.md
	// The values file the homelab release is installed with, in both trees.
	homelabValues = "docs/examples/homelab-values.yaml"
	// The cluster's values file every documented helm install and upgrade gives.
	clusterValuesFile = "values-$CLUSTER.yaml"
	// The chart's default image repository (both releases): nothing is published there.
	chartDefaultRegistry = "ghcr.io/service-router"
	// ExternalDNS' namespace in the world (InstallExternalDNSChart) and its container's name.
	externalDNSNamespace = "external-dns"
	externalDNSContainer = "external-dns"
)

// TestUpgrade_From010InPodsAsDocumentedKeepsEveryRecord upgrades a homelab cluster running the
// 0.1.0 release in pods to this tree (0.2.0) exactly as the CHANGELOG's "Upgrading to 0.2.0" and
// docs/INSTALLATION.md#upgrading say, in their order, with ExternalDNS (--policy=sync, in a pod
// from ExternalDNS' own chart) writing a BIND zone outside the cluster throughout:
//
//   - 0.1.0 as it was: its operator image built as its Dockerfile builds it (that tree has no
//     other image build), its chart installed with its homelab walkthrough's commands, and
//     ExternalDNS configured from that walkthrough's command line (no --label-filter: 0.1.0's
//     documentation did not have it); the homelab's platform and application published (the
//     0.2.0-only fields left out) until the walkthrough's name resolves;
//   - the upgrade, in the documented order with the documented commands: the label filter added
//     to ExternalDNS (helm upgrade --reuse-values of its release with the chart value the
//     CHANGELOG names), this tree's image pushed with the walkthrough's make image-push, the
//     chart upgraded with --take-ownership (the CHANGELOG's other items, ingressNamespace and
//     istioHostFormat, do not apply to the homelab: its ingress Service is in its Gateway's
//     namespace, its VirtualService in its route's);
//   - throughout, from before the first step to after ExternalDNS has synchronized with the
//     0.2.0 operator's objects: every record of the zone stays (a transfer every 200 ms), each
//     published name keeps its answer (dig every 50 ms: never NXDOMAIN), and no DNSEndpoint or
//     Istio Gateway is deleted or re-created (their UIDs);
//   - afterwards the 0.2.0 pod is Ready from the new image, every object of the five kinds is
//     Ready as 0.2.0 sees it, the CRDs belong to the release, and the walkthrough's dig prints
//     what the document shows.
//
// Each step's time and the rollout's are logged.
func TestUpgrade_From010InPodsAsDocumentedKeepsEveryRecord(t *testing.T) {
	ctx := t.Context()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	old := archiveRelease010(t, root)
	read := func(dir, rel string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	section := func(file, markdown, heading string) string {
		t.Helper()
		s, err := framework.DocSection(markdown, heading)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return s
	}
	block := func(where, markdown, substr string) string {
		t.Helper()
		b, err := framework.BlockWith(markdown, substr)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		return b
	}
	oldHomelab := section(release010Version+"'s "+homelabDoc, read(old, homelabDoc), homelabHeading)
	homelab := section(homelabDoc, read(root, homelabDoc), homelabHeading)

	// What to do, in the CHANGELOG's order: the ExternalDNS label filter, then the chart.
	steps := changelogSteps(t, section(changelogFile, read(root, changelogFile), changelogUpgrade))
	upgrading := section(homelabDoc, read(root, homelabDoc), upgradeHeading)
	upgradeBlock := block(homelabDoc+", section "+upgradeHeading, upgrading, "--take-ownership")
	if !strings.Contains(upgradeBlock, "-f "+clusterValuesFile) {
		t.Fatalf("%s: the upgrade from %s no longer gives -f %s:\n%s", homelabDoc, release010Version, clusterValuesFile, upgradeBlock)
	}
	// The cluster's values file, made as the walkthrough's step 2 makes it (the upgrade's step 3
	// says so): its lines from CLUSTER= to the heredoc's end.
	valuesBlock := block(homelabDoc+", the chart's install", homelab, "cp "+homelabValues+" "+clusterValuesFile)
	makeValues := regexp.MustCompile(`(?ms)^CLUSTER=.*?^EOF$`).FindString(valuesBlock)
	if makeValues == "" {
		t.Fatalf("%s: the install makes no values file (CLUSTER= ... EOF):\n%s", homelabDoc, valuesBlock)
	}
	// INSTALLATION's order from 0.1.0 is the CHANGELOG's: the label filter (its command for
	// ExternalDNS' chart), the image (a build of your own), the chart.
	edUpgrade := regexp.MustCompile("`(helm upgrade <release> external-dns/external-dns [^`]+)`").FindStringSubmatch(upgrading)
	from010 := strings.Index(upgrading, "From the **0.1.0 release**")
	if edUpgrade == nil || from010 < 0 ||
		!(from010 < strings.Index(upgrading, edUpgrade[0]) && strings.Index(upgrading, edUpgrade[0]) < strings.Index(upgrading, "make image image-push") &&
			strings.Index(upgrading, "make image image-push") < strings.Index(upgrading, upgradeBlock)) {
		t.Fatalf("%s, %q: from the 0.1.0 release, want ExternalDNS' `helm upgrade <release> external-dns/external-dns ...`, then `make image image-push`, then the chart's upgrade, in that order", homelabDoc, upgradeHeading)
	}
	if want := "--set " + steps.labelFilterValue + "=" + steps.labelFilter; !strings.Contains(edUpgrade[1], want) {
		t.Fatalf("%s: ExternalDNS' upgrade %q does not set the CHANGELOG's %s", homelabDoc, edUpgrade[1], want)
	}

	// 0.1.0's ExternalDNS, as its homelab walkthrough ran it.
	oldArgs, err := framework.CommandArgs(block(release010Version+"'s homelab walkthrough", oldHomelab, "external-dns --"), "external-dns")
	if err != nil {
		t.Fatal(err)
	}
	flag := func(name string) string {
		t.Helper()
		v, err := framework.FlagValue(oldArgs, name)
		if err != nil {
			t.Fatalf("%s's ExternalDNS: %v", release010Version, err)
		}
		return v
	}
	if _, err := framework.FlagValue(oldArgs, "label-filter"); err == nil {
		t.Fatalf("%s's homelab ExternalDNS already has --label-filter: the upgrade step adding it proves nothing", release010Version)
	}
	controller := strings.TrimPrefix(flag("annotation-filter"), naming.AnnotationController+"=")
	if flag("policy") != "sync" {
		t.Fatalf("%s's homelab ExternalDNS runs --policy=%s; the test watches what --policy=sync deletes", release010Version, flag("policy"))
	}

	// The walkthrough's name, its answer, and the load balancer's address.
	hostname, docAnswer, digCommand, digServer := walkthroughDig(t, homelab)
	target, lbIP := strings.TrimSuffix(docAnswer[0], "."), docAnswer[1]
	chain := []string{"CNAME " + target + ".", "A " + lbIP}

	// The zone, outside the cluster on the first node's address: updates and transfers signed
	// with the TSIG key (the walkthrough's step 3), queries from anywhere.
	zone, err := framework.StartBind(ctx, t, framework.BindOptions{Name: "home", Zone: flag("rfc2136-zone"), TSIG: true, Address: framework.NodeIP(1)})
	if err != nil {
		t.Fatal(err)
	}
	if flag("rfc2136-tsig-secret-alg") != zone.TSIG.Algorithm {
		t.Fatalf("%s's ExternalDNS signs with %s, the test server's key is %s", release010Version, flag("rfc2136-tsig-secret-alg"), zone.TSIG.Algorithm)
	}
	edArgs := oldArgs
	var replaced []string
	for _, r := range [][2]string{
		{"rfc2136-host", framework.NodeIP(1)}, {"rfc2136-port", strconv.Itoa(zone.Port)},
		{"rfc2136-tsig-keyname", zone.TSIG.Name}, {"rfc2136-tsig-secret", zone.TSIG.Secret},
	} {
		var was string
		if edArgs, was, err = framework.ReplaceFlag(edArgs, r[0], r[1]); err != nil {
			t.Fatal(err)
		}
		replaced = append(replaced, "--"+r[0]+"="+was)
	}

	w := startWorld(t, 2)
	cl := w.Cluster()
	// 0.1.0's prerequisites: Istio's and the DNSEndpoint CRDs, and the ingress Service with the
	// load balancer's address (no Istio or MetalLB runs here).
	if err := w.InstallIstioCRDs(); err != nil {
		t.Fatal(err)
	}
	if err := w.InstallExternalDNSCRDs(); err != nil {
		t.Fatal(err)
	}
	platform, err := framework.ReadManifests(filepath.Join(root, homelabPlatform))
	if err != nil {
		t.Fatal(err)
	}
	gateway := only(t, platform, "Gateway")
	gatewayController, _, _ := unstructured.NestedString(gateway.Object, "spec", "controller")
	if _, err := framework.CreateIngressService(ctx, w.Client, framework.IngressService{
		Namespace: gateway.GetNamespace(), Name: homelabIngressService, Controller: gatewayController, IPs: []string{lbIP},
	}); err != nil {
		t.Fatal(err)
	}
	// The CHANGELOG's conditional items do not apply here: the ingress Service is in the
	// Gateway's namespace (no ingressNamespace), the VirtualService in its route's (no
	// istioHostFormat: Bare).
	apps, err := framework.ReadManifests(filepath.Join(root, homelabApp))
	if err != nil {
		t.Fatal(err)
	}
	if vs, route := only(t, apps, "VirtualService"), only(t, apps, "ServiceRoute"); vs.GetNamespace() != route.GetNamespace() {
		t.Fatalf("%s: the VirtualService is in %s, its ServiceRoute in %s: the upgrade would need istioHostFormat: Bare, which this test does not do",
			homelabApp, vs.GetNamespace(), route.GetNamespace())
	}
	op := operatorDiagnostics(ctx, w)
	edDiag := func() string { return w.Diagnostics(ctx, externalDNSNamespace) }
	diagnostics := []func() string{op, edDiag, zone.Diagnostics}
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("%s\n%s", fmt.Sprintf(format, a...), describeAll(diagnostics))
	}
	timings := &stepTimings{}

	// 0.1.0's image, built as its Dockerfile builds it, in the world's registry.
	repo := w.Registry + "/service-router-operator"
	started := time.Now()
	pushRelease010Image(ctx, t, old, w.Registry)
	timings.add(release010Version+" image built (its Dockerfile's go build) and pushed", time.Since(started))

	// 0.1.0's chart, with its walkthrough's commands (the image from the world's registry: the
	// chart's default, ghcr.io, holds none).
	installBlock := block(release010Version+"'s homelab walkthrough", oldHomelab, "helm install")
	install := strings.Replace(installBlock, "-f "+homelabValues+"\n", "-f "+homelabValues+" \\\n  --set image.repository="+repo+"\n", 1)
	if install == installBlock {
		t.Fatalf("%s's helm install does not end its values with -f %s:\n%s", release010Version, homelabValues, installBlock)
	}
	started = time.Now()
	out, err := cl.RunScript(ctx, "cd "+old+"\n"+install)
	if err != nil {
		fail("installing the %s chart: %v", release010Version, err)
	}
	timings.add(release010Version+" chart installed and rolled out", time.Since(started))
	t.Logf("%s installed with its walkthrough's commands (run in its tree, --set image.repository=%s added):\n%s\n%s", release010Version, repo, install, lastLines(out, 3))
	if out, err := cl.RunScript(ctx, block(release010Version+"'s homelab walkthrough", oldHomelab, "pod-security.kubernetes.io/enforce=restricted")); err != nil || strings.Contains(out, "Warning") {
		fail("%s's restricted label: %v\n%s", release010Version, err, out)
	}
	pods, err := w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout)
	if err != nil {
		fail("%v", err)
	}
	checkOperatorPods(t, pods, 1, chartDefaultRegistry, w.Registry)
	checkPodImage(t, pods, operatorContainer, repo+":v"+release010Version)

	// 0.1.0's ExternalDNS, in a pod from ExternalDNS' chart: its command line's flags as the
	// chart's values.
	if _, err := w.PushExternalDNSImage(ctx); err != nil {
		t.Fatal(err)
	}
	values, err := externalDNSChartValues(edArgs)
	if err != nil {
		t.Fatal(err)
	}
	valuesFile := filepath.Join(t.TempDir(), controller+"-values.yaml")
	if err := os.WriteFile(valuesFile, values, 0o644); err != nil {
		t.Fatal(err)
	}
	started = time.Now()
	if _, out, err := w.InstallExternalDNSChart(ctx, controller, []string{valuesFile}); err != nil {
		fail("installing ExternalDNS: %v\n%s", err, out)
	}
	timings.add("ExternalDNS installed with "+release010Version+"'s flags and rolled out", time.Since(started))
	edPod := externalDNSPod(ctx, t, w, controller)
	t.Logf("ExternalDNS as %s's %s runs it, in pod %s: %s\nreplaced here: %s",
		release010Version, homelabDoc, edPod.Name, strings.Join(containerArgs(edPod, externalDNSContainer), " "), strings.Join(replaced, " "))

	// The homelab's platform and application, as 0.1.0 takes them, with the walkthrough's
	// commands: published by the 0.1.0 operator and ExternalDNS until the name resolves.
	localPlatform := filepath.Join(t.TempDir(), "platform.yaml")
	platform010 := platformFor010(t, read(root, homelabPlatform))
	if err := os.WriteFile(localPlatform, []byte(platform010), 0o644); err != nil {
		t.Fatal(err)
	}
	platformScript := strings.ReplaceAll(shellBlockWith(t, homelab, "kubectl apply -f "+homelabPlatform), homelabPlatform, localPlatform)
	appScript := withoutLinesContaining(shellBlockWith(t, homelab, "kubectl apply -f "+homelabApp), "condition=Published")
	started = time.Now()
	if out, err := cl.RunScript(ctx, platformScript+appScript); err != nil {
		fail("publishing with %s: %v\n%s", release010Version, err, out)
	}
	if _, err := framework.WaitForAnswer(ctx, zone.Query(hostname, "A"), chain, 2*time.Minute, diagnostics...); err != nil {
		t.Fatal(err)
	}
	timings.add("the homelab published by "+release010Version+", "+hostname+" resolving (ExternalDNS' 1-minute interval)", time.Since(started))
	// ExternalDNS' records, with 0.1.0's owner ID: the ones --policy=sync deletes when it
	// stops seeing their DNSEndpoints.
	owner := "external-dns/owner=" + flag("txt-owner-id")
	recs := framework.LogZone(ctx, t, "published by "+release010Version, zone)
	for _, name := range []string{"cname-" + hostname + ".", "a-" + target + "."} {
		if !framework.HasRecord(recs, name, "TXT", owner) {
			fail("the zone has no ownership record %s with %s", name, owner)
		}
	}

	// The label the filter will select is on 0.1.0's DNSEndpoints already (that is why the
	// filter can go first): count their records, which ExternalDNS must still read after step 1.
	var oldEndpoints externaldnsv1alpha1.DNSEndpointList
	if err := w.Client.List(ctx, &oldEndpoints); err != nil {
		t.Fatal(err)
	}
	records := 0
	for _, ep := range oldEndpoints.Items {
		if ep.Labels[naming.LabelController] != controller {
			t.Errorf("%s's DNSEndpoint %s/%s: label %s=%q, want %q: the label filter would not select it", release010Version,
				ep.Namespace, ep.Name, naming.LabelController, ep.Labels[naming.LabelController], controller)
		}
		records += len(ep.Spec.Endpoints)
	}

	// From here on nothing published may disappear.
	objects := watchPublished(ctx, t, w.Client, hostname)
	uidsBefore := objects.uids()
	watch := watchZone(ctx, t, zone, hostname, target)
	lease := watchLease(ctx, w.Client)
	upgradeStart := time.Now()

	// Step 1: the label filter added to ExternalDNS with the documented command (ExternalDNS'
	// chart from its module in place of the chart repository's), the release's values kept.
	labelFilter := strings.ReplaceAll(steps.labelFilter, "<controller name>", controller)
	chart, err := framework.ExternalDNSChart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	step1 := strings.NewReplacer("<release>", controller, "external-dns/external-dns", chart, "<controller name>", controller).Replace(edUpgrade[1])
	started = time.Now()
	if out, err := cl.RunScript(ctx, step1); err != nil {
		fail("step 1, the label filter: %v\n%s", err, out)
	}
	if _, err := w.WaitDeploymentReady(ctx, externalDNSNamespace, controller, podTimeout); err != nil {
		fail("step 1, the label filter: %v", err)
	}
	timings.add("step 1: ExternalDNS upgraded with "+steps.labelFilterValue+"="+labelFilter+" and rolled out", time.Since(started))
	t.Logf("step 1: %s", step1)
	edPod = externalDNSPod(ctx, t, w, controller)
	if args := containerArgs(edPod, externalDNSContainer); !slices.Contains(args, "--label-filter="+labelFilter) {
		fail("step 1: ExternalDNS pod %s runs without --label-filter=%s: %s", edPod.Name, labelFilter, strings.Join(args, " "))
	}
	m := waitExternalDNSSync(ctx, t, edPod, started, 90*time.Second)
	timings.add("step 1: the new ExternalDNS' first synchronization done", time.Since(started))
	t.Logf("step 1: ExternalDNS pod %s synchronized with --label-filter=%s: it reads %v endpoints from its source, %v from the zone",
		edPod.Name, labelFilter, m["external_dns_source_endpoints_total"], m["external_dns_registry_endpoints_total"])
	if got := m["external_dns_source_endpoints_total"]; got != float64(records) {
		fail("step 1: ExternalDNS with --label-filter=%s reads %v endpoints from the DNSEndpoints, want the %d records %s published", labelFilter, got, records, release010Version)
	}

	// Step 2: this tree's image, pushed with the walkthrough's make image-push.
	started = time.Now()
	if _, err := w.PushOperatorImage(ctx); err != nil {
		t.Fatal(err)
	}
	timings.add("step 2: this tree's image built and pushed (make image image-push)", time.Since(started))

	// Step 3: the chart, as docs/INSTALLATION.md#upgrading gives it from 0.1.0, with the
	// cluster's values file the walkthrough now makes (its registry the world's).
	upgrade := strings.Replace(makeValues, "registry.home.arpa:5000/service-router-operator", repo, 1) + "\n" + upgradeBlock
	started = time.Now()
	out, err = cl.RunScript(ctx, upgrade)
	if err != nil {
		fail("step 3, the chart: %v\n%s", err, out)
	}
	timings.add("step 3: helm upgrade --take-ownership", time.Since(started))
	t.Logf("step 3:\n%s%s", upgrade, lastLines(out, 4))
	rollout := time.Now()
	if out, err := cl.RunScript(ctx, docLine(t, homelab, "kubectl -n "+operatorNamespace+" rollout status deployment/"+operatorDeployment)); err != nil {
		fail("step 3, the rollout: %v\n%s", err, out)
	}
	timings.add("step 3: kubectl rollout status (the 0.2.0 pod Ready, the 0.1.0 pod gone)", time.Since(rollout))
	pods, err = w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout)
	if err != nil {
		fail("%v", err)
	}
	checkOperatorPods(t, pods, 1, chartDefaultRegistry, w.Registry)
	appVersion := chartAppVersion(t, read(root, "charts/service-router-operator/Chart.yaml"))
	checkPodImage(t, pods, operatorContainer, repo+":v"+appVersion)
	err = framework.Poll(ctx, 60*time.Second, 100*time.Millisecond, "the "+appVersion+" pod holding the Lease", func(ctx context.Context) (bool, string, error) {
		holder, err := leaseHolder(ctx, w.Client)
		return err == nil && strings.HasPrefix(holder, pods[0].Name+"_"), "held by " + holder, nil
	})
	if err != nil {
		fail("%v", err)
	}
	timings.add("step 3: the "+appVersion+" pod leads", time.Since(started))
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "every object Ready as "+appVersion+" sees it", func(ctx context.Context) (bool, string, error) {
		return upgradedAndReady(ctx, w.Client, hostname)
	})
	if err != nil {
		fail("step 3: %v", err)
	}
	converged := time.Now()
	timings.add("step 3: every object Ready, reconciled by "+appVersion, converged.Sub(started))

	// ExternalDNS has acted on everything 0.2.0 wrote: a synchronization that started after.
	m = waitExternalDNSSync(ctx, t, edPod, converged, 90*time.Second)
	timings.add("ExternalDNS synchronized with "+appVersion+"'s objects", time.Since(converged))
	time.Sleep(2 * time.Second)
	watch.finish(t, "from before step 1 to ExternalDNS' synchronization after step 3")
	t.Logf("the Lease's holders: %s", strings.Join(lease(), "; "))
	t.Logf("ExternalDNS after the upgrade: %v endpoints from its source, %v in the zone",
		m["external_dns_source_endpoints_total"], m["external_dns_registry_endpoints_total"])

	// No published object deleted or re-created: the same UIDs (written in place is fine).
	uidsAfter := objects.uids()
	for key, uid := range uidsBefore {
		if uidsAfter[key] != uid {
			t.Errorf("%s: UID %s before the upgrade, %q after: deleted or re-created", key, uid, uidsAfter[key])
		}
	}
	t.Logf("published objects kept across the upgrade (UIDs): %v\nwritten in place meanwhile:\n%s", uidsBefore, strings.Join(objects.writes(), "\n"))

	// What the upgrade leaves: the CRDs in the release, every DNSEndpoint selected by the label
	// filter and its records in the zone as 0.2.0 wrote them (their TTL: ExternalDNS did act on
	// the new objects while the zone was watched), the walkthrough's dig printing what the
	// document shows.
	checkCRDsInRelease(ctx, t, w.Client)
	var eps externaldnsv1alpha1.DNSEndpointList
	if err := w.Client.List(ctx, &eps); err != nil {
		t.Fatal(err)
	}
	recs = framework.LogZone(ctx, t, "after the upgrade", zone)
	for _, ep := range eps.Items {
		if ep.Labels[naming.LabelController] != controller {
			t.Errorf("DNSEndpoint %s/%s: label %s=%q, the label filter selects %q", ep.Namespace, ep.Name, naming.LabelController, ep.Labels[naming.LabelController], controller)
		}
		for _, e := range ep.Spec.Endpoints {
			found := false
			for _, r := range recs {
				found = found || strings.EqualFold(r.Name, e.DNSName+".") && r.Type == e.RecordType && int64(r.TTL) == int64(e.RecordTTL)
			}
			if !found {
				t.Errorf("DNSEndpoint %s/%s: no %s %s with TTL %d in the zone after ExternalDNS' synchronization", ep.Namespace, ep.Name, e.RecordType, e.DNSName, e.RecordTTL)
			}
		}
	}
	out, err = cl.RunScript(ctx, strings.Replace(digCommand, "@"+digServer, "@127.0.0.1 -p "+strconv.Itoa(zone.Port), 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(got, docAnswer) {
		t.Errorf("after the upgrade, %s answers\n%s\nwant, as %s shows,\n%s", digCommand, out, homelabDoc, strings.Join(docAnswer, "\n"))
	}
	t.Logf("timings (the upgrade from step 1 to ExternalDNS' synchronization: %s):\n%s", time.Since(upgradeStart).Round(time.Millisecond), timings)
}

// changelogUpgradeSteps are the CHANGELOG's upgrade instructions this journey follows.
type changelogUpgradeSteps struct {
	// labelFilter is the ExternalDNS flag's value, with "<controller name>" in it, and
	// labelFilterValue the ExternalDNS chart value that sets it.
	labelFilter, labelFilterValue string
}

// changelogSteps reads the CHANGELOG's "Upgrading to 0.2.0": the ExternalDNS label filter comes
// first, the Helm upgrade with --take-ownership from 0.1.0 after it.
func changelogSteps(t *testing.T, section string) changelogUpgradeSteps {
	t.Helper()
	var externalDNS, helm = -1, -1
	var bullets []string
	for _, b := range strings.Split("\n"+section, "\n- ")[1:] {
		bullets = append(bullets, strings.Join(strings.Fields(b), " "))
	}
	for i, b := range bullets {
		switch {
		case strings.HasPrefix(b, "ExternalDNS:"):
			externalDNS = i
		case strings.HasPrefix(b, "Helm from the 0.1.0 release") && strings.Contains(b, "`--take-ownership`"):
			helm = i
		}
	}
	if externalDNS < 0 || helm < 0 || externalDNS > helm {
		t.Fatalf("%s, %q: want an \"ExternalDNS:\" item before \"Helm from the 0.1.0 release ... --take-ownership\", got:\n- %s",
			changelogFile, changelogUpgrade, strings.Join(bullets, "\n- "))
	}
	flag := regexp.MustCompile("`--label-filter=([^`]+)`").FindStringSubmatch(bullets[externalDNS])
	value := regexp.MustCompile("chart value `(\\w+)`").FindStringSubmatch(bullets[externalDNS])
	if flag == nil || value == nil || !strings.Contains(flag[1], "<controller name>") {
		t.Fatalf("%s: the ExternalDNS item names no `--label-filter=...<controller name>` and chart value: %s", changelogFile, bullets[externalDNS])
	}
	return changelogUpgradeSteps{labelFilter: flag[1], labelFilterValue: value[1]}
}

// walkthroughDig returns the homelab walkthrough's dig (step 7): the name it asks, the answer the
// document shows, the command and its @server.
func walkthroughDig(t *testing.T, homelab string) (hostname string, answer []string, command, server string) {
	t.Helper()
	b, err := framework.BlockWith(homelab, "dig +short")
	if err != nil {
		t.Fatalf("%s: %v", homelabDoc, err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			answer = append(answer, rest)
		} else if command == "" {
			command = line
		}
	}
	s := regexp.MustCompile(`@(\S+)`).FindStringSubmatch(command)
	if s == nil || len(answer) != 2 {
		t.Fatalf("%s: the walkthrough's dig %q should ask a server and show two lines, shows %q", homelabDoc, command, answer)
	}
	fields := strings.Fields(command)
	return fields[len(fields)-1], answer, command, s[1]
}

// shellBlockWith returns the walkthrough's shell block with the line.
func shellBlockWith(t *testing.T, markdown, line string) string {
	t.Helper()
	b, err := framework.BlockWithLine(markdown, line)
	if err != nil {
		t.Fatalf("%s: %v", homelabDoc, err)
	}
	return b
}

// docLine returns line, a command the walkthrough gives in one of its shell blocks.
func docLine(t *testing.T, markdown, line string) string {
	t.Helper()
	shellBlockWith(t, markdown, line)
	return line
}

func withoutLinesContaining(block, substr string) string {
	var out []string
	for line := range strings.SplitSeq(block, "\n") {
		if !strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// archiveRelease010 extracts the 0.1.0 release's tree into a temporary directory.
func archiveRelease010(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	if err := testenv.ExtractPreviousRelease(root, dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The 0.1.0 tree builds its image only with its Dockerfile (make docker-build, which needs a
// Docker engine: none here). Its builder stage's command and its final stage's layout, which
// pushRelease010Image reproduces.
var release010Dockerfile = []string{
	`go build -trimpath -ldflags="-s -w -X github.com/service-router/service-router-operator/internal/metrics.Version=${VERSION}" -o manager .`,
	`COPY --from=builder /workspace/manager /manager`,
	`USER 65532:65532`,
	`ENTRYPOINT ["/manager"]`,
	`docker build --build-arg VERSION=v$(VERSION)`, // Makefile
}

// pushRelease010Image builds the 0.1.0 operator as its Dockerfile's builder stage does (static,
// -trimpath, stripped, the version v0.1.0 as make docker-build passes it) for this machine's
// architecture, and pushes it as its final stage lays it out (/manager, user 65532, entrypoint
// /manager) to the registry as service-router-operator:v0.1.0, the chart's default tag. The
// distroless base under it holds only CA certificates, time zones and /etc/passwd, none of which
// the operator reads in a cluster; the image here has the binary alone, as this tree's has.
func pushRelease010Image(ctx context.Context, t *testing.T, tree, registry string) string {
	t.Helper()
	files := readFile(t, filepath.Join(tree, "Dockerfile")) + readFile(t, filepath.Join(tree, "Makefile"))
	for _, line := range release010Dockerfile {
		if !strings.Contains(files, line) {
			t.Fatalf("%s's Dockerfile and Makefile no longer say %q: the test builds its image that way", release010Version, line)
		}
	}
	bin := filepath.Join(t.TempDir(), "manager")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags=-s -w -X github.com/service-router/service-router-operator/internal/metrics.Version=v"+release010Version, "-o", bin, ".")
	cmd.Dir = tree
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the %s operator as its Dockerfile does: %v\n%s", release010Version, err, out)
	}
	ref, err := framework.PushBinaryImage(ctx, registry, framework.BinaryImage{
		Repository: "service-router-operator", Tag: "v" + release010Version,
		Files: map[string]string{"/manager": bin}, Entrypoint: []string{"/manager"}, User: "65532:65532",
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s image: %s (tag v%s)", release010Version, ref, release010Version)
	return ref
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// platformFor010 returns the homelab's platform.yaml as a 0.1.0 user had it: without the fields
// 0.1.0 does not know (the DNSConfiguration's verification, the Gateway's plainHTTP), the
// Gateway serving HTTPS with the credential its comments name (0.1.0's only way).
func platformFor010(t *testing.T, platformYAML string) string {
	t.Helper()
	credential := ""
	for line := range strings.SplitSeq(platformYAML, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "# credentialName:"); ok {
			credential = strings.TrimSpace(c)
		}
	}
	var out []string
	skipIndent := -1
	for _, line := range strings.Split(platformYAML, "\n") {
		trimmed := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if skipIndent >= 0 {
			if trimmed != "" && indent > skipIndent {
				continue
			}
			skipIndent = -1
		}
		switch {
		case strings.HasPrefix(trimmed, "verification:"):
			skipIndent = indent
			continue
		case strings.HasPrefix(trimmed, "plainHTTP:"):
			line = line[:indent] + "credentialName: " + credential
		}
		out = append(out, line)
	}
	result := strings.Join(out, "\n")
	for _, field := range []string{"verification:", "plainHTTP:"} {
		for line := range strings.SplitSeq(result, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), field) {
				t.Fatalf("%s for %s: %s is still there", homelabPlatform, release010Version, field)
			}
		}
	}
	if credential == "" || !strings.Contains(result, "\n  credentialName: "+credential) {
		t.Fatalf("%s for %s: no credentialName in place of plainHTTP:\n%s", homelabPlatform, release010Version, result)
	}
	return result
}

// externalDNSChartValues turns an ExternalDNS command line into the values of ExternalDNS' chart
// that render it: the flags the chart has values for as those values, the others as extraArgs;
// and the image tag of the ExternalDNS the project tests (docs/examples/external-dns pin it).
func externalDNSChartValues(args []string) ([]byte, error) {
	values := map[string]any{}
	extra := map[string]any{}
	for _, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch name {
		case "source":
			values["sources"] = append(anySlice(values["sources"]), value)
		case "provider":
			values["provider"] = map[string]any{"name": value}
		case "policy", "registry", "interval":
			values[name] = value
		case "txt-owner-id":
			values["txtOwnerId"] = value
		case "txt-prefix":
			values["txtPrefix"] = value
		case "annotation-filter":
			values["annotationFilter"] = value
		case "label-filter":
			values["labelFilter"] = value
		case "domain-filter":
			values["domainFilters"] = append(anySlice(values["domainFilters"]), value)
		case "events":
			values["triggerLoopOnEvent"] = true
		default:
			if !hasValue {
				extra[name] = true
				continue
			}
			extra[name] = value
		}
	}
	values["extraArgs"] = extra
	// The ExternalDNS the project tests (the chart's default is its own appVersion, older).
	values["image"] = map[string]any{"tag": framework.ExternalDNSImageTag}
	return yaml.Marshal(values)
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// externalDNSPod returns the running pod of the ExternalDNS release.
func externalDNSPod(ctx context.Context, t *testing.T, w *framework.NodeWorld, release string) corev1.Pod {
	t.Helper()
	pods, err := w.WaitDeploymentReady(ctx, externalDNSNamespace, release, podTimeout)
	if err != nil || len(pods) != 1 {
		t.Fatalf("ExternalDNS %s: %d pods, %v\n%s", release, len(pods), err, w.Diagnostics(ctx, externalDNSNamespace))
	}
	return pods[0]
}

func containerArgs(pod corev1.Pod, container string) []string {
	for _, c := range pod.Spec.Containers {
		if c.Name == container {
			return c.Args
		}
	}
	return nil
}

// checkPodImage checks that every pod's container runs image.
func checkPodImage(t *testing.T, pods []corev1.Pod, container, image string) {
	t.Helper()
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			if c.Name == container && c.Image != image {
				t.Errorf("pod %s runs %s, want %s", p.Name, c.Image, image)
			}
		}
	}
}

func chartAppVersion(t *testing.T, chart string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^appVersion: "?([^"\s]+)"?$`).FindStringSubmatch(chart)
	if m == nil {
		t.Fatal("the chart's Chart.yaml has no appVersion")
	}
	return m[1]
}

// externalDNSMetrics scrapes ExternalDNS' metrics on its pod's address (--metrics-address,
// :7979 by default): the gauges and counters without labels, by name.
func externalDNSMetrics(ctx context.Context, pod corev1.Pod) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pod.Status.PodIP+":7979/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// waitExternalDNSSync waits until ExternalDNS has completed a synchronization that started after
// since (the reconcile and sync timestamps of its metrics): whatever the cluster and the zone held
// at since, it has acted upon. It returns the metrics then.
func waitExternalDNSSync(ctx context.Context, t *testing.T, pod corev1.Pod, since time.Time, timeout time.Duration) map[string]float64 {
	t.Helper()
	var m map[string]float64
	err := framework.Poll(ctx, timeout, 200*time.Millisecond, "ExternalDNS pod "+pod.Name+" to complete a synchronization started after "+since.Format("15:04:05.000"),
		func(ctx context.Context) (bool, string, error) {
			var err error
			if m, err = externalDNSMetrics(ctx, pod); err != nil {
				return false, err.Error(), nil
			}
			started, synced := m["external_dns_controller_last_reconcile_timestamp_seconds"], m["external_dns_controller_last_sync_timestamp_seconds"]
			return started >= float64(since.UnixNano())/1e9 && synced >= started,
				fmt.Sprintf("last reconcile started %.3f, last successful sync %.3f", started, synced), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// watchLease records the holders of the operator's Lease, polled every 100 ms from now; the
// function it returns stops and returns them with the time each was first seen.
func watchLease(ctx context.Context, c client.Client) func() []string {
	var mu sync.Mutex
	var seen []string
	ctx, stop := context.WithCancel(ctx)
	var done sync.WaitGroup
	done.Go(func() {
		last := "?"
		for ctx.Err() == nil {
			holder, err := leaseHolder(ctx, c)
			if holder == "" {
				holder = "(none)"
			}
			if err == nil && holder != last {
				mu.Lock()
				seen = append(seen, time.Now().Format("15:04:05.000")+" "+holder)
				mu.Unlock()
				last = holder
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	return func() []string {
		stop()
		done.Wait()
		mu.Lock()
		defer mu.Unlock()
		return seen
	}
}

// The five kinds of the operator, each of whose objects must be Ready after the upgrade.
var routerKinds = []schema.GroupVersionKind{
	{Group: "cluster.router.io", Version: "v1alpha1", Kind: "ClusterIdentity"},
	{Group: "cluster.router.io", Version: "v1alpha1", Kind: "DNSConfiguration"},
	{Group: "routing.router.io", Version: "v1alpha1", Kind: "Gateway"},
	{Group: "routing.router.io", Version: "v1alpha1", Kind: "DNSPolicy"},
	{Group: "routing.router.io", Version: "v1alpha1", Kind: "ServiceRoute"},
}

// upgradedAndReady reports whether the 0.2.0 operator has reconciled everything: every object of
// the five kinds Ready for its generation, every ServiceRoute with the Published condition 0.1.0
// did not have, and the Istio Gateway listing host namespace-scoped (0.2.0's default; 0.1.0
// listed it bare).
func upgradedAndReady(ctx context.Context, c client.Client, host string) (bool, string, error) {
	var waiting []string
	for _, gvk := range routerKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			return false, err.Error(), nil
		}
		if len(list.Items) == 0 {
			waiting = append(waiting, "no "+gvk.Kind)
		}
		for _, o := range list.Items {
			conditions, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			byType := map[string]map[string]any{}
			for _, c := range conditions {
				if m, ok := c.(map[string]any); ok {
					byType[fmt.Sprint(m["type"])] = m
				}
			}
			ready := byType["Ready"]
			name := gvk.Kind + " " + strings.TrimPrefix(o.GetNamespace()+"/"+o.GetName(), "/")
			if ready == nil || ready["status"] != "True" || fmt.Sprint(ready["observedGeneration"]) != strconv.FormatInt(o.GetGeneration(), 10) {
				waiting = append(waiting, fmt.Sprintf("%s Ready=%v", name, ready))
			}
			if gvk.Kind == "ServiceRoute" && byType["Published"] == nil {
				waiting = append(waiting, name+" has no Published condition yet")
			}
		}
	}
	var gws istionetworkingv1.GatewayList
	if err := c.List(ctx, &gws); err != nil {
		return false, err.Error(), nil
	}
	scoped := false
	for _, g := range gws.Items {
		for _, s := range g.Spec.GetServers() {
			for _, h := range s.GetHosts() {
				scoped = scoped || strings.HasSuffix(h, "/"+host)
			}
		}
	}
	if !scoped {
		waiting = append(waiting, "no Istio Gateway lists */"+host)
	}
	return len(waiting) == 0, strings.Join(waiting, "; "), nil
}

// checkCRDsInRelease checks that the operator's CRDs now belong to the Helm release (what
// --take-ownership did: 0.1.0 installed them from crds/, without release metadata).
func checkCRDsInRelease(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	for _, name := range []string{"clusteridentities.cluster.router.io", "dnsconfigurations.cluster.router.io",
		"gateways.routing.router.io", "dnspolicies.routing.router.io", "serviceroutes.routing.router.io"} {
		crd := &metav1.PartialObjectMetadata{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			t.Errorf("CRD %s: %v", name, err)
			continue
		}
		if got := crd.Annotations["meta.helm.sh/release-name"]; got != operatorDeployment {
			t.Errorf("CRD %s: annotation meta.helm.sh/release-name %q, want %q (taken over by the release)", crd.Name, got, operatorDeployment)
		}
	}
}

// stepTimings collects the journey's timings for one log line each.
type stepTimings struct{ lines []string }

func (s *stepTimings) add(what string, d time.Duration) {
	s.lines = append(s.lines, fmt.Sprintf("%8s  %s", d.Round(10*time.Millisecond), what))
}

func (s *stepTimings) String() string { return strings.Join(s.lines, "\n") }
