//go:build node

package node

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/azurestandin"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The AKS journey: docs/INSTALLATION.md#aks, what it links to in docs/OPERATOR-GUIDE.md, and
// their files.
const (
	aksDoc          = "docs/INSTALLATION.md"
	aksHeading      = "### AKS"
	aksGuide        = "docs/OPERATOR-GUIDE.md"
	aksGuideHeading = "### Verifying Azure Private DNS zones"
	aksValues       = "docs/examples/aks-values.yaml"
	// The line of INSTALLATION's AKS install that makes the cluster's values file from the template.
	aksValuesLine = `sed -e "s/<cluster>/$CLUSTER/" -e "s/<client-id>/$CLIENT_ID/" ` + aksValues + ` > values-$CLUSTER.yaml`
	aksSamples    = "config/samples"
	// operatorIdentityClientID is the client ID of the operator's identity, which OPERATOR-GUIDE's
	// identity commands (az identity create, then show) leave in CLIENT_ID.
	operatorIdentityClientID = "33333333-3333-3333-3333-333333333333"
	// The AKS Istio add-on's internal ingress Service (the Gateway sample's ingressNamespace and
	// controller), which the add-on and Azure's load balancer would create, with an address of
	// the cluster's virtual network.
	aksIngressNamespace = "aks-istio-ingress"
	aksIngressService   = "aks-istio-ingressgateway-internal"
	aksIngressIP        = "10.224.0.100"
	// The zones of the system pool's nodes (AKS labels a node of zone 1 of West Europe so).
	aksZonePrefix = "westeurope-"
	// aksPublishTimeout bounds a route's way to Published: the example values' ExternalDNS
	// synchronizes once a minute and the operator lists a zone at most every 30 s by default.
	aksPublishTimeout = 4 * time.Minute
)

// TestAKS_InstallJourneyPublishesThroughWorkloadIdentity follows docs/INSTALLATION.md#aks on a
// cluster shaped like AKS, with the operator and ExternalDNS as pods:
//
//   - the two nodes are a system node pool as AKS labels it (kubernetes.azure.com/mode=system,
//     topology.kubernetes.io/zone westeurope-1 and -2; the first tainted
//     CriticalAddonsOnly=true:NoSchedule as a dedicated system pool is), and AKS's workload
//     identity webhook runs (framework.WorkloadIdentityWebhook: the real webhook's mutation);
//   - the operator's chart is installed with the document's helm command and
//     docs/examples/aks-values.yaml: two replicas on the system pool, one per zone, the
//     ServiceMonitor, PrometheusRule and PodDisruptionBudget, the workload identity the webhook
//     gives its pods (env and projected token); the TLS roots of the stand-in given as
//     OPERATOR-GUIDE says (its ConfigMap command and values file: SSL_CERT_FILE, the chart's
//     extraVolumes and extraVolumeMounts);
//   - the three regional ExternalDNS releases from ExternalDNS' chart with
//     docs/examples/external-dns/<zone>-values.yaml, installed as the document's loop installs them,
//     each with its own workload identity and the azure.json Secret the values mount;
//   - Azure Private DNS and Entra ID are the Azure stand-in on the first node's address: three
//     zones of one name in three resource groups, and the token endpoint exchanging a pod's
//     projected service account token as Entra ID does, against the federated credentials the
//     guide's `az identity federated-credential create` makes (the cluster's issuer and signing
//     keys, the service account as subject, api://AzureADTokenExchange as audience);
//   - the platform's objects (config/samples' ClusterIdentity with the ExternalDNS values'
//     domain and environment letter, the document's DNSConfiguration verified with
//     azurePrivateDNS as the guide shows it, the Gateway sample for the Istio add-on) and the
//     application's (the DNSPolicy and ServiceRoute samples), until the routes are Published in
//     the zone their policy selects, read by the operator's pod through Resource Manager.
//
// It logs the time from each route's creation to Ready, to ExternalDNS' write and to Published.
// Replaced because this machine is not Azure: the image repository (the world's registry), the
// clouds' endpoints (azure.json's cloud AzureStackCloud and its endpoints; the verification's
// resourceManagerEndpoint and activeDirectoryAuthorityHost), the tenant, and the TLS roots (the
// stand-in's CA: for ExternalDNS, a second key of its azure.json Secret named by SSL_CERT_FILE).
func TestAKS_InstallJourneyPublishesThroughWorkloadIdentity(t *testing.T) {
	ctx := t.Context()
	began := time.Now()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	j := &aksJourney{t: t, root: root}
	j.readDocs(ctx)

	j.w = startWorld(t, 2)
	j.cl = j.w.Cluster()
	j.systemPool(ctx)
	installCRDs(ctx, t, j.w, istioCRDs, externalDNSCRDs, prometheusOperatorCRDs)
	j.azure(ctx)
	j.installOperator(ctx)
	j.installExternalDNS(ctx)
	j.platform(ctx)
	j.application(ctx)
	t.Logf("the AKS journey took %s", time.Since(began).Round(time.Second))
}

// aksJourney is what the test read from the documents and what it started.
type aksJourney struct {
	t    *testing.T
	root string

	// From docs/INSTALLATION.md#aks.
	installScript string   // the chart's helm install
	cluster       string   // CLUSTER of the ExternalDNS loop
	loopSets      []string // the loop's --set arguments, $zone and $CLUSTER unexpanded
	loopValues    string   // the loop's -f, $zone unexpanded
	regions       []string // the loop's zones
	azureJSON     map[string]any
	dnsConfig     *clusterv1alpha1.DNSConfiguration
	// From docs/OPERATOR-GUIDE.md: the federated credential's subject and audience, the TLS roots'
	// ConfigMap command and values file.
	fedSubject, fedAudience string
	rootsScript             string // OPERATOR-GUIDE's TLS roots: ConfigMap, values, upgrade
	guideControllers        []clusterv1alpha1.ExternalDNSController
	// From docs/examples/aks-values.yaml.
	operatorClientID string
	// Per region, from its ExternalDNS values and what the chart renders of them.
	examples map[string]*aksExample
	// The names every zone shares, from the examples.
	subscription, domain, envLetter string

	w   *framework.NodeWorld
	cl  *framework.Cluster
	az  *azurestandin.Server
	wi  *framework.WorkloadIdentityWebhook
	ca  string // the stand-in's CA file
	gwT string // the gateway's target hostname
}

// aksExample is one region's ExternalDNS as its values file and the chart make it.
type aksExample struct {
	region, release, valuesFile string
	rendered                    *framework.ExternalDNSExample
	resourceGroup               string
	clientID                    string
	secretName, mountPath       string
}

func (j *aksJourney) read(rel string) string {
	j.t.Helper()
	data, err := os.ReadFile(filepath.Join(j.root, rel))
	if err != nil {
		j.t.Fatal(err)
	}
	return string(data)
}

// readDocs takes every command, file and value the journey runs from the documents.
func (j *aksJourney) readDocs(ctx context.Context) {
	t := j.t
	t.Helper()
	doc, err := framework.DocSection(j.read(aksDoc), aksHeading)
	if err != nil {
		t.Fatalf("%s: %v", aksDoc, err)
	}
	guide, err := framework.DocSection(j.read(aksGuide), aksGuideHeading)
	if err != nil {
		t.Fatalf("%s: %v", aksGuide, err)
	}
	block := func(what, markdown, substr string) string {
		t.Helper()
		b, err := framework.BlockWith(markdown, substr)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return b
	}
	// The cluster's values file made from the template, and the chart's install with it.
	if j.installScript, err = framework.BlockWithLine(doc, aksValuesLine); err != nil {
		t.Fatalf("%s, section %q: the chart's install: %v", aksDoc, aksHeading, err)
	}

	// The ExternalDNS loop: CLUSTER=…, for zone in …; do helm install … -f … --set …; done.
	loop := block(aksDoc+", the ExternalDNS loop", doc, "for zone in")
	if m := regexp.MustCompile(`(?m)^CLUSTER=(\S+)`).FindStringSubmatch(loop); m != nil {
		j.cluster = m[1]
	}
	if m := regexp.MustCompile(`(?m)^for zone in ([a-z ]+); do`).FindStringSubmatch(loop); m != nil {
		j.regions = strings.Fields(m[1])
	}
	args, err := framework.CommandArgs(loop, "helm install")
	if err != nil {
		t.Fatalf("%s, the ExternalDNS loop: %v", aksDoc, err)
	}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "-f":
			j.loopValues = args[i+1]
		case "--set":
			j.loopSets = append(j.loopSets, args[i+1])
		}
	}
	if j.cluster == "" || len(j.regions) == 0 || j.loopValues == "" || len(j.loopSets) == 0 || args[0] != "install" || args[1] != "external-dns-$zone" {
		t.Fatalf("%s: the ExternalDNS loop should set CLUSTER, loop over the zones and `helm install external-dns-$zone … -f … --set …`:\n%s", aksDoc, loop)
	}

	// The azure.json of ExternalDNS' Secret, as the document writes it.
	m := regexp.MustCompile("`(\\{\"tenantId\"[^`]*useWorkloadIdentityExtension[^`]*\\})`").FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("%s, section %q: no azure.json with useWorkloadIdentityExtension for ExternalDNS", aksDoc, aksHeading)
	}
	if err := json.Unmarshal([]byte(m[1]), &j.azureJSON); err != nil {
		t.Fatalf("%s: ExternalDNS' azure.json %s: %v", aksDoc, m[1], err)
	}

	// The DNSConfiguration listing the three controllers.
	j.dnsConfig = &clusterv1alpha1.DNSConfiguration{}
	if err := yaml.UnmarshalStrict([]byte(block(aksDoc+", the DNSConfiguration", doc, "kind: DNSConfiguration")), j.dnsConfig); err != nil {
		t.Fatalf("%s: the DNSConfiguration: %v", aksDoc, err)
	}

	// OPERATOR-GUIDE: the operator's federated credential, the azurePrivateDNS verification, the
	// TLS roots.
	fed, err := framework.CommandArgs(block(aksGuide+", the workload identity", guide, "federated-credential create"), "az identity federated-credential create")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(fed); i++ {
		switch fed[i] {
		case "--subject":
			j.fedSubject = fed[i+1]
		case "--audiences":
			j.fedAudience = fed[i+1]
		}
	}
	if j.fedSubject == "" || j.fedAudience == "" {
		t.Fatalf("%s: the federated credential's command gives no --subject or --audiences: %q", aksGuide, fed)
	}
	var fragment struct {
		ExternalDNSControllers []clusterv1alpha1.ExternalDNSController `json:"externalDNSControllers"`
	}
	if err := yaml.UnmarshalStrict([]byte(block(aksGuide+", the verification", guide, "azurePrivateDNS:")), &fragment); err != nil {
		t.Fatalf("%s: the azurePrivateDNS example: %v", aksGuide, err)
	}
	j.guideControllers = fragment.ExternalDNSControllers
	j.rootsScript = block(aksGuide+", the TLS roots", guide, "create configmap")

	// The install block takes CLIENT_ID from the shell, where OPERATOR-GUIDE's identity commands
	// left the client ID of the identity az created: here one the Azure stand-in federates.
	if !strings.Contains(j.installScript, `: "${CLIENT_ID:?`) {
		t.Fatalf("%s: the install does not take CLIENT_ID from the identity commands, stopping when it is unset:\n%s", aksDoc, j.installScript)
	}
	j.operatorClientID = operatorIdentityClientID

	// The ExternalDNS values of each zone, and their arguments as the chart renders them.
	j.examples = map[string]*aksExample{}
	for _, r := range j.regions {
		x := &aksExample{region: r, release: "external-dns-" + r, valuesFile: strings.ReplaceAll(j.loopValues, "$zone", r)}
		if x.rendered, err = framework.RenderExternalDNSExample(ctx, filepath.Join(j.root, x.valuesFile), x.release, j.cluster); err != nil {
			t.Fatal(err)
		}
		var v struct {
			ServiceAccount struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"serviceAccount"`
			PodLabels         map[string]string    `json:"podLabels"`
			ExtraVolumes      []corev1.Volume      `json:"extraVolumes"`
			ExtraVolumeMounts []corev1.VolumeMount `json:"extraVolumeMounts"`
		}
		if err := yaml.Unmarshal([]byte(j.read(x.valuesFile)), &v); err != nil {
			t.Fatalf("%s: %v", x.valuesFile, err)
		}
		x.clientID = v.ServiceAccount.Annotations[framework.WorkloadIdentityClientIDAnnotation]
		if len(v.ExtraVolumes) == 1 && v.ExtraVolumes[0].Secret != nil && len(v.ExtraVolumeMounts) == 1 {
			x.secretName, x.mountPath = v.ExtraVolumes[0].Secret.SecretName, v.ExtraVolumeMounts[0].MountPath
		}
		if x.clientID == "" || v.PodLabels[framework.WorkloadIdentityUseLabel] != "true" || x.secretName == "" {
			t.Fatalf("%s: want a workload identity (the service account's client-id, the pods' use label) and one Secret volume with its mount", x.valuesFile)
		}
		if f := x.rendered.Flag("provider"); f != "azure-private-dns" {
			t.Fatalf("%s renders --provider=%s, want azure-private-dns", x.valuesFile, f)
		}
		x.resourceGroup = x.rendered.Flag("azure-resource-group")
		j.subscription, j.domain = x.rendered.Flag("azure-subscription-id"), x.rendered.Flag("domain-filter")
		j.envLetter = strings.TrimSuffix(strings.TrimPrefix(x.rendered.Flag("txt-prefix"), r+"-"), "-")
		if x.resourceGroup == "" || j.subscription == "" || j.domain == "" || len(j.envLetter) != 1 {
			t.Fatalf("%s renders no --azure-resource-group, --azure-subscription-id, --domain-filter or --txt-prefix=%s-<letter>-: %q", x.valuesFile, r, x.rendered.ChartArgs)
		}
		j.examples[r] = x
		t.Logf("%s, rendered by ExternalDNS' chart: %s", x.valuesFile, strings.Join(x.rendered.ChartArgs, " "))
	}
	// What the guide's example and the document's prose say of the zones is what the values do.
	for _, c := range j.guideControllers {
		x := j.examples[c.Region]
		if x == nil || c.Verification == nil || c.Verification.AzurePrivateDNS == nil {
			t.Errorf("%s: the example controller %s (region %q) has no azurePrivateDNS verification or no ExternalDNS values", aksGuide, c.Name, c.Region)
			continue
		}
		v := c.Verification.AzurePrivateDNS
		if c.Name != x.release || v.SubscriptionID != j.subscription || v.ResourceGroup != x.resourceGroup || v.ZoneName != j.domain {
			t.Errorf("%s: controller %s reads %s/%s zone %s; %s writes %s/%s zone %s as %s",
				aksGuide, c.Name, v.SubscriptionID, v.ResourceGroup, v.ZoneName, x.valuesFile, j.subscription, x.resourceGroup, j.domain, x.release)
		}
	}
	// The document names the first zone's subject as the example of ExternalDNS' federated
	// credentials; the test federates each release's service account alike.
	if subject := "system:serviceaccount:external-dns:" + j.examples[j.regions[0]].release; !strings.Contains(doc, subject) {
		t.Errorf("%s: the ExternalDNS workload identity's federated credential does not name %s", aksDoc, subject)
	}
}

// systemPool labels the two nodes as AKS labels a system node pool spread over two availability
// zones, and taints the first as a pool dedicated to system pods is tainted: the operator's pods
// need the AKS values' node selector, toleration and zone spread to land one on each.
func (j *aksJourney) systemPool(ctx context.Context) {
	j.t.Helper()
	var script []string
	for i, n := range j.w.Nodes {
		script = append(script, fmt.Sprintf("kubectl label node %s kubernetes.azure.com/mode=system topology.kubernetes.io/zone=%s%d", n.Name, aksZonePrefix, i+1))
	}
	script = append(script, "kubectl taint node "+j.w.Nodes[0].Name+" CriticalAddonsOnly=true:NoSchedule")
	if out, err := j.cl.RunScript(ctx, strings.Join(script, "\n")); err != nil {
		j.t.Fatalf("labelling the system pool: %v\n%s", err, out)
	}
}

// azure starts the stand-in where pods reach it, with the three zones, the cluster's issuer and
// the federated credentials, and the workload identity webhook configured for it.
func (j *aksJourney) azure(ctx context.Context) {
	t := j.t
	t.Helper()
	var err error
	if j.az, err = azurestandin.StartOn(t.TempDir(), framework.NodeIP(1)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.az.Close() })
	j.ca = j.az.CAFile
	for _, r := range j.regions {
		j.az.CreateZone(j.subscription, j.examples[r].resourceGroup, j.domain)
	}
	issuer, jwks, err := j.w.ServiceAccountIssuer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.az.TrustIssuer(issuer, jwks); err != nil {
		t.Fatal(err)
	}
	// az identity federated-credential create, as the guide runs it for the operator and the
	// document describes it for each ExternalDNS.
	j.az.Federate(azurestandin.FederatedCredential{ClientID: j.operatorClientID, Issuer: issuer, Subject: j.fedSubject, Audience: j.fedAudience})
	for _, r := range j.regions {
		x := j.examples[r]
		j.az.Federate(azurestandin.FederatedCredential{ClientID: x.clientID, Issuer: issuer, Subject: "system:serviceaccount:external-dns:" + x.release, Audience: j.fedAudience})
	}
	if j.wi, err = j.w.StartWorkloadIdentityWebhook(ctx, t, framework.WorkloadIdentityOptions{TenantID: azurestandin.TenantID, AuthorityHost: j.az.URL}); err != nil {
		t.Fatal(err)
	}
	t.Logf("Azure stand-in at %s (issuer %s trusted; federated: operator %s as %s, ExternalDNS as external-dns-<zone>); workload identity webhook at %s",
		j.az.URL, issuer, j.operatorClientID, j.fedSubject, j.wi.URL)
}

func (j *aksJourney) diagnostics(ctx context.Context) string {
	var parts []string
	for _, ns := range []string{operatorNamespace, "external-dns"} {
		parts = append(parts, j.w.Diagnostics(ctx, ns))
	}
	if j.az != nil {
		var counts []string
		for _, k := range []string{"token", "unauthorized", "listZones", "listRecordSets", "putRecordSet", "deleteRecordSet", "token " + j.operatorClientID} {
			counts = append(counts, fmt.Sprintf("%s=%d", k, j.az.Count(k)))
		}
		parts = append(parts, "--- Azure stand-in "+j.az.URL+": "+strings.Join(counts, " "))
	}
	if j.wi != nil {
		parts = append(parts, fmt.Sprintf("--- workload identity webhook mutated: %v", j.wi.Mutated()))
	}
	return strings.Join(parts, "\n")
}

// installOperator pushes the image, gives the stand-in's CA as the guide gives a CA bundle, and
// installs the chart with the document's command.
func (j *aksJourney) installOperator(ctx context.Context) {
	t := j.t
	t.Helper()
	repo, err := j.w.PushOperatorImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The install block as written, its template's image.repository set to the world's registry
	// (as the docs tell users to set theirs); then the guide's TLS roots block as written, the
	// bundle being the stand-in's CA.
	bundle := regexp.MustCompile(`--from-file=[^=\s]+=(\S+)`).FindStringSubmatch(j.rootsScript)
	if bundle == nil {
		t.Fatalf("%s: the TLS roots' command names no file (--from-file=<key>=<file>):\n%s", aksGuide, j.rootsScript)
	}
	template := j.read(aksValues)
	if !strings.Contains(template, "  repository: myregistry.azurecr.io/service-router/service-router-operator\n") {
		t.Fatalf("%s: no image.repository myregistry.azurecr.io/service-router/service-router-operator", aksValues)
	}
	localTemplate := filepath.Join(t.TempDir(), "aks-values.yaml")
	if err := os.WriteFile(localTemplate, []byte(strings.Replace(template,
		"myregistry.azurecr.io/service-router/service-router-operator", repo, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	script := "CLIENT_ID=" + j.operatorClientID + " # as OPERATOR-GUIDE's identity commands leave it\n" +
		strings.Replace(j.installScript, aksValues, localTemplate, 1) + "\n" +
		strings.Replace(j.rootsScript, bundle[1], j.ca, 1)
	started := time.Now()
	out, err := j.cl.RunScript(ctx, script)
	if err != nil {
		t.Fatalf("installing the operator: %v\n%s", err, j.diagnostics(ctx))
	}
	t.Logf("the operator's chart, as %s installs it (the image from the world's registry, the TLS roots as %s gives them):\n%s\n%s", aksDoc, aksGuide, script, lastLines(out, 4))
	pods, err := j.w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout)
	if err != nil {
		t.Fatalf("%v\n%s", err, j.diagnostics(ctx))
	}
	t.Logf("the operator's two replicas Ready %s after the install began", time.Since(started).Round(10*time.Millisecond))
	checkOperatorPods(t, pods, 2, "myregistry.azurecr.io", j.w.Registry)

	// The system pool, one replica per zone.
	zones := map[string]string{}
	for _, p := range pods {
		var node corev1.Node
		if err := j.w.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, &node); err != nil {
			t.Fatal(err)
		}
		zones[p.Name] = node.Labels[corev1.LabelTopologyZone]
		if node.Labels["kubernetes.azure.com/mode"] != "system" {
			t.Errorf("pod %s runs on %s, not a system pool node (labels %v)", p.Name, node.Name, node.Labels)
		}
		j.checkIdentity(t, &p, operatorContainer, j.operatorClientID)
		if env := envOf(&p, operatorContainer); env["SSL_CERT_FILE"] == "" {
			t.Errorf("pod %s: no SSL_CERT_FILE in the operator's environment %v", p.Name, env)
		}
	}
	if distinct := slices.Compact(slices.Sorted(maps.Values(zones))); len(distinct) != 2 || distinct[0] == "" {
		t.Errorf("the operator's replicas run in zones %v, want one in each of the two zones", zones)
	}
	t.Logf("the operator's replicas by zone: %v", zones)
	for _, kind := range []string{"PodDisruptionBudget", "ServiceMonitor", "PrometheusRule"} {
		if out, err := j.cl.RunScript(ctx, "kubectl -n "+operatorNamespace+" get "+strings.ToLower(kind)+" -o name"); err != nil || strings.TrimSpace(out) == "" {
			t.Errorf("the AKS values' %s is missing: %v %s", kind, err, out)
		}
	}
}

// envOf returns a container's environment as name → value.
func envOf(p *corev1.Pod, container string) map[string]string {
	env := map[string]string{}
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
		}
	}
	return env
}

// checkIdentity checks what the webhook gave a pod: the identity's environment, the projected
// service account token (audience, lifetime) mounted read-only where the token file lies.
func (j *aksJourney) checkIdentity(t *testing.T, p *corev1.Pod, container, clientID string) {
	t.Helper()
	want := map[string]string{
		"AZURE_CLIENT_ID": clientID, "AZURE_TENANT_ID": azurestandin.TenantID,
		"AZURE_FEDERATED_TOKEN_FILE": framework.WorkloadIdentityTokenFile, "AZURE_AUTHORITY_HOST": j.az.URL,
	}
	env := envOf(p, container)
	for k, v := range want {
		if env[k] != v {
			t.Errorf("pod %s, container %s: %s=%q, want %q as the workload identity webhook sets it", p.Name, container, k, env[k], v)
		}
	}
	var token *corev1.ServiceAccountTokenProjection
	for _, v := range p.Spec.Volumes {
		if v.Name == framework.WorkloadIdentityTokenVolume && v.Projected != nil && len(v.Projected.Sources) == 1 {
			token = v.Projected.Sources[0].ServiceAccountToken
		}
	}
	if token == nil || token.Audience != framework.WorkloadIdentityAudience || token.ExpirationSeconds == nil || *token.ExpirationSeconds != 3600 {
		t.Errorf("pod %s: the projected token volume %s is %+v, want audience %s for 3600 s", p.Name, framework.WorkloadIdentityTokenVolume, token, framework.WorkloadIdentityAudience)
	}
	mounted := false
	for _, c := range p.Spec.Containers {
		for _, m := range c.VolumeMounts {
			mounted = mounted || c.Name == container && m.Name == framework.WorkloadIdentityTokenVolume && m.MountPath == framework.WorkloadIdentityTokenDir && m.ReadOnly
		}
	}
	if !mounted {
		t.Errorf("pod %s, container %s: the token volume is not mounted read-only at %s", p.Name, container, framework.WorkloadIdentityTokenDir)
	}
}

// installExternalDNS creates each zone's azure.json Secret and installs the three releases as the
// document's loop does.
func (j *aksJourney) installExternalDNS(ctx context.Context) {
	t := j.t
	t.Helper()
	if _, err := j.w.PushExternalDNSImage(ctx); err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, j.w.Client, "external-dns"); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(j.ca)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range j.regions {
		x := j.examples[r]
		// The document's azure.json for this zone, plus the stand-in's cloud.
		cfg := maps.Clone(j.azureJSON)
		cfg["tenantId"], cfg["subscriptionId"], cfg["resourceGroup"] = azurestandin.TenantID, j.subscription, x.resourceGroup
		cfg["cloud"], cfg["resourceManagerEndpoint"], cfg["activeDirectoryAuthorityHost"], cfg["resourceManagerAudience"] = "AzureStackCloud", j.az.URL, j.az.URL, azurestandin.Audience
		azureJSON, _ := json.Marshal(cfg)
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "external-dns", Name: x.secretName},
			Data: map[string][]byte{"azure.json": azureJSON, "roots.pem": ca}}
		if err := j.w.Client.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
		sets := []string{"env[0].name=SSL_CERT_FILE", "env[0].value=" + x.mountPath + "/roots.pem"}
		for _, s := range j.loopSets {
			sets = append(sets, strings.NewReplacer("$zone", r, "$CLUSTER", j.cluster).Replace(s))
		}
		started := time.Now()
		rel, out, err := j.w.InstallExternalDNSChart(ctx, x.release, []string{x.valuesFile}, sets...)
		if err != nil {
			t.Fatalf("installing %s: %v\n%s", x.release, err, j.diagnostics(ctx))
		}
		t.Logf("%s installed with -f %s --set %s, rolled out in %s:\n%s", rel.Release, x.valuesFile, strings.Join(sets, " --set "),
			time.Since(started).Round(10*time.Millisecond), lastLines(out, 3))
		var pods corev1.PodList
		if err := j.w.Client.List(ctx, &pods, client.InNamespace("external-dns"), client.MatchingLabels{"app.kubernetes.io/instance": x.release}); err != nil || len(pods.Items) != 1 {
			t.Fatalf("%s: %d pods (%v)", x.release, len(pods.Items), err)
		}
		j.checkIdentity(t, &pods.Items[0], "external-dns", x.clientID)
	}
}

// platform creates the platform team's objects and waits until the gateway's address is Published
// in every zone.
func (j *aksJourney) platform(ctx context.Context) {
	t := j.t
	t.Helper()
	c := j.w.Client
	samples, err := framework.ReadKustomization(filepath.Join(j.root, aksSamples))
	if err != nil {
		t.Fatal(err)
	}
	identity := &clusterv1alpha1.ClusterIdentity{}
	gateway := &routingv1alpha1.Gateway{}
	for _, s := range samples {
		switch s.GetKind() {
		case "ClusterIdentity":
			aksFromUnstructured(t, s.Object, identity)
		case "Gateway":
			aksFromUnstructured(t, s.Object, gateway)
		}
	}
	// The sample cluster (aks01 in weu), under the domain and environment letter the ExternalDNS
	// values write (their --domain-filter and --txt-prefix).
	if identity.Spec.Cluster != j.cluster {
		t.Errorf("the ClusterIdentity sample's cluster %q is not the ExternalDNS loop's CLUSTER %q", identity.Spec.Cluster, j.cluster)
	}
	identity.Spec.Domain, identity.Spec.EnvironmentLetter = j.domain, j.envLetter
	// The document's DNSConfiguration, each zone verified through Resource Manager as the guide
	// shows it, at the stand-in's endpoints.
	for i, ctl := range j.dnsConfig.Spec.ExternalDNSControllers {
		x := j.examples[ctl.Region]
		if x == nil || ctl.Name != x.release {
			t.Fatalf("%s: the DNSConfiguration's controller %s (region %s) has no ExternalDNS release of that name", aksDoc, ctl.Name, ctl.Region)
		}
		j.dnsConfig.Spec.ExternalDNSControllers[i].Verification = &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &clusterv1alpha1.AzurePrivateDNSVerification{
			SubscriptionID: j.subscription, ResourceGroup: x.resourceGroup, ZoneName: j.domain,
			ResourceManagerEndpoint: j.az.URL, ActiveDirectoryAuthorityHost: j.az.URL,
		}}
	}
	for _, obj := range []client.Object{identity, j.dnsConfig} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := framework.CreateIngressService(ctx, c, framework.IngressService{
		Namespace: aksIngressNamespace, Name: aksIngressService, Controller: gateway.Spec.Controller, IPs: []string{aksIngressIP},
	}); err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, c, gateway.Namespace); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if out, err := j.cl.RunScript(ctx, "kubectl apply -f "+aksSamples+"/routing_v1alpha1_gateway.yaml"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	j.gwT = fmt.Sprintf("%s-%s-%s.%s", j.cluster, identity.Spec.Region, gateway.Spec.TargetPostfix, j.domain)
	gw := &routingv1alpha1.Gateway{}
	err = framework.Poll(ctx, aksPublishTimeout, 250*time.Millisecond, "Gateway "+gateway.Name+" Published in every zone", func(ctx context.Context) (bool, string, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(gateway), gw); err != nil {
			return false, err.Error(), nil
		}
		return meta.IsStatusConditionTrue(gw.Status.Conditions, routingv1alpha1.ConditionPublished), aksZones(gw.Status.Zones), nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, j.diagnostics(ctx))
	}
	t.Logf("Gateway %s/%s (target %s → %s) Published %s after it was applied: %s", gw.Namespace, gw.Name, j.gwT, aksIngressIP,
		time.Since(started).Round(10*time.Millisecond), aksZones(gw.Status.Zones))
}

func aksFromUnstructured(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
		t.Fatal(err)
	}
}

// aksZones summarises zone states for messages.
func aksZones(zones []routingv1alpha1.ZoneStatus) string {
	var parts []string
	for _, z := range zones {
		parts = append(parts, fmt.Sprintf("%s %s (%s, processed %t)", z.Controller, z.State, z.Answer, z.Processed))
	}
	return strings.Join(parts, "; ")
}

// routeTimes is when a route reached each step after its creation.
type routeTimes struct {
	ready, processed, written, published time.Duration
}

// application applies the DNSPolicy and ServiceRoute samples and follows each route from its
// creation to Published: its DNSEndpoint written (Ready), ExternalDNS reading it (the zone's
// processed), the CNAME in the zone (the stand-in's record set), Published.
func (j *aksJourney) application(ctx context.Context) {
	t := j.t
	t.Helper()
	c := j.w.Client
	routes, err := framework.ReadManifests(filepath.Join(j.root, aksSamples, "routing_v1alpha1_serviceroute.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, c, routes[0].GetNamespace()); err != nil {
		t.Fatal(err)
	}
	if out, err := j.cl.RunScript(ctx, "kubectl apply -f "+aksSamples+"/routing_v1alpha1_dnspolicy.yaml"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	weu := j.examples[j.regions[0]]
	created := time.Now()
	if out, err := j.cl.RunScript(ctx, "kubectl apply -f "+aksSamples+"/routing_v1alpha1_serviceroute.yaml"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	times := map[string]*routeTimes{}
	final := map[string]*routingv1alpha1.ServiceRoute{}
	err = framework.Poll(ctx, aksPublishTimeout, 100*time.Millisecond, "the sample routes Published", func(ctx context.Context) (bool, string, error) {
		since := time.Since(created)
		records := j.az.Records(j.subscription, weu.resourceGroup, j.domain)
		var states []string
		done := true
		for _, u := range routes {
			r := &routingv1alpha1.ServiceRoute{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, r); err != nil {
				return false, err.Error(), nil
			}
			tm := times[r.Name]
			if tm == nil {
				tm = &routeTimes{}
				times[r.Name] = tm
			}
			mark := func(d *time.Duration, reached bool) {
				if reached && *d == 0 {
					*d = since
				}
			}
			mark(&tm.ready, meta.IsStatusConditionTrue(r.Status.Conditions, "Ready"))
			mark(&tm.processed, len(r.Status.Zones) > 0 && !slices.ContainsFunc(r.Status.Zones, func(z routingv1alpha1.ZoneStatus) bool { return !z.Processed }))
			_, inZone := records[strings.TrimSuffix(r.Status.Hostname, "."+j.domain)+" CNAME"]
			mark(&tm.written, r.Status.Hostname != "" && inZone)
			published := meta.IsStatusConditionTrue(r.Status.Conditions, routingv1alpha1.ConditionPublished)
			mark(&tm.published, published)
			done = done && published
			final[r.Name] = r
			states = append(states, fmt.Sprintf("%s %s: %s", r.Name, r.Status.Hostname, aksZones(r.Status.Zones)))
		}
		return done, strings.Join(states, "; "), nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, j.diagnostics(ctx))
	}

	// The zones: the gateway's address in each, the routes' CNAMEs in the zone of their Active
	// policy (this cluster's region) only, ExternalDNS' ownership records with this cluster's
	// owner ID.
	for _, r := range j.regions {
		x := j.examples[r]
		recs := j.az.Records(j.subscription, x.resourceGroup, j.domain)
		owner := "external-dns/owner=" + x.rendered.Flag("txt-owner-id")
		if got := recs[strings.TrimSuffix(j.gwT, "."+j.domain)+" A"]; !slices.Equal(got, []string{aksIngressIP}) {
			t.Errorf("zone %s (%s): %s A %v, want %s", r, x.resourceGroup, j.gwT, got, aksIngressIP)
		}
		for _, route := range final {
			name := strings.TrimSuffix(route.Status.Hostname, "."+j.domain)
			got, ok := recs[name+" CNAME"]
			if want := r == j.regions[0]; ok != want || (ok && !slices.Equal(got, []string{j.gwT})) {
				t.Errorf("zone %s: %s CNAME %v (present %t), want present %t pointing at %s", r, name, got, ok, want, j.gwT)
			}
			if txt := recs[x.rendered.Flag("txt-prefix")+"cname-"+name+" TXT"]; r == j.regions[0] && (len(txt) != 1 || !strings.Contains(txt[0], owner)) {
				t.Errorf("zone %s: the ownership record of %s is %v, want %s", r, name, txt, owner)
			}
		}
		var lines []string
		for _, k := range slices.Sorted(maps.Keys(recs)) {
			lines = append(lines, fmt.Sprintf("    %-50s %s", k, strings.Join(recs[k], " ")))
		}
		t.Logf("zone %s of %s/%s, as Resource Manager holds it:\n%s", j.domain, j.subscription, x.resourceGroup, strings.Join(lines, "\n"))
	}
	for _, name := range slices.Sorted(maps.Keys(final)) {
		r, tm := final[name], times[name]
		cond := meta.FindStatusCondition(r.Status.Conditions, routingv1alpha1.ConditionPublished)
		for _, z := range r.Status.Zones {
			if want := "CNAME " + j.gwT + ". → A " + aksIngressIP; z.Answer != want || z.State != routingv1alpha1.ZonePublished {
				t.Errorf("route %s, zone %s: %s %q, want Published %q", name, z.Controller, z.State, z.Answer, want)
			}
		}
		t.Logf("route %s/%s (%s): Published=%s %s %q; zones: %s", r.Namespace, name, r.Status.Hostname, cond.Status, cond.Reason, cond.Message, aksZones(r.Status.Zones))
		// ExternalDNS writes at its next synchronization (the values' interval, a minute): where
		// the route falls in that minute decides the first part; the second is the operator's.
		t.Logf("route %s after its creation: Ready %s, read by ExternalDNS %s, CNAME in the zone %s, Published %s (%s after ExternalDNS wrote it)",
			name, tm.ready.Round(10*time.Millisecond), tm.processed.Round(10*time.Millisecond), tm.written.Round(10*time.Millisecond),
			tm.published.Round(10*time.Millisecond), (tm.published - tm.written).Round(10*time.Millisecond))
	}

	// Who did what in Azure: the operator's identity only read, ExternalDNS' wrote; no token
	// exchange was refused.
	op := j.operatorClientID
	if j.az.Count("token "+op) == 0 || j.az.Count("GET "+op) == 0 {
		t.Errorf("the operator's identity %s got %d tokens and made %d reads: its pods did not verify through the stand-in", op, j.az.Count("token "+op), j.az.Count("GET "+op))
	}
	for _, m := range []string{"PUT", "PATCH", "DELETE"} {
		if n := j.az.Count(m + " " + op); n != 0 {
			t.Errorf("the operator's identity %s made %d %s requests; it only reads", op, n, m)
		}
	}
	if n := j.az.Count("unauthorized"); n != 0 {
		t.Errorf("the stand-in refused %d token or Resource Manager requests", n)
	}
	ed := j.examples[j.regions[0]].clientID
	t.Logf("Azure stand-in: operator identity %s: %d tokens, %d reads; ExternalDNS identity %s: %d tokens, %d reads, %d writes; webhook mutated %d pods",
		op, j.az.Count("token "+op), j.az.Count("GET "+op), ed, j.az.Count("token "+ed), j.az.Count("GET "+ed), j.az.Count("PUT "+ed)+j.az.Count("PATCH "+ed)+j.az.Count("DELETE "+ed), len(j.wi.Mutated()))
}
