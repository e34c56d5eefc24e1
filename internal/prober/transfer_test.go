package prober

import (
	"context"
	"strings"
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

// transferOf is a zone transfer's lister of example.com from servers, with its own counters and
// the outcomes its SOA queries reported.
func transferOf(servers ...*testdns.Server) (*zoneTransfer, *TransferCounters, *[]string) {
	counters := &TransferCounters{}
	var outcomes []string
	t := &zoneTransfer{apex: "example.com", timeout: time.Second, counters: counters, counted: func(o string) { outcomes = append(outcomes, o) }}
	for _, s := range servers {
		t.servers = append(t.servers, s.Addr)
	}
	return t, counters, &outcomes
}

// cnameOf is the CNAME target the listing holds for name, without the final dot.
func cnameOf(l verify.Listing, name string) string {
	for _, r := range l.Records[verify.Canonical(name)] {
		if r.Type == "CNAME" {
			return strings.TrimSuffix(r.Value, ".")
		}
	}
	return ""
}

// Two listings of a zone nothing changed make one transfer and one SOA query; the second is the
// first's listing, and asks no transfer of the loop's counting (requests 0).
func TestZoneTransfer_UnchangedZoneIsNotTransferredAgain(t *testing.T) {
	s := startServer(t)
	s.Set("api.example.com. 300 IN CNAME aks01-weu-internal.example.com.", "aks01-weu-internal.example.com. 300 IN A 10.1.2.3")
	zt, counters, outcomes := transferOf(s)

	first, requests, err := zt.List(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, requests)
	assert.Equal(t, "aks01-weu-internal.example.com", cnameOf(first, "api.example.com"))
	second, requests, err := zt.List(t.Context())
	require.NoError(t, err)
	assert.Zero(t, requests, "no transfer")
	assert.Equal(t, first, second)

	assert.Equal(t, 1, s.Transfers())
	soas, _ := s.SOAQueries()
	assert.Equal(t, 1, soas)
	assert.Equal(t, []string{"answered"}, *outcomes, "the SOA query, counted as a query")
	got := counters.Stats()
	assert.Equal(t, TransferStats{SOAChecks: 1, Unchanged: 1, Transfers: 1, Records: 4, Bytes: got.Bytes, LastRecords: 4, LastBytes: got.Bytes}, got)
	assert.Positive(t, got.Bytes)
}

// A change of the zone (its serial with it) makes the next listing a transfer that sees it; a
// change between the SOA query and the transfer is not missed: the serial remembered is the
// transfer's.
func TestZoneTransfer_ChangedSerialTransfersAgain(t *testing.T) {
	s := startServer(t)
	s.Set("api.example.com. 300 IN CNAME aks01-weu-internal.example.com.")
	zt, counters, _ := transferOf(s)
	_, _, err := zt.List(t.Context())
	require.NoError(t, err)

	s.Set("api.example.com. 300 IN CNAME aks02-neu-internal.example.com.")
	s.SetSOASerial(s.Serial() + 100) // the SOA query sees one serial, the transfer another
	l, requests, err := zt.List(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, requests)
	assert.Equal(t, "aks02-neu-internal.example.com", cnameOf(l, "api.example.com"))

	s.SetSOASerial(0)
	l, requests, err = zt.List(t.Context())
	require.NoError(t, err)
	assert.Zero(t, requests, "the serial the second transfer began with")
	assert.Equal(t, "aks02-neu-internal.example.com", cnameOf(l, "api.example.com"))
	assert.Equal(t, 2, s.Transfers())
	got := counters.Stats()
	assert.Equal(t, [3]int64{2, 1, 2}, [3]int64{got.SOAChecks, got.Unchanged, got.Transfers}, "SOA checks, unchanged, transfers")
}

// A SOA query that fails makes a transfer, as before there were SOA queries; the failure is
// counted as a query's.
func TestZoneTransfer_FailingSOAQueryFallsBackToATransfer(t *testing.T) {
	s := startServer(t)
	s.Set("api.example.com. 300 IN CNAME aks01-weu-internal.example.com.")
	zt, counters, outcomes := transferOf(s)
	_, _, err := zt.List(t.Context())
	require.NoError(t, err)

	s.SetSOARefused(true)
	s.Set("api.example.com. 300 IN CNAME aks02-neu-internal.example.com.")
	l, requests, err := zt.List(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, requests)
	assert.Equal(t, "aks02-neu-internal.example.com", cnameOf(l, "api.example.com"))
	assert.Equal(t, []string{"error"}, *outcomes)
	got := counters.Stats()
	assert.Equal(t, [4]int64{1, 1, 0, 2}, [4]int64{got.SOAChecks, got.SOAFailures, got.Unchanged, got.Transfers}, "SOA checks, failures, unchanged, transfers")
}

// A failed transfer is no listing and is not remembered: the listing after it transfers again and
// sees the change.
func TestZoneTransfer_FailedTransferIsNotRemembered(t *testing.T) {
	s := startServer(t)
	s.Set("api.example.com. 300 IN CNAME aks01-weu-internal.example.com.")
	zt, counters, _ := transferOf(s)
	_, _, err := zt.List(t.Context())
	require.NoError(t, err)

	s.Set("api.example.com. 300 IN CNAME aks02-neu-internal.example.com.")
	s.SetTransfersRefused(true)
	_, requests, err := zt.List(t.Context())
	require.Error(t, err)
	assert.Equal(t, 1, requests)
	source, reason, _ := zt.Failure(err)
	assert.Equal(t, [2]string{s.Addr, "transfer refused"}, [2]string{source, reason})

	s.SetTransfersRefused(false)
	l, requests, err := zt.List(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, requests)
	assert.Equal(t, "aks02-neu-internal.example.com", cnameOf(l, "api.example.com"))
	assert.Equal(t, 3, s.Transfers())
	got := counters.Stats()
	assert.Equal(t, [4]int64{2, 0, 3, 1}, [4]int64{got.SOAChecks, got.Unchanged, got.Transfers, got.FailedTransfers}, "SOA checks, unchanged, transfers, failed")
}

// The remembered transfer answers only for the server it came from: a first server that refuses
// is asked for a transfer every time, the second one only for its SOA.
func TestZoneTransfer_RemembersTheServerItTransferredFrom(t *testing.T) {
	refusing, serving := startServer(t), startServer(t)
	refusing.SetTransfersRefused(true)
	serving.Set("api.example.com. 300 IN CNAME aks01-weu-internal.example.com.")
	zt, _, _ := transferOf(refusing, serving)
	for range 2 {
		l, _, err := zt.List(t.Context())
		require.NoError(t, err)
		assert.Equal(t, serving.Addr, l.Source)
	}
	assert.Equal(t, 2, refusing.Transfers())
	assert.Equal(t, 1, serving.Transfers())
	refusingSOAs, _ := refusing.SOAQueries()
	servingSOAs, _ := serving.SOAQueries()
	assert.Equal(t, [2]int{0, 1}, [2]int{refusingSOAs, servingSOAs})
}

// In the prober's loop, a zone read whole and read again often (its records settled every 20 ms)
// is transferred once while it does not change, asked for its SOA meanwhile, and transferred again
// when it changes: the change is found.
func TestProber_UnchangedZoneIsListedWithoutATransfer(t *testing.T) {
	s := startServer(t)
	s.Set("api.example.com. 300 IN CNAME aks01-weu-internal.example.com.", "aks01-weu-internal.example.com. 300 IN A 10.1.2.3")
	tracker := verify.NewTracker(verify.Settings{FastInterval: 10 * time.Millisecond, SettledInterval: 20 * time.Millisecond}, func() float64 { return 0 }, nil)
	key := verify.RouteKey{Namespace: "ns", Name: "api", Controller: "external-dns-weu"}
	tracker.SetRoute(key, []*endpoint.Endpoint{{DNSName: "api.example.com", RecordType: "CNAME", Targets: endpoint.Targets{"aks01-weu-internal.example.com"}}}, true, false, time.Now())
	tracker.SetTarget("external-dns-weu", desired.Ingress{Controller: "istio", TargetPostfix: "internal"}, "istio-system/gw",
		[]*endpoint.Endpoint{{DNSName: "aks01-weu-internal.example.com", RecordType: "A", Targets: endpoint.Targets{"10.1.2.3"}}}, true, false, time.Now())
	var mu sync.Mutex
	outcomes := map[string]int{}
	p := New(tracker, Limits{TransferInterval: 10 * time.Millisecond}, func([]verify.Change) {}, func(_, o string) { mu.Lock(); outcomes[o]++; mu.Unlock() })
	p.SetZones([]Zone{{Controller: "external-dns-weu", Nameservers: []string{s.Addr}, TransferZone: "example.com", Timeout: time.Second}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = p.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	require.Eventually(t, func() bool { soas, _ := s.SOAQueries(); return soas >= 5 }, 10*time.Second, 10*time.Millisecond)
	o, _ := tracker.Route(key)
	assert.Equal(t, routingv1alpha1.ZonePublished, o.State)
	assert.Equal(t, 1, s.Transfers(), "five listings or more, one transfer")
	mu.Lock()
	assert.Positive(t, outcomes["answered"])
	assert.Zero(t, outcomes["error"]+outcomes["timeout"])
	mu.Unlock()

	s.Set("api.example.com. 300 IN CNAME aks02-neu-internal.example.com.")
	require.Eventually(t, func() bool {
		o, _ := tracker.Route(key)
		return o.State == routingv1alpha1.ZoneDrifted
	}, 10*time.Second, 10*time.Millisecond, "the change is found")
	assert.Equal(t, 2, s.Transfers())
}
