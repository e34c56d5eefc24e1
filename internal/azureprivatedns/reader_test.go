package azureprivatedns_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/verify"
	"github.com/service-router/service-router-operator/test/azurestandin"
)

const (
	sub  = "00000000-0000-0000-0000-000000000001"
	rg   = "rg-dns-weu"
	name = "example.internal"
)

// standIn starts the Azure stand-in with the zone and writes an azure.json for it.
func standIn(t *testing.T) (*azurestandin.Server, azureprivatedns.Zone) {
	t.Helper()
	s, err := azurestandin.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	s.CreateZone(sub, rg, name)
	file := filepath.Join(t.TempDir(), "azure.json")
	require.NoError(t, os.WriteFile(file, s.AzureJSON(sub, "ignored-the-zone-says"), 0o600))
	return s, azureprivatedns.Zone{SubscriptionID: sub, ResourceGroup: rg, ZoneName: name, ConfigFile: file, PageSize: 2, Timeout: 5 * time.Second}
}

func TestReader_ListsTheWholeZoneInPages(t *testing.T) {
	s, z := standIn(t)
	require.NoError(t, s.SetCNAME(sub, rg, name, "api", "aks01-weu-internal.example.internal"))
	require.NoError(t, s.SetA(sub, rg, name, "aks01-weu-internal", "10.1.2.3", "10.1.2.4"))
	for i := range 4 {
		require.NoError(t, s.SetA(sub, rg, name, fmt.Sprintf("other%d", i), "10.9.9.9"))
	}
	require.NoError(t, s.SetTXT(sub, rg, name, "cname-api", "heritage=external-dns,external-dns/owner=aks01"))
	r, err := azureprivatedns.NewReader(z, s.HTTPClient())
	require.NoError(t, err)
	l, requests, err := r.List(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 4, requests, "8 record sets with the SOA, 2 a page")
	assert.Equal(t, 4, s.Count("listRecordSets"))
	assert.Equal(t, []string{"heritage=external-dns,external-dns/owner=aks01"}, l.TXT["cname-api.example.internal."],
		"TXT values kept apart, for failover (Prober.Listed)")
	assert.Equal(t, 1, s.Count("token"), "one token for the listing")

	f := verify.JudgeListing(verify.Expected{{Name: "api.example.internal.", Type: "CNAME", Values: []string{"aks01-weu-internal.example.internal."}}}, l)
	assert.Equal(t, "Published", string(f.State))
	f = verify.JudgeListing(verify.Expected{{Name: "aks01-weu-internal.example.internal.", Type: "A", Values: []string{"10.1.2.3", "10.1.2.4"}}}, l)
	assert.Equal(t, "Published", string(f.State))
	assert.Len(t, l.Records, 6, "the SOA is not an answer")
}

func TestReader_ThrottledListingSaysHowLongToWait(t *testing.T) {
	s, z := standIn(t)
	for i := range 5 {
		require.NoError(t, s.SetA(sub, rg, name, fmt.Sprintf("n%d", i), "10.9.9.9"))
	}
	r, err := azureprivatedns.NewReader(z, s.HTTPClient())
	require.NoError(t, err)
	_, _, err = r.List(context.Background()) // the token and a first listing
	require.NoError(t, err)

	s.ThrottleReads(30 * time.Second)
	before := s.Count("listRecordSets")
	_, requests, err := r.List(context.Background())
	require.Error(t, err)
	assert.Equal(t, 1, requests, "the listing stops at the refused page")
	assert.Equal(t, before, s.Count("listRecordSets"), "the SDK does not retry a 429 by itself")
	reason, wait := azureprivatedns.Classify(err)
	assert.Equal(t, "Throttled: Retry-After 30s", reason)
	assert.Equal(t, 30*time.Second, wait)
	assert.Equal(t, 1, s.Count("throttled"))
}

func TestReader_MissingZoneAndWrongSecretAreNamed(t *testing.T) {
	s, z := standIn(t)
	missing := z
	missing.ZoneName = "missing.internal"
	r, err := azureprivatedns.NewReader(missing, s.HTTPClient())
	require.NoError(t, err)
	_, _, err = r.List(context.Background())
	reason, _ := azureprivatedns.Classify(err)
	assert.Equal(t, "404 ResourceNotFound", reason)

	bad := filepath.Join(t.TempDir(), "azure.json")
	require.NoError(t, os.WriteFile(bad, []byte(fmt.Sprintf(`{"cloud":"AzureStackCloud","tenantId":"adfs","aadClientId":%q,"aadClientSecret":"wrong",
		"resourceManagerEndpoint":%q,"activeDirectoryAuthorityHost":%q,"resourceManagerAudience":%q}`, azurestandin.ClientID, s.URL, s.URL, azurestandin.Audience)), 0o600))
	z.ConfigFile = bad
	r, err = azureprivatedns.NewReader(z, s.HTTPClient())
	require.NoError(t, err)
	_, _, err = r.List(context.Background())
	reason, _ = azureprivatedns.Classify(err)
	assert.Equal(t, "authentication failed: 401", reason)
}

// recorder records the stand-in's responses by method and URL; replay answers from them, so that
// a benchmark measures the reader alone, not the stand-in serving it in the same process.
type recorder struct {
	client    *http.Client
	responses map[string][]byte
	replay    bool
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	key := req.Method + " " + req.URL.String()
	if r.replay {
		body, ok := r.responses[key]
		if !ok {
			return nil, fmt.Errorf("no recorded response for %s", key)
		}
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.responses[key] = body
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// BenchmarkReader_List measures what a listing costs the operator (time and allocations for
// reading and parsing every page, from recorded stand-in responses: neither the stand-in nor
// Resource Manager's latency is in it) at the sizes the docs budget: 3,000 and 25,000 record sets
// (the most a private zone holds), in pages of 1000 (the default) and 100 (Resource Manager's
// default).
func BenchmarkReader_List(b *testing.B) {
	for _, n := range []int{3000, 25000} {
		s, err := azurestandin.Start(b.TempDir())
		require.NoError(b, err)
		s.CreateZone(sub, rg, name)
		for i := range n - 1 { // and the SOA
			if i%2 == 0 {
				require.NoError(b, s.SetCNAME(sub, rg, name, fmt.Sprintf("api-%d", i), "aks01-weu-internal."+name))
			} else {
				require.NoError(b, s.SetA(sub, rg, name, fmt.Sprintf("t-%d", i), "10.1.2.3"))
			}
		}
		file := filepath.Join(b.TempDir(), "azure.json")
		require.NoError(b, os.WriteFile(file, s.AzureJSON(sub, rg), 0o600))
		for _, pageSize := range []int32{1000, 100} {
			b.Run(fmt.Sprintf("recordsets=%d/pageSize=%d", n, pageSize), func(b *testing.B) {
				rec := &recorder{client: s.HTTPClient(), responses: map[string][]byte{}}
				r, err := azureprivatedns.NewReader(azureprivatedns.Zone{SubscriptionID: sub, ResourceGroup: rg, ZoneName: name, ConfigFile: file,
					PageSize: pageSize, Timeout: time.Minute}, rec)
				require.NoError(b, err)
				_, _, err = r.List(context.Background()) // recorded
				require.NoError(b, err)
				rec.replay = true
				b.ReportAllocs()
				for b.Loop() {
					l, requests, err := r.List(context.Background())
					if err != nil || len(l.Records) != n-1 || requests != azureprivatedns.Pages(n, pageSize) {
						b.Fatalf("listing: %v, %d names, %d requests", err, len(l.Records), requests)
					}
				}
			})
		}
		_ = s.Close()
	}
}

func TestReader_WrongSecretIsACredentialsFailure(t *testing.T) {
	s, z := standIn(t)
	bad := filepath.Join(t.TempDir(), "azure.json")
	require.NoError(t, os.WriteFile(bad, []byte(fmt.Sprintf(`{"cloud":"AzureStackCloud","tenantId":"adfs","aadClientId":%q,"aadClientSecret":"old",
		"resourceManagerEndpoint":%q,"activeDirectoryAuthorityHost":%q,"resourceManagerAudience":%q}`, azurestandin.ClientID, s.URL, s.URL, azurestandin.Audience)), 0o600))
	z.ConfigFile = bad
	r, err := azureprivatedns.NewReader(z, s.HTTPClient())
	require.NoError(t, err)
	_, _, err = r.List(context.Background())
	assert.True(t, azureprivatedns.CredentialsRejected(err), "a reader with a rejected secret is built anew (the azure.json read again)")
}

// Without an azure.json the reader authenticates as an Azure Workload Identity: the client ID,
// tenant and federated token file the webhook puts into the operator's Pod.
func TestReader_WorkloadIdentity(t *testing.T) {
	s, z := standIn(t)
	require.NoError(t, s.SetCNAME(sub, rg, name, "api", "aks01-weu-internal.example.internal"))
	token := filepath.Join(t.TempDir(), "azure-identity-token")
	require.NoError(t, os.WriteFile(token, []byte(azurestandin.FederatedToken), 0o600))
	t.Setenv("AZURE_CLIENT_ID", azurestandin.ClientID)
	t.Setenv("AZURE_TENANT_ID", azurestandin.TenantID)
	t.Setenv("AZURE_FEDERATED_TOKEN_FILE", token)
	z.ConfigFile, z.ResourceManagerEndpoint, z.ActiveDirectoryAuthorityHost = "", s.URL, s.URL

	r, err := azureprivatedns.NewReader(z, s.HTTPClient())
	require.NoError(t, err)
	l, _, err := r.List(context.Background())
	require.NoError(t, err)
	assert.Contains(t, l.Records, "api.example.internal.")
	assert.Equal(t, 1, s.Count("token"))

	require.NoError(t, os.WriteFile(token, []byte("another cluster's token"), 0o600))
	r, err = azureprivatedns.NewReader(z, s.HTTPClient())
	require.NoError(t, err)
	_, _, err = r.List(context.Background())
	assert.True(t, azureprivatedns.CredentialsRejected(err), "a token the identity is not federated with gets nothing: %v", err)
}
