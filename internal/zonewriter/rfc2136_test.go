package zonewriter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/prober"
	"github.com/service-router/service-router-operator/internal/testdns"
	"github.com/service-router/service-router-operator/internal/zonewriter"
)

// startZone starts a server holding a small failover zone: the ownership TXT of api and the
// gateway's address.
func startZone(t *testing.T, start func() (*testdns.Server, error)) *testdns.Server {
	t.Helper()
	srv, err := start()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	srv.Set("weu-d-cname-api."+zone+`. 300 IN TXT "`+owner1+`"`,
		"api."+zone+". 300 IN CNAME aks01-weu-internal."+zone+".",
		"aks01-weu-internal."+zone+". 300 IN A 10.1.2.3")
	return srv
}

// since is what RFC2136.Read counted after before (the counters are the package's: the tests of
// this package run one at a time).
func since(before prober.TransferStats) prober.TransferStats {
	now := zonewriter.RFC2136Stats()
	return prober.TransferStats{SOAChecks: now.SOAChecks - before.SOAChecks, SOAFailures: now.SOAFailures - before.SOAFailures,
		Unchanged: now.Unchanged - before.Unchanged, Transfers: now.Transfers - before.Transfers, FailedTransfers: now.FailedTransfers - before.FailedTransfers,
		Records: now.Records - before.Records, Bytes: now.Bytes - before.Bytes, LastRecords: now.LastRecords, LastBytes: now.LastBytes}
}

// Two reads of a zone nothing changed make one transfer and one SOA query; the second read is the
// first one's reading, a copy that a caller may change without changing the next.
func TestRFC2136_UnchangedZoneIsNotTransferredAgain(t *testing.T) {
	srv := startZone(t, testdns.Start)
	w := zonewriter.RFC2136{Server: srv.Addr, Zone: zone}
	before := zonewriter.RFC2136Stats()

	first, err := w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{owner1}, first.TXT["weu-d-cname-api."+zone].Values)
	assert.Equal(t, 1, srv.Transfers())
	soas, _ := srv.SOAQueries()
	assert.Zero(t, soas, "nothing remembered: no SOA query")
	first.TXT["weu-d-cname-api."+zone].Values[0] = "changed by a caller"
	delete(first.Addresses, "aks01-weu-internal."+zone)

	second, err := w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, srv.Transfers(), "the serial said unchanged: no transfer")
	soas, _ = srv.SOAQueries()
	assert.Equal(t, 1, soas)
	assert.True(t, second.Read)
	assert.Equal(t, []string{owner1}, second.TXT["weu-d-cname-api."+zone].Values, "the remembered reading is not the first caller's")
	assert.Equal(t, []string{"10.1.2.3"}, second.Addresses["aks01-weu-internal."+zone])
	second.TXT["weu-d-cname-api."+zone].Values[0] = "changed by a caller"
	delete(second.Addresses, "aks01-weu-internal."+zone)

	third, err := w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{owner1}, third.TXT["weu-d-cname-api."+zone].Values, "nor the second's")
	assert.Equal(t, []string{"10.1.2.3"}, third.Addresses["aks01-weu-internal."+zone])

	got := since(before)
	assert.Equal(t, prober.TransferStats{SOAChecks: 2, Unchanged: 2, Transfers: 1, Records: 5, Bytes: got.Bytes, LastRecords: 5, LastBytes: got.Bytes}, got,
		"the transfer held 3 records and the SOA twice")
	assert.Positive(t, got.Bytes)
}

// A change of the zone (its serial incremented with it) makes the next read transfer and see it;
// the read after that is answered by the new transfer.
func TestRFC2136_ChangedSerialTransfersAgain(t *testing.T) {
	srv := startZone(t, testdns.Start)
	w := zonewriter.RFC2136{Server: srv.Addr, Zone: zone}
	_, err := w.Read(t.Context())
	require.NoError(t, err)

	srv.Set("aks01-weu-internal." + zone + ". 300 IN A 10.1.2.4")
	got, err := w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Transfers())
	assert.Equal(t, []string{"10.1.2.4"}, got.Addresses["aks01-weu-internal."+zone])

	got, err = w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Transfers(), "unchanged since the second transfer")
	assert.Equal(t, []string{"10.1.2.4"}, got.Addresses["aks01-weu-internal."+zone])
	soas, _ := srv.SOAQueries()
	assert.Equal(t, 2, soas)
}

// The serial remembered is the transfer's own, not the SOA query's: a zone that changed between
// the query and the transfer is transferred again next time, and one that did not is not.
func TestRFC2136_SerialIsTheTransfersOwn(t *testing.T) {
	srv := startZone(t, testdns.Start)
	w := zonewriter.RFC2136{Server: srv.Addr, Zone: zone}
	_, err := w.Read(t.Context())
	require.NoError(t, err)

	srv.Set("aks01-weu-internal." + zone + ". 300 IN A 10.1.2.4")
	srv.SetSOASerial(srv.Serial() + 100) // the SOA query sees one serial, the transfer another
	_, err = w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Transfers())

	srv.SetSOASerial(0)
	_, err = w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Transfers(), "the SOA query now says the serial the second transfer began with")
}

// A SOA query that fails is no reason not to read: the zone is transferred, as before there were
// SOA queries.
func TestRFC2136_FailingSOAQueryFallsBackToATransfer(t *testing.T) {
	srv := startZone(t, testdns.Start)
	w := zonewriter.RFC2136{Server: srv.Addr, Zone: zone}
	_, err := w.Read(t.Context())
	require.NoError(t, err)
	before := zonewriter.RFC2136Stats()

	srv.SetSOARefused(true)
	srv.Set("aks01-weu-internal." + zone + ". 300 IN A 10.1.2.4")
	got, err := w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 2, srv.Transfers())
	assert.Equal(t, []string{"10.1.2.4"}, got.Addresses["aks01-weu-internal."+zone])
	s := since(before)
	assert.Equal(t, [4]int64{1, 1, 0, 1}, [4]int64{s.SOAChecks, s.SOAFailures, s.Unchanged, s.Transfers}, "SOA checks, failures, unchanged, transfers")
}

// A failed transfer is no reading and is not remembered: the read after it transfers again (the
// SOA says a serial the last complete transfer did not have) and sees the change.
func TestRFC2136_FailedTransferIsNotRemembered(t *testing.T) {
	srv := startZone(t, testdns.Start)
	w := zonewriter.RFC2136{Server: srv.Addr, Zone: zone}
	_, err := w.Read(t.Context())
	require.NoError(t, err)
	before := zonewriter.RFC2136Stats()

	srv.Set("aks01-weu-internal." + zone + ". 300 IN A 10.1.2.4")
	srv.SetTransfersRefused(true)
	_, err = w.Read(t.Context())
	require.Error(t, err, "a refused transfer is no reading")
	srv.SetTransfersRefused(false)

	got, err := w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"10.1.2.4"}, got.Addresses["aks01-weu-internal."+zone])
	assert.Equal(t, 3, srv.Transfers())
	s := since(before)
	assert.Equal(t, [4]int64{2, 0, 2, 1}, [4]int64{s.SOAChecks, s.Unchanged, s.Transfers, s.FailedTransfers}, "SOA checks, unchanged, transfers, failed")
}

// A writer with a key asks for the SOA signed with it, over TCP again when the UDP answer is
// truncated, the retry signed too. A writer without the key (the server answers its SOA query,
// not its transfer), or with the key's name and another secret, is never answered the remembered
// reading.
func TestRFC2136_SignedReaderChecksTheSerialSigned(t *testing.T) {
	const key, secret = "failover-key", "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="
	srv := startZone(t, func() (*testdns.Server, error) { return testdns.StartSigned(key, secret) })
	srv.SetTruncated(true)
	w := zonewriter.RFC2136{Server: srv.Addr, Zone: zone, TSIGName: key, TSIGAlgorithm: "hmac-sha256", TSIGSecret: secret}
	before := zonewriter.RFC2136Stats()

	_, err := w.Read(t.Context())
	require.NoError(t, err)
	got, err := w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{owner1}, got.TXT["weu-d-cname-api."+zone].Values)
	assert.Equal(t, 1, srv.Transfers())
	soas, signed := srv.SOAQueries()
	assert.Equal(t, [2]int{2, 2}, [2]int{soas, signed}, "over UDP (truncated), then over TCP, both signed")
	s := since(before)
	assert.Equal(t, [3]int64{1, 0, 1}, [3]int64{s.SOAChecks, s.SOAFailures, s.Unchanged}, "SOA checks, failures, unchanged")

	wrong := w
	wrong.TSIGSecret = "d3Jvbmctd3Jvbmctd3Jvbmctd3Jvbmctd3Jvbmctd3Jvbmc="
	_, err = wrong.Read(t.Context())
	assert.Error(t, err, "its SOA query and its transfer fail: no reading")
	unsigned := w
	unsigned.TSIGName = ""
	_, err = unsigned.Read(t.Context())
	assert.Error(t, err)
}

// The reading of a failover zone read again without a transfer is the whole reading: heartbeats
// included.
func TestRFC2136_RememberedReadingKeepsHeartbeats(t *testing.T) {
	srv := startZone(t, testdns.Start)
	beat := "at=" + beatAt.Format(time.RFC3339) + " gateway=answers owner=external-dns-weu-aks01 targets=aks01-weu-internal." + zone // as failover.HeartbeatValue writes one
	srv.Set(failover.HeartbeatName("aks01", "weu", zone) + `. 10 IN TXT "` + beat + `"`)
	w := zonewriter.RFC2136{Server: srv.Addr, Zone: zone}
	first, err := w.Read(t.Context())
	require.NoError(t, err)
	require.Len(t, first.Beats["weu"], 1)
	first.Beats["weu"] = nil

	second, err := w.Read(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, srv.Transfers())
	require.Len(t, second.Beats["weu"], 1)
	assert.True(t, second.Beats["weu"][0].At.Equal(beatAt))
}
