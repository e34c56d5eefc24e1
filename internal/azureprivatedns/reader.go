package azureprivatedns

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"

	"github.com/service-router/service-router-operator/internal/verify"
)

// Source names Resource Manager in answers ("no answer from Azure Resource Manager (…)").
const Source = "Azure Resource Manager"

// Reader lists one zone's record sets.
type Reader struct {
	zone    Zone
	records *armprivatedns.RecordSetsClient
}

// NewReader reads the zone's configuration and builds its client. transport is nil except in
// tests (nil: the SDK's HTTP client, trusting the system's CAs, those of SSL_CERT_FILE, or where
// there are none, the compiled-in roots).
func NewReader(z Zone, transport policy.Transporter) (*Reader, error) {
	if z.PageSize <= 0 || z.PageSize > DefaultPageSize {
		z.PageSize = DefaultPageSize
	}
	if z.Timeout <= 0 {
		z.Timeout = DefaultTimeout
	}
	records, err := RecordSets(z, transport)
	if err != nil {
		return nil, err
	}
	return &Reader{zone: z, records: records}, nil
}

// RecordSets builds the Resource Manager client of the zone's record sets, with the zone's
// configuration (its azure.json, or Workload Identity) and credentials; transport as NewReader's.
// The reader only lists; failover's zone writer (internal/zonewriter) writes with it too. Every
// request goes through the budget of the zone's principal (PrincipalOf), shared by every client
// of the process: refused at once while a 429's Retry-After lasts (a *ThrottledError), paced at
// the bucket's refill rate while Resource Manager says few requests are left, counted per zone
// (Usage).
func RecordSets(z Zone, transport policy.Transporter) (*armprivatedns.RecordSetsClient, error) {
	trustCompiledInRoots()
	file, err := readConfig(z)
	if err != nil {
		return nil, err
	}
	cfg, err := ConfigOf(z, file)
	if err != nil {
		return nil, err
	}
	c, err := CloudOf(cfg)
	if err != nil {
		return nil, err
	}
	o := clientOptions(c, transport)
	cred, err := credential(cfg, o)
	if err != nil {
		return nil, err
	}
	principal, err := principalOf(cfg, c)
	if err != nil {
		return nil, err
	}
	// The budget sees Resource Manager's requests only, not the credential's token requests.
	ao := armOptions(o)
	ao.PerRetryPolicies = append(ao.PerRetryPolicies, &budgetPolicy{budget: budgetOf(principal), clock: realClock})
	return armprivatedns.NewRecordSetsClient(cfg.SubscriptionID, cred, ao)
}

// Pages is how many requests a listing of n record sets takes.
func Pages(n int, pageSize int32) int {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	return max(1, (n+int(pageSize)-1)/int(pageSize))
}

// List reads the whole zone: every page of its record sets, following nextLink. It returns the
// listing and the requests it made; a listing that failed on any page is no listing (a record
// on a page not read is not missing from the zone).
func (r *Reader) List(ctx context.Context) (verify.Listing, int, error) {
	l := verify.Listing{Source: Source, Records: map[string][]verify.Record{}}
	pager := r.records.NewListPager(r.zone.ResourceGroup, r.zone.ZoneName, &armprivatedns.RecordSetsClientListOptions{Top: &r.zone.PageSize})
	requests := 0
	for pager.More() {
		requests++
		page, err := r.page(ctx, pager)
		if err != nil {
			return verify.Listing{}, requests, err
		}
		for _, rs := range page.Value {
			addRecordSet(&l, r.zone.ZoneName, rs)
		}
	}
	return l, requests, nil
}

func (r *Reader) page(ctx context.Context, pager interface {
	NextPage(context.Context) (armprivatedns.RecordSetsClientListResponse, error)
}) (armprivatedns.RecordSetsClientListResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, r.zone.Timeout)
	defer cancel()
	return pager.NextPage(ctx)
}

// addRecordSet adds the A, AAAA and CNAME records of a record set to a listing, and its TXT values
// (for failover: Listing.TXT).
func addRecordSet(l *verify.Listing, zone string, rs *armprivatedns.RecordSet) {
	if rs == nil || rs.Name == nil || rs.Type == nil || rs.Properties == nil {
		return
	}
	p := rs.Properties
	switch strings.TrimPrefix(*rs.Type, "Microsoft.Network/privateDnsZones/") {
	case "A":
		for _, a := range p.ARecords {
			if a != nil && a.IPv4Address != nil {
				l.Add(zone, *rs.Name, "A", *a.IPv4Address)
			}
		}
	case "AAAA":
		for _, a := range p.AaaaRecords {
			if a != nil && a.IPv6Address != nil {
				l.Add(zone, *rs.Name, "AAAA", *a.IPv6Address)
			}
		}
	case "CNAME":
		if p.CnameRecord != nil && p.CnameRecord.Cname != nil {
			l.Add(zone, *rs.Name, "CNAME", *p.CnameRecord.Cname)
		}
	case "TXT":
		for _, r := range p.TxtRecords {
			var b strings.Builder
			for _, v := range r.Value {
				if v != nil {
					b.WriteString(*v)
				}
			}
			l.AddTXT(zone, *rs.Name, b.String())
		}
	}
}

// Classify names why a listing failed, in a few stable words for status, and how long Resource
// Manager asked to wait (a 429's Retry-After, or what is left of it for a request the principal's
// backoff held, a *ThrottledError; zero otherwise).
func Classify(err error) (reason string, retryAfter time.Duration) {
	var re *azcore.ResponseError
	var auth *azidentity.AuthenticationFailedError
	var netErr net.Error
	var held *ThrottledError
	switch {
	case errors.As(err, &held):
		// Held during a backoff: the 429's reason, so that status does not change between the
		// 429 and the requests it holds; the wait that is left.
		return verify.ThrottledReason(held.Asked), held.RetryAfter
	case errors.As(err, &re):
		if re.StatusCode == http.StatusTooManyRequests {
			retryAfter = RetryAfter(re.RawResponse)
			return verify.ThrottledReason(retryAfter), retryAfter
		}
		return verify.HTTPReason(re.StatusCode, re.ErrorCode), 0
	case errors.As(err, &auth):
		if auth.RawResponse != nil {
			return "authentication failed: " + strconv.Itoa(auth.RawResponse.StatusCode), 0
		}
		return "authentication failed", 0
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout", 0
	case errors.As(err, &netErr):
		return "network error", 0
	}
	return "error: " + err.Error(), 0
}

// CredentialsRejected reports whether a listing failed for its credentials (no token, or a token
// Resource Manager refused): the reader is then built anew before the next listing, so that a
// rotated azure.json Secret is read again.
func CredentialsRejected(err error) bool {
	var re *azcore.ResponseError
	var auth *azidentity.AuthenticationFailedError
	return errors.As(err, &auth) || (errors.As(err, &re) && re.StatusCode == http.StatusUnauthorized)
}

// RetryAfter is the wait a throttled response asks for: Retry-After in seconds or as an HTTP
// date, or Resource Manager's x-ms-retry-after-ms.
func RetryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	if ms, err := strconv.Atoi(resp.Header.Get("x-ms-retry-after-ms")); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	v := resp.Header.Get("Retry-After")
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}
