package verify

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
)

func TestNextCheck_FastAfterAChangeSlowWhenSettled(t *testing.T) {
	s := Settings{FastInterval: time.Second, SettledInterval: 5 * time.Minute}
	var delays []time.Duration
	for attempt := range 10 {
		d, urgent := NextCheck(s, attempt, false, 0.5)
		delays = append(delays, d)
		assert.Equal(t, d < 5*time.Minute, urgent, "attempt %d", attempt)
	}
	assert.Equal(t, []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, 64 * time.Second, 128 * time.Second, 256 * time.Second, 5 * time.Minute}, delays)

	d, urgent := NextCheck(s, 0, true, 0.5)
	assert.Equal(t, 5*time.Minute, d)
	assert.False(t, urgent)
	lo, _ := NextCheck(s, 0, true, 0)
	hi, _ := NextCheck(s, 0, true, 0.999)
	assert.Equal(t, 270*time.Second, lo, "-10 % jitter")
	assert.InDelta(t, float64(330*time.Second), float64(hi), float64(time.Second), "+10 % jitter")
	far, _ := NextCheck(s, 1000, false, 0.5)
	assert.Equal(t, 5*time.Minute, far, "no overflow after many attempts")
}

// clock is a test's time.
type clock struct{ now time.Time }

func (c *clock) after(d time.Duration) time.Time { c.now = c.now.Add(d); return c.now }

func cname(hostname, to string) []*endpoint.Endpoint {
	return []*endpoint.Endpoint{{DNSName: hostname, RecordType: "CNAME", Targets: endpoint.Targets{to}, RecordTTL: 300}}
}

func address(name string, ips ...string) []*endpoint.Endpoint {
	return []*endpoint.Endpoint{{DNSName: name, RecordType: "A", Targets: ips, RecordTTL: 300}}
}

var (
	weuRoute = RouteKey{Namespace: "myapp", Name: "api-route", Controller: "external-dns-weu"}
	pair     = desired.Ingress{Controller: "istio-internal", TargetPostfix: "internal"}
)

func published(answer string) Finding {
	return Finding{State: routingv1alpha1.ZonePublished, Answer: answer}
}

// checkNext takes the zone's next due check, failing when there is none.
func checkNext(t *testing.T, tr *Tracker, controller string, now time.Time) Check {
	t.Helper()
	c, ok, next := tr.Next(controller, now)
	require.True(t, ok, "a check is due at %s (next due %s)", now, next)
	return c
}

func newTracker(observed *[]time.Duration) *Tracker {
	return NewTracker(Settings{FastInterval: time.Second, SettledInterval: 5 * time.Minute, FailuresBeforeUnreachable: 3, InitialSpread: time.Minute},
		func() float64 { return 0.5 }, func(_ string, d time.Duration) { *observed = append(*observed, d) })
}

func TestTracker_NewRouteIsPendingUntilCNAMEAndTargetAnswer(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	tr.SetTarget("external-dns-weu", pair, "istio-system/gw-weu", address(target, "10.1.2.3"), true, true, c.now)
	changes := tr.SetRoute(weuRoute, cname(host, target), false, false, c.now)
	assert.Equal(t, []Change{{Route: &weuRoute}}, changes)
	got, known := tr.Route(weuRoute)
	require.True(t, known)
	assert.Equal(t, Observation{State: routingv1alpha1.ZonePending, Answer: NotCheckedYet, Since: c.now, For: Expected{cnameSet}.Key()}, got)

	// The route's check is urgent: it comes before the target found at start-up.
	check := checkNext(t, tr, "external-dns-weu", c.now)
	assert.Equal(t, Expected{cnameSet}, check.Expected)
	assert.Equal(t, []Change{{Route: &weuRoute}}, tr.Report(check, Finding{State: routingv1alpha1.ZonePending, Answer: "NXDOMAIN"}, c.after(10*time.Millisecond)),
		"the answer is part of the status: not checked yet -> NXDOMAIN is a change")
	got, _ = tr.Route(weuRoute)
	assert.Equal(t, "NXDOMAIN", got.Answer)

	// The target, found at start-up, is checked right after: its zone has no other record found
	// at start to pace it behind.
	check = checkNext(t, tr, "external-dns-weu", c.now)
	assert.Equal(t, "A", check.Expected[0].Type)
	tr.Report(check, published("A 10.1.2.3"), c.now)
	_, known = tr.Route(weuRoute)
	require.True(t, known)

	// Retried after 1 s; the CNAME is there now, and the target answers: published.
	_, ok, next := tr.Next("external-dns-weu", c.now)
	assert.False(t, ok)
	assert.Equal(t, c.now.Add(time.Second), next)
	check = checkNext(t, tr, "external-dns-weu", c.after(time.Second))
	assert.Equal(t, []Change{{Route: &weuRoute}}, tr.Report(check, published("CNAME "+target), c.now))
	got, _ = tr.Route(weuRoute)
	assert.Equal(t, routingv1alpha1.ZonePublished, got.State)
	assert.Equal(t, "CNAME "+target+" → A 10.1.2.3", got.Answer)
	assert.Equal(t, c.now, got.Since)
	assert.Equal(t, []time.Duration{time.Second + 10*time.Millisecond}, observed, "convergence measured once, from the change")

	// Settled: the next checks of the target and the route are five minutes away, and finding the
	// same changes nothing.
	c.after(5*time.Minute + time.Minute) // ±10 % jitter
	for _, answer := range []string{"A 10.1.2.3", "CNAME " + target} {
		check = checkNext(t, tr, "external-dns-weu", c.now)
		recordType, _, _ := strings.Cut(answer, " ")
		assert.Equal(t, recordType, check.Expected[0].Type)
		assert.Empty(t, tr.Report(check, published(answer), c.now))
	}
	got2, _ := tr.Route(weuRoute)
	assert.Equal(t, got, got2, "a settled zone keeps its observation, Since included: no status write")
	assert.Len(t, observed, 1)
}

// The first checks of records found at start: a few at once, many at InitialPace per zone, and
// those beyond InitialSpread at random within it.
func TestTracker_RecordsFoundAtStartArePacedPerZone(t *testing.T) {
	tr := NewTracker(Settings{InitialPace: 20 * time.Millisecond, InitialSpread: 50 * time.Millisecond}, func() float64 { return 0.5 }, nil)
	now := time.Unix(1000, 0)
	due := func(k RouteKey) time.Duration {
		t.Helper()
		tr.SetRoute(k, cname(k.Name+".example.com", target), true, true, now)
		var when time.Duration
		for d := time.Duration(0); d <= time.Minute; d += time.Millisecond {
			if c, ok, _ := tr.Next(k.Controller, now.Add(d)); ok {
				require.Equal(t, k.Name+".example.com.", c.Expected[0].Name, "the checks come in the order the records were found")
				when = d
				tr.Report(c, published("CNAME "+target), now.Add(d)) // settled: out of the way
				break
			}
		}
		return when
	}
	var weu, neu []time.Duration
	for i := range 4 {
		weu = append(weu, due(RouteKey{Namespace: "myapp", Name: fmt.Sprintf("route-%d", i), Controller: "external-dns-weu"}))
	}
	neu = append(neu, due(RouteKey{Namespace: "myapp", Name: "route-0", Controller: "external-dns-neu"}))
	assert.Equal(t, []time.Duration{0, 20 * time.Millisecond, 40 * time.Millisecond, 25 * time.Millisecond}, weu,
		"20 ms apart; the fourth (60 ms) is past the 50 ms spread, so at random within it (jitter 0.5)")
	assert.Equal(t, []time.Duration{0}, neu, "each zone has a pace of its own")
}

func TestTracker_RecordsFoundAtStartKeepTheirStateUntilChecked(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	assert.Empty(t, tr.SetRoute(weuRoute, cname(host, target), true, true, c.now))
	_, known := tr.Route(weuRoute)
	assert.False(t, known, "unknown: the route's status keeps what it says")
	check := checkNext(t, tr, "external-dns-weu", c.now) // the zone's first record found at start: at once
	tr.Report(check, published("CNAME "+target), c.now)
	got, known := tr.Route(weuRoute)
	require.True(t, known)
	assert.Equal(t, routingv1alpha1.ZonePending, got.State, "no address record is published for the target")
	assert.Contains(t, got.Answer, "no address record")
	assert.Empty(t, observed, "no convergence time for records that did not change")
}

func TestTracker_UnreachableOnlyAfterThreeFailuresInARow(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	tr.SetTarget("external-dns-weu", pair, "istio-system/gw-weu", address(target, "10.1.2.3"), true, false, c.now)
	check := checkNext(t, tr, "external-dns-weu", c.now)
	tr.Report(check, published("A 10.1.2.3"), c.now)

	timeout := Finding{State: routingv1alpha1.ZoneUnreachable, Answer: "no answer from 10.0.0.53:53 (timeout)", Failed: true}
	check = checkNext(t, tr, "external-dns-weu", c.after(6*time.Minute))
	assert.Empty(t, tr.Report(check, timeout, c.now), "one failure changes nothing")
	check = checkNext(t, tr, "external-dns-weu", c.after(time.Second))
	assert.Empty(t, tr.Report(check, timeout, c.now), "retried after 1 s; two failures change nothing")
	got, _ := tr.Target("istio-system/gw-weu")
	assert.Equal(t, routingv1alpha1.ZonePublished, got.State)
	check = checkNext(t, tr, "external-dns-weu", c.after(2*time.Second))
	assert.Equal(t, []Change{{Gateway: &pair}}, tr.Report(check, timeout, c.now))
	got, _ = tr.Target("istio-system/gw-weu")
	assert.Equal(t, routingv1alpha1.ZoneUnreachable, got.State)

	check = checkNext(t, tr, "external-dns-weu", c.after(4*time.Second))
	tr.Report(check, published("A 10.1.2.3"), c.now)
	got, _ = tr.Target("istio-system/gw-weu")
	assert.Equal(t, routingv1alpha1.ZonePublished, got.State, "one answer is enough to recover")
}

func TestTracker_TargetDriftReachesEveryRouteAtOnce(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	other := RouteKey{Namespace: "myapp", Name: "web-route", Controller: "external-dns-weu"}
	tr.SetTarget("external-dns-weu", pair, "istio-system/gw-weu", address(target, "10.1.2.3"), true, false, c.now)
	tr.SetRoute(weuRoute, cname(host, target), true, false, c.now)
	tr.SetRoute(other, cname("web-ns-d-dev-myapp.example.com", target), true, false, c.now)
	for range 3 {
		check := checkNext(t, tr, "external-dns-weu", c.now)
		if check.Expected[0].Type == "A" {
			tr.Report(check, published("A 10.1.2.3"), c.now)
		} else {
			tr.Report(check, published("CNAME "+target), c.now)
		}
	}
	for _, k := range []RouteKey{weuRoute, other} {
		got, _ := tr.Route(k)
		assert.Equal(t, routingv1alpha1.ZonePublished, got.State, k.Name)
	}

	// Someone changes the gateway address in the zone: the target's next check sees it, and both
	// routes are Drifted without waiting for their own checks.
	var check Check
	for {
		var ok bool
		check, ok, _ = tr.Next("external-dns-weu", c.after(time.Minute))
		if ok && check.Expected[0].Type == "A" {
			break
		}
		if ok {
			tr.Report(check, published("CNAME "+target), c.now)
		}
	}
	changes := tr.Report(check, Finding{State: routingv1alpha1.ZoneDrifted, Answer: "A 192.0.2.66"}, c.now)
	assert.ElementsMatch(t, []Change{{Gateway: &pair}, {Route: &weuRoute}, {Route: &other}}, changes)
	got, _ := tr.Route(other)
	assert.Equal(t, Observation{State: routingv1alpha1.ZoneDrifted, Answer: "CNAME " + target + " → A 192.0.2.66", Since: c.now,
		For: ExpectedOf(cname("web-ns-d-dev-myapp.example.com", target)).Key()}, got)
}

func TestTracker_ChangeWhileCheckingDropsTheStaleResult(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	tr.SetRoute(weuRoute, cname(host, target), false, false, c.now)
	inFlight := checkNext(t, tr, "external-dns-weu", c.now)
	tr.SetRoute(weuRoute, cname(host, "aks01-weu-external.example.com"), false, false, c.now)
	assert.Empty(t, tr.Report(inFlight, published("CNAME "+target), c.after(time.Millisecond)))
	got, _ := tr.Route(weuRoute)
	assert.Equal(t, NotCheckedYet, got.Answer, "the answer to the old record says nothing about the new one")
	check := checkNext(t, tr, "external-dns-weu", c.now)
	assert.Equal(t, []string{"aks01-weu-external.example.com."}, check.Expected[0].Values)
}

func TestTracker_ProcessedByExternalDNSChecksAgainAtOnce(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	tr.SetRoute(weuRoute, cname(host, target), false, false, c.now)
	var next time.Time
	for i := range 7 { // 1 s, 2 s, ... 64 s
		if i > 0 {
			c.now = next
		}
		check := checkNext(t, tr, "external-dns-weu", c.now)
		tr.Report(check, Finding{State: routingv1alpha1.ZonePending, Answer: "NXDOMAIN"}, c.now)
		_, _, next = tr.Next("external-dns-weu", c.now)
	}
	assert.Equal(t, 64*time.Second, next.Sub(c.now))
	assert.Empty(t, tr.SetRoute(weuRoute, cname(host, target), true, false, c.after(time.Second)))
	checkNext(t, tr, "external-dns-weu", c.now)
}

func TestTracker_ChangesComeBeforeSettledRecords(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	old := RouteKey{Namespace: "myapp", Name: "old-route", Controller: "external-dns-weu"}
	tr.SetRoute(old, cname("old-ns-d-dev-myapp.example.com", target), true, true, c.now)
	c.after(10 * time.Minute) // the old route's first check is long overdue
	tr.SetRoute(weuRoute, cname(host, target), false, false, c.now)
	assert.Equal(t, host, checkNext(t, tr, "external-dns-weu", c.now).Expected[0].Name)
	assert.Equal(t, "old-ns-d-dev-myapp.example.com.", checkNext(t, tr, "external-dns-weu", c.now).Expected[0].Name)
	_, ok, next := tr.Next("external-dns-neu", c.now)
	assert.False(t, ok)
	assert.True(t, next.IsZero(), "zones are independent")
}

func TestTracker_DeletedTargetLeavesRoutesPending(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	tr.SetTarget("external-dns-weu", pair, "istio-system/gw-weu", address(target, "10.1.2.3"), true, false, c.now)
	tr.SetRoute(weuRoute, cname(host, target), true, false, c.now)
	for range 2 {
		check := checkNext(t, tr, "external-dns-weu", c.now)
		tr.Report(check, published(map[string]string{"A": "A 10.1.2.3", "CNAME": "CNAME " + target}[check.Expected[0].Type]), c.now)
	}
	got, _ := tr.Route(weuRoute)
	require.Equal(t, routingv1alpha1.ZonePublished, got.State)
	assert.Empty(t, tr.DeleteTarget("other/gw-weu", c.now), "another entry point's records for the same name going away change nothing")
	assert.ElementsMatch(t, []Change{{Gateway: &pair}, {Route: &weuRoute}}, tr.DeleteTarget("istio-system/gw-weu", c.now))
	got, _ = tr.Route(weuRoute)
	assert.Equal(t, routingv1alpha1.ZonePending, got.State)

	tr.DropController("external-dns-weu")
	_, known := tr.Route(weuRoute)
	assert.False(t, known)
	_, ok, _ := tr.Next("external-dns-weu", c.after(time.Hour))
	assert.False(t, ok)
}

func TestTracker_NameOfTwoEntryPointsSurvivesTheDeletionOfOne(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	old := desired.Ingress{Controller: "istio-old", TargetPostfix: "internal"}
	tr.SetTarget("external-dns-weu", old, "old-ns/gw-weu", address(target, "10.1.2.3"), true, false, c.now)
	tr.SetTarget("external-dns-weu", pair, "istio-system/gw-weu", address(target, "10.1.2.3"), true, false, c.now)
	tr.SetRoute(weuRoute, cname(host, target), true, false, c.now)
	for range 3 {
		check := checkNext(t, tr, "external-dns-weu", c.now)
		tr.Report(check, published(map[string]string{"A": "A 10.1.2.3", "CNAME": "CNAME " + target}[check.Expected[0].Type]), c.now)
	}
	got, _ := tr.Route(weuRoute)
	require.Equal(t, routingv1alpha1.ZonePublished, got.State)
	tr.DeleteTarget("old-ns/gw-weu", c.now)
	got, _ = tr.Route(weuRoute)
	assert.Equal(t, routingv1alpha1.ZonePublished, got.State, "the other entry point still publishes the name")
	o, known := tr.Target("istio-system/gw-weu")
	assert.True(t, known)
	assert.Equal(t, routingv1alpha1.ZonePublished, o.State)
}

func TestTracker_ZoneCountsAndListsRoutesByState(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	web := RouteKey{Namespace: "myapp", Name: "web-route", Controller: "external-dns-weu"}
	elsewhere := RouteKey{Namespace: "myapp", Name: "api-route", Controller: "external-dns-neu"}
	tr.SetTarget("external-dns-weu", pair, "istio-system/gw-weu", address(target, "10.1.2.3"), true, true, c.now)
	tr.SetRoute(weuRoute, cname(host, target), true, false, c.now)
	tr.SetRoute(web, cname("web.example.com", target), true, false, c.now)
	tr.SetRoute(elsewhere, cname(host, target), true, false, c.now)
	assert.Equal(t, ZoneCounts{routingv1alpha1.ZonePending: 2}, tr.Zone("external-dns-weu"), "not checked yet: pending")
	pending := tr.Routes("external-dns-weu")
	assert.Len(t, pending, 2)
	for k, o := range pending {
		assert.Equal(t, Observation{State: routingv1alpha1.ZonePending, Answer: NotCheckedYet, Since: o.Since, For: o.For}, o, k)
	}

	// The zone answers: api's CNAME and the target's address as published, web's CNAME elsewhere.
	for range 10 {
		check, ok, _ := tr.Next("external-dns-weu", c.after(time.Minute))
		if !ok {
			break
		}
		switch check.Expected[0].Name {
		case Canonical(host):
			tr.Report(check, published("CNAME "+target), c.now)
		case Canonical(target):
			tr.Report(check, published("A 10.1.2.3"), c.now)
		default:
			tr.Report(check, Finding{State: routingv1alpha1.ZoneDrifted, Answer: "CNAME elsewhere.example.com"}, c.now)
		}
	}
	assert.Equal(t, ZoneCounts{routingv1alpha1.ZonePublished: 1, routingv1alpha1.ZoneDrifted: 1}, tr.Zone("external-dns-weu"))
	routes := tr.Routes("external-dns-weu")
	require.Len(t, routes, 2, "each zone its own routes")
	assert.Equal(t, routingv1alpha1.ZonePublished, routes[weuRoute].State)
	assert.Equal(t, "CNAME "+target+" → A 10.1.2.3", routes[weuRoute].Answer, "the route's answer composed with its target's")
	assert.Equal(t, routingv1alpha1.ZoneDrifted, routes[web].State)
	assert.Equal(t, "CNAME elsewhere.example.com", routes[web].Answer)
	assert.Equal(t, ZoneCounts{routingv1alpha1.ZonePending: 1}, tr.Zone("external-dns-neu"), "each zone its own routes")
	assert.Empty(t, tr.Zone("external-dns-frc"))
}

// A resolver may answer a record's previous value from its cache until the record's TTL has passed
// since it changed: such an answer is Pending until then, and drift only after.
func TestTracker_AResolversCachedAnswerIsDriftOnlyAfterTheTTL(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	old := "CNAME aks02-weu-internal.example.com."
	records := cname(host, target)
	records[0].RecordTTL = 60
	tr.SetRoute(weuRoute, records, true, false, c.now)
	changedAt := c.now

	check := checkNext(t, tr, "external-dns-weu", c.after(time.Second))
	tr.Report(check, Finding{State: routingv1alpha1.ZoneDrifted, Answer: old, Cached: true}, c.now)
	got, _ := tr.Route(weuRoute)
	assert.Equal(t, routingv1alpha1.ZonePending, got.State, "the previous value, still cached")
	assert.Equal(t, old+" (the resolver may serve it from its cache until 1970-01-01T00:17:40Z)", got.Answer)

	// Checked again with the backoff, but no later than when the cache must have let go.
	for reported := c.now; reported.Before(changedAt.Add(60 * time.Second)); {
		check, ok, next := tr.Next("external-dns-weu", c.now)
		if !ok {
			require.False(t, next.After(changedAt.Add(60*time.Second)), "next check %s is after the TTL ran out", next)
			c.now = next
			continue
		}
		tr.Report(check, Finding{State: routingv1alpha1.ZoneDrifted, Answer: old, Cached: true}, c.now)
		reported = c.now
	}
	got, _ = tr.Route(weuRoute)
	assert.Equal(t, routingv1alpha1.ZoneDrifted, got.State, "the TTL has passed: no cache excuses it")
	assert.Equal(t, old, got.Answer)
	assert.Equal(t, changedAt.Add(60*time.Second), c.now, "found at once when the TTL ran out")

	// An authoritative answer is never excused, nor one about records found at start.
	tr.SetRoute(weuRoute, cname(host, "aks03-weu-internal.example.com"), true, false, c.now)
	check = checkNext(t, tr, "external-dns-weu", c.now)
	tr.Report(check, Finding{State: routingv1alpha1.ZoneDrifted, Answer: old}, c.now)
	got, _ = tr.Route(weuRoute)
	assert.Equal(t, routingv1alpha1.ZoneDrifted, got.State)
	other := RouteKey{Namespace: "myapp", Name: "web-route", Controller: "external-dns-weu"}
	tr.SetRoute(other, cname("web.example.com", target), true, true, c.now)
	startedAt := c.now
	c.after(31 * time.Second) // the initial check is spread over the first minute (jitter 0.5)
	for known := false; !known; _, known = tr.Route(other) {
		check, ok, _ := tr.Next("external-dns-weu", c.now)
		require.True(t, ok)
		tr.Report(check, Finding{State: routingv1alpha1.ZoneDrifted, Answer: old, Cached: true}, c.now)
	}
	got, _ = tr.Route(other)
	assert.Equal(t, routingv1alpha1.ZonePending, got.State, "found at start: it may have changed just before, so it gets the TTL from then")
	for got.State != routingv1alpha1.ZoneDrifted {
		check, ok, next := tr.Next("external-dns-weu", c.now)
		if !ok {
			c.now = next
			continue
		}
		tr.Report(check, Finding{State: routingv1alpha1.ZoneDrifted, Answer: old, Cached: true}, c.now)
		got, _ = tr.Route(other)
	}
	assert.False(t, c.now.Before(startedAt.Add(300*time.Second)), "drift only once the TTL since verification started has passed")
}

// Through a resolver, a new record is first asked about once ExternalDNS has processed it: asked
// before, the resolver would cache its absence for every client; and the cached-answer tolerance
// starts again when ExternalDNS processes a change, since only then can the zone have the new
// value.
func TestTracker_AResolverIsAskedOnceExternalDNSProcessedTheRecord(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	tr.SetCached("external-dns-weu", true)
	c := &clock{now: time.Unix(1000, 0)}
	records := cname(host, target)
	records[0].RecordTTL = 60
	tr.SetRoute(weuRoute, records, false, false, c.now)
	_, ok, next := tr.Next("external-dns-weu", c.now)
	assert.False(t, ok, "not processed by ExternalDNS: not asked yet")
	assert.Equal(t, c.now.Add(5*time.Minute), next, "asked at the latest after the settled interval")

	c.after(40 * time.Second)
	tr.SetRoute(weuRoute, records, true, false, c.now) // ExternalDNS read it, and writes the zone now
	check := checkNext(t, tr, "external-dns-weu", c.now)
	tr.Report(check, Finding{State: routingv1alpha1.ZoneDrifted, Answer: "CNAME old.example.com.", Cached: true}, c.now)
	got, _ := tr.Route(weuRoute)
	assert.Equal(t, routingv1alpha1.ZonePending, got.State)
	assert.Contains(t, got.Answer, "until 1970-01-01T00:18:20Z", "the TTL counts from when ExternalDNS processed it (1040 s + 60 s), not from the change (1000 s + 60 s)")

	tr.SetCached("external-dns-weu", false)
	other := RouteKey{Namespace: "myapp", Name: "web-route", Controller: "external-dns-weu"}
	tr.SetRoute(other, cname("web.example.com", target), false, false, c.now)
	check = checkNext(t, tr, "external-dns-weu", c.now)
	assert.Equal(t, Canonical("web.example.com"), check.Expected[0].Name, "authoritative servers are asked at once: they cache nothing")
}

// A zone read whole costs one read for every due record: a record not published yet is checked
// with every read (each FastInterval) while ExternalDNS is at work, then every 30 s at most.
func TestTracker_AZoneReadWholeChecksAChangeEverySecondForTwoMinutesThenEvery30s(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	tr.SetWhole("external-dns-weu", true)
	c := &clock{now: time.Unix(1000, 0)}
	tr.SetRoute(weuRoute, cname(host, target), true, false, c.now)
	for elapsed := time.Duration(0); elapsed < eagerWindow; elapsed += time.Second {
		check := checkNext(t, tr, "external-dns-weu", c.now)
		assert.True(t, check.urgent)
		tr.Report(check, Finding{State: routingv1alpha1.ZonePending, Answer: "NXDOMAIN"}, c.now)
		_, ok, next := tr.Next("external-dns-weu", c.now)
		require.False(t, ok)
		require.Equal(t, c.now.Add(time.Second), next, "after %s: checked again with the next read", elapsed)
		c.after(time.Second)
	}
	check := checkNext(t, tr, "external-dns-weu", c.now)
	tr.Report(check, Finding{State: routingv1alpha1.ZonePending, Answer: "NXDOMAIN"}, c.now)
	_, _, next := tr.Next("external-dns-weu", c.now)
	assert.Equal(t, wholePendingCheck, next.Sub(c.now), "past the window, it backs off, to every 30 s at most")

	tr.SetWhole("external-dns-weu", false)
	other := RouteKey{Namespace: "myapp", Name: "web-route", Controller: "external-dns-weu"}
	tr.SetRoute(other, cname("web.example.com", target), true, false, c.now)
	check = checkNext(t, tr, "external-dns-weu", c.now)
	tr.Report(check, Finding{State: routingv1alpha1.ZonePending, Answer: "NXDOMAIN"}, c.now)
	c.after(time.Second)
	check = checkNext(t, tr, "external-dns-weu", c.now)
	tr.Report(check, Finding{State: routingv1alpha1.ZonePending, Answer: "NXDOMAIN"}, c.now)
	_, _, next = tr.Next("external-dns-weu", c.now)
	assert.Equal(t, c.now.Add(2*time.Second), next, "a zone asked name by name backs off at once")
}

func TestRouteRecord_AFailoverNameIsCheckedByItsOwnRecord(t *testing.T) {
	cname := func(name, target string) *endpoint.Endpoint {
		return &endpoint.Endpoint{DNSName: name, RecordType: endpoint.RecordTypeCNAME, Targets: endpoint.Targets{target}}
	}
	const api, gw, intermediate = "api.example.com", "aks01-weu-internal.example.com", "internal.myapp.weu._router-failover.example.com"
	assert.Equal(t, []*endpoint.Endpoint{cname(intermediate, gw)}, RouteRecord([]*endpoint.Endpoint{cname(api, intermediate), cname(intermediate, gw)}),
		"through the intermediate: the intermediate says who serves the name")
	assert.Equal(t, []*endpoint.Endpoint{cname(api, gw)}, RouteRecord([]*endpoint.Endpoint{cname(api, gw), cname(intermediate, gw)}),
		"the intermediate beside a direct name is not the name's")
	assert.Equal(t, []*endpoint.Endpoint{cname(api, gw)}, RouteRecord([]*endpoint.Endpoint{cname(api, gw)}))

	ep := &externaldnsv1alpha1.DNSEndpoint{Spec: externaldnsv1alpha1.DNSEndpointSpec{Endpoints: []*endpoint.Endpoint{cname(api, intermediate)}}}
	ep.Annotations = map[string]string{naming.AnnotationIntermediateTarget: gw}
	assert.Equal(t, []*endpoint.Endpoint{cname(intermediate, gw)}, RouteRecord(RouteRecords(ep)),
		"an intermediate the operators write: checked as pointing at the gateway the annotation names")
	delete(ep.Annotations, naming.AnnotationIntermediateTarget)
	assert.Equal(t, []*endpoint.Endpoint{cname(api, intermediate)}, RouteRecord(RouteRecords(ep)), "without the annotation, the name's own record")
}
