//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// TestGatewayAPIBackend_SwitchKeepsTheNameResolving: one cluster with the Gateway API's CRDs, one
// regional zone on a real named written by the real ExternalDNS. A route published through a
// classic Gateway resolves (CNAME → target → the ingress Service's address); the Gateway is
// switched to backend GatewayAPI and the test, playing the Gateway API implementation, reports an
// address on the generated Gateway: the zone then answers the new address, and a dig every 100 ms
// throughout the switch never saw the name fail to resolve.
func TestGatewayAPIBackend_SwitchKeepsTheNameResolving(t *testing.T) {
	ctx := t.Context()
	const (
		domain      = "example.com"
		controller  = "ingress-gw"
		classicIP   = "10.1.2.3"
		gatewayIP   = "10.9.8.7"
		appNS       = "myapp"
		gatewayNS   = "istio-system"
		gatewayName = "public"
	)
	hostname := "api-ns-d-dev-myapp." + domain
	target := "aks01-weu-public." + domain

	zones, err := framework.StartRegionalZones(ctx, t, domain, "weu")
	if err != nil {
		t.Fatal(err)
	}
	weu := zones["weu"]
	cl, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "aks01-weu", GatewayAPICRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	c := cl.Client
	objs := []client.Object{
		&clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: "cluster-identity"},
			Spec: clusterv1alpha1.ClusterIdentitySpec{Region: "weu", Cluster: "aks01", Domain: domain, EnvironmentLetter: "d"}},
		&clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "dns-config"},
			Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{{Name: framework.RegionalControllerName("weu"), Region: "weu"}}}},
		&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNS, Name: gatewayName},
			Spec: routingv1alpha1.GatewaySpec{Controller: controller, CredentialName: "cert", TargetPostfix: "public"}},
		&routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "dns"},
			Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive}},
		&routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: appNS, Name: "api-route"},
			Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: gatewayName, GatewayNamespace: gatewayNS, Environment: "dev", Application: "myapp"}},
	}
	for _, ns := range []string{gatewayNS, appNS} {
		if err := framework.EnsureNamespace(ctx, c, ns); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range objs {
		create(ctx, t, c, o)
	}
	if _, err := framework.CreateIngressService(ctx, c, framework.IngressService{Namespace: gatewayNS, Name: controller, Controller: controller, IPs: []string{classicIP}}); err != nil {
		t.Fatal(err)
	}
	op, err := cl.StartOperator(ctx, t, framework.OperatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eds, err := cl.StartRegionalExternalDNS(ctx, t, zones, func(region string) string { return region + "-p-aks01-" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	diag := []func() string{op.Diagnostics, eds["weu"].Diagnostics, weu.Diagnostics}
	start := time.Now()
	waitAnswer(ctx, t, start, weu.Query(hostname, "A"), []string{"CNAME " + target + ".", "A " + classicIP}, diag...)

	// A dig every 100 ms from here on: every answer must be the CNAME and an address.
	probeCtx, stopProbe := context.WithCancel(ctx)
	var mu sync.Mutex
	var failures []string
	answers := 0
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for probeCtx.Err() == nil {
			ans, err := framework.Dig(probeCtx, weu.Port, hostname, "A")
			mu.Lock()
			switch {
			case probeCtx.Err() != nil:
			case err != nil:
				failures = append(failures, err.Error())
			case len(ans.Records) != 2 || ans.Status != "NOERROR":
				failures = append(failures, fmt.Sprintf("%s at %s", ans, time.Now().Format(time.StampMilli)))
			default:
				answers++
			}
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
		}
	}()

	gw := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: gatewayNS, Name: gatewayName}}
	if err := framework.Change(ctx, c, gw, func(gw *routingv1alpha1.Gateway) { gw.Spec.Backend = routingv1alpha1.BackendGatewayAPI }); err != nil {
		t.Fatal(err)
	}
	switched := time.Now()
	generated := &gwv1.Gateway{}
	if err := eventually(ctx, convergeTimeout, func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: gatewayNS, Name: gatewayName}, generated)
	}); err != nil {
		t.Fatalf("the Gateway API Gateway: %v\n%s", err, op.Diagnostics())
	}
	set := &gwv1.ListenerSet{}
	if err := eventually(ctx, convergeTimeout, func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: gatewayNS, Name: desired.ListenerSetName(gatewayName, appNS, 1)}, set)
	}); err != nil {
		t.Fatalf("the ListenerSet of %s: %v", appNS, err)
	}
	if l := set.Spec.Listeners; len(l) != 1 || string(*l[0].Hostname) != hostname {
		t.Errorf("ListenerSet listeners = %v, want one for %s", l, hostname)
	}
	// Until the implementation reports an address, the zone keeps answering the old one: once the
	// operator has taken the switch (the Gateway says it waits for the address) and ExternalDNS has
	// synchronized since.
	if err := eventually(ctx, convergeTimeout, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if ready := meta.FindStatusCondition(gw.Status.Conditions, "Ready"); ready == nil || ready.Reason != routingv1alpha1.ReasonLoadBalancerAddressPending {
			return fmt.Errorf("Ready is %v", ready)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := eds["weu"].WaitForSyncSince(ctx, time.Now(), syncTimeout); err != nil {
		t.Fatal(err)
	}
	if got := framework.MustDig(ctx, t, weu.Query(target, "A")); !framework.SameRecords(got, []string{"A " + classicIP}) {
		t.Errorf("%s A before the Gateway API Gateway has an address = %s, want the address kept", target, got)
	}
	ip := gwv1.IPAddressType
	if err := framework.ChangeStatus(ctx, c, generated, func(g *gwv1.Gateway) {
		g.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: &ip, Value: gatewayIP}}
	}); err != nil {
		t.Fatal(err)
	}
	waitAnswer(ctx, t, switched, weu.Query(hostname, "A"), []string{"CNAME " + target + ".", "A " + gatewayIP}, diag...)
	stopProbe()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d successful answers during the switch", answers)
	if len(failures) > 0 {
		t.Errorf("%d answer(s) during the switch did not resolve %s: %v", len(failures), hostname, failures)
	}
	if answers == 0 {
		t.Error("no answer was observed during the switch")
	}
}

// eventually retries check every 100 ms until it succeeds or timeout passes (its last error).
func eventually(ctx context.Context, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}
