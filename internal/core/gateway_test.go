package core

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/apply"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/verify"
)

// fakeGatewayReads is a GatewayReads over fixed objects that records which reads came after the
// first write (wrote is set by the writers).
type fakeGatewayReads struct {
	*fakeAddressReads
	routes         []*routingv1alpha1.ServiceRoute
	istio          []*istionetworkingv1.Gateway
	sets           []*gwv1.ListenerSet
	wrote          bool
	readAfterWrite []string
}

func (f *fakeGatewayReads) read(what string) {
	if f.wrote {
		f.readAfterWrite = append(f.readAfterWrite, what)
	}
}

func (f *fakeGatewayReads) IstioServed() bool { return true }
func (f *fakeGatewayReads) RoutesOfGateway(context.Context, *routingv1alpha1.Gateway) ([]*routingv1alpha1.ServiceRoute, error) {
	f.read("routes")
	return f.routes, nil
}
func (f *fakeGatewayReads) IstioGateway(context.Context, types.NamespacedName) ([]*istionetworkingv1.Gateway, error) {
	return f.istio, nil
}
func (f *fakeGatewayReads) ListenerSets(context.Context, string) ([]*gwv1.ListenerSet, error) {
	return f.sets, nil
}
func (f *fakeGatewayReads) HTTPRoutes(context.Context, string) ([]*gwv1.HTTPRoute, error) {
	return nil, nil
}
func (f *fakeGatewayReads) ReferenceGrants(context.Context, string, string) ([]*gwv1.ReferenceGrant, error) {
	return nil, nil
}
func (f *fakeGatewayReads) TargetZone(string) *verify.Observation { return nil }

// The reads the status is made of, recorded when they come after a write.
func (f *fakeGatewayReads) Singletons(ctx context.Context) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error) {
	f.read("singletons")
	return f.fakeAddressReads.Singletons(ctx)
}
func (f *fakeGatewayReads) AddressEndpoints(ctx context.Context, pair desired.Ingress) ([]*externaldnsv1alpha1.DNSEndpoint, error) {
	f.read("address records")
	return f.fakeAddressReads.AddressEndpoints(ctx, pair)
}

// logged is a recording writer of one kind whose writes go to log, in order; a write tells rd that
// what it reads from then on is read after a write.
func logged[T client.Object](rd *fakeGatewayReads, log *[]string, taken ...string) Apply[T] {
	rec := &recorder[T]{taken: map[string]bool{}, log: log}
	for _, k := range taken {
		rec.taken[k] = true
	}
	return func(ctx context.Context, k apply.Kind[T], want, current []T, n Notice[T]) (Written[T], error) {
		w, err := rec.apply(ctx, k, want, current, n)
		rd.wrote = rd.wrote || len(*log) > 0
		return w, err
	}
}

func gatewayWriters(rd *fakeGatewayReads, log *[]string, takenAPIGateway ...string) GatewayWriters {
	return GatewayWriters{Istio: logged[*istionetworkingv1.Gateway](rd, log), Gateways: logged[*gwv1.Gateway](rd, log, takenAPIGateway...),
		ListenerSets: logged[*gwv1.ListenerSet](rd, log), HTTPRoutes: logged[*gwv1.HTTPRoute](rd, log), ReferenceGrants: logged[*gwv1.ReferenceGrant](rd, log)}
}

func publishing(name string, created int64, hostname string) *routingv1alpha1.ServiceRoute {
	r := route()
	r.Name, r.UID, r.CreationTimestamp = name, types.UID(name), metav1.NewTime(time.Unix(created, 0))
	r.Status.Hostname = hostname
	r.Status.Endpoints = []routingv1alpha1.ManagedEndpoint{{Name: name + "-external-dns-weu", Controller: "external-dns-weu"}}
	return r
}

const gatewayTarget = "aks01-weu-internal.example.com"

func gatewayWorld() (*fakeGatewayReads, *routingv1alpha1.Gateway) {
	gw := entryGateway("istio-system", "default-gateway", 1000, "")
	rd := &fakeGatewayReads{fakeAddressReads: addressWorld()}
	rd.gateways = []*routingv1alpha1.Gateway{gw}
	rd.services = []*corev1.Service{loadBalancer("istio-system", "10.0.0.1")}
	rd.routes = []*routingv1alpha1.ServiceRoute{publishing("api", 2000, "api-ns-d-dev-myapp.example.com"), publishing("web", 3000, "web-ns-d-dev-myapp.example.com")}
	rd.addresses = []*externaldnsv1alpha1.DNSEndpoint{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "istio-system", Name: "address-weu", Labels: map[string]string{naming.LabelManagedBy: naming.ManagedByValue,
			naming.LabelResourceType: naming.ResourceTypeGateway, naming.LabelIstioController: entryPoint.Controller, naming.LabelTargetPostfix: entryPoint.TargetPostfix,
			naming.LabelController: "external-dns-weu"}},
		Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{{DNSName: gatewayTarget, RecordType: "A", Targets: endpoint.Targets{"10.0.0.1"}}}},
	}}
	return rd, gw
}

func TestGateway_TheIstioGatewayListsThePublishingRoutesAndTheStatusIsWhole(t *testing.T) {
	rd, gw := gatewayWorld()
	var log []string
	res, err := Gateway(context.Background(), rd, gatewayWriters(rd, &log), gw, decide.DefaultIstioGatewayBudget)
	require.NoError(t, err)
	assert.Equal(t, []string{"create Istio Gateway istio-system/default-gateway"}, log)
	assert.True(t, res.Plan.Ready)
	assert.Equal(t, routingv1alpha1.ReasonGatewayCreated, res.Plan.Reason)
	assert.Equal(t, gatewayTarget, gw.Status.TargetHostname)
	assert.Equal(t, "10.0.0.1", gw.Status.LoadBalancerIP)
	assert.EqualValues(t, 2, gw.Status.Hosts)
	assert.Nil(t, gw.Status.HostLimit)
	require.Len(t, gw.Status.Zones, 1, "the address record of the target in the zone of each controller")
	assert.NotNil(t, meta.FindStatusCondition(gw.Status.Conditions, routingv1alpha1.ConditionPublished))
	assert.Nil(t, meta.FindStatusCondition(gw.Status.Conditions, routingv1alpha1.ConditionReady), "Ready is the driver's, with decide.SetOutcome")
	assert.Empty(t, rd.readAfterWrite, "everything the status needs is read before the first write")
	assert.Positive(t, res.HostBytes)
}

func TestGateway_RoutesBeyondTheBudgetAreLeftOffAndTheStatusSaysWhere(t *testing.T) {
	rd, gw := gatewayWorld()
	first := decide.HostCandidate{Namespace: "myapp", Hostname: decide.IstioHost(gw, "myapp", "api-ns-d-dev-myapp.example.com")}
	var log []string
	_, err := Gateway(context.Background(), rd, gatewayWriters(rd, &log), gw, decide.EstimatedIstioGatewayBytes(first))
	require.NoError(t, err)
	assert.EqualValues(t, 1, gw.Status.Hosts, "the oldest route's host only")
	require.NotNil(t, gw.Status.HostLimit)
	assert.NotNil(t, meta.FindStatusCondition(gw.Status.Conditions, routingv1alpha1.ConditionHostLimit))
}

func TestGateway_WithoutTheClusterIdentityNothingIsWrittenAndTheStatusKept(t *testing.T) {
	rd, gw := gatewayWorld()
	rd.identity = nil
	gw.Status.TargetHostname = "kept.example.com"
	var log []string
	res, err := Gateway(context.Background(), rd, gatewayWriters(rd, &log), gw, decide.DefaultIstioGatewayBudget)
	require.NoError(t, err)
	assert.True(t, res.Plan.Keep)
	assert.Empty(t, log)
	assert.Equal(t, "kept.example.com", gw.Status.TargetHostname)
}

// A switch to the Gateway API writes the new backend's objects before the Istio Gateway goes, and
// keeps the Istio Gateway when a foreign object holds the new Gateway API Gateway's name.
func TestGateway_ABackendSwitchRemovesTheOldBackendOnlyOnceTheNewOneIsWritten(t *testing.T) {
	switched := func(taken ...string) ([]string, GatewayResult) {
		rd, gw := gatewayWorld()
		existing := desired.IstioGateway(gw, []string{"myapp/api-ns-d-dev-myapp.example.com"})
		existing.UID = "istio-uid"
		rd.istio = []*istionetworkingv1.Gateway{existing}
		gw.Spec.Backend = routingv1alpha1.BackendGatewayAPI
		var log []string
		res, err := Gateway(context.Background(), rd, gatewayWriters(rd, &log, taken...), gw, decide.DefaultIstioGatewayBudget)
		require.NoError(t, err)
		return log, res
	}

	log, _ := switched()
	require.NotEmpty(t, log)
	assert.Equal(t, "create Gateway API Gateway istio-system/default-gateway", log[0], "the parent first: %v", log)
	assert.Contains(t, log, "create ListenerSet istio-system/"+desired.ListenerSetName("default-gateway", "myapp", 1), "the routes' listeners: %v", log)
	assert.Equal(t, "delete Istio Gateway istio-system/default-gateway", log[len(log)-1], "the old backend last: %v", log)

	log, res := switched("istio-system/default-gateway")
	assert.Empty(t, log, "a foreign Gateway API Gateway: no ListenerSet without its parent, and the Istio Gateway kept")
	assert.Equal(t, routingv1alpha1.ReasonOwnershipConflict, res.Plan.Reason)
}
