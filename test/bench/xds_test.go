package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	istioapinetworkingv1 "istio.io/api/networking/v1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// ingressLabels are the labels of the gateway pod the xDS client poses as: those the operator's
// Istio Gateway selects for the bench's Gateway (its controller, bench-ingress).
var ingressLabels = map[string]string{naming.IngressServiceSelector: ingressName, "app": ingressName}

// startIstiod starts istiod against the cluster (creating its namespace if needed) and connects
// the xDS client as the bench's ingress gateway pod.
func startIstiod(t testing.TB, ctx context.Context, cl *framework.Cluster, onSnapshot func(framework.XDSSnapshot)) (*framework.Istiod, *framework.XDSClient) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gatewayNS}}
	if err := cl.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	istiod, err := cl.StartIstiod(ctx, t)
	must(t, err)
	xds, err := framework.DialXDS(ctx, framework.XDSOptions{Address: istiod.XDSAddress, Namespace: gatewayNS,
		Pod: ingressName + "-0", Labels: ingressLabels, OnSnapshot: onSnapshot})
	must(t, err)
	t.Cleanup(func() { _ = xds.Close() })
	return istiod, xds
}

// TestXDSClient_SeesTheGatewayHostsIstiodPrograms proves the xDS client the time-to-programmed
// benchmark relies on: an Istio Gateway with two hosts and a credentialName becomes one filter
// chain on its port with both names and the credential's SDS secret, and a host removed from the
// Gateway leaves the next push. It needs istiod (`make istio`) and fails without it.
func TestXDSClient_SeesTheGatewayHostsIstiodPrograms(t *testing.T) {
	if _, err := framework.IstiodBinary(); err != nil {
		t.Fatalf("istiod is needed (run make istio): %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := framework.StartCluster(ctx, t, framework.ClusterOptions{Name: "xds"})
	must(t, err)
	istiod, xds := startIstiod(t, ctx, cl, nil)
	defer func() {
		if t.Failed() {
			t.Logf("--- istiod log (last 60 lines) ---\n%s", istiod.LogTail(60))
		}
	}()

	// The credential exists, as in a cluster (istiod programs the SDS name either way).
	must(t, cl.Client.Create(ctx, tlsSecret(gatewayNS, "xds-cert")))
	gw := &istionetworkingv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "xds", Namespace: gatewayNS}}
	gw.Spec.Selector = map[string]string{naming.IngressServiceSelector: ingressName}
	gw.Spec.Servers = []*istioapinetworkingv1.Server{{
		Port:  &istioapinetworkingv1.Port{Number: 443, Name: "https", Protocol: "HTTPS"},
		Hosts: []string{"a.example.com", "b.example.com"},
		Tls:   &istioapinetworkingv1.ServerTLSSettings{Mode: istioapinetworkingv1.ServerTLSSettings_SIMPLE, CredentialName: "xds-cert"},
	}}
	must(t, cl.Client.Create(ctx, gw))

	hosts := func(want ...string) func(framework.XDSSnapshot) bool {
		return func(s framework.XDSSnapshot) bool {
			got := s.ServerNames(443)
			if len(got) != len(want) {
				return false
			}
			for _, h := range want {
				if got[h] != "kubernetes://xds-cert" {
					return false
				}
			}
			return true
		}
	}
	snap, err := xds.Wait(ctx, time.Minute, hosts("a.example.com", "b.example.com"))
	if err != nil {
		t.Fatalf("istiod did not program both hosts on 443 with kubernetes://xds-cert: %v\nlast snapshot: %+v", err, snap)
	}
	l, _ := snap.Listener(443)
	if len(l.FilterChains) != 1 || l.FilterChains[0].RouteConfig == "" {
		t.Errorf("want one filter chain on 443 with a route configuration, got %+v", l.FilterChains)
	}
	// The route configuration the chain names arrives by RDS, on the same stream. Its domains
	// come from VirtualServices bound to the Gateway: with none, istiod answers one default 404
	// virtual host, so a Gateway's hosts show in the server names, not here.
	routeConfig := l.FilterChains[0].RouteConfig
	snap, err = xds.Wait(ctx, time.Minute, func(s framework.XDSSnapshot) bool { _, ok := s.Routes[routeConfig]; return ok })
	if err != nil {
		t.Fatalf("no route configuration %s for 443's chain: %v; routes %v", routeConfig, err, snap.Routes)
	}
	t.Logf("after %d pushes: listener %s, filter chains %+v, routes %v", snap.Pushes, l.Name, l.FilterChains, snap.Routes)

	gw.Spec.Servers[0].Hosts = []string{"a.example.com"}
	must(t, cl.Client.Update(ctx, gw))
	snap, err = xds.Wait(ctx, time.Minute, hosts("a.example.com"))
	if err != nil {
		t.Fatalf("istiod did not drop b.example.com: %v\nlast snapshot: %s", err, fmt.Sprint(snap.ServerNames(443)))
	}
}

// tlsSecret is a Gateway credential: istiod programs its SDS name without reading it (the gateway's
// agent fetches the certificate), so its contents do not matter here.
func tlsSecret(namespace, name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}}
}
