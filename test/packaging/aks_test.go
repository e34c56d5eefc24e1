package packaging

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/yaml"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
)

// What the AKS Istio add-on creates for an internal ingress gateway
// (az aks mesh enable-ingress-gateway --ingress-gateway-type internal): the gateway pods and their
// internal LoadBalancer Service, in a namespace of their own.
const (
	aksIngressNamespace = "aks-istio-ingress"
	aksIngressName      = "aks-istio-ingressgateway-internal"
	aksIngressIP        = "10.224.0.10"
)

// aksAddOnIngressService is the add-on's internal ingress Service as a cluster shows it: labels
// of the Istio gateway chart, the Azure internal load balancer annotation, and the address the
// cloud controller wrote into its status.
func aksAddOnIngressService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: aksIngressName, Namespace: aksIngressNamespace,
			Labels: map[string]string{
				"app": aksIngressName, "istio": aksIngressName,
				"istio.io/rev": "asm-1-26", "app.kubernetes.io/name": aksIngressName,
			},
			Annotations: map[string]string{"service.beta.kubernetes.io/azure-load-balancer-internal": "true"},
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": aksIngressName, "istio": aksIngressName},
			Ports: []corev1.ServicePort{
				{Name: "status-port", Port: 15021, Protocol: corev1.ProtocolTCP},
				{Name: "http2", Port: 80, Protocol: corev1.ProtocolTCP},
				{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP},
			},
		},
	}
}

// sampleObjects returns config/samples in the order of its kustomization (the order `kubectl
// apply -k` and the CSV's alm-examples list them).
func sampleObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(readFile(t, repoPath("config", "samples", "kustomization.yaml"))), &kustomization))
	require.NotEmpty(t, kustomization.Resources)
	var objs []*unstructured.Unstructured
	for _, f := range kustomization.Resources {
		objs = append(objs, readObjects(t, "config", "samples", f)...)
	}
	return objs
}

// notesManifests returns the manifests NOTES.txt shows (indented YAML blocks starting with
// apiVersion), parsed.
func notesManifests(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	var block []string
	flush := func() {
		if len(block) > 0 && strings.HasPrefix(block[0], "apiVersion:") {
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(strings.Join(block, "\n")), &obj.Object), "NOTES.txt manifest:\n%s", strings.Join(block, "\n"))
			objs = append(objs, obj)
		}
		block = nil
	}
	const indent = "     "
	for _, line := range strings.Split(readFile(t, repoPath(chartPath, "templates", "NOTES.txt")), "\n") {
		if rest, ok := strings.CutPrefix(line, indent); ok && strings.TrimSpace(rest) != "" {
			block = append(block, rest)
			continue
		}
		flush()
	}
	flush()
	return objs
}

// specOf returns the spec of the first object of kind.
func specOf(t *testing.T, objs []*unstructured.Unstructured, kind string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			spec, _, err := unstructured.NestedMap(o.Object, "spec")
			require.NoError(t, err)
			return spec
		}
	}
	t.Fatalf("no %s", kind)
	return nil
}

// TestAKS_ExamplesShowTheSameGatewayAsTheSamples: the CSV's alm-examples are config/samples, and
// the Gateway (and cluster identity) NOTES.txt and docs/INSTALLATION.md show are the samples', so what
// TestAKS_SamplesReadyOnTheIstioAddOnShape proves of the samples holds for what OperatorHub and
// `helm install` show.
func TestAKS_ExamplesShowTheSameGatewayAsTheSamples(t *testing.T) {
	samples := sampleObjects(t)

	var examples []map[string]any
	require.NoError(t, json.Unmarshal([]byte(loadCSV(t).Annotations["alm-examples"]), &examples))
	var want []map[string]any
	for _, o := range samples {
		want = append(want, o.Object)
	}
	// Both through JSON, so that numbers compare equal.
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(wantJSON, &want))
	assert.ElementsMatch(t, want, examples, "the CSV's alm-examples are config/samples: run `make bundle`")

	notes := notesManifests(t)
	require.NotEmpty(t, notes, "NOTES.txt shows no manifests")
	for _, kind := range []string{"Gateway", "ClusterIdentity"} {
		assert.Equal(t, specOf(t, samples, kind), specOf(t, notes, kind), "the %s NOTES.txt shows differs from config/samples", kind)
	}
	assert.Equal(t, aksIngressNamespace, specOf(t, samples, "Gateway")["ingressNamespace"],
		"the sample Gateway names the AKS Istio add-on's ingress namespace")

	// docs/INSTALLATION.md shows the sample Gateway in its AKS section.
	var shown []*unstructured.Unstructured
	for _, block := range fencedBlocks(readFile(t, repoPath("docs", "INSTALLATION.md"))) {
		if strings.Contains(block, "kind: Gateway") && strings.Contains(block, aksIngressNamespace) {
			objs, err := parseObjects([]byte(block))
			require.NoError(t, err)
			shown = append(shown, objs...)
		}
	}
	require.NotEmpty(t, shown, "docs/INSTALLATION.md shows no Gateway for the AKS add-on")
	assert.Equal(t, specOf(t, samples, "Gateway"), specOf(t, shown, "Gateway"), "the Gateway docs/INSTALLATION.md shows differs from config/samples")
}

// TestAKS_SamplesReadyOnTheIstioAddOnShape applies config/samples as they are, with the ingress
// Service the AKS Istio add-on creates (in aks-istio-ingress, not beside the Gateway in
// istio-system), to a real API server with the operator running, and waits until the Gateway is
// Ready with the load balancer's address and every ServiceRoute is Ready with its DNSEndpoint: a
// user who copies the samples onto the add-on gets a working gateway, not LoadBalancerNotFound.
func TestAKS_SamplesReadyOnTheIstioAddOnShape(t *testing.T) {
	env := controlPlane(t)
	ctx := context.Background()
	c := env.Client
	samples := sampleObjects(t)

	// Namespaces stay (no namespace controller here); the objects go when the test ends, after
	// the operator has stopped (cleanups run last-registered first), generated ones included,
	// as the garbage collector of a cluster would remove them.
	created := []client.Object{}
	t.Cleanup(func() {
		for i := len(created) - 1; i >= 0; i-- {
			if err := c.Delete(ctx, created[i]); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s: %v", created[i].GetName(), err)
			}
		}
		for _, ns := range []string{"istio-system", "myapp", aksIngressNamespace} {
			managed := client.MatchingLabels{naming.LabelManagedBy: naming.ManagedByValue}
			for _, obj := range []client.Object{&externaldnsv1alpha1.DNSEndpoint{}, &istionetworkingv1.Gateway{}} {
				if err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns), managed); err != nil {
					t.Errorf("deleting generated objects in %s: %v", ns, err)
				}
			}
		}
	})
	create := func(obj client.Object) {
		t.Helper()
		if ns := obj.GetNamespace(); ns != "" {
			err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("creating namespace %s: %v", ns, err)
			}
		}
		require.NoError(t, c.Create(ctx, obj), "creating %s %s/%s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName())
		created = append(created, obj)
	}

	svc := aksAddOnIngressService()
	create(svc)
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: aksIngressIP}}
	require.NoError(t, c.Status().Update(ctx, svc), "the cloud controller's address")
	for _, obj := range samples {
		create(obj.DeepCopy())
	}
	restrictedNamespace(t, releaseNamespace) // the operator's leader-election Lease lives there
	startOperatorAs(t, env.Config)

	var gateway client.ObjectKey
	var routes []client.ObjectKey
	for _, o := range samples {
		switch o.GetKind() {
		case "Gateway":
			gateway = client.ObjectKeyFromObject(o)
		case "ServiceRoute":
			routes = append(routes, client.ObjectKeyFromObject(o))
		}
	}
	require.NotEmpty(t, gateway.Name, "config/samples has no Gateway")
	require.NotEmpty(t, routes, "config/samples has no ServiceRoute")

	waitUntil(t, "the sample Gateway to be Ready on the add-on's ingress Service", func() string {
		gw := &routingv1alpha1.Gateway{}
		if err := c.Get(ctx, gateway, gw); err != nil {
			return err.Error()
		}
		if !meta.IsStatusConditionTrue(gw.Status.Conditions, "Ready") {
			return fmt.Sprintf("Gateway %s not Ready: %v", gateway, gw.Status.Conditions)
		}
		if gw.Status.LoadBalancerIP != aksIngressIP {
			return fmt.Sprintf("Gateway %s has load balancer IP %q, want the add-on Service's %s", gateway, gw.Status.LoadBalancerIP, aksIngressIP)
		}
		return ""
	})
	waitUntil(t, "every sample ServiceRoute to be Ready", func() string {
		for _, key := range routes {
			route := &routingv1alpha1.ServiceRoute{}
			if err := c.Get(ctx, key, route); err != nil {
				return err.Error()
			}
			if !meta.IsStatusConditionTrue(route.Status.Conditions, "Ready") {
				return fmt.Sprintf("ServiceRoute %s not Ready: %v", key, route.Status.Conditions)
			}
		}
		return ""
	})

	// The address record of the gateway's target hostname is published from the add-on's
	// Service, in its namespace.
	endpoints := &externaldnsv1alpha1.DNSEndpointList{}
	require.NoError(t, c.List(ctx, endpoints, client.InNamespace(aksIngressNamespace)))
	var addresses []string
	for _, ep := range endpoints.Items {
		for _, e := range ep.Spec.Endpoints {
			if e.RecordType == "A" {
				addresses = append(addresses, e.DNSName+" A "+strings.Join(e.Targets, ","))
			}
		}
	}
	assert.Contains(t, addresses, "aks01-weu-internal.example.com A "+aksIngressIP,
		"the target hostname resolves to the add-on's internal load balancer")

	// The Istio Gateway selects the add-on's gateway pods and serves every sample route's host.
	waitUntil(t, "the Istio Gateway to select the add-on's pods with every route's host", func() string {
		istioGateway := &istionetworkingv1.Gateway{}
		if err := c.Get(ctx, gateway, istioGateway); err != nil {
			return err.Error()
		}
		if selector := istioGateway.Spec.GetSelector(); selector["istio"] != aksIngressName {
			return fmt.Sprintf("selector %v", selector)
		}
		var hosts int
		for _, server := range istioGateway.Spec.GetServers() {
			hosts += len(server.GetHosts())
		}
		if hosts < len(routes) {
			return fmt.Sprintf("%d hosts for %d routes: %v", hosts, len(routes), istioGateway.Spec.GetServers())
		}
		return ""
	})
}
