package azureprivatedns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/test/azurestandin"
)

// zoneOn creates a zone on the stand-in and returns it with an azure.json of the stand-in's
// service principal.
func zoneOn(t *testing.T, s *azurestandin.Server, subscriptionID, zone string) azureprivatedns.Zone {
	t.Helper()
	s.CreateZone(subscriptionID, rg, zone)
	file := filepath.Join(t.TempDir(), "azure.json")
	require.NoError(t, os.WriteFile(file, s.AzureJSON(subscriptionID, rg), 0o600))
	return azureprivatedns.Zone{SubscriptionID: subscriptionID, ResourceGroup: rg, ZoneName: zone, ConfigFile: file, PageSize: 2, Timeout: 5 * time.Second}
}

func principalState(t *testing.T, p azureprivatedns.Principal) azureprivatedns.PrincipalState {
	t.Helper()
	for _, s := range azureprivatedns.Principals() {
		if s.Principal == p {
			return s
		}
	}
	t.Fatalf("no budget of %s", p)
	return azureprivatedns.PrincipalState{}
}

// asPrincipal is the zone with an azure.json of another service principal of the stand-in.
func asPrincipal(t *testing.T, s *azurestandin.Server, z azureprivatedns.Zone, clientID, secret string) azureprivatedns.Zone {
	t.Helper()
	s.AddServicePrincipal(clientID, secret)
	var cfg map[string]string
	require.NoError(t, json.Unmarshal(s.AzureJSON(z.SubscriptionID, z.ResourceGroup), &cfg))
	cfg["aadClientId"], cfg["aadClientSecret"] = clientID, secret
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	z.ConfigFile = filepath.Join(t.TempDir(), "azure.json")
	require.NoError(t, os.WriteFile(z.ConfigFile, b, 0o600))
	return z
}

// A 429 to one zone's reader holds the reads of every client of the same principal — here the
// reader of another zone, built on its own — without a request reaching Resource Manager, until
// its Retry-After has passed. The principal's writes, a client of another principal in the same
// subscription and one of the same principal in another subscription go on.
func TestBudget_A429HoldsTheReadsOfEveryClientOfThePrincipal(t *testing.T) {
	s, err := azurestandin.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	const other = "00000000-0000-0000-0000-000000000002"
	first, second := zoneOn(t, s, sub, "first.internal"), zoneOn(t, s, sub, "second.internal")
	elsewhere := zoneOn(t, s, other, "second.internal")
	p1, err := azureprivatedns.PrincipalOf(first)
	require.NoError(t, err)
	p2, err := azureprivatedns.PrincipalOf(second)
	require.NoError(t, err)
	pElsewhere, err := azureprivatedns.PrincipalOf(elsewhere)
	require.NoError(t, err)
	const otherClient = "00000000-0000-0000-0000-0000000000c2"
	otherPrincipal := asPrincipal(t, s, second, otherClient, "another-secret")
	pOther, err := azureprivatedns.PrincipalOf(otherPrincipal)
	require.NoError(t, err)
	assert.Equal(t, azureprivatedns.Principal{Endpoint: p1.Endpoint, SubscriptionID: sub, ClientID: otherClient}, pOther)
	assert.Equal(t, azureprivatedns.Principal{Endpoint: strings.TrimSuffix(s.URL, "/"), SubscriptionID: sub, ClientID: azurestandin.ClientID}, p1)
	assert.Equal(t, p1, p2, "two zones, one principal")
	assert.NotEqual(t, p1, pElsewhere, "another subscription, another budget")

	r1, err := azureprivatedns.NewReader(first, s.HTTPClient())
	require.NoError(t, err)
	_, _, err = r1.List(context.Background())
	require.NoError(t, err)

	s.Throttle(1, 2*time.Second)
	_, _, err = r1.List(context.Background())
	reason, _ := azureprivatedns.Classify(err)
	require.Equal(t, "Throttled: Retry-After 2s", reason)
	throttledAt := time.Now()

	r2, err := azureprivatedns.NewReader(second, s.HTTPClient())
	require.NoError(t, err)
	lists, throttled := s.Count("listRecordSets"), s.Count("throttled")
	held := azureprivatedns.UsageOf(second).Reads.Held
	_, requests, err := r2.List(context.Background())
	var te *azureprivatedns.ThrottledError
	require.ErrorAs(t, err, &te, "the second zone's reader is held")
	assert.Equal(t, 1, requests)
	assert.Equal(t, lists, s.Count("listRecordSets"), "no listing reached Resource Manager")
	assert.Equal(t, throttled, s.Count("throttled"), "nor was it refused there")
	assert.Equal(t, held+1, azureprivatedns.UsageOf(second).Reads.Held)
	reason, wait := azureprivatedns.Classify(err)
	assert.Equal(t, "Throttled: Retry-After 2s", reason, "as the 429 itself")
	assert.InDelta(t, float64(2*time.Second-time.Since(throttledAt)), float64(wait), float64(100*time.Millisecond), "what is left of the Retry-After")
	assert.False(t, azureprivatedns.CredentialsRejected(err))
	state := principalState(t, p1)
	assert.True(t, state.Reads.BackoffUntil.After(time.Now()))
	assert.Equal(t, 2*time.Second, state.Reads.RetryAfter)

	w, err := azureprivatedns.RecordSets(second, s.HTTPClient())
	require.NoError(t, err)
	_, err = w.CreateOrUpdate(context.Background(), rg, second.ZoneName, armprivatedns.RecordTypeTXT, "_heartbeat",
		armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{TTL: to.Ptr[int64](10),
			TxtRecords: []*armprivatedns.TxtRecord{{Value: []*string{to.Ptr("alive")}}}}}, nil)
	require.NoError(t, err, "a 429 to a read holds no write: Resource Manager counts them apart")

	rOther, err := azureprivatedns.NewReader(otherPrincipal, s.HTTPClient())
	require.NoError(t, err)
	_, _, err = rOther.List(context.Background())
	require.NoError(t, err, "another principal is not held")
	rElsewhere, err := azureprivatedns.NewReader(elsewhere, s.HTTPClient())
	require.NoError(t, err)
	_, _, err = rElsewhere.List(context.Background())
	require.NoError(t, err, "nor is the principal in another subscription")
	assert.Equal(t, lists+2, s.Count("listRecordSets"))

	time.Sleep(time.Until(throttledAt.Add(2 * time.Second)))
	_, _, err = r2.List(context.Background())
	require.NoError(t, err, "after the Retry-After")
	assert.Equal(t, lists+3, s.Count("listRecordSets"))
}

// Every request is counted for its zone: reads (each page of a listing), writes and deletes, and
// the 429s; the principal's state holds the tokens the last answers said were left.
func TestBudget_CountsRequestsPerZone(t *testing.T) {
	s, err := azurestandin.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	z := zoneOn(t, s, sub, "counted.internal")
	for i := range 4 {
		require.NoError(t, s.SetA(sub, rg, z.ZoneName, fmt.Sprintf("n%d", i), "10.9.9.9"))
	}
	before := azureprivatedns.UsageOf(z)

	r, err := azureprivatedns.NewReader(z, s.HTTPClient())
	require.NoError(t, err)
	_, requests, err := r.List(context.Background())
	require.NoError(t, err)
	require.Equal(t, 3, requests, "5 record sets with the SOA, 2 a page")
	w, err := azureprivatedns.RecordSets(z, s.HTTPClient())
	require.NoError(t, err)
	for _, name := range []string{"a", "b"} {
		_, err = w.CreateOrUpdate(context.Background(), rg, z.ZoneName, armprivatedns.RecordTypeTXT, name,
			armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{TTL: to.Ptr[int64](10),
				TxtRecords: []*armprivatedns.TxtRecord{{Value: []*string{to.Ptr(name)}}}}}, nil)
		require.NoError(t, err)
	}
	_, err = w.Delete(context.Background(), rg, z.ZoneName, armprivatedns.RecordTypeTXT, "a", nil)
	require.NoError(t, err)
	s.Throttle(1, time.Second)
	_, _, err = r.List(context.Background())
	require.Error(t, err)

	u := azureprivatedns.UsageOf(z)
	assert.Equal(t, "counted.internal", u.Zone)
	assert.Equal(t, int64(3), u.Reads.Answered-before.Reads.Answered, "three pages")
	assert.Equal(t, int64(1), u.Reads.Throttled-before.Reads.Throttled)
	assert.Equal(t, int64(4), u.Reads.Sent()-before.Reads.Sent())
	assert.Equal(t, int64(2), u.Writes.Answered-before.Writes.Answered)
	assert.Equal(t, int64(1), u.Deletes.Answered-before.Deletes.Answered)
	assert.Equal(t, int64(1), u.Throttled()-before.Throttled())
	assert.Zero(t, u.Held()-before.Held())
	assert.Equal(t, int64(s.Count("listRecordSets")), u.Reads.Answered-before.Reads.Answered, "as Resource Manager counted them")
	assert.Equal(t, int64(s.Count("putRecordSet")), u.Writes.Answered-before.Writes.Answered)
	found := false
	for _, each := range azureprivatedns.Usage() {
		found = found || each == u
	}
	assert.True(t, found, "Usage lists the zone")

	p, err := azureprivatedns.PrincipalOf(z)
	require.NoError(t, err)
	state := principalState(t, p)
	assert.Equal(t, 0, state.Reads.Remaining, "a 429 without the header leaves nothing")
	assert.True(t, state.Reads.Paced, "reads are paced until an answer says the bucket recovered")
	assert.False(t, state.Writes.Seen.IsZero(), "the writes' x-ms-ratelimit-remaining-subscription-writes")
	assert.GreaterOrEqual(t, state.Writes.Remaining, 20)
	assert.False(t, state.Writes.Paced)
}

// unavailable answers the first Resource Manager request 503, then passes requests on.
type unavailable struct {
	client *http.Client
	done   bool
}

func (u *unavailable) Do(req *http.Request) (*http.Response, error) {
	if !u.done && strings.HasPrefix(req.URL.Path, "/subscriptions/") {
		u.done = true
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	}
	return u.client.Do(req)
}

// The budget sees every attempt that reaches the network: a request the SDK retries after a 503
// counts twice.
func TestBudget_CountsEveryAttempt(t *testing.T) {
	s, err := azurestandin.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	z := zoneOn(t, s, sub, "retried.internal")
	before := azureprivatedns.UsageOf(z)
	r, err := azureprivatedns.NewReader(z, &unavailable{client: s.HTTPClient()})
	require.NoError(t, err)
	_, requests, err := r.List(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, requests)
	assert.Equal(t, 1, s.Count("listRecordSets"), "retried once after the 503")
	assert.Equal(t, int64(2), azureprivatedns.UsageOf(z).Reads.Answered-before.Reads.Answered, "the 503 and the answer")
}
