//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// Timeouts: ExternalDNS runs every second, so records converge in one or two seconds; the
// generous limits only matter on a loaded CI machine.
const (
	convergeTimeout = 60 * time.Second
	syncTimeout     = 60 * time.Second
)

// dnsEndpoint builds a DNSEndpoint for one record, annotated for the named ExternalDNS instance.
func dnsEndpoint(namespace, name, controller, dnsName, recordType string, targets ...string) *externaldnsv1alpha1.DNSEndpoint {
	return &externaldnsv1alpha1.DNSEndpoint{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      name,
			// Labelled and annotated as the operator labels its own: the ExternalDNS instances
			// select by both (framework.ExternalDNSOptions.AnnotationFilterOnly).
			Labels:      map[string]string{naming.LabelController: controller},
			Annotations: map[string]string{framework.ControllerAnnotation: controller},
		},
		Spec: externaldnsv1alpha1.DNSEndpointSpec{
			Endpoints: []*endpoint.Endpoint{{
				DNSName:    dnsName,
				RecordType: recordType,
				Targets:    endpoint.Targets(targets),
				RecordTTL:  30,
			}},
		},
	}
}

func createNamespace(ctx context.Context, t testing.TB, c client.Client, name string) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// create creates obj and returns the time just before the call, the reference for convergence.
func create(ctx context.Context, t testing.TB, c client.Client, obj client.Object) time.Time {
	t.Helper()
	at := time.Now()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return at
}

func remove(ctx context.Context, t *testing.T, c client.Client, obj client.Object) time.Time {
	t.Helper()
	at := time.Now()
	if err := c.Delete(ctx, obj); err != nil {
		t.Fatalf("deleting %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return at
}

// waitAnswer waits for q to answer exactly want and returns the time since the reference point
// (the change that should cause it).
func waitAnswer(ctx context.Context, t testing.TB, since time.Time, q framework.Query, want []string, diagnostics ...func() string) time.Duration {
	t.Helper()
	if _, err := framework.WaitForAnswer(ctx, q, want, convergeTimeout, diagnostics...); err != nil {
		t.Fatal(err)
	}
	d := time.Since(since)
	shown := strings.Join(want, " | ")
	if len(want) == 0 {
		shown = "(no records)"
	}
	t.Logf("converged in %-7s %s -> %s", d.Round(time.Millisecond), q, shown)
	return d
}
