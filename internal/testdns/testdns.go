// Package testdns runs an authoritative DNS server for tests: a real server (github.com/miekg/dns)
// on 127.0.0.1, UDP and TCP on one port, answering from records the test sets, as BIND answers
// from its zone: the CNAME of a name and the chased records of its target, NXDOMAIN for unknown
// names (also at the end of a CNAME chain, RFC 6604), the AA bit on every answer, and zone
// transfers (AXFR over TCP) when allowed. It counts the queries and transfers and remembers
// whether any query asked for recursion. The end-to-end suite uses the real BIND instead.
package testdns

import (
	"errors"
	"fmt"
	"net"
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

	mu        sync.Mutex
	records   map[string][]dns.RR // by lower-case fully qualified name
	down      bool
	resolver  bool
	queries   int
	recursive int
	transfers int
	// refuseTransfers answers AXFR with REFUSED, as a server whose allow-transfer does not list
	// the asker.
	refuseTransfers bool
}

// Start starts a server on a free port of 127.0.0.1.
func Start() (*Server, error) {
	var errs []error
	for range 5 { // the UDP port may be taken for TCP in between
		s, err := start()
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func start() (*Server, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		_ = pc.Close()
		return nil, err
	}
	s := &Server{Addr: pc.LocalAddr().String(), records: map[string][]dns.RR{}}
	started := make(chan struct{}, 2)
	s.udp = &dns.Server{PacketConn: pc, Handler: s, NotifyStartedFunc: func() { started <- struct{}{} }}
	s.tcp = &dns.Server{Listener: l, Handler: s, NotifyStartedFunc: func() { started <- struct{}{} }}
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
}

// Delete removes every record of a name.
func (s *Server) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, strings.ToLower(dns.Fqdn(name)))
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

// Transfers returns how many zone transfers the server was asked for.
func (s *Server) Transfers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.transfers
}

// Queries returns how many queries the server received, and how many of them asked for recursion.
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
	if q.Qtype == dns.TypeAXFR {
		s.queries--
		s.transfers++
		s.transfer(w, m, strings.ToLower(q.Name))
		return
	}
	name := strings.ToLower(q.Name)
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
	_ = w.WriteMsg(m)
}

// transfer answers an AXFR of apex: the zone's SOA, every record at or below apex, the SOA again,
// in one message; s.mu is held.
func (s *Server) transfer(w dns.ResponseWriter, m *dns.Msg, apex string) {
	if s.refuseTransfers {
		m.Rcode = dns.RcodeRefused
		_ = w.WriteMsg(m)
		return
	}
	soa := &dns.SOA{Hdr: dns.RR_Header{Name: apex, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 300},
		Ns: "ns." + apex, Mbox: "hostmaster." + apex, Serial: 1, Refresh: 3600, Retry: 600, Expire: 86400, Minttl: 300}
	m.Answer = append(m.Answer, soa)
	for name, rrs := range s.records {
		if name == apex || strings.HasSuffix(name, "."+apex) {
			m.Answer = append(m.Answer, rrs...)
		}
	}
	m.Answer = append(m.Answer, soa)
	_ = w.WriteMsg(m)
}
