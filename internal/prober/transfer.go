package prober

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/time/rate"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/service-router/service-router-operator/internal/verify"
)

// A zone read whole (Zone.TransferZone) is checked by zone transfers rather than one query per
// name: every record that is due when a transfer starts is answered from it. A changed record
// waits for the next transfer, at most one per TransferInterval; a settled record's routine check
// waits up to a tenth of the settled interval for others to share its transfer, so a zone of
// settled records (checked every 5 minutes each) is read about twice a minute, not every second.
const settledBatchShare = 10

// transferLoop is the loop of a zone read by transfers: collect the due records, wait until one
// of them is urgent (or the oldest settled one has waited long enough) and the last transfer is
// TransferInterval old, transfer, judge every collected record against the snapshot.
func (p *Prober) transferLoop(ctx context.Context, l *loop) {
	log := ctrl.Log.WithName("verification")
	limiter := rate.NewLimiter(rate.Every(p.limits.TransferInterval), 1)
	settledBatchWait := p.tracker.Settings().SettledInterval / settledBatchShare
	queries := rate.NewLimiter(rate.Limit(p.limits.QPS), max(1, int(p.limits.QPS))) // names a transfer does not cover
	var (
		batch         []verify.Check
		urgent        bool
		oldestSettled time.Time
	)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		now := time.Now()
		var next time.Time
		for {
			c, ok, due := p.tracker.Next(l.zone.Controller, now)
			if !ok {
				next = due
				break
			}
			batch = append(batch, c)
			urgent = urgent || c.Urgent
			if !c.Urgent && oldestSettled.IsZero() {
				oldestSettled = now
			}
		}
		ready := urgent || (!oldestSettled.IsZero() && now.Sub(oldestSettled) >= settledBatchWait)
		if !ready {
			wait := idleWait
			if !next.IsZero() {
				wait = min(time.Until(next), wait)
			}
			if !oldestSettled.IsZero() {
				wait = min(time.Until(oldestSettled.Add(settledBatchWait)), wait)
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
		if err := limiter.Wait(ctx); err != nil {
			return
		}
		snap, failure := p.transfer(ctx, l.zone)
		var changes []verify.Change
		for _, c := range batch {
			findings := make([]verify.Finding, 0, len(c.Expected))
			for _, rs := range c.Expected {
				var resp verify.Response
				switch {
				case snap == nil:
					resp = failure
				case snap.Covers(rs.Name):
					resp = snap.Answer(rs)
				default: // a name of another zone (a gateway target elsewhere): asked on its own
					var err error
					if resp, err = p.ask(ctx, queries, l.zone, rs); err != nil {
						return
					}
				}
				findings = append(findings, verify.Judge(rs, resp))
			}
			changes = append(changes, p.tracker.Report(c, verify.Combine(findings), time.Now())...)
		}
		log.V(1).Info("transferred", "zone", l.zone.Controller, "apex", l.zone.TransferZone, "checked", len(batch), "failure", failure.Failure, "changes", len(changes))
		batch, urgent, oldestSettled = nil, false, time.Time{}
		if len(changes) > 0 {
			p.notify(changes)
		}
	}
}

// transfer reads the zone from its first name server that allows it, the next ones while a
// transfer fails. On failure it returns no snapshot and the response that says why.
func (p *Prober) transfer(ctx context.Context, z Zone) (*verify.Snapshot, verify.Response) {
	var failure verify.Response
	for _, server := range z.Nameservers {
		snap, reason := Transfer(ctx, server, z.TransferZone, z.Timeout)
		outcome := "answered"
		switch reason {
		case "":
		case "timeout":
			outcome = "timeout"
		default:
			outcome = "error"
		}
		p.counted(z.Controller, outcome)
		if reason == "" {
			return snap, verify.Response{}
		}
		failure = verify.Response{Server: server, Failure: reason}
	}
	return nil, failure
}

// Transfer reads zone apex whole from server (AXFR over TCP) and keeps its CNAME, A and AAAA
// records. timeout bounds each read of the transfer, not the whole of it. The failure is said in
// the few stable words of Response.Failure ("transfer refused" when the server does not allow
// it).
func Transfer(ctx context.Context, server, apex string, timeout time.Duration) (*verify.Snapshot, string) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(apex))
	tr := &dns.Transfer{DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout}
	envelopes, err := tr.In(m, server)
	if err != nil {
		return nil, failureOf(err)
	}
	var records []verify.Record
	done := ctx.Done()
	for e := range envelopes {
		if e.Error != nil {
			go drain(envelopes)
			return nil, transferFailure(e.Error)
		}
		for _, rr := range e.RR {
			h := rr.Header()
			switch v := rr.(type) {
			case *dns.CNAME:
				records = append(records, verify.Record{Name: h.Name, Type: "CNAME", Value: v.Target})
			case *dns.A:
				records = append(records, verify.Record{Name: h.Name, Type: "A", Value: v.A.String()})
			case *dns.AAAA:
				records = append(records, verify.Record{Name: h.Name, Type: "AAAA", Value: v.AAAA.String()})
			}
		}
		select {
		case <-done:
			go drain(envelopes)
			return nil, "timeout"
		default:
		}
	}
	return verify.NewSnapshot(server, apex, records), ""
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

func drain(envelopes chan *dns.Envelope) {
	for range envelopes {
	}
}
