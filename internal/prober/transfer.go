package prober

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/verify"
)

// lister reads a whole zone: one listing answers every record of the zone that is due (listed).
type lister interface {
	// List reads the zone; requests is how many requests it took, the failed one included.
	List(ctx context.Context) (listing verify.Listing, requests int, err error)
	// Failure says, of an error of List, where the zone was read from, why the read failed in a
	// few stable words, and how long the source asked to be left alone.
	Failure(err error) (source, reason string, retryAfter time.Duration)
}

// newLister builds the reader of a zone read whole: a zone transfer from its name servers, or
// Azure Resource Manager.
func (p *Prober) newLister(z Zone) (lister, error) {
	if z.TransferZone != "" {
		return &zoneTransfer{servers: z.Nameservers, apex: z.TransferZone, timeout: z.Timeout, counters: &verificationTransfers,
			counted: func(outcome string) { p.counted(z.Controller, outcome) }}, nil
	}
	r, err := azureprivatedns.NewReader(*z.Azure, p.AzureTransport)
	if err != nil {
		return nil, err
	}
	return azureLister{r}, nil
}

// listInterval is the shortest time between two listings of a zone: its own setting, else one
// transfer per TransferInterval or one Resource Manager listing per DefaultListInterval.
func (p *Prober) listInterval(z Zone) time.Duration {
	switch {
	case z.ListInterval > 0:
		return z.ListInterval
	case z.TransferZone != "":
		return p.limits.TransferInterval
	}
	return DefaultListInterval
}

// azureLister reads an Azure Private DNS zone through Resource Manager.
type azureLister struct{ *azureprivatedns.Reader }

func (azureLister) Failure(err error) (string, string, time.Duration) {
	reason, retryAfter := azureprivatedns.Classify(err)
	return azureprivatedns.Source, reason, retryAfter
}

// zoneTransfer reads a zone by AXFR from the first of its name servers that allows it. It
// remembers its last complete transfer and, before transferring from the same server again, asks
// that server for the zone's SOA: a primary increments the serial before any changed record is
// answered or transferred (RFC 2136 3.6; BIND with every dynamic update, as ExternalDNS's are),
// so the same serial is the same zone, and the remembered listing answers without a transfer. A zone of 3,000 names under ExternalDNS's TXT
// registry is about 6,000 records a transfer; the SOA query is one small packet. A server
// without the remembered transfer is transferred from (it may lag behind, or be ahead). One zone
// loop (listed) owns a zoneTransfer: no lock.
type zoneTransfer struct {
	servers []string
	apex    string
	timeout time.Duration
	// last is the last complete transfer; nil before the first.
	last *lastTransfer
	// counters count the SOA queries, the transfers and what they received.
	counters *TransferCounters
	// counted receives each SOA query's outcome for the metrics ("answered", "timeout" or
	// "error"), as the query is answered; the transfers are counted by the loop, from List's
	// requests.
	counted func(outcome string)
}

// lastTransfer is a complete transfer: where from, the serial of the SOA it began with, and what
// it listed.
type lastTransfer struct {
	server  string
	serial  uint32
	listing verify.Listing
}

// transferError is a failed transfer from every name server; it names the last one asked.
type transferError struct{ server, reason string }

func (e transferError) Error() string {
	return fmt.Sprintf("zone transfer from %s: %s", e.server, e.reason)
}

// List transfers the zone, or answers the last transfer again when the server it came from says
// the zone's serial is still the one that transfer began with. requests are the transfers made
// (the SOA queries are counted as they are answered): 0 when the zone was unchanged. A failed
// transfer leaves the last one as it was.
func (t *zoneTransfer) List(ctx context.Context) (verify.Listing, int, error) {
	var failed transferError
	transfers := 0
	for _, server := range t.servers {
		if last := t.last; last != nil && last.server == server {
			if t.unchanged(ctx, server, last.serial) {
				return last.listing, transfers, nil
			}
			if err := ctx.Err(); err != nil {
				return verify.Listing{}, transfers, err
			}
		}
		transfers++
		listing, received, reason := Transfer(ctx, server, t.apex, t.timeout)
		t.counters.Transferred(received, reason == "")
		if reason == "" {
			t.last = &lastTransfer{server: server, serial: received.Serial, listing: listing}
			return listing, transfers, nil
		}
		failed = transferError{server: server, reason: reason}
	}
	return verify.Listing{}, transfers, failed
}

// unchanged asks server for the zone's SOA and says whether its serial is serial. Only equality
// counts: serials are compared in RFC 1982's arithmetic, where a different serial may be older or
// newer, either way not the zone transferred. A SOA query that fails says "changed": the zone is
// transferred as if nothing were remembered.
func (t *zoneTransfer) unchanged(ctx context.Context, server string, serial uint32) bool {
	got, err := SOASerial(ctx, server, t.apex, t.timeout, nil)
	if ctx.Err() != nil {
		return false // stopping: neither counted nor used
	}
	same := err == nil && got == serial
	t.counters.SOAChecked(err, same)
	switch {
	case err == nil:
		t.counted("answered")
	case failureOf(err) == "timeout":
		t.counted("timeout")
	default:
		t.counted("error")
	}
	return same
}

func (*zoneTransfer) Failure(err error) (string, string, time.Duration) {
	var failed transferError
	if errors.As(err, &failed) {
		return failed.server, failed.reason, 0
	}
	return "", failureOf(err), 0
}

// Transfer reads zone apex whole from server (AXFR over TCP) and keeps its CNAME, A and AAAA
// records; received says what the transfer brought, its serial among it. The timeout bounds each
// read of the transfer, not the whole of it. A failure is said in the few stable words of
// verify.Response.Failure ("transfer refused" when the server does not allow the transfer).
func Transfer(ctx context.Context, server, apex string, timeout time.Duration) (listing verify.Listing, received Received, failure string) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(apex))
	tr := &dns.Transfer{DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout}
	listing = verify.Listing{Source: server, Records: map[string][]verify.Record{}}
	received, err := Walk(ctx, tr, m, server, func(rr dns.RR) {
		name := verify.Canonical(rr.Header().Name)
		switch v := rr.(type) {
		case *dns.CNAME:
			listing.Records[name] = append(listing.Records[name], verify.Record{Name: name, Type: "CNAME", Value: verify.Canonical(v.Target)})
		case *dns.A:
			listing.Records[name] = append(listing.Records[name], verify.Record{Name: name, Type: "A", Value: v.A.String()})
		case *dns.AAAA:
			listing.Records[name] = append(listing.Records[name], verify.Record{Name: name, Type: "AAAA", Value: v.AAAA.String()})
		}
	})
	switch {
	case err == nil:
		return listing, received, ""
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return verify.Listing{}, received, "timeout"
	}
	return verify.Listing{}, received, transferFailure(err)
}

// SOASerial asks server for the SOA serial of zone apex: one query without recursion, over UDP,
// and again over TCP when the answer is truncated; signed when sign is given (it adds a TSIG to
// the message and returns the client's secrets, as zonewriter's RFC2136 signs). Only an
// authoritative answer holding apex's SOA counts: a resolver's may come from its cache.
func SOASerial(ctx context.Context, server, apex string, timeout time.Duration, sign func(*dns.Msg) map[string]string) (uint32, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	apex = dns.Fqdn(apex)
	// A new message for each attempt: the library takes the TSIG off a message it sends.
	ask := func(network string) (*dns.Msg, error) {
		m := new(dns.Msg)
		m.SetQuestion(apex, dns.TypeSOA)
		m.RecursionDesired = false
		c := &dns.Client{Net: network, Timeout: timeout}
		if sign != nil {
			c.TsigSecret = sign(m)
		}
		in, _, err := c.ExchangeContext(ctx, m, server)
		return in, err
	}
	in, err := ask("udp")
	if err == nil && in.Truncated {
		in, err = ask("tcp")
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("asking %s for the SOA of %s: %w", server, apex, err)
	case in.Rcode != dns.RcodeSuccess:
		return 0, fmt.Errorf("asking %s for the SOA of %s: the server answered %s", server, apex, dns.RcodeToString[in.Rcode])
	case !in.Authoritative:
		return 0, fmt.Errorf("asking %s for the SOA of %s: not authoritative", server, apex)
	}
	for _, rr := range in.Answer {
		if soa, ok := rr.(*dns.SOA); ok && strings.EqualFold(soa.Hdr.Name, apex) {
			return soa.Serial, nil
		}
	}
	return 0, fmt.Errorf("asking %s for the SOA of %s: no SOA in the answer", server, apex)
}

// Received is what one transfer brought: the zone's serial (the SOA it began with; a change
// between an earlier SOA query and the transfer is thus never missed), the records (both SOAs
// included) and the bytes read from the connection.
type Received struct {
	Serial  uint32
	Records int
	Bytes   int64
}

// TransferStats count the reads of zones read whole by transfer (AXFR): the SOA queries asked
// before a transfer, the reads they saved, and the transfers made and what they received.
type TransferStats struct {
	// SOAChecks are the SOA queries asked before a transfer; SOAFailures those without a usable
	// answer (the zone was transferred).
	SOAChecks, SOAFailures int64
	// Unchanged are the reads answered by the last transfer, the serial being the same.
	Unchanged int64
	// Transfers are the transfers started; FailedTransfers those that did not complete.
	Transfers, FailedTransfers int64
	// Records and Bytes are what every transfer received, the failed ones' included.
	Records, Bytes int64
	// LastRecords and LastBytes are what the last complete transfer received.
	LastRecords, LastBytes int64
}

// TransferCounters keep TransferStats; safe for concurrent use. The zero value counts from 0.
type TransferCounters struct {
	soaChecks, soaFailures, unchanged, transfers, failed, records, bytes, lastRecords, lastBytes atomic.Int64
}

// SOAChecked counts one SOA query asked before a transfer: failed (err), or unchanged (the last
// transfer answered the read).
func (c *TransferCounters) SOAChecked(err error, unchanged bool) {
	c.soaChecks.Add(1)
	if err != nil {
		c.soaFailures.Add(1)
	}
	if unchanged {
		c.unchanged.Add(1)
	}
}

// Transferred counts one transfer, complete or not, and what it received.
func (c *TransferCounters) Transferred(r Received, complete bool) {
	c.transfers.Add(1)
	c.records.Add(int64(r.Records))
	c.bytes.Add(r.Bytes)
	if !complete {
		c.failed.Add(1)
		return
	}
	c.lastRecords.Store(int64(r.Records))
	c.lastBytes.Store(r.Bytes)
}

// Stats returns the counts so far.
func (c *TransferCounters) Stats() TransferStats {
	return TransferStats{SOAChecks: c.soaChecks.Load(), SOAFailures: c.soaFailures.Load(), Unchanged: c.unchanged.Load(),
		Transfers: c.transfers.Load(), FailedTransfers: c.failed.Load(), Records: c.records.Load(), Bytes: c.bytes.Load(),
		LastRecords: c.lastRecords.Load(), LastBytes: c.lastBytes.Load()}
}

// verificationTransfers count the transfers of publication verification, every zone's.
var verificationTransfers TransferCounters

// VerificationTransfers are the counts of publication verification's zone transfers and SOA
// queries since the process started, every zone's together (for metrics and benchmarks). The
// SOA queries' outcomes are also counted one by one through the prober's counted hook, as
// queries.
func VerificationTransfers() TransferStats { return verificationTransfers.Stats() }

// Walk transfers the zone request asks for (an AXFR, signed when tr holds the key's secret) from
// server, and gives each record to each in the order the server sends them: the one transfer loop
// of publication verification (Transfer) and of regional failover's zone reads. It dials the
// connection itself (tr.Conn must be nil), within ctx, to count the bytes it reads. It returns
// what was received, and the first error: the connection's, the server's (a refusal carries its
// response code, see transferFailure), or ctx's when it ends during the transfer. A transfer
// given up is drained, so that the library's reader ends.
func Walk(ctx context.Context, tr *dns.Transfer, request *dns.Msg, server string, each func(dns.RR)) (Received, error) {
	var got Received
	dialer := net.Dialer{Timeout: tr.DialTimeout}
	if dialer.Timeout == 0 {
		dialer.Timeout = DefaultTimeout
	}
	c, err := dialer.DialContext(ctx, "tcp", server)
	if err != nil {
		return got, err
	}
	conn := &countingConn{Conn: c}
	tr.Conn = &dns.Conn{Conn: conn}
	envelopes, err := tr.In(request, server)
	if err != nil {
		_ = tr.Close()
		return got, err
	}
	for e := range envelopes {
		if e.Error != nil {
			go drain(envelopes)
			got.Bytes = conn.read.Load()
			return got, e.Error
		}
		for _, rr := range e.RR {
			if soa, ok := rr.(*dns.SOA); ok && got.Records == 0 {
				got.Serial = soa.Serial
			}
			got.Records++
			each(rr)
		}
		if err := ctx.Err(); err != nil {
			go drain(envelopes)
			got.Bytes = conn.read.Load()
			return got, err
		}
	}
	got.Bytes = conn.read.Load()
	return got, nil
}

// countingConn counts the bytes read from a connection (read by the library's transfer reader
// while Walk looks on).
type countingConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

// transferFailure names a failed transfer: the library reports a server's refusal as an error
// carrying the response code.
func transferFailure(err error) string {
	var code int
	if _, scanned := fmt.Sscanf(err.Error(), "dns: bad xfr rcode: %d", &code); scanned == nil {
		if code == dns.RcodeRefused || code == dns.RcodeNotAuth {
			return "transfer refused"
		}
		if name, ok := dns.RcodeToString[code]; ok {
			return name
		}
	}
	if errors.Is(err, dns.ErrSoa) {
		return "bad transfer"
	}
	return failureOf(err)
}

// drain empties the channel of a transfer given up, so that its reader ends.
func drain(envelopes chan *dns.Envelope) {
	for range envelopes {
	}
}
