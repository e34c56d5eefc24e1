package zonewriter_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/zonewriter"
	"github.com/service-router/service-router-operator/test/azurestandin"
)

const (
	sub    = "00000000-0000-0000-0000-000000000001"
	rg     = "rg-dns-weu"
	zone   = "example.internal"
	owner1 = "heritage=external-dns,external-dns/owner=external-dns-weu-aks01,external-dns/resource=crd/myapp/api"
	owner2 = "heritage=external-dns,external-dns/owner=external-dns-weu-aks02,external-dns/resource=crd/myapp/api"
)

// azureWriter starts the Azure stand-in (Resource Manager's Private DNS operations, with ETags)
// with the zone, and the writer with an azure.json for it.
func azureWriter(t *testing.T) (*azurestandin.Server, *zonewriter.AzurePrivateDNS) {
	t.Helper()
	s, err := azurestandin.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	s.CreateZone(sub, rg, zone)
	file := filepath.Join(t.TempDir(), "azure.json")
	require.NoError(t, os.WriteFile(file, s.AzureJSON(sub, rg), 0o600))
	w, err := zonewriter.NewAzurePrivateDNS(azureprivatedns.Zone{SubscriptionID: sub, ResourceGroup: rg, ZoneName: zone, ConfigFile: file}, s.HTTPClient())
	require.NoError(t, err)
	return s, w
}

func TestAzurePrivateDNS_HeartbeatReplacedInPlace(t *testing.T) {
	s, w := azureWriter(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	for i, answers := range []bool{true, false} {
		require.NoError(t, w.WriteHeartbeat(ctx, "aks01", "weu", failover.HeartbeatValue(failover.Heartbeat{At: at.Add(time.Duration(i) * 10 * time.Second), GatewayAnswers: answers})))
	}
	values := s.Records(sub, rg, zone)["aks01.weu._router-heartbeat TXT"]
	require.Len(t, values, 1, "one heartbeat per cluster and zone: %v", s.Records(sub, rg, zone))
	hb, ok := failover.ParseHeartbeat(zone, values[0])
	require.True(t, ok, values[0])
	assert.True(t, hb.At.Equal(at.Add(10*time.Second)), "the second write replaced the first")
	assert.False(t, hb.GatewayAnswers)
}

func TestAzurePrivateDNS_PassOwnershipOnlyFromTheValueRead(t *testing.T) {
	s, w := azureWriter(t)
	ctx := context.Background()
	const name = "weu-d-cname-api"
	require.NoError(t, s.SetTXT(sub, rg, zone, name, owner1))

	require.NoError(t, w.PassOwnership(ctx, name+"."+zone+".", owner1, owner2), "a fully qualified name is taken relative to the zone")
	assert.Equal(t, []string{owner2}, s.Records(sub, rg, zone)[name+" TXT"])

	err := w.PassOwnership(ctx, name, owner1, owner2)
	assert.True(t, errors.Is(err, zonewriter.ErrChanged), "passing again from the value it no longer holds: %v", err)
	assert.Equal(t, []string{owner2}, s.Records(sub, rg, zone)[name+" TXT"], "left as the first pass made it")

	require.NoError(t, s.SetTXT(sub, rg, zone, name, owner2, owner1))
	err = w.PassOwnership(ctx, name, owner1, owner2)
	assert.True(t, errors.Is(err, zonewriter.ErrChanged), "a record set holding another value besides old: %v", err)
	assert.Equal(t, []string{owner1, owner2}, s.Records(sub, rg, zone)[name+" TXT"])

	// ExternalDNS's azure-private-dns provider stores the value quoted: compared without the
	// quotes, written back with them.
	require.NoError(t, s.SetTXT(sub, rg, zone, name, `"`+owner1+`"`))
	require.NoError(t, w.PassOwnership(ctx, name, owner1, owner2))
	assert.Equal(t, []string{`"` + owner2 + `"`}, s.Records(sub, rg, zone)[name+" TXT"])

	err = w.PassOwnership(ctx, "weu-d-cname-gone", owner1, owner2)
	assert.True(t, errors.Is(err, zonewriter.ErrChanged), "a record set that is gone: %v", err)
	assert.Equal(t, 0, s.Count("deleteRecordSet"), "the writer never deletes")
}

func TestAzurePrivateDNS_WriteIntermediateOnlyFromWhatWasRead(t *testing.T) {
	s, w := azureWriter(t)
	ctx := context.Background()
	name := "internal.myapp.weu._router-failover." + zone
	aks01, aks02 := "aks01-weu-internal."+zone, "aks02-neu-internal."+zone
	cnameOf := func() []string { return s.Records(sub, rg, zone)["internal.myapp.weu._router-failover CNAME"] }

	require.NoError(t, w.WriteIntermediate(ctx, name, 60, "", aks01))
	assert.Equal(t, []string{aks01}, cnameOf())
	assert.ErrorIs(t, w.WriteIntermediate(ctx, name, 60, "", aks02), zonewriter.ErrChanged, "a create finds it there: refused")

	assert.ErrorIs(t, w.WriteIntermediate(ctx, name, 60, aks02, aks01), zonewriter.ErrChanged, "a move from a target it does not hold: refused")
	require.NoError(t, w.WriteIntermediate(ctx, name, 60, aks01, aks02), "the move")
	assert.Equal(t, []string{aks02}, cnameOf())

	assert.ErrorIs(t, w.WriteIntermediate(ctx, name, 0, aks01, ""), zonewriter.ErrChanged, "a delete of what it no longer holds: refused")
	assert.Equal(t, []string{aks02}, cnameOf())
	require.NoError(t, w.WriteIntermediate(ctx, name, 0, aks02, ""))
	assert.Empty(t, cnameOf())
	assert.ErrorIs(t, w.WriteIntermediate(ctx, name, 60, aks02, aks01), zonewriter.ErrChanged, "a move of one deleted: refused")
}
