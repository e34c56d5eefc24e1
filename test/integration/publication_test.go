package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/testdns"
	"github.com/service-router/service-router-operator/internal/verify"
)

// fastVerification checks changes every 100 ms at first and settled records every second, so
// that the tests see several settled checks quickly.
var fastVerification = verify.Settings{FastInterval: 100 * time.Millisecond, SettledInterval: time.Second, FailuresBeforeUnreachable: 3, SummaryInterval: time.Second}

// startZone starts an authoritative DNS server standing in for one regional zone.
func startZone(t *testing.T) *testdns.Server {
	t.Helper()
	s, err := testdns.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// setVerifiedControllers replaces the DNSConfiguration: one controller per region, verified
// against the name server given for it ("" for none).
func (f *fixture) setVerifiedControllers(regions []string, nameservers map[string]string) {
	f.t.Helper()
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName}}
	_, err := createOrUpdate(f.ctx, cfg, func() error {
		cfg.Spec.ExternalDNSControllers = nil
		for _, r := range regions {
			c := clusterv1alpha1.ExternalDNSController{Name: "external-dns-" + r, Region: r}
			if ns := nameservers[r]; ns != "" {
				c.Verification = &clusterv1alpha1.ZoneVerification{Nameservers: []string{ns}, Timeout: &metav1.Duration{Duration: 300 * time.Millisecond}}
			}
			cfg.Spec.ExternalDNSControllers = append(cfg.Spec.ExternalDNSControllers, c)
		}
		return nil
	})
	require.NoError(f.t, err)
}

// setFailover gives the controller of region failover settings.
func (f *fixture) setFailover(region string, settings *clusterv1alpha1.ZoneFailover) {
	f.updateController(region, func(c *clusterv1alpha1.ExternalDNSController) { c.Failover = settings })
}

// setResolvers makes the zone of region be checked through the recursive resolver at addr.
func (f *fixture) setResolvers(region, addr string) {
	f.updateController(region, func(c *clusterv1alpha1.ExternalDNSController) {
		c.Verification = &clusterv1alpha1.ZoneVerification{Resolvers: []string{addr}, Timeout: &metav1.Duration{Duration: 300 * time.Millisecond}}
	})
}

// updateController changes the DNSConfiguration's controller of region.
func (f *fixture) updateController(region string, change func(*clusterv1alpha1.ExternalDNSController)) {
	f.t.Helper()
	require.NoError(f.t, retryOnConflict(func() error {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		if err := env.Client.Get(f.ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg); err != nil {
			return err
		}
		for i := range cfg.Spec.ExternalDNSControllers {
			if cfg.Spec.ExternalDNSControllers[i].Region == region {
				change(&cfg.Spec.ExternalDNSControllers[i])
			}
		}
		return env.Client.Update(f.ctx, cfg)
	}))
}

// zoneStates renders zones as "controller=State" sorted, e.g. "external-dns-neu=Pending external-dns-weu=Published".
func zoneStates(zones []routingv1alpha1.ZoneStatus) string {
	var out []string
	for _, z := range zones {
		out = append(out, z.Controller+"="+string(z.State))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// waitPublication waits until obj (a ServiceRoute or Gateway) shows the zone states, the
// PUBLISHED value and the Published condition reason, and returns its status fields.
func (f *fixture) waitPublication(obj client.Object, states, published, reason string) ([]routingv1alpha1.ZoneStatus, *metav1.Condition) {
	f.t.Helper()
	var zones []routingv1alpha1.ZoneStatus
	var cond *metav1.Condition
	waitFor(f.t, fmt.Sprintf("%T %s zones %q, published %q, Published reason %s", obj, obj.GetName(), states, published, reason), func() string {
		if err := env.Client.Get(f.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err.Error()
		}
		var got string
		var conditions []metav1.Condition
		switch o := obj.(type) {
		case *routingv1alpha1.ServiceRoute:
			zones, got, conditions = o.Status.Zones, o.Status.Published, o.Status.Conditions
		case *routingv1alpha1.Gateway:
			zones, got, conditions = o.Status.Zones, o.Status.Published, o.Status.Conditions
		}
		cond = meta.FindStatusCondition(conditions, routingv1alpha1.ConditionPublished)
		switch {
		case cond == nil:
			return "no Published condition"
		case zoneStates(zones) != states || got != published || cond.Reason != reason:
			return fmt.Sprintf("zones %q, published %q, Published=%s %s: %s", zoneStates(zones), got, cond.Status, cond.Reason, cond.Message)
		case cond.ObservedGeneration != obj.GetGeneration():
			return fmt.Sprintf("Published observedGeneration %d, generation %d", cond.ObservedGeneration, obj.GetGeneration())
		}
		return ""
	})
	return zones, cond
}

// markProcessed does what ExternalDNS's CRD source does when a synchronization reads a
// DNSEndpoint: status.observedGeneration = metadata.generation.
func markProcessed(t *testing.T, ns, name string) {
	t.Helper()
	require.NoError(t, retryOnConflict(func() error {
		ep := &externaldnsv1alpha1.DNSEndpoint{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ep); err != nil {
			return err
		}
		ep.Status.ObservedGeneration = ep.Generation
		return env.Client.Status().Update(context.Background(), ep)
	}))
}

func zone(zones []routingv1alpha1.ZoneStatus, controller string) routingv1alpha1.ZoneStatus {
	for _, z := range zones {
		if z.Controller == controller {
			return z
		}
	}
	return routingv1alpha1.ZoneStatus{}
}

// TestPublication_RouteFollowsWhatEachZoneAnswers plays ExternalDNS by hand against two
// authoritative DNS servers (weu and neu zones): the route is Pending until each zone answers
// the CNAME and the gateway address, Published when both do, Drifted when a zone answers
// another target, Unreachable when a name server stops answering, and Unknown once a zone
// without verification settings is added. A settled route and gateway are checked again and
// again without a single status write, also by a new leader.
func TestPublication_RouteFollowsWhatEachZoneAnswers(t *testing.T) {
	f := newFixture(t)
	weu, neu := startZone(t), startZone(t)
	f.setIdentity(weuIdentity())
	f.setVerifiedControllers([]string{"weu", "neu"}, map[string]string{"weu": weu.Addr, "neu": neu.Addr})
	stop := startOperatorWith(t, env.Config, operatorOptions{verification: fastVerification})

	gw := f.gateway("default-gateway", "internal")
	f.ingressService(corev1.LoadBalancerIngress{IP: "10.1.2.3"})
	f.policy(routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyModeRegionBound, SourceRegion: "weu"})
	route := f.route("", "api-route", "api", gw.Name)
	host, target := f.hostname("api", "example.com"), "aks01-weu-internal.example.com"
	eps := f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu", "external-dns-neu")
	for _, ep := range eps {
		assert.Equal(t, endpoint.TTL(300), ep.Spec.Endpoints[0].RecordTTL, "records carry the default TTL")
	}
	f.waitRoute(f.ns, "api-route", routingv1alpha1.PhaseActive, routingv1alpha1.ReasonReconciliationSucceeded)

	// Nothing is in the zones yet, and ExternalDNS has not read the DNSEndpoints. A zone not
	// checked yet is Pending too ("not checked yet"): the first answer, NXDOMAIN, is waited for.
	zones, cond := f.waitPublication(route, "external-dns-neu=Pending external-dns-weu=Pending", "0/2", routingv1alpha1.ReasonZonesPending)
	waitFor(t, "the weu zone's first answer", func() string {
		zones, cond = f.waitPublication(route, "external-dns-neu=Pending external-dns-weu=Pending", "0/2", routingv1alpha1.ReasonZonesPending)
		if answer := zone(zones, "external-dns-weu").Answer; answer != "NXDOMAIN" {
			return "answer " + answer
		}
		return ""
	})
	assert.False(t, zone(zones, "external-dns-weu").Processed)
	assert.Contains(t, cond.Message, "not processed by ExternalDNS yet")

	// "ExternalDNS" for weu reads its DNSEndpoints and writes the zone.
	markProcessed(t, f.ns, "api-route-external-dns-weu")
	weu.Set(host+". 300 IN CNAME "+target+".", target+". 300 IN A 10.1.2.3")
	zones, _ = f.waitPublication(route, "external-dns-neu=Pending external-dns-weu=Published", "1/2", routingv1alpha1.ReasonZonesPending)
	assert.Equal(t, "CNAME "+target+". → A 10.1.2.3", zone(zones, "external-dns-weu").Answer)
	assert.True(t, zone(zones, "external-dns-weu").Processed)
	require.NotNil(t, zone(zones, "external-dns-weu").LastChecked)

	// neu too: every zone answers.
	markProcessed(t, f.ns, "api-route-external-dns-neu")
	neu.Set(host+". 300 IN CNAME "+target+".", target+". 300 IN A 10.1.2.3")
	f.waitPublication(route, "external-dns-neu=Published external-dns-weu=Published", "2/2", routingv1alpha1.ReasonZonesPublished)
	f.waitPublication(&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: f.gatewayNS, Name: gw.Name}},
		"external-dns-neu=Published external-dns-weu=Published", "2/2", routingv1alpha1.ReasonZonesPublished)
	waitEvent(t, route, routingv1alpha1.ReasonZonesPublished)

	t.Run("a settled route and gateway cause no status write", func(t *testing.T) {
		assertNoStatusWrites(t, f, route, gw, weu)
	})

	t.Run("a new leader keeps the status it finds", func(st *testing.T) {
		stop()
		startOperatorWith(t, env.Config, operatorOptions{verification: fastVerification}) // runs until the whole test ends
		assertNoStatusWrites(st, f, route, gw, weu)
	})

	waitVerificationSummary(t, f, "external-dns-weu 1/1 published; external-dns-neu 1/1 published")

	t.Run("drift in one zone", func(t *testing.T) {
		neu.Set(host + ". 300 IN CNAME aks02-neu-internal.example.com.") // a name the zone does not have: NXDOMAIN with the CNAME
		zones, cond := f.waitPublication(route, "external-dns-neu=Drifted external-dns-weu=Published", "1/2", routingv1alpha1.ReasonZonesDrifted)
		assert.Equal(t, "CNAME aks02-neu-internal.example.com.", zone(zones, "external-dns-neu").Answer)
		assert.Contains(t, cond.Message, "external-dns-neu (CNAME aks02-neu-internal.example.com.)")
		waitEvent(t, route, routingv1alpha1.ReasonZonesDrifted) // a Warning event tells kubectl describe
		ready := meta.FindStatusCondition(route.Status.Conditions, "Ready")
		assert.Equal(t, metav1.ConditionTrue, ready.Status, "Ready (the DNSEndpoints are written) is separate from Published")
		waitVerificationSummary(t, f, "external-dns-weu 1/1 published; external-dns-neu 0/1 published, 1 drifted")

		neu.Set(host + ". 300 IN CNAME " + target + ".") // ExternalDNS's next synchronization repairs it
		f.waitPublication(route, "external-dns-neu=Published external-dns-weu=Published", "2/2", routingv1alpha1.ReasonZonesPublished)
	})

	t.Run("a name server that stops answering", func(t *testing.T) {
		weu.SetDown(true)
		zones, _ := f.waitPublication(route, "external-dns-neu=Published external-dns-weu=Unreachable", "1/2", routingv1alpha1.ReasonZonesUnreachable)
		assert.Contains(t, zone(zones, "external-dns-weu").Answer, fmt.Sprintf("no answer from %s (timeout)", weu.Addr))
		f.waitPublication(&routingv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: f.gatewayNS, Name: gw.Name}},
			"external-dns-neu=Published external-dns-weu=Unreachable", "1/2", routingv1alpha1.ReasonZonesUnreachable)
		weu.SetDown(false)
		f.waitPublication(route, "external-dns-neu=Published external-dns-weu=Published", "2/2", routingv1alpha1.ReasonZonesPublished)
	})

	t.Run("a zone checked through a resolver", func(t *testing.T) {
		neu.SetResolver(true) // now answers as a recursive resolver does: no AA bit
		t.Cleanup(func() { neu.SetResolver(false) })
		zones, _ := f.waitPublication(route, "external-dns-neu=Unreachable external-dns-weu=Published", "1/2", routingv1alpha1.ReasonZonesUnreachable)
		assert.Contains(t, zone(zones, "external-dns-neu").Answer, "not authoritative", "a resolver's answer is no authoritative answer")
		f.setResolvers("neu", neu.Addr)
		f.waitPublication(route, "external-dns-neu=Published external-dns-weu=Published", "2/2", routingv1alpha1.ReasonZonesPublished)
		total, recursive := neu.Queries()
		assert.Positive(t, recursive, "the resolver is asked to recurse (%d queries)", total)
	})

	t.Run("a zone without verification settings makes publication unknown", func(t *testing.T) {
		f.setVerifiedControllers([]string{"weu", "neu", "frc"}, map[string]string{"weu": weu.Addr, "neu": neu.Addr})
		f.waitRouteEndpoints(f.ns, "api-route", host, target, "external-dns-weu", "external-dns-neu", "external-dns-frc")
		zones, cond := f.waitPublication(route, "external-dns-frc=Unverified external-dns-neu=Published external-dns-weu=Published", "2/3",
			routingv1alpha1.ReasonVerificationNotConfigured)
		assert.Equal(t, metav1.ConditionUnknown, cond.Status)
		assert.False(t, zone(zones, "external-dns-frc").Processed)
		markProcessed(t, f.ns, "api-route-external-dns-frc")
		waitFor(t, "frc processed", func() string {
			require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(route), route))
			if !zone(route.Status.Zones, "external-dns-frc").Processed {
				return "not yet"
			}
			return ""
		})
	})
}

// assertNoStatusWrites waits until the zone's name server has been asked several times more
// (settled re-checks of the route and the gateway address) and checks that neither object's
// status was written meanwhile.
func assertNoStatusWrites(t *testing.T, f *fixture, route *routingv1alpha1.ServiceRoute, gw *routingv1alpha1.Gateway, zone *testdns.Server) {
	t.Helper()
	r, g := &routingv1alpha1.ServiceRoute{}, &routingv1alpha1.Gateway{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(route), r))
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), g))
	before, _ := zone.Queries()
	waitFor(t, "six more checks of the weu zone", func() string {
		if n, _ := zone.Queries(); n < before+6 {
			return fmt.Sprintf("%d checks so far", n-before)
		}
		return ""
	})
	r2, g2 := &routingv1alpha1.ServiceRoute{}, &routingv1alpha1.Gateway{}
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(route), r2))
	require.NoError(t, env.Client.Get(f.ctx, client.ObjectKeyFromObject(gw), g2))
	assert.Equal(t, r.ResourceVersion, r2.ResourceVersion, "the route was written: %v", r2.Status.Zones)
	assert.Equal(t, g.ResourceVersion, g2.ResourceVersion, "the gateway was written: %v", g2.Status.Zones)
}

// waitVerificationSummary waits for `kubectl get dnscfg` to summarise the verified zones as want.
func waitVerificationSummary(t *testing.T, f *fixture, want string) {
	t.Helper()
	waitFor(t, "the DNSConfiguration's verification summary "+want, func() string {
		cfg := &clusterv1alpha1.DNSConfiguration{}
		require.NoError(t, env.Client.Get(f.ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg))
		if cfg.Status.VerificationSummary != want {
			return cfg.Status.VerificationSummary
		}
		return ""
	})
}
