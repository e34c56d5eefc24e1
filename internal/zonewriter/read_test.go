package zonewriter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/testdns"
	"github.com/service-router/service-router-operator/internal/zonewriter"
)

var beatAt = time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)

// assertReading checks what both readers must make of the same zone: aks01's heartbeat by region, the
// ownership TXT with its TTL, and the gateway address; somebody else's TXT kept as it is.
func assertReading(t *testing.T, got failover.ZoneReading, zone string) {
	t.Helper()
	require.True(t, got.Read)
	require.Len(t, got.Beats["weu"], 1, "%+v", got.Beats)
	hb := got.Beats["weu"][0]
	assert.True(t, hb.At.Equal(beatAt))
	assert.Equal(t, "external-dns-weu-aks01", hb.Owner)
	assert.Equal(t, []string{"aks01-weu-internal." + zone}, hb.Targets)
	assert.Equal(t, []string{owner1}, got.TXT["weu-d-cname-api."+zone].Values)
	assert.NotZero(t, got.TXT["weu-d-cname-api."+zone].TTL, "kept when the ownership is passed")
	assert.Equal(t, []string{"v=spf1 -all"}, got.TXT[zone].Values)
	assert.Equal(t, []string{"10.1.2.3"}, got.Addresses["aks01-weu-internal."+zone])
	assert.NotContains(t, got.TXT, failover.HeartbeatName("aks01", "weu", zone), "a heartbeat is read as one, not as a TXT record")
}

func TestRFC2136_ReadTransfersTheZone(t *testing.T) {
	srv, err := testdns.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	beat := failover.HeartbeatValue(failover.Heartbeat{At: beatAt, GatewayAnswers: true, Owner: "external-dns-weu-aks01", Targets: []string{"aks01-weu-internal." + zone}})
	srv.Set(zone+". 300 IN SOA ns. admin. 1 3600 600 86400 60",
		zone+`. 300 IN TXT "v=spf1 -all"`,
		failover.HeartbeatName("aks01", "weu", zone)+`. 10 IN TXT "`+beat+`"`,
		"weu-d-cname-api."+zone+`. 300 IN TXT "`+owner1+`"`,
		"api."+zone+". 300 IN CNAME aks01-weu-internal."+zone+".",
		"aks01-weu-internal."+zone+". 300 IN A 10.1.2.3")
	got, err := zonewriter.RFC2136{Server: srv.Addr, Zone: zone}.Read(context.Background())
	require.NoError(t, err)
	assertReading(t, got, zone)

	srv.SetTransfersRefused(true)
	srv.Set(zone + `. 300 IN TXT "v=spf1 ~all"`) // changed: an unchanged zone is not transferred again (rfc2136_test.go)
	_, err = zonewriter.RFC2136{Server: srv.Addr, Zone: zone}.Read(context.Background())
	assert.Error(t, err, "a refused transfer is no reading")
}

func TestAzurePrivateDNS_ReadListsTheZone(t *testing.T) {
	s, w := azureWriter(t)
	ctx := context.Background()
	require.NoError(t, w.WriteHeartbeat(ctx, "aks01", "weu", failover.HeartbeatValue(failover.Heartbeat{At: beatAt, GatewayAnswers: true, Owner: "external-dns-weu-aks01", Targets: []string{"aks01-weu-internal." + zone}})))
	require.NoError(t, s.SetTXT(sub, rg, zone, "weu-d-cname-api", owner1))
	require.NoError(t, s.SetTXT(sub, rg, zone, "@", "v=spf1 -all"))
	require.NoError(t, s.SetCNAME(sub, rg, zone, "api", "aks01-weu-internal."+zone))
	require.NoError(t, s.SetA(sub, rg, zone, "aks01-weu-internal", "10.1.2.3"))
	got, err := w.Read(ctx)
	require.NoError(t, err)
	assertReading(t, got, zone)
}

// A heartbeat naming 20 gateways (over 255 bytes) is written as several strings of one TXT record
// and read back whole.
func TestAzurePrivateDNS_LongHeartbeatReadWhole(t *testing.T) {
	s, w := azureWriter(t)
	ctx := context.Background()
	var targets []string
	for i := range 20 {
		targets = append(targets, fmt.Sprintf("aks01-weu-gateway-%02d.%s", i, zone))
	}
	require.NoError(t, w.WriteHeartbeat(ctx, "aks01", "weu", failover.HeartbeatValue(failover.Heartbeat{At: beatAt, GatewayAnswers: true, Owner: "external-dns-weu-aks01", Targets: targets})))
	got, err := w.Read(ctx)
	require.NoError(t, err)
	require.Len(t, got.Beats["weu"], 1)
	assert.Equal(t, targets, got.Beats["weu"][0].Targets)
	assert.Len(t, s.Records(sub, rg, zone)["aks01.weu._router-heartbeat TXT"], 1, "one record, its strings one value")
}
