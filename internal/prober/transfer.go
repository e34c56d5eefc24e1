package prober

import (
	"context"
	"errors"
	"fmt"
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
		return zoneTransfer{servers: z.Nameservers, apex: z.TransferZone, timeout: z.Timeout}, nil
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

// zoneTransfer reads a zone by AXFR from the first of its name servers that allows it.
type zoneTransfer struct {
	servers []string
	apex    string
	timeout time.Duration
}

// transferError is a failed transfer from every name server; it names the last one asked.
type transferError struct{ server, reason string }

func (e transferError) Error() string {
	return fmt.Sprintf("zone transfer from %s: %s", e.server, e.reason)
}

func (t zoneTransfer) List(ctx context.Context) (verify.Listing, int, error) {
	var failed transferError
	for i, server := range t.servers {
		listing, reason := Transfer(ctx, server, t.apex, t.timeout)
		if reason == "" {
			return listing, i + 1, nil
		}
		failed = transferError{server: server, reason: reason}
	}
	return verify.Listing{}, len(t.servers), failed
}

func (zoneTransfer) Failure(err error) (string, string, time.Duration) {
	var failed transferError
	if errors.As(err, &failed) {
		return failed.server, failed.reason, 0
	}
	return "", failureOf(err), 0
}

// Transfer reads zone apex whole from server (AXFR over TCP) and keeps its CNAME, A and AAAA
// records. The timeout bounds each read of the transfer, not the whole of it. A failure is said
// in the few stable words of verify.Response.Failure ("transfer refused" when the server does not
// allow the transfer).
func Transfer(ctx context.Context, server, apex string, timeout time.Duration) (verify.Listing, string) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(apex))
	tr := &dns.Transfer{DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout}
	listing := verify.Listing{Source: server, Records: map[string][]verify.Record{}}
	err := Walk(ctx, tr, m, server, func(rr dns.RR) {
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
		return listing, ""
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return verify.Listing{}, "timeout"
	}
	return verify.Listing{}, transferFailure(err)
}

// Walk transfers the zone request asks for (an AXFR, signed when tr holds the key's secret) from
// server, and gives each record to each in the order the server sends them: the one transfer loop
// of publication verification (Transfer) and of regional failover's zone reads. It returns the
// first error: the connection's, the server's (a refusal carries its response code, see
// transferFailure), or ctx's when it ends during the transfer. A transfer given up is drained, so
// that the library's reader ends.
func Walk(ctx context.Context, tr *dns.Transfer, request *dns.Msg, server string, each func(dns.RR)) error {
	envelopes, err := tr.In(request, server)
	if err != nil {
		return err
	}
	for e := range envelopes {
		if e.Error != nil {
			go drain(envelopes)
			return e.Error
		}
		for _, rr := range e.RR {
			each(rr)
		}
		if err := ctx.Err(); err != nil {
			go drain(envelopes)
			return err
		}
	}
	return nil
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
