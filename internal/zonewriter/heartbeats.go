package zonewriter

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/dns"

	"github.com/service-router/service-router-operator/internal/failover"
)

// ReadWitness asks the zone's primary for each of the heartbeat records names (the ones its last
// whole reading showed: failover.KnownHeartbeats), one TXT query each, instead of transferring the
// zone; a heartbeat of a cluster not yet known is found by the next whole reading (Read). A name
// the server says does not exist is no heartbeat; any other failure fails the reading.
func (w RFC2136) ReadWitness(ctx context.Context, names []string) (failover.ZoneReading, error) {
	r := newReading(w.Zone)
	c := &dns.Client{Net: "tcp", Timeout: w.timeout()}
	for _, name := range names {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), dns.TypeTXT)
		m.RecursionDesired = false
		c.TsigSecret = w.sign(m)
		answer, _, err := c.ExchangeContext(ctx, m, w.Server)
		switch {
		case err != nil:
			return failover.ZoneReading{}, fmt.Errorf("asking %s for the heartbeat %s: %w", w.Server, name, err)
		case answer.Rcode == dns.RcodeNameError:
			continue
		case answer.Rcode != dns.RcodeSuccess:
			return failover.ZoneReading{}, fmt.Errorf("asking %s for the heartbeat %s: %w", w.Server, name, rcodeError(answer.Rcode))
		}
		for _, rr := range answer.Answer {
			if t, ok := rr.(*dns.TXT); ok {
				r.txt(t.Hdr.Name, t.Hdr.Ttl, strings.Join(t.Txt, ""))
			}
		}
	}
	r.out.TXT, r.out.Addresses = nil, nil
	return r.out, nil
}

// RemoveLegacyHeartbeat deletes the cluster's heartbeat under failover.LegacyHeartbeatName (see
// AzurePrivateDNS.RemoveLegacyHeartbeat).
func (w RFC2136) RemoveLegacyHeartbeat(ctx context.Context, cluster, region string) error {
	name := dns.Fqdn(failover.LegacyHeartbeatName(cluster, region, w.Zone))
	m := w.update()
	m.RemoveRRset([]dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTXT, Class: dns.ClassINET}}})
	err := w.send(ctx, m, "removing the earlier heartbeat "+name)
	var rcode rcodeError
	if errors.As(err, &rcode) && rcode == dns.RcodeNXRrset {
		return nil
	}
	return err
}
