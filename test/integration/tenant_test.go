package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istioapinetworkingv1 "istio.io/api/networking/v1"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/naming"
)

const (
	tenantNamespace = "tenant-b"
	tenantUser      = "tenant-b-developer"
	// quietPeriod is how long nothing may change after an attack: the operator reacts to an
	// event within milliseconds.
	quietPeriod = 3 * time.Second
)

// TestTenant_NamespaceEditorCannotReachOutsideItsNamespace acts as an application team would with
// only the built-in edit role in tenant-b (plus the shipped editor role aggregated into it), and
// attempts each attack of the multi-tenancy threat model (docs/ARCHITECTURE.md#multi-tenancy):
// each fails, and no DNSEndpoint, Istio Gateway, Gateway or ServiceRoute outside tenant-b changes
// (watched through API watches; UIDs and resourceVersions compared).
func TestTenant_NamespaceEditorCannotReachOutsideItsNamespace(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)
	ctx := context.Background()

	// The platform: app1's namespace owns application f.app and may use the restricted gateway.
	ensureNamespace(t, tenantNamespace)
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNamespace}})
	})
	annotateNamespace(t, f.ns, naming.AnnotationApplications, f.app)
	labelNamespace(t, f.ns, "gateway-access/restricted", "true")
	tenant := namespaceEditor(t, tenantUser, tenantNamespace)
	// A platform running Istio lets teams write VirtualServices in their namespaces.
	grantVirtualServices(t, tenantUser, tenantNamespace)

	// The tenant's decoy ingress Service, without an address, older than the platform's.
	decoy := loadBalancerService(tenantNamespace, "decoy", f.controller)
	require.NoError(t, tenant.Create(ctx, decoy))
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has a resolution of one second

	platformLB := f.ingressService(lbIP...)
	require.True(t, decoy.CreationTimestamp.Before(&platformLB.CreationTimestamp), "the decoy is the older Service")
	shared := f.gateway("shared", "internal")
	restricted := &routingv1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "restricted", Namespace: f.gatewayNS},
		// Same entry point as the shared gateway (one target hostname), other allowed routes.
		Spec: routingv1alpha1.GatewaySpec{Controller: f.controller, CredentialName: "cert-restricted", TargetPostfix: "internal",
			AllowedRoutes: &routingv1alpha1.AllowedRoutes{Namespaces: &routingv1alpha1.RouteNamespaces{From: routingv1alpha1.NamespacesFromSelector,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"gateway-access/restricted": "true"}}}}},
	}
	require.NoError(t, env.Client.Create(ctx, restricted))
	f.policy(activeMode)
	f.route("", "api-route", "api", shared.Name)
	f.route("", "internal-route", "internal", restricted.Name)

	apiHost, internalHost := f.hostname("api", "example.com"), f.hostname("internal", "example.com")
	target := "aks01-weu-internal.example.com"
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitRoute(f.ns, "internal-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitRouteEndpoints(f.ns, "api-route", apiHost, target, "external-dns-weu")
	f.waitIstioHosts(shared.Name, istioHost(f.ns, apiHost))
	f.waitIstioHosts(restricted.Name, istioHost(f.ns, internalHost))
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu")
	f.waitGateway(shared.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	f.waitGateway(restricted.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	// The tenant's own DNSPolicy: everything in tenant-b could publish, if it were allowed to.
	require.NoError(t, tenant.Create(ctx, &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: tenantNamespace}, Spec: activeMode}))
	outside := []string{f.ns, f.gatewayNS}

	t.Run("DecoyIngressServiceIsIgnored", func(t *testing.T) {
		rec := recordChanges(t, outside...)
		// The cloud gives the decoy an address (the tenant cannot: services/status is not in edit).
		decoy.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.66"}}
		requireForbidden(t, tenant.Status().Update(ctx, decoy.DeepCopy()), "setting a Service's load balancer address")
		f.setLoadBalancer(decoy, decoy.Status.LoadBalancer.Ingress...)
		// A second decoy, and a Gateway that would trust tenant-b: Gateways are the platform's.
		require.NoError(t, tenant.Create(ctx, loadBalancerService(tenantNamespace, "decoy-2", f.controller)))
		requireForbidden(t, tenant.Create(ctx, &routingv1alpha1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: tenantNamespace},
			Spec:       routingv1alpha1.GatewaySpec{Controller: f.controller, CredentialName: "cert", TargetPostfix: "internal", IngressNamespace: tenantNamespace},
		}), "creating a Gateway")
		rec.requireNoChange(quietPeriod, outside...)

		f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu")
		gw := f.waitGateway(shared.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
		assert.Equal(t, "10.123.45.67", gw.Status.LoadBalancerIP)
		requireNothingPublishedIn(t, tenantNamespace)
	})

	t.Run("ApplicationOfAnotherNamespaceIsNeitherSquattedNorInherited", func(t *testing.T) {
		rec := recordChanges(t, outside...)
		// Squatting app1's existing hostname, and claiming one app1 has not published yet.
		tenantRoute := func(name, service string) *routingv1alpha1.ServiceRoute {
			return &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tenantNamespace},
				Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: service, GatewayName: shared.Name, GatewayNamespace: f.gatewayNS, Environment: "dev", Application: f.app}}
		}
		require.NoError(t, tenant.Create(ctx, tenantRoute("squat", "api")))
		require.NoError(t, tenant.Create(ctx, tenantRoute("early", "web")))
		// The tenant cannot unlist the application from app1's namespace, nor list it in its own.
		requireForbidden(t, tenant.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNamespace, Annotations: map[string]string{naming.AnnotationApplications: f.app}}}, client.Merge), "annotating its own namespace")
		requireForbidden(t, tenant.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns, Annotations: map[string]string{naming.AnnotationApplications: "x"}}}, client.Merge), "annotating another namespace")
		for _, name := range []string{"squat", "early"} {
			r := waitRouteReason(t, tenant, tenantNamespace, name, routingv1alpha1.ReasonApplicationNotAllowed)
			assert.NotContains(t, r.Status.Conditions[0].Message, f.ns, "the status does not say which namespace owns the application")
			assert.Empty(t, r.Status.Endpoints)
		}
		rec.requireNoChange(quietPeriod, outside...)
		requireNothingPublishedIn(t, tenantNamespace)

		// app1 publishes web after the tenant's claim: the older claim does not count.
		webHost := f.hostname("web", "example.com")
		web := f.route("", "web-route", "web", shared.Name)
		f.waitRoute(f.ns, "web-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
		f.waitIstioHosts(shared.Name, istioHost(f.ns, apiHost), istioHost(f.ns, webHost))

		// app1 deletes its route: the tenant's claim is not promoted.
		inherit := recordChanges(t, tenantNamespace)
		require.NoError(t, env.Client.Delete(ctx, web))
		f.waitIstioHosts(shared.Name, istioHost(f.ns, apiHost))
		waitRouteReason(t, tenant, tenantNamespace, "early", routingv1alpha1.ReasonApplicationNotAllowed)
		inherit.requireNoChange(quietPeriod, tenantNamespace)
		requireNothingPublishedIn(t, tenantNamespace)
	})

	t.Run("OtherTeamsHostIsBoundOnlyInItsNamespace", func(t *testing.T) {
		rec := recordChanges(t, outside...)
		vs := &istionetworkingv1.VirtualService{
			ObjectMeta: metav1.ObjectMeta{Name: "steal-api", Namespace: tenantNamespace},
			Spec: istioapinetworkingv1.VirtualService{Hosts: []string{apiHost}, Gateways: []string{f.gatewayNS + "/" + shared.Name},
				Http: []*istioapinetworkingv1.HTTPRoute{{Route: []*istioapinetworkingv1.HTTPRouteDestination{{Destination: &istioapinetworkingv1.Destination{Host: "thief." + tenantNamespace + ".svc.cluster.local"}}}}}},
		}
		// The API server accepts it (Istio validates bindings itself, at runtime) ...
		require.NoError(t, tenant.Create(ctx, vs))
		rec.requireNoChange(quietPeriod, outside...)
		// ... but Istio binds a VirtualService to a host listed as <namespace>/<host> only when the
		// VirtualService is in that namespace: app1's host is not the tenant's to bind.
		assert.Equal(t, []string{f.ns + "/" + apiHost}, istioHostsOf(t, f.gatewayNS, shared.Name))
		assert.Equal(t, []string{f.ns + "/" + internalHost}, istioHostsOf(t, f.gatewayNS, restricted.Name))
	})

	t.Run("GatewayThatDoesNotAllowTheNamespace", func(t *testing.T) {
		rec := recordChanges(t, outside...)
		tenantApp := "b" + f.app // an application nobody reserved
		route := &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: "use-restricted", Namespace: tenantNamespace},
			Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: restricted.Name, GatewayNamespace: f.gatewayNS, Environment: "dev", Application: tenantApp}}
		require.NoError(t, tenant.Create(ctx, route))
		requireForbidden(t, tenant.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNamespace, Labels: map[string]string{"gateway-access/restricted": "true"}}}, client.Merge), "labelling its own namespace")
		got := waitRouteReason(t, tenant, tenantNamespace, route.Name, routingv1alpha1.ReasonNotAllowedByGateway)
		assert.Equal(t, routingv1alpha1.PhaseFailed, got.Status.Phase)
		assert.NotContains(t, got.Status.Conditions[0].Message, "gateway-access", "the status does not reveal the Gateway's selector")
		assert.Empty(t, got.Status.Endpoints)
		rec.requireNoChange(quietPeriod, outside...)
		requireNothingPublishedIn(t, tenantNamespace)
		assert.Equal(t, []string{f.ns + "/" + internalHost}, istioHostsOf(t, f.gatewayNS, restricted.Name))
	})
}

// grantVirtualServices lets user write Istio VirtualServices in namespace, as a platform running
// Istio does for its application teams.
func grantVirtualServices(t *testing.T, user, namespace string) {
	t.Helper()
	grantWrite(t, user, namespace, "virtualservices", "networking.istio.io", "virtualservices")
}

// grantWrite gives user every verb on the resources of group in namespace, through a Role and a
// RoleBinding both named name.
func grantWrite(t *testing.T, user, namespace, name, group string, resources ...string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{group}, Resources: resources, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	require.NoError(t, env.Client.Create(ctx, role))
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	require.NoError(t, env.Client.Create(ctx, binding))
}
