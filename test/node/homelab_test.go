//go:build node

package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The homelab walkthrough, docs/INSTALLATION.md#homelab, and its files.
const (
	homelabDoc      = "docs/INSTALLATION.md"
	homelabHeading  = "### Homelab"
	homelabPlatform = "docs/examples/homelab/platform.yaml"
	homelabApp      = "docs/examples/homelab/app.yaml"
	// The ingress Service istioctl's default profile creates (step 1 of the walkthrough): the
	// test world has no Istio, so the test creates it, with the address the walkthrough says the
	// load balancer gave it.
	homelabIngressService = "istio-ingressgateway"
)

// TestHomelab_WalkthroughResolves follows docs/INSTALLATION.md#homelab from nothing to a name
// that resolves, with the operator as the walkthrough installs it: its image built and pushed to
// the world's registry with the walkthrough's command, the chart installed with the homelab values
// by the walkthrough's helm command, its pod Running and Ready through its probes under a kubelet
// in a namespace that enforces the restricted Pod Security Standard. Every command and file comes
// from the document: ExternalDNS runs with the walkthrough's command line,
// docs/examples/homelab/platform.yaml and app.yaml are applied with the walkthrough's own
// `kubectl apply` and `kubectl wait` commands, the walkthrough's `dig` must print exactly the
// answer the document shows, and `kubectl router status` explains the route. Only what this
// machine cannot share with a homelab is replaced: the registry's host (the world's registry),
// the DNSEndpoint CRD's URL (the same file, from the module), the BIND server's address and port
// (in ExternalDNS' flags, in the DNSConfiguration's verification and in dig's @server) and the
// TSIG secret (a key generated for the test's BIND, under the walkthrough's key name and
// algorithm). The ingress LoadBalancer Service, which Istio and MetalLB would create, is created
// by the test with the walkthrough's address, and Istio's CRDs are installed as istioctl would.
//
// It also proves the HTTP-only Gateway: the generated Istio Gateway has one server, plain HTTP on
// port 80, for the route's hostname; and the HTTPS variant the Gateway's comments describe, once
// uncommented, gives HTTPS on 443 with the Secret and an HTTP server on 80 that redirects, while
// the name keeps resolving.
func TestHomelab_WalkthroughResolves(t *testing.T) {
	ctx := t.Context()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	read := func(rel string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	section := readDocSection(t, homelabDoc, homelabHeading)
	doc, block := section.text, section.block
	shellBlock := func(command string) string {
		t.Helper()
		b, err := framework.BlockWithLine(doc, command)
		if err != nil {
			t.Fatalf("%s, section %q: %v", homelabDoc, homelabHeading, err)
		}
		return b
	}

	// The document shows both files as they are: what a reader sees is what is applied here.
	platformYAML, appYAML := read(homelabPlatform), read(homelabApp)
	for file, content := range map[string]string{homelabPlatform: platformYAML, homelabApp: appYAML} {
		if !slices.Contains(framework.FencedBlocks(doc), content) {
			t.Errorf("%s, section %q, does not show %s as it is: copy the file into its yaml block", homelabDoc, homelabHeading, file)
		}
	}

	// Step 2: the DNSEndpoint CRD comes from the ExternalDNS release the suite runs (the module
	// the operator's go.mod selects, whose CRD the test's API server has installed).
	crdURL := regexp.MustCompile(`https://raw\.githubusercontent\.com/kubernetes-sigs/external-dns/(v[^/]+)/(\S+)`).FindStringSubmatch(block("dnsendpoints.externaldns.k8s.io"))
	if crdURL == nil {
		t.Fatalf("%s, section %q: no kubectl apply of the DNSEndpoint CRD from the ExternalDNS repository", homelabDoc, homelabHeading)
	}
	chart, err := framework.ExternalDNSChart(ctx)
	if err != nil {
		t.Fatal(err)
	}
	module := filepath.Dir(filepath.Dir(chart))
	crdFile := filepath.Join(module, crdURL[2])
	if !strings.HasSuffix(module, "@"+crdURL[1]) {
		t.Errorf("the walkthrough installs the DNSEndpoint CRD of ExternalDNS %s, the suite runs %s", crdURL[1], filepath.Base(module))
	} else if _, err := os.Stat(crdFile); err != nil {
		t.Errorf("the walkthrough's DNSEndpoint CRD %s is not in ExternalDNS %s: %v", crdURL[2], crdURL[1], err)
	}

	// Step 4: ExternalDNS' command line; its DNS server is the walkthrough's BIND server.
	edArgs, err := framework.CommandArgs(block("external-dns --"), "external-dns")
	if err != nil {
		t.Fatal(err)
	}
	flag := func(name string) string {
		t.Helper()
		v, err := framework.FlagValue(edArgs, name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	docDNSServer := flag("rfc2136-host") + ":" + flag("rfc2136-port")
	// The controller name the instance selects, as the DNSConfiguration must name it.
	controller := strings.TrimPrefix(flag("label-filter"), naming.LabelController+"=")

	// Step 7: the dig command and the answer the document shows (the "# " lines under it).
	digBlock := block("dig +short")
	digCommand, docAnswer := "", []string(nil)
	for line := range strings.SplitSeq(strings.TrimSpace(digBlock), "\n") {
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			docAnswer = append(docAnswer, rest)
		} else if digCommand == "" {
			digCommand = line
		}
	}
	digServer := regexp.MustCompile(`@(\S+)`).FindStringSubmatch(digCommand)
	if digServer == nil || digServer[1]+":53" != docDNSServer || len(docAnswer) != 2 {
		t.Fatalf("the walkthrough's dig %q should ask ExternalDNS' DNS server %s and show two lines (the CNAME target, the address), shows %q",
			digCommand, docDNSServer, docAnswer)
	}
	hostname := strings.Fields(digCommand)[len(strings.Fields(digCommand))-1]
	target, lbIP := strings.TrimSuffix(docAnswer[0], "."), docAnswer[1]

	// The walkthrough's objects, read for what the test world must match.
	platform, err := framework.ReadManifests(filepath.Join(root, homelabPlatform))
	if err != nil {
		t.Fatal(err)
	}
	identity, gateway := only(t, platform, "ClusterIdentity"), only(t, platform, "Gateway")
	domain, _, _ := unstructured.NestedString(identity.Object, "spec", "domain")
	gatewayController, _, _ := unstructured.NestedString(gateway.Object, "spec", "controller")
	if zone := flag("rfc2136-zone"); zone != domain {
		t.Fatalf("ExternalDNS writes zone %q, the ClusterIdentity's domain is %q", zone, domain)
	}

	// The zone on a BIND server that takes only updates signed with a TSIG key (step 3), and
	// hands the zone out to 127.0.0.1. The walkthrough's key name is the one the server's key
	// gets (externaldns-<server name>): only the secret differs.
	zone, err := framework.StartBind(ctx, t, framework.BindOptions{Name: "home", Zone: domain, TSIG: true, Address: framework.NodeIP(1)})
	if err != nil {
		t.Fatal(err)
	}
	if flag("rfc2136-tsig-keyname") != zone.TSIG.Name || flag("rfc2136-tsig-secret-alg") != zone.TSIG.Algorithm {
		t.Fatalf("the walkthrough's TSIG key %s (%s) is not the test server's %s (%s)",
			flag("rfc2136-tsig-keyname"), flag("rfc2136-tsig-secret-alg"), zone.TSIG.Name, zone.TSIG.Algorithm)
	}
	// ExternalDNS, a process here, updates the zone on the loopback; the operator's pod verifies
	// it on the node's address.
	localDNSServer := framework.NodeIP(1) + ":" + strconv.Itoa(zone.Port)
	args := edArgs
	var replaced []string
	for _, r := range [][2]string{{"rfc2136-host", "127.0.0.1"}, {"rfc2136-port", strconv.Itoa(zone.Port)}, {"rfc2136-tsig-secret", zone.TSIG.Secret}} {
		var old string
		if args, old, err = framework.ReplaceFlag(args, r[0], r[1]); err != nil {
			t.Fatal(err)
		}
		replaced = append(replaced, "--"+r[0]+"="+old)
	}
	t.Logf("ExternalDNS as %s runs it: %s\nreplaced here: %s (the framework adds --kubeconfig and --metrics-address)",
		homelabDoc, strings.Join(edArgs, " "), strings.Join(replaced, " "))

	w := startWorld(t, 1)
	cl := w.Cluster()
	// Step 1: Istio's CRDs, as istioctl installs them, and its ingress Service with the load
	// balancer's address.
	if err := w.InstallIstioCRDs(); err != nil {
		t.Fatal(err)
	}
	gatewayNS := gateway.GetNamespace()
	if _, err := framework.CreateIngressService(ctx, cl.Client, framework.IngressService{
		Namespace: gatewayNS, Name: homelabIngressService, Controller: gatewayController, IPs: []string{lbIP},
	}); err != nil {
		t.Fatal(err)
	}
	// Step 1's check, as written: the gateway has the address the walkthrough shows.
	if out, err := cl.RunScript(ctx, block("get service istio-ingressgateway")); err != nil || !strings.Contains(out, lbIP) {
		t.Fatalf("step 1: the ingress gateway's address: %v\n%s", err, out)
	}

	// Step 2: the image pushed to the homelab's registry, the DNSEndpoint CRD, the chart.
	docRegistry := regexp.MustCompile(`IMG=([^/\s]+)/`).FindStringSubmatch(shellBlock("make image image-push"))
	if docRegistry == nil {
		t.Fatalf("%s: the image push names no registry host in IMG", homelabDoc)
	}
	local := func(script string) string {
		return strings.ReplaceAll(script, docRegistry[1]+"/", w.Registry+"/")
	}
	started := time.Now()
	unlock, err := framework.LockTree(root)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cl.RunScript(ctx, local(shellBlock("make image image-push")))
	unlock()
	if err != nil {
		t.Fatalf("step 2, the image: %v", err)
	}
	t.Logf("step 2: image pushed in %s:\n%s", time.Since(started).Round(time.Millisecond), lastLines(out, 3))
	installScript := local(block("helm install"))
	installScript = strings.Replace(installScript, crdURL[0], crdFile, 1)
	started = time.Now()
	if out, err = cl.RunScript(ctx, installScript); err != nil {
		t.Fatalf("step 2, the chart: %v\n%s", err, w.Diagnostics(ctx, operatorNamespace))
	}
	t.Logf("step 2: chart installed and rolled out in %s:\n%s", time.Since(started).Round(time.Millisecond), out)
	// Restricted Pod Security, enforced: the label is accepted without a warning about the
	// running pod, and a new pod is admitted under it and becomes Ready through its probes.
	if out, err = cl.RunScript(ctx, block("pod-security.kubernetes.io/enforce=restricted")); err != nil || strings.Contains(out, "Warning") {
		t.Fatalf("step 2, the restricted label: %v\n%s", err, out)
	}
	if out, err := cl.RunScript(ctx, "kubectl -n "+operatorNamespace+" rollout restart deployment/"+operatorDeployment); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	pods, err := w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout)
	if err != nil {
		t.Fatalf("the operator under enforce=restricted: %v\n%s", err, w.Diagnostics(ctx, operatorNamespace))
	}
	checkOperatorPods(t, pods, 1, docRegistry[1], w.Registry)
	op := operatorDiagnostics(ctx, w)

	// Step 4: ExternalDNS, before anything is published, as a reader starts it.
	edKubeconfig, err := w.NewKubeconfig("external-dns-home")
	if err != nil {
		t.Fatal(err)
	}
	ed, err := cl.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: controller, Args: args, Kubeconfig: edKubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	diagnostics := []func() string{op, ed.Diagnostics, zone.Diagnostics}
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("%s\n%s", fmt.Sprintf(format, a...), describeAll(diagnostics))
	}

	// Step 5: the platform's objects, with the walkthrough's commands. The verification asks the
	// BIND server ExternalDNS writes to: the test's, here.
	if !strings.Contains(platformYAML, `["`+docDNSServer+`"]`) {
		t.Fatalf("%s: the DNSConfiguration's verification does not ask ExternalDNS' DNS server %s", homelabPlatform, docDNSServer)
	}
	localPlatform := filepath.Join(t.TempDir(), "platform.yaml")
	if err := os.WriteFile(localPlatform, []byte(strings.ReplaceAll(platformYAML, `["`+docDNSServer+`"]`, `["`+localDNSServer+`"]`)), 0o644); err != nil {
		t.Fatal(err)
	}
	platformScript := shellBlock("kubectl apply -f " + homelabPlatform)
	out, err = cl.RunScript(ctx, strings.ReplaceAll(platformScript, homelabPlatform, localPlatform))
	if err != nil {
		fail("step 5: %v", err)
	}
	t.Logf("step 5:\n%s", out)
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(gateway.GetName()) + `\s.*\s` + regexp.QuoteMeta(lbIP) + `\s`).MatchString(out) {
		fail("step 5: kubectl get rgw does not show the load balancer's address %s:\n%s", lbIP, out)
	}

	// Step 6: the application's objects, the file and commands exactly as written.
	started = time.Now()
	out, err = cl.RunScript(ctx, shellBlock("kubectl apply -f "+homelabApp))
	if err != nil {
		fail("step 6: %v", err)
	}
	t.Logf("step 6 (Ready and Published after %s):\n%s", time.Since(started).Round(time.Millisecond), out)

	// Whatever the walkthrough's waits say, the route publishes the name its dig asks for, and is
	// Ready (records written) and Published (the zone answers them).
	apps, err := framework.ReadManifests(filepath.Join(root, homelabApp))
	if err != nil {
		t.Fatal(err)
	}
	routeObj := only(t, apps, "ServiceRoute")
	route := &routingv1alpha1.ServiceRoute{}
	if err := cl.Client.Get(ctx, types.NamespacedName{Namespace: routeObj.GetNamespace(), Name: routeObj.GetName()}, route); err != nil {
		t.Fatal(err)
	}
	if route.Status.Hostname != hostname || !meta.IsStatusConditionTrue(route.Status.Conditions, "Ready") ||
		!meta.IsStatusConditionTrue(route.Status.Conditions, "Published") {
		fail("ServiceRoute %s/%s: hostname %q (the walkthrough digs %q), conditions %+v; want Ready and Published",
			route.Namespace, route.Name, route.Status.Hostname, hostname, route.Status.Conditions)
	}

	// Step 7: the walkthrough's dig, against the test's server, prints what the document shows.
	out, err = cl.RunScript(ctx, strings.Replace(digCommand, "@"+digServer[1], "@127.0.0.1 -p "+strconv.Itoa(zone.Port), 1))
	if err != nil {
		fail("step 7: %v", err)
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(got, docAnswer) {
		fail("step 7: %s answers\n%s\nwant, as %s shows,\n%s", digCommand, out, homelabDoc, strings.Join(docAnswer, "\n"))
	}
	t.Logf("step 7: %s -> %s", digCommand, strings.Join(docAnswer, " -> "))
	chain := []string{"CNAME " + target + ".", "A " + lbIP}
	if ans := framework.MustDig(ctx, t, zone.Query(hostname, "A")); !framework.SameRecords(ans, chain) {
		fail("%s answers %s, want %v", hostname, ans, chain)
	}
	// The records are ExternalDNS' with the walkthrough's owner ID and prefix: it will update and
	// delete them (the zone only takes updates signed with the key, so it wrote them).
	owner, prefix := "external-dns/owner="+flag("txt-owner-id"), flag("txt-prefix")
	recs := framework.LogZone(ctx, t, "step 7", zone)
	for _, name := range []string{prefix + "cname-" + hostname + ".", prefix + "a-" + target + "."} {
		if !framework.HasRecord(recs, name, "TXT", owner) {
			fail("the zone has no ownership record %s with %s", name, owner)
		}
	}

	// Step 8: the plugin explains the route: Ready, its one zone published, no problem.
	statusScript := shellBlock("kubectl router status " + hostname)
	if out, err = cl.RunScript(ctx, statusScript); err != nil {
		fail("step 8: %v", err)
	}
	t.Logf("step 8: %s\n%s", strings.TrimSpace(statusScript), out)
	for _, want := range []string{"ServiceRoute " + route.Namespace + "/" + route.Name, "published  1/1 zones", "Nothing is wrong"} {
		if !strings.Contains(out, want) {
			fail("step 8: kubectl router status does not say %q, as the walkthrough does:\n%s", want, out)
		}
	}

	// The HTTP-only Gateway: one server, plain HTTP on port 80, for the route's hostname.
	scopedHost := route.Namespace + "/" + hostname // NamespaceScoped hosts, the default
	istioGateway := func() *istionetworkingv1.Gateway {
		t.Helper()
		gw := &istionetworkingv1.Gateway{}
		if err := cl.Client.Get(ctx, types.NamespacedName{Namespace: gatewayNS, Name: gateway.GetName()}, gw); err != nil {
			t.Fatal(err)
		}
		return gw
	}
	servers := describeServers(istioGateway())
	if want := []string{"80/HTTP http hosts=" + scopedHost}; !slices.Equal(servers, want) {
		fail("the Istio Gateway of the plainHTTP: Serve Gateway has servers %q, want only %q", servers, want)
	}
	t.Logf("Istio Gateway %s/%s: %s", gatewayNS, gateway.GetName(), strings.Join(servers, "; "))

	// The HTTPS variant in the Gateway's comments: uncommented as they say (the two lines replace
	// plainHTTP: Serve) and applied, HTTPS on 443 with the Secret and HTTP on 80 redirecting.
	variant, credential := httpsVariant(t, platformYAML)
	localVariant := filepath.Join(t.TempDir(), "platform-https.yaml")
	if err := os.WriteFile(localVariant, []byte(strings.ReplaceAll(variant, `["`+docDNSServer+`"]`, `["`+localDNSServer+`"]`)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cl.RunScript(ctx, strings.ReplaceAll(platformScript, homelabPlatform, localVariant)); err != nil {
		fail("the HTTPS variant: %v", err)
	} else {
		t.Logf("the HTTPS variant applied:\n%s", out)
	}
	want := []string{"443/HTTPS https tls=SIMPLE credential=" + credential + " hosts=" + scopedHost, "80/HTTP http httpsRedirect hosts=" + scopedHost}
	err = framework.Poll(ctx, convergeTimeout, 100*time.Millisecond, fmt.Sprintf("the Istio Gateway's servers %q", want), func(context.Context) (bool, string, error) {
		got := describeServers(istioGateway())
		return slices.Equal(got, want), strings.Join(got, "; "), nil
	})
	if err != nil {
		fail("the HTTPS variant: %v", err)
	}
	t.Logf("the HTTPS variant's Istio Gateway: %s", strings.Join(want, "; "))
	if ans := framework.MustDig(ctx, t, zone.Query(hostname, "A")); !framework.SameRecords(ans, chain) {
		fail("after the HTTPS variant, %s answers %s, want %v", hostname, ans, chain)
	}
}

// only returns the one object of kind among objs.
func only(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s, want one", len(found), kind)
	}
	return found[0]
}

// httpsVariant returns platform.yaml with the Gateway's commented HTTPS variant taken: the
// commented "credentialName:" and "plainHTTP:" lines uncommented in place of the active
// plainHTTP line, and the credential it names.
func httpsVariant(t *testing.T, platformYAML string) (string, string) {
	t.Helper()
	lines := strings.Split(platformYAML, "\n")
	var out []string
	credential, uncommented := "", 0
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		switch {
		case strings.HasPrefix(trimmed, "plainHTTP:"):
			continue // replaced by the commented lines
		case strings.HasPrefix(trimmed, "# credentialName:"), strings.HasPrefix(trimmed, "# plainHTTP:"):
			line = indent + strings.TrimPrefix(trimmed, "# ")
			if v, ok := strings.CutPrefix(line, indent+"credentialName:"); ok {
				credential = strings.TrimSpace(v)
			}
			uncommented++
		}
		out = append(out, line)
	}
	if uncommented != 2 || credential == "" {
		t.Fatalf("%s: want the Gateway's HTTPS variant as two commented lines, credentialName and plainHTTP; found %d", homelabPlatform, uncommented)
	}
	return strings.Join(out, "\n"), credential
}

// describeServers writes an Istio Gateway's servers as a user reading its YAML would sum them up:
// port/protocol, name, TLS settings, hosts.
func describeServers(gw *istionetworkingv1.Gateway) []string {
	var out []string
	for _, s := range gw.Spec.Servers {
		d := fmt.Sprintf("%d/%s %s", s.GetPort().GetNumber(), s.GetPort().GetProtocol(), s.GetPort().GetName())
		if tls := s.GetTls(); tls != nil {
			if tls.GetHttpsRedirect() {
				d += " httpsRedirect"
			}
			if tls.GetCredentialName() != "" {
				d += fmt.Sprintf(" tls=%s credential=%s", tls.GetMode(), tls.GetCredentialName())
			}
		}
		d += " hosts=" + strings.Join(s.GetHosts(), ",")
		out = append(out, d)
	}
	return out
}
