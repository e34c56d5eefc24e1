package verify

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/external-dns/endpoint"
)

// Listing is a whole zone as one read of its record sets found it (Azure Private DNS through
// Resource Manager): the A, AAAA and CNAME records by name. One listing answers every record of
// the zone due for a check, as a name server would have answered a query for each, so that the
// same Judge decides Published, Pending and Drifted in every verification mode.
type Listing struct {
	// Source names where the listing came from in answers ("Azure Resource Manager").
	Source string
	// Records are the zone's records by Canonical name.
	Records map[string][]Record
	// TXT are the zone's TXT values (a record's strings joined) by Canonical name: not judged, but
	// kept for regional failover, which takes its ownership records and heartbeats from the same
	// listing rather than listing the zone again (Prober.Listed).
	TXT map[string][]string
}

// AddTXT records the TXT values of one record set (name as Add's).
func (l *Listing) AddTXT(zone, name string, values ...string) {
	if l.TXT == nil {
		l.TXT = map[string][]string{}
	}
	fqdn := Canonical(zone)
	if name != "" && name != "@" {
		fqdn = Canonical(name + "." + zone)
	}
	l.TXT[fqdn] = append(l.TXT[fqdn], values...)
}

// Add records one record set of the listing: name is relative to zone ("@" for the apex), as
// Resource Manager names record sets; values are the set's addresses or its CNAME target.
func (l *Listing) Add(zone, name, rtype string, values ...string) {
	if l.Records == nil {
		l.Records = map[string][]Record{}
	}
	fqdn := Canonical(zone)
	if name != "" && name != "@" {
		fqdn = Canonical(name + "." + zone)
	}
	for _, v := range values {
		if rtype == endpoint.RecordTypeCNAME {
			v = Canonical(v)
		}
		l.Records[fqdn] = append(l.Records[fqdn], Record{Name: fqdn, Type: rtype, Value: v})
	}
}

// Response is what the zone's authoritative name server would have answered a query for rs:
// the name's CNAME if it has one (a server answers any query for such a name with it), else its
// records of the query type; NXDOMAIN when the listing has no record for the name (the record
// sets of other types, TXT and the like, are not listed here: a name with only those is answered
// as missing, which Judge also takes for Pending).
func (l Listing) Response(rs RecordSet) Response {
	out := Response{Server: l.Source, Rcode: "NOERROR"}
	records := l.Records[rs.Name]
	if len(records) == 0 {
		out.Rcode = "NXDOMAIN"
		return out
	}
	for _, r := range records {
		if r.Type == endpoint.RecordTypeCNAME {
			return Response{Server: l.Source, Rcode: "NOERROR", Records: []Record{r}}
		}
	}
	for _, r := range records {
		if r.Type == rs.QueryType() {
			out.Records = append(out.Records, r)
		}
	}
	return out
}

// JudgeListing judges everything one checked name must answer against a listing.
func JudgeListing(e Expected, l Listing) Finding {
	findings := make([]Finding, 0, len(e))
	for _, rs := range e {
		findings = append(findings, Judge(rs, l.Response(rs)))
	}
	return Combine(findings)
}

// ListingFailed is the finding of every record due when the zone could not be listed: the zone
// may be fine, it could not be read (Unreachable only after several in a row, see Tracker).
func ListingFailed(source, reason string) Finding {
	return Judge(RecordSet{}, Response{Server: source, Failure: reason})
}

// ListingPacing says when a zone read through an API is listed next.
type ListingPacing struct {
	// Interval is the shortest time between two listings.
	Interval time.Duration
	// MaxBackoff bounds the wait after failed listings (a Retry-After longer than it is still
	// honoured).
	MaxBackoff time.Duration
}

// NextListing is the earliest start of the next listing after one that started at last:
// Interval later when it succeeded (failures 0); after failures listings in a row failed,
// Interval doubled for each failure but the first, up to MaxBackoff, and never before the
// Retry-After the API asked for.
func (p ListingPacing) NextListing(last time.Time, failures int, retryAfter time.Duration) time.Time {
	wait := p.Interval
	for i := 1; i < failures && wait < p.MaxBackoff; i++ {
		wait *= 2
	}
	if failures > 1 && wait > p.MaxBackoff {
		wait = max(p.MaxBackoff, p.Interval)
	}
	return last.Add(max(wait, retryAfter))
}

// ThrottledReason is the failure reason of a listing refused with 429: stable while the API asks
// for the same wait, so that status is not rewritten at every attempt.
func ThrottledReason(retryAfter time.Duration) string {
	if retryAfter <= 0 {
		return "Throttled"
	}
	return fmt.Sprintf("Throttled: Retry-After %s", retryAfter.Round(time.Second))
}

// HTTPReason is the failure reason of a listing refused with another status: the status and the
// API's error code ("403 AuthorizationFailed").
func HTTPReason(status int, code string) string {
	return strings.TrimSpace(fmt.Sprintf("%d %s", status, code))
}
