//go:build node

package node

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The gateways of the Istio test: the AKS add-on's internal ingress gateway (the samples' shape)
// and a self-installed Istio's ingress gateway in istio-system.
const (
	addonNamespace  = "aks-istio-ingress"
	addonController = "aks-istio-ingressgateway-internal"
	addonSecret     = "cert-aks-ingress"
	addonGwSecret   = "cert-addon-gateway"
	publicNamespace = framework.IstioNamespace
	publicGateway   = "istio-ingressgateway"
	publicControl   = "ingressgateway"
	publicSecret    = "cert-public"
	// httpsTargetPort is where an ingress gateway's Envoy listens for the Service's port 443,
	// httpTargetPort for its port 80.
	httpsTargetPort = 8443
	httpTargetPort  = 8080
)

// TestIstio_IstiodAdmitsAnalysesAndProgramsEveryGateway runs Istio itself beside the operator:
// istiod (built from istio.io/istio, hack/tools/istio) as a pod, installed with Istio's base and
// istiod charts as Istio's Helm guide installs them, and the operator from its chart.
//   - Admitted: every Istio Gateway the operator writes passes istiod's validating webhook (shown
//     serving and failing closed first), in each scenario a user runs into: the samples (the AKS
//     add-on's shape, HTTPS SIMPLE with credentialName), a second Gateway on the same gateway
//     pods, another team's Gateway on another gateway, a route moved from one Gateway to another,
//     3,000 hosts on one Gateway, and the host limit cutting them (the operator restarted with a
//     smaller budget); the operator's pods never logged a refusal.
//   - Analysed: `istioctl analyze` of the same version finds nothing the operator wrote at fault
//     once the users' TLS Secrets exist; before, its finding about a missing Secret is on our
//     Gateway too (IstioAnalysis, from istiod's analysis on the Istio Gateway's status).
//   - Programmed: connected to istiod's xDS port as each gateway's proxy, the HTTPS listener
//     serves exactly the routes' hostnames of the Gateways selecting it, each with its Secret;
//     a deleted route's host leaves it; the 3,000 hosts and the cut arrive there.
//   - The Gateway API backend on istiod's GatewayClass istio: accepted, its listeners' Secret
//     resolved, and until the Secret exists istiod's ResolvedRefs=False is on our Gateway
//     (ListenerProblems).
func TestIstio_IstiodAdmitsAnalysesAndProgramsEveryGateway(t *testing.T) {
	ctx := t.Context()
	w := startWorld(t, 2)
	cl := w.Cluster()
	installCRDs(ctx, t, w, externalDNSCRDs, gatewayAPICRDs)
	istio, err := w.InstallIstio(ctx)
	if err != nil {
		t.Fatalf("installing Istio: %v", err)
	}
	t.Logf("istiod %s (istio.io/istio %s) Ready as %s; its webhook (%s) validates every Istio Gateway without a revision label, fails closed, and refuses an invalid one",
		istio.Version, istio.ModuleVersion, istio.Image, istio.Webhook.Name)

	var gatewayPods []*corev1.Pod
	for _, g := range []framework.IngressGatewayWorkload{
		{Namespace: addonNamespace, Name: addonController, Labels: map[string]string{"istio": addonController}, IPs: []string{"10.123.45.67"}},
		{Namespace: publicNamespace, Name: publicGateway, Labels: map[string]string{"istio": publicControl}, IPs: []string{"10.123.45.68"}},
	} {
		pod, err := w.StartIngressGatewayWorkload(ctx, g)
		if err != nil {
			t.Fatalf("gateway %s/%s: %v\n%s", g.Namespace, g.Name, err, w.Diagnostics(ctx, g.Namespace))
		}
		gatewayPods = append(gatewayPods, pod)
	}
	diagnose := installOperatorChart(ctx, t, w)

	// The samples as they ship, and what a platform adds beside them: a second Gateway on the
	// add-on's pods (in the add-on's namespace, redirecting plain HTTP) and a Gateway serving HTTPS
	// and plain HTTP on the self-installed gateway, which another team's route uses.
	if out, err := cl.RunScript(ctx, "kubectl create namespace myapp\nkubectl apply -k config/samples\nkubectl apply -f - <<'EOF'\n"+istioTestPlatform+"EOF"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	gateways := []client.ObjectKey{
		{Namespace: "istio-system", Name: "default-gateway"},
		{Namespace: addonNamespace, Name: "addon-gateway"},
		{Namespace: publicNamespace, Name: "public-gateway"},
	}
	api := waitRouteHost(ctx, t, w, "myapp", "api-route")
	web := waitRouteHost(ctx, t, w, "myapp", "web-route")
	shop := waitRouteHost(ctx, t, w, "teamb", "shop-route")
	waitIstioHosts(ctx, t, w, gateways[0], diagnose, "myapp/"+api, "myapp/"+web)
	waitIstioHosts(ctx, t, w, gateways[2], diagnose, "teamb/"+shop)

	// A route moved from one Gateway to another.
	patchRoute(ctx, t, w, "myapp", "web-route", `{"spec":{"gatewayName":"addon-gateway","gatewayNamespace":"`+addonNamespace+`"}}`)
	waitIstioHosts(ctx, t, w, gateways[1], diagnose, "myapp/"+web)
	waitIstioHosts(ctx, t, w, gateways[0], diagnose, "myapp/"+api)

	// What istioctl analyze says before the user created the TLS Secrets, and after; our Gateway
	// says the same as long as the Secret is missing (istiod's analysis, on its status).
	before := analyze(ctx, t, istio, w.Kubeconfig)
	logFindings(t, "before the TLS Secrets exist", before)
	for _, s := range []string{addonSecret, addonGwSecret} {
		if !slices.ContainsFunc(before, func(f finding) bool {
			return f.Code == "IST0101" && strings.Contains(f.Message, `credentialName not found: "`+s+`"`)
		}) {
			t.Errorf("istioctl analyze did not report the missing TLS Secret %s (IST0101 Referenced credentialName not found); it reported %v", s, before)
		}
	}
	missing := waitIstioAnalysis(ctx, t, w, gateways[0], diagnose, `Referenced credentialName not found: "`+addonSecret+`"`)
	t.Logf("our Gateway %s says so too: %s %s: %s", gateways[0], missing.Type, missing.Reason, missing.Message)
	createTLSSecret(ctx, t, w, addonNamespace, addonSecret)
	createTLSSecret(ctx, t, w, addonNamespace, addonGwSecret)
	createTLSSecret(ctx, t, w, publicNamespace, publicSecret)
	for _, k := range gateways {
		waitIstioAnalysis(ctx, t, w, k, diagnose, "")
	}
	after := analyze(ctx, t, istio, w.Kubeconfig)
	logFindings(t, "with the TLS Secrets", after)
	for _, f := range after {
		if f.operatorWrote(gateways) && f.Level != "Info" {
			t.Errorf("istioctl analyze: %s %s on %s, an object the operator wrote: %s", f.Level, f.Code, f.Origin, f.Message)
		}
	}

	// What istiod programs: connected as each gateway's proxy would be (its pod's labels, namespace
	// and address), the HTTPS listener has a filter chain per Gateway whose server names are
	// exactly its routes' hostnames, with its TLS Secret; the other team's host is only on its own
	// gateway's; a deleted route's host leaves.
	addonXDS, publicXDS := dialGatewayXDS(ctx, t, istio, gatewayPods[0]), dialGatewayXDS(ctx, t, istio, gatewayPods[1])
	waitServerNames(ctx, t, addonXDS, map[string]string{api: "kubernetes://" + addonSecret, web: "kubernetes://" + addonGwSecret})
	waitServerNames(ctx, t, publicXDS, map[string]string{shop: "kubernetes://" + publicSecret})
	// The plain-HTTP listeners (the Service's port 80, Envoy's 8080): on the add-on's pods only
	// addon-gateway has an HTTP server, and it redirects web's host to HTTPS; on the self-installed
	// gateway, public-gateway serves shop's host. Each team routes its host with a VirtualService
	// of its own (the operator generates none), so both route configurations of a Gateway name
	// the host itself, not only istiod's catch-all "*". (Without a VirtualService, istiod 1.31
	// gives a redirecting server's host a virtual host for "namespace/host", which no request's
	// Host header matches: PlainHTTPHosts lists it apart, and the test logs it.)
	for _, vs := range []string{
		virtualService("shop", "teamb", shop, publicNamespace+"/public-gateway"),
		virtualService("web", "myapp", web, addonNamespace+"/addon-gateway"),
	} {
		if out, err := cl.RunScript(ctx, "kubectl apply -f - <<'EOF'\n"+vs+"EOF"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	waitPlainHTTPHosts(ctx, t, addonXDS, map[string]bool{web: true})
	waitPlainHTTPHosts(ctx, t, publicXDS, map[string]bool{shop: false})
	if _, err := publicXDS.Wait(ctx, 90*time.Second, func(s framework.XDSSnapshot) bool {
		return slices.Equal(s.HostsWithOwnVirtualHost(httpsTargetPort), []string{shop})
	}); err != nil {
		s, _ := publicXDS.Latest()
		t.Fatalf("the public gateway's HTTPS route configuration has no virtual host of its own for %s: %v; routes %v", shop, err, s.Routes)
	}
	if err := w.Client.Delete(ctx, &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "myapp", Name: "api-route"}}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	waitServerNames(ctx, t, addonXDS, map[string]string{web: "kubernetes://" + addonGwSecret})
	t.Logf("the deleted route's host left the gateway's listener %s after the delete", time.Since(deleted).Round(10*time.Millisecond))

	// The Gateway API backend with Istio's implementation (GatewayClass istio, which istiod
	// creates): istiod accepts the generated Gateway and ListenerSets and resolves their
	// listeners' TLS Secret. (It also deploys an Envoy for the Gateway, which cannot run here.)
	if out, err := cl.RunScript(ctx, "kubectl create namespace mesh\nkubectl apply -f - <<'EOF'\n"+meshGatewayYAML+"EOF"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	waitRouteHost(ctx, t, w, "myapp", "mesh-route")
	mesh := client.ObjectKey{Namespace: "mesh", Name: "mesh-gateway"}
	problem := waitGatewayCondition(ctx, t, w, mesh, diagnose, routingv1alpha1.ConditionListenerProblems, "ResolvedRefs=False")
	t.Logf("before its TLS Secret exists, our Gateway %s says what istiod says: %s %s: %s", mesh, problem.Type, problem.Reason, problem.Message)
	createTLSSecret(ctx, t, w, "mesh", "cert-mesh")
	waitGatewayCondition(ctx, t, w, mesh, diagnose, routingv1alpha1.ConditionListenerProblems, "")
	checkGatewayAPIAccepted(ctx, t, w, "mesh", "mesh-gateway", diagnose)

	// 3,000 hosts on one Gateway, then the host limit cutting them.
	const load = 3000
	created := time.Now()
	createLoadRoutes(ctx, t, w, "load", load)
	waitIstioHostCount(ctx, t, w, gateways[0], load, diagnose)
	snap := waitServerNameCount(ctx, t, addonXDS, load+1)
	t.Logf("3,000 routes: every host on the gateway's HTTPS listener %s after the first was created", snap.At.Sub(created).Round(10*time.Millisecond))
	hostsBytes := istioGatewayBytes(ctx, t, w, gateways[0])
	budget := hostsBytes / 2
	if out, err := cl.RunScript(ctx, fmt.Sprintf("helm upgrade service-router-operator charts/service-router-operator --namespace %s --reuse-values --set 'extraArgs={--istio-gateway-max-bytes=%d}'", operatorNamespace, budget)); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	limit := waitHostLimit(ctx, t, w, gateways[0], diagnose)
	n := waitIstioHostCount(ctx, t, w, gateways[0], int(limit.Admitted), diagnose)
	waitServerNameCount(ctx, t, addonXDS, n+1)
	t.Logf("the host limit at %d bytes (the 3,000-host Gateway was %d): %d hosts admitted, %d left off from %s; istiod admitted the cut Gateway (%d hosts)",
		budget, hostsBytes, limit.Admitted, limit.LeftOff, limit.FirstLeftOff, n)

	checkNoWriteRefused(ctx, t, w, istio)
}

// istioTestPlatform is what the test adds to the samples: a second Gateway on the add-on's pods
// with its own TLS Secret, a Gateway on the self-installed ingress gateway (HTTPS and plain HTTP),
// and another team's route on it.
const istioTestPlatform = `apiVersion: routing.router.io/v1alpha1
kind: Gateway
metadata:
  name: addon-gateway
  namespace: ` + addonNamespace + `
spec:
  controller: ` + addonController + `
  credentialName: ` + addonGwSecret + `
  plainHTTP: RedirectToHTTPS
  targetPostfix: addon
---
apiVersion: routing.router.io/v1alpha1
kind: Gateway
metadata:
  name: public-gateway
  namespace: ` + publicNamespace + `
spec:
  controller: ` + publicControl + `
  credentialName: ` + publicSecret + `
  plainHTTP: Serve
  targetPostfix: public
---
apiVersion: v1
kind: Namespace
metadata:
  name: teamb
---
apiVersion: routing.router.io/v1alpha1
kind: DNSPolicy
metadata:
  name: teamb-dns
  namespace: teamb
spec:
  mode: Active
---
apiVersion: routing.router.io/v1alpha1
kind: ServiceRoute
metadata:
  name: shop-route
  namespace: teamb
spec:
  serviceName: shop
  gatewayName: public-gateway
  environment: dev
  application: teamb
`

// virtualService is a team's own routing of host, on gateway's servers, to its Service name.
func virtualService(name, namespace, host, gateway string) string {
	return `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: ` + name + `
  namespace: ` + namespace + `
spec:
  hosts:
  - ` + host + `
  gateways:
  - ` + gateway + `
  http:
  - route:
    - destination:
        host: ` + name + `.` + namespace + `.svc.cluster.local
        port:
          number: 80
`
}

// dialGatewayXDS connects to istiod's xDS port as the gateway pod's proxy would.
func dialGatewayXDS(ctx context.Context, t *testing.T, istio *framework.Istio, pod *corev1.Pod) *framework.XDSClient {
	t.Helper()
	c, err := framework.DialXDS(ctx, framework.XDSOptions{Address: istio.XDS, Namespace: pod.Namespace, Pod: pod.Name, IP: pod.Status.PodIP, Labels: pod.Labels})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitServerNames waits until the gateway's HTTPS listener (httpsTargetPort) serves exactly want:
// each server name with the SDS secret of its filter chain, on one chain only, no chain without
// server names (a catch-all), and each chain's route configuration listing its names
// (XDSSnapshot.ChainProblems).
func waitServerNames(ctx context.Context, t *testing.T, c *framework.XDSClient, want map[string]string) {
	t.Helper()
	var got map[string]string
	var problems []string
	if _, err := c.Wait(ctx, 90*time.Second, func(s framework.XDSSnapshot) bool {
		got, problems = s.ServerNames(httpsTargetPort), s.ChainProblems(httpsTargetPort)
		return maps.Equal(got, want) && len(problems) == 0
	}); err != nil {
		s, _ := c.Latest()
		t.Fatalf("the gateway's listener on %d: server names %v, want %v; %q (%v); listeners %+v, routes %v", httpsTargetPort, got, want, problems, err, s.Listeners, s.Routes)
	}
}

// waitPlainHTTPHosts waits until the gateway's plain-HTTP listener (httpTargetPort) is one chain
// without server names or TLS whose route configuration has virtual hosts for exactly want's
// hosts, each redirecting to HTTPS or not as want says (XDSSnapshot.PlainHTTPHosts).
func waitPlainHTTPHosts(ctx context.Context, t *testing.T, c *framework.XDSClient, want map[string]bool) {
	t.Helper()
	var got map[string]bool
	var unmatchable, problems []string
	if _, err := c.Wait(ctx, 90*time.Second, func(s framework.XDSSnapshot) bool {
		got, unmatchable, problems = s.PlainHTTPHosts(httpTargetPort)
		return maps.Equal(got, want) && len(problems) == 0
	}); err != nil {
		s, _ := c.Latest()
		t.Fatalf("the gateway's plain-HTTP listener on %d: hosts (redirecting?) %v, want %v; %q (%v); listeners %+v, virtual hosts %+v", httpTargetPort, got, want, problems, err, s.Listeners, s.VirtualHosts)
	}
	if len(unmatchable) > 0 {
		t.Logf("the plain-HTTP listener on %d also has virtual hosts for %q, which no Host header matches", httpTargetPort, unmatchable)
	}
}

// waitServerNameCount waits until the gateway's HTTPS listener serves n server names.
func waitServerNameCount(ctx context.Context, t *testing.T, c *framework.XDSClient, n int) framework.XDSSnapshot {
	t.Helper()
	got := 0
	s, err := c.Wait(ctx, 5*time.Minute, func(s framework.XDSSnapshot) bool {
		got = len(s.ServerNames(httpsTargetPort))
		return got == n
	})
	if err != nil {
		t.Fatalf("the gateway's listener on %d: %d server names, want %d: %v", httpsTargetPort, got, n, err)
	}
	return s
}

// meshGatewayYAML is a Gateway with the Gateway API backend on Istio's GatewayClass, and a route.
const meshGatewayYAML = `apiVersion: routing.router.io/v1alpha1
kind: Gateway
metadata:
  name: mesh-gateway
  namespace: mesh
spec:
  backend: GatewayAPI
  gatewayClassName: istio
  controller: mesh
  credentialName: cert-mesh
  targetPostfix: mesh
---
apiVersion: routing.router.io/v1alpha1
kind: ServiceRoute
metadata:
  name: mesh-route
  namespace: myapp
spec:
  serviceName: mesh
  gatewayName: mesh-gateway
  gatewayNamespace: mesh
  environment: dev
  application: myapp
`

// checkGatewayAPIAccepted waits until istiod (GatewayClass istio) has accepted the Gateway API
// Gateway generated for our Gateway namespace/name and every ListenerSet attached to it, each
// listener Accepted with its references resolved, and logs what istiod says about programming it.
func checkGatewayAPIAccepted(ctx context.Context, t *testing.T, w *framework.NodeWorld, namespace, name string, diagnose func() string) {
	t.Helper()
	condition := func(cs []metav1.Condition, typ string) string {
		if c := meta.FindStatusCondition(cs, typ); c != nil {
			return fmt.Sprintf("%s=%s (%s: %s)", typ, c.Status, c.Reason, c.Message)
		}
		return typ + " unset"
	}
	accepted := func(cs []metav1.Condition, types ...string) bool {
		for _, typ := range types {
			if !meta.IsStatusConditionTrue(cs, typ) {
				return false
			}
		}
		return true
	}
	var programmed string
	err := framework.Poll(ctx, 2*time.Minute, time.Second, "istiod accepting the generated Gateway API Gateway and ListenerSets", func(ctx context.Context) (bool, string, error) {
		var gw gwv1.Gateway
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &gw); err != nil {
			return false, err.Error(), nil
		}
		state := "Gateway " + condition(gw.Status.Conditions, "Accepted")
		if !accepted(gw.Status.Conditions, "Accepted") {
			return false, state, nil
		}
		var sets gwv1.ListenerSetList
		if err := w.Client.List(ctx, &sets, client.InNamespace(namespace)); err != nil {
			return false, err.Error(), nil
		}
		if len(sets.Items) == 0 {
			return false, state + "; no ListenerSet yet", nil
		}
		for _, s := range sets.Items {
			state += fmt.Sprintf("; ListenerSet %s %s", s.Name, condition(s.Status.Conditions, "Accepted"))
			if !accepted(s.Status.Conditions, "Accepted") || len(s.Status.Listeners) != len(s.Spec.Listeners) {
				return false, state, nil
			}
			for _, l := range s.Status.Listeners {
				if !accepted(l.Conditions, "Accepted", "ResolvedRefs") || meta.IsStatusConditionTrue(l.Conditions, "Conflicted") {
					return false, state + fmt.Sprintf(" listener %s %s %s %s", l.Name, condition(l.Conditions, "Accepted"), condition(l.Conditions, "ResolvedRefs"), condition(l.Conditions, "Conflicted")), nil
				}
			}
		}
		programmed = condition(gw.Status.Conditions, "Programmed")
		return true, state, nil
	})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, gatewayState(ctx, w, client.ObjectKey{Namespace: namespace, Name: name}), lastLines(diagnose(), 40))
	}
	t.Logf("istiod accepted the Gateway API Gateway %s/%s and its ListenerSets, every listener's references resolved; %s (its Envoy Deployment cannot run here)", namespace, name, programmed)
}

// installOperatorChart installs the operator's chart as the homelab guide does (its image pushed
// to the world's registry) and returns the operator's diagnostics for failure messages.
func installOperatorChart(ctx context.Context, t *testing.T, w *framework.NodeWorld) func() string {
	t.Helper()
	repo, err := w.PushOperatorImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	diagnose := operatorDiagnostics(ctx, w)
	if out, err := w.Cluster().RunScript(ctx, strings.Join([]string{
		"kubectl create namespace " + operatorNamespace,
		"kubectl label namespace " + operatorNamespace + " pod-security.kubernetes.io/enforce=restricted",
		"helm install service-router-operator charts/service-router-operator --namespace " + operatorNamespace + " --set image.repository=" + repo,
	}, "\n")); err != nil {
		t.Fatalf("installing the chart: %v\n%s\n%s", err, out, diagnose())
	}
	if _, err := w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout); err != nil {
		t.Fatalf("%v\n%s", err, diagnose())
	}
	return diagnose
}

// waitRouteHost waits until the route has its hostname and returns it.
func waitRouteHost(ctx context.Context, t *testing.T, w *framework.NodeWorld, namespace, name string) string {
	t.Helper()
	var host string
	if err := framework.Poll(ctx, 90*time.Second, 200*time.Millisecond, "route "+namespace+"/"+name+"'s hostname", func(ctx context.Context) (bool, string, error) {
		var r routingv1alpha1.ServiceRoute
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &r); err != nil {
			return false, err.Error(), nil
		}
		host = r.Status.Hostname
		return host != "", fmt.Sprintf("status %+v", r.Status.Conditions), nil
	}); err != nil {
		t.Fatal(err)
	}
	return host
}

// istioHosts are the hosts of every server of the Istio Gateway at key (nil when there is none).
func istioHosts(ctx context.Context, w *framework.NodeWorld, key client.ObjectKey) (map[string]bool, *istionetworkingv1.Gateway, error) {
	var gw istionetworkingv1.Gateway
	if err := w.Client.Get(ctx, key, &gw); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	hosts := map[string]bool{}
	for _, s := range gw.Spec.Servers {
		for _, h := range s.Hosts {
			hosts[h] = true
		}
	}
	return hosts, &gw, nil
}

// gatewayState describes our Gateway at key (its Ready condition), for failure messages: where the
// operator reports a write istiod refused.
func gatewayState(ctx context.Context, w *framework.NodeWorld, key client.ObjectKey) string {
	var gw routingv1alpha1.Gateway
	if err := w.Client.Get(ctx, key, &gw); err != nil {
		return err.Error()
	}
	var parts []string
	for _, c := range gw.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return "Gateway " + key.String() + ": " + strings.Join(parts, "; ")
}

// waitIstioHosts waits until the Istio Gateway at key lists exactly want (in every server).
func waitIstioHosts(ctx context.Context, t *testing.T, w *framework.NodeWorld, key client.ObjectKey, diagnose func() string, want ...string) {
	t.Helper()
	if err := framework.Poll(ctx, 90*time.Second, 200*time.Millisecond, fmt.Sprintf("Istio Gateway %s listing %v", key, want), func(ctx context.Context) (bool, string, error) {
		hosts, _, err := istioHosts(ctx, w, key)
		if err != nil {
			return false, "", err
		}
		got := make([]string, 0, len(hosts))
		for h := range hosts {
			got = append(got, h)
		}
		slices.Sort(got)
		wanted := slices.Sorted(slices.Values(want))
		return slices.Equal(got, wanted), fmt.Sprintf("hosts %v; %s", got, gatewayState(ctx, w, key)), nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, lastLines(diagnose(), 60))
	}
}

// waitIstioHostCount waits until the Istio Gateway at key lists n hosts and returns n.
func waitIstioHostCount(ctx context.Context, t *testing.T, w *framework.NodeWorld, key client.ObjectKey, n int, diagnose func() string) int {
	t.Helper()
	if err := framework.Poll(ctx, 5*time.Minute, time.Second, fmt.Sprintf("Istio Gateway %s listing %d hosts", key, n), func(ctx context.Context) (bool, string, error) {
		hosts, _, err := istioHosts(ctx, w, key)
		if err != nil {
			return false, "", err
		}
		return len(hosts) == n, fmt.Sprintf("%d hosts; %s", len(hosts), gatewayState(ctx, w, key)), nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, lastLines(diagnose(), 60))
	}
	return n
}

// istioGatewayBytes is the size of the Istio Gateway at key as JSON (what the host limit budgets).
func istioGatewayBytes(ctx context.Context, t *testing.T, w *framework.NodeWorld, key client.ObjectKey) int {
	t.Helper()
	_, gw, err := istioHosts(ctx, w, key)
	if err != nil || gw == nil {
		t.Fatalf("Istio Gateway %s: %v", key, err)
	}
	data, err := json.Marshal(gw)
	if err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// waitIstioAnalysis waits until our Gateway at key has an IstioAnalysis condition whose message
// contains words (words "": until it has none) and returns it.
func waitIstioAnalysis(ctx context.Context, t *testing.T, w *framework.NodeWorld, key client.ObjectKey, diagnose func() string, words string) metav1.Condition {
	t.Helper()
	return waitGatewayCondition(ctx, t, w, key, diagnose, routingv1alpha1.ConditionIstioAnalysis, words)
}

// waitGatewayCondition waits until our Gateway at key has the condition whose message contains
// words (words "": until it has none) and returns it.
func waitGatewayCondition(ctx context.Context, t *testing.T, w *framework.NodeWorld, key client.ObjectKey, diagnose func() string, conditionType, words string) metav1.Condition {
	t.Helper()
	what := fmt.Sprintf("Gateway %s's %s condition saying %q", key, conditionType, words)
	if words == "" {
		what = fmt.Sprintf("Gateway %s without a %s condition", key, conditionType)
	}
	var found metav1.Condition
	var state string
	if err := framework.Poll(ctx, 2*time.Minute, time.Second, what, func(ctx context.Context) (bool, string, error) {
		var gw routingv1alpha1.Gateway
		if err := w.Client.Get(ctx, key, &gw); err != nil {
			return false, state, nil
		}
		state = gatewayState(ctx, w, key)
		if _, generated, err := istioHosts(ctx, w, key); err == nil && generated != nil {
			state += fmt.Sprintf("; istiod's findings on the Istio Gateway (generation %d, observed %d): %v",
				generated.Generation, generated.Status.ObservedGeneration, generated.Status.ValidationMessages)
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, conditionType)
		if c == nil {
			return words == "", state, nil
		}
		found = *c
		return words != "" && strings.Contains(c.Message, words), state, nil
	}); err != nil {
		t.Fatalf("%v\n%s\n%s", err, lastLines(diagnose(), 40), w.Diagnostics(context.Background(), framework.IstioNamespace))
	}
	return found
}

// waitHostLimit waits until our Gateway at key reports its host limit and returns it.
func waitHostLimit(ctx context.Context, t *testing.T, w *framework.NodeWorld, key client.ObjectKey, diagnose func() string) routingv1alpha1.GatewayHostLimit {
	t.Helper()
	var limit routingv1alpha1.GatewayHostLimit
	if err := framework.Poll(ctx, 3*time.Minute, time.Second, "Gateway "+key.String()+" reporting its host limit", func(ctx context.Context) (bool, string, error) {
		var gw routingv1alpha1.Gateway
		if err := w.Client.Get(ctx, key, &gw); err != nil {
			return false, err.Error(), nil
		}
		if gw.Status.HostLimit == nil {
			return false, gatewayState(ctx, w, key), nil
		}
		limit = *gw.Status.HostLimit
		return true, "", nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, lastLines(diagnose(), 60))
	}
	return limit
}

// patchRoute merge-patches the route.
func patchRoute(ctx context.Context, t *testing.T, w *framework.NodeWorld, namespace, name, patch string) {
	t.Helper()
	r := &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := w.Client.Patch(ctx, r, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// createLoadRoutes creates n routes in namespace (with its DNSPolicy) on the samples' Gateway.
func createLoadRoutes(ctx context.Context, t *testing.T, w *framework.NodeWorld, namespace string, n int) {
	t.Helper()
	if err := framework.EnsureNamespace(ctx, w.Client, namespace); err != nil {
		t.Fatal(err)
	}
	policy := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: namespace + "-dns"},
		Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}}
	if err := w.Client.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := &routingv1alpha1.ServiceRoute{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("r%04d", i)},
				Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: fmt.Sprintf("s%04d", i), GatewayName: "default-gateway",
					GatewayNamespace: "istio-system", Environment: "dev", Application: namespace},
			}
			if err := w.Client.Create(ctx, r); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// createTLSSecret creates a kubernetes.io/tls Secret with a self-signed certificate, as a user
// would with `kubectl create secret tls`.
func createTLSSecret(ctx context.Context, t *testing.T, w *framework.NodeWorld, namespace, name string) {
	t.Helper()
	certPEM, keyPEM, err := selfSignedCertificate("*.example.com")
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}}
	if err := w.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// finding is one message of `istioctl analyze -o json`.
type finding struct {
	Code    string `json:"code"`
	Level   string `json:"level"`
	Origin  string `json:"origin"`
	Message string `json:"message"`
}

// operatorWrote says whether the finding is about one of the Istio Gateways the operator wrote
// (origin "Gateway <namespace>/<name>" in istioctl's form).
func (f finding) operatorWrote(gateways []client.ObjectKey) bool {
	for _, k := range gateways {
		if strings.HasPrefix(f.Origin, "Gateway "+k.Namespace+"/"+k.Name) {
			return true
		}
	}
	return false
}

// analyze runs `istioctl analyze --all-namespaces` as a user would against the world and returns
// what it reported at Info level and above.
func analyze(ctx context.Context, t *testing.T, istio *framework.Istio, kubeconfig string) []finding {
	t.Helper()
	cmd := exec.CommandContext(ctx, istio.Istioctl, "analyze", "--all-namespaces", "--output", "json", "--kubeconfig", kubeconfig)
	out, err := cmd.Output()
	// analyze exits 79 when it found warnings and 2 for errors: the findings are the answer.
	if err != nil && len(out) == 0 {
		t.Fatalf("istioctl analyze: %v", err)
	}
	var findings []finding
	if err := json.Unmarshal(out, &findings); err != nil {
		t.Fatalf("istioctl analyze's output: %v\n%s", err, out)
	}
	return findings
}

// logFindings logs what istioctl analyze reported.
func logFindings(t *testing.T, when string, findings []finding) {
	t.Helper()
	if len(findings) == 0 {
		t.Logf("istioctl analyze %s: no findings", when)
		return
	}
	var b strings.Builder
	for _, f := range findings {
		fmt.Fprintf(&b, "\n  %s [%s] (%s) %s", f.Level, f.Code, f.Origin, f.Message)
	}
	t.Logf("istioctl analyze %s:%s", when, b.String())
}

// checkNoWriteRefused reads the whole log of every operator pod (what `kubectl logs` shows) and
// fails the test when it quotes a refusal of istiod's webhook: no write of the operator was
// refused while the test ran, including those a later write made good. Its control: the refusal
// istiod gave at install (istio.Refusal), logged as the operator logs a reconcile's error (main.go's
// logger, its default options), is found by the same scan, so a refusal worded otherwise, or
// logged otherwise, fails here rather than passing unseen.
func checkNoWriteRefused(ctx context.Context, t *testing.T, w *framework.NodeWorld, istio *framework.Istio) {
	t.Helper()
	var control bytes.Buffer
	zap.New(zap.UseFlagOptions(&zap.Options{}), zap.WriteTo(&control)).Error(errors.New(istio.Refusal), "Reconciler error",
		"controller", "gateway", "Gateway", map[string]string{"name": "default-gateway", "namespace": "myapp"})
	if len(refusedWrites(control.String())) != 1 {
		t.Errorf("the scan for refused writes does not find istiod's refusal as the operator would log it:\n%s", control.String())
	}
	var pods corev1.PodList
	if err := w.Client.List(ctx, &pods, client.InNamespace(operatorNamespace)); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		for _, line := range refusedWrites(w.ContainerLog(&pods.Items[i], operatorContainer)) {
			t.Errorf("pod %s: istiod's webhook refused a write of the operator: %s", pods.Items[i].Name, line)
		}
	}
}

// refusedWrites returns the lines of an operator's log that quote a refusal of istiod's webhook
// (its name, as the JSON log escapes the quotes around it or not).
func refusedWrites(log string) []string {
	var lines []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "validation.istio.io") && strings.Contains(line, "denied the request") {
			lines = append(lines, line)
		}
	}
	return lines
}

// selfSignedCertificate is a self-signed certificate for host and its key, PEM-encoded.
func selfSignedCertificate(host string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
