// Package testdns runs an authoritative DNS server for tests: a real server (github.com/miekg/dns)
// on 127.0.0.1, UDP and TCP on one port, answering from records the test sets, as BIND answers
// from its zone: the CNAME of a name and the chased records of its target, NXDOMAIN for unknown
// names (also at the end of a CNAME chain, RFC 6604), the AA bit on every answer, the zone's SOA
// with a serial that every change of the records increments (as BIND's serial-update-method
// increment does for a dynamic zone), and zone transfers (AXFR over TCP) when allowed; started
// with a TSIG key (StartSigned), only transfers signed with it. It counts the queries, SOA queries
// and transfers and remembers whether any query asked for recursion. The end-to-end suite uses the
// real BIND instead.
package testdns

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Server is a running authoritative server.
type Server struct {
	// Addr is host:port, for a DNSConfiguration's verification.nameservers.
	Addr string

	udp, tcp *dns.Server
	// key is the TSIG key's name (fully qualified) transfers must be signed with; "" for none.
	key string

	mu        sync.Mutex
	records   map[string][]dns.RR // by lower-case fully qualified name
	serial    uint32              // the zone's SOA serial, incremented by every Set and Delete
	down      bool
	resolver  bool
	queries   int
	recursive int
	transfers int
	soas      int
	signed    int // SOA queries signed with the key
	// refuseTransfers answers AXFR with REFUSED, as a server whose allow-transfer does not list
	// the asker; refuseSOA answers SOA queries with REFUSED.
	refuseTransfers, refuseSOA bool
	// soaSerial, when not 0, is the serial SOA queries answer instead of the zone's.
	soaSerial uint32
	// truncate answers every query over UDP with the TC bit and no records.
	truncate bool
}

// Start starts a server on a free port of 127.0.0.1.
func Start() (*Server, error) { return StartSigned("", "") }

// StartSigned starts a server that allows transfers only signed with the TSIG key name (secret in
// base64, any algorithm the library knows), as the end-to-end suite's BIND of a zone that takes
// only signed updates: queries are answered signed or not (allow-query any), a transfer unsigned
// is REFUSED, a request badly signed NOTAUTH; an answer to a signed request is signed. An empty
// name: Start.
func StartSigned(name, secret string) (*Server, error) {
	var errs []error
	for range 5 { // the UDP port may be taken for TCP in between
		s, err := start(name, secret)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func start(key, secret string) (*Server, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		_ = pc.Close()
		return nil, err
	}
	s := &Server{Addr: pc.LocalAddr().String(), records: map[string][]dns.RR{}, serial: 1}
	var secrets map[string]string
	if key != "" {
		s.key = dns.Fqdn(strings.ToLower(key))
		secrets = map[string]string{s.key: secret}
	}
	started := make(chan struct{}, 2)
	s.udp = &dns.Server{PacketConn: pc, Handler: s, TsigSecret: secrets, NotifyStartedFunc: func() { started <- struct{}{} }}
	s.tcp = &dns.Server{Listener: l, Handler: s, TsigSecret: secrets, NotifyStartedFunc: func() { started <- struct{}{} }}
	go func() { _ = s.udp.ActivateAndServe() }()
	go func() { _ = s.tcp.ActivateAndServe() }()
	for range 2 {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			s.Close()
			return nil, fmt.Errorf("DNS server on %s did not start", s.Addr)
		}
	}
	return s, nil
}

// Close stops the server.
func (s *Server) Close() {
	_ = s.udp.Shutdown()
	_ = s.tcp.Shutdown()
}

// Set replaces the records of the names of rrs (zone-file lines, e.g.
// "api.example.com. 300 IN CNAME aks01.example.com."). It panics on a line that does not parse.
func (s *Server) Set(rrs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	replaced := map[string]bool{}
	for _, line := range rrs {
		rr, err := dns.NewRR(line)
		if err != nil {
			panic(fmt.Sprintf("testdns: %q: %v", line, err))
		}
		name := strings.ToLower(rr.Header().Name)
		if !replaced[name] {
			s.records[name] = nil
			replaced[name] = true
		}
		s.records[name] = append(s.records[name], rr)
	}
	s.serial++
}

// Delete removes every record of a name.
func (s *Server) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, strings.ToLower(dns.Fqdn(name)))
	s.serial++
}

// Serial returns the zone's SOA serial: 1 at the start, incremented by every Set and Delete.
func (s *Server) Serial() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.serial
}

// SetDown makes the server ignore every query (clients time out) until called with false.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// SetResolver makes the server answer as a recursive resolver does (without the AA bit) until
// called with false.
func (s *Server) SetResolver(resolver bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resolver = resolver
}

// SetTransfersRefused makes the server refuse zone transfers until called with false.
func (s *Server) SetTransfersRefused(refused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseTransfers = refused
}

// SetSOARefused makes the server answer SOA queries with REFUSED until called with false
// (transfers still carry the SOA).
func (s *Server) SetSOARefused(refused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuseSOA = refused
}

// SetSOASerial makes SOA queries answer serial instead of the zone's until called with 0, as if
// the zone changed between a SOA query and the transfer that follows it.
func (s *Server) SetSOASerial(serial uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.soaSerial = serial
}

// SetTruncated makes the server answer every query over UDP with the TC bit and no records (the
// client asks again over TCP) until called with false.
func (s *Server) SetTruncated(truncated bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.truncate = truncated
}

// SOAQueries returns how many SOA queries the server received (not counted in Queries), and how
// many of them were signed with its key.
func (s *Server) SOAQueries() (total, signed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.soas, s.signed
}

// Transfers returns how many zone transfers the server was asked for.
func (s *Server) Transfers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.transfers
}

// Queries returns how many queries the server received, and how many of them asked for recursion;
// SOA queries and transfers are counted apart (SOAQueries, Transfers).
func (s *Server) Queries() (total, recursive int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries, s.recursive
}

// ServeDNS answers one query from the records.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries++
	if req.RecursionDesired {
		s.recursive++
	}
	if s.down || len(req.Question) != 1 {
		return
	}
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = !s.resolver
	m.RecursionAvailable = s.resolver
	q := req.Question[0]
	switch q.Qtype {
	case dns.TypeAXFR:
		s.queries--
		s.transfers++
	case dns.TypeSOA:
		s.queries--
		s.soas++
	}
	if s.key != "" {
		switch t := req.IsTsig(); {
		case t == nil && q.Qtype == dns.TypeAXFR:
			m.Rcode = dns.RcodeRefused
			_ = w.WriteMsg(m)
			return
		case t == nil:
		case w.TsigStatus() != nil || strings.ToLower(t.Hdr.Name) != s.key:
			m.Rcode = dns.RcodeNotAuth
			_ = w.WriteMsg(m)
			return
		case q.Qtype == dns.TypeSOA:
			s.signed++
		}
	}
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp && s.truncate {
		m.Truncated = true
		s.reply(w, m, req)
		return
	}
	name := strings.ToLower(q.Name)
	switch q.Qtype {
	case dns.TypeAXFR:
		s.transfer(w, m, req, name)
		return
	case dns.TypeSOA:
		// Every name asked for its SOA is taken for an apex, as for transfers.
		if s.refuseSOA {
			m.Rcode = dns.RcodeRefused
		} else {
			soa := s.soa(name)
			if s.soaSerial != 0 {
				soa.Serial = s.soaSerial
			}
			m.Answer = append(m.Answer, soa)
		}
		s.reply(w, m, req)
		return
	}
	for hops := 0; hops < 8; hops++ { // follow CNAMEs inside the zone, as an authoritative server does
		var next string
		if _, ok := s.records[name]; !ok {
			m.Rcode = dns.RcodeNameError // about the chain's last name (RFC 6604), as BIND answers
			break
		}
		for _, rr := range s.records[name] {
			switch {
			case rr.Header().Rrtype == dns.TypeCNAME && q.Qtype != dns.TypeCNAME:
				m.Answer = append(m.Answer, rr)
				next = strings.ToLower(rr.(*dns.CNAME).Target)
			case rr.Header().Rrtype == q.Qtype:
				m.Answer = append(m.Answer, rr)
			}
		}
		if next == "" {
			break
		}
		name = next
	}
	s.reply(w, m, req)
}

// reply writes m, signed with the key req was signed with when the server has one.
func (s *Server) reply(w dns.ResponseWriter, m, req *dns.Msg) {
	if t := req.IsTsig(); s.key != "" && t != nil {
		m.SetTsig(t.Hdr.Name, t.Algorithm, 300, time.Now().Unix())
	}
	_ = w.WriteMsg(m)
}

// soa is the zone's SOA at apex with the current serial: the one Set gave apex, else a made-up
// one; s.mu is held.
func (s *Server) soa(apex string) *dns.SOA {
	for _, rr := range s.records[apex] {
		if v, ok := rr.(*dns.SOA); ok {
			soa := *v
			soa.Serial = s.serial
			return &soa
		}
	}
	return &dns.SOA{Hdr: dns.RR_Header{Name: apex, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 300},
		Ns: "ns." + apex, Mbox: "hostmaster." + apex, Serial: s.serial, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: 300}
}

// transfer answers an AXFR of apex: the zone's SOA, every other record at or below apex, the SOA
// again, in messages of up to transferChunk records, as BIND splits a transfer (a DNS message
// holds at most 64 KiB); s.mu is held.
func (s *Server) transfer(w dns.ResponseWriter, m, req *dns.Msg, apex string) {
	if s.refuseTransfers {
		m.Rcode = dns.RcodeRefused
		s.reply(w, m, req)
		return
	}
	soa := s.soa(apex)
	rrs := []dns.RR{soa}
	for name, records := range s.records {
		if name == apex || strings.HasSuffix(name, "."+apex) {
			for _, rr := range records {
				if rr.Header().Rrtype != dns.TypeSOA {
					rrs = append(rrs, rr)
				}
			}
		}
	}
	rrs = append(rrs, soa)
	for chunk := range slices.Chunk(rrs, transferChunk) {
		out := m.Copy()
		out.Answer = chunk
		s.reply(w, out, req)
		w.TsigTimersOnly(true) // the later messages' signatures chain on the first (RFC 8945 5.3.1)
	}
}

// transferChunk is how many records one message of a transfer holds.
const transferChunk = 100
