package failoverloop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/budget"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	operatorscheme "github.com/service-router/service-router-operator/internal/scheme"
	"github.com/service-router/service-router-operator/internal/verify"
)

// A new leader says nothing of the regions until its first round has judged them, so that the
// status keeps what an earlier leader wrote; without zones with failover settings it says, once,
// that there is nothing to report.
func TestFailover_RegionsUnknownUntilJudged(t *testing.T) {
	f := newLoop(nil, nil, nil, nil)
	_, known := f.Regions()
	assert.False(t, known, "before the first round")

	now := time.Unix(1000, 0)
	judged := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Lost, Reason: "HeartbeatStale"}}
	decided := func(at time.Time) failover.RoundOutput {
		views, changes, changed := failover.Advance(at, "neu", f.regions, judged, nil, 3)
		return failover.RoundOutput{Judged: judged, Views: views, Changes: changes, ViewsChanged: changed}
	}
	assert.True(t, f.remember(decided(now), nil, nil, &clusterv1alpha1.DNSConfiguration{}), "the first judgement is a change")
	regions, known := f.Regions()
	assert.True(t, known)
	assert.Equal(t, []clusterv1alpha1.RegionFailoverStatus{{Region: "weu", State: "Lost", Reason: "HeartbeatStale", Since: regions[0].Since}}, regions)
	assert.False(t, f.remember(decided(now.Add(time.Second)), nil, nil, &clusterv1alpha1.DNSConfiguration{}), "the same judgement again changes nothing")

	g := newLoop(nil, nil, nil, nil)
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
	c := fakeClient(owned, foreign)
	f := newLoop(c, nil, nil, nil)
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
	f := newLoop(nil, nil, nil, nil)
	judged := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Lost, Reason: "HeartbeatStale"}}
	standing := []failover.Pass{{Controller: "external-dns-weu", Hostname: "a.example.com", Region: "weu"}}
	mine := []failover.Pass{{Controller: "external-dns-weu", Hostname: "b.example.com", Region: "weu"},
		{Controller: "external-dns-weu", Hostname: "a.example.com", Region: "weu"}}
	assert.True(t, rememberRound(f, time.Unix(1000, 0), "neu", judged, nil, nil, mine, standing, &clusterv1alpha1.DNSConfiguration{}))
	regions, _ := f.Regions()
	assert.Equal(t, []clusterv1alpha1.ZoneTakeover{{Controller: "external-dns-weu", Names: 2}}, regions[0].Taken, "a.example.com once")
	assert.False(t, rememberRound(f, time.Unix(1001, 0), "neu", judged, nil, nil, nil, standing, &clusterv1alpha1.DNSConfiguration{}),
		"the same takeovers again change nothing")
}

// A new leader whose probes have not decided yet keeps each region as the earlier leader's status
// says (state, reason and since), instead of judging it Serving for want of failures; once its
// own probes decide, its own judgement stands.
func TestFailover_NewLeaderKeepsTheEarlierJudgementUntilItDecides(t *testing.T) {
	lostSince := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	cfg := &clusterv1alpha1.DNSConfiguration{Status: clusterv1alpha1.DNSConfigurationStatus{Failover: []clusterv1alpha1.RegionFailoverStatus{
		{Region: "weu", State: "Lost", Reason: "HeartbeatStale", Message: "an earlier leader's", Since: &metav1.Time{Time: lostSince}}}}}
	undecided := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Serving, Reason: "GatewayAnswers"}}
	lost := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Lost, Reason: "HeartbeatStale", Message: "mine"}}
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	weu := func(f *Loop) clusterv1alpha1.RegionFailoverStatus {
		regions, known := f.Regions()
		require.True(t, known)
		require.Len(t, regions, 1)
		return regions[0]
	}

	f := newLoop(nil, nil, nil, nil)
	f.regions["weu"] = failover.RegionView{Probes: failover.Probes{Failures: 1}}
	rememberRound(f, now, "neu", undecided, nil, nil, nil, nil, cfg)
	got := weu(f)
	assert.Equal(t, "Lost", got.State, "one failed probe of three decides nothing")
	assert.Equal(t, "HeartbeatStale", got.Reason)
	assert.Equal(t, lostSince, got.Since.Time)

	f.regions["weu"] = withProbes(f.regions["weu"], failover.Probes{Failures: 3})
	assert.False(t, rememberRound(f, now.Add(2*time.Second), "neu", lost, nil, nil, nil, nil, cfg), "its own probes agree: no change, no event")
	got = weu(f)
	assert.Equal(t, lostSince, got.Since.Time, "lost since the earlier leader said so")
	assert.Equal(t, "mine", got.Message)

	// Its probes decided, but the heartbeats are too new to it to tell (WitnessPending): still the
	// earlier leader's Lost, and no event; then its own clock finds them stale: Lost, unchanged.
	p := newLoop(nil, nil, nil, nil)
	p.regions["weu"] = failover.RegionView{Probes: failover.Probes{Failures: 3}}
	pending := map[string]failover.Judgement{"neu": {State: failover.Serving}, "weu": {State: failover.Unreachable, Reason: failover.ReasonWitnessPending}}
	rememberRound(p, now, "neu", pending, nil, nil, nil, nil, cfg)
	got = weu(p)
	assert.Equal(t, "Lost", got.State, "heartbeats not yet followed are no sign of life")
	assert.Equal(t, lostSince, got.Since.Time)
	rememberRound(p, now.Add(31*time.Second), "neu", lost, nil, nil, nil, nil, cfg)
	assert.Equal(t, lostSince, weu(p).Since.Time, "lost since the earlier leader said so")

	g := newLoop(nil, events.NewFakeRecorder(10), nil, nil)
	g.regions["weu"] = failover.RegionView{Probes: failover.Probes{Successes: 1}}
	rememberRound(g, now, "neu", undecided, nil, nil, nil, nil, cfg)
	got = weu(g)
	assert.Equal(t, "Serving", got.State, "its gateway answered this leader: decided")
	assert.Equal(t, now, got.Since.Time)
	assert.Contains(t, drain(g.recorder.(*events.FakeRecorder)), "RegionServing", "Lost, as the status said, to Serving: announced")
}

// withProbes is v with its probes replaced, as a round's probes leave it.
func withProbes(v failover.RegionView, p failover.Probes) failover.RegionView {
	v.Probes = p
	return v
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
	f := newLoop(nil, nil, tracker, routeChanges)
	f.located("aks01", []failoverZone{{controller: "external-dns-weu", region: "weu"}, {controller: "external-dns-neu", region: "neu"}})
	cfg := &clusterv1alpha1.DNSConfiguration{}
	aks02Beats := []failover.ZoneReading{{Controller: "external-dns-weu", Region: "weu", Read: true, Beats: map[string][]failover.Heartbeat{
		"neu": {{Found: true, Read: true, Cluster: "aks02", Targets: []string{"aks02-neu-internal.example.com"}}}}}}
	const servedBy = "served by cluster aks02, of region neu, for region weu"

	before := f.attributionNow()
	f.reattribute(ctx, before)
	assert.Empty(t, sent(), "nothing learnt")
	assert.Empty(t, f.Attribute(taken.Controller, answers["api.example.com"]), "no heartbeat read yet")

	rememberRound(f, now, "weu", nil, aks02Beats, aks02Beats, nil, nil, cfg)
	f.reattribute(ctx, before)
	assert.Equal(t, []string{"myapp/api-route"}, sent(), "only the answer now attributed: web's names no known gateway, other's zone is aks02's own region")
	assert.Equal(t, servedBy, f.Attribute(taken.Controller, answers["api.example.com"]))

	before = f.attributionNow()
	rememberRound(f, now.Add(5*time.Second), "weu", nil, aks02Beats, aks02Beats, nil, nil, cfg)
	f.reattribute(ctx, before)
	assert.Empty(t, sent(), "the same heartbeats again")

	unread := []failover.ZoneReading{{Controller: "external-dns-weu", Region: "weu"}}
	rememberRound(f, now.Add(10*time.Second), "weu", nil, unread, unread, nil, nil, cfg)
	f.reattribute(ctx, before)
	assert.Empty(t, sent(), "a zone that could not be read says nothing")
	assert.Equal(t, servedBy, f.Attribute(taken.Controller, answers["api.example.com"]), "kept as the last reading said")

	f.forget()
	f.reattribute(ctx, before)
	assert.Equal(t, []string{"myapp/api-route"}, sent(), "no failover settings any more: the attribution goes")
	assert.Empty(t, f.Attribute(taken.Controller, answers["api.example.com"]))
}

// countingZone is a zone failover reads and writes, counting what it is asked: aks01 (region weu)
// beats in it while alive, with its gateway's address; the name api.example.com is weu's.
type countingZone struct {
	mu                               sync.Mutex
	wholeReads, witnessReads, writes int
	passes                           []failover.Pass
	lastBeat                         time.Time
	refuse                           error
	// ownership is api.example.com's ownership value (weuOwnership until a pass).
	ownership string
	// fleet is how many clusters beside aks01 and the reader beat in the zone (aks03…).
	fleet int
}

const weuOwnership = `"heritage=external-dns,external-dns/owner=external-dns-weu-aks01,external-dns/resource=crd/team/web"`

func (z *countingZone) reading(whole bool) failover.ZoneReading {
	r := failover.ZoneReading{Read: true, Beats: map[string][]failover.Heartbeat{"weu": {{Zone: "external-dns-weu", Read: true, Found: true, At: z.lastBeat,
		GatewayAnswers: true, Cluster: "aks01", Owner: "external-dns-weu-aks01", Addresses: []string{"10.0.0.1"}}}}}
	for i := range z.fleet {
		region := fmt.Sprintf("r%02d", i)
		r.Beats[region] = []failover.Heartbeat{{Read: true, Found: true, At: z.lastBeat, GatewayAnswers: true, Cluster: fmt.Sprintf("aks%02d", i+3)}}
	}
	if whole {
		r.TXT = map[string]failover.TXTSet{"cname-api.example.com": {Values: []string{cmp.Or(z.ownership, weuOwnership)}, TTL: 300}}
	}
	return r
}

func (z *countingZone) Read(context.Context) (failover.ZoneReading, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.wholeReads++
	if z.refuse != nil {
		return failover.ZoneReading{}, z.refuse
	}
	return z.reading(true), nil
}

func (z *countingZone) ReadWitness(context.Context, []string) (failover.ZoneReading, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.witnessReads++
	if z.refuse != nil {
		return failover.ZoneReading{}, z.refuse
	}
	return z.reading(false), nil
}

func (z *countingZone) WriteHeartbeat(context.Context, string, string, string) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.writes++
	return nil
}

func (z *countingZone) RemoveLegacyHeartbeat(context.Context, string, string) error { return nil }

func (z *countingZone) Pass(_ context.Context, p failover.Pass) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.passes = append(z.passes, p)
	z.ownership = p.New
	return nil
}

func (z *countingZone) counts() (whole, witness int) {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.wholeReads, z.witnessReads
}

// failoverOnAzure is a leader of cluster aks02 (region neu) standing in for weu's names of
// namespace team, failover on zone external-dns-weu (read through Resource Manager) with the
// default settings; the zone is zone, the clock now.
func failoverOnAzure(t *testing.T, zone *countingZone, now *time.Time, more ...*countingZone) *Loop {
	azure := &clusterv1alpha1.AzurePrivateDNSVerification{SubscriptionID: "sub", ResourceGroup: "rg", ZoneName: "example.com"}
	cfg := &clusterv1alpha1.DNSConfiguration{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.DNSConfigurationName},
		Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{{Name: "external-dns-weu", Region: "weu",
			Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: azure},
			Failover:     &clusterv1alpha1.ZoneFailover{OwnerID: "external-dns-weu-aks02"}}},
			Failover: &clusterv1alpha1.FailoverSettings{}}}
	ios := map[string]cachedIO{"external-dns-weu": {key: fmt.Sprintf("%+v", *azure), io: zone}}
	for i, z := range more {
		name, region := fmt.Sprintf("external-dns-x%d", i), fmt.Sprintf("x%d", i)
		a := &clusterv1alpha1.AzurePrivateDNSVerification{SubscriptionID: "sub", ResourceGroup: "rg-" + region, ZoneName: "example.com"}
		cfg.Spec.ExternalDNSControllers = append(cfg.Spec.ExternalDNSControllers, clusterv1alpha1.ExternalDNSController{Name: name, Region: region,
			Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: a}, Failover: &clusterv1alpha1.ZoneFailover{OwnerID: name + "-aks02"}})
		ios[name] = cachedIO{key: fmt.Sprintf("%+v", *a), io: z}
	}
	identity := &clusterv1alpha1.ClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterIdentityName},
		Spec: clusterv1alpha1.ClusterIdentitySpec{Cluster: "aks02", Region: "neu", Domain: "example.com"}}
	policy := &routingv1alpha1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "policy"},
		Spec: routingv1alpha1.DNSPolicySpec{Mode: routingv1alpha1.DNSPolicyMode("Active"), Failover: &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}}}}
	ep := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web-weu",
		Labels: map[string]string{naming.LabelController: "external-dns-weu", naming.LabelServiceRoute: "web", naming.LabelManagedBy: naming.ManagedByValue}},
		Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{{DNSName: "api.example.com", RecordType: "CNAME", Targets: endpoint.Targets{"aks02-neu-internal.example.com"}}}}}
	f := newLoop(fakeClient(cfg, identity, policy, ep), events.NewFakeRecorder(100), nil, nil)
	f.ios = ios
	f.now = func() time.Time { return *now }
	return f
}

// Failover reads a zone at the rate its decisions need, not at the probe rate: while weu's gateway
// answers, its heartbeats every heartbeatStaleAfter (30 s) and the whole zone every 6 minutes;
// while the probes fail, the heartbeats every round; the whole zone, for its ownership records,
// only when weu is judged lost, in the round that judges it, before the name is passed.
func TestFailover_ReadsWhatItsDecisionsNeed(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	zone := &countingZone{lastBeat: now}
	f := failoverOnAzure(t, zone, &now)
	answers := true
	f.probe = func(context.Context, string) error {
		if answers {
			return nil
		}
		return errors.New("refused")
	}
	ctx := context.Background()
	rounds := func(d time.Duration) {
		for end := now.Add(d); now.Before(end); now = now.Add(defaultProbeInterval) {
			if answers {
				zone.lastBeat = now
			}
			f.round(ctx)
		}
	}

	counts := func() (whole, witness int) { return zone.counts() }

	// Eleven minutes at rest (132 rounds, 0:00 to 10:55), no verification listing the zone.
	rounds(11 * time.Minute)
	whole, witness := counts()
	assert.Equal(t, 2, whole, "the whole zone at the first round and at 6:00 (verification's settled listing, 5.5 minutes at the latest, late by a heartbeat reading)")
	assert.Equal(t, 20, witness, "the heartbeats every 30 s in between")
	assert.Equal(t, 66, zone.writes, "the heartbeat every 10 s")
	regions, _ := f.Regions()
	require.Len(t, regions, 1)
	assert.Equal(t, "Serving", regions[0].State)

	// 11:00: the gateway stops answering, the heartbeat still fresh (a partition): the heartbeats
	// every round, the whole zone not at all, nothing passed.
	answers = false
	zone.lastBeat = now
	rounds(25 * time.Second)
	whole2, witness2 := counts()
	assert.Equal(t, whole, whole2, "no whole reading for a region judged on its heartbeats")
	assert.Equal(t, witness+5, witness2, "the heartbeats every round (11:00 was due anyway)")
	regions, _ = f.Regions()
	assert.Equal(t, "Unreachable", regions[0].State)
	assert.Empty(t, zone.passes)

	// The heartbeat goes stale (after 11:30): weu is lost; the round that judges it reads the zone
	// whole and passes the name; the name held, the zone is read whole every 30 s.
	for regions[0].State != "Lost" {
		rounds(defaultProbeInterval)
		regions, _ = f.Regions()
		require.True(t, now.Before(time.Date(2026, 11, 28, 12, 13, 0, 0, time.UTC)), "weu never judged lost")
	}
	whole3, _ := counts()
	assert.Equal(t, whole2+1, whole3, "one whole reading, in the round that judged weu lost")
	require.Len(t, zone.passes, 1)
	assert.Equal(t, "cname-api.example.com", zone.passes[0].TXTName)
	rounds(time.Minute)
	whole4, _ := counts()
	assert.Equal(t, whole3+2, whole4, "while the name is held, the whole zone every 30 s")
	assert.Len(t, zone.passes, 1, "passed once")
}

// A zone Resource Manager throttles says nothing: it is not read, so a region whose probes fail
// is not judged lost on it (Unreachable, WitnessUnreadable), nothing passes, and the throttling
// is announced.
func TestFailover_AThrottledZoneMovesNothing(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	zone := &countingZone{lastBeat: now}
	f := failoverOnAzure(t, zone, &now)
	f.probe = func(context.Context, string) error { return nil }
	f.round(context.Background())
	f.probe = func(context.Context, string) error { return errors.New("refused") }
	zone.refuse = throttledByResourceManager()
	for range 20 {
		now = now.Add(defaultProbeInterval)
		f.round(context.Background())
	}
	regions, _ := f.Regions()
	require.Len(t, regions, 1)
	assert.Equal(t, "Unreachable", regions[0].State)
	assert.Equal(t, "WitnessUnreadable", regions[0].Reason)
	assert.Empty(t, zone.passes)
	assert.Contains(t, drain(f.recorder.(*events.FakeRecorder)), "ZoneThrottled")
}

// drain is every event the recorder holds, one a line.
func drain(r *events.FakeRecorder) string {
	var out string
	for {
		select {
		case e := <-r.Events:
			out += e + "\n"
		default:
			return out
		}
	}
}

// throttledByResourceManager is Resource Manager's answer to a principal over its budget.
func throttledByResourceManager() error {
	return fmt.Errorf("listing the heartbeats of zone example.com: %w", &azcore.ResponseError{StatusCode: http.StatusTooManyRequests, ErrorCode: "TooManyRequests",
		RawResponse: &http.Response{StatusCode: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"10"}}}})
}

// In a fleet of 20 clusters writing 10 zones, each cluster spaces its heartbeats so that the
// fleet's take at most failover.HeartbeatWritesPerMinute (100 a minute: half the network resource
// provider's 1,000 writes per 5 minutes), and says so in each heartbeat.
func TestFailover_HeartbeatsFitTheFleetsWriteBudget(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	zones := make([]*countingZone, 10)
	for i := range zones {
		zones[i] = &countingZone{lastBeat: now, fleet: 18} // aks01, this cluster and 18 more
	}
	f := failoverOnAzure(t, zones[0], &now, zones[1:]...)
	f.probe = func(context.Context, string) error { return nil }
	for end := now.Add(10 * time.Minute); now.Before(end); now = now.Add(defaultProbeInterval) {
		for _, z := range zones {
			z.lastBeat = now
		}
		f.round(context.Background())
	}
	writes := 0
	for _, z := range zones {
		writes += z.writes
	}
	assert.Equal(t, 2*time.Minute, f.beatInterval, "20 clusters × 10 zones at 100 writes a minute")
	// The first round knows no fleet yet and writes at once; then one write per zone every 2 minutes.
	assert.LessOrEqual(t, writes, 10*(1+5), "this cluster's heartbeat writes in 10 minutes")
	assert.GreaterOrEqual(t, writes, 10*5)
	perMinute := float64(writes-10) / 10
	assert.LessOrEqual(t, perMinute*20, float64(failover.HeartbeatWritesPerMinute), "the fleet's heartbeat writes a minute at this cluster's rate")
}

// A zone verification lists is not listed again by failover: a listing verification made takes
// the place of failover's next whole reading.
func TestFailover_TakesVerificationsListingAsItsWholeReading(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	zone := &countingZone{lastBeat: now}
	f := failoverOnAzure(t, zone, &now)
	f.probe = func(context.Context, string) error { return nil }
	var listing verify.Listing
	listing.AddTXT("example.com", "aks01.weu._router-heartbeat", failover.HeartbeatValue(failover.Heartbeat{At: now, GatewayAnswers: true, Owner: "external-dns-weu-aks01"}))
	listing.AddTXT("example.com", "cname-api", weuOwnership)
	listing.Add("example.com", "aks01-weu-internal", "A", "10.0.0.1")
	for end := now.Add(9*time.Minute + 45*time.Second); now.Before(end); now = now.Add(defaultProbeInterval) {
		if now.Equal(time.Date(2026, 11, 28, 12, 4, 50, 0, time.UTC)) {
			f.Listed("external-dns-weu", listing, now)
		}
		zone.lastBeat = now
		f.round(context.Background())
	}
	whole, _ := zone.counts()
	assert.Equal(t, 1, whole, "the whole zone read once, at the first round; verification's listing at 4:50 stood for the one due at 5:00")
	r := f.reads["external-dns-weu"]
	assert.Equal(t, []string{weuOwnership}, r.whole.TXT["cname-api.example.com"].Values)
	assert.Equal(t, []string{"10.0.0.1"}, r.whole.Addresses["aks01-weu-internal.example.com"])
	assert.Equal(t, "external-dns-weu-aks02", r.whole.Owner, "labelled as this cluster's reading of the zone")
}

// Clocks that differ do not move names: with weu's clock 60 s behind (its heartbeats look a minute
// old) or 60 s ahead, a partition that fails the probes leaves weu Unreachable for as long as its
// heartbeats change; and a real loss is still found within heartbeatStaleAfter of this cluster
// last seeing them change, plus a round, whatever weu's clock said.
func TestFailover_ClockSkewMovesNothing(t *testing.T) {
	for _, skew := range []time.Duration{-time.Minute, time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			zone := &countingZone{lastBeat: now.Add(skew)}
			f := failoverOnAzure(t, zone, &now)
			f.probe = func(context.Context, string) error { return nil }
			ctx := context.Background()
			f.round(ctx)
			f.probe = func(context.Context, string) error { return errors.New("partitioned") }
			for range 36 { // 3 minutes of partition, weu writing every round
				now = now.Add(defaultProbeInterval)
				zone.lastBeat = now.Add(skew)
				f.round(ctx)
				regions, _ := f.Regions()
				require.NotEqual(t, "Lost", regions[0].State, "at %s: %s", now.Format(time.TimeOnly), regions[0].Message)
			}
			assert.Empty(t, zone.passes)

			// weu is lost: its heartbeat stops changing.
			lost := now
			for regions, _ := f.Regions(); regions[0].State != "Lost"; regions, _ = f.Regions() {
				now = now.Add(defaultProbeInterval)
				f.round(ctx)
				require.LessOrEqual(t, now.Sub(lost), failover.DefaultSettings.HeartbeatStaleAfter+2*defaultProbeInterval, "weu not judged lost in time")
			}
			assert.Len(t, zone.passes, 1)
		})
	}
}

// rememberRound records a round that judged judged, its readings and ownership readings as
// given, with this round's takeovers taken and the standing ones standing, as the loop does from
// failover.Round's decision.
func rememberRound(f *Loop, now time.Time, own string, judged map[string]failover.Judgement, readings, ownership []failover.ZoneReading,
	taken, standing []failover.Pass, cfg *clusterv1alpha1.DNSConfiguration) bool {
	f.mu.Lock()
	views, held := maps.Clone(f.regions), slices.Clone(f.held)
	f.mu.Unlock()
	next, changes, changed := failover.Advance(now, own, views, judged, earlierViews(cfg), failoverSettingsOf(cfg).judge.FailureThreshold)
	return f.remember(failover.RoundOutput{Judged: judged, Views: next, Changes: changes, ViewsChanged: changed,
		Held: failover.Union(failover.Held(held, ownership), standing)}, taken, readings, cfg)
}

// newLoop is a loop reading and writing c (nil: nothing), its singletons and policies included.
func newLoop(c client.Client, recorder events.EventRecorder, observed RouteObservations, routeChanges chan<- event.GenericEvent) *Loop {
	return New(c, clientReads{c}, recorder, observed, routeChanges, 0)
}

// clientReads reads the singletons and the policy in force from a client, as the controllers read
// them from the cache.
type clientReads struct{ c client.Reader }

func (r clientReads) Singletons(ctx context.Context) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error) {
	ci, cfg := &clusterv1alpha1.ClusterIdentity{}, &clusterv1alpha1.DNSConfiguration{}
	if err := r.c.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.ClusterIdentityName}, ci); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	if err := r.c.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.DNSConfigurationName}, cfg); err != nil {
		return ci, nil, client.IgnoreNotFound(err)
	}
	return ci, cfg, nil
}

func (r clientReads) PolicyInForce(ctx context.Context, namespace string) (*routingv1alpha1.DNSPolicy, error) {
	list := &routingv1alpha1.DNSPolicyList{}
	if err := r.c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	policies := make([]*routingv1alpha1.DNSPolicy, len(list.Items))
	for i := range list.Items {
		policies[i] = &list.Items[i]
	}
	oldest, _ := decide.Oldest(policies)
	return oldest, nil
}

func fakeClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(operatorscheme.New()).WithObjects(objs...).Build()
}

// The budget's model takes the defaults the loop uses, without importing them from here: this
// keeps the two in step.
func TestBudget_DefaultsAreTheLoops(t *testing.T) {
	s := failoverSettingsOf(&clusterv1alpha1.DNSConfiguration{})
	assert.Equal(t, budget.FailoverSettings{ProbeInterval: s.probeInterval, HeartbeatInterval: s.heartbeatInterval, HeartbeatStaleAfter: s.judge.HeartbeatStaleAfter},
		budget.DefaultFailoverSettings())
}
