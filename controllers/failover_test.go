package controllers

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/verify"
)

// A new leader says nothing of the regions until its first round has judged them, so that the
// status keeps what an earlier leader wrote; without zones with failover settings it says, once,
// that there is nothing to report.
func TestFailover_RegionsUnknownUntilJudged(t *testing.T) {
	f := newFailover(nil, nil, nil, nil)
	_, known := f.Regions()
	assert.False(t, known, "before the first round")

	now := time.Unix(1000, 0)
	judged := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Lost, Reason: "HeartbeatStale"}}
	assert.True(t, f.remember(now, "neu", judged, nil, nil, nil, nil, &clusterv1alpha1.DNSConfiguration{}), "the first judgement is a change")
	regions, known := f.Regions()
	assert.True(t, known)
	assert.Equal(t, []clusterv1alpha1.RegionFailoverStatus{{Region: "weu", State: "Lost", Reason: "HeartbeatStale", Since: regions[0].Since}}, regions)
	assert.False(t, f.remember(now.Add(time.Second), "neu", judged, nil, nil, nil, nil, &clusterv1alpha1.DNSConfiguration{}), "the same judgement again changes nothing")

	g := newFailover(nil, nil, nil, nil)
	g.forget()
	regions, known = g.Regions()
	assert.True(t, known, "no zone has failover settings: a definite answer")
	assert.Empty(t, regions)
	select {
	case <-g.changes:
	default:
		t.Error("forgetting must wake the DNSConfiguration reconcile once, to clear an earlier leader's status")
	}
	g.forget()
	select {
	case <-g.changes:
		t.Error("forgetting again changes nothing")
	default:
	}
}

// After a pass, the loop marks the DNSEndpoint that publishes the name (when, and from which
// region a takeover took it), so that an ExternalDNS run with --events synchronises within seconds
// and a later leader can count the takeover; a mark of "" removes one; a DNSEndpoint of that name
// that is not the operator's is left as it is, and a missing one is no error.
func TestFailover_MarkChangesOnlyTheOperatorsDNSEndpoint(t *testing.T) {
	owned := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "myapp", Name: "api-route-external-dns-weu",
		Labels: map[string]string{naming.LabelManagedBy: naming.ManagedByValue}, Annotations: map[string]string{"team": "kept"}}}
	foreign := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "api-route-external-dns-weu"}}
	c := fakeClientWith(owned, foreign)
	f := newFailover(c, nil, nil, nil)
	get := func(ns string) *externaldnsv1alpha1.DNSEndpoint {
		ep := &externaldnsv1alpha1.DNSEndpoint{}
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "api-route-external-dns-weu"}, ep))
		return ep
	}
	before := get("myapp").ResourceVersion
	taken := map[string]string{naming.AnnotationOwnershipPassed: "2026-11-27T02:00:00Z", naming.AnnotationTakenFrom: "weu"}

	f.mark(t.Context(), "myapp", "api-route-external-dns-weu", taken)
	f.mark(t.Context(), "other", "api-route-external-dns-weu", taken)
	f.mark(t.Context(), "gone", "api-route-external-dns-weu", taken)

	got := get("myapp")
	assert.NotEqual(t, before, got.ResourceVersion, "an update: what ExternalDNS's informer reacts to")
	assert.Equal(t, map[string]string{"team": "kept", naming.AnnotationOwnershipPassed: "2026-11-27T02:00:00Z", naming.AnnotationTakenFrom: "weu"}, got.Annotations)
	assert.Empty(t, get("other").Annotations, "not the operator's: untouched")

	marked := got.ResourceVersion
	f.mark(t.Context(), "myapp", "api-route-external-dns-weu", taken)
	assert.Equal(t, marked, get("myapp").ResourceVersion, "marked already: no write")
	f.mark(t.Context(), "myapp", "api-route-external-dns-weu", map[string]string{naming.AnnotationTakenFrom: ""})
	assert.Equal(t, map[string]string{"team": "kept", naming.AnnotationOwnershipPassed: "2026-11-27T02:00:00Z"}, get("myapp").Annotations, "the name went back")
}

// A new leader counts, from its first round, the takeovers an earlier leader made that stand
// (failover.Standing), beside its own.
func TestFailover_NewLeaderCountsStandingTakeovers(t *testing.T) {
	f := newFailover(nil, nil, nil, nil)
	judged := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Lost, Reason: "HeartbeatStale"}}
	standing := []failover.Pass{{Controller: "external-dns-weu", Hostname: "a.example.com", Region: "weu"}}
	mine := []failover.Pass{{Controller: "external-dns-weu", Hostname: "b.example.com", Region: "weu"},
		{Controller: "external-dns-weu", Hostname: "a.example.com", Region: "weu"}}
	assert.True(t, f.remember(time.Unix(1000, 0), "neu", judged, nil, nil, mine, standing, &clusterv1alpha1.DNSConfiguration{}))
	regions, _ := f.Regions()
	assert.Equal(t, []clusterv1alpha1.ZoneTakeover{{Controller: "external-dns-weu", Names: 2}}, regions[0].Taken, "a.example.com once")
	assert.False(t, f.remember(time.Unix(1001, 0), "neu", judged, nil, nil, nil, standing, &clusterv1alpha1.DNSConfiguration{}),
		"the same takeovers again change nothing")
}

// A new leader whose probes have not decided yet keeps each region as the earlier leader's status
// says (state, reason and since), instead of judging it Serving for want of failures; once its
// own probes decide, its own judgement stands.
func TestFailover_NewLeaderKeepsTheEarlierJudgementUntilItsProbesDecide(t *testing.T) {
	lostSince := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	cfg := &clusterv1alpha1.DNSConfiguration{Status: clusterv1alpha1.DNSConfigurationStatus{Failover: []clusterv1alpha1.RegionFailoverStatus{
		{Region: "weu", State: "Lost", Reason: "HeartbeatStale", Message: "an earlier leader's", Since: &metav1.Time{Time: lostSince}}}}}
	undecided := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Serving, Reason: "GatewayAnswers"}}
	lost := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Lost, Reason: "HeartbeatStale", Message: "mine"}}
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	weu := func(f *Failover) clusterv1alpha1.RegionFailoverStatus {
		regions, known := f.Regions()
		require.True(t, known)
		require.Len(t, regions, 1)
		return regions[0]
	}

	f := newFailover(nil, nil, nil, nil)
	f.view("weu").probes = failover.Probes{Failures: 1}
	f.remember(now, "neu", undecided, nil, nil, nil, nil, cfg)
	got := weu(f)
	assert.Equal(t, "Lost", got.State, "one failed probe of three decides nothing")
	assert.Equal(t, "HeartbeatStale", got.Reason)
	assert.Equal(t, lostSince, got.Since.Time)

	f.view("weu").probes = failover.Probes{Failures: 3}
	assert.False(t, f.remember(now.Add(2*time.Second), "neu", lost, nil, nil, nil, nil, cfg), "its own probes agree: no change, no event")
	got = weu(f)
	assert.Equal(t, lostSince, got.Since.Time, "lost since the earlier leader said so")
	assert.Equal(t, "mine", got.Message)

	g := newFailover(nil, nil, nil, nil)
	g.view("weu").probes = failover.Probes{Successes: 1}
	g.remember(now, "neu", undecided, nil, nil, nil, nil, cfg)
	got = weu(g)
	assert.Equal(t, "Serving", got.State, "its gateway answered this leader: decided")
	assert.Equal(t, now, got.Since.Time)
}

// A route's status says who serves its answer in a failover zone as its last reconcile saw it. When
// a round learns otherwise (a new leader reads the heartbeats after its routes were reconciled;
// failover settings removed), the routes whose answers are attributed otherwise are reconciled
// again, and only those; a round that reads no zone changes nothing.
func TestFailover_RoutesWhoseAnswerIsAttributedOtherwiseAreReconciledAgain(t *testing.T) {
	ctx := t.Context()
	now := time.Unix(1000, 0)
	tracker := verify.NewTracker(verify.DefaultSettings, func() float64 { return 0 }, nil)
	taken := verify.RouteKey{Namespace: "myapp", Name: "api-route", Controller: "external-dns-weu"}
	elsewhere := verify.RouteKey{Namespace: "myapp", Name: "web-route", Controller: "external-dns-weu"}
	ownRegion := verify.RouteKey{Namespace: "other", Name: "api-route", Controller: "external-dns-neu"}
	// What each zone answers for each route's name: drifted from aks01's CNAME, all three.
	answers := map[string]string{
		"api.example.com": "CNAME aks02-neu-internal.example.com.", "web.example.com": "CNAME somewhere.example.com.",
		"other.example.com": "CNAME aks02-neu-internal.example.com."}
	for k, host := range map[verify.RouteKey]string{taken: "api.example.com", elsewhere: "web.example.com", ownRegion: "other.example.com"} {
		tracker.SetRoute(k, []*endpoint.Endpoint{endpoint.NewEndpoint(host, endpoint.RecordTypeCNAME, "aks01-weu-internal.example.com")}, true, false, now)
	}
	for _, controller := range []string{"external-dns-weu", "external-dns-neu"} {
		for {
			check, ok, _ := tracker.Next(controller, now.Add(time.Minute))
			if !ok {
				break
			}
			tracker.Report(check, verify.Finding{State: routingv1alpha1.ZoneDrifted, Answer: answers[strings.TrimSuffix(check.Expected[0].Name, ".")]}, now)
		}
	}
	routeChanges := make(chan event.GenericEvent, 10)
	sent := func() []string {
		var out []string
		for {
			select {
			case e := <-routeChanges:
				out = append(out, client.ObjectKeyFromObject(e.Object).String())
			default:
				return out
			}
		}
	}
	f := newFailover(nil, nil, tracker, routeChanges)
	f.located("aks01", []failoverZone{{controller: "external-dns-weu", region: "weu"}, {controller: "external-dns-neu", region: "neu"}})
	cfg := &clusterv1alpha1.DNSConfiguration{}
	aks02Beats := []failover.ZoneReading{{Controller: "external-dns-weu", Region: "weu", Read: true, Beats: map[string][]failover.Heartbeat{
		"neu": {{Found: true, Read: true, Cluster: "aks02", Targets: []string{"aks02-neu-internal.example.com"}}}}}}
	const servedBy = "served by cluster aks02, of region neu, for region weu"

	before := f.attributionNow()
	f.reattribute(ctx, before)
	assert.Empty(t, sent(), "nothing learnt")
	assert.Empty(t, f.Attribute(taken.Controller, answers["api.example.com"]), "no heartbeat read yet")

	f.remember(now, "weu", nil, aks02Beats, aks02Beats, nil, nil, cfg)
	f.reattribute(ctx, before)
	assert.Equal(t, []string{"myapp/api-route"}, sent(), "only the answer now attributed: web's names no known gateway, other's zone is aks02's own region")
	assert.Equal(t, servedBy, f.Attribute(taken.Controller, answers["api.example.com"]))

	before = f.attributionNow()
	f.remember(now.Add(5*time.Second), "weu", nil, aks02Beats, aks02Beats, nil, nil, cfg)
	f.reattribute(ctx, before)
	assert.Empty(t, sent(), "the same heartbeats again")

	unread := []failover.ZoneReading{{Controller: "external-dns-weu", Region: "weu"}}
	f.remember(now.Add(10*time.Second), "weu", nil, unread, unread, nil, nil, cfg)
	f.reattribute(ctx, before)
	assert.Empty(t, sent(), "a zone that could not be read says nothing")
	assert.Equal(t, servedBy, f.Attribute(taken.Controller, answers["api.example.com"]), "kept as the last reading said")

	f.forget()
	f.reattribute(ctx, before)
	assert.Equal(t, []string{"myapp/api-route"}, sent(), "no failover settings any more: the attribution goes")
	assert.Empty(t, f.Attribute(taken.Controller, answers["api.example.com"]))
}
