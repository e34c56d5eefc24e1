package verify

import (
	"container/heap"
	"sync"
	"time"

	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/naming"
)

// RouteKey identifies a route's CNAME in one zone.
type RouteKey struct {
	Namespace, Name, Controller string
}

// TargetKey identifies a gateway target hostname's address records in one zone.
type TargetKey struct {
	Controller string
	// Hostname is Canonical.
	Hostname string
}

// Observation is the last known state of a record in a zone.
type Observation struct {
	State  routingv1alpha1.ZoneState
	Answer string
	// Since is when the check that found this state and answer ran.
	Since time.Time
	// For is the Expected.Key of the records the observation is about: a caller holding newer
	// records treats it as not checked yet.
	For string
}

// Change says whose zone state changed, so that it is reconciled again.
type Change struct {
	// Route is set when a route's state in a zone changed.
	Route *RouteKey
	// Gateway is set when the address records of a gateway entry point changed state in a zone.
	Gateway *desired.Ingress
}

// Check is one record the prober must ask a zone about.
type Check struct {
	Controller string
	Expected   Expected
	subject    *subject
	version    uint64
	urgent     bool
}

// NotCheckedYet is the answer of a record that changed and has not been checked since.
const NotCheckedYet = "not checked yet"

type subject struct {
	route  *RouteKey  // set for a route's CNAME
	target *TargetKey // set for a target's address records

	controller string
	expected   Expected
	key        string
	// via is the target a route's CNAME points at.
	via TargetKey
	// pair is the entry point whose address records a target subject checks, source the
	// namespace/name of their DNSEndpoint.
	pair      desired.Ingress
	source    string
	processed bool
	result    *Observation // nil: not checked since verification started
	failures  int
	attempt   int
	version   uint64
	gone      bool
	// changedAt is when a route's record last changed, until it is found published.
	changedAt time.Time
	// replacedAt is when the records last changed or ExternalDNS last processed them, and ttl
	// the longest TTL they had: a resolver may answer the previous value from its cache until
	// then.
	replacedAt time.Time
	ttl        time.Duration
}

// Tracker holds every record to check, its last result and its schedule. It is safe for
// concurrent use; every method takes the current time, so it is tested without a clock.
type Tracker struct {
	settings Settings
	jitter   func() float64
	// observe receives the time from a route's change to its publication in a zone.
	observe func(controller string, d time.Duration)

	mu     sync.Mutex
	routes map[RouteKey]*subject
	// targets are the address records by their DNSEndpoint (namespace/name); targetsByName the
	// same by zone and name (two entry points may publish one name for a moment, while one of
	// them is being deleted).
	targets       map[string]*subject
	targetsByName map[TargetKey]map[string]*subject
	// routesVia are the routes whose CNAME points at a target, by the target.
	routesVia map[TargetKey]map[RouteKey]*subject
	queues    map[string]*zoneQueue
	// cached are the zones checked through a resolver (SetCached).
	cached map[string]bool
	// whole are the zones read whole (SetWhole).
	whole map[string]bool
}

// NewTracker returns an empty tracker. jitter returns random numbers in [0, 1); observe (may be
// nil) receives each route's convergence time.
func NewTracker(s Settings, jitter func() float64, observe func(controller string, d time.Duration)) *Tracker {
	if observe == nil {
		observe = func(string, time.Duration) {}
	}
	return &Tracker{settings: s.withDefaults(), jitter: jitter, observe: observe,
		routes: map[RouteKey]*subject{}, targets: map[string]*subject{}, targetsByName: map[TargetKey]map[string]*subject{},
		routesVia: map[TargetKey]map[RouteKey]*subject{}, queues: map[string]*zoneQueue{}, cached: map[string]bool{}, whole: map[string]bool{}}
}

// Settings are the tracker's settings, defaults filled in.
func (t *Tracker) Settings() Settings { return t.settings }

// SetCached says whether a zone is checked through a resolver, whose cache remembers every answer
// it gives, the negative ones too: a new or changed record of such a zone is first asked about
// once ExternalDNS has processed it (asked before, the resolver would cache its absence, for every
// client, for the zone's negative TTL), or after SettledInterval at the latest.
func (t *Tracker) SetCached(controller string, cached bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cached[controller] = cached
}

// A record of a zone read whole that is not published yet is checked with every read of the zone
// for eagerWindow after its records changed (or ExternalDNS processed them: ExternalDNS
// synchronizes once a minute by default), and at least every wholePendingCheck after that: one
// read answers every record due, so checking one more record costs nothing, and a zone that
// ExternalDNS takes minutes to write (thousands of records) shows each name Published within that
// of its appearing, not after a back-off of up to the settled interval.
const (
	eagerWindow       = 2 * time.Minute
	wholePendingCheck = 30 * time.Second
)

// SetWhole says that a zone is read whole (a zone transfer, Azure Resource Manager): a record not
// yet published is checked again after FastInterval for eagerWindow after it changed, then backs
// off to at most wholePendingCheck.
func (t *Tracker) SetWhole(controller string, whole bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.whole[controller] = whole
}

// SetRoute records what a route's DNSEndpoint for a zone asks for (one CNAME). initial says the
// record was there before verification started (the operator starting, a zone's verification
// being configured): it keeps the state the route's status shows until its first check, paced by
// Settings.InitialPace within Settings.InitialSpread. Any other new or changed record is Pending until checked, and
// checked at once.
func (t *Tracker) SetRoute(k RouteKey, records []*endpoint.Endpoint, processed, initial bool, now time.Time) []Change {
	exp := ExpectedOf(RouteRecord(records))
	if len(exp) != 1 || exp[0].Type != endpoint.RecordTypeCNAME || len(exp[0].Values) != 1 {
		return t.DeleteRoute(k)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s, exists := t.routes[k]
	if exists && s.key == exp.Key() {
		t.setProcessed(s, processed, now)
		return nil
	}
	before, known := t.routeView(s)
	if exists {
		t.unlink(s)
	} else {
		s = &subject{route: &k, controller: k.Controller}
		t.routes[k] = s
	}
	s.expected, s.key, s.processed = exp, exp.Key(), processed
	s.replaced(records, now)
	s.via = TargetKey{Controller: k.Controller, Hostname: exp[0].Values[0]}
	if t.routesVia[s.via] == nil {
		t.routesVia[s.via] = map[RouteKey]*subject{}
	}
	t.routesVia[s.via][k] = s
	t.start(s, initial && !exists, now)
	if !initial || exists {
		s.changedAt = now
	}
	return t.routeChanged(s, before, known, now)
}

// RouteRecords are the records of a route's DNSEndpoint that verification reads (RouteRecord):
// its own, and, when its name goes through an intermediate name the operators write, that
// intermediate's CNAME to this cluster's gateway as its annotation names it
// (naming.AnnotationIntermediateTarget).
func RouteRecords(ep *externaldnsv1alpha1.DNSEndpoint) []*endpoint.Endpoint {
	target := ep.Annotations[naming.AnnotationIntermediateTarget]
	if target == "" || len(ep.Spec.Endpoints) != 1 || ep.Spec.Endpoints[0] == nil || len(ep.Spec.Endpoints[0].Targets) != 1 ||
		!naming.IsIntermediate(ep.Spec.Endpoints[0].Targets[0]) {
		return ep.Spec.Endpoints
	}
	name := ep.Spec.Endpoints[0]
	return []*endpoint.Endpoint{name, {DNSName: name.Targets[0], RecordType: endpoint.RecordTypeCNAME, Targets: endpoint.Targets{target}, RecordTTL: name.RecordTTL}}
}

// RouteRecord is the record of a route's DNSEndpoint that says whether the zone answers the
// route as this cluster publishes it: its name's CNAME; or, when the name goes through its
// policy's intermediate name (regional failover, docs/ARCHITECTURE.md#one-record-moves-a-policy),
// the intermediate's CNAME to this cluster's gateway, since the name's own record is the same from
// every cluster and the intermediate is what says who serves it (a stand-in's is the home's until
// a failover: Drifted, attributed to the cluster serving it). An intermediate beside a name still
// direct is not checked.
func RouteRecord(records []*endpoint.Endpoint) (own []*endpoint.Endpoint) {
	var intermediate *endpoint.Endpoint
	for _, r := range records {
		if r != nil && naming.IsIntermediate(r.DNSName) {
			intermediate = r
			continue
		}
		own = append(own, r)
	}
	if intermediate != nil && len(own) == 1 && own[0] != nil && len(own[0].Targets) == 1 &&
		Canonical(own[0].Targets[0]) == Canonical(intermediate.DNSName) {
		return []*endpoint.Endpoint{intermediate}
	}
	return own
}

// DeleteRoute forgets a route's record in a zone.
func (t *Tracker) DeleteRoute(k RouteKey) []Change {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.routes[k]; ok {
		t.unlink(s)
		s.gone = true
		delete(t.routes, k)
	}
	return nil
}

// SetTarget records what a gateway entry point's address DNSEndpoint (source, its
// namespace/name) for a zone asks for (A and AAAA records, or a CNAME, of the target hostname);
// see SetRoute for initial.
func (t *Tracker) SetTarget(controller string, pair desired.Ingress, source string, records []*endpoint.Endpoint, processed, initial bool, now time.Time) []Change {
	exp := ExpectedOf(records)
	if len(exp) == 0 {
		return t.DeleteTarget(source, now)
	}
	k := TargetKey{Controller: controller, Hostname: exp[0].Name}
	t.mu.Lock()
	defer t.mu.Unlock()
	s, exists := t.targets[source]
	if exists && s.key == exp.Key() && s.pair == pair && *s.target == k {
		t.setProcessed(s, processed, now)
		return nil
	}
	var out []Change
	if exists && *s.target != k { // another name now: the routes of the old one lose it
		before := t.viewsVia(*s.target)
		t.unlinkTarget(s)
		out = append(out, t.viaChanged(*s.target, before, now)...)
	}
	before := t.viewsVia(k)
	if !exists {
		s = &subject{controller: controller, source: source}
		t.targets[source] = s
	}
	s.target, s.expected, s.key, s.pair, s.processed = &k, exp, exp.Key(), pair, processed
	s.replaced(records, now)
	if t.targetsByName[k] == nil {
		t.targetsByName[k] = map[string]*subject{}
	}
	t.targetsByName[k][source] = s
	t.start(s, initial && !exists, now)
	out = append(out, Change{Gateway: &pair})
	return append(out, t.viaChanged(k, before, now)...)
}

// DeleteTarget forgets the address records of a deleted DNSEndpoint (source): the routes
// pointing at the name are Pending, with no address record to publish, unless another entry
// point publishes it.
func (t *Tracker) DeleteTarget(source string, now time.Time) []Change {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.targets[source]
	if !ok {
		return nil
	}
	before := t.viewsVia(*s.target)
	t.unlinkTarget(s)
	s.gone = true
	delete(t.targets, source)
	return append([]Change{{Gateway: &s.pair}}, t.viaChanged(*s.target, before, now)...)
}

func (t *Tracker) unlinkTarget(s *subject) {
	if m := t.targetsByName[*s.target]; m != nil {
		delete(m, s.source)
		if len(m) == 0 {
			delete(t.targetsByName, *s.target)
		}
	}
}

// targetOf is the address records a route's CNAME leads to in its zone: when two entry points
// publish the name, the one whose DNSEndpoint sorts first.
func (t *Tracker) targetOf(k TargetKey) *subject {
	var best *subject
	for source, s := range t.targetsByName[k] {
		if best == nil || source < best.source {
			best = s
		}
	}
	return best
}

// DropController forgets every record of a zone (its verification was removed).
func (t *Tracker) DropController(controller string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, s := range t.routes {
		if k.Controller == controller {
			t.unlink(s)
			s.gone = true
			delete(t.routes, k)
		}
	}
	for source, s := range t.targets {
		if s.controller == controller {
			t.unlinkTarget(s)
			s.gone = true
			delete(t.targets, source)
		}
	}
	delete(t.queues, controller)
}

// Route is the state of a route's CNAME in a zone, composed with the state of its target's
// address records there; false when not known (not checked since verification started).
func (t *Tracker) Route(k RouteKey) (Observation, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.routeView(t.routes[k])
}

// ZoneCounts are a zone's routes by their state there (a route not checked yet is Pending).
type ZoneCounts map[routingv1alpha1.ZoneState]int

// Zone counts the routes published into a zone by their state there: what the DNSConfiguration
// summarises per zone. It walks the zone's routes (a few milliseconds at 10,000 routes), so it is
// asked on a timer, not on every change.
func (t *Tracker) Zone(controller string) ZoneCounts {
	t.mu.Lock()
	defer t.mu.Unlock()
	counts := ZoneCounts{}
	for k, s := range t.routes {
		if k.Controller != controller {
			continue
		}
		state := routingv1alpha1.ZonePending
		if o, known := t.routeView(s); known {
			state = o.State
		}
		counts[state]++
	}
	return counts
}

// Routes is the known state of every route published into a zone, by route: what a change in how
// answers are reported (who serves them, under regional failover) is compared against. Like Zone
// it walks the zone's routes, so it is asked when that reporting changes, not on every change.
func (t *Tracker) Routes(controller string) map[RouteKey]Observation {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[RouteKey]Observation{}
	for k, s := range t.routes {
		if k.Controller != controller {
			continue
		}
		if o, known := t.routeView(s); known {
			out[k] = o
		}
	}
	return out
}

// Target is the state in its zone of the address records of a DNSEndpoint (source,
// namespace/name); false when not known.
func (t *Tracker) Target(source string) (Observation, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.targets[source]
	if s == nil || s.result == nil {
		return Observation{}, false
	}
	return *s.result, true
}

// Next returns the next record of a zone to check: the earliest due urgent one (changed or not
// published), else the earliest due settled one. When none is due it returns false and when the
// next one will be (zero: none is scheduled).
func (t *Tracker) Next(controller string, now time.Time) (Check, bool, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.queues[controller]
	if q == nil {
		return Check{}, false, time.Time{}
	}
	var next time.Time
	for _, h := range []*entries{&q.urgent, &q.settled} {
		for h.Len() > 0 {
			e := (*h)[0]
			if e.s.gone || e.version != e.s.version {
				heap.Pop(h) // rescheduled or forgotten since
				continue
			}
			if !e.due.After(now) {
				heap.Pop(h)
				return Check{Controller: controller, Expected: e.s.expected, subject: e.s, version: e.version, urgent: h == &q.urgent}, true, time.Time{}
			}
			if next.IsZero() || e.due.Before(next) {
				next = e.due
			}
			break
		}
	}
	return Check{}, false, next
}

// NextSettled returns a settled record of a zone (one found published, checked again now and
// then) due by the given time, which may lie ahead: a zone read whole by one listing answers the
// settled records that are nearly due with it instead of listing again for them moments later.
// Changed records (urgent) are never taken ahead of time: the listing may predate their change.
func (t *Tracker) NextSettled(controller string, by time.Time) (Check, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := t.queues[controller]
	if q == nil {
		return Check{}, false
	}
	for q.settled.Len() > 0 {
		e := q.settled[0]
		if e.s.gone || e.version != e.s.version {
			heap.Pop(&q.settled)
			continue
		}
		if e.due.After(by) {
			return Check{}, false
		}
		heap.Pop(&q.settled)
		return Check{Controller: controller, Expected: e.s.expected, subject: e.s, version: e.version}, true
	}
	return Check{}, false
}

// Return gives back checks a zone's loop took but did not do (it stopped: the zone's settings
// changed, or the operator is stopping): each is due again at once, in the queue it came from,
// unless its record changed or was forgotten meanwhile (then it is scheduled already).
func (t *Tracker) Return(checks []Check, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range checks {
		if s := c.subject; s != nil && !s.gone && s.version == c.version {
			t.schedule(s, now, c.urgent)
		}
	}
}

// Report records what a check found and schedules the next one. It returns whose state changed.
// A result for records that changed while they were being checked is dropped.
func (t *Tracker) Report(c Check, f Finding, now time.Time) []Change {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := c.subject
	if s == nil || s.gone || s.version != c.version {
		return nil
	}
	var before map[*subject]view
	var routeBefore Observation
	var routeKnown bool
	if s.target != nil {
		before = t.viewsVia(*s.target)
	} else {
		routeBefore, routeKnown = t.routeView(s)
	}
	f, cachedUntil := s.tolerate(f, now)
	changed := t.record(s, f, now)
	published := !f.Failed && f.State == routingv1alpha1.ZonePublished
	delay, urgent := NextCheck(t.settings, s.attempt, published, t.jitter())
	if !cachedUntil.IsZero() && cachedUntil.Before(now.Add(delay)) {
		delay = cachedUntil.Sub(now) // asked again as soon as a cached answer is no excuse
	}
	if !published && t.whole[s.controller] {
		if now.Sub(s.replacedAt) < eagerWindow {
			delay, urgent = t.settings.FastInterval, true
		} else if delay > wholePendingCheck {
			delay, urgent = wholePendingCheck, true
		}
	}
	if published {
		s.attempt = 0
	} else {
		s.attempt++
	}
	t.schedule(s, now.Add(delay), urgent)
	if s.route != nil {
		return t.routeChanged(s, routeBefore, routeKnown, now)
	}
	var out []Change
	if changed {
		out = append(out, Change{Gateway: &s.pair})
	}
	return append(out, t.viaChanged(*s.target, before, now)...)
}

// defaultTTL is the TTL of a record that names none: the operator's default record TTL.
const defaultTTL = 300 * time.Second

// replaced notes that the subject's records are new or changed, now. A resolver may serve the
// previous value for as long as the longer of the old and the new TTL. Records found when
// verification started may have changed just before (the operator restarting): nothing says
// otherwise, so they get the same tolerance from now.
func (s *subject) replaced(records []*endpoint.Endpoint, now time.Time) {
	previous := s.ttl
	s.replacedAt, s.ttl = now, 0
	for _, r := range records {
		if r != nil {
			s.ttl = max(s.ttl, time.Duration(r.RecordTTL)*time.Second)
		}
	}
	if s.ttl == 0 {
		s.ttl = defaultTTL
	}
	s.ttl = max(s.ttl, previous)
}

// tolerate takes a drifted answer of a resolver for the previous value of the records, still in
// its cache, while the records' TTL has not passed since they changed: Pending, saying until
// when, instead of Drifted. It returns that time (zero when nothing was tolerated).
func (s *subject) tolerate(f Finding, now time.Time) (Finding, time.Time) {
	if !f.Cached || f.Failed || f.State != routingv1alpha1.ZoneDrifted {
		return f, time.Time{}
	}
	until := s.replacedAt.Add(s.ttl)
	if !now.Before(until) {
		return f, time.Time{}
	}
	f.State = routingv1alpha1.ZonePending
	f.Answer += " (the resolver may serve it from its cache until " + until.UTC().Format(time.RFC3339) + ")"
	return f, until
}

// record applies a finding to a subject's result; it reports whether the result changed. A
// failure counts only once FailuresBeforeUnreachable checks in a row failed.
func (t *Tracker) record(s *subject, f Finding, now time.Time) bool {
	if f.Failed {
		s.failures++
		if s.failures < t.settings.FailuresBeforeUnreachable {
			return false
		}
	} else {
		s.failures = 0
	}
	if s.result != nil && s.result.State == f.State && s.result.Answer == f.Answer && s.result.For == s.key {
		return false
	}
	s.result = &Observation{State: f.State, Answer: f.Answer, Since: now, For: s.key}
	return true
}

// setProcessed notes whether ExternalDNS has read the current record; when it just has, a record
// not yet found published is checked at once again (ExternalDNS writes the zone right after).
func (t *Tracker) setProcessed(s *subject, processed bool, now time.Time) {
	if processed && !s.processed {
		// ExternalDNS writes the zone right after reading the record: only from now on can a
		// resolver have fetched the new value, so the cached-answer tolerance starts again.
		s.replacedAt = now
		if s.result == nil || s.result.State != routingv1alpha1.ZonePublished {
			s.attempt = 0
			t.schedule(s, now, true)
		}
	}
	s.processed = processed
}

// start schedules a new or changed subject: a change is Pending and checked now; a record found
// when verification started keeps its unknown result and is checked at its zone's initial pace.
func (t *Tracker) start(s *subject, initial bool, now time.Time) {
	s.failures, s.attempt = 0, 0
	if initial {
		s.result = nil
		t.schedule(s, t.initialSlot(s.controller, now), false)
		return
	}
	s.result = &Observation{State: routingv1alpha1.ZonePending, Answer: NotCheckedYet, Since: now, For: s.key}
	if t.cached[s.controller] && !s.processed {
		t.schedule(s, now.Add(t.settings.SettledInterval), false) // see SetCached; setProcessed brings it forward
		return
	}
	t.schedule(s, now, true)
}

// initialSlot is when a record found at start is first checked: the zone's next free slot at
// InitialPace, or, past InitialSpread, a random time within it.
func (t *Tracker) initialSlot(controller string, now time.Time) time.Time {
	q := t.queue(controller)
	due := now
	if q.nextInitial.After(now) {
		due = q.nextInitial
	}
	if due.Sub(now) > t.settings.InitialSpread {
		return now.Add(time.Duration(t.jitter() * float64(t.settings.InitialSpread)))
	}
	q.nextInitial = due.Add(t.settings.InitialPace)
	return due
}

func (t *Tracker) queue(controller string) *zoneQueue {
	q := t.queues[controller]
	if q == nil {
		q = &zoneQueue{}
		t.queues[controller] = q
	}
	return q
}

func (t *Tracker) schedule(s *subject, due time.Time, urgent bool) {
	q := t.queue(s.controller)
	s.version++
	h := &q.settled
	if urgent {
		h = &q.urgent
	}
	heap.Push(h, entry{due: due, version: s.version, s: s})
}

func (t *Tracker) unlink(s *subject) {
	if m := t.routesVia[s.via]; m != nil {
		delete(m, *s.route)
		if len(m) == 0 {
			delete(t.routesVia, s.via)
		}
	}
}

// routeView composes a route's state in a zone: its CNAME's state, and once the CNAME is
// published, the state of the target's address records in the same zone.
func (t *Tracker) routeView(s *subject) (Observation, bool) {
	if s == nil || s.result == nil {
		return Observation{}, false
	}
	cname := *s.result
	if cname.State != routingv1alpha1.ZonePublished {
		return cname, true
	}
	target := t.targetOf(s.via)
	if target == nil {
		return Observation{State: routingv1alpha1.ZonePending, Answer: cname.Answer + " → no address record is published for it",
			Since: cname.Since, For: cname.For}, true
	}
	if target.result == nil {
		return Observation{}, false
	}
	since := cname.Since
	if target.result.Since.After(since) {
		since = target.result.Since
	}
	return Observation{State: target.result.State, Answer: cname.Answer + " → " + target.result.Answer, Since: since, For: cname.For}, true
}

// routeChanged returns a Change when the route's composed state differs from before, and
// observes the convergence time when it just became published after a change.
func (t *Tracker) routeChanged(s *subject, before Observation, known bool, now time.Time) []Change {
	after, nowKnown := t.routeView(s)
	if known == nowKnown && before.State == after.State && before.Answer == after.Answer && before.For == after.For {
		return nil
	}
	if nowKnown && after.State == routingv1alpha1.ZonePublished && !s.changedAt.IsZero() {
		t.observe(s.controller, now.Sub(s.changedAt))
		s.changedAt = time.Time{}
	}
	return []Change{{Route: s.route}}
}

// view is a route's composed state and whether it is known.
type view struct {
	obs   Observation
	known bool
}

// viewsVia snapshots the composed states of the routes pointing at a target.
func (t *Tracker) viewsVia(k TargetKey) map[*subject]view {
	routes := t.routesVia[k]
	out := make(map[*subject]view, len(routes))
	for _, s := range routes {
		o, known := t.routeView(s)
		out[s] = view{o, known}
	}
	return out
}

// viaChanged returns the routes pointing at a target whose composed state differs from the
// snapshot taken by viewsVia.
func (t *Tracker) viaChanged(k TargetKey, before map[*subject]view, now time.Time) []Change {
	var out []Change
	for _, s := range t.routesVia[k] {
		b := before[s]
		out = append(out, t.routeChanged(s, b.obs, b.known, now)...)
	}
	return out
}

type zoneQueue struct {
	urgent, settled entries
	// nextInitial is the zone's next free slot for a first check of a record found at start.
	nextInitial time.Time
}

type entry struct {
	due     time.Time
	version uint64
	s       *subject
}

// entries is a min-heap by due time.
type entries []entry

func (h entries) Len() int           { return len(h) }
func (h entries) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h entries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entries) Push(x any)        { *h = append(*h, x.(entry)) }
func (h *entries) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
