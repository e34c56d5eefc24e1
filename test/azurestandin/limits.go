package azurestandin

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// Limits are the request limits of Resource Manager the stand-in enforces, as "Request limits and
// throttling" documents them since the token bucket architecture (2024): a token bucket per
// subscription, principal (client ID) and operation type; a global bucket per subscription and
// operation type shared by all principals; and the window of the resource provider serving
// privateDnsZones (Microsoft.Network) per subscription and region. A request is admitted only if
// every rule admits it, and then takes from each. A zero field is no limit for its rule.
type Limits struct {
	// Reads, Writes and Deletes are a principal's bucket in a subscription for GET requests, for
	// PUT, PATCH and POST, and for DELETE.
	Reads, Writes, Deletes Bucket
	// Global multiplies a principal's bucket (size and refill) into the subscription's bucket of
	// that operation type, which all principals share: 15 in Azure. 0: no global bucket (nor
	// where the principal's bucket is unlimited).
	Global float64
	// Provider is Microsoft.Network's window per subscription and region (the stand-in is one
	// region).
	Provider Window
	// Zone is Private DNS's own limits on each private zone's record-set operations, on top of the
	// rules above.
	Zone ZoneLimits
}

// ZoneWindow is the span of ZoneLimits: Azure states them per minute.
const ZoneWindow = time.Minute

// ZoneLimits are Azure Private DNS's limits on the record-set operations of each private zone,
// as MicrosoftDocs/azure-docs includes/dns-limits.md documents them ("Private DNS resource record
// operations per zone": create 60, update 60, delete 60, get 200 and list 100 a minute), counted
// per zone whoever sends them (every principal and subscription together). A field is the most
// requests of that operation one zone admits in any ZoneWindow; 0 is no limit for it. Which
// operation a request is: a GET of one record set is a get; each page of a listing of the zone's
// record sets (all, by type or by name suffix) is a list; a PUT or PATCH of a record set that does
// not exist yet is a create, of one that exists an update; a DELETE is a delete. Requests on the
// zone itself or on the zones of a resource group are not record operations and count for none.
//
// The limits are modelled as a sliding window of one minute per zone and operation, the strictest
// reading of "N per minute": Azure does not say how it counts them, and a sliding window admits at
// most N in every span of 60 seconds, where a fixed window (reset on the minute) admits up to 2N
// across a boundary and a token bucket of N refilled N a minute admits up to 2N in a minute after
// a quiet one. A client that stays within the stand-in therefore stays within any of them.
type ZoneLimits struct {
	Creates, Updates, Deletes, Gets, Lists int
}

// Bucket is a token bucket: a request takes a token, Refill tokens come back every second, up to
// Size. Size or Refill 0: no limit.
type Bucket struct {
	Size   int
	Refill float64
}

// Window admits at most Reads reads, and at most Writes writes and deletes together, in any span
// of Duration (a sliding window). Duration 0: no limit; Reads or Writes 0: no limit for those.
type Window struct {
	Duration time.Duration
	Reads    int
	Writes   int
}

// DocumentedLimits are Azure's: per principal 250 reads refilled at 25 a second, 200 writes and
// 200 deletes refilled at 10 a second; 15 times that per subscription; Microsoft.Network's
// 10,000 reads and 1,000 writes and deletes per 5 minutes; and per private zone, 60 creates, 60
// updates, 60 deletes, 200 gets and 100 lists of record sets a minute. Start enforces them.
var DocumentedLimits = Limits{
	Reads: Bucket{Size: 250, Refill: 25}, Writes: Bucket{Size: 200, Refill: 10}, Deletes: Bucket{Size: 200, Refill: 10},
	Global:   15,
	Provider: Window{Duration: 5 * time.Minute, Reads: 10000, Writes: 1000},
	Zone:     DocumentedZoneLimits,
}

// DocumentedZoneLimits are Private DNS's per-zone limits (ZoneLimits), part of DocumentedLimits.
var DocumentedZoneLimits = ZoneLimits{Creates: 60, Updates: 60, Deletes: 60, Gets: 200, Lists: 100}

// operation is a Resource Manager operation type: each has its buckets and its remaining header.
type operation int

const (
	opRead operation = iota
	opWrite
	opDelete
)

func operationOf(method string) operation {
	switch method {
	case http.MethodGet, http.MethodHead:
		return opRead
	case http.MethodDelete:
		return opDelete
	default:
		return opWrite
	}
}

func (o operation) String() string { return [...]string{"read", "write", "delete"}[o] }

// remainingHeader is the header with the tokens left in the principal's bucket.
func (o operation) remainingHeader() string {
	return "x-ms-ratelimit-remaining-subscription-" + [...]string{"reads", "writes", "deletes"}[o]
}

// zoneOperation is a request's operation on a zone's record sets, as Private DNS's per-zone
// limits count them (ZoneLimits); zoneNone for a request that is none.
type zoneOperation int

const (
	zoneNone zoneOperation = iota
	zoneCreate
	zoneUpdate
	zoneDelete
	zoneGet
	zoneList
)

func (o zoneOperation) String() string {
	return [...]string{"none", "create", "update", "delete", "get", "list"}[o]
}

// most is the limit of operation o in a zone (0: none).
func (z ZoneLimits) most(o zoneOperation) int {
	return [...]int{0, z.Creates, z.Updates, z.Deletes, z.Gets, z.Lists}[o]
}

// zoneRequest is the zone a request operates on and how.
type zoneRequest struct {
	zone zoneKey
	op   zoneOperation
}

func (l Limits) bucket(o operation) Bucket { return [...]Bucket{l.Reads, l.Writes, l.Deletes}[o] }

func (b Bucket) limited() bool { return b.Size > 0 && b.Refill > 0 }

// limiter is the state of the limits: the buckets' tokens and the window's admitted requests.
type limiter struct {
	limits  Limits
	buckets map[bucketKey]*bucket
	windows map[windowKey][]time.Time
	// zoneWindows are the times of the requests each zone admitted, by operation, within the last
	// ZoneWindow.
	zoneWindows map[zoneRequest][]time.Time
}

// bucketKey names a bucket: a principal's, or the subscription's global one.
type bucketKey struct {
	subscription, principal string
	op                      operation
	global                  bool
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was computed
}

// windowKey names a provider window: a subscription's reads, or its writes and deletes.
type windowKey struct {
	subscription string
	writes       bool
}

func newLimiter(l Limits) limiter {
	return limiter{limits: l, buckets: map[bucketKey]*bucket{}, windows: map[windowKey][]time.Time{}, zoneWindows: map[zoneRequest][]time.Time{}}
}

// decision is the limits' answer to a request.
type decision struct {
	admitted bool
	// remaining is the principal bucket's whole tokens after the request; -1 when unlimited.
	remaining int
	// retryAfter is when every refusing rule admits the request, in whole seconds (at least 1).
	retryAfter int
	// refused says which rules refused and why.
	refused []string
	// zoneLimited says a per-zone limit was among them.
	zoneLimited bool
}

// admit decides a request of principal in subscription at now, operating as zr on a zone's
// record sets, taking its tokens if admitted.
func (l *limiter) admit(now time.Time, subscription, principal string, o operation, zr zoneRequest) decision {
	var taking []*bucket
	var wait time.Duration
	var refused []string
	refuse := func(d time.Duration, why string) {
		wait = max(wait, d)
		refused = append(refused, why)
	}
	d := decision{remaining: -1}
	if pb := l.limits.bucket(o); pb.limited() {
		own := l.refilled(bucketKey{subscription: subscription, principal: principal, op: o}, pb, now)
		taking = append(taking, own)
		if own.tokens < 1 {
			refuse(refillTime(own, pb), fmt.Sprintf("the principal bucket of client %s (%d %ss, %g more a second) is empty", principal, pb.Size, o, pb.Refill))
		}
		if l.limits.Global > 0 {
			gb := Bucket{Size: int(float64(pb.Size) * l.limits.Global), Refill: pb.Refill * l.limits.Global}
			global := l.refilled(bucketKey{subscription: subscription, op: o, global: true}, gb, now)
			taking = append(taking, global)
			if global.tokens < 1 {
				refuse(refillTime(global, gb), fmt.Sprintf("the global bucket of the subscription, shared by all principals (%d %ss, %g more a second), is empty", gb.Size, o, gb.Refill))
			}
		}
	}
	w := l.limits.Provider
	wk := windowKey{subscription, o != opRead}
	most := w.Reads
	if wk.writes {
		most = w.Writes
	}
	limitedWindow := w.Duration > 0 && most > 0
	if limitedWindow {
		admitted := l.windows[wk]
		i := 0
		for i < len(admitted) && !admitted[i].After(now.Add(-w.Duration)) {
			i++
		}
		admitted = admitted[i:]
		l.windows[wk] = admitted
		if len(admitted) >= most {
			what := "reads"
			if wk.writes {
				what = "writes and deletes"
			}
			refuse(admitted[len(admitted)-most].Add(w.Duration).Sub(now), fmt.Sprintf("the Microsoft.Network provider window (%d %s in %s) is full", most, what, w.Duration))
		}
	}
	// Private DNS's limit of the zone and operation, a sliding window (see ZoneLimits).
	zoneMost := l.limits.Zone.most(zr.op)
	limitedZone := zr.op != zoneNone && zoneMost > 0
	if limitedZone {
		admitted := l.zoneWindows[zr]
		i := 0
		for i < len(admitted) && !admitted[i].After(now.Add(-ZoneWindow)) {
			i++
		}
		admitted = admitted[i:]
		l.zoneWindows[zr] = admitted
		if len(admitted) >= zoneMost {
			d.zoneLimited = true
			refuse(admitted[len(admitted)-zoneMost].Add(ZoneWindow).Sub(now), fmt.Sprintf(
				"the Private DNS zone '%s' limit of %d record set %ss a minute (Private DNS resource record operations per zone) is reached",
				zr.zone.name, zoneMost, zr.op))
		}
	}
	if len(refused) > 0 {
		d.refused = refused
		d.retryAfter = max(1, int(math.Ceil(wait.Seconds())))
		return d
	}
	d.admitted = true
	for _, b := range taking {
		b.tokens--
	}
	if len(taking) > 0 {
		d.remaining = int(math.Floor(taking[0].tokens))
	}
	if limitedWindow {
		l.windows[wk] = append(l.windows[wk], now)
	}
	if limitedZone {
		l.zoneWindows[zr] = append(l.zoneWindows[zr], now)
	}
	return d
}

// refilled is a bucket refilled until now (full when new).
func (l *limiter) refilled(k bucketKey, b Bucket, now time.Time) *bucket {
	have := l.buckets[k]
	if have == nil {
		have = &bucket{tokens: float64(b.Size), at: now}
		l.buckets[k] = have
	}
	if elapsed := now.Sub(have.at); elapsed > 0 {
		have.tokens = min(float64(b.Size), have.tokens+b.Refill*elapsed.Seconds())
		have.at = now
	}
	return have
}

// refillTime is how long until the bucket holds a whole token.
func refillTime(have *bucket, b Bucket) time.Duration {
	return time.Duration((1 - have.tokens) / b.Refill * float64(time.Second))
}

// message is a throttled request's error message: which rules refused it.
func (d decision) message(subscription, principal string, o operation) string {
	return fmt.Sprintf("Number of '%s' requests for subscription '%s' actor '%s' exceeded: %s. Please try again after '%d' seconds.",
		o, subscription, principal, strings.Join(d.refused, "; "), d.retryAfter)
}

// Usage is what Resource Manager requests the stand-in admitted and throttled (injected
// throttling included), since it started or since ResetUsage; requests without a valid token are
// not in it.
type Usage struct {
	// Principals are by client ID.
	Principals map[string]Tallies
	// Zones are by zone name (lower case); requests naming no zone (listing zones) are under "".
	Zones map[string]Tallies
	// Subscriptions are by subscription ID (lower case).
	Subscriptions map[string]Tallies
	// ZoneOperations are the zones' record-set requests by Private DNS operation, as the per-zone
	// limits count them (ZoneLimits), by zone: zones of one name in several resource groups apart.
	ZoneOperations map[ZoneID]ZoneTallies
}

// ZoneID names a private zone: its subscription, resource group and name, in lower case.
type ZoneID struct{ Subscription, ResourceGroup, Name string }

// ZoneIDOf is the ZoneID of a zone as CreateZone names it.
func ZoneIDOf(subscriptionID, resourceGroup, name string) ZoneID {
	return ZoneID{strings.ToLower(subscriptionID), strings.ToLower(resourceGroup), strings.ToLower(name)}
}

// ZoneTallies are one zone's record-set requests by Private DNS operation (ZoneLimits): Throttled
// counts every 429, ZoneLimited those a per-zone limit refused (alone or with another rule).
type ZoneTallies struct {
	Create, Update, Delete, Get, List Tally
	ZoneLimited                       int
}

// Writes is the zone's creates, updates and deletes.
func (z ZoneTallies) Writes() Tally {
	return Tally{Admitted: z.Create.Admitted + z.Update.Admitted + z.Delete.Admitted, Throttled: z.Create.Throttled + z.Update.Throttled + z.Delete.Throttled}
}

func (z *ZoneTallies) add(o zoneOperation, admitted, zoneLimited bool) {
	if o == zoneNone {
		return
	}
	tally := [...]*Tally{nil, &z.Create, &z.Update, &z.Delete, &z.Get, &z.List}[o]
	if admitted {
		tally.Admitted++
	} else {
		tally.Throttled++
	}
	if zoneLimited {
		z.ZoneLimited++
	}
}

// Tallies are requests by operation type.
type Tallies struct {
	Read, Write, Delete Tally
}

// Tally is how many requests were admitted, and how many throttled (429).
type Tally struct {
	Admitted, Throttled int
}

// Total is the requests of every operation type.
func (t Tallies) Total() Tally {
	return Tally{Admitted: t.Read.Admitted + t.Write.Admitted + t.Delete.Admitted, Throttled: t.Read.Throttled + t.Write.Throttled + t.Delete.Throttled}
}

// usageKey is the finest grain of the usage kept: Usage sums it up each way.
type usageKey struct{ subscription, principal, zone string }

func (t *Tallies) add(o operation, admitted bool) {
	tally := [...]*Tally{&t.Read, &t.Write, &t.Delete}[o]
	if admitted {
		tally.Admitted++
	} else {
		tally.Throttled++
	}
}

func (t Tallies) plus(u Tallies) Tallies {
	for o, v := range [...]Tally{u.Read, u.Write, u.Delete} {
		tally := [...]*Tally{&t.Read, &t.Write, &t.Delete}[o]
		tally.Admitted += v.Admitted
		tally.Throttled += v.Throttled
	}
	return t
}

// SetLimits replaces the limits the stand-in enforces (Limits{} enforces none); every bucket
// starts full again and the windows (the provider's and the zones') empty.
func (s *Server) SetLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limiter = newLimiter(l)
}

// SetClock sets the clock the limits run on (buckets refill and the windows slide by it), for
// tests that move time themselves; nil is the real clock. Tokens expire by the real clock.
func (s *Server) SetClock(now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// Usage is a snapshot of the requests admitted and throttled.
func (s *Server) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := Usage{Principals: map[string]Tallies{}, Zones: map[string]Tallies{}, Subscriptions: map[string]Tallies{}, ZoneOperations: map[ZoneID]ZoneTallies{}}
	for k, t := range s.zoneUsage {
		u.ZoneOperations[ZoneID{k.subscription, k.resourceGroup, k.name}] = t
	}
	for k, t := range s.usage {
		u.Principals[k.principal] = u.Principals[k.principal].plus(t)
		u.Zones[k.zone] = u.Zones[k.zone].plus(t)
		u.Subscriptions[k.subscription] = u.Subscriptions[k.subscription].plus(t)
	}
	return u
}

// ResetUsage starts the usage anew (not the limits' buckets, nor Count).
func (s *Server) ResetUsage() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage = map[usageKey]Tallies{}
	s.zoneUsage = map[zoneKey]ZoneTallies{}
}

// scope is the subscription and the zone (lower case; "" for none) a Resource Manager path names.
// action is the verb of the operation in an Azure RBAC action ("write", "delete"; "read").
func (o operation) action() string { return o.String() }

// recordTypeOf is the record type a Resource Manager path names
// (…/privateDnsZones/<zone>/<type>/<name>), "" for another path.
func recordTypeOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) > 8 && strings.EqualFold(parts[6], "privateDnsZones") {
		return parts[8]
	}
	return ""
}

func scope(path string) (subscription, zone string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) > 1 {
		subscription = strings.ToLower(parts[1])
	}
	if len(parts) > 7 && strings.EqualFold(parts[6], "privateDnsZones") {
		zone = strings.ToLower(parts[7])
	}
	return subscription, zone
}
