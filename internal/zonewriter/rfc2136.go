// Package zonewriter writes into a DNS zone the two kinds of record regional failover needs, and
// nothing else (docs/ARCHITECTURE.md#regional-failover-design): a cluster's heartbeat, and the
// ownership TXT value of a record passed to another ExternalDNS owner. Every service and address
// record stays ExternalDNS's to write. The decisions are internal/failover's; this is their I/O.
package zonewriter

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
// caller's to fill.
func (w RFC2136) Read(ctx context.Context) (failover.ZoneReading, error) {
	timeout := w.timeout()
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(w.Zone))
	tr := &dns.Transfer{DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, TsigSecret: w.sign(m)}
	r := newReading(w.Zone)
	err := prober.Walk(ctx, tr, m, w.Server, func(rr dns.RR) {
		switch v := rr.(type) {
		case *dns.TXT:
			r.txt(v.Hdr.Name, v.Hdr.Ttl, strings.Join(v.Txt, ""))
		case *dns.A:
			r.address(v.Hdr.Name, v.A.String())
		case *dns.AAAA:
			r.address(v.Hdr.Name, v.AAAA.String())
		}
	})
	switch {
	case err == nil:
		return r.out, nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return failover.ZoneReading{}, err
	}
	return failover.ZoneReading{}, fmt.Errorf("transferring zone %s from %s: %w", w.Zone, w.Server, err)
}
