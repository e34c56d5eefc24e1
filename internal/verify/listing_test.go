package verify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

const arm = "Azure Resource Manager"

// zoneListing is example.com as a listing found it: the route's CNAME, the target's A records,
// a name with only a TXT record left out (not listed), a name with an A record where a CNAME is
// expected.
func zoneListing() Listing {
	l := Listing{Source: arm}
	l.Add("example.com", "api-ns-d-dev-myapp", "CNAME", "AKS01-weu-internal.example.com")
	l.Add("example.com", "aks01-weu-internal", "A", "10.1.2.4", "10.1.2.3")
	l.Add("example.com", "aks01-weu-internal", "AAAA", "fd00::1")
	l.Add("example.com", "shop", "A", "192.0.2.1")
	l.Add("example.com", "@", "A", "192.0.2.9")
	return l
}

func TestListing_AnswersAsTheZonesNameServerWould(t *testing.T) {
	l := zoneListing()
	tests := []struct {
		name   string
		e      Expected
		want   routingv1alpha1.ZoneState
		answer string
	}{
		{"the route's CNAME", Expected{cnameSet}, routingv1alpha1.ZonePublished, "CNAME " + target},
		{"the target's addresses, in any order", Expected{aSet}, routingv1alpha1.ZonePublished, "A 10.1.2.3,10.1.2.4"},
		{"A and AAAA together", Expected{aSet, {Name: target, Type: "AAAA", Values: []string{"fd00::1"}}},
			routingv1alpha1.ZonePublished, "A 10.1.2.3,10.1.2.4, AAAA fd00::1"},
		{"an address missing from the set", Expected{{Name: target, Type: "A", Values: []string{"10.1.2.3"}}},
			routingv1alpha1.ZoneDrifted, "A 10.1.2.3,10.1.2.4"},
		{"a CNAME pointing elsewhere", Expected{{Name: host, Type: "CNAME", Values: []string{"aks02-neu-internal.example.com."}}},
			routingv1alpha1.ZoneDrifted, "CNAME " + target},
		{"an A record where the CNAME belongs", Expected{{Name: "shop.example.com.", Type: "CNAME", Values: []string{target}}},
			routingv1alpha1.ZoneDrifted, "A 192.0.2.1"},
		{"a CNAME where addresses belong", Expected{{Name: host, Type: "A", Values: []string{"10.0.0.1"}}},
			routingv1alpha1.ZoneDrifted, "CNAME " + target},
		{"a name the zone does not have", Expected{{Name: "new.example.com.", Type: "CNAME", Values: []string{target}}},
			routingv1alpha1.ZonePending, "NXDOMAIN"},
		{"a name with records of another type only", Expected{{Name: target, Type: "AAAA", Values: []string{"fd00::1"}}},
			routingv1alpha1.ZonePublished, "AAAA fd00::1"},
		{"no AAAA at a name with A records", Expected{{Name: "shop.example.com.", Type: "AAAA", Values: []string{"fd00::2"}}},
			routingv1alpha1.ZonePending, "no AAAA record"},
		{"the apex, named @", Expected{{Name: "example.com.", Type: "A", Values: []string{"192.0.2.9"}}},
			routingv1alpha1.ZonePublished, "A 192.0.2.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := JudgeListing(tt.e, l)
			assert.Equal(t, tt.want, f.State)
			assert.Equal(t, tt.answer, f.Answer)
			assert.False(t, f.Failed)
			assert.False(t, f.Cached, "Resource Manager reads the zone itself: no cache in between")
		})
	}
}

func TestListingFailed_IsAFailureNamingTheReason(t *testing.T) {
	f := ListingFailed(arm, ThrottledReason(30*time.Second))
	assert.True(t, f.Failed)
	assert.Equal(t, routingv1alpha1.ZoneUnreachable, f.State)
	assert.Equal(t, "no answer from Azure Resource Manager (Throttled: Retry-After 30s)", f.Answer)
	assert.Equal(t, "Throttled", ThrottledReason(0))
	assert.Equal(t, "403 AuthorizationFailed", HTTPReason(403, "AuthorizationFailed"))
	assert.Equal(t, "500", HTTPReason(500, ""))
}

func TestListingPacing_BacksOffAndHonoursRetryAfter(t *testing.T) {
	p := ListingPacing{Interval: 10 * time.Second, MaxBackoff: 5 * time.Minute}
	last := time.Unix(1000, 0)
	tests := []struct {
		name       string
		failures   int
		retryAfter time.Duration
		want       time.Duration
	}{
		{"after a good listing: the interval", 0, 0, 10 * time.Second},
		{"after one failure: the interval", 1, 0, 10 * time.Second},
		{"doubling with each failure", 2, 0, 20 * time.Second},
		{"and again", 3, 0, 40 * time.Second},
		{"capped at MaxBackoff (320 s would be next)", 6, 0, 5 * time.Minute},
		{"capped", 20, 0, 5 * time.Minute},
		{"no overflow after very many", 1000, 0, 5 * time.Minute},
		{"Retry-After longer than the backoff wins", 1, 30 * time.Second, 30 * time.Second},
		{"Retry-After longer than the cap is still honoured", 20, 10 * time.Minute, 10 * time.Minute},
		{"a backoff longer than Retry-After wins", 3, 5 * time.Second, 40 * time.Second},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, p.NextListing(last, tt.failures, tt.retryAfter).Sub(last), "%s (failures %d, Retry-After %s)", tt.name, tt.failures, tt.retryAfter)
	}
	slow := ListingPacing{Interval: 10 * time.Minute, MaxBackoff: 5 * time.Minute}
	assert.Equal(t, 10*time.Minute, slow.NextListing(last, 4, 0).Sub(last), "never more often than the interval")
}

func TestTracker_NextSettledTakesPublishedRecordsAheadButNeverChangedOnes(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	tr.SetTarget("external-dns-weu", pair, "istio-system/gw-weu", address(target, "10.1.2.3"), true, false, c.now)
	check := checkNext(t, tr, "external-dns-weu", c.now)
	tr.Report(check, published("A 10.1.2.3"), c.now) // settled: due again in 5 minutes (jitter 0.5)

	tr.SetRoute(weuRoute, cname(host, target), true, false, c.after(time.Second)) // changed: urgent, due now

	_, ok := tr.NextSettled("external-dns-weu", c.now.Add(4*time.Minute))
	assert.False(t, ok, "the settled record is not due within 4 minutes")
	settled, ok := tr.NextSettled("external-dns-weu", c.now.Add(5*time.Minute))
	require.True(t, ok, "the settled record is taken ahead of its time")
	assert.Equal(t, target, settled.Expected[0].Name)
	_, ok = tr.NextSettled("external-dns-weu", c.now.Add(time.Hour))
	assert.False(t, ok, "the changed route's CNAME is not a settled record")
	urgent := checkNext(t, tr, "external-dns-weu", c.now)
	assert.Equal(t, host, urgent.Expected[0].Name, "the changed record stays in the urgent queue")
	_, ok = tr.NextSettled("unknown-zone", c.now)
	assert.False(t, ok)
}

func TestTracker_ReturnedChecksAreDueAgain(t *testing.T) {
	var observed []time.Duration
	tr := newTracker(&observed)
	c := &clock{now: time.Unix(1000, 0)}
	tr.SetRoute(weuRoute, cname(host, target), true, false, c.now)
	taken := checkNext(t, tr, "external-dns-weu", c.now)
	_, ok, _ := tr.Next("external-dns-weu", c.now)
	require.False(t, ok, "taken: not due twice")

	tr.Return([]Check{taken}, c.after(time.Second)) // the zone's loop stopped before checking it
	again := checkNext(t, tr, "external-dns-weu", c.now)
	assert.Equal(t, taken.Expected, again.Expected, "due again at once")

	tr.SetRoute(weuRoute, cname(host, "aks02-neu-internal.example.com."), true, false, c.after(time.Second)) // changed meanwhile
	tr.Return([]Check{again}, c.now)
	changed := checkNext(t, tr, "external-dns-weu", c.now)
	assert.Equal(t, "aks02-neu-internal.example.com.", changed.Expected[0].Values[0])
	_, ok, _ = tr.Next("external-dns-weu", c.now)
	assert.False(t, ok, "a stale check given back is not scheduled twice")
}
