//go:build node

package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// The regional failover section of docs/OPERATOR-GUIDE.md.
const (
	failoverDoc     = "docs/OPERATOR-GUIDE.md"
	failoverHeading = "## Regional failover"
)

// TestFailover_InPodsTakesOverALostRegion runs regional failover with the operator as the chart
// runs it: a pod under a kubelet, in a namespace enforcing the restricted Pod Security Standard,
// its TSIG key mounted from a Secret exactly as docs/OPERATOR-GUIDE.md#regional-failover gives the
// commands and values, and the guide's DNSConfiguration (only the name server's address, this
// cluster's owner ID and faster probe settings replaced). The cluster is aks02 (region neu,
// adopting weu), beside a weu zone on a BIND server outside the cluster that takes only signed
// updates. What is left of aks01, the lost cluster of region weu, is what a lost cluster leaves
// in a zone: its heartbeat, its gateway's address (where nothing answers any more) and the name
// it owns. A goroutine refreshes aks01's heartbeat, as its operator would, until the loss.
//
//  1. Before the loss: aks01's heartbeat is fresh while its gateway does not answer: aks02's pod
//     reports weu Unreachable (WitnessSaysAlive), its own heartbeat is in the zone (signed with
//     the mounted key: the zone takes nothing else), and the name still answers aks01's gateway.
//  2. The loss: the heartbeat stops. The pod judges weu Lost, passes the name's ownership with one
//     signed update, marks its DNSEndpoint (its service account's RBAC), and aks02's ExternalDNS,
//     run only on events, points the name at aks02's gateway: a direct switch, watched with dig
//     every 50 ms.
//  3. The guide's "Draining a region for maintenance" commands, as written, on aks02: the drain
//     (kubectl patch, kubectl wait for DrainComplete) and its end (the loop until the condition is
//     gone); its heartbeat says drain=true and then not, and the name it holds stays.
//  4. Back: aks01 returns (its control plane, operator and ExternalDNS as processes beside the
//     node world, the guide's DNSConfiguration with its own owner ID, its gateway answering again
//     at the address the zone publishes, its team's policy with failback Automatic). Once its
//     gateway has answered for failbackAfter, aks01's operator passes the name back and its
//     ExternalDNS points it home: a direct switch back; the pod judges weu Serving, holds nothing
//     and clears its DNSEndpoint's mark.
func TestFailover_InPodsTakesOverALostRegion(t *testing.T) {
	ctx := t.Context()
	block := readDocSection(t, failoverDoc, failoverHeading).block
	guideConfig := &clusterv1alpha1.DNSConfiguration{}
	if err := yaml.UnmarshalStrict([]byte(block("secretFile:")), guideConfig); err != nil {
		t.Fatalf("%s: the failover DNSConfiguration: %v", failoverDoc, err)
	}
	if len(guideConfig.Spec.ExternalDNSControllers) != 1 || guideConfig.Spec.ExternalDNSControllers[0].Failover == nil ||
		guideConfig.Spec.ExternalDNSControllers[0].Failover.TSIG == nil {
		t.Fatalf("%s: the failover DNSConfiguration has no controller with a TSIG key: %+v", failoverDoc, guideConfig.Spec)
	}
	zoneController := guideConfig.Spec.ExternalDNSControllers[0]
	const (
		domain, envLetter, namespace = "example.com", "d", "myapp"
		ownerLost, ownerHere         = "external-dns-weu-aks01", "external-dns-weu-aks02"
		lbIP                         = "192.168.1.240"
	)
	targetLost, targetHere := "aks01-weu-internal."+domain, "aks02-neu-internal."+domain
	name := "api-ns-" + envLetter + "-dev-" + namespace + "." + domain
	endpoint := "api-route-" + zoneController.Name
	// The stand-in's ClusterIdentity, adopting the region it stands in for, as the guide has it.
	guideIdentity := &clusterv1alpha1.ClusterIdentity{}
	if err := yaml.UnmarshalStrict([]byte(block("adoptsRegions:")), guideIdentity); err != nil {
		t.Fatalf("%s: the stand-in's ClusterIdentity: %v", failoverDoc, err)
	}
	if id := guideIdentity.Spec; guideIdentity.Name != clusterv1alpha1.ClusterIdentityName || !slices.Contains(id.AdoptsRegions, zoneController.Region) ||
		id.Region != "neu" || id.Cluster != "aks02" || id.Domain != domain || id.EnvironmentLetter != envLetter {
		t.Fatalf("%s: the stand-in's ClusterIdentity should be %s of aks02 in neu (%s, %s) and adopt %s: %+v", failoverDoc,
			clusterv1alpha1.ClusterIdentityName, domain, envLetter, zoneController.Region, guideIdentity)
	}

	// The weu zone, outside the cluster, on a BIND server whose key has the guide's name.
	zone, err := framework.StartBind(ctx, t, framework.BindOptions{Name: zoneController.Region, Zone: domain, TSIG: true, Address: framework.NodeIP(1)})
	if err != nil {
		t.Fatal(err)
	}
	if tsig := zoneController.Failover.TSIG; tsig.KeyName != zone.TSIG.Name || tsig.Algorithm != zone.TSIG.Algorithm {
		t.Fatalf("the guide's TSIG key %s (%s) is not the test server's %s (%s)", tsig.KeyName, tsig.Algorithm, zone.TSIG.Name, zone.TSIG.Algorithm)
	}
	// What aks01 left: its gateway's address, where nothing listens on the probe port, and the
	// name, owned by aks01's ExternalDNS from namespace myapp.
	probePort, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	lostGateway := framework.NodeIP(1)
	prefix := zoneController.Failover.TXTPrefix
	if err := zone.Update(ctx,
		fmt.Sprintf("update add %s. 300 A %s", targetLost, lostGateway),
		fmt.Sprintf("update add %s. 300 CNAME %s.", name, targetLost),
		fmt.Sprintf(`update add %scname-%s. 300 TXT "heritage=external-dns,external-dns/owner=%s,external-dns/resource=crd/%s/%s"`, prefix, name, ownerLost, namespace, endpoint),
	); err != nil {
		t.Fatal(err)
	}
	beating, stopBeating := context.WithCancel(ctx)
	var beats sync.WaitGroup
	beats.Go(func() { beatAsLostCluster(beating, t, zone, ownerLost, targetLost) })
	defer func() { stopBeating(); beats.Wait() }()

	w := startWorld(t, 1)
	cl := w.Cluster()
	installCRDs(ctx, t, w, istioCRDs, externalDNSCRDs)
	repo, err := w.PushOperatorImage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	diagnose := operatorDiagnostics(ctx, w)

	// The release as INSTALLATION installs it, with the cluster's values file (here the chart's
	// defaults, two replicas, and the image pushed to the world's registry); then the guide's
	// commands as written: the Secret with the zone's key, the chart value appended to the values
	// file, the upgrade.
	script := block("  secret: zone-tsig")
	if !strings.Contains(script, `"$TSIG_SECRET_WEU"`) {
		t.Fatalf("%s: the TSIG commands lack $TSIG_SECRET_WEU:\n%s", failoverDoc, script)
	}
	install := "CLUSTER=aks02\n" +
		"printf 'image:\\n  repository: %s\\n' " + repo + " > values-$CLUSTER.yaml\n" +
		"helm install " + operatorDeployment + " charts/service-router-operator -n " + operatorNamespace + " -f values-$CLUSTER.yaml"
	out, err := cl.RunScript(ctx, strings.Join([]string{
		"kubectl create namespace " + operatorNamespace,
		"kubectl label namespace " + operatorNamespace + " pod-security.kubernetes.io/enforce=restricted",
		install,
		"TSIG_SECRET_WEU=" + zone.TSIG.Secret,
		script,
	}, "\n"))
	if err != nil {
		t.Fatalf("installing the chart with the guide's TSIG values: %v\n%s", err, diagnose())
	}
	t.Logf("chart installed with the guide's TSIG values:\n%s", lastLines(out, 4))
	pods, err := w.WaitDeploymentReady(ctx, operatorNamespace, operatorDeployment, podTimeout)
	if err != nil {
		t.Fatalf("%v\n%s", err, diagnose())
	}
	checkOperatorPods(t, pods, 2, repo, w.Registry) // the chart's two replicas; the leader fails over

	// aks02's ExternalDNS for the zone, run only on events (as the guide recommends, with an
	// interval no wait here reaches).
	edKubeconfig, err := w.NewKubeconfig("external-dns-weu")
	if err != nil {
		t.Fatal(err)
	}
	ed, err := cl.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: zoneController.Name, OwnerID: ownerHere, TXTPrefix: prefix,
		Interval: 10 * time.Minute, ExtraArgs: []string{"--events"}, Kubeconfig: edKubeconfig}.ForBind(zone))
	if err != nil {
		t.Fatal(err)
	}
	diag := func() []func() string { return []func() string{diagnose, ed.Diagnostics, zone.Diagnostics} }

	// aks02's platform: the guide's DNSConfiguration with this world's name server, aks02's owner
	// ID and fast settings; the team's policy names neu as weu's stand-in.
	cfg := guideConfig.DeepCopy()
	cfg.Name = clusterv1alpha1.DNSConfigurationName
	cfg.Spec.Failover = &clusterv1alpha1.FailoverSettings{ProbePort: ptr.To(int32(probePort)), ProbeInterval: &metav1.Duration{Duration: time.Second},
		FailureThreshold: ptr.To(int32(3)), HeartbeatInterval: &metav1.Duration{Duration: time.Second}, HeartbeatStaleAfter: &metav1.Duration{Duration: 5 * time.Second}}
	cfg.Spec.ExternalDNSControllers[0].Verification.Nameservers = []string{framework.NodeIP(1) + ":" + strconv.Itoa(zone.Port)}
	cfg.Spec.ExternalDNSControllers[0].Failover.OwnerID = ownerHere
	if _, err := framework.CreateIngressService(ctx, w.Client, framework.IngressService{
		Namespace: "aks-istio-ingress", Name: "aks-istio-ingressgateway-internal", Controller: "aks-istio-ingressgateway-internal", IPs: []string{lbIP}}); err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, w.Client, namespace); err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, w.Client, "istio-system"); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		guideIdentity,
		cfg,
		&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "default-gateway"}, Spec: routingv1alpha1.GatewaySpec{
			Controller: "aks-istio-ingressgateway-internal", CredentialName: "cert-aks-ingress", TargetPostfix: "internal", IngressNamespace: "aks-istio-ingress"}},
		&routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "dns"}, Spec: routingv1alpha1.DNSPolicySpec{
			Mode: routingv1alpha1.DNSPolicyModeActive, Failover: &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}}},
		&routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "api-route"}, Spec: routingv1alpha1.ServiceRouteSpec{
			ServiceName: "api", GatewayName: "default-gateway", GatewayNamespace: "istio-system", Environment: "dev", Application: namespace}},
	} {
		if err := w.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}

	// 1. Before the loss: the gateway does not answer, the heartbeat vouches for it.
	chain := func(target, address string) []string { return []string{"CNAME " + target + ".", "A " + address} }
	lostChain, hereChain := chain(targetLost, lostGateway), chain(targetHere, lbIP)
	if _, err := framework.Converge(ctx, zone.Query(targetHere, "A"), framework.Resolves("A "+lbIP), convergeTimeout, 100*time.Millisecond, diag()...); err != nil {
		t.Fatal(err)
	}
	waitFailoverState(ctx, t, w.Client, zoneController.Region, "Unreachable", "WitnessSaysAlive", diag)
	heartbeat := failover.HeartbeatName("aks02", "neu", domain)
	if ans := framework.MustDig(ctx, t, zone.Query(heartbeat, "TXT")); len(ans.Records) != 1 || !strings.Contains(ans.Records[0].Data, "owner="+ownerHere) {
		t.Errorf("1. the pod's heartbeat %s: %v, want one TXT naming %s (written with the mounted key)", heartbeat, ans, ownerHere)
	}
	if ans := framework.MustDig(ctx, t, zone.Query(name, "A")); !framework.SameRecords(ans, lostChain) {
		t.Fatalf("1. before the loss %s answers %v, want aks01's %v\n%s", name, ans, lostChain, describeAll(diag()))
	}

	// 2. The loss.
	stopBeating()
	beats.Wait()
	lost := time.Now()
	tr, err := framework.Converge(ctx, zone.Query(name, "A"), framework.Resolves(hereChain...), 2*convergeTimeout, 50*time.Millisecond, diag()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2. lost: %s answers aks02's gateway %s after aks01's heartbeat stopped; seen: %s", name, time.Since(lost).Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, lostChain) {
		t.Errorf("2. want a direct switch from aks01's gateway to aks02's, seen: %s", tr)
	}
	waitFailoverState(ctx, t, w.Client, zoneController.Region, "Lost", "HeartbeatStale", diag)
	ep := &externaldnsv1alpha1.DNSEndpoint{}
	if err := w.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: endpoint}, ep); err != nil {
		t.Fatal(err)
	}
	if _, marked := ep.Annotations[naming.AnnotationOwnershipPassed]; !marked {
		t.Errorf("2. the pod did not mark DNSEndpoint %s/%s after the pass: %v", namespace, endpoint, ep.Annotations)
	}
	recs := framework.LogZone(ctx, t, "2. after the loss", zone)
	if !framework.HasRecord(recs, prefix+"cname-"+name+".", "TXT", "external-dns/owner="+ownerHere+",") {
		t.Errorf("2. the ownership record of %s does not name %s", name, ownerHere)
	}

	// 3. The guide's drain and its end, its commands run as written. aks02 asks for its region's
	// names to move: its heartbeat says so, and the drain is complete at once (this world has no
	// zone of aks02's own region, so none of its names has to move); the name it holds for weu
	// stays (a drained cluster takes nothing more and gives back nothing it holds for a lost
	// region). The end of the drain takes the condition away.
	for _, step := range []struct{ title, block, beat string }{
		{"3. drained", `"drain":true`, "drain=true"},
		{"3. undrained", `"drain":false`, ""},
	} {
		script := block(step.block)
		scriptCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		out, err := cl.RunScript(scriptCtx, script)
		cancel()
		if err != nil {
			t.Fatalf("%s: the guide's commands failed: %v\n%s\n%s", step.title, err, out, describeAll(diag()))
		}
		t.Logf("%s, as the guide does it:\n%s", step.title, script)
		err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, step.title+": the heartbeat to say so", func(ctx context.Context) (bool, string, error) {
			ans, err := zone.Dig(ctx, heartbeat, "TXT")
			if err != nil || len(ans.Records) != 1 {
				return false, fmt.Sprint(ans, err), nil
			}
			says := strings.Contains(ans.Records[0].Data, "drain=true")
			return says == (step.beat != ""), ans.Records[0].Data, nil
		})
		if err != nil {
			t.Error(err)
		}
		if ans := framework.MustDig(ctx, t, zone.Query(name, "A")); !framework.SameRecords(ans, hereChain) {
			t.Errorf("%s: %s answers %v, want aks02's %v still", step.title, name, ans, hereChain)
		}
	}

	// 4. Back: aks01 returns, with the guide's DNSConfiguration (its own owner ID) and a team
	// policy that takes names back automatically.
	aks01 := returnLostCluster(t, zone, guideConfig, cfg.Spec.Failover, ownerLost, namespace, lostGateway, probePort)
	back := time.Now()
	tr, err = framework.Converge(ctx, zone.Query(name, "A"), framework.Resolves(lostChain...), 2*convergeTimeout, 50*time.Millisecond,
		append(diag(), aks01.op.Diagnostics, aks01.ed.Diagnostics)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("4. back: %s answers aks01's gateway %s after aks01 returned; seen: %s", name, time.Since(back).Round(time.Millisecond), tr)
	if answers := tr.Answers(); len(answers) != 2 || !framework.SameRecords(answers[0].Answer, hereChain) {
		t.Errorf("4. want a direct switch back from aks02's gateway to aks01's, seen: %s", tr)
	}
	waitFailoverState(ctx, t, w.Client, zoneController.Region, "Serving", "GatewayAnswers", diag)
	err = framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "4. the pod to hold nothing and clear its mark", func(ctx context.Context) (bool, string, error) {
		ep := &externaldnsv1alpha1.DNSEndpoint{}
		if err := w.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: endpoint}, ep); err != nil {
			return false, "", err
		}
		cfg := &clusterv1alpha1.DNSConfiguration{}
		if err := w.Client.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg); err != nil {
			return false, "", err
		}
		taken := 0
		for _, r := range cfg.Status.Failover {
			for _, z := range r.Taken {
				taken += int(z.Names)
			}
		}
		mark := ep.Annotations[naming.AnnotationTakenFrom]
		return taken == 0 && mark == "", fmt.Sprintf("%d names held, marked as taken from %q", taken, mark), nil
	})
	if err != nil {
		t.Error(err)
	}
}

// returnedCluster is the lost cluster back, beside the node world: its control plane, operator
// and ExternalDNS as processes, its gateway a listener on the address the zone publishes for it.
type returnedCluster struct {
	op *framework.Operator
	ed *framework.ExternalDNS
}

// returnLostCluster brings aks01 (weu) back: the guide's DNSConfiguration with aks01's owner ID,
// the zone's key in a file of its own and the failover settings given; its gateway (Service
// address and target) as the zone publishes it, answering on probePort; its team's route under a
// policy naming neu as stand-in with failback Automatic.
func returnLostCluster(t *testing.T, zone *framework.BindServer, guideConfig *clusterv1alpha1.DNSConfiguration, settings *clusterv1alpha1.FailoverSettings,
	owner, namespace, gatewayIP string, probePort int) returnedCluster {
	t.Helper()
	ctx := t.Context()
	gateway, err := net.Listen("tcp", net.JoinHostPort(gatewayIP, strconv.Itoa(probePort)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gateway.Close() })
	go func() {
		for {
			c, err := gateway.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	cl, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "aks01-weu"})
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "weu")
	if err := os.WriteFile(keyFile, []byte(zone.TSIG.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := guideConfig.DeepCopy()
	cfg.Name = clusterv1alpha1.DNSConfigurationName
	cfg.Spec.Failover = settings.DeepCopy()
	cfg.Spec.Failover.FailbackAfter = &metav1.Duration{Duration: 3 * time.Second}
	c := &cfg.Spec.ExternalDNSControllers[0]
	c.Verification.Nameservers = []string{"127.0.0.1:" + strconv.Itoa(zone.Port)}
	c.Failover.OwnerID = owner
	c.Failover.TSIG.SecretFile = keyFile
	for _, ns := range []string{namespace, "istio-system", "aks-istio-ingress"} {
		if err := framework.EnsureNamespace(ctx, cl.Client, ns); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := framework.CreateIngressService(ctx, cl.Client, framework.IngressService{
		Namespace: "aks-istio-ingress", Name: "aks-istio-ingressgateway-internal", Controller: "aks-istio-ingressgateway-internal", IPs: []string{gatewayIP}}); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName},
			Spec: clusterv1alpha1.ClusterIdentitySpec{Region: c.Region, Cluster: "aks01", Domain: zone.Zone, EnvironmentLetter: "d"}},
		cfg,
		&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "default-gateway"}, Spec: routingv1alpha1.GatewaySpec{
			Controller: "aks-istio-ingressgateway-internal", CredentialName: "cert-aks-ingress", TargetPostfix: "internal", IngressNamespace: "aks-istio-ingress"}},
		&routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "dns"}, Spec: routingv1alpha1.DNSPolicySpec{
			Mode: routingv1alpha1.DNSPolicyModeActive, Failover: &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}, Failback: routingv1alpha1.FailbackAutomatic}}},
		&routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "api-route"}, Spec: routingv1alpha1.ServiceRouteSpec{
			ServiceName: "api", GatewayName: "default-gateway", GatewayNamespace: "istio-system", Environment: "dev", Application: namespace}},
	} {
		if err := cl.Client.Create(ctx, obj); err != nil {
			t.Fatalf("aks01: creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	var back returnedCluster
	if back.ed, err = cl.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: c.Name, OwnerID: owner, TXTPrefix: c.Failover.TXTPrefix}.ForBind(zone)); err != nil {
		t.Fatal(err)
	}
	if back.op, err = cl.StartOperator(ctx, t, framework.OperatorOptions{}); err != nil {
		t.Fatal(err)
	}
	return back
}

// beatAsLostCluster refreshes aks01's heartbeat in zone every second, as aks01's operator did,
// until ctx ends (the loss); its gateway, it says, answers its own probes.
func beatAsLostCluster(ctx context.Context, t *testing.T, zone *framework.BindServer, owner, target string) {
	record := failover.HeartbeatName("aks01", "weu", zone.Zone)
	for {
		value := failover.HeartbeatValue(failover.Heartbeat{At: time.Now(), GatewayAnswers: true, Owner: owner, Targets: []string{target}})
		// A failed refresh is a missed heartbeat, as it would be for aks01's operator.
		if err := zone.Update(context.WithoutCancel(ctx), "update delete "+record+". TXT", fmt.Sprintf(`update add %s. 10 TXT "%s"`, record, value)); err != nil {
			t.Logf("aks01's heartbeat: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// waitFailoverState waits for dns-config's status to say region is in state for reason.
func waitFailoverState(ctx context.Context, t *testing.T, c client.Client, region, state, reason string, diag func() []func() string) {
	t.Helper()
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "dns-config to say region "+region+" is "+state+" ("+reason+")", func(ctx context.Context) (bool, string, error) {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		if err := c.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg); err != nil {
			return false, err.Error(), nil
		}
		for _, r := range cfg.Status.Failover {
			if r.Region == region {
				return r.State == state && r.Reason == reason, fmt.Sprintf("%s (%s): %s", r.State, r.Reason, r.Message), nil
			}
		}
		return false, fmt.Sprintf("%+v", cfg.Status.Failover), nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, describeAll(diag()))
	}
}
