package framework

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DNSProxy relays DNS over UDP and TCP from a port of its own to a server on 127.0.0.1: one
// cluster's path to a zone's server, which the network between them may cut while the other
// clusters still reach the server directly. Cut drops what the clients send (UDP) and closes
// their connections (TCP) until Heal. HoldConditionalUpdates delays conditional writes over TCP
// until several have arrived, as a slow network may.
type DNSProxy struct {
	Port int

	target string
	cut    atomic.Bool
	// conditional counts the conditional updates relayed over TCP; hold, when set, is where the
	// next ones wait.
	conditional atomic.Int32
	hold        *updateHold
	udp         *net.UDPConn
	tcp         net.Listener

	mu    sync.Mutex
	conns map[net.Conn]bool
	// upstreams are the UDP sockets towards the server, one per client address.
	upstreams map[string]*net.UDPConn
	closed    bool
	wg        sync.WaitGroup
}

// StartDNSProxy relays a free port to the server at 127.0.0.1:targetPort. When c is not nil,
// Close is registered with it.
func StartDNSProxy(c Cleanup, targetPort int) (*DNSProxy, error) {
	port, err := FreeTCPUDPPort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	udpAddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", udpAddr)
	if err != nil {
		return nil, err
	}
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		_ = udp.Close()
		return nil, err
	}
	p := &DNSProxy{Port: port, target: net.JoinHostPort("127.0.0.1", strconv.Itoa(targetPort)), udp: udp, tcp: tcp,
		conns: map[net.Conn]bool{}, upstreams: map[string]*net.UDPConn{}}
	p.wg.Go(p.serveUDP)
	p.wg.Go(p.serveTCP)
	if c != nil {
		c.Cleanup(p.Close)
	}
	return p, nil
}

// Cut drops every message from now on and closes the open connections.
func (p *DNSProxy) Cut() {
	p.cut.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

// Heal lets messages through again.
func (p *DNSProxy) Heal() { p.cut.Store(false) }

// Close stops the proxy.
func (p *DNSProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	for _, u := range p.upstreams {
		_ = u.Close()
	}
	p.mu.Unlock()
	_ = p.udp.Close()
	_ = p.tcp.Close()
	p.wg.Wait()
}

func (p *DNSProxy) serveUDP() {
	buf := make([]byte, 65535)
	for {
		n, from, err := p.udp.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if p.cut.Load() {
			continue
		}
		up, err := p.upstream(from)
		if err != nil {
			continue
		}
		_, _ = up.Write(buf[:n])
	}
}

// upstream is the socket towards the server for one client address, answering it as the answers
// come (dropped while cut).
func (p *DNSProxy) upstream(from *net.UDPAddr) (*net.UDPConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("closed")
	}
	if up, ok := p.upstreams[from.String()]; ok {
		return up, nil
	}
	target, err := net.ResolveUDPAddr("udp", p.target)
	if err != nil {
		return nil, err
	}
	up, err := net.DialUDP("udp", nil, target)
	if err != nil {
		return nil, err
	}
	p.upstreams[from.String()] = up
	p.wg.Go(func() {
		buf := make([]byte, 65535)
		for {
			n, err := up.Read(buf)
			if err != nil {
				return
			}
			if !p.cut.Load() {
				_, _ = p.udp.WriteToUDP(buf[:n], from)
			}
		}
	})
	return up, nil
}

func (p *DNSProxy) serveTCP() {
	for {
		c, err := p.tcp.Accept()
		if err != nil {
			return
		}
		if p.cut.Load() {
			_ = c.Close()
			continue
		}
		p.wg.Go(func() { p.pipe(c) })
	}
}

// pipe relays one client connection to the server until either side closes or Cut.
func (p *DNSProxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_, _ = c.Close(), up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	var done sync.WaitGroup
	done.Go(func() { p.relayMessages(up, c); _ = up.Close() })
	done.Go(func() { _, _ = io.Copy(c, up); _ = c.Close() })
	done.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// relayMessages relays DNS messages over TCP (each after its two-byte length) from c to up, holding
// each conditional update where HoldConditionalUpdates says.
func (p *DNSProxy) relayMessages(up, c net.Conn) {
	r := bufio.NewReader(c)
	for {
		var size [2]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(r, msg); err != nil {
			return
		}
		if isConditionalUpdate(msg) {
			p.conditional.Add(1)
			p.waitHold()
		}
		if _, err := up.Write(append(size[:], msg...)); err != nil {
			return
		}
	}
}

// isConditionalUpdate says whether a DNS message is an UPDATE (RFC 2136: opcode 5) with
// prerequisites (its PRCOUNT, the header's fourth count, above 0): a write on the condition that
// the zone still holds what the writer read.
func isConditionalUpdate(msg []byte) bool {
	return len(msg) >= 12 && (msg[2]>>3)&0xF == 5 && binary.BigEndian.Uint16(msg[6:8]) > 0
}

// updateHold is where conditional updates wait for each other.
type updateHold struct {
	n, arrived int
	within     time.Duration
	release    chan struct{}
	once       sync.Once
}

// HoldConditionalUpdates holds the next n conditional updates relayed over TCP until all n have
// arrived, or within has passed since the first did, then relays them together: writers that read
// the same value send their conditional writes to the server at the same moment, as over a slow
// network, so that the server, not the order of their rounds, decides between them.
func (p *DNSProxy) HoldConditionalUpdates(n int, within time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hold = &updateHold{n: n, within: within, release: make(chan struct{})}
}

// ConditionalUpdates is how many conditional updates the proxy relayed (or is holding).
func (p *DNSProxy) ConditionalUpdates() int { return int(p.conditional.Load()) }

func (p *DNSProxy) waitHold() {
	p.mu.Lock()
	h := p.hold
	if h == nil {
		p.mu.Unlock()
		return
	}
	h.arrived++
	last := h.arrived == h.n
	if last {
		p.hold = nil
	}
	p.mu.Unlock()
	release := func() {
		h.once.Do(func() { close(h.release) })
	}
	if last {
		release()
		return
	}
	select {
	case <-h.release:
	case <-time.After(h.within):
		p.mu.Lock()
		if p.hold == h {
			p.hold = nil
		}
		p.mu.Unlock()
		release()
	}
}
