package controllers

import (
	"strings"
	"sync"
	"time"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/budget"
	"github.com/service-router/service-router-operator/internal/zoneconfig"
)

// requestRates measures, per zone read through Azure Resource Manager, the requests this process
// sent (azureprivatedns.UsageOf) between two samples a window apart (budget.Due): it keeps the
// sample each window started with, and the last figure, until the next (a status write that
// failed is retried with it). Its zero value is ready; usage, quota and now are the process's
// counters, its principals' budgets and the clock but in tests.
type requestRates struct {
	mu      sync.Mutex
	samples map[requestKey]budget.Sample
	figures map[requestKey]*clusterv1alpha1.ZoneRequests
	usage   func(azureprivatedns.Zone) azureprivatedns.ZoneUsage
	quota   func(azureprivatedns.Zone) budget.Quota
	now     func() time.Time
}

// requestKey is a zone as its controller names it and Resource Manager counts it: a controller
// pointed at another zone starts a new window.
type requestKey struct {
	controller, subscriptionID, resourceGroup, zone string
}

// lastFigures are this process's last figures of the requests sent to each zone read through Resource
// Manager (decide.DNSConfigurationStatus puts them in status.verification[].requests): a new one
// once a window has passed since the zone's last, else the last (nil: none since this process
// started). A zone no longer read through Resource Manager loses its samples. It reads no API.
func (q *requestRates) lastFigures(cfg *clusterv1alpha1.DNSConfiguration) map[string]*clusterv1alpha1.ZoneRequests {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock()
	out := map[string]*clusterv1alpha1.ZoneRequests{}
	seen := map[requestKey]bool{}
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if c.Verification == nil || c.Verification.AzurePrivateDNS == nil {
			continue
		}
		z := *zoneconfig.AzureZone(c.Verification.AzurePrivateDNS)
		key := requestKey{c.Name, strings.ToLower(z.SubscriptionID), strings.ToLower(z.ResourceGroup), strings.ToLower(z.ZoneName)}
		seen[key] = true
		out[c.Name] = q.observe(key, z, now)
	}
	for key := range q.samples {
		if !seen[key] {
			delete(q.samples, key)
			delete(q.figures, key)
		}
	}
	return out
}

// observe samples a zone's counters at now and returns its last figure: a new one when a window
// has passed (nil: none since this process started).
func (q *requestRates) observe(key requestKey, z azureprivatedns.Zone, now time.Time) *clusterv1alpha1.ZoneRequests {
	u := q.usageOf(z)
	cur := budget.Sample{At: now, Counts: budget.Counts{Reads: u.Reads.Sent(), Writes: u.Writes.Sent() + u.Deletes.Sent(), Throttled: u.Throttled()}}
	prev, ok := q.samples[key]
	keep, due := budget.Due(prev, ok, cur)
	if q.samples == nil {
		q.samples, q.figures = map[requestKey]budget.Sample{}, map[requestKey]*clusterv1alpha1.ZoneRequests{}
	}
	q.samples[key] = keep
	if due {
		q.figures[key] = budget.Requests(prev, cur, q.quotaOf(z))
	}
	return q.figures[key]
}

func (q *requestRates) clock() time.Time {
	if q.now != nil {
		return q.now()
	}
	return time.Now()
}

func (q *requestRates) usageOf(z azureprivatedns.Zone) azureprivatedns.ZoneUsage {
	if q.usage != nil {
		return q.usage(z)
	}
	return azureprivatedns.UsageOf(z)
}

func (q *requestRates) quotaOf(z azureprivatedns.Zone) budget.Quota {
	if q.quota != nil {
		return q.quota(z)
	}
	return principalQuota(z)
}

// principalQuota is what Resource Manager last said was left of the tokens of the zone's
// principal in its subscription (zero when its configuration cannot be read, or before any
// answer).
func principalQuota(z azureprivatedns.Zone) budget.Quota {
	p, err := azureprivatedns.PrincipalOf(z)
	if err != nil {
		return budget.Quota{}
	}
	for _, s := range azureprivatedns.Principals() {
		if s.Principal == p {
			return budget.Quota{Reads: s.Reads.Remaining, Writes: s.Writes.Remaining, ReadsSeen: s.Reads.Seen, WritesSeen: s.Writes.Seen}
		}
	}
	return budget.Quota{}
}
