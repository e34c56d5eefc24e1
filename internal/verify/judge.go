// Package verify decides whether a regional DNS zone serves what the operator published: the
// records a DNSEndpoint asks for (ExpectedOf), how an authoritative name server's response
// compares with them (Judge), and — in Tracker — when each record is checked next (fast after a
// change, slow once settled, backed off while failing) and what a route's zone state is, composed
// from its CNAME and its gateway target's address records. It does no I/O and reads no clock:
// the prober (internal/prober) asks the name servers and passes the time in.
package verify

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// RecordSet is one record set a zone must answer: every value of one type for one name.
type RecordSet struct {
	// Name is fully qualified, lower case, with the trailing dot.
	Name string
	// Type is CNAME, A or AAAA.
	Type string
	// Values are sorted; names are fully qualified, lower case, with the trailing dot.
	Values []string
}

// QueryType is the type to ask for: A for a CNAME (an authoritative server answers an A query
// for a name with a CNAME with the CNAME, and a name given an A record instead shows up as
// drift), the record's own type otherwise.
func (rs RecordSet) QueryType() string {
	if rs.Type == endpoint.RecordTypeCNAME {
		return endpoint.RecordTypeA
	}
	return rs.Type
}

func (rs RecordSet) String() string {
	return rs.Name + " " + rs.Type + " " + strings.Join(rs.Values, ",")
}

// Expected is everything one checked name must answer (an address record may have both A and
// AAAA), sorted by type.
type Expected []RecordSet

// Key identifies the expectation: equal keys, equal records (TTLs are not compared).
func (e Expected) Key() string {
	parts := make([]string, len(e))
	for i, rs := range e {
		parts[i] = rs.String()
	}
	return strings.Join(parts, "; ")
}

// ExpectedOf returns the record sets the records of a DNSEndpoint ask a zone to serve. Records of
// other types (the operator writes none) are not checked.
func ExpectedOf(records []*endpoint.Endpoint) Expected {
	var out Expected
	for _, r := range records {
		if r == nil || len(r.Targets) == 0 || r.DNSName == "" {
			continue
		}
		rs := RecordSet{Name: Canonical(r.DNSName), Type: r.RecordType}
		switch r.RecordType {
		case endpoint.RecordTypeCNAME:
			for _, t := range r.Targets {
				rs.Values = append(rs.Values, Canonical(t))
			}
		case endpoint.RecordTypeA, endpoint.RecordTypeAAAA:
			rs.Values = slices.Clone(r.Targets)
		default:
			continue
		}
		slices.Sort(rs.Values)
		out = append(out, rs)
	}
	slices.SortFunc(out, func(a, b RecordSet) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Type, b.Type)) })
	return out
}

// Canonical is a DNS name as compared here: lower case, with the trailing dot.
func Canonical(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

// Record is one resource record of a response's answer section.
type Record struct {
	Name  string // as the server wrote it; compared with Canonical
	Type  string
	Value string // a name for CNAME, an address for A/AAAA
}

// Response is what the zone's name servers said to one query.
type Response struct {
	// Server is the host:port that answered (or, on failure, the last one asked).
	Server string
	// Failure says no usable answer came: "timeout", "connection refused", "network error", or
	// the response code of a server that would not answer (SERVFAIL, REFUSED, NOTAUTH, ...), or
	// "not authoritative" for an answer without the AA bit. Empty when the zone answered.
	Failure string
	// Rcode is NOERROR or NXDOMAIN when the zone answered.
	Rcode string
	// Records is the answer section.
	Records []Record
}

// Finding is what one check found.
type Finding struct {
	State routingv1alpha1.ZoneState
	// Answer says what the zone answered, stable for an unchanged zone (no times, no ports of
	// ours): status is written only when it changes.
	Answer string
	// Failed is set when no name server gave a usable answer: the zone may be fine, it could not
	// be asked (Unreachable only after several failures in a row, see Tracker).
	Failed bool
	// Cached is set when the answer came from a recursive resolver, which may serve the
	// previous value of a record from its cache until the record's TTL has passed (see Tracker).
	Cached bool
}

// Judge compares a response with the record set it was asked for.
func Judge(rs RecordSet, r Response) Finding {
	if r.Failure != "" {
		return Finding{State: routingv1alpha1.ZoneUnreachable, Failed: true, Answer: fmt.Sprintf("no answer from %s (%s)", r.Server, r.Failure)}
	}
	var cname string
	var values []string
	for _, rec := range r.Records {
		if Canonical(rec.Name) != rs.Name {
			continue // the CNAME target's own records, chased by the server
		}
		switch rec.Type {
		case endpoint.RecordTypeCNAME:
			cname = Canonical(rec.Value)
		case rs.QueryType():
			values = append(values, rec.Value)
		}
	}
	slices.Sort(values)
	values = slices.Compact(values)
	switch {
	case cname != "" && rs.Type == endpoint.RecordTypeCNAME:
		answer := "CNAME " + cname
		if slices.Equal([]string{cname}, rs.Values) {
			return Finding{State: routingv1alpha1.ZonePublished, Answer: answer}
		}
		return Finding{State: routingv1alpha1.ZoneDrifted, Answer: answer}
	case cname != "":
		return Finding{State: routingv1alpha1.ZoneDrifted, Answer: "CNAME " + cname}
	case len(values) > 0 && rs.Type == endpoint.RecordTypeCNAME:
		return Finding{State: routingv1alpha1.ZoneDrifted, Answer: rs.QueryType() + " " + strings.Join(values, ",")}
	case len(values) > 0:
		answer := rs.Type + " " + strings.Join(values, ",")
		if slices.Equal(values, rs.Values) {
			return Finding{State: routingv1alpha1.ZonePublished, Answer: answer}
		}
		return Finding{State: routingv1alpha1.ZoneDrifted, Answer: answer}
	case r.Rcode == "NXDOMAIN":
		// Only now: the response code is about the last name of a CNAME chain (RFC 6604), so a
		// CNAME to a name missing from the zone comes with NXDOMAIN and is handled above.
		return Finding{State: routingv1alpha1.ZonePending, Answer: "NXDOMAIN"}
	}
	return Finding{State: routingv1alpha1.ZonePending, Answer: "no " + rs.Type + " record"}
}

// severity orders states from the best to the worst for combining: an object is as published as
// its least published record.
var severity = map[routingv1alpha1.ZoneState]int{
	routingv1alpha1.ZonePublished:   0,
	routingv1alpha1.ZoneUnverified:  1,
	routingv1alpha1.ZonePending:     2,
	routingv1alpha1.ZoneUnreachable: 3,
	routingv1alpha1.ZoneDrifted:     4,
}

// Worse reports whether a is a worse state than b.
func Worse(a, b routingv1alpha1.ZoneState) bool { return severity[a] > severity[b] }

// Combine joins the findings of the record sets of one name (A and AAAA): failed when any
// failed, otherwise the worst state; the answers are listed in order.
func Combine(findings []Finding) Finding {
	for _, f := range findings {
		if f.Failed {
			return f
		}
	}
	if len(findings) == 0 {
		return Finding{}
	}
	out := Finding{State: findings[0].State}
	answers := make([]string, 0, len(findings))
	for _, f := range findings {
		answers = append(answers, f.Answer)
		if Worse(f.State, out.State) {
			out.State = f.State
		}
	}
	out.Answer = strings.Join(answers, ", ")
	return out
}
