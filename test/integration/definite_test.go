package integration

// Everyday edits by a platform or application team must not take a DNS record or an Istio host
// away: the operator removes what it generated only on a definite answer that it is no longer
// wanted. Each test here is one such edit (issue 9), watched through the whole transition by an
// outageRecorder, and ends with the input restored and the system converged as before.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/testenv"
)

// Reasons the operator reports when an optional CRD is missing.
const (
	reasonIstioNotInstalled       = routingv1alpha1.ReasonIstioNotInstalled
	reasonExternalDNSNotInstalled = clusterv1alpha1.ReasonExternalDNSNotInstalled
)

// observedCacheSyncTimeout is how long the observed operator's controllers wait for their watches
// to sync before controller-runtime stops the controller and, with it, the manager (its default,
// which the shipped operator keeps, is two minutes).
const observedCacheSyncTimeout = 20 * time.Second

const (
	definiteGateway = "default-gateway"
	definiteTarget  = "aks01-weu-internal.example.com"
)

// publishTwoRoutes builds the everyday state of a WEU cluster: controllers weu and neu, a Gateway
// with its ingress Service, the Active DNSPolicy makePolicy creates, and two published routes.
func (f *fixture) publishTwoRoutes(makePolicy func()) {
	f.t.Helper()
	gw := f.gateway(definiteGateway, "internal")
	f.ingressService(lbIP...)
	makePolicy()
	f.route("", "api-route", "api", gw.Name)
	f.route("", "web-route", "web", gw.Name)
	f.waitPublished()
}

// waitPublished waits until the operator has observed the current singletons and everything of
// publishTwoRoutes is published: both CNAMEs, both hosts on the Istio Gateway, the address records
// in both zones, every status Ready.
func (f *fixture) waitPublished() {
	f.t.Helper()
	waitReady(f.t, &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName}}, metav1.ConditionTrue, clusterv1alpha1.ReasonValidationSucceeded)
	waitReady(f.t, &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName}}, metav1.ConditionTrue, clusterv1alpha1.ReasonConfigurationValid)
	for _, service := range []string{"api", "web"} {
		f.waitRouteEndpoints(f.ns, service+"-route", f.hostname(service, "example.com"), definiteTarget, "external-dns-weu")
		f.waitRoute(f.ns, service+"-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	}
	f.waitIstioHosts(definiteGateway, istioHost(f.ns, f.hostname("api", "example.com")), istioHost(f.ns, f.hostname("web", "example.com")))
	f.waitAddressRecords("internal", definiteTarget, map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu", "external-dns-neu")
	f.waitGateway(definiteGateway, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
}

// recordOutages watches the fixture's route records, address records and Istio Gateway;
// readyRoutes also requires the routes to stay Ready=True.
func (f *fixture) recordOutages(readyRoutes bool) *outageRecorder {
	f.t.Helper()
	scope := watchScope{endpointNamespaces: []string{f.ns, f.gatewayNS}, istioNamespaces: []string{f.gatewayNS}}
	if readyRoutes {
		scope.readyRoutesNamespace = f.ns
	}
	return recordOutages(f.t, scope)
}

func (f *fixture) deleteDNSConfiguration() {
	f.t.Helper()
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName}}
	require.NoError(f.t, env.Client.Delete(f.ctx, cfg))
	waitGone(f.t, cfg)
}

func (f *fixture) namedPolicy(name string, spec routingv1alpha1.DNSPolicySpec) *routingv1alpha1.DNSPolicy {
	f.t.Helper()
	p := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: spec}
	require.NoError(f.t, env.Client.Create(f.ctx, p))
	return p
}

// waitReady waits until obj's Ready condition has status and reason and both the status and the
// condition were computed for obj's current generation (so the status write succeeded).
func waitReady(t testing.TB, obj client.Object, status metav1.ConditionStatus, reason string) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	waitFor(t, fmt.Sprintf("%T %s to be Ready=%s %s", obj, key, status, reason), func() string {
		if err := env.Client.Get(context.Background(), key, obj); err != nil {
			return err.Error()
		}
		conditions, observed := statusOf(obj)
		ready := meta.FindStatusCondition(conditions, "Ready")
		switch generation := obj.GetGeneration(); {
		case ready == nil:
			return "no Ready condition"
		case ready.Status != status || ready.Reason != reason:
			return fmt.Sprintf("Ready=%s %s: %s", ready.Status, ready.Reason, ready.Message)
		case observed != generation || ready.ObservedGeneration != generation:
			return fmt.Sprintf("status.observedGeneration %d, Ready observedGeneration %d, generation %d", observed, ready.ObservedGeneration, generation)
		}
		return ""
	})
}

func statusOf(obj client.Object) ([]metav1.Condition, int64) {
	switch o := obj.(type) {
	case *routingv1alpha1.ServiceRoute:
		return o.Status.Conditions, o.Status.ObservedGeneration
	case *routingv1alpha1.Gateway:
		return o.Status.Conditions, o.Status.ObservedGeneration
	case *routingv1alpha1.DNSPolicy:
		return o.Status.Conditions, o.Status.ObservedGeneration
	case *clusterv1alpha1.ClusterIdentity:
		return o.Status.Conditions, o.Status.ObservedGeneration
	case *clusterv1alpha1.DNSConfiguration:
		return o.Status.Conditions, o.Status.ObservedGeneration
	}
	panic(fmt.Sprintf("no status accessor for %T", obj))
}

// Case 1 of issue 9: `kubectl delete dnsconfiguration dns-config` followed by a re-apply, or a
// GitOps tool replacing it, is not a decision to unpublish anything.
func TestDefinite_DNSConfigurationReplacedKeepsRecordsAndHosts(t *testing.T) {
	keepSingletons(t)
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	startOperator(t, env.Config)
	f.publishTwoRoutes(func() { f.policy(activeMode) })

	for _, gap := range []time.Duration{0, 2500 * time.Millisecond} {
		rec := f.recordOutages(false)
		f.deleteDNSConfiguration()
		time.Sleep(gap) // the recorder's watches see whatever the operator does meanwhile
		f.setControllers("weu", "neu")
		f.waitPublished()
		rec.stop(fmt.Sprintf("dns-config deleted and re-created %s later", gap))
	}
}

// Case 2: an operator (re)starting while dns-config is absent, as after a restore from backup in
// the wrong order, has never seen the configuration and must not read its absence as "no
// controller is wanted".
func TestDefinite_OperatorStartingWithoutDNSConfigurationKeepsRecordsAndHosts(t *testing.T) {
	keepSingletons(t)
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	stop := startOperator(t, env.Config)
	f.publishTwoRoutes(func() { f.policy(activeMode) })
	stop()

	rec := f.recordOutages(false)
	f.deleteDNSConfiguration()
	startOperator(t, env.Config)
	// A restarted operator reconciles every object right after its caches sync; give it the time
	// to act on the missing configuration (the watches, not this pause, see what it does).
	time.Sleep(5 * time.Second)
	f.setControllers("weu", "neu")
	f.waitPublished()
	rec.stop("operator started without dns-config, then dns-config re-created")
}

// Case 3: renaming a DNSPolicy the GitOps way (create the new one, then delete the old one).
// While both exist the younger reports DuplicatePolicy; once the older is gone that status is
// stale, not a definite "this namespace is inactive".
func TestDefinite_DNSPolicyRenamedKeepsRecordsAndHosts(t *testing.T) {
	keepSingletons(t)
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	startOperator(t, env.Config)
	old := &routingv1alpha1.DNSPolicy{}
	f.publishTwoRoutes(func() { old = f.namedPolicy("myapp-dns", activeMode) })

	rec := f.recordOutages(false)
	// creationTimestamp has a resolution of one second: make the new policy visibly younger.
	time.Sleep(1100 * time.Millisecond)
	renamed := f.namedPolicy("myapp-dns-v2", activeMode)
	waitReady(t, renamed, metav1.ConditionFalse, routingv1alpha1.ReasonDuplicatePolicy)
	require.NoError(t, env.Client.Delete(f.ctx, old))
	waitReady(t, renamed, metav1.ConditionTrue, routingv1alpha1.ReasonPolicyActive)
	f.waitPublished()
	rec.stop("DNSPolicy myapp-dns renamed to myapp-dns-v2 (create the new, delete the old)")
}

// Case 4: an edit of the DNSPolicy that changes nothing it decides (Active mode with sourceRegion
// equal to the cluster's own region) leaves every route Ready and the Istio Gateway in place.
func TestDefinite_NoOpDNSPolicyEditKeepsRoutesReady(t *testing.T) {
	keepSingletons(t)
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	startOperator(t, env.Config)
	f.publishTwoRoutes(func() { f.policy(activeMode) })

	rec := f.recordOutages(true)
	f.updatePolicy(routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeActive, SourceRegion: "weu"})
	f.waitPolicy(routingv1alpha1.PhaseActive, routingv1alpha1.ReasonPolicyActive)
	f.waitPublished()
	f.updatePolicy(activeMode)
	f.waitPolicy(routingv1alpha1.PhaseActive, routingv1alpha1.ReasonPolicyActive)
	f.waitPublished()
	rec.stop("DNSPolicy given sourceRegion weu (the cluster's own) in Active mode, then without it again")
}

// Case 5: deleting and re-applying the ClusterIdentity a second or two apart (a GitOps replace, a
// manual fix) does not remove the Istio Gateway, any host or any record.
func TestDefinite_ClusterIdentityReappliedKeepsIstioGatewayAndRecords(t *testing.T) {
	keepSingletons(t)
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	startOperator(t, env.Config)
	f.publishTwoRoutes(func() { f.policy(activeMode) })

	for _, gap := range []time.Duration{time.Second, 2 * time.Second} {
		rec := f.recordOutages(false)
		f.deleteIdentity()
		waitGone(t, &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName}})
		time.Sleep(gap)
		f.setIdentity(weuIdentity())
		f.waitPublished()
		rec.stop(fmt.Sprintf("cluster-identity deleted and re-applied %s later", gap))
	}
}

// Case 6: a ClusterIdentity whose domain is valid and leaves room for the gateway target hostname,
// but makes one route's hostname longer than 253 characters. That route says so in its status
// (the write succeeds), its name is never published, the other route follows the new domain, and
// the settled route causes no further writes.
func TestDefinite_UnpublishableHostnameIsReportedNeverPublishedAndSettles(t *testing.T) {
	keepSingletons(t)
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	counter := &writeCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = counter.wrap
	startOperator(t, cfg)

	gw := f.gateway(definiteGateway, "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	// The longest service name admission accepts with this environment and application: the
	// hostname's first label is exactly 63 characters.
	longService := strings.Repeat("s", 56-len("dev")-len(f.app))
	f.route("", "api-route", "api", gw.Name)
	f.route("", "long-route", longService, gw.Name)
	f.waitRouteEndpoints(f.ns, "long-route", f.hostname(longService, "example.com"), definiteTarget, "external-dns-weu")
	f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.com")), istioHost(f.ns, f.hostname(longService, "example.com")))

	domain := longDomain(200)
	invalid, valid := f.hostname(longService, domain), f.hostname("api", domain)
	target := "aks01-weu-internal." + domain
	require.Len(t, invalid, 264)
	require.LessOrEqual(t, len(valid), 253)
	require.LessOrEqual(t, len(target), 253)

	rec := recordOutages(t, watchScope{endpointNamespaces: []string{f.ns, f.gatewayNS}, istioNamespaces: []string{f.gatewayNS},
		unpublishable: []string{invalid}, namesMayChange: true})
	f.setIdentity(clusterv1alpha1.ClusterIdentitySpec{Region: "weu", Cluster: "aks01", Domain: domain, EnvironmentLetter: "d"})

	long := &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: "long-route", Namespace: f.ns}}
	waitReady(t, long, metav1.ConditionFalse, routingv1alpha1.ReasonInvalidHostname)
	assert.NotEqual(t, invalid, long.Status.Hostname, "status.hostname shows a name that cannot be published")
	f.waitRouteEndpoints(f.ns, "api-route", valid, target, "external-dns-weu")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitIstioHosts(gw.Name, istioHost(f.ns, valid))
	waitFor(t, "the invalid route to have no DNSEndpoint", func() string {
		if eps := routeEndpoints(t, f.ns, "long-route"); len(eps) > 0 {
			return fmt.Sprintf("%d DNSEndpoint(s), first %s with %d record(s)", len(eps), eps[0].Name, len(eps[0].Spec.Endpoints))
		}
		return ""
	})
	rec.stop("cluster domain making long-route's hostname 264 characters long")

	// Settled: no retry loop, no status rewrite, no event storm.
	time.Sleep(time.Second)
	before := len(counter.list())
	time.Sleep(5 * time.Second)
	var writes []string
	for _, w := range counter.list()[before:] {
		if !strings.Contains(w, "/namespaces/") || strings.Contains(w, "/namespaces/"+f.ns+"/") || strings.Contains(w, "/namespaces/"+f.gatewayNS+"/") {
			writes = append(writes, w)
		}
	}
	assert.Empty(t, writes, "the operator kept writing for 5 s after the invalid route settled")

	f.setIdentity(weuIdentity())
	f.waitRouteEndpoints(f.ns, "api-route", f.hostname("api", "example.com"), definiteTarget, "external-dns-weu")
	f.waitRouteEndpoints(f.ns, "long-route", f.hostname(longService, "example.com"), definiteTarget, "external-dns-weu")
	f.waitRoute(f.ns, "long-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.com")), istioHost(f.ns, f.hostname(longService, "example.com")))
}

// outliveCacheSyncTimeout waits until the observed operator's cache-sync timeout has passed since
// the operator started, failing as soon as the operator exits.
func outliveCacheSyncTimeout(t testing.TB, op *runningOperator, started time.Time) {
	t.Helper()
	until := started.Add(observedCacheSyncTimeout + 15*time.Second)
	for time.Now().Before(until) {
		if problem := op.stillRunning(); problem != "" {
			t.Fatalf("%s after %s", problem, time.Since(started).Round(time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Case 7a: a cluster without Istio (or with Istio being reinstalled). The operator stays up and
// publishes DNS; each Gateway says why it generates no Istio Gateway; once the Istio CRDs are
// installed, the same operator process generates the Istio Gateway.
func TestDefinite_WithoutIstioCRDsPublishesDNSAndGeneratesOnceInstalled(t *testing.T) {
	own := startControlPlane(t, testenv.Options{SkipIstioCRDs: true})
	useControlPlane(t, own)
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	started := time.Now()
	op := startObservedOperator(t, own.Config)

	gw := f.gateway(definiteGateway, "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	f.waitRouteEndpoints(f.ns, "api-route", f.hostname("api", "example.com"), definiteTarget, "external-dns-weu")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	waitReady(t, gw, metav1.ConditionFalse, reasonIstioNotInstalled)

	outliveCacheSyncTimeout(t, op, started)
	f.route("", "web-route", "web", gw.Name)
	f.waitRouteEndpoints(f.ns, "web-route", f.hostname("web", "example.com"), definiteTarget, "external-dns-weu")
	f.waitRoute(f.ns, "web-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	require.Empty(t, op.stillRunning())

	require.NoError(t, own.InstallIstioCRDs())
	f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.com")), istioHost(f.ns, f.hostname("web", "example.com")))
	f.waitGateway(gw.Name, routingv1alpha1.PhaseActive, routingv1alpha1.ReasonGatewayCreated)
	require.Empty(t, op.stillRunning())
}

// Case 7b: a cluster where ExternalDNS (its DNSEndpoint CRD) is not installed yet. The operator
// stays up and says so on the DNSConfiguration; once the CRD is installed, the same operator
// process publishes the routes.
func TestDefinite_WithoutDNSEndpointCRDReportsAndPublishesOnceInstalled(t *testing.T) {
	own := startControlPlane(t, testenv.Options{SkipExternalDNSCRDs: true})
	useControlPlane(t, own)
	f := newFixture(t)
	f.setIdentity(weuIdentity())
	f.setControllers("weu", "neu")
	started := time.Now()
	op := startObservedOperator(t, own.Config)

	gw := f.gateway(definiteGateway, "internal")
	f.ingressService(lbIP...)
	f.policy(activeMode)
	f.route("", "api-route", "api", gw.Name)
	dnsConfig := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName}}
	waitReady(t, dnsConfig, metav1.ConditionFalse, reasonExternalDNSNotInstalled)

	outliveCacheSyncTimeout(t, op, started)
	require.NoError(t, own.InstallExternalDNSCRDs())
	installed := time.Now()
	f.waitRouteEndpoints(f.ns, "api-route", f.hostname("api", "example.com"), definiteTarget, "external-dns-weu")
	// INSTALLATION.md: it starts using the API within 10 seconds of the CRD being installed (it
	// looks every apiPollInterval); the route's endpoints follow within a reconcile, to which a
	// loaded machine may add a few seconds.
	published := time.Since(installed)
	t.Logf("the route's DNSEndpoint came %s after the CRD was installed", published.Round(100*time.Millisecond))
	assert.LessOrEqual(t, published, 10*time.Second+5*time.Second, "the operator uses the DNSEndpoint API within 10 s of its CRD's installation")
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)
	f.waitAddressRecords("internal", definiteTarget, map[string][]string{"A": {"10.123.45.67"}}, "external-dns-weu", "external-dns-neu")
	f.waitIstioHosts(gw.Name, istioHost(f.ns, f.hostname("api", "example.com")))
	waitReady(t, dnsConfig, metav1.ConditionTrue, clusterv1alpha1.ReasonConfigurationValid)
	require.Empty(t, op.stillRunning())
}
