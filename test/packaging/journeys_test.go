package packaging

import (
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The journey sections: what a user follows from nothing to a working install, an upgrade or a
// removal. Every shell block in them is run by a test, as written, or named below with the reason
// no test here can run it.
var journeySections = []struct{ doc, heading string }{
	{"INSTALLATION.md", "### Five minutes on k3s or kind"},
	{"INSTALLATION.md", "### Homelab"},
	{"INSTALLATION.md", "### AKS"},
	{"INSTALLATION.md", "## OLM"},
	{"INSTALLATION.md", "### Upgrading"},
	{"INSTALLATION.md", "## Uninstall"},
	{"OPERATOR-GUIDE.md", "### Verifying Azure Private DNS zones"},
	{"OPERATOR-GUIDE.md", "## Regional failover"},
}

// journeyBlock is one shell block of a journey section, found by a line it holds, and the test
// that runs it: the test's file finds the block by selector, a string the block contains. Or,
// for a block no test can run here, why.
type journeyBlock struct {
	line     string
	test     string
	selector string
	// notRun says why no test runs the block as written; partly, what a test that runs the block
	// does instead of some of its commands (beyond the placeholders the test lists).
	notRun, partly string
}

var journeyBlocks = []journeyBlock{
	// INSTALLATION, five minutes on k3s or kind.
	{line: "make image-archive", test: "TestQuickstart_ImportedImageAnswersInFiveMinutes", selector: "make image-archive"},
	{line: "kind load image-archive dist/service-router-operator.tar", test: "TestQuickstart_ImportedImageAnswersInFiveMinutes", selector: "kind load image-archive"},
	{line: "sudo k3s ctr images import dist/service-router-operator.tar", test: "TestQuickstart_ImportedImageAnswersInFiveMinutes", selector: "k3s ctr images import"},
	{line: "CLUSTER=kind   # this cluster's name", test: "TestQuickstart_ImportedImageAnswersInFiveMinutes", selector: "helm install"},
	{line: "make demo-on-cluster", test: "TestQuickstart_ImportedImageAnswersInFiveMinutes", selector: "make demo-on-cluster"},
	// INSTALLATION, homelab.
	{line: "kubectl -n istio-system get service istio-ingressgateway   # EXTERNAL-IP 192.168.1.240", test: "TestHomelab_WalkthroughResolves", selector: "get service istio-ingressgateway"},
	{line: "make image image-push", test: "TestHomelab_WalkthroughResolves", selector: "make image image-push"},
	{line: "CLUSTER=homelab   # this cluster's name (ClusterIdentity spec.cluster)", test: "TestHomelab_WalkthroughResolves", selector: "helm install"},
	{line: "kubectl label namespace service-router-system pod-security.kubernetes.io/enforce=restricted", test: "TestHomelab_WalkthroughResolves", selector: "pod-security.kubernetes.io/enforce=restricted"},
	{line: "tsig-keygen -a hmac-sha256 externaldns-home > /etc/bind/externaldns-home.key",
		notRun: "it writes the BIND server's /etc/bind; the test's BIND gets a key of the same name and algorithm, which TestHomelab_WalkthroughResolves gives ExternalDNS"},
	{line: `TSIG_SECRET=$(sed -n 's/.*secret "\(.*\)";/\1/p' /etc/bind/externaldns-home.key)`, test: "TestHomelab_WalkthroughResolves", selector: "external-dns --",
		partly: "ExternalDNS runs with the block's arguments as the framework's process, its server's address, port and TSIG secret the test's BIND"},
	{line: "kubectl apply -f docs/examples/homelab/platform.yaml", test: "TestHomelab_WalkthroughResolves", selector: "kubectl apply -f \" + homelabPlatform"},
	{line: "kubectl apply -f docs/examples/homelab/app.yaml", test: "TestHomelab_WalkthroughResolves", selector: "kubectl apply -f \"+homelabApp"},
	{line: "dig +short @192.168.1.53 web-ns-d-dev-blog.home.example.com", test: "TestHomelab_WalkthroughResolves", selector: "dig +short"},
	{line: "kubectl router status web-ns-d-dev-blog.home.example.com", test: "TestHomelab_WalkthroughResolves", selector: "kubectl router status"},
	// INSTALLATION, AKS.
	{line: "CLUSTER=aks01                                    # this cluster's name (ClusterIdentity spec.cluster): another in every cluster",
		test: "TestAKS_InstallJourneyPublishesThroughWorkloadIdentity", selector: "> values-$CLUSTER.yaml"},
	{line: "kubectl -n aks-istio-ingress create secret tls cert-aks-ingress --cert=tls.crt --key=tls.key", test: "TestDocs_AKSIstioAddOnSecretIsTheGatewaysCredential", selector: "create secret tls"},
	{line: "TENANT_ID=$(az account show --query tenantId -o tsv)", test: "TestExternalDNSExamples_TheLoopGivesEveryClusterItsOwnerIDs", selector: "for zone in",
		partly: "az, helm and kubectl record their arguments: the namespace before the Secrets, each Secret's azure.json (the zone's resource group and subscription) before its release, each release rendered by ExternalDNS' chart; TestAKS_InstallJourneyPublishesThroughWorkloadIdentity installs the releases with the loop's arguments in pods"},
	// INSTALLATION, OLM.
	{line: "make image image-push IMG=myregistry.example.com/service-router-operator:v0.2.0",
		notRun: "docker build and docker push need a container engine, which this machine has not; TestOLM_SubscriberJourney publishes the same bundle and catalog with make release, as the section says a build of your own can"},
	{line: "kubectl apply -f service-router-olm.yaml", test: "TestOLM_SubscriberJourney", selector: "kubectl apply -f \"+olmSubscriptionFile"},
	// INSTALLATION, upgrading.
	{line: "  -n service-router-system -f values-$CLUSTER.yaml", test: "TestDocs_AKSValuesSurviveEveryDocumentedUpgrade", selector: "-n service-router-system -f values-$CLUSTER.yaml",
		partly: "helm records its arguments and the chart is rendered: the check is that no earlier setting is lost"},
	{line: "  -n service-router-system -f values-$CLUSTER.yaml --take-ownership", test: "TestUpgrade_From010InPodsAsDocumentedKeepsEveryRecord", selector: "--take-ownership"},
	{line: `  -p '{"spec":{"ingressNamespace":"aks-istio-ingress"}}'`, test: "TestOLM_UpgradeFromThePreviousRelease", selector: `"ingressNamespace":"`},
	// INSTALLATION, uninstall.
	{line: "kubectl -n service-router-system delete subscription service-router-operator", test: "TestOLM_SubscriberJourney", selector: "delete subscription"},
	{line: "kubectl delete crd serviceroutes.routing.router.io dnspolicies.routing.router.io \\", test: "TestUninstall_RemovingWhatItManagesEmptiesTheZone", selector: "delete crd serviceroutes"},
	{line: "kubectl -n olm delete catalogsource service-router", test: "TestOLM_SubscriberJourney", selector: "delete catalogsource"},
	// OPERATOR-GUIDE, verifying Azure Private DNS zones.
	{line: "CLUSTER=aks01                 # this cluster's name (and its resource group rg-aks01)", test: "TestAKS_InstallJourneyPublishesThroughWorkloadIdentity", selector: "federated-credential create",
		partly: "the az CLI cannot reach Azure here: the test parses the federated credential's --subject and --audiences and federates exactly those in the Azure stand-in, which exchanges only them, and gives the operator a client ID in CLIENT_ID, as the identity commands leave it before INSTALLATION's install block takes it"},
	{line: "kubectl -n service-router-system create configmap tls-roots --from-file=roots.pem=./roots.pem", test: "TestAKS_InstallJourneyPublishesThroughWorkloadIdentity", selector: "create configmap"},
	// OPERATOR-GUIDE, regional failover.
	{line: `kubectl -n service-router-system create secret generic zone-tsig --from-literal=weu="$TSIG_SECRET_WEU"`, test: "TestFailover_InPodsTakesOverALostRegion", selector: "  secret: zone-tsig"},
	{line: `kubectl patch dnsconfiguration dns-config --type merge -p '{"spec":{"failover":{"drain":true}}}'`, test: "TestFailover_InPodsTakesOverALostRegion", selector: `"drain":true`},
	{line: `kubectl patch dnsconfiguration dns-config --type merge -p '{"spec":{"failover":{"drain":false}}}'`, test: "TestFailover_InPodsTakesOverALostRegion", selector: `"drain":false`},
}

// shellBlocks returns the sh and bash blocks of a markdown text.
func shellBlocks(markdown string) []string {
	return codeBlocks(markdown, func(info string) bool { return info == "sh" || info == "bash" })
}

// testSources returns the Go test files of the repository by the Test functions they declare.
func testSources(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	declared := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err := filepath.WalkDir(repoRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "bin" || d.Name() == ".git" || d.Name() == "dist") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src := readFile(t, p)
		for _, m := range declared.FindAllStringSubmatch(src, -1) {
			files[m[1]] = src
		}
		return nil
	})
	require.NoError(t, err)
	return files
}

// codeContains says whether a Go source holds s in its code: its comments are blanked first, so a
// block a comment names but no code looks up does not count.
func codeContains(src, s string) bool {
	code := []byte(src)
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(code))
	var sc scanner.Scanner
	sc.Init(file, code, nil, scanner.ScanComments)
	for {
		pos, tok, lit := sc.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.COMMENT {
			start := file.Offset(pos)
			for i := start; i < start+len(lit) && i < len(code); i++ {
				if code[i] != '\n' {
					code[i] = ' '
				}
			}
		}
	}
	return strings.Contains(string(code), s)
}

func TestCodeContains_CommentsDoNotCount(t *testing.T) {
	src := "package p\n\n// runs `make image-push` as documented\nfunc TestX() {\n\trun(\"kubectl apply -f \" + file) /* helm install */\n}\n"
	for selector, want := range map[string]bool{
		"make image-push":           false, // only a line comment names it
		"helm install":              false, // only a block comment
		`kubectl apply -f " + file`: true,  // the code, across a string and an expression
		"kubectl apply -f":          true,
		"func TestX":                true,
	} {
		if got := codeContains(src, selector); got != want {
			t.Errorf("codeContains(%q) = %v, want %v", selector, got, want)
		}
	}
}

// TestDocs_EveryJourneyBlockIsRunByATest: each shell block of the journey sections is listed
// in journeyBlocks with the test that runs it (whose source finds it by a string it contains) or
// the reason none can. A block added to a section without a test fails here; so does an entry
// whose block is gone, or a test that no longer exists or no longer looks the block up.
func TestDocs_EveryJourneyBlockIsRunByATest(t *testing.T) {
	sources := testSources(t)
	claimed := make([]int, len(journeyBlocks))
	for _, s := range journeySections {
		section := docSection(t, readFile(t, repoPath("docs", s.doc)), s.heading)
		for _, block := range shellBlocks(section) {
			var entries []int
			for i, e := range journeyBlocks {
				for _, line := range strings.Split(block, "\n") {
					if strings.TrimSpace(line) == strings.TrimSpace(e.line) {
						entries = append(entries, i)
						break
					}
				}
			}
			if !assert.Len(t, entries, 1, "docs/%s, %s: the block below is listed in journeyBlocks %d times; add it with the test that runs it as written (or why none can):\n%s",
				s.doc, s.heading, len(entries), block) {
				continue
			}
			e := journeyBlocks[entries[0]]
			claimed[entries[0]]++
			if e.test == "" {
				assert.NotEmpty(t, e.notRun, "docs/%s: %q: a test, or why none runs it", s.doc, e.line)
				continue
			}
			src, ok := sources[e.test]
			if !assert.True(t, ok, "docs/%s: %q: no test %s", s.doc, e.line, e.test) {
				continue
			}
			assert.True(t, codeContains(src, e.selector), "docs/%s: %q: %s's code (its comments left out) does not look the block up by %q", s.doc, e.line, e.test, e.selector)
			// A selector with a quote is a Go expression of the test's source, not the block's text.
			if !strings.Contains(e.selector, "\"") {
				assert.Contains(t, block, e.selector, "docs/%s: the block of %q does not contain its selector", s.doc, e.line)
			}
		}
	}
	for i, n := range claimed {
		assert.Equal(t, 1, n, "journeyBlocks: %q matches %d blocks of the journey sections", journeyBlocks[i].line, n)
	}
}
