package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	istionetworkingv1 "istio.io/client-go/pkg/apis/networking/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/testenv"
)

// TestGatewayAPI runs the GatewayAPI backend on a control plane of its own with the Gateway API's
// standard-channel CRDs (sigs.k8s.io/gateway-api as go.mod pins it), so that every generated
// object passes the real schemas and CEL rules.
func TestGatewayAPI(t *testing.T) {
	useControlPlane(t, startControlPlane(t, testenv.Options{ControllerManager: true, GatewayAPICRDs: true}))
	t.Run("GeneratedObjectsAreAcceptedAndStable", testGatewayAPIObjects)
	t.Run("SwitchingBackendsKeepsDNSRecords", testGatewayAPISwitch)
	t.Run("TenantCannotAddAListener", testGatewayAPITenant)
	t.Run("ListenerConflictIsReportedOnTheRoute", testGatewayAPIConflict)
	t.Run("ForeignGatewayAPIGatewayIsLeftAloneUntilAdopted", testGatewayAPIForeign)
}

// testGatewayAPIForeign: a Gateway API Gateway of the same name that the operator did not write
// is never changed (OwnershipConflict, no ListenerSet attached to it) until a platform admin marks
// it router.io/adopt: then it is taken over in place.
func testGatewayAPIForeign(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)
	foreign := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "handmade", Namespace: f.gatewayNS},
		Spec: gwv1.GatewaySpec{GatewayClassName: "other", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType}}}}
	require.NoError(t, env.Client.Create(f.ctx, foreign))
	gw := f.gateway("handmade", "handmade")
	f.useGatewayAPI(gw.Name, nil)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	f.waitGateway(gw.Name, routingv1alpha1.PhaseFailed, routingv1alpha1.ReasonOwnershipConflict)
	time.Sleep(quietPeriod)
	kept := &gwv1.Gateway{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(foreign), kept))
	assert.Equal(t, foreign.ResourceVersion, kept.ResourceVersion, "the foreign Gateway API Gateway is untouched")
	assert.Empty(t, f.listenerSets(), "no ListenerSet for a parent the operator does not own")

	require.NoError(t, retryOnConflict(func() error {
		if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(foreign), kept); err != nil {
			return err
		}
		kept.Annotations = map[string]string{"router.io/adopt": "true"}
		return env.Client.Update(f.ctx, kept)
	}))
	f.waitListenerSets(map[string]int{desired.ListenerSetName(gw.Name, f.ns, 1): 1})
	adopted := &gwv1.Gateway{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(foreign), adopted))
	assert.Equal(t, foreign.UID, adopted.UID, "taken over in place")
	assert.Equal(t, gwv1.ObjectName("istio"), adopted.Spec.GatewayClassName)
}

// testGatewayAPIConflict plays the Gateway API implementation reporting the generated listener of
// a route's hostname as conflicted (a platform-written listener holds it): the route says so and
// keeps its DNS records; once the conflict is gone, it is Ready again.
func testGatewayAPIConflict(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)
	gw := f.gateway("conflicts", "conflicts")
	f.useGatewayAPI(gw.Name, nil)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	f.route("", "web-route", "web", gw.Name)
	apiHost, target := f.hostname("api", "example.com"), "aks01-weu-conflicts.example.com"
	name := desired.ListenerSetName(gw.Name, f.ns, 1)
	f.waitListenerSets(map[string]int{name: 2})
	f.setGatewayAPIAddress(gw.Name, "10.3.3.3")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	records := endpointUIDs(t, f.ns)

	setListenerStatus := func(conflicted bool) {
		require.NoError(t, retryOnConflict(func() error {
			s := &gwv1.ListenerSet{}
			if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.gatewayNS, Name: name}, s); err != nil {
				return err
			}
			s.Status.Listeners = nil
			for _, l := range s.Spec.Listeners {
				c := metav1.Condition{Type: "Conflicted", Status: metav1.ConditionFalse, Reason: "NoConflicts", ObservedGeneration: s.Generation, LastTransitionTime: metav1.Now()}
				if conflicted && string(*l.Hostname) == apiHost {
					c.Status, c.Reason = metav1.ConditionTrue, "HostnameConflict"
				}
				s.Status.Listeners = append(s.Status.Listeners, gwv1.ListenerEntryStatus{Name: l.Name, Conditions: []metav1.Condition{c}})
			}
			return env.Client.Status().Update(f.ctx, s)
		}))
	}
	setListenerStatus(true)
	route := f.waitRoute(f.ns, "api-route", routingv1alpha1.PhasePending, routingv1alpha1.ReasonListenerConflict)
	assert.Contains(t, meta.FindStatusCondition(route.Status.Conditions, "Ready").Message, name)
	f.waitRoute(f.ns, "web-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	status := &routingv1alpha1.Gateway{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), status))
	assert.Equal(t, []routingv1alpha1.ListenerConflict{{Namespace: f.ns, Hostname: apiHost, ListenerSet: name, Reason: "HostnameConflict"}}, status.Status.ListenerConflicts)
	f.waitRouteEndpoints(f.ns, "api-route", apiHost, target, "external-dns-weu")
	assert.Equal(t, records, endpointUIDs(t, f.ns), "the records stay")

	setListenerStatus(false)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
}

// useGatewayAPI sets the GatewayAPI backend on a fixture Gateway (and what mutate changes).
func (f *fixture) useGatewayAPI(name string, mutate func(*routingv1alpha1.GatewaySpec)) {
	f.t.Helper()
	gw := &routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.gatewayNS}}
	_, err := createOrUpdate(f.ctx, gw, func() error {
		gw.Spec.Backend = routingv1alpha1.BackendGatewayAPI
		if mutate != nil {
			mutate(&gw.Spec)
		}
		return nil
	})
	require.NoError(f.t, err)
}

// setGatewayAPIAddress plays the Gateway API implementation: it reports addresses in the status of
// the generated Gateway API Gateway.
func (f *fixture) setGatewayAPIAddress(name string, ips ...string) {
	f.t.Helper()
	g := &gwv1.Gateway{}
	waitFor(f.t, "the Gateway API Gateway "+name, func() string {
		if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.gatewayNS, Name: name}, g); err != nil {
			return err.Error()
		}
		return ""
	})
	require.NoError(f.t, retryOnConflict(func() error {
		if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(g), g); err != nil {
			return err
		}
		ip := gwv1.IPAddressType
		g.Status.Addresses = nil
		for _, a := range ips {
			g.Status.Addresses = append(g.Status.Addresses, gwv1.GatewayStatusAddress{Type: &ip, Value: a})
		}
		return env.Client.Status().Update(f.ctx, g)
	}))
}

// listenerSets lists the ListenerSets in the gateway namespace, by name.
func (f *fixture) listenerSets() map[string]gwv1.ListenerSet {
	f.t.Helper()
	list := &gwv1.ListenerSetList{}
	require.NoError(f.t, env.Client.List(f.ctx, list, client.InNamespace(f.gatewayNS)))
	out := map[string]gwv1.ListenerSet{}
	for _, s := range list.Items {
		out[s.Name] = s
	}
	return out
}

// waitListenerSets waits until the ListenerSets of the gateway namespace hold exactly these
// numbers of listeners, by name.
func (f *fixture) waitListenerSets(want map[string]int) map[string]gwv1.ListenerSet {
	f.t.Helper()
	var sets map[string]gwv1.ListenerSet
	waitFor(f.t, fmt.Sprintf("ListenerSets %v", want), func() string {
		sets = f.listenerSets()
		got := map[string]int{}
		for name, s := range sets {
			got[name] = len(s.Spec.Listeners)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("ListenerSets %v", got)
		}
		return ""
	}, 60*time.Second)
	return sets
}

func testGatewayAPIObjects(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	stopFirst := startOperator(t, env.Config)
	other := newNamespace(t, "other")
	ingressNS := newNamespace(t, "ingress")

	gw := f.gateway("public", "public")
	// HTTPS and plain HTTP (two listeners per hostname), the TLS Secret in another namespace.
	f.useGatewayAPI(gw.Name, func(s *routingv1alpha1.GatewaySpec) {
		s.PlainHTTP, s.IngressNamespace = routingv1alpha1.PlainHTTPServe, ingressNS
	})
	for _, ns := range []string{f.ns, other} {
		p := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Namespace: ns}, Spec: activeMode}
		require.NoError(t, env.Client.Create(f.ctx, p))
	}
	// 33 routes in one namespace: 66 listeners, past one ListenerSet's 64.
	for i := range 33 {
		f.route("", fmt.Sprintf("r%02d", i), fmt.Sprintf("svc%02d", i), gw.Name)
	}
	f.route(other, "api", "api", gw.Name)

	first, second, third := desired.ListenerSetName(gw.Name, f.ns, 1), desired.ListenerSetName(gw.Name, f.ns, 2), desired.ListenerSetName(gw.Name, other, 1)
	sets := f.waitListenerSets(map[string]int{first: 64, second: 2, third: 2})
	for _, l := range sets[third].Spec.Listeners {
		assert.Equal(t, map[string]string{"kubernetes.io/metadata.name": other}, l.AllowedRoutes.Namespaces.Selector.MatchLabels)
		if l.TLS != nil {
			assert.Equal(t, gwv1.Namespace(ingressNS), *l.TLS.CertificateRefs[0].Namespace)
		}
	}
	grant := &gwv1.ReferenceGrant{}
	waitFor(t, "the ReferenceGrant in the Secret's namespace", func() string { // written after the ListenerSets
		return errString(env.Client.Get(f.ctx, client.ObjectKey{Namespace: ingressNS, Name: "service-router." + f.gatewayNS + "." + gw.Name}, grant))
	})
	g := &gwv1.Gateway{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), g))
	assert.Equal(t, gwv1.ObjectName("istio"), g.Spec.GatewayClassName)
	assert.Equal(t, gwv1.NamespacesFromSame, *g.Spec.AllowedListeners.Namespaces.From)

	// No address yet: nothing published for the target hostname, and the Gateway says so.
	f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerAddressPending)
	assert.Empty(t, f.addressEndpoints())
	f.setGatewayAPIAddress(gw.Name, "10.20.30.40")
	target := "aks01-weu-public.example.com"
	f.waitAddressRecords("public", target, map[string][]string{"A": {"10.20.30.40"}}, "external-dns-weu")
	ready := f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	assert.Equal(t, "10.20.30.40", ready.Status.LoadBalancerIP)
	assert.EqualValues(t, 34, ready.Status.Hosts)
	f.waitRouteEndpoints(f.ns, "r00", f.hostname("svc00", "example.com"), target, "external-dns-weu")

	// Converged: the operator writes what the API server's defaults keep, so an operator restarted
	// against the converged cluster writes no Gateway API object.
	f.waitRoute(other, "api", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	stopFirst()
	counter := &writeCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = counter.wrap
	startOperator(t, cfg)
	time.Sleep(3 * time.Second) // the initial reconciles of every object; nothing is expected
	var apiWrites []string
	for _, w := range counter.list() {
		if strings.Contains(w, "/apis/"+gwv1.GroupName+"/") {
			apiWrites = append(apiWrites, w)
		}
	}
	assert.Empty(t, apiWrites, "a restarted operator rewrote converged Gateway API objects")

	// One more hostname: only its ListenerSet is written.
	before := resourceVersions(t, f.gatewayNS)
	f.route(other, "poke", "poke", gw.Name)
	f.waitListenerSets(map[string]int{first: 64, second: 2, third: 4})
	after := resourceVersions(t, f.gatewayNS)
	changed := []string{}
	for k, v := range after {
		if before[k] != v {
			changed = append(changed, k)
		}
	}
	assert.Equal(t, []string{"ListenerSet/" + third}, changed, "only the ListenerSet that gained a hostname was written")

	// Redirect: one HTTPS listener per hostname, a catch-all HTTP listener and the redirect route.
	f.useGatewayAPI(gw.Name, func(s *routingv1alpha1.GatewaySpec) { s.PlainHTTP = routingv1alpha1.PlainHTTPRedirectToHTTPS })
	// Each hostname stays in its ListenerSet (HTTPRoutes name it), now with one listener.
	f.waitListenerSets(map[string]int{first: 32, second: 1, third: 2})
	route := &gwv1.HTTPRoute{}
	waitFor(t, "the redirect HTTPRoute", func() string {
		if err := env.Client.Get(f.ctx, client.ObjectKey{Namespace: f.gatewayNS, Name: desired.RedirectRouteName(gw.Name)}, route); err != nil {
			return err.Error()
		}
		return ""
	})
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), g))
	assert.Len(t, g.Spec.Listeners, 2)

	// The Secret back in the Gateway's namespace: the ReferenceGrant goes. Deleting the Gateway
	// takes everything else (owned, garbage collected).
	f.useGatewayAPI(gw.Name, func(s *routingv1alpha1.GatewaySpec) { s.IngressNamespace = "" })
	waitGone(t, grant)
	f.useGatewayAPI(gw.Name, func(s *routingv1alpha1.GatewaySpec) { s.IngressNamespace = ingressNS })
	waitFor(t, "the ReferenceGrant again", func() string {
		return errString(env.Client.Get(f.ctx, client.ObjectKeyFromObject(grant), grant))
	})
	require.NoError(t, env.Client.Delete(f.ctx, gw))
	waitGone(t, grant)
	waitGone(t, g)
	waitFor(t, "no ListenerSet left", func() string {
		if sets := f.listenerSets(); len(sets) > 0 {
			return fmt.Sprintf("%d ListenerSets left", len(sets))
		}
		return ""
	}, 60*time.Second)
	// Every route has taken the deletion (no DNSEndpoint left) before the test ends and the
	// operator stops: controller-runtime v0.24.1's priority queue can deadlock when a manager
	// stops while items are being handed to its workers (kubernetes-sigs/controller-runtime#3538).
	waitFor(t, "the routes to withdraw their records", func() string {
		if uids := endpointUIDs(t, f.ns, other); len(uids) > 0 {
			return fmt.Sprintf("%d DNSEndpoints left", len(uids))
		}
		return ""
	}, 60*time.Second)
}

func errString(err error) string {
	if err != nil {
		return err.Error()
	}
	return ""
}

// resourceVersions lists kind/name → resourceVersion of the Gateway API objects of a namespace.
func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	gws := &gwv1.GatewayList{}
	require.NoError(t, env.Client.List(context.Background(), gws, client.InNamespace(ns)))
	for _, g := range gws.Items {
		out["Gateway/"+g.Name] = g.ResourceVersion
	}
	sets := &gwv1.ListenerSetList{}
	require.NoError(t, env.Client.List(context.Background(), sets, client.InNamespace(ns)))
	for _, s := range sets.Items {
		out["ListenerSet/"+s.Name] = s.ResourceVersion
	}
	routes := &gwv1.HTTPRouteList{}
	require.NoError(t, env.Client.List(context.Background(), routes, client.InNamespace(ns)))
	for _, r := range routes.Items {
		out["HTTPRoute/"+r.Name] = r.ResourceVersion
	}
	return out
}

func endpointUIDs(t *testing.T, namespaces ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ns := range namespaces {
		list := &externaldnsv1alpha1.DNSEndpointList{}
		require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
		for _, ep := range list.Items {
			out[ep.Namespace+"/"+ep.Name] = string(ep.UID)
		}
	}
	return out
}

func testGatewayAPISwitch(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)
	f.ingressService(lbIP...)
	gw := f.gateway("internal", "internal")
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	apiHost, target := f.hostname("api", "example.com"), "aks01-weu-internal.example.com"
	f.waitRouteEndpoints(f.ns, "api-route", apiHost, target, "external-dns-weu")
	f.waitIstioHosts(gw.Name, istioHost(f.ns, apiHost))
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu")
	uids := endpointUIDs(t, f.ns, f.gatewayNS)
	require.Len(t, uids, 2)
	routeDeletions, addressDeletions := watchEndpointDeletions(t, f.ns), watchEndpointDeletions(t, f.gatewayNS)

	// Classic → Gateway API. Until the new Gateway reports an address, the records stay as they are.
	f.useGatewayAPI(gw.Name, nil)
	listenerSet := desired.ListenerSetName(gw.Name, f.ns, 1)
	f.waitListenerSets(map[string]int{listenerSet: 1})
	f.waitIstioHosts(gw.Name) // removed once the Gateway API objects are written
	f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerAddressPending)
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu")
	f.setGatewayAPIAddress(gw.Name, "10.99.0.1")
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.99.0.1"}}, "external-dns-weu")
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	f.waitRouteEndpoints(f.ns, "api-route", apiHost, target, "external-dns-weu")
	assert.Equal(t, uids, endpointUIDs(t, f.ns, f.gatewayNS), "the same DNSEndpoints, updated in place")

	// Gateway API → classic: the Istio Gateway comes back, the Gateway API objects go, no orphan.
	f.useGatewayAPI(gw.Name, func(s *routingv1alpha1.GatewaySpec) { s.Backend = routingv1alpha1.BackendIstioGateway })
	f.waitIstioHosts(gw.Name, istioHost(f.ns, apiHost))
	f.waitListenerSets(map[string]int{})
	waitGone(t, &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: f.gatewayNS, Name: gw.Name}})
	f.waitAddressRecords("internal", target, map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu")
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	assert.Equal(t, uids, endpointUIDs(t, f.ns, f.gatewayNS))
	assert.Empty(t, append(routeDeletions.names(), addressDeletions.names()...), "no DNSEndpoint was deleted during either switch")
}

// The tenant has only the built-in edit role in its namespace (plus the shipped editor role).
func testGatewayAPITenant(t *testing.T) {
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, env.Config)
	ctx := context.Background()
	tenantNS := newNamespace(t, "tenant")
	user := "gwapi-tenant"
	tenant := namespaceEditor(t, user, tenantNS)

	gw := f.gateway("shared", "shared")
	f.useGatewayAPI(gw.Name, nil)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	apiHost := f.hostname("api", "example.com")
	own := desired.ListenerSetName(gw.Name, f.ns, 1)
	sets := f.waitListenerSets(map[string]int{own: 1})
	f.setGatewayAPIAddress(gw.Name, "10.1.1.1")
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)

	// What edit grants on gateway.networking.k8s.io: nothing. Kubernetes' edit role aggregates
	// only roles labelled for it, and the Gateway API's CRDs ship none.
	for _, resource := range []string{"gateways", "listenersets", "httproutes", "referencegrants"} {
		for _, ns := range []string{tenantNS, f.gatewayNS} {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: gwv1.GroupName, Resource: resource}}}
			require.NoError(t, env.Client.Create(ctx, review))
			assert.False(t, review.Status.Allowed, "edit in %s must not grant creating %s in %s", tenantNS, resource, ns)
		}
	}

	changes := recordChanges(t, f.gatewayNS, f.ns)
	generated := resourceVersions(t, f.gatewayNS)
	// A listener for another team's hostname, beside the platform's Gateway: forbidden.
	host := gwv1.Hostname(apiHost)
	squat := &gwv1.ListenerSet{ObjectMeta: metav1.ObjectMeta{Name: "squat", Namespace: f.gatewayNS},
		Spec: gwv1.ListenerSetSpec{ParentRef: gwv1.ParentGatewayReference{Name: gwv1.ObjectName(gw.Name)},
			Listeners: []gwv1.ListenerEntry{{Name: "squat", Hostname: &host, Port: 80, Protocol: gwv1.HTTPProtocolType}}}}
	requireForbidden(t, tenant.Create(ctx, squat), "creating a ListenerSet in the gateway namespace")
	// Changing the operator's ListenerSet to admit the tenant's namespace: forbidden.
	mine := sets[own]
	mine.Spec.Listeners[0].AllowedRoutes.Namespaces.Selector.MatchLabels = map[string]string{"kubernetes.io/metadata.name": tenantNS}
	requireForbidden(t, tenant.Update(ctx, &mine), "updating the operator's ListenerSet")
	// Even where a platform lets teams write Gateway API objects in their own namespaces, a
	// ListenerSet there cannot attach: the platform's Gateway admits ListenerSets from its own
	// namespace only (allowedListeners Same; the attachment is the implementation's to refuse).
	grantGatewayAPI(t, user, tenantNS)
	squat.Namespace = tenantNS
	ns := gwv1.Namespace(f.gatewayNS)
	squat.Spec.ParentRef.Namespace = &ns
	require.NoError(t, tenant.Create(ctx, squat), "the CRDs accept the object; the binding is refused by allowedListeners")
	g := &gwv1.Gateway{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(gw), g))
	assert.Equal(t, gwv1.NamespacesFromSame, *g.Spec.AllowedListeners.Namespaces.From)
	// A ServiceRoute for the other team's application publishes nothing and adds no listener.
	annotateNamespace(t, f.ns, "router.io/applications", f.app)
	stolen := &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: "stolen", Namespace: tenantNS},
		Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: gw.Name, GatewayNamespace: f.gatewayNS, Environment: "dev", Application: f.app}}
	require.NoError(t, tenant.Create(ctx, stolen))
	waitRouteReason(t, tenant, tenantNS, "stolen", routingv1alpha1.ReasonApplicationNotAllowed)
	changes.requireNoChange(quietPeriod, f.gatewayNS, f.ns)
	assert.Equal(t, generated, resourceVersions(t, f.gatewayNS), "the Gateway API objects the operator generated are unchanged")
	for name := range f.listenerSets() {
		assert.NotEqual(t, desired.ListenerSetName(gw.Name, tenantNS, 1), name, "no ListenerSet for the tenant's namespace")
	}
	igs := &istionetworkingv1.GatewayList{}
	require.NoError(t, env.Client.List(ctx, igs, client.InNamespace(f.gatewayNS)))
	assert.Empty(t, igs.Items)
}

// grantGatewayAPI lets user write Gateway API objects in namespace, as a platform might.
func grantGatewayAPI(t *testing.T, user, namespace string) {
	t.Helper()
	ctx := context.Background()
	grantWrite(t, user, namespace, "gateway-api-writer", gwv1.GroupName, "listenersets", "httproutes", "grpcroutes")
	waitFor(t, "the Gateway API grant", func() string {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Group: gwv1.GroupName, Resource: "listenersets"}}}
		if err := env.Client.Create(ctx, review); err != nil {
			return err.Error()
		}
		if !review.Status.Allowed {
			return "not yet"
		}
		return ""
	})
}

// TestGatewayAPI_WithoutItsCRDsTheIstioGatewayStays: a Gateway switched to the GatewayAPI backend
// in a cluster without the Gateway API keeps its classic Istio Gateway (same UID, same hosts) and
// says why; once the CRDs are installed the same operator process generates the Gateway API
// objects, and only then removes the Istio Gateway.
func TestGatewayAPI_WithoutItsCRDsTheIstioGatewayStays(t *testing.T) {
	own := startControlPlane(t, testenv.Options{})
	useControlPlane(t, own)
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu")
	startOperator(t, own.Config)
	gw := f.gateway("internal", "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	host := istioHost(f.ns, f.hostname("api", "example.com"))
	before := f.waitIstioHosts(gw.Name, host)
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)

	f.useGatewayAPI(gw.Name, nil)
	f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonGatewayAPINotInstalled)
	time.Sleep(quietPeriod)
	kept := f.waitIstioHosts(gw.Name, host)
	assert.Equal(t, before.UID, kept.UID)
	assert.Equal(t, before.ResourceVersion, kept.ResourceVersion, "the Istio Gateway is left as it was")

	require.NoError(t, own.InstallGatewayAPICRDs())
	f.waitListenerSets(map[string]int{desired.ListenerSetName(gw.Name, f.ns, 1): 1})
	f.waitIstioHosts(gw.Name)
	f.waitGateway(gw.Name, routingv1alpha1.PhasePending, routingv1alpha1.ReasonLoadBalancerAddressPending)
	f.waitAddressRecords("internal", "aks01-weu-internal.example.com", map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu")
}
