package azureprivatedns

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/service-router/service-router-operator/internal/verify"
)

var weu = Zone{SubscriptionID: "00000000-0000-0000-0000-000000000001", ResourceGroup: "rg-dns-weu", ZoneName: "example.internal"}

func TestConfigOf_TheZoneOverridesTheAzureJSON(t *testing.T) {
	file := []byte(`{"cloud":"AzurePublicCloud","tenantId":"t","subscriptionId":"other","resourceGroup":"other-rg",
		"aadClientId":"id","aadClientSecret":"secret","activeDirectoryAuthorityHost":"https://login.example/"}`)
	cfg, err := ConfigOf(weu, file)
	require.NoError(t, err)
	assert.Equal(t, weu.SubscriptionID, cfg.SubscriptionID)
	assert.Equal(t, weu.ResourceGroup, cfg.ResourceGroup)
	assert.Equal(t, "id", cfg.ClientID)
	assert.Equal(t, "https://login.example/", cfg.ActiveDirectoryAuthorityHost)

	stack := weu
	stack.ResourceManagerEndpoint, stack.ActiveDirectoryAuthorityHost = "https://arm.local/", "https://login.local/"
	cfg, err = ConfigOf(stack, file)
	require.NoError(t, err)
	assert.Equal(t, "AzureStackCloud", cfg.Cloud, "a custom endpoint is a cloud of its own")
	assert.Equal(t, "https://arm.local/", cfg.ResourceManagerEndpoint)
	assert.Equal(t, "https://login.local/", cfg.ActiveDirectoryAuthorityHost)

	cfg, err = ConfigOf(weu, nil)
	require.NoError(t, err)
	assert.True(t, cfg.UseWorkloadIdentityExtension, "without an azure.json: workload identity")

	_, err = ConfigOf(Zone{ConfigFile: "/etc/azure/azure.json"}, []byte("{"))
	assert.ErrorContains(t, err, "/etc/azure/azure.json")
}

func TestCloudOf(t *testing.T) {
	tests := []struct {
		cfg     Config
		want    cloud.Configuration
		wantErr string
	}{
		{Config{}, cloud.AzurePublic, ""},
		{Config{Cloud: "AzurePublicCloud"}, cloud.AzurePublic, ""},
		{Config{Cloud: "AzureUSGovernmentCloud"}, cloud.AzureGovernment, ""},
		{Config{Cloud: "azurechinacloud"}, cloud.AzureChina, ""},
		{Config{Cloud: "AzureStackCloud", ResourceManagerEndpoint: "https://arm.local/", ActiveDirectoryAuthorityHost: "https://login.local/", ResourceManagerAudience: "https://management.local/"},
			cloud.Configuration{ActiveDirectoryAuthorityHost: "https://login.local/", Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
				cloud.ResourceManager: {Audience: "https://management.local/", Endpoint: "https://arm.local/"}}}, ""},
		{Config{Cloud: "AzureStackCloud", ResourceManagerEndpoint: "https://arm.local/", ActiveDirectoryAuthorityHost: "https://login.local/"},
			cloud.Configuration{ActiveDirectoryAuthorityHost: "https://login.local/", Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
				cloud.ResourceManager: {Audience: "https://arm.local/", Endpoint: "https://arm.local/"}}}, ""},
		{Config{Cloud: "AzureStackCloud", ResourceManagerEndpoint: "https://arm.local/"}, cloud.Configuration{}, "needs resourceManagerEndpoint and activeDirectoryAuthorityHost"},
		{Config{Cloud: "Mars"}, cloud.Configuration{}, `unknown cloud "Mars"`},
	}
	for _, tt := range tests {
		got, err := CloudOf(tt.cfg)
		if tt.wantErr != "" {
			assert.ErrorContains(t, err, tt.wantErr, "%+v", tt.cfg)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "%+v", tt.cfg)
	}
	got, err := CloudOf(Config{ActiveDirectoryAuthorityHost: "https://login.example/"})
	require.NoError(t, err)
	assert.Equal(t, "https://login.example/", got.ActiveDirectoryAuthorityHost)
	assert.Equal(t, cloud.AzurePublic.Services, got.Services)
	assert.Equal(t, "https://login.microsoftonline.com/", cloud.AzurePublic.ActiveDirectoryAuthorityHost, "the public cloud is not changed")
}

func TestCredentialKind_InExternalDNSsOrder(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{ClientID: "id", ClientSecret: "s", UseWorkloadIdentityExtension: true, UseManagedIdentityExtension: true}, "clientSecret"},
		{Config{ClientID: "msi", ClientSecret: "msi", UseManagedIdentityExtension: true}, "managedIdentity"},
		{Config{ClientID: "id", UseWorkloadIdentityExtension: true, UseManagedIdentityExtension: true}, "workloadIdentity"},
		{Config{UseManagedIdentityExtension: true, UserAssignedIdentityID: "uai"}, "managedIdentity"},
		{Config{ClientID: "id"}, ""},
	}
	for _, tt := range tests {
		got, err := CredentialKind(tt.cfg)
		if tt.want == "" {
			assert.ErrorContains(t, err, "names no credentials")
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "%+v", tt.cfg)
	}
}

func TestNewReader_ConfigurationErrorsAreClear(t *testing.T) {
	z := weu
	z.ConfigFile = filepath.Join(t.TempDir(), "missing.json")
	_, err := NewReader(z, nil)
	assert.ErrorContains(t, err, "reading the azure.json")

	z.ConfigFile = filepath.Join(t.TempDir(), "azure.json")
	require.NoError(t, os.WriteFile(z.ConfigFile, []byte(`{"cloud":"AzureStackCloud","tenantId":"adfs","aadClientId":"id","aadClientSecret":"s"}`), 0o600))
	_, err = NewReader(z, nil)
	assert.ErrorContains(t, err, "needs resourceManagerEndpoint")
}

func TestPages_TheReadBudgetOfAZone(t *testing.T) {
	assert.Equal(t, 1, Pages(0, 1000), "an empty zone is one request")
	assert.Equal(t, 3, Pages(3000, 1000))
	assert.Equal(t, 30, Pages(3000, 100))
	assert.Equal(t, 25, Pages(25000, 1000), "the largest zone Azure allows")
	assert.Equal(t, 250, Pages(25000, 100), "at the API's default page size")
	assert.Equal(t, 26, Pages(25001, 0))
}

func throttled(header http.Header) error {
	return fmt.Errorf("listing: %w", &azcore.ResponseError{StatusCode: http.StatusTooManyRequests, ErrorCode: "TooManyRequests",
		RawResponse: &http.Response{StatusCode: http.StatusTooManyRequests, Header: header}})
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

type refusedErr struct{}

func (refusedErr) Error() string   { return "connection refused" }
func (refusedErr) Timeout() bool   { return false }
func (refusedErr) Temporary() bool { return false }

func TestClassify_NamesTheReasonAndTheWait(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		reason string
		wait   time.Duration
	}{
		{"429 with Retry-After in seconds", throttled(http.Header{"Retry-After": {"30"}}), "Throttled: Retry-After 30s", 30 * time.Second},
		{"429 with x-ms-retry-after-ms", throttled(http.Header{"Retry-After": {"30"}, "X-Ms-Retry-After-Ms": {"1500"}}), "Throttled: Retry-After 2s", 1500 * time.Millisecond},
		{"429 without Retry-After", throttled(http.Header{}), "Throttled", 0},
		{"403", &azcore.ResponseError{StatusCode: 403, ErrorCode: "AuthorizationFailed"}, "403 AuthorizationFailed", 0},
		{"404 zone", &azcore.ResponseError{StatusCode: 404, ErrorCode: "ParentResourceNotFound"}, "404 ParentResourceNotFound", 0},
		{"timeout", timeoutErr{}, "timeout", 0},
		{"network", refusedErr{}, "network error", 0},
		{"anything else", errors.New("boom"), "error: boom", 0},
	}
	for _, tt := range tests {
		reason, wait := Classify(tt.err)
		assert.Equal(t, tt.reason, reason, tt.name)
		assert.Equal(t, tt.wait, wait, tt.name)
	}
	date := http.Header{"Retry-After": {time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)}}
	_, wait := Classify(throttled(date))
	assert.InDelta(t, float64(90*time.Second), float64(wait), float64(2*time.Second), "Retry-After as an HTTP date")
}

// A listing answers for addresses and CNAMEs; TXT values are kept apart, for failover.
func TestAddRecordSet_TakesAddressesAndCNAMEsAndTXTApart(t *testing.T) {
	l := verify.Listing{Source: Source}
	typ := func(s string) *string { return ptr.To("Microsoft.Network/privateDnsZones/" + s) }
	for _, rs := range []*armprivatedns.RecordSet{
		{Name: ptr.To("api"), Type: typ("CNAME"), Properties: &armprivatedns.RecordSetProperties{CnameRecord: &armprivatedns.CnameRecord{Cname: ptr.To("aks01-weu-internal.example.internal")}}},
		{Name: ptr.To("aks01-weu-internal"), Type: typ("A"), Properties: &armprivatedns.RecordSetProperties{ARecords: []*armprivatedns.ARecord{{IPv4Address: ptr.To("10.1.2.3")}, nil}}},
		{Name: ptr.To("aks01-weu-internal"), Type: typ("AAAA"), Properties: &armprivatedns.RecordSetProperties{AaaaRecords: []*armprivatedns.AaaaRecord{{IPv6Address: ptr.To("fd00::1")}}}},
		{Name: ptr.To("a-api"), Type: typ("TXT"), Properties: &armprivatedns.RecordSetProperties{TxtRecords: []*armprivatedns.TxtRecord{{Value: []*string{ptr.To("heritage=external-dns")}}}}},
		{Name: ptr.To("@"), Type: typ("SOA"), Properties: &armprivatedns.RecordSetProperties{}},
		{Name: ptr.To("broken"), Type: typ("A")},
		nil,
	} {
		addRecordSet(&l, "example.internal", rs)
	}
	assert.Equal(t, map[string][]verify.Record{
		"api.example.internal.":                {{Name: "api.example.internal.", Type: "CNAME", Value: "aks01-weu-internal.example.internal."}},
		"aks01-weu-internal.example.internal.": {{Name: "aks01-weu-internal.example.internal.", Type: "A", Value: "10.1.2.3"}, {Name: "aks01-weu-internal.example.internal.", Type: "AAAA", Value: "fd00::1"}},
	}, l.Records)
	assert.Equal(t, map[string][]string{"a-api.example.internal.": {"heritage=external-dns"}}, l.TXT)
}

func TestCredentialsRejected(t *testing.T) {
	assert.True(t, CredentialsRejected(fmt.Errorf("page: %w", &azcore.ResponseError{StatusCode: http.StatusUnauthorized, ErrorCode: "InvalidAuthenticationToken"})))
	assert.False(t, CredentialsRejected(&azcore.ResponseError{StatusCode: http.StatusForbidden, ErrorCode: "AuthorizationFailed"}), "a missing role is not fixed by new credentials")
	assert.False(t, CredentialsRejected(throttled(http.Header{})))
	assert.False(t, CredentialsRejected(timeoutErr{}))
}
