package core

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
)

// fakeAddressReads is an AddressReads over fixed objects.
type fakeAddressReads struct {
	*fakeRouteReads
	gateways     []*routingv1alpha1.Gateway
	services     []*corev1.Service
	apiGateways  map[types.NamespacedName]*gwv1.Gateway
	noGatewayAPI bool
	addresses    []*externaldnsv1alpha1.DNSEndpoint
	serviceReads []string // the namespaces whose Services were read
}

func (f *fakeAddressReads) IngressService(_ context.Context, namespace, controller string) (*corev1.Service, error) {
	f.serviceReads = append(f.serviceReads, namespace)
	for _, s := range f.services {
		if s.Namespace == namespace && s.Labels[naming.IngressServiceSelector] == controller {
			return s, nil
		}
	}
	return nil, nil
}
func (f *fakeAddressReads) GatewayAPIServed() bool { return !f.noGatewayAPI }
func (f *fakeAddressReads) GatewayAPIGateway(_ context.Context, key types.NamespacedName) ([]*gwv1.Gateway, error) {
	if g, ok := f.apiGateways[key]; ok {
		return []*gwv1.Gateway{g}, nil
	}
	return nil, nil
}
func (f *fakeAddressReads) GatewaysOfEntryPoint(context.Context, desired.Ingress) ([]*routingv1alpha1.Gateway, error) {
	return f.gateways, nil
}
func (f *fakeAddressReads) AddressEndpoints(context.Context, desired.Ingress) ([]*externaldnsv1alpha1.DNSEndpoint, error) {
	return f.addresses, nil
}

var entryPoint = desired.Ingress{Controller: "aks-istio-ingressgateway-internal", TargetPostfix: "internal"}

func entryGateway(namespace, name string, created int64, ingressNamespace string) *routingv1alpha1.Gateway {
	return &routingv1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(name), CreationTimestamp: metav1.NewTime(time.Unix(created, 0))},
		Spec: routingv1alpha1.GatewaySpec{Controller: entryPoint.Controller, TargetPostfix: entryPoint.TargetPostfix, CredentialName: "cert",
			IngressNamespace: ingressNamespace},
	}
}

func loadBalancer(namespace, ip string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ingress", Labels: map[string]string{naming.IngressServiceSelector: entryPoint.Controller}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: ip}}}},
	}
}

func addressWorld() *fakeAddressReads {
	return &fakeAddressReads{fakeRouteReads: worldOf(routingv1alpha1.DNSPolicyModeActive)}
}

// targets are the A records the written DNSEndpoints hold, by namespace/name.
func targets(t *testing.T, rd *fakeAddressReads) (written map[string][]string, rec *recorder[*externaldnsv1alpha1.DNSEndpoint]) {
	t.Helper()
	rec = &recorder[*externaldnsv1alpha1.DNSEndpoint]{}
	written = map[string][]string{}
	_, err := Addresses(context.Background(), rd, func(ctx context.Context, k apply.Kind[*externaldnsv1alpha1.DNSEndpoint], want, current []*externaldnsv1alpha1.DNSEndpoint,
		n Notice[*externaldnsv1alpha1.DNSEndpoint]) (Written[*externaldnsv1alpha1.DNSEndpoint], error) {
		for _, ep := range want {
			written[ep.Namespace+"/"+ep.Name] = ep.Spec.Endpoints[0].Targets
		}
		return rec.apply(ctx, k, want, current, n)
	}, entryPoint)
	require.NoError(t, err)
	return written, rec
}

func TestAddresses_TheOldestGatewayDecidesWhereTheAddressComesFrom(t *testing.T) {
	rd := addressWorld()
	// The younger Gateway names another ingress namespace, whose Service a tenant could create:
	// it is never read.
	rd.gateways = []*routingv1alpha1.Gateway{entryGateway("team", "younger", 2000, "team"), entryGateway("istio-system", "older", 1000, "aks-istio-ingress")}
	rd.services = []*corev1.Service{loadBalancer("team", "10.9.9.9"), loadBalancer("aks-istio-ingress", "10.0.0.1")}
	written, rec := targets(t, rd)
	assert.Equal(t, []string{"aks-istio-ingress"}, rd.serviceReads)
	assert.Len(t, rec.created, 2, "one DNSEndpoint per ExternalDNS controller")
	for key, ips := range written {
		assert.Contains(t, key, "aks-istio-ingress/", "in the ingress Service's namespace")
		assert.Equal(t, []string{"10.0.0.1"}, ips)
	}
}

func TestAddresses_RecordsAreKeptWithoutAnAddressAndGoWithTheLastGateway(t *testing.T) {
	rd := addressWorld()
	rd.gateways = []*routingv1alpha1.Gateway{entryGateway("istio-system", "gw", 1000, "")}
	rd.services = []*corev1.Service{loadBalancer("istio-system", "10.0.0.1")}
	written, _ := targets(t, rd)
	require.Len(t, written, 2)
	for key := range written {
		rd.addresses = append(rd.addresses, publishedAddress(key))
	}

	rd.services = nil // the load balancer is being replaced: no address says nothing definite
	_, rec := targets(t, rd)
	assert.Zero(t, rec.calls, "kept as they are")

	rd.identity = nil // neither does a missing ClusterIdentity
	_, rec = targets(t, rd)
	assert.Zero(t, rec.calls)

	rd.gateways = nil // the last Gateway of the entry point is gone: a definite answer
	_, rec = targets(t, rd)
	assert.Len(t, rec.deleted, 2)
}

func TestAddresses_GatewayAPIBackendPublishesTheGatewayAPIGatewaysAddress(t *testing.T) {
	rd := addressWorld()
	gw := entryGateway("istio-system", "gw", 1000, "")
	gw.Spec.Backend = routingv1alpha1.BackendGatewayAPI
	rd.gateways = []*routingv1alpha1.Gateway{gw}
	rd.services = []*corev1.Service{loadBalancer("istio-system", "10.0.0.1")}

	_, rec := targets(t, rd)
	assert.Zero(t, rec.calls, "no Gateway API Gateway yet: nothing to publish, nothing removed")

	generated := desired.GatewayAPI(gw, "aks01-weu-internal.example.com", "istio-system", nil, nil).Gateway
	ipType := gwv1.IPAddressType
	generated.Status.Addresses = []gwv1.GatewayStatusAddress{{Type: &ipType, Value: "10.1.1.1"}}
	rd.apiGateways = map[types.NamespacedName]*gwv1.Gateway{{Namespace: "istio-system", Name: "gw"}: generated}
	written, _ := targets(t, rd)
	require.Len(t, written, 2)
	for _, ips := range written {
		assert.Equal(t, []string{"10.1.1.1"}, ips, "the Gateway API Gateway's address, not the Service's")
	}
	assert.Empty(t, rd.serviceReads)
}

func TestAddresses_NothingWithoutTheDNSEndpointAPI(t *testing.T) {
	rd := addressWorld()
	rd.notServed = true
	rd.gateways = []*routingv1alpha1.Gateway{entryGateway("istio-system", "gw", 1000, "")}
	_, rec := targets(t, rd)
	assert.Zero(t, rec.calls)
}

func publishedAddress(key string) *externaldnsv1alpha1.DNSEndpoint {
	ns, name, _ := strings.Cut(key, "/")
	return &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name),
		Labels: map[string]string{naming.LabelManagedBy: naming.ManagedByValue, naming.LabelResourceType: naming.ResourceTypeGateway,
			naming.LabelIstioController: entryPoint.Controller, naming.LabelTargetPostfix: entryPoint.TargetPostfix}}}
}
