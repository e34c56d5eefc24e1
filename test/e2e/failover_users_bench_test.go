//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// BenchmarkFailover_AsUsersRunIt is the time to fail over as users run regional failover: the
// operator's default failover settings (5 s probes, threshold 3, heartbeats every 10 s, stale after
// 30 s), ExternalDNS at the examples' 1-minute interval, and the name's TTL either the default
// 300 s or the 30 s a DNSPolicy's recordTTL lowers it to. For each, from the loss of everything of
// aks01 at once: the time until the zone answers aks02's gateway (zone-s), and until a caching
// resolver (BIND, recursive, in front of the zone, as 168.63.129.16 is in front of an Azure private
// zone) does for a client that looked the name up just before the loss (resolver-s). The design's
// bound beside it: detection (staleness 30 s, a round 5 s) + the TTL (bound-s); ExternalDNS takes
// no part in a move, the operators rewriting the intermediate themselves, so its interval does
// not enter. `make bench` runs it once per variant.
func BenchmarkFailover_AsUsersRunIt(b *testing.B) {
	for _, ttl := range []int32{300, 30} {
		b.Run(fmt.Sprintf("externaldns=1m,ttl=%d", ttl), func(b *testing.B) {
			b.Setenv("FAILOVER_SETTINGS", "defaults")
			ed := func(o *framework.ExternalDNSOptions) { o.Interval = time.Minute }
			bound := 30*time.Second + 5*time.Second + time.Duration(ttl)*time.Second
			for range b.N {
				zoneTook, resolverTook := failoverAsUsersRunIt(b, ed, ttl)
				b.ReportMetric(zoneTook.Seconds(), "zone-s")
				b.ReportMetric(resolverTook.Seconds(), "resolver-s")
				b.ReportMetric(bound.Seconds(), "bound-s")
				b.Logf("ExternalDNS --interval=1m, TTL %d s: the zone answers the stand-in %s after the loss, a caching resolver %s; the design's bound %s",
					ttl, zoneTook.Round(100*time.Millisecond), resolverTook.Round(100*time.Millisecond), bound)
			}
		})
	}
}

// failoverAsUsersRunIt runs one loss in the BIND failover world with ExternalDNS as ed says and the
// team's policy's recordTTL ttl, and returns the times until the zone and a caching resolver
// answer the stand-in.
func failoverAsUsersRunIt(b *testing.B, ed func(*framework.ExternalDNSOptions), ttl int32) (zoneTook, resolverTook time.Duration) {
	ctx := b.Context()
	w, zone := startBindFailoverWorldWith(b, ed)
	resolver, err := framework.StartResolver(ctx, b, framework.ResolverOptions{}.ForBind(zone))
	if err != nil {
		b.Fatal(err)
	}
	name := w.hostname(failoverNS)
	chain := w.chain
	for _, m := range []*failoverMember{w.aks01, w.aks02} {
		p := failoverPolicy(failoverNS, &routingv1alpha1.PolicyFailover{StandIns: []string{"neu"}})
		p.Spec.RecordTTL = ptr.To(ttl)
		at := create(ctx, b, m.cl.Client, p)
		create(ctx, b, m.cl.Client, apiRoute(failoverNS, failoverNS))
		if m == w.aks01 {
			if _, err := framework.WaitForAnswer(ctx, zone.Query(name, "A"), chain(m), 3*time.Minute); err != nil {
				b.Fatal(err)
			}
		} else if err := m.ed.WaitForSyncSince(ctx, at.Add(time.Second), 3*time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	waitRegion(ctx, b, w.aks02, "weu", "Unreachable", "WitnessSaysAlive", w.diagnostics)
	// A client looks the name up just before the loss: the resolver caches the answer for its TTL.
	if ans, err := resolver.Dig(ctx, name, "A"); err != nil || !framework.SameRecords(ans.Answer, chain(w.aks01)) {
		b.Fatalf("the resolver answers %v (%v), want aks01's gateway", ans.Answer, err)
	}
	lost := w.lose()
	zoneDone := make(chan time.Duration, 1)
	go func() {
		if _, err := framework.Converge(ctx, zone.Query(name, "A"), framework.Resolves(chain(w.aks02)...), 10*time.Minute, 100*time.Millisecond); err != nil {
			b.Error(err)
		}
		zoneDone <- time.Since(lost)
	}()
	target := "CNAME " + w.aks02.target(w.domain) + "."
	err = framework.Poll(ctx, 12*time.Minute, time.Second, "the resolver to answer aks02's gateway", func(ctx context.Context) (bool, string, error) {
		ans, err := resolver.Dig(ctx, name, "A")
		if err != nil {
			return false, err.Error(), nil
		}
		got := strings.Join(ans.Answer.Shorts(), " | ")
		return strings.Contains(got, target), got, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	resolverTook = time.Since(lost)
	return <-zoneDone, resolverTook
}
