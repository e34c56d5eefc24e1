// Package zonewriter writes into a DNS zone the two kinds of record regional failover needs, and
// nothing else (docs/ARCHITECTURE.md#regional-failover-design): a cluster's heartbeat, and the
// ownership TXT value of a record passed to another ExternalDNS owner. Every service and address
// record stays ExternalDNS's to write. The decisions are internal/failover's; this is their I/O.
package zonewriter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/prober"
)

// RFC2136 writes into a zone by dynamic update (RFC 2136) over TCP, signed with TSIG when a key is
// given, as ExternalDNS's rfc2136 provider does; the zone's server needs to accept updates from
// the operator.
type RFC2136 struct {
	// Server is the zone's primary as host:port.
	Server string
	// Zone is the zone's apex, e.g. example.com.
	Zone string
	// TSIGName, TSIGAlgorithm (e.g. hmac-sha256) and TSIGSecret (base64) sign the updates; an
	// empty TSIGName sends them unsigned.
	TSIGName, TSIGAlgorithm, TSIGSecret string
	// Timeout bounds each update (default 5 s).
	Timeout time.Duration
}

// ErrChanged is returned by PassOwnership when the ownership value is no longer the one the pass
// was computed from: somebody (another stand-in, the owner's ExternalDNS) changed it first, and
// the zone is left as it is.
var ErrChanged = errors.New("the ownership value changed since it was read")

// heartbeatTTL keeps resolvers from caching a heartbeat for long; only the operators read it,
// from the zone itself.
const heartbeatTTL = 10

// WriteHeartbeat replaces the cluster's heartbeat record in the zone with value
// (failover.HeartbeatValue).
func (w RFC2136) WriteHeartbeat(ctx context.Context, cluster, region, value string) error {
	name := dns.Fqdn(failover.HeartbeatName(cluster, region, w.Zone))
	m := w.update()
	m.RemoveRRset([]dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTXT, Class: dns.ClassINET}}})
	m.Insert([]dns.RR{txt(name, heartbeatTTL, value)})
	return w.send(ctx, m, "writing the heartbeat "+name)
}

// PassOwnership replaces the ownership TXT value old of name by new (failover.PassOwnership's result) in
// one update, on the condition that the name's TXT values are exactly old still (RFC 2136's
// "RRset exists, value dependent" prerequisite): of two clusters passing the same record, only
// the first succeeds; the second gets ErrChanged. ttl is the TXT record's TTL, kept.
func (w RFC2136) PassOwnership(ctx context.Context, name string, ttl uint32, old, new string) error {
	name = dns.Fqdn(name)
	m := w.update()
	m.Used([]dns.RR{txt(name, 0, old)})
	m.Remove([]dns.RR{txt(name, 0, old)})
	m.Insert([]dns.RR{txt(name, ttl, new)})
	err := w.send(ctx, m, "passing the ownership of "+name)
	var rcode rcodeError
	if errors.As(err, &rcode) && (rcode == dns.RcodeNXRrset || rcode == dns.RcodeNameError) {
		return fmt.Errorf("passing the ownership of %s: %w", name, ErrChanged)
	}
	return err
}

// WriteIntermediate writes an intermediate name's CNAME (naming.IntermediateName), which the
// operators write themselves, in one update on the condition that the zone still holds what it
// was read with: create it pointing at new when old is "" (the name not in use at all), rewrite it
// from old to new, or delete it when new is "" (its CNAME exactly old still). Of two clusters
// writing the same intermediate, only the first succeeds; the second gets ErrChanged. ttl is the
// record's TTL.
func (w RFC2136) WriteIntermediate(ctx context.Context, name string, ttl uint32, old, new string) error {
	name = dns.Fqdn(name)
	m := w.update()
	if old == "" {
		m.NameNotUsed([]dns.RR{&dns.ANY{Hdr: dns.RR_Header{Name: name}}})
	} else {
		m.Used([]dns.RR{cname(name, 0, old)})
		m.RemoveRRset([]dns.RR{&dns.CNAME{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET}}})
	}
	if new != "" {
		m.Insert([]dns.RR{cname(name, ttl, new)})
	}
	err := w.send(ctx, m, "writing the intermediate "+name)
	var rcode rcodeError
	if errors.As(err, &rcode) && (rcode == dns.RcodeNXRrset || rcode == dns.RcodeNameError || rcode == dns.RcodeYXDomain) {
		return fmt.Errorf("writing the intermediate %s: %w", name, ErrChanged)
	}
	return err
}

func cname(name string, ttl uint32, target string) *dns.CNAME {
	return &dns.CNAME{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: ttl}, Target: dns.Fqdn(target)}
}

func (w RFC2136) update() *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate(dns.Fqdn(w.Zone))
	return m
}

// txt is a TXT record of one value, in 255-byte strings as ExternalDNS writes a longer one
// (failover.TXTStrings): an update's prerequisite must match the record exactly. Values are given
// without the quotes dig prints around them.
func txt(name string, ttl uint32, value string) *dns.TXT {
	return &dns.TXT{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: ttl}, Txt: failover.TXTStrings(strings.Trim(value, `"`))}
}

// rcodeError is a refusal by the server, by its response code.
type rcodeError int

func (e rcodeError) Error() string { return "the server answered " + dns.RcodeToString[int(e)] }

func (w RFC2136) send(ctx context.Context, m *dns.Msg, what string) error {
	c := &dns.Client{Net: "tcp", Timeout: w.timeout(), TsigSecret: w.sign(m)}
	answer, _, err := c.ExchangeContext(ctx, m, w.Server)
	if err != nil {
		return fmt.Errorf("%s in zone %s at %s: %w", what, w.Zone, w.Server, err)
	}
	if answer.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("%s in zone %s at %s: %w", what, w.Zone, w.Server, rcodeError(answer.Rcode))
	}
	return nil
}

// timeout bounds each exchange (default 5 s).
func (w RFC2136) timeout() time.Duration {
	if w.Timeout == 0 {
		return 5 * time.Second
	}
	return w.Timeout
}

// sign makes m carry a TSIG signature with the writer's key, and returns the secrets the client
// signs with (nil without a key: m goes unsigned).
func (w RFC2136) sign(m *dns.Msg) map[string]string {
	if w.TSIGName == "" {
		return nil
	}
	key := dns.Fqdn(w.TSIGName)
	m.SetTsig(key, dns.Fqdn(strings.ToLower(w.TSIGAlgorithm)), 300, time.Now().Unix())
	return map[string]string{key: w.TSIGSecret}
}

// Read transfers the zone (AXFR over TCP, signed with the writer's key when it has one) and
// returns its heartbeats, TXT records and addresses; Controller, Owner and TXTPrefix are the
// caller's to fill. A zone this process transferred before from the same server with the same key
// is first asked for its SOA (one query, signed the same way): when the serial is the one that
// transfer began with, the zone is unchanged (RFC 2136 3.6: a primary increments the serial before
// any changed record is answered or transferred; BIND does with every dynamic update that changes
// the zone) and that transfer's reading is returned again, a copy of it. Failover reads a zone
// whole up to every round (5 s) while a pass needs it: a zone of 3,000 names under ExternalDNS's
// TXT registry is 6,003 records a transfer, 658 kB on the wire, 23 ms and 12 MB allocated
// (against internal/testdns, signed); the SOA query and the copy of the remembered reading take
// 0.5 ms and 0.3 MB. Only equality counts (serials compare in RFC 1982's arithmetic, where a
// different serial may be older or newer: either way not the zone transferred). A SOA query that
// fails, or a different serial, makes a transfer as if nothing were remembered; a failed transfer
// leaves the remembered one as it was. RFC2136Stats counts them.
func (w RFC2136) Read(ctx context.Context) (failover.ZoneReading, error) {
	key := readingKey{server: w.Server, zone: failover.Canonical(w.Zone), tsig: failover.Canonical(w.TSIGName)}
	if last, ok := readings.get(key); ok {
		serial, err := prober.SOASerial(ctx, w.Server, w.Zone, w.timeout(), w.sign)
		if ctx.Err() != nil {
			return failover.ZoneReading{}, ctx.Err()
		}
		rfc2136Transfers.SOAChecked(err, err == nil && serial == last.serial)
		if err == nil && serial == last.serial {
			return cloneReading(last.reading), nil
		}
	}
	timeout := w.timeout()
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(w.Zone))
	tr := &dns.Transfer{DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, TsigSecret: w.sign(m)}
	r := newReading(w.Zone)
	received, err := prober.Walk(ctx, tr, m, w.Server, func(rr dns.RR) {
		switch v := rr.(type) {
		case *dns.TXT:
			r.txt(v.Hdr.Name, v.Hdr.Ttl, strings.Join(v.Txt, ""))
		case *dns.CNAME:
			r.cname(v.Hdr.Name, v.Target)
		case *dns.A:
			r.address(v.Hdr.Name, v.A.String())
		case *dns.AAAA:
			r.address(v.Hdr.Name, v.AAAA.String())
		}
	})
	rfc2136Transfers.Transferred(received, err == nil)
	switch {
	case err == nil:
		readings.put(key, received.Serial, r.out)
		return cloneReading(r.out), nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return failover.ZoneReading{}, err
	}
	return failover.ZoneReading{}, fmt.Errorf("transferring zone %s from %s: %w", w.Zone, w.Server, err)
}

// rfc2136Transfers count Read's SOA queries and transfers, every zone's.
var rfc2136Transfers prober.TransferCounters

// RFC2136Stats are the counts of RFC2136.Read's SOA queries and zone transfers since the process
// started, every zone's together (for metrics and benchmarks): Unchanged are the reads answered
// without a transfer.
func RFC2136Stats() prober.TransferStats { return rfc2136Transfers.Stats() }

// readings remember the last complete transfer of each zone, by server, zone and TSIG key name.
// They are the package's, not the RFC2136's: an RFC2136 is a value, built anew for every failover
// round (internal/failoverloop/loop.go), and a writer of the same server, zone and key reads the same
// zone. The key's name is part of the key so that a writer is never answered another's transfer
// on the strength of a SOA query alone: its SOA query is signed with its own key, which the server
// checks (a wrong secret fails the query, and the transfer follows, and fails). An entry not read
// for forgetReadingsAfter goes at the next transfer of any zone: a zone whose settings changed
// holds no transfer in memory for long.
var readings = readingCache{entries: map[readingKey]lastReading{}}

// forgetReadingsAfter is how long an unread zone's last transfer is kept: six times the longest
// failover waits between two whole readings of a zone (5 minutes at rest, failover.ReadPlan).
const forgetReadingsAfter = 30 * time.Minute

type readingKey struct{ server, zone, tsig string }

// lastReading is a zone's last complete transfer: the serial of the SOA it began with, what it
// read, and when it was last used.
type lastReading struct {
	serial  uint32
	reading failover.ZoneReading
	used    time.Time
}

type readingCache struct {
	mu      sync.Mutex
	entries map[readingKey]lastReading
}

func (c *readingCache) get(k readingKey) (lastReading, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if ok {
		e.used = time.Now()
		c.entries[k] = e
	}
	return e, ok
}

// put remembers reading, which no caller holds (cloneReading), and forgets the entries unused for
// forgetReadingsAfter.
func (c *readingCache) put(k readingKey, serial uint32, reading failover.ZoneReading) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for other, e := range c.entries {
		if now.Sub(e.used) > forgetReadingsAfter {
			delete(c.entries, other)
		}
	}
	c.entries[k] = lastReading{serial: serial, reading: reading, used: now}
}

// cloneReading copies a reading's maps and the slices they hold, so that the remembered reading
// stays as the transfer left it whatever a caller does with its own. internal/failoverloop/loop.go and
// internal/failover only set the struct's own fields (Controller, Region, Owner, TXTPrefix) and
// read the maps; a heartbeat's own slices (Targets) are shared, nothing writes into them.
func cloneReading(r failover.ZoneReading) failover.ZoneReading {
	out := r
	out.Beats = make(map[string][]failover.Heartbeat, len(r.Beats))
	for region, beats := range r.Beats {
		out.Beats[region] = slices.Clone(beats)
	}
	out.TXT = make(map[string]failover.TXTSet, len(r.TXT))
	for name, set := range r.TXT {
		set.Values = slices.Clone(set.Values)
		out.TXT[name] = set
	}
	out.Addresses = make(map[string][]string, len(r.Addresses))
	for name, values := range r.Addresses {
		out.Addresses[name] = slices.Clone(values)
	}
	out.CNAMEs = maps.Clone(r.CNAMEs)
	return out
}
