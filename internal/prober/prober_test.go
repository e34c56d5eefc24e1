package prober

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/testdns"
	"github.com/service-router/service-router-operator/internal/verify"
)

func startServer(t *testing.T) *testdns.Server {
	t.Helper()
	s, err := testdns.Start()
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestQuery_AsksWithoutRecursionAndReadsTheChain(t *testing.T) {
	s := startServer(t)
	s.Set("api.example.com. 300 IN CNAME aks01-weu-internal.example.com.", "aks01-weu-internal.example.com. 300 IN A 10.1.2.3")
	ctx := t.Context()

	got := Query(ctx, s.Addr, "api.example.com", "A", time.Second, false)
	assert.Equal(t, verify.Response{Server: s.Addr, Rcode: "NOERROR", Records: []verify.Record{
		{Name: "api.example.com.", Type: "CNAME", Value: "aks01-weu-internal.example.com."},
		{Name: "aks01-weu-internal.example.com.", Type: "A", Value: "10.1.2.3"},
	}}, got)
	assert.Equal(t, "NXDOMAIN", Query(ctx, s.Addr, "web.example.com", "A", time.Second, false).Rcode)
	total, recursive := s.Queries()
	assert.Equal(t, 2, total)
	assert.Zero(t, recursive, "queries never ask for recursion: no resolver caches anything")

	s.SetDown(true)
	assert.Equal(t, "timeout", Query(ctx, s.Addr, "api.example.com", "A", 200*time.Millisecond, false).Failure)
	closed := startServer(t)
	closed.Close()
	assert.NotEmpty(t, Query(ctx, closed.Addr, "api.example.com", "A", 200*time.Millisecond, false).Failure)
}

// A zone nobody may ask directly is checked through a resolver: the query asks for recursion and
// takes the answer without the AA bit, which an authoritative check refuses.
func TestQuery_ThroughAResolver(t *testing.T) {
	s := startServer(t)
	s.Set("api.example.com. 300 IN CNAME aks01-weu-internal.example.com.", "aks01-weu-internal.example.com. 300 IN A 10.1.2.3")
	s.SetResolver(true)
	ctx := t.Context()

	assert.Equal(t, "not authoritative", Query(ctx, s.Addr, "api.example.com", "A", time.Second, false).Failure,
		"a resolver's answer is no authoritative answer")
	got := Query(ctx, s.Addr, "api.example.com", "A", time.Second, true)
	assert.Empty(t, got.Failure)
	assert.Equal(t, routingv1alpha1.ZonePublished,
		verify.Judge(verify.RecordSet{Name: "api.example.com.", Type: "CNAME", Values: []string{"aks01-weu-internal.example.com."}}, got).State)
	_, recursive := s.Queries()
	assert.Equal(t, 1, recursive, "the resolver was asked to recurse")
}

// TestProber_RateLimitsEachZone checks 60 records of one zone with a limit of 20 queries per
// second and a burst of 20: the server must not see them all at once. The limit is asserted
// through what the server receives within the first half second, not through a duration.
func TestProber_RateLimitsEachZone(t *testing.T) {
	s := startServer(t)
	s.Set("aks01-weu-internal.example.com. 300 IN A 10.1.2.3")
	tracker := verify.NewTracker(verify.Settings{FastInterval: time.Hour, SettledInterval: time.Hour}, func() float64 { return 0 }, nil)
	now := time.Now()
	for i := range 60 {
		name := "r" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".example.com"
		s.Set(name + ". 300 IN CNAME aks01-weu-internal.example.com.")
		tracker.SetRoute(verify.RouteKey{Namespace: "ns", Name: name, Controller: "external-dns-weu"},
			[]*endpoint.Endpoint{{DNSName: name, RecordType: "CNAME", Targets: endpoint.Targets{"aks01-weu-internal.example.com"}}}, true, false, now)
	}
	var mu sync.Mutex
	var changes int
	p := New(tracker, Limits{QPS: 20, Concurrency: 4}, func(c []verify.Change) { mu.Lock(); changes += len(c); mu.Unlock() }, nil)
	added, _ := p.SetZones([]Zone{{Controller: "external-dns-weu", Nameservers: []string{s.Addr}, Timeout: time.Second}})
	assert.Equal(t, []string{"external-dns-weu"}, added)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = p.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	time.Sleep(500 * time.Millisecond)
	early, _ := s.Queries()
	assert.LessOrEqual(t, early, 31, "at most the burst of 20 plus 20/s for half a second")
	require.Eventually(t, func() bool { total, _ := s.Queries(); return total >= 60 }, 30*time.Second, 50*time.Millisecond)
	require.Eventually(t, func() bool {
		o, _ := tracker.Route(verify.RouteKey{Namespace: "ns", Name: "rzb.example.com", Controller: "external-dns-weu"})
		return o.Answer != verify.NotCheckedYet
	}, 10*time.Second, 50*time.Millisecond)
	mu.Lock()
	assert.Positive(t, changes)
	mu.Unlock()
}

func TestProber_FallsBackToTheNextNameServer(t *testing.T) {
	dead := startServer(t)
	dead.SetDown(true)
	live := startServer(t)
	live.Set("aks01-weu-internal.example.com. 300 IN A 10.1.2.3")
	tracker := verify.NewTracker(verify.Settings{}, func() float64 { return 0 }, nil)
	pair := desired.Ingress{Controller: "istio", TargetPostfix: "internal"}
	tracker.SetTarget("external-dns-weu", pair, "istio-system/gw", []*endpoint.Endpoint{{DNSName: "aks01-weu-internal.example.com", RecordType: "A", Targets: endpoint.Targets{"10.1.2.3"}}}, true, false, time.Now())
	var outcomes sync.Map
	p := New(tracker, Limits{}, func([]verify.Change) {}, func(_, outcome string) { outcomes.Store(outcome, true) })
	p.SetZones([]Zone{{Controller: "external-dns-weu", Nameservers: []string{dead.Addr, live.Addr}, Timeout: 200 * time.Millisecond}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = p.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, func() bool {
		o, _ := tracker.Target("istio-system/gw")
		return o.State == routingv1alpha1.ZonePublished
	}, 10*time.Second, 50*time.Millisecond)
	_, timedOut := outcomes.Load("timeout")
	_, answered := outcomes.Load("answered")
	assert.True(t, timedOut && answered, "the dead server was asked first, the live one answered")
}

// A zone read whole answers every due record from one transfer: 60 routes and their target need
// a transfer or two, no query per name, and each route ends Published.
func TestProber_ReadsAZoneWholeWithOneTransferForEveryDueRecord(t *testing.T) {
	s := startServer(t)
	s.Set("aks01-weu-internal.example.com. 300 IN A 10.1.2.3")
	tracker := verify.NewTracker(verify.Settings{FastInterval: time.Hour, SettledInterval: time.Hour}, func() float64 { return 0 }, nil)
	now := time.Now()
	keys := make([]verify.RouteKey, 60)
	for i := range keys {
		name := fmt.Sprintf("r%02d.ns1.weu.example.com", i)
		if i != 59 { // the last one is not published yet
			s.Set(name + ". 300 IN CNAME aks01-weu-internal.example.com.")
		}
		keys[i] = verify.RouteKey{Namespace: "ns", Name: name, Controller: "external-dns-weu"}
		tracker.SetRoute(keys[i], []*endpoint.Endpoint{{DNSName: name, RecordType: "CNAME", Targets: endpoint.Targets{"aks01-weu-internal.example.com"}}}, true, false, now)
	}
	tracker.SetTarget("external-dns-weu", desired.Ingress{Controller: "istio", TargetPostfix: "internal"}, "istio-system/gw",
		[]*endpoint.Endpoint{{DNSName: "aks01-weu-internal.example.com", RecordType: "A", Targets: endpoint.Targets{"10.1.2.3"}}}, true, false, now)
	p := New(tracker, Limits{}, func([]verify.Change) {}, nil)
	p.SetZones([]Zone{{Controller: "external-dns-weu", Nameservers: []string{s.Addr}, TransferZone: "example.com", Timeout: time.Second}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = p.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	require.Eventually(t, func() bool {
		o, _ := tracker.Route(keys[0])
		return o.State == routingv1alpha1.ZonePublished
	}, 10*time.Second, 20*time.Millisecond)
	for _, k := range keys[:59] {
		o, _ := tracker.Route(k)
		assert.Equal(t, routingv1alpha1.ZonePublished, o.State, k.Name)
	}
	missing, _ := tracker.Route(keys[59])
	assert.Equal(t, routingv1alpha1.ZonePending, missing.State)
	assert.Equal(t, "NXDOMAIN", missing.Answer)
	queries, _ := s.Queries()
	assert.Zero(t, queries, "no name was asked on its own")
	assert.LessOrEqual(t, s.Transfers(), 2, "the records due together shared their transfers")
}

// A server that refuses the transfer leaves the records as they were until three transfers in a
// row failed, then says why: the zone is Unreachable, "transfer refused".
func TestProber_ARefusedTransferIsUnreachableWithItsReason(t *testing.T) {
	s := startServer(t)
	s.Set("api.example.com. 300 IN CNAME aks01-weu-internal.example.com.")
	s.SetTransfersRefused(true)
	tracker := verify.NewTracker(verify.Settings{FastInterval: 10 * time.Millisecond, SettledInterval: time.Hour}, func() float64 { return 0 }, nil)
	key := verify.RouteKey{Namespace: "ns", Name: "api", Controller: "external-dns-weu"}
	tracker.SetRoute(key, []*endpoint.Endpoint{{DNSName: "api.example.com", RecordType: "CNAME", Targets: endpoint.Targets{"aks01-weu-internal.example.com"}}}, true, false, time.Now())
	s.Set("aks01-weu-internal.example.com. 300 IN A 10.1.2.3")
	tracker.SetTarget("external-dns-weu", desired.Ingress{Controller: "istio", TargetPostfix: "internal"}, "istio-system/gw",
		[]*endpoint.Endpoint{{DNSName: "aks01-weu-internal.example.com", RecordType: "A", Targets: endpoint.Targets{"10.1.2.3"}}}, true, false, time.Now())
	var outcomes sync.Map
	p := New(tracker, Limits{TransferInterval: 10 * time.Millisecond}, func([]verify.Change) {}, func(_, outcome string) { outcomes.Store(outcome, true) })
	p.SetZones([]Zone{{Controller: "external-dns-weu", Nameservers: []string{s.Addr}, TransferZone: "example.com", Timeout: time.Second}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = p.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	require.Eventually(t, func() bool {
		o, _ := tracker.Route(key)
		return o.State == routingv1alpha1.ZoneUnreachable
	}, 10*time.Second, 10*time.Millisecond)
	o, _ := tracker.Route(key)
	assert.Equal(t, "no answer from "+s.Addr+" (transfer refused)", o.Answer)
	assert.GreaterOrEqual(t, s.Transfers(), 3)
	_, failed := outcomes.Load("error")
	assert.True(t, failed, "the refusals were counted as errors")

	s.SetTransfersRefused(false)
	require.Eventually(t, func() bool {
		o, _ := tracker.Route(key)
		return o.State == routingv1alpha1.ZonePublished
	}, 10*time.Second, 10*time.Millisecond)
}
