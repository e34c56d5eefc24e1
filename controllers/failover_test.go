package controllers

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
)

// A new leader says nothing of the regions until its first round has judged them, so that the
// status keeps what an earlier leader wrote; without zones with failover settings it says, once,
// that there is nothing to report.
func TestFailover_RegionsUnknownUntilJudged(t *testing.T) {
	f := newFailover(nil, nil)
	_, known := f.Regions()
	assert.False(t, known, "before the first round")

	now := time.Unix(1000, 0)
	judged := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Lost, Reason: "HeartbeatStale"}}
	assert.True(t, f.remember(now, "neu", judged, nil, nil, nil, &clusterv1alpha1.DNSConfiguration{}), "the first judgement is a change")
	regions, known := f.Regions()
	assert.True(t, known)
	assert.Equal(t, []clusterv1alpha1.RegionFailoverStatus{{Region: "weu", State: "Lost", Reason: "HeartbeatStale", Since: regions[0].Since}}, regions)
	assert.False(t, f.remember(now.Add(time.Second), "neu", judged, nil, nil, nil, &clusterv1alpha1.DNSConfiguration{}), "the same judgement again changes nothing")

	g := newFailover(nil, nil)
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
	scheme := runtime.NewScheme()
	require.NoError(t, externaldnsv1alpha1.AddToScheme(scheme))
	owned := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "myapp", Name: "api-route-external-dns-weu",
		Labels: map[string]string{naming.LabelManagedBy: naming.ManagedByValue}, Annotations: map[string]string{"team": "kept"}}}
	foreign := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "api-route-external-dns-weu"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(owned, foreign).Build()
	f := newFailover(c, nil)
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
	f := newFailover(nil, nil)
	judged := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Lost, Reason: "HeartbeatStale"}}
	standing := []failover.Pass{{Controller: "external-dns-weu", Hostname: "a.example.com", Region: "weu"}}
	mine := []failover.Pass{{Controller: "external-dns-weu", Hostname: "b.example.com", Region: "weu"},
		{Controller: "external-dns-weu", Hostname: "a.example.com", Region: "weu"}}
	assert.True(t, f.remember(time.Unix(1000, 0), "neu", judged, nil, mine, standing, &clusterv1alpha1.DNSConfiguration{}))
	regions, _ := f.Regions()
	assert.Equal(t, []clusterv1alpha1.ZoneTakeover{{Controller: "external-dns-weu", Names: 2}}, regions[0].Taken, "a.example.com once")
	assert.False(t, f.remember(time.Unix(1001, 0), "neu", judged, nil, nil, standing, &clusterv1alpha1.DNSConfiguration{}),
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

	f := newFailover(nil, nil)
	f.view("weu").probes = failover.Probes{Failures: 1}
	f.remember(now, "neu", undecided, nil, nil, nil, cfg)
	got := weu(f)
	assert.Equal(t, "Lost", got.State, "one failed probe of three decides nothing")
	assert.Equal(t, "HeartbeatStale", got.Reason)
	assert.Equal(t, lostSince, got.Since.Time)

	f.view("weu").probes = failover.Probes{Failures: 3}
	assert.False(t, f.remember(now.Add(2*time.Second), "neu", lost, nil, nil, nil, cfg), "its own probes agree: no change, no event")
	got = weu(f)
	assert.Equal(t, lostSince, got.Since.Time, "lost since the earlier leader said so")
	assert.Equal(t, "mine", got.Message)

	g := newFailover(nil, nil)
	g.view("weu").probes = failover.Probes{Successes: 1}
	g.remember(now, "neu", undecided, nil, nil, nil, cfg)
	got = weu(g)
	assert.Equal(t, "Serving", got.State, "its gateway answered this leader: decided")
	assert.Equal(t, now, got.Since.Time)
}
