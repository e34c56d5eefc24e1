package azurestandin

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

const (
	sub      = "00000000-0000-0000-0000-000000000001"
	rg       = "rg-dns"
	zoneName = "example.internal"
)

// clients are the real SDK clients, authenticated by the stand-in's token endpoint with the
// service principal's secret, as ExternalDNS's provider builds them from an azure.json.
type clients struct {
	records *armprivatedns.RecordSetsClient
	zones   *armprivatedns.PrivateZonesClient
}

func newClients(t *testing.T, s *Server, secret string) clients {
	t.Helper()
	return newClientsAs(t, s, ClientID, secret)
}

// newClientsAs are the clients of a service principal (AddServicePrincipal, or ClientID).
func newClientsAs(t *testing.T, s *Server, clientID, secret string) clients {
	t.Helper()
	o := azcore.ClientOptions{
		Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: s.URL, Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Audience: Audience, Endpoint: s.URL}}},
		Transport: s.HTTPClient(),
		Retry:     policy.RetryOptions{MaxRetries: -1}, // the stand-in's answers, not the SDK's retries
	}
	cred, err := azidentity.NewClientSecretCredential(TenantID, clientID, secret, &azidentity.ClientSecretCredentialOptions{ClientOptions: o})
	require.NoError(t, err)
	records, err := armprivatedns.NewRecordSetsClient(sub, cred, &arm.ClientOptions{ClientOptions: o, DisableRPRegistration: true})
	require.NoError(t, err)
	zones, err := armprivatedns.NewPrivateZonesClient(sub, cred, &arm.ClientOptions{ClientOptions: o, DisableRPRegistration: true})
	require.NoError(t, err)
	return clients{records, zones}
}

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	s.CreateZone(sub, rg, zoneName)
	return s
}

func cnameSet(target string) armprivatedns.RecordSet {
	return armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{TTL: ptr.To[int64](300), CnameRecord: &armprivatedns.CnameRecord{Cname: ptr.To(target)}}}
}

func aSet(ips ...string) armprivatedns.RecordSet {
	p := &armprivatedns.RecordSetProperties{TTL: ptr.To[int64](300)}
	for _, ip := range ips {
		p.ARecords = append(p.ARecords, &armprivatedns.ARecord{IPv4Address: ptr.To(ip)})
	}
	return armprivatedns.RecordSet{Properties: p}
}

func statusOf(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

func TestStandIn_RecordSetsWithETags(t *testing.T) {
	s := start(t)
	c := newClients(t, s, ClientSecret)
	ctx := context.Background()

	created, err := c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeCNAME, "api", cnameSet("aks01-weu-internal.example.internal"),
		&armprivatedns.RecordSetsClientCreateOrUpdateOptions{IfNoneMatch: ptr.To("*")})
	require.NoError(t, err)
	assert.Equal(t, "api.example.internal.", *created.Properties.Fqdn)
	assert.Equal(t, "Microsoft.Network/privateDnsZones/CNAME", *created.Type)
	require.NotEmpty(t, *created.Etag)

	_, err = c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeCNAME, "api", cnameSet("elsewhere.example.internal"),
		&armprivatedns.RecordSetsClientCreateOrUpdateOptions{IfNoneMatch: ptr.To("*")})
	assert.Equal(t, http.StatusPreconditionFailed, statusOf(err), "If-None-Match * on an existing record set")
	_, err = c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeCNAME, "api", cnameSet("elsewhere.example.internal"),
		&armprivatedns.RecordSetsClientCreateOrUpdateOptions{IfMatch: ptr.To("stale")})
	assert.Equal(t, http.StatusPreconditionFailed, statusOf(err), "If-Match with a stale ETag")
	updated, err := c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeCNAME, "api", cnameSet("aks02-neu-internal.example.internal"),
		&armprivatedns.RecordSetsClientCreateOrUpdateOptions{IfMatch: created.Etag})
	require.NoError(t, err)
	assert.NotEqual(t, *created.Etag, *updated.Etag, "every write gives a new ETag")

	got, err := c.records.Get(ctx, rg, zoneName, armprivatedns.RecordTypeCNAME, "api", nil)
	require.NoError(t, err)
	assert.Equal(t, "aks02-neu-internal.example.internal", *got.Properties.CnameRecord.Cname)

	_, err = c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeA, "api", aSet("10.0.0.1"), nil)
	assert.Equal(t, http.StatusConflict, statusOf(err), "a CNAME shares its name with no other record set")
	_, err = c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeA, "bad", cnameSet("x.example.internal"), nil)
	assert.Equal(t, http.StatusBadRequest, statusOf(err), "an A record set holding a CNAME")

	_, err = c.records.Delete(ctx, rg, zoneName, armprivatedns.RecordTypeCNAME, "api", &armprivatedns.RecordSetsClientDeleteOptions{IfMatch: created.Etag})
	assert.Equal(t, http.StatusPreconditionFailed, statusOf(err), "deleting with a stale ETag")
	_, err = c.records.Delete(ctx, rg, zoneName, armprivatedns.RecordTypeCNAME, "api", nil)
	require.NoError(t, err)
	_, err = c.records.Get(ctx, rg, zoneName, armprivatedns.RecordTypeCNAME, "api", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err))
	_, err = c.records.Delete(ctx, rg, zoneName, armprivatedns.RecordTypeCNAME, "api", nil)
	assert.NoError(t, err, "deleting a missing record set succeeds (204)")

	_, err = c.records.Get(ctx, rg, "other.internal", armprivatedns.RecordTypeA, "x", nil)
	assert.Equal(t, http.StatusNotFound, statusOf(err), "a zoneName that does not exist")
}

func TestStandIn_ListsRecordSetsInPages(t *testing.T) {
	s := start(t)
	c := newClients(t, s, ClientSecret)
	ctx := context.Background()
	for i, name := range []string{"a", "b", "c", "d", "e"} {
		_, err := c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeA, name, aSet("10.0.0."+string(rune('1'+i))), nil)
		require.NoError(t, err)
	}
	_, err := c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeCNAME, "www", cnameSet("a.example.internal"), nil)
	require.NoError(t, err)

	pager := c.records.NewListPager(rg, zoneName, &armprivatedns.RecordSetsClientListOptions{Top: ptr.To[int32](2)})
	var names []string
	pages := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		pages++
		assert.LessOrEqual(t, len(page.Value), 2)
		for _, rs := range page.Value {
			names = append(names, *rs.Name+" "+*rs.Type)
		}
	}
	assert.Equal(t, 4, pages, "7 record sets (with the SOA) in pages of 2")
	assert.Equal(t, []string{"@ Microsoft.Network/privateDnsZones/SOA", "a Microsoft.Network/privateDnsZones/A", "b Microsoft.Network/privateDnsZones/A",
		"c Microsoft.Network/privateDnsZones/A", "d Microsoft.Network/privateDnsZones/A", "e Microsoft.Network/privateDnsZones/A",
		"www Microsoft.Network/privateDnsZones/CNAME"}, names)
	assert.Equal(t, 4, s.Count("listRecordSets"))

	byType := c.records.NewListByTypePager(rg, zoneName, armprivatedns.RecordTypeCNAME, nil)
	page, err := byType.NextPage(ctx)
	require.NoError(t, err)
	require.Len(t, page.Value, 1)
	assert.Equal(t, "www", *page.Value[0].Name)

	_, err = c.records.NewListPager(rg, zoneName, &armprivatedns.RecordSetsClientListOptions{Top: ptr.To[int32](1001)}).NextPage(ctx)
	assert.Equal(t, http.StatusBadRequest, statusOf(err), "$top is at most 1000")

	zones, err := c.zones.NewListByResourceGroupPager(rg, nil).NextPage(ctx)
	require.NoError(t, err)
	require.Len(t, zones.Value, 1)
	assert.Equal(t, zoneName, *zones.Value[0].Name)
	assert.Equal(t, int64(7), *zones.Value[0].Properties.NumberOfRecordSets)
}

func TestStandIn_ThrottlesWithRetryAfter(t *testing.T) {
	s := start(t)
	c := newClients(t, s, ClientSecret)
	ctx := context.Background()

	s.Throttle(1, 30*time.Second)
	_, err := c.records.NewListPager(rg, zoneName, nil).NextPage(ctx)
	var re *azcore.ResponseError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, http.StatusTooManyRequests, re.StatusCode)
	assert.Equal(t, "TooManyRequests", re.ErrorCode)
	assert.Equal(t, "30", re.RawResponse.Header.Get("Retry-After"))
	_, err = c.records.NewListPager(rg, zoneName, nil).NextPage(ctx)
	assert.NoError(t, err, "the next request passes")

	s.ThrottleReads(5 * time.Second)
	for range 3 {
		_, err = c.records.NewListPager(rg, zoneName, nil).NextPage(ctx)
		assert.Equal(t, http.StatusTooManyRequests, statusOf(err), "sustained")
	}
	_, err = c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeA, "w", aSet("10.0.0.9"), nil)
	assert.NoError(t, err, "writes are counted apart from reads")
	s.Unthrottle()
	_, err = c.records.NewListPager(rg, zoneName, nil).NextPage(ctx)
	assert.NoError(t, err)
	assert.Equal(t, 4, s.Count("throttled"))
}

func TestStandIn_RequiresItsToken(t *testing.T) {
	s := start(t)
	c := newClients(t, s, "wrong secret")
	_, err := c.records.NewListPager(rg, zoneName, nil).NextPage(context.Background())
	var auth *azidentity.AuthenticationFailedError
	require.ErrorAs(t, err, &auth, "a wrong client secret gets no token")
	assert.Equal(t, 0, s.Count("listRecordSets"))

	req, err := http.NewRequest(http.MethodGet, s.URL+"subscriptions/"+sub+"/resourceGroups/"+rg+"/providers/Microsoft.Network/privateDnsZones/"+zoneName+"/ALL?api-version=2024-06-01", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer made-up")
	resp, err := s.HTTPClient().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a token the stand-in did not issue")
}

// $recordsetnamesuffix keeps the record sets whose name ends with "." and the suffix, in any case,
// on every page: not the name equal to it, nor one ending in its letters.
func TestStandIn_RecordSetNameSuffixIsALabel(t *testing.T) {
	s := start(t)
	for _, name := range []string{"a.east", "b.east", "x.a.east", "east", "beast", "c.west"} {
		require.NoError(t, s.SetA(sub, rg, zoneName, name, "10.0.0.1"))
	}
	require.NoError(t, s.SetCNAME(sub, rg, zoneName, "w.East", "a.east."+zoneName))
	c := newClients(t, s, ClientSecret)
	ctx := context.Background()
	names := func(more func() bool, next func() ([]*armprivatedns.RecordSet, error)) []string {
		var out []string
		for more() {
			page, err := next()
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 1)
			for _, rs := range page {
				out = append(out, *rs.Name+" "+*rs.Type)
			}
		}
		return out
	}

	all := c.records.NewListPager(rg, zoneName, &armprivatedns.RecordSetsClientListOptions{Top: ptr.To[int32](1), Recordsetnamesuffix: ptr.To("EAST")})
	assert.Equal(t, []string{"a.east Microsoft.Network/privateDnsZones/A", "b.east Microsoft.Network/privateDnsZones/A",
		"w.east Microsoft.Network/privateDnsZones/CNAME", "x.a.east Microsoft.Network/privateDnsZones/A"},
		names(all.More, func() ([]*armprivatedns.RecordSet, error) { p, err := all.NextPage(ctx); return p.Value, err }))
	assert.Equal(t, 4, s.Count("listRecordSets"), "one record set a page: the suffix went with every nextLink")

	byType := c.records.NewListByTypePager(rg, zoneName, armprivatedns.RecordTypeA, &armprivatedns.RecordSetsClientListByTypeOptions{Top: ptr.To[int32](1), Recordsetnamesuffix: ptr.To("east")})
	assert.Equal(t, []string{"a.east Microsoft.Network/privateDnsZones/A", "b.east Microsoft.Network/privateDnsZones/A", "x.a.east Microsoft.Network/privateDnsZones/A"},
		names(byType.More, func() ([]*armprivatedns.RecordSet, error) { p, err := byType.NextPage(ctx); return p.Value, err }))
	assert.Equal(t, 3, s.Count("listRecordSetsByType"))
}

// A principal with the Reader role reads but may not write: 403 AuthorizationFailed naming the
// action and scope, as Resource Manager words it; its role restored, it writes again.
func TestStandIn_ReaderMayNotWrite(t *testing.T) {
	s := start(t)
	c := newClients(t, s, ClientSecret)
	ctx := context.Background()
	s.SetReadOnly(ClientID, true)
	_, err := c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeTXT, "w", armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{
		TTL: ptr.To[int64](300), TxtRecords: []*armprivatedns.TxtRecord{{Value: []*string{ptr.To("v")}}}}}, nil)
	var re *azcore.ResponseError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, http.StatusForbidden, re.StatusCode)
	assert.Equal(t, "AuthorizationFailed", re.ErrorCode)
	assert.Contains(t, err.Error(), "does not have authorization to perform action 'Microsoft.Network/privateDnsZones/TXT/write'")
	_, err = c.records.NewListPager(rg, zoneName, nil).NextPage(ctx)
	assert.NoError(t, err, "a Reader reads")
	assert.Empty(t, s.Records(sub, rg, zoneName)["w TXT"], "nothing written")

	s.SetReadOnly(ClientID, false)
	_, err = c.records.CreateOrUpdate(ctx, rg, zoneName, armprivatedns.RecordTypeA, "w", aSet("10.0.0.9"), nil)
	assert.NoError(t, err, "the role restored")
	assert.Equal(t, 1, s.Count("forbidden"))
}
