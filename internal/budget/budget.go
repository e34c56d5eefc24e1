// Package budget is the Azure Resource Manager request budget of publication verification and
// regional failover: what one cluster plans to send, a minute, to each Azure Private DNS zone it
// reads through Resource Manager, by component, at rest and while records change; the same per
// subscription and for a fleet; whether that fits the cluster's share of what Resource Manager
// allows (Condition); and what the operator observed (Observe). RFC 2136 zones have no request
// budget and take no part.
//
// # Limits
//
// Resource Manager throttles each principal (the client ID a request is authenticated as) in each
// subscription with a token bucket per operation type (learn.microsoft.com, "Understand how Azure
// Resource Manager throttles requests"): reads 250 tokens refilled at 25 a second (1,500 a
// minute), writes 200 at 10 a second (600 a minute), deletes the same. Azure's network resource
// provider, which serves Private DNS, allows each subscription in each region 10,000 reads and
// 1,000 writes and deletes together per 5 minutes (2,000 and 200 a minute). A subscription
// therefore sustains at most ReadsPerMinute (1,500: the principal's refill) reads and
// WritesPerMinute (200: the network provider's) writes and deletes a minute, for every user of
// the principal and subscription together: this cluster, the other clusters of the fleet and
// ExternalDNS.
//
// Azure Private DNS also limits each private zone, whoever sends the requests (MicrosoftDocs/
// azure-docs includes/dns-limits.md, "Private DNS resource record operations per zone"): 60
// record-set creates, 60 updates, 60 deletes, 200 gets and 100 lists a minute, each page of a
// listing one list. Every read planned below is a page of a listing, every write at rest a
// heartbeat rewritten (an update); a zone's limits are shared by every cluster of the fleet and
// every ExternalDNS instance writing it (ExternalDNSListsPerSync, ExternalDNSInterval).
//
// # Formulas
//
// Per zone read through Resource Manager, for one cluster, a minute (60 s); R the zone's record
// sets (estimated as 2 × its names: a name's record and ExternalDNS's ownership record; unknown
// taken as one request per listing, which makes every figure a lower bound); P probeInterval,
// the time between failover's rounds, at which every interval below is decided, so that an
// interval runs to the next round: round(d) = ⌈d / P⌉ × P.
//
//	heartbeat writes       = 60 s / H, H = round(failover.HeartbeatInterval(heartbeatInterval,
//	                         clusters, zones with failover, 100 a minute)): one PUT of this
//	                         cluster's heartbeat, spaced so that the fleet writes at most 100 a minute
//	                         in the subscription and 30 in each zone (half its 60 updates)
//	heartbeat reads        = 60 s / W − 60 s / L (0 when W ≥ L), W = round(heartbeatStaleAfter):
//	                         one name-suffix listing each heartbeatStaleAfter, but when the whole
//	                         zone is listed (L below), which includes the heartbeats
//	verification settled   = ⌈R / pageSize⌉ × 60 s / V, V = max(interval, 5 min): a settled zone
//	                         is listed about once per settled interval (verify.DefaultSettings)
//	whole readings         = 0 when V ≤ F, F = round(5.5 min + heartbeatStaleAfter): failover
//	                         takes verification's listing as its whole reading (L = V); else
//	                         ⌈R / 1000⌉ × 60 s / F, 1,000 record sets a request (L = F)
//	                         (failover.DefaultReadSettings)
//	verification changing  = ⌈R / pageSize⌉ × 60 s / interval: at most one listing per interval
//	                         while records change
//
//	while names move       = 60 s / P heartbeat listings (every round while a probe fails)
//	                         + ⌈R / 1000⌉ × 60 s / W (the whole zone every heartbeatStaleAfter
//	                         while a lost region's names may move) + verification changing
//
// The heartbeat components count only in zones with failover settings. At rest a zone's reads are
// heartbeat reads + whole readings + verification settled, its writes the heartbeat writes; while
// records change, verification changing takes the place of verification settled. Not at rest, and
// not planned here: while a region's probes fail, failover reads every zone's heartbeats every
// round (60 s / P), and the whole zone every heartbeatStaleAfter while it holds names in play.
//
// With the defaults (probeInterval 5 s, heartbeatInterval 10 s, heartbeatStaleAfter 30 s,
// interval 30 s, pageSize 1,000), a zone of 3,000 names (6,000 record sets) with failover costs
// one cluster 6.0 writes a minute, 1.8 heartbeat reads and 1.2 for verification's listings, which
// are failover's whole readings too, at rest: 3.0 reads; 13.8 reads while records change.
//
// A fleet (Fleet) of N clusters reading the same zones sends N times one cluster's figures, but
// for the heartbeat writes, which failover.HeartbeatInterval spaces to 100 a minute for the
// fleet's clusters × zones once there are more than 16 of them at the default 10 s.
//
// # The cluster's share
//
// In each zone, Condition also flags a cluster that plans more than its share (ClusterShare) of
// Private DNS's per-zone limits: more than 50 list requests a minute while records change or
// while names move, or more than 30 heartbeat updates.
//
// Condition flags a subscription in which this cluster alone plans more than ClusterShare (half)
// of what the subscription sustains: more than 750 reads a minute while records change, or more
// than 100 writes a minute. The other half is left to ExternalDNS, which lists every zone whole
// each --interval and writes every change, usually with the same principal, and to the
// principal's other users — the split failover.HeartbeatWritesPerMinute makes for the fleet's
// heartbeats. A cluster over its share alone leaves nothing for a second cluster: the settings
// cannot fit any fleet. The check is on the rate while records change, the larger one, so that a
// rollout of many records does not empty the bucket either.
package budget

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/verify"
)

// Resource Manager's token buckets, per principal and subscription (learn.microsoft.com,
// "Understand how Azure Resource Manager throttles requests").
const (
	ReadBurst        = 250
	ReadsPerSecond   = 25
	WriteBurst       = 200
	WritesPerSecond  = 10
	DeleteBurst      = 200
	DeletesPerSecond = 10
)

// Azure's network resource provider (Microsoft.Network, which serves Private DNS), per
// subscription and region: reads, and writes and deletes together, per NetworkWindow.
const (
	NetworkReads           = 10000
	NetworkWritesDeletes   = 1000
	NetworkWindow          = 5 * time.Minute
	networkWindowInMinutes = 5
)

// Azure Private DNS's own limits on each private zone's record-set operations, a minute, whoever
// sends them (MicrosoftDocs/azure-docs includes/dns-limits.md, "Private DNS resource record
// operations per zone"), on top of the subscription's: a listing takes one list per page, a PUT
// of a record set that does not exist yet is a create, of one that exists an update. Every
// cluster of a fleet and every ExternalDNS instance writing a zone share them.
const (
	ZoneCreatesPerMinute = 60
	ZoneUpdatesPerMinute = 60
	ZoneDeletesPerMinute = 60
	ZoneGetsPerMinute    = 200
	ZoneListsPerMinute   = 100
)

// ZoneListShare and ZoneUpdateShare are one cluster's share of a zone's lists and updates a
// minute (ClusterShare of them: 50 and 30), as for the subscription's limits.
const (
	ZoneListShare   = ZoneListsPerMinute * ClusterShare
	ZoneUpdateShare = ZoneUpdatesPerMinute * ClusterShare
)

// ExternalDNSPageSize is the record sets a request of ExternalDNS's azure-private-dns provider
// lists (v0.23.0, like v0.22.0, sets no $top: Resource Manager's default).
const ExternalDNSPageSize = 100

// ExternalDNSListsPerSync is the list requests one ExternalDNS instance sends a zone of
// recordSets record sets (and its SOA record set) each synchronization: it lists the zone whole,
// whatever changed. 61 for a zone of 3,000 names (6,000 record sets). Its listing of the resource
// group's zones, one more request, is not a record-set operation and counts for no zone.
func ExternalDNSListsPerSync(recordSets int) int { return pages(recordSets+1, ExternalDNSPageSize) }

// ExternalDNSInterval is the shortest --interval at which instances ExternalDNS instances (one
// per cluster writing the zone) synchronizing a zone of recordSets record sets keep it within
// ZoneListsPerMinute together with operatorLists, the fleet's operators' lists a minute in it (a
// fleet Plan's zone AtRest().Reads): ok false when the operators leave ExternalDNS nothing.
// Rounded up to the minute, as one sets it. Every event-driven synchronization (--events) costs a
// listing on top.
func ExternalDNSInterval(instances, recordSets int, operatorLists float64) (interval time.Duration, ok bool) {
	left := ZoneListsPerMinute - operatorLists
	if left <= 0 {
		return 0, false
	}
	minutes := float64(instances*ExternalDNSListsPerSync(recordSets)) / left
	return time.Duration(math.Ceil(minutes)) * time.Minute, true
}

// ReadsPerMinute is the reads a minute a subscription sustains for one principal: the smaller of
// the principal's refill (1,500) and the network provider's (2,000).
const ReadsPerMinute = min(ReadsPerSecond*60, NetworkReads/networkWindowInMinutes)

// WritesPerMinute is the writes and deletes a minute a subscription sustains: the smaller of the
// principal's write refill (600) and the network provider's writes and deletes (200).
const WritesPerMinute = min(WritesPerSecond*60, NetworkWritesDeletes/networkWindowInMinutes)

// ClusterShare is the part of ReadsPerMinute and WritesPerMinute one cluster may plan to take
// (see the package comment).
const ClusterShare = 0.5

// ReadShare and WriteShare are a cluster's share a minute: 750 reads, 100 writes.
const (
	ReadShare  = ReadsPerMinute * ClusterShare
	WriteShare = WritesPerMinute * ClusterShare
)

// The defaults of spec.failover that the plan needs: those of internal/failoverloop/loop.go
// (failoverSettingsOf) and failover.DefaultSettings.
const (
	DefaultProbeInterval     = 5 * time.Second
	DefaultHeartbeatInterval = 10 * time.Second
)

// DefaultHeartbeatStaleAfter is spec.failover.heartbeatStaleAfter's default.
var DefaultHeartbeatStaleAfter = failover.DefaultSettings.HeartbeatStaleAfter

// The defaults of an azurePrivateDNS verification: the interval (prober.DefaultListInterval) and
// the page size (azureprivatedns.DefaultPageSize).
const (
	DefaultInterval = 30 * time.Second
	DefaultPageSize = 1000
)

// WholePageSize is the page size of failover's whole readings (zonewriter: the most Resource
// Manager returns in one page, whatever verification's pageSize).
const WholePageSize = 1000

// UnknownRecordSets is the RecordSets of a zone whose size is not known.
const UnknownRecordSets = -1

// RecordSetsOf estimates a zone's record sets from the names published into it: each has its
// record and ExternalDNS's ownership TXT record.
func RecordSetsOf(names int) int { return 2 * names }

// FailoverSettings are spec.failover's intervals that decide failover's requests.
type FailoverSettings struct {
	ProbeInterval, HeartbeatInterval, HeartbeatStaleAfter time.Duration
}

// DefaultFailoverSettings are spec.failover's defaults.
func DefaultFailoverSettings() FailoverSettings {
	return FailoverSettings{ProbeInterval: DefaultProbeInterval, HeartbeatInterval: DefaultHeartbeatInterval, HeartbeatStaleAfter: DefaultHeartbeatStaleAfter}
}

// Zone is one zone read through Resource Manager.
type Zone struct {
	// Controller is the zone's ExternalDNS controller; SubscriptionID its subscription.
	Controller, SubscriptionID string
	// Failover says the zone has failover settings: this cluster writes its heartbeat there and
	// reads the zone for failover.
	Failover bool
	// Interval and PageSize are its verification's (defaults when zero).
	Interval time.Duration
	PageSize int
	// RecordSets is the zone's size (UnknownRecordSets: not known).
	RecordSets int
}

// Input is what the plan is computed from.
type Input struct {
	Failover FailoverSettings
	Zones    []Zone
	// Clusters is how many clusters write heartbeats into the zones (failover.HeartbeatInterval
	// spaces them to fit the fleet's writes); 0 is one, this cluster.
	Clusters int
}

// Rate is requests a minute.
type Rate struct {
	Reads, Writes float64
}

func (r Rate) plus(o Rate) Rate { return Rate{Reads: r.Reads + o.Reads, Writes: r.Writes + o.Writes} }

// ZonePlan is one zone's planned requests a minute, by component.
type ZonePlan struct {
	Zone
	HeartbeatWrites, HeartbeatReads, WholeReadings float64
	VerificationSettled, VerificationChanging      float64
	// HeartbeatReadsWhileProbesFail and WholeReadingsWhileNamesMove are failover's readings while
	// a region's probes fail (its heartbeats every round) and while its names may move (the whole
	// zone every heartbeatStaleAfter).
	HeartbeatReadsWhileProbesFail, WholeReadingsWhileNamesMove float64
	// LowerBound says the record sets are unknown: each listing was counted as one request.
	LowerBound bool
}

// AtRest is the zone's requests while nothing changes.
func (z ZonePlan) AtRest() Rate {
	return Rate{Reads: z.HeartbeatReads + z.WholeReadings + z.VerificationSettled, Writes: z.HeartbeatWrites}
}

// Changing is the zone's requests while its records change (verification lists it every
// interval).
func (z ZonePlan) Changing() Rate {
	return Rate{Reads: z.HeartbeatReads + z.WholeReadings + z.VerificationChanging, Writes: z.HeartbeatWrites}
}

// WhileNamesMove is the zone's requests while a region is lost and its names may move: failover
// reads the heartbeats every round and the zone whole every heartbeatStaleAfter, and verification
// lists it every interval (records change). The ownership passes' reads and writes, one of each
// per name passed, come on top.
func (z ZonePlan) WhileNamesMove() Rate {
	return Rate{Reads: z.HeartbeatReadsWhileProbesFail + z.WholeReadingsWhileNamesMove + z.VerificationChanging, Writes: z.HeartbeatWrites}
}

// Every read the operator plans of a zone is a listing (a page is a list request: Private DNS's
// per-zone lists), and every write at rest rewrites the heartbeat, which exists after its first
// write (an update).

// SubscriptionPlan is the requests a minute of every zone of one subscription.
type SubscriptionPlan struct {
	SubscriptionID   string
	Zones            int
	AtRest, Changing Rate
	LowerBound       bool
}

// Plan is what one cluster (or a fleet: Fleet) plans to send through Resource Manager.
type Plan struct {
	// HeartbeatInterval is the time between two heartbeat writes into each zone with failover
	// settings, as spaced and rounded to the probe rounds (zero without such zones).
	HeartbeatInterval time.Duration
	// Clusters is how many clusters the figures are for.
	Clusters int
	// Zones in input order; Subscriptions sorted by ID.
	Zones         []ZonePlan
	Subscriptions []SubscriptionPlan
}

// PlanOf is one cluster's planned requests (the package comment's formulas).
func PlanOf(in Input) Plan {
	f := withDefaults(in.Failover)
	clusters := max(in.Clusters, 1)
	failoverZones := 0
	for _, z := range in.Zones {
		if z.Failover {
			failoverZones++
		}
	}
	round := func(d time.Duration) time.Duration {
		return time.Duration(math.Ceil(float64(d)/float64(f.ProbeInterval))) * f.ProbeInterval
	}
	p := Plan{Clusters: 1}
	if failoverZones > 0 {
		p.HeartbeatInterval = round(failover.HeartbeatInterval(f.HeartbeatInterval, clusters, failoverZones, failover.HeartbeatWritesPerMinute))
	}
	settled := verify.DefaultSettings.SettledInterval
	reads := failover.DefaultReadSettings(f.HeartbeatStaleAfter, settled)
	witness, whole := round(reads.WitnessInterval), round(reads.FullInterval)
	perMinute := func(d time.Duration) float64 { return float64(time.Minute) / float64(d) }
	for _, z := range in.Zones {
		interval := cmp.Or(z.Interval, DefaultInterval)
		pageSize := cmp.Or(z.PageSize, DefaultPageSize)
		zp := ZonePlan{Zone: z, LowerBound: z.RecordSets < 0}
		listing := float64(pages(z.RecordSets, pageSize))
		listedEvery := max(interval, settled)
		zp.VerificationSettled = listing * perMinute(listedEvery)
		zp.VerificationChanging = listing * perMinute(interval)
		if z.Failover {
			zp.HeartbeatWrites = perMinute(p.HeartbeatInterval)
			// Failover takes verification's listing as its whole reading when it comes before its
			// own falls due; only a zone listed less often is also read whole by failover.
			wholeEvery := listedEvery
			if listedEvery > whole {
				zp.WholeReadings, wholeEvery = float64(pages(z.RecordSets, WholePageSize))*perMinute(whole), whole
			}
			if witness < wholeEvery {
				zp.HeartbeatReads = perMinute(witness) - perMinute(wholeEvery)
			}
			zp.HeartbeatReadsWhileProbesFail = perMinute(f.ProbeInterval)
			zp.WholeReadingsWhileNamesMove = float64(pages(z.RecordSets, WholePageSize)) * perMinute(witness)
		}
		p.Zones = append(p.Zones, zp)
	}
	p.Subscriptions = subscriptions(p.Zones)
	return p
}

// Fleet is the planned requests of clusters clusters reading the same zones with the same
// settings: each cluster's figures with heartbeats spaced for the fleet, times clusters.
func Fleet(in Input, clusters int) Plan {
	clusters = max(clusters, 1)
	in.Clusters = clusters
	p := PlanOf(in)
	p.Clusters = clusters
	n := float64(clusters)
	for i := range p.Zones {
		z := &p.Zones[i]
		z.HeartbeatWrites, z.HeartbeatReads, z.WholeReadings = z.HeartbeatWrites*n, z.HeartbeatReads*n, z.WholeReadings*n
		z.VerificationSettled, z.VerificationChanging = z.VerificationSettled*n, z.VerificationChanging*n
		z.HeartbeatReadsWhileProbesFail, z.WholeReadingsWhileNamesMove = z.HeartbeatReadsWhileProbesFail*n, z.WholeReadingsWhileNamesMove*n
	}
	p.Subscriptions = subscriptions(p.Zones)
	return p
}

// subscriptions sums zones by subscription.
func subscriptions(zones []ZonePlan) []SubscriptionPlan {
	var out []SubscriptionPlan
	for _, z := range zones {
		i := slices.IndexFunc(out, func(s SubscriptionPlan) bool { return s.SubscriptionID == z.SubscriptionID })
		if i < 0 {
			out = append(out, SubscriptionPlan{SubscriptionID: z.SubscriptionID})
			i = len(out) - 1
		}
		s := &out[i]
		s.Zones++
		s.AtRest, s.Changing = s.AtRest.plus(z.AtRest()), s.Changing.plus(z.Changing())
		s.LowerBound = s.LowerBound || z.LowerBound
	}
	slices.SortFunc(out, func(a, b SubscriptionPlan) int { return cmp.Compare(a.SubscriptionID, b.SubscriptionID) })
	return out
}

// pages is the requests of one listing of a zone of recordSets record sets: at least one (an
// empty zone, or one of unknown size, still costs a request).
func pages(recordSets, pageSize int) int {
	return max(1, (recordSets+pageSize-1)/pageSize)
}

func withDefaults(f FailoverSettings) FailoverSettings {
	d := DefaultFailoverSettings()
	if f.ProbeInterval <= 0 {
		f.ProbeInterval = d.ProbeInterval
	}
	if f.HeartbeatInterval <= 0 {
		f.HeartbeatInterval = d.HeartbeatInterval
	}
	if f.HeartbeatStaleAfter <= 0 {
		f.HeartbeatStaleAfter = d.HeartbeatStaleAfter
	}
	return f
}
