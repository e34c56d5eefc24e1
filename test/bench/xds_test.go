package bench

import (
	"context"
	"testing"

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

// tlsSecret is a Gateway credential: istiod programs its SDS name without reading it (the gateway's
// agent fetches the certificate), so its contents do not matter here.
func tlsSecret(namespace, name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil}}
}
