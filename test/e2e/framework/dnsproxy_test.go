package framework

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestDNSProxy_HoldsConditionalUpdatesUntilTheyAllArrived: behind HoldConditionalUpdates(2), a
// first conditional update reaches the server only with the second; an unconditional one (a
// heartbeat's) passes at once; and a lone one is let through after the hold's time.
func TestDNSProxy_HoldsConditionalUpdatesUntilTheyAllArrived(t *testing.T) {
	arrived := make(chan string, 10)
	server := &dns.Server{Net: "tcp", Addr: "127.0.0.1:0", Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		arrived <- r.Ns[0].Header().Name
		m := new(dns.Msg)
		_ = w.WriteMsg(m.SetReply(r))
	})}
	// miekg/dns's default refuses updates (NOTIMP) before the handler.
	server.MsgAcceptFunc = func(dns.Header) dns.MsgAcceptAction { return dns.MsgAccept }
	started := make(chan struct{})
	server.NotifyStartedFunc = func() { close(started) }
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	server.Listener = l
	go func() { _ = server.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = server.Shutdown() })
	proxy, err := StartDNSProxy(t, l.Addr().(*net.TCPAddr).Port)
	if err != nil {
		t.Fatal(err)
	}
	send := func(name string, conditional bool) {
		m := new(dns.Msg)
		m.SetUpdate("example.com.")
		rr, _ := dns.NewRR(name + ". 10 IN TXT \"v\"")
		if conditional {
			m.Used([]dns.RR{rr})
		}
		m.Insert([]dns.RR{rr})
		c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
		if _, _, err := c.Exchange(m, "127.0.0.1:"+strconv.Itoa(proxy.Port)); err != nil {
			t.Error(err)
		}
	}
	next := func(within time.Duration) string {
		select {
		case name := <-arrived:
			return name
		case <-time.After(within):
			return ""
		}
	}

	proxy.HoldConditionalUpdates(2, 5*time.Second)
	go send("first.example.com", true)
	if got := next(300 * time.Millisecond); got != "" {
		t.Fatalf("%s reached the server before the second conditional update was sent", got)
	}
	send("heartbeat.example.com", false)
	if got := next(time.Second); got != "heartbeat.example.com." {
		t.Fatalf("the unconditional update was held: got %q", got)
	}
	go send("second.example.com", true)
	got := map[string]bool{next(2 * time.Second): true, next(2 * time.Second): true}
	if !got["first.example.com."] || !got["second.example.com."] {
		t.Fatalf("the two conditional updates did not both arrive once the second was sent: %v", got)
	}
	if n := proxy.ConditionalUpdates(); n != 2 {
		t.Errorf("ConditionalUpdates = %d, want 2", n)
	}

	proxy.HoldConditionalUpdates(2, 500*time.Millisecond)
	start := time.Now()
	send("alone.example.com", true)
	if took, got := time.Since(start), next(time.Second); got != "alone.example.com." || took < 400*time.Millisecond {
		t.Errorf("a lone conditional update: %q after %s, want it let through after the hold's 500 ms", got, took)
	}
}
