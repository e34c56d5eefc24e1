// Package prober asks regional DNS zones whether they serve what the operator published. It is
// the I/O half of internal/verify: one loop per zone takes the records verify.Tracker says are
// due, asks the zone's authoritative name servers directly (non-recursive, RD=0, over UDP with a
// TCP retry for truncated answers, with github.com/miekg/dns) — or, for a zone nobody may ask
// directly, a recursive resolver serving it (RD=1; its answers may come from its cache) — and
// reports what they answered.
// Queries to one zone are rate-limited (a token bucket) and bounded in number at any time, so
// that ten thousand routes never flood a name server: a full round of checks then simply takes
// longer.
package prober

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/time/rate"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/verify"
)

// Zone is one regional zone to verify: the ExternalDNS controller that writes it and how to
// reach its authoritative name servers, or the recursive resolvers serving it (Recursive).
type Zone struct {
	Controller  string
	Nameservers []string
	// Recursive: Nameservers are recursive resolvers, asked with RD=1; their answers need not be
	// authoritative and may come from a cache (verify.Finding.Cached).
	Recursive bool
	Timeout   time.Duration
	// TransferZone, when set, is the apex of the zone to read whole from the name servers (AXFR)
	// instead of asking one query per name; Azure, when set, is an Azure Private DNS zone read
	// whole through Resource Manager. Either way the zone is listed (see listed), at most once per
	// ListInterval.
	TransferZone string
	Azure        *azureprivatedns.Zone
	ListInterval time.Duration
}

func (z Zone) equal(o Zone) bool {
	return z.Controller == o.Controller && slices.Equal(z.Nameservers, o.Nameservers) && z.Recursive == o.Recursive && z.Timeout == o.Timeout &&
		z.TransferZone == o.TransferZone && (z.Azure == nil) == (o.Azure == nil) && (z.Azure == nil || *z.Azure == *o.Azure) && z.ListInterval == o.ListInterval
}

// Limits bound the queries to each zone.
type Limits struct {
	// QPS is the sustained rate of queries to one zone (its name servers together).
	QPS float64
	// Concurrency is the most queries to one zone in flight at once.
	Concurrency int
	// TransferInterval is the shortest time between two transfers of a zone read whole.
	TransferInterval time.Duration
}

// DefaultLimits: 20 queries per second and 4 at a time per zone, or at most one transfer a second.
var DefaultLimits = Limits{QPS: 20, Concurrency: 4, TransferInterval: time.Second}

// DefaultTimeout bounds one query when the zone's settings give none.
const DefaultTimeout = 2 * time.Second

// Prober runs one checking loop per zone (SetZones). It does nothing until started and stops with
// the context given to Start; it must run on the leader only, like the reconcilers that read its
// results.
type Prober struct {
	tracker *verify.Tracker
	limits  Limits
	// notify receives the changes of state found by the checks (called from the loops).
	notify func([]verify.Change)
	// counted receives each query's (or listing request's) outcome for the metrics: "answered", "timeout", "error" or "throttled".
	counted func(controller, outcome string)
	// AzureTransport is the HTTP client of the Azure zone readers (tests); nil: the SDK's, which
	// trusts the system's CAs (or SSL_CERT_FILE's).
	AzureTransport azureTransport
	// Listed, when set, receives every complete listing of a zone read through Resource Manager
	// and when it started, so that regional failover takes the zone's ownership records from it
	// instead of listing the zone again; it must not keep the loop waiting.
	Listed func(controller string, l verify.Listing, started time.Time)

	mu    sync.Mutex
	ctx   context.Context
	loops map[string]*loop
}

// New returns a prober checking the tracker's records.
func New(tracker *verify.Tracker, limits Limits, notify func([]verify.Change), counted func(controller, outcome string)) *Prober {
	if limits.QPS <= 0 {
		limits.QPS = DefaultLimits.QPS
	}
	if limits.Concurrency <= 0 {
		limits.Concurrency = DefaultLimits.Concurrency
	}
	if limits.TransferInterval <= 0 {
		limits.TransferInterval = DefaultLimits.TransferInterval
	}
	if counted == nil {
		counted = func(string, string) {}
	}
	return &Prober{tracker: tracker, limits: limits, notify: notify, counted: counted, loops: map[string]*loop{}}
}

// Start runs until ctx ends, then stops every zone loop.
func (p *Prober) Start(ctx context.Context) error {
	p.mu.Lock()
	p.ctx = ctx
	for _, l := range p.loops {
		p.run(l)
	}
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.loops {
		l.cancel()
	}
	return nil
}

// SetZones makes the loops match zones: new zones start, removed ones stop, changed settings
// restart their loop. It returns the controllers that were added or removed.
func (p *Prober) SetZones(zones []Zone) (added, removed []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := map[string]Zone{}
	for _, z := range zones {
		want[z.Controller] = z
		p.tracker.SetCached(z.Controller, z.Recursive)
		p.tracker.SetWhole(z.Controller, z.TransferZone != "" || z.Azure != nil)
	}
	for name, l := range p.loops {
		z, ok := want[name]
		if ok && z.equal(l.zone) {
			continue
		}
		if l.cancel != nil {
			l.cancel()
		}
		delete(p.loops, name)
		if !ok {
			removed = append(removed, name)
		} else {
			p.start(z) // new settings, same records
		}
	}
	for name, z := range want {
		if _, ok := p.loops[name]; !ok {
			added = append(added, name)
			p.start(z)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

// start adds a zone's loop and runs it when the prober runs; p.mu is held.
func (p *Prober) start(z Zone) {
	l := &loop{zone: z, wake: make(chan struct{}, 1)}
	p.loops[z.Controller] = l
	if p.ctx != nil {
		p.run(l)
	}
}

// Wake tells a zone's loop that a record became due (a change): it stops waiting for the next
// scheduled check.
func (p *Prober) Wake(controller string) {
	p.mu.Lock()
	l := p.loops[controller]
	p.mu.Unlock()
	if l != nil {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
}

// Verified reports whether a zone is being verified.
func (p *Prober) Verified(controller string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.loops[controller]
	return ok
}

type loop struct {
	zone   Zone
	wake   chan struct{}
	cancel context.CancelFunc
}

// run starts l's goroutine; p.mu is held.
func (p *Prober) run(l *loop) {
	ctx, cancel := context.WithCancel(p.ctx)
	l.cancel = cancel
	if l.zone.Azure != nil || l.zone.TransferZone != "" {
		go p.listed(ctx, l)
		return
	}
	go p.check(ctx, l)
}

// idleWait bounds a loop's sleep when nothing is scheduled: a loop with no record at all looks
// again now and then (a Wake normally comes first).
const idleWait = 10 * time.Second

// check is a zone's loop: take the next due record, wait for a token and a free slot, ask.
func (p *Prober) check(ctx context.Context, l *loop) {
	log := ctrl.Log.WithName("verification")
	limiter := rate.NewLimiter(rate.Limit(p.limits.QPS), max(1, int(p.limits.QPS)))
	slots := make(chan struct{}, p.limits.Concurrency)
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		c, ok, next := p.tracker.Next(l.zone.Controller, time.Now())
		if !ok {
			wait := idleWait
			if !next.IsZero() {
				wait = min(time.Until(next), idleWait)
			}
			timer.Reset(max(wait, 0))
			select {
			case <-ctx.Done():
				return
			case <-l.wake:
			case <-timer.C:
			}
			continue
		}
		select {
		case <-ctx.Done():
			p.tracker.Return([]verify.Check{c}, time.Now())
			return
		case slots <- struct{}{}:
		}
		inFlight.Add(1)
		go func() {
			defer func() { <-slots; inFlight.Done() }()
			findings := make([]verify.Finding, 0, len(c.Expected))
			for _, rs := range c.Expected {
				resp, err := p.ask(ctx, limiter, l.zone, rs)
				if err != nil {
					// Stopping: a loop with new settings (same tracker) checks it again.
					p.tracker.Return([]verify.Check{c}, time.Now())
					return
				}
				findings = append(findings, verify.Judge(rs, resp))
			}
			finding := verify.Combine(findings)
			finding.Cached = l.zone.Recursive
			changes := p.tracker.Report(c, finding, time.Now())
			log.V(2).Info("checked", "zone", l.zone.Controller, "records", c.Expected.Key(), "state", finding.State, "answer", finding.Answer, "changes", len(changes))
			select { // the record is scheduled again: the loop may be idle, waiting for nothing
			case l.wake <- struct{}{}:
			default:
			}
			if len(changes) > 0 {
				p.notify(changes)
			}
		}()
	}
}

// ask puts one record set's question to the zone: to its first name server, and to the next ones
// while there is no usable answer. Each query waits for a token of the zone's bucket.
func (p *Prober) ask(ctx context.Context, limiter *rate.Limiter, z Zone, rs verify.RecordSet) (verify.Response, error) {
	var resp verify.Response
	for _, server := range z.Nameservers {
		if err := limiter.Wait(ctx); err != nil {
			return resp, err
		}
		resp = Query(ctx, server, rs.Name, rs.QueryType(), z.Timeout, z.Recursive)
		outcome := "answered"
		switch resp.Failure {
		case "":
		case "timeout":
			outcome = "timeout"
		default:
			outcome = "error"
		}
		p.counted(z.Controller, outcome)
		if resp.Failure == "" {
			break
		}
	}
	return resp, nil
}

// Query asks one name server for name/qtype. Without recursion (RD=0) an authoritative server
// answers from its zone, and no resolver caches anything, not even the negative answers of
// records not published yet; an answer without the AA bit is no answer. With recursion (a
// resolver serving a zone nobody may ask directly) any answer counts. A truncated UDP answer is
// asked again over TCP.
func Query(ctx context.Context, server, name, qtype string, timeout time.Duration, recursive bool) verify.Response {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	out := verify.Response{Server: server}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.StringToType[qtype])
	m.RecursionDesired = recursive
	c := &dns.Client{Net: "udp", Timeout: timeout}
	in, _, err := c.ExchangeContext(ctx, m, server)
	if err == nil && in.Truncated {
		c.Net = "tcp"
		in, _, err = c.ExchangeContext(ctx, m, server)
	}
	switch {
	case err != nil:
		out.Failure = failureOf(err)
		return out
	case in.Rcode != dns.RcodeSuccess && in.Rcode != dns.RcodeNameError:
		out.Failure = dns.RcodeToString[in.Rcode]
		return out
	case !in.Authoritative && !recursive:
		out.Failure = "not authoritative"
		return out
	}
	out.Rcode = dns.RcodeToString[in.Rcode]
	for _, rr := range in.Answer {
		h := rr.Header()
		switch v := rr.(type) {
		case *dns.CNAME:
			out.Records = append(out.Records, verify.Record{Name: h.Name, Type: "CNAME", Value: v.Target})
		case *dns.A:
			out.Records = append(out.Records, verify.Record{Name: h.Name, Type: "A", Value: v.A.String()})
		case *dns.AAAA:
			out.Records = append(out.Records, verify.Record{Name: h.Name, Type: "AAAA", Value: v.AAAA.String()})
		}
	}
	return out
}

// failureOf names a transport error in a few stable words (status must not change with our
// ephemeral port numbers).
func failureOf(err error) string {
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	}
	return "network error"
}
