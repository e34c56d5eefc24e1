//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/testenv"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestExternalDNSExample_RestartKeepsTheZone runs ExternalDNS configured from the values file
// users copy, docs/examples/external-dns/weu-values.yaml, rendered by ExternalDNS's own Helm
// chart (the chart of the ExternalDNS version the suite runs), instead of the framework's own
// flags. Only what cannot be the same on this machine is replaced (ExternalDNSExample.LocalArgs):
// the provider (azure-private-dns and its --azure-* flags become rfc2136 against a BIND zone that
// accepts only TSIG-signed updates) and the kubeconfig and metrics address. The example's
// sources, annotation and label filters, owner ID, TXT prefix, policy, registry, domain filter and
// one-minute interval are kept.
//
// The cluster is aks01 in weu with the operator, a DNSConfiguration of three regional
// controllers and one route, so that the cluster holds DNSEndpoints of the other zones'
// controllers (the gateway's address record for external-dns-neu and external-dns-frc), the
// situation in which ExternalDNS v0.22.0 without --label-filter deleted every record it owned
// (fixed in v0.23.0, kubernetes-sigs/external-dns#6728; the label filter stays in the example). The
// instance publishes the route and the gateway; it is stopped and started again, and the zone
// holds every record, exactly as before, with no dynamic update applied. As a control that the
// restarts' check sees a deletion, the same arguments with a label filter that selects none of
// its DNSEndpoints (what v0.22.0 read without the filter) empty the zone on their first
// synchronization.
//
// Where the framework's own flags (ExternalDNSOptions) differ from the example: --interval=500ms
// instead of 1m (the example's interval is kept here: this test only needs each instance's first
// synchronization), --log-level=debug instead of info, no --domain-filter, owner IDs and prefixes
// per test, and no TSIG. None of these changes what a restart does to the zone: that depends on
// the filters, the registry, the owner ID and the policy, which are the example's here.
func TestExternalDNSExample_RestartKeepsTheZone(t *testing.T) {
	ctx := t.Context()
	const (
		region  = "weu"
		cluster = "aks01"
		lbIP    = "10.1.2.3"
		appNS   = "myapp"
	)
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	release := framework.RegionalControllerName(region)
	example, err := framework.RenderExternalDNSExample(ctx, filepath.Join(root, "docs", "examples", "external-dns", region+"-values.yaml"), release, cluster)
	if err != nil {
		t.Fatal(err)
	}
	// The example's own identity: its domain, the owner ID of cluster aks01 and the zone's
	// prefix <region>-<environment letter>-.
	domain, owner, prefix := example.Flag("domain-filter"), example.Flag("txt-owner-id"), example.Flag("txt-prefix")
	envLetter := strings.TrimSuffix(strings.TrimPrefix(prefix, region+"-"), "-")
	if domain == "" || owner != release+"-"+cluster || len(envLetter) != 1 {
		t.Fatalf("the example's --domain-filter=%q --txt-owner-id=%q --txt-prefix=%q: want a domain, owner %s-%s and prefix %s-<letter>-\nchart arguments: %q",
			domain, owner, prefix, release, cluster, region, example.ChartArgs)
	}
	zone, err := framework.StartBind(ctx, t, framework.BindOptions{Name: region, Zone: domain, TSIG: true})
	if err != nil {
		t.Fatal(err)
	}
	args, replaced := example.LocalArgs(zone)
	t.Logf("%s rendered by the ExternalDNS chart: %s\nreplaced here: %s\nrun as: %s",
		filepath.Base(example.ValuesFile), strings.Join(example.ChartArgs, " "), strings.Join(replaced, " "), strings.Join(args, " "))
	// The example's arguments with its --label-filter selecting no DNSEndpoint: the control.
	selectingNothing := slices.Clone(args)
	labelFilters := 0
	for i, a := range selectingNothing {
		if strings.HasPrefix(a, "--label-filter=") {
			selectingNothing[i] = "--label-filter=router.io/controller=external-dns-nobody"
			labelFilters++
		}
	}
	if labelFilters != 1 {
		t.Fatalf("the example has no single --label-filter: %q", example.ChartArgs)
	}

	cl, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: cluster + "-" + region})
	if err != nil {
		t.Fatal(err)
	}
	target := cluster + "-" + region + "-internal." + domain
	hostname := fmt.Sprintf("api-ns-%s-dev-%s.%s", envLetter, appNS, domain)
	configureExampleCluster(ctx, t, cl.Client, region, cluster, domain, envLetter, lbIP)
	op, err := cl.StartOperator(ctx, t, framework.OperatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.EnsureNamespace(ctx, cl.Client, appNS); err != nil {
		t.Fatal(err)
	}
	create(ctx, t, cl.Client, &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: appNS + "-dns"}, Spec: activeSpec})
	create(ctx, t, cl.Client, &routingv1alpha1.ServiceRoute{
		ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "api-route"},
		Spec: routingv1alpha1.ServiceRouteSpec{
			ServiceName: "api", GatewayName: gatewayName, GatewayNamespace: gatewayNamespace, Environment: "dev", Application: appNS,
		},
	})
	waitDNSEndpoints(ctx, t, cl.Client, map[string][]string{
		release:                                 {target + " A", hostname + " CNAME"},
		framework.RegionalControllerName("neu"): {target + " A"},
		framework.RegionalControllerName("frc"): {target + " A"},
	}, op.Diagnostics)

	want := []string{
		fmt.Sprintf("%s A %s", short(target), lbIP),
		fmt.Sprintf("%sa-%s TXT owner=%s", prefix, short(target), owner),
		fmt.Sprintf("%s CNAME %s", short(hostname), short(target)),
		fmt.Sprintf("%scname-%s TXT owner=%s", prefix, short(hostname), owner),
	}
	chain := []string{"CNAME " + target + ".", "A " + lbIP}
	start := func(args []string) *framework.ExternalDNS {
		t.Helper()
		ed, err := cl.StartExternalDNS(ctx, t, framework.ExternalDNSOptions{Name: release, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return ed
	}
	stop := func(ed *framework.ExternalDNS) {
		t.Helper()
		if err := ed.Stop(); err != nil {
			t.Fatal(err)
		}
	}

	// The first start meets the other controllers' DNSEndpoints and publishes its own.
	started := time.Now()
	ed := start(args)
	exampleZone(ctx, t, zone, want, ed.Diagnostics, op.Diagnostics)
	waitAnswer(ctx, t, started, zone.Query(hostname, "A"), chain, ed.Diagnostics, zone.Diagnostics)
	// The zone takes only updates signed with its key: ExternalDNS signed them.
	signed := 0
	for line := range strings.SplitSeq(zone.Log(), "\n") {
		if !strings.Contains(line, "updating zone") {
			continue
		}
		if !strings.Contains(line, "/key "+zone.TSIG.Name+":") {
			t.Errorf("named applied an update not signed with TSIG key %s: %s", zone.TSIG.Name, line)
		}
		signed++
	}
	if signed == 0 {
		t.Errorf("named logged no update signed with TSIG key %s\n%s", zone.TSIG.Name, zone.Diagnostics())
	}

	// Stopped and started again: its first synchronization leaves every record as it is.
	for i := 1; i <= 2; i++ {
		before := zone.Log()
		stop(ed)
		ed = start(args)
		exampleZone(ctx, t, zone, want, ed.Diagnostics, op.Diagnostics)
		if ans := framework.MustDig(ctx, t, zone.Query(hostname, "A")); !framework.SameRecords(ans, chain) {
			t.Errorf("restart %d: %s answers %s, want %v", i, hostname, ans, chain)
		}
		for line := range strings.SplitSeq(strings.TrimPrefix(zone.Log(), before), "\n") {
			if strings.Contains(line, "updating zone") {
				t.Errorf("restart %d: named applied an update while ExternalDNS restarted with the example's configuration: %s", i, line)
			}
		}
		t.Logf("restart %d with the example's configuration: the zone holds its %d records, no update applied", i, len(want))
	}

	// The control: the same arguments reading none of the instance's DNSEndpoints delete every
	// record it owns on their first synchronization, as ExternalDNS v0.22.0 did when restarted
	// without --label-filter. The example's configuration then publishes them again.
	stop(ed)
	ed = start(selectingNothing)
	if recs := zoneLines(mustZone(ctx, t, zone)); len(recs) != 0 {
		t.Errorf("restarted reading none of its DNSEndpoints: want the zone emptied (the control of the restarts above), it holds:\n    %s\n%s",
			strings.Join(recs, "\n    "), ed.Diagnostics())
	} else {
		t.Logf("control: restarted reading none of its DNSEndpoints, the first synchronization emptied the zone; %s answers %s",
			hostname, framework.MustDig(ctx, t, zone.Query(hostname, "A")))
	}
	stop(ed)
	ed = start(args)
	exampleZone(ctx, t, zone, want, ed.Diagnostics, op.Diagnostics)
}

// configureExampleCluster creates the platform team's objects for one cluster of the example's
// domain: ClusterIdentity, the DNSConfiguration of the three regional controllers, the internal
// Gateway on the AKS add-on's ingress and its LoadBalancer Service with its address.
func configureExampleCluster(ctx context.Context, t *testing.T, c client.Client, region, cluster, domain, envLetter, lbIP string) {
	t.Helper()
	var controllers []clusterv1alpha1.ExternalDNSController
	for _, r := range worldRegions {
		controllers = append(controllers, clusterv1alpha1.ExternalDNSController{Name: framework.RegionalControllerName(r), Region: r})
	}
	configureAKSPlatform(ctx, t, c, clusterv1alpha1.ClusterIdentitySpec{Region: region, Cluster: cluster, Domain: domain, EnvironmentLetter: envLetter},
		controllers, lbIP)
}

// configureAKSPlatform creates what the platform team applies on an AKS cluster with the Istio
// add-on: the ClusterIdentity, the DNSConfiguration of controllers, the internal Gateway on the
// add-on's ingress (its TLS Secret there) and the add-on's LoadBalancer Service with lbIP.
func configureAKSPlatform(ctx context.Context, t *testing.T, c client.Client, identity clusterv1alpha1.ClusterIdentitySpec,
	controllers []clusterv1alpha1.ExternalDNSController, lbIP string) {
	t.Helper()
	if err := framework.EnsureNamespace(ctx, c, gatewayNamespace); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "cluster-identity"}, Spec: identity},
		&clusterv1alpha1.DNSConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "dns-config"},
			Spec:       clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: controllers},
		},
		&routingv1alpha1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNamespace, Name: gatewayName},
			Spec:       routingv1alpha1.GatewaySpec{Controller: ingressController, CredentialName: "cert-aks-ingress", TargetPostfix: "internal", IngressNamespace: ingressNamespace},
		},
	} {
		create(ctx, t, c, obj)
	}
	if _, err := framework.CreateIngressService(ctx, c, framework.IngressService{
		Namespace: ingressNamespace, Name: ingressController, Controller: ingressController, IPs: []string{lbIP},
	}); err != nil {
		t.Fatal(err)
	}
}

// waitDNSEndpoints waits until the cluster holds, for each controller, DNSEndpoints labelled for
// it with (at least) the listed "name TYPE" records.
func waitDNSEndpoints(ctx context.Context, t *testing.T, c client.Client, want map[string][]string, diagnostics ...func() string) {
	t.Helper()
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, fmt.Sprintf("DNSEndpoints %v", want), func(ctx context.Context) (bool, string, error) {
		var list externaldnsv1alpha1.DNSEndpointList
		if err := c.List(ctx, &list); err != nil {
			return false, err.Error(), nil
		}
		have := map[string][]string{}
		for _, d := range list.Items {
			controller := d.Labels[naming.LabelController]
			for _, e := range d.Spec.Endpoints {
				have[controller] = append(have[controller], e.DNSName+" "+e.RecordType)
			}
		}
		for controller, records := range want {
			for _, r := range records {
				if !slices.Contains(have[controller], r) {
					return false, fmt.Sprint(have), nil
				}
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(callAll(diagnostics), "\n"))
	}
}

// exampleZone waits until the zone holds exactly want (zoneLines).
func exampleZone(ctx context.Context, t *testing.T, b *framework.BindServer, want []string, diagnostics ...func() string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	var got []string
	err := framework.Poll(ctx, convergeTimeout, 200*time.Millisecond, "zone "+b.Zone+" to hold exactly\n    "+strings.Join(want, "\n    "),
		func(ctx context.Context) (bool, string, error) {
			recs, err := b.ZoneRecords(ctx)
			if err != nil {
				return false, err.Error(), nil
			}
			got = zoneLines(recs)
			return slices.Equal(got, want), "\n    " + strings.Join(got, "\n    "), nil
		})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, b.Diagnostics(), strings.Join(callAll(diagnostics), "\n"))
	}
	t.Logf("zone %s holds:\n    %s", b.Zone, strings.Join(got, "\n    "))
}

func mustZone(ctx context.Context, t *testing.T, b *framework.BindServer) []framework.Record {
	t.Helper()
	recs, err := b.ZoneRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
