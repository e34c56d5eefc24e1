package azureprivatedns

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Requests counts the requests of one operation type to one zone, by outcome. Every attempt that
// reaches the network counts (an attempt the SDK retries after a 5xx or a timeout counts twice).
type Requests struct {
	// Answered: Resource Manager answered, with anything but 429 (a 404 or 412 included).
	Answered int64
	// Throttled: Resource Manager answered 429.
	Throttled int64
	// Failed: no answer (network error, timeout, cancelled).
	Failed int64
	// Held: refused without being sent, during the principal's backoff after a 429.
	Held int64
	// Paced: of the above, those that first waited for their turn at the bucket's refill rate,
	// because the principal's tokens ran low (one given up while waiting counts nowhere).
	Paced int64
}

// Sent is how many of the requests reached the network.
func (r Requests) Sent() int64 { return r.Answered + r.Throttled + r.Failed }

// ZoneUsage is the requests this process sent to one zone (or held back) since it started.
type ZoneUsage struct {
	// SubscriptionID, ResourceGroup and Zone name the zone, in lower case (as in the requests'
	// paths).
	SubscriptionID, ResourceGroup, Zone string
	// Reads, Writes and Deletes count the requests of each operation type.
	Reads, Writes, Deletes Requests
}

// Throttled is how many requests to the zone Resource Manager answered with 429.
func (u ZoneUsage) Throttled() int64 {
	return u.Reads.Throttled + u.Writes.Throttled + u.Deletes.Throttled
}

// Held is how many requests to the zone were refused locally during a backoff.
func (u ZoneUsage) Held() int64 { return u.Reads.Held + u.Writes.Held + u.Deletes.Held }

// Of is the count of an operation type.
func (u ZoneUsage) Of(op Operation) Requests {
	switch op {
	case OperationWrite:
		return u.Writes
	case OperationDelete:
		return u.Deletes
	}
	return u.Reads
}

// zoneKey names a zone in Resource Manager.
type zoneKey struct{ subscriptionID, resourceGroup, zone string }

// zoneOfPath is the zone a Resource Manager path names:
// /subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.Network/privateDnsZones/{zone}/…;
// empty parts where the path names none.
func zoneOfPath(path string) zoneKey {
	var k zoneKey
	parts := strings.Split(strings.Trim(strings.ToLower(path), "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		switch parts[i] {
		case "subscriptions":
			k.subscriptionID = parts[i+1]
		case "resourcegroups":
			k.resourceGroup = parts[i+1]
		case "privatednszones":
			k.zone = parts[i+1]
		}
	}
	return k
}

// outcome is what became of a request, for the counters.
type outcome int

const (
	outcomeAnswered outcome = iota
	outcomeThrottled
	outcomeFailed
	outcomeHeld
)

// usage are the process's counters, per zone.
var usage = struct {
	sync.Mutex
	m map[zoneKey]*ZoneUsage
}{m: map[zoneKey]*ZoneUsage{}}

// count counts a request of type op to zone k.
func count(k zoneKey, op Operation, o outcome, paced bool) {
	usage.Lock()
	defer usage.Unlock()
	u, ok := usage.m[k]
	if !ok {
		u = &ZoneUsage{SubscriptionID: k.subscriptionID, ResourceGroup: k.resourceGroup, Zone: k.zone}
		usage.m[k] = u
	}
	r := &u.Reads
	switch op {
	case OperationWrite:
		r = &u.Writes
	case OperationDelete:
		r = &u.Deletes
	}
	switch o {
	case outcomeAnswered:
		r.Answered++
	case outcomeThrottled:
		r.Throttled++
	case outcomeFailed:
		r.Failed++
	case outcomeHeld:
		r.Held++
	}
	if paced {
		r.Paced++
	}
}

// Usage is the requests of every zone this process sent requests for (or held them), sorted by
// subscription, resource group and zone: for `kubectl router status`, the metrics and
// benchmarks.
func Usage() []ZoneUsage {
	usage.Lock()
	out := make([]ZoneUsage, 0, len(usage.m))
	for _, u := range usage.m {
		out = append(out, *u)
	}
	usage.Unlock()
	slices.SortFunc(out, func(a, b ZoneUsage) int {
		return cmp.Or(cmp.Compare(a.SubscriptionID, b.SubscriptionID), cmp.Compare(a.ResourceGroup, b.ResourceGroup), cmp.Compare(a.Zone, b.Zone))
	})
	return out
}

// UsageOf is the requests of one zone (zero before any).
func UsageOf(z Zone) ZoneUsage {
	k := zoneKey{strings.ToLower(z.SubscriptionID), strings.ToLower(z.ResourceGroup), strings.ToLower(z.ZoneName)}
	usage.Lock()
	defer usage.Unlock()
	if u, ok := usage.m[k]; ok {
		return *u
	}
	return ZoneUsage{SubscriptionID: k.subscriptionID, ResourceGroup: k.resourceGroup, Zone: k.zone}
}
