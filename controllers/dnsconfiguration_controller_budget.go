package controllers

import (
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// setRequests sets status.verification[].requests of every zone read through Resource Manager:
// a new figure once a window has passed since the zone's last one, else the last figure (the
// status is not rewritten between two figures), or after a restart of the operator the one the
// status already holds (original's), until the next. It reads no API.
func (r *DNSConfigurationReconciler) setRequests(cfg, original *clusterv1alpha1.DNSConfiguration) {
	held := map[string]*clusterv1alpha1.ZoneRequests{}
	for _, v := range original.Status.Verification {
		held[v.Controller] = v.Requests
	}
	azure := map[string]*clusterv1alpha1.AzurePrivateDNSVerification{}
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if c.Verification != nil && c.Verification.AzurePrivateDNS != nil {
			azure[c.Name] = c.Verification.AzurePrivateDNS
		}
	}
	r.requests.mu.Lock()
	defer r.requests.mu.Unlock()
	now := r.requests.clock()
	seen := map[requestKey]bool{}
	for i := range cfg.Status.Verification {
		v := &cfg.Status.Verification[i]
		a, ok := azure[v.Controller]
		if !ok {
			v.Requests = nil
			continue
		}
		z := *zoneconfig.AzureZone(a)
		key := requestKey{v.Controller, strings.ToLower(z.SubscriptionID), strings.ToLower(z.ResourceGroup), strings.ToLower(z.ZoneName)}
		seen[key] = true
		v.Requests = held[v.Controller].DeepCopy()
		if figure := r.requests.observe(key, z, now); figure != nil {
			v.Requests = figure.DeepCopy()
		}
	}
	for key := range r.requests.samples {
		if !seen[key] {
			delete(r.requests.samples, key)
			delete(r.requests.figures, key)
		}
	}
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

// budgetCondition is the OverRequestBudget condition of the plan of this cluster's requests
// (budget.PlanOf), each zone's record sets estimated from the routes verification counts in it
// (unknown without counts).
func (r *DNSConfigurationReconciler) budgetCondition(cfg *clusterv1alpha1.DNSConfiguration) metav1.Condition {
	names := func(controller string) (int, bool) {
		if r.Zones == nil {
			return 0, false
		}
		for _, v := range cfg.Status.Verification {
			if v.Controller == controller {
				return int(v.Routes), true
			}
		}
		return 0, false
	}
	return budget.Condition(budget.PlanOf(budget.InputOf(cfg, names)), cfg.Generation)
}
