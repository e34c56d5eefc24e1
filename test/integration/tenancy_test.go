package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
)

// setAllowedRoutes replaces a Gateway's spec.allowedRoutes.namespaces, as the platform does.
func (f *fixture) setAllowedRoutes(name string, from routingv1alpha1.FromNamespaces, selector *metav1.LabelSelector) {
	f.t.Helper()
	gw := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.gatewayNS}}
	_, err := createOrUpdate(f.ctx, gw, func() error {
		gw.Spec.AllowedRoutes = &routingv1alpha1.AllowedRoutes{Namespaces: &routingv1alpha1.RouteNamespaces{From: from, Selector: selector}}
		return nil
	})
	require.NoError(f.t, err)
}

// TestAllowedRoutes_NamespaceLabelsAndGatewayChangesAreFollowedBothWays: a route on a Gateway that
// selects namespaces by label publishes when the platform labels its namespace and stops (records
// and Istio host removed) when the label goes; a change of the Gateway's allowedRoutes is followed
// the same way.
func TestAllowedRoutes_NamespaceLabelsAndGatewayChangesAreFollowedBothWays(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)

	gw := f.gateway("restricted", "internal")
	access := &metav1.LabelSelector{MatchLabels: map[string]string{"gateway-access/restricted": "true"}}
	f.setAllowedRoutes(gw.Name, routingv1alpha1.NamespacesFromSelector, access)
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	host, target := f.hostname("api", "example.com"), "aks01-weu-internal.example.com"

	notAllowed := func() {
		t.Helper()
		f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonNotAllowedByGateway)
		waitFor(t, "no DNSEndpoint for the route", func() string {
			if eps := routeEndpoints(t, f.ns, "api-route"); len(eps) > 0 {
				return fmt.Sprintf("%d DNSEndpoint(s)", len(eps))
			}
			return ""
		})
		f.waitIstioHosts(gw.Name /* no publishing route: no Istio Gateway */)
	}
	published := func() {
		t.Helper()
		f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
		f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu")
		f.waitIstioHosts(gw.Name, istioHost(f.ns, host))
	}

	notAllowed()
	labelNamespace(t, f.ns, "gateway-access/restricted", "true")
	published()
	labelNamespace(t, f.ns, "gateway-access/restricted", "")
	notAllowed()

	f.setAllowedRoutes(gw.Name, routingv1alpha1.NamespacesFromAll, nil)
	published()
	f.setAllowedRoutes(gw.Name, routingv1alpha1.NamespacesFromSame, nil)
	notAllowed()
}

// TestApplications_ReservationIsFollowedBothWays: two namespaces publish the same application
// name; when the platform reserves it for the younger one, the older one's route stops claiming
// the hostname and the reserving namespace's route is promoted at once; lifting the reservation
// gives the hostname back to the oldest claim.
func TestApplications_ReservationIsFollowedBothWays(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)

	gw := f.gateway("default-gateway", "internal")
	f.policy(activeMode)
	owner := newNamespace(t, "owner")
	require.NoError(t, env.Client.Create(f.ctx, &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: owner}, Spec: activeMode}))
	host, target := f.hostname("api", "example.com"), "aks01-weu-internal.example.com"

	f.route("", "api-route", "api", gw.Name)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has a resolution of one second
	f.route(owner, "api-route", "api", gw.Name)
	f.waitRoute(owner, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonHostnameConflict)

	annotateNamespace(t, owner, naming.AnnotationApplications, "other,"+f.app)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonApplicationNotAllowed)
	f.waitRoute(owner, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitRouteEndpoints(owner, "api-route", host, target, "external-dns-weu")
	assert.Empty(t, routeEndpoints(t, f.ns, "api-route"))
	f.waitIstioHosts(gw.Name, istioHost(owner, host))

	annotateNamespace(t, owner, naming.AnnotationApplications, "")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitRoute(owner, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonHostnameConflict)
	f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu")
	f.waitIstioHosts(gw.Name, istioHost(f.ns, host))

	// A namespace's own list that leaves the application out stops its route too.
	annotateNamespace(t, f.ns, naming.AnnotationApplications, "something-else")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonApplicationNotAllowed)
	f.waitRoute(owner, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
}

// TestIngressNamespace_AKSAddOnServicesServeGatewaysElsewhere: with the AKS Istio add-on the
// ingress Services live in aks-istio-ingress while the Gateways live in istio-system; the
// platform names that namespace in spec.ingressNamespace, and the address records are written
// beside the Service. A Service of the same controller in the Gateway's own namespace is then
// not used.
func TestIngressNamespace_AKSAddOnServicesServeGatewaysElsewhere(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)
	addOn := newNamespace(t, "aks-istio-ingress")

	notTrusted := loadBalancerService(f.gatewayNS, "older-in-gateway-namespace", f.controller)
	require.NoError(t, env.Client.Create(f.ctx, notTrusted))
	f.setLoadBalancer(notTrusted, corev1.LoadBalancerIngress{IP: "192.0.2.1"})
	time.Sleep(1100 * time.Millisecond) // the add-on's Service is the younger one
	svc := loadBalancerService(addOn, "aks-istio-ingressgateway-internal", f.controller)
	require.NoError(t, env.Client.Create(f.ctx, svc))
	f.setLoadBalancer(svc, lbIP...)

	gw := &routingv1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: f.gatewayNS},
		Spec:       routingv1alpha1.GatewaySpec{Controller: f.controller, CredentialName: "cert", TargetPostfix: "internal", IngressNamespace: addOn},
	}
	require.NoError(t, env.Client.Create(f.ctx, gw))
	eps := f.waitAddressRecords("internal", "aks01-weu-internal.example.com", map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu")
	assert.Equal(t, addOn, eps[0].Namespace, "address records live beside the trusted ingress Service")
	got := f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonNoServiceRoutes)
	assert.Equal(t, "10.123.45.67", got.Status.LoadBalancerIP)

	// Without ingressNamespace the Gateway's own namespace is trusted: the records move there.
	require.NoError(t, retryOnConflict(func() error {
		if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		gw.Spec.IngressNamespace = ""
		return env.Client.Update(f.ctx, gw)
	}))
	eps = f.waitAddressRecords("internal", "aks01-weu-internal.example.com", map[string][]string{"A": {"192.0.2.1"}}, "external-dns-weu")
	assert.Equal(t, f.gatewayNS, eps[0].Namespace)
}

// TestIngressNamespace_OldestGatewayOfAnEntryPointDecides: two Gateways share a controller and
// target postfix (one target hostname) but name different ingress namespaces; the older one
// decides, the younger one reports IngressNamespaceConflict, and deleting the older hands the
// decision to the younger.
func TestIngressNamespace_OldestGatewayOfAnEntryPointDecides(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)
	other := newNamespace(t, "ingress")
	f.ingressService(lbIP...)
	otherSvc := loadBalancerService(other, "ingress", f.controller)
	require.NoError(t, env.Client.Create(f.ctx, otherSvc))
	f.setLoadBalancer(otherSvc, corev1.LoadBalancerIngress{IP: "192.0.2.7"})

	first := f.gateway("first", "internal")
	f.waitGateway(first.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonNoServiceRoutes)
	time.Sleep(1100 * time.Millisecond)
	second := &routingv1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: f.gatewayNS},
		Spec:       routingv1alpha1.GatewaySpec{Controller: f.controller, CredentialName: "cert", TargetPostfix: "internal", IngressNamespace: other},
	}
	require.NoError(t, env.Client.Create(f.ctx, second))

	conflict := f.waitGateway(second.Name, routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonIngressNamespaceConflict)
	assert.Contains(t, conflict.Status.Conditions[0].Message, f.gatewayNS+"/first")
	f.waitAddressRecords("internal", "aks01-weu-internal.example.com", map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu")

	require.NoError(t, env.Client.Delete(f.ctx, first))
	f.waitGateway(second.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonNoServiceRoutes)
	eps := f.waitAddressRecords("internal", "aks01-weu-internal.example.com", map[string][]string{"A": {"192.0.2.7"}}, "external-dns-weu")
	assert.Equal(t, other, eps[0].Namespace)
}

// TestIstioHosts_BareFormatForVirtualServicesElsewhere: a Gateway with istioHostFormat Bare lists
// bare hostnames (the architecture document's form); switching back to the default lists them
// namespace-scoped.
func TestIstioHosts_BareFormatForVirtualServicesElsewhere(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)

	gw := &routingv1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "default-gateway", Namespace: f.gatewayNS},
		Spec:       routingv1alpha1.GatewaySpec{Controller: f.controller, CredentialName: "cert", TargetPostfix: "internal", IstioHostFormat: routingv1alpha1.IstioHostBare},
	}
	require.NoError(t, env.Client.Create(f.ctx, gw))
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	host := f.hostname("api", "example.com")
	f.waitIstioHosts(gw.Name, host)

	require.NoError(t, retryOnConflict(func() error {
		if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		gw.Spec.IstioHostFormat = ""
		return env.Client.Update(f.ctx, gw)
	}))
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), gw))
	assert.Equal(t, routingv1alpha1.IstioHostNamespaceScoped, gw.Spec.IstioHostFormat, "the API server defaults the format")
	f.waitIstioHosts(gw.Name, istioHost(f.ns, host))
}

// TestApplicationPolicy_APIServerRejectsUnlistedApplications installs config/admission on the
// real API server: a namespace listing its applications accepts routes of those only, with a
// message naming the annotation; namespaces without a list are not restricted by admission.
func TestApplicationPolicy_APIServerRejectsUnlistedApplications(t *testing.T) {
	ctx := context.Background()
	for _, obj := range readManifests(t, filepath.Join(env.RepoRoot, "config", "admission", "application_policy.yaml")) {
		require.NoError(t, env.Client.Create(ctx, obj))
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
	route := func(ns, name, app string) *routingv1alpha1.ServiceRoute {
		return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: "default-gateway", Environment: "dev", Application: app}}
	}
	listed := newNamespace(t, "listed")
	// A route that existed before the namespace got its list.
	before := route(listed, "before", "app7")
	require.NoError(t, env.Client.Create(ctx, before))
	annotateNamespace(t, listed, naming.AnnotationApplications, "app1, app2")
	unlisted := newNamespace(t, "unlisted")

	// The policy takes effect once the API server has loaded it.
	waitFor(t, "the API server to enforce the application policy", func() string {
		err := env.Client.Create(ctx, route(listed, "probe", "app3"), client.DryRunAll)
		if err == nil {
			return "a route of an unlisted application was accepted"
		}
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			return err.Error()
		}
		return ""
	})
	err := env.Client.Create(ctx, route(listed, "app3-route", "app3"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "application app3 is not among the applications namespace "+listed+" may publish")
	assert.Contains(t, err.Error(), naming.AnnotationApplications)

	require.NoError(t, env.Client.Create(ctx, route(listed, "app2-route", "app2")), "a listed application (spaces around names are ignored)")
	require.NoError(t, env.Client.Create(ctx, route(unlisted, "app3-route", "app3")), "a namespace without a list is not restricted by admission")

	// Updating a route to an unlisted application is rejected too.
	existing := route(listed, "app2-route", "app2")
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(existing), existing))
	existing.Spec.Application = "app9"
	err = env.Client.Update(ctx, existing)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "app9"), err.Error())

	// A route of an unlisted application from before the list: its status stays the operator's to
	// write (it reports ApplicationNotAllowed there), and it can be deleted.
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(before), before))
	patch := client.MergeFrom(before.DeepCopy())
	before.Status.Phase = routingv1alpha1.PhaseFailed
	require.NoError(t, env.Client.Status().Patch(ctx, before, patch))
	require.NoError(t, env.Client.Delete(ctx, before))
}
