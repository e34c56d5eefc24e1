package zonewriter_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/testdns"
	"github.com/service-router/service-router-operator/internal/zonewriter"
)

// Reading the heartbeats of a zone of 3,000 names takes one request, and returns the heartbeats
// only: not the ownership records, nor heartbeats under the earlier name (a whole reading finds
// those); removing this cluster's earlier heartbeat leaves the current one.
func TestAzurePrivateDNS_ReadWitnessListsTheHeartbeatsOnly(t *testing.T) {
	s, w := azureWriter(t)
	ctx := context.Background()
	for i := range 3000 {
		require.NoError(t, s.SetTXT(sub, rg, zone, fmt.Sprintf("weu-d-cname-api-%d", i), owner1))
	}
	value := failover.HeartbeatValue(failover.Heartbeat{At: beatAt, GatewayAnswers: true, Owner: "external-dns-weu-aks01", Addresses: []string{"10.1.2.3"}})
	require.NoError(t, w.WriteHeartbeat(ctx, "aks01", "weu", value))
	require.NoError(t, s.SetTXT(sub, rg, zone, "_router-heartbeat.aks02.neu", value))
	before := s.Count("listRecordSetsByType")

	got, err := w.ReadWitness(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, s.Count("listRecordSetsByType")-before, "one request")
	require.Len(t, got.Beats["weu"], 1)
	assert.Equal(t, []string{"10.1.2.3"}, got.Beats["weu"][0].Addresses)
	assert.Empty(t, got.Beats["neu"], "the earlier name is not a suffix match")
	assert.Empty(t, got.TXT)

	whole, err := w.Read(ctx)
	require.NoError(t, err)
	require.Len(t, whole.Beats["neu"], 1, "a whole reading finds the earlier name")
	assert.True(t, whole.Beats["neu"][0].Legacy)
	require.NoError(t, w.RemoveLegacyHeartbeat(ctx, "aks02", "neu"))
	require.NoError(t, w.RemoveLegacyHeartbeat(ctx, "aks02", "neu"), "removing what is gone is no error")
	records := s.Records(sub, rg, zone)
	assert.NotContains(t, records, "_router-heartbeat.aks02.neu TXT")
	assert.Contains(t, records, "aks01.weu._router-heartbeat TXT")
}

// An RFC 2136 zone's heartbeats are asked for by name: those known, not the zone.
func TestRFC2136_ReadWitnessAsksForTheKnownHeartbeats(t *testing.T) {
	srv, err := testdns.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	value := failover.HeartbeatValue(failover.Heartbeat{At: beatAt, GatewayAnswers: true, Owner: "external-dns-weu-aks01"})
	srv.Set(zone+". 300 IN SOA ns. admin. 1 3600 600 86400 60",
		failover.HeartbeatName("aks01", "weu", zone)+`. 10 IN TXT "`+value+`"`,
		failover.LegacyHeartbeatName("aks02", "neu", zone)+`. 10 IN TXT "`+value+`"`,
		"weu-d-cname-api."+zone+`. 300 IN TXT "`+owner1+`"`)
	srv.SetTransfersRefused(true)
	w := zonewriter.RFC2136{Server: srv.Addr, Zone: zone}
	got, err := w.ReadWitness(context.Background(), []string{failover.HeartbeatName("aks01", "weu", zone),
		failover.LegacyHeartbeatName("aks02", "neu", zone), failover.HeartbeatName("aks09", "frc", zone)})
	require.NoError(t, err, "no transfer: they are refused")
	require.Len(t, got.Beats["weu"], 1)
	require.Len(t, got.Beats["neu"], 1)
	assert.True(t, got.Beats["neu"][0].Legacy)
	assert.Empty(t, got.Beats["frc"], "a heartbeat gone is none")
	assert.Empty(t, got.TXT)
}

// A record under a heartbeat's name whose value is not a heartbeat is read as a malformed one, not
// left out: a region whose heartbeat someone overwrote is not a region whose heartbeat is gone, and
// the name stays among those asked for next time.
func TestRFC2136_ReadWitnessKeepsAMalformedHeartbeat(t *testing.T) {
	srv, err := testdns.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	name := failover.HeartbeatName("aks01", "weu", zone)
	srv.Set(zone+". 300 IN SOA ns. admin. 1 3600 600 86400 60", name+`. 10 IN TXT "not a heartbeat"`)
	srv.SetTransfersRefused(true)
	got, err := zonewriter.RFC2136{Server: srv.Addr, Zone: zone}.ReadWitness(context.Background(), []string{name})
	require.NoError(t, err)
	require.Len(t, got.Beats["weu"], 1)
	b := got.Beats["weu"][0]
	assert.Equal(t, "not a heartbeat", b.Malformed)
	assert.Equal(t, "aks01", b.Cluster)
	assert.False(t, b.Found)
	assert.Equal(t, []string{name}, failover.KnownHeartbeats(got, zone), "asked for again next round")
}
