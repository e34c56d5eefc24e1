// Package failoverloop runs regional failover (docs/ARCHITECTURE.md#regional-failover-design):
// the leader refreshes this cluster's heartbeat in every zone with failover settings, reads those
// zones, probes the other regions' gateways, judges them (internal/failover) and, for a region
// judged Lost, passes the ownership of the names this cluster stands in for to its own
// ExternalDNS instances (internal/zonewriter). Nothing happens without a zone with failover
// settings, and nothing moves for a route whose DNSPolicy lists no stand-ins: the seed's model is
// untouched. What it concludes is reported through the DNSConfiguration's status (its reconciler
// reads Regions and Drain) and Events.
//
// It is the loop, not the decisions: internal/failover decides (pure, table-tested), this package
// does the I/O around it (the cluster's objects, the zones, the probes, the clock), as
// internal/prober runs what internal/verify decides. It sits beside internal/failover, not in
// it, so that the pure package imports nothing that does I/O; the controllers construct it
// (controllers/setup.go) and read its view through a small interface.
package failoverloop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/metrics"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/verify"
	"github.com/service-router/service-router-operator/internal/zoneconfig"
	"github.com/service-router/service-router-operator/internal/zonewriter"
)

// Defaults of DNSConfiguration.spec.failover.
const (
	defaultProbePort         = 443
	defaultProbeInterval     = 5 * time.Second
	defaultHeartbeatInterval = 10 * time.Second
	// probeTimeout bounds one TCP connection attempt to a gateway address.
	probeTimeout = 2 * time.Second
)

// zoneIO reads and writes one zone for failover (internal/zonewriter).
type zoneIO interface {
	// Read reads the zone whole; ReadWitness only its heartbeats (known: their names as the last
	// readings showed them, for a reader that asks for each by name).
	Read(ctx context.Context) (failover.ZoneReading, error)
	ReadWitness(ctx context.Context, known []string) (failover.ZoneReading, error)
	WriteHeartbeat(ctx context.Context, cluster, region, value string) error
	RemoveLegacyHeartbeat(ctx context.Context, cluster, region string) error
	Pass(ctx context.Context, p failover.Pass) error
}

type rfc2136IO struct{ zonewriter.RFC2136 }

func (z rfc2136IO) Pass(ctx context.Context, p failover.Pass) error {
	return z.PassOwnership(ctx, p.TXTName, p.TTL, p.Old, p.New)
}

type azureIO struct{ *zonewriter.AzurePrivateDNS }

func (z azureIO) Pass(ctx context.Context, p failover.Pass) error {
	return z.PassOwnership(ctx, p.TXTName, p.Old, p.New)
}

// failoverZone is a zone with failover settings, as this cluster takes part in it.
type failoverZone struct {
	// zone is the zone's apex; transferred says it is read whole by zone transfer (RFC 2136), not
	// through Resource Manager.
	controller, region, zone string
	transferred              bool
	settings                 clusterv1alpha1.ZoneFailover
	io                       zoneIO
}

// labelled is a reading of the zone with what this cluster knows of it: its controller, region,
// this cluster's owner ID and TXT prefix there.
func (z failoverZone) labelled(r failover.ZoneReading) failover.ZoneReading {
	r.Controller, r.Region, r.Owner, r.TXTPrefix = z.controller, z.region, z.settings.OwnerID, z.settings.TXTPrefix
	return r
}

// Loop is the leader's failover loop. Regions and Drain are read by the DNSConfiguration
// reconciler; Changes wakes it when they change.
type Loop struct {
	// reader lists and reads DNSEndpoints; cluster reads the singletons and the DNSPolicies in force.
	reader  client.Reader
	cluster Reads
	// writer updates this cluster's own DNSEndpoints: the marks of a pass (mark).
	writer   client.Writer
	recorder events.EventRecorder
	changes  chan event.GenericEvent
	// probe connects to a gateway address (host:port); nil error when it answered.
	probe func(ctx context.Context, address string) error
	now   func() time.Time

	mu sync.Mutex
	// judged says a round has judged the regions since this leader started (or none has failover
	// zones any more): until then the status keeps what an earlier leader wrote.
	judged  bool
	regions map[string]failover.RegionView
	// held are the names this leader took over that the zones still say are this cluster's
	// (failover.Held): the leader's own record, for status; it starts empty when a leader starts.
	held []failover.Pass
	// own is the run of probes of this cluster's own gateway, and since when it answers.
	own      failover.OwnGateway
	lastBeat time.Time
	// beatAnswers, beatInterval and beatDraining are what the last heartbeat written said of this
	// cluster's gateway, of how often it is written (heartbeatInterval) and of a drain;
	// drainSaidAt is when a heartbeat first said the drain as it is now (by this leader).
	beatAnswers  bool
	beatInterval time.Duration
	beatDraining bool
	drainSaidAt  time.Time
	// refused are the last round's refused ownership writes, for the status; unreadable why each
	// zone whose last read or heartbeat write failed did not answer.
	refused    []refusal
	unreadable map[string]string
	// unanswered are the ownership writes that got no definite answer, until the zones show
	// whether they landed (failover.Unanswered).
	unanswered []announcedPass
	// drain is where a drain of this cluster's region stands, for the DNSConfiguration's status.
	drain       decide.Drain
	ios         map[string]cachedIO
	attribution attribution
	// forms is what Forms answers from (keepForms); forming says in which zones a name waits for a
	// reading to go through its intermediate (the round's goroutine only).
	forms   formView
	forming map[string]bool
	// reads are what this leader last read of each zone, and when, and beatsSeen when it saw each
	// heartbeat change (the round's goroutine only).
	reads     map[string]*zoneReads
	beatsSeen failover.Observations
	// listed are the latest listings publication verification made of zones read through
	// Resource Manager (Listed), taken by the next round as whole readings.
	listedMu sync.Mutex
	listed   map[string]verifiedListing

	// observed are the routes' states in the zones (the verification's), routeChanges where a
	// route whose answer is attributed otherwise than before is sent to be reconciled again
	// (reattribute). Both nil: nothing is sent.
	observed     RouteObservations
	routeChanges chan<- event.GenericEvent
}

// Reads is what a round reads of the cluster besides DNSEndpoints, as the reconcilers read it
// (the controllers' informer cache): the ClusterIdentity and the DNSConfiguration (nil when one
// does not exist), and the DNSPolicy in force in a namespace (the oldest; nil when none).
type Reads interface {
	Singletons(ctx context.Context) (*clusterv1alpha1.ClusterIdentity, *clusterv1alpha1.DNSConfiguration, error)
	PolicyInForce(ctx context.Context, namespace string) (*routingv1alpha1.DNSPolicy, error)
}

// RouteObservations are the routes' states in one zone (verify.Tracker.Routes).
type RouteObservations interface {
	Routes(controller string) map[verify.RouteKey]verify.Observation
}

// attribution is what Attribute knows: this cluster's name, each failover zone's region, and the
// clusters behind the gateway target hostnames the zones' heartbeats name.
type attribution struct {
	cluster     string
	zoneRegions map[string]string
	servers     map[string]failover.Server
	// intermediates are each failover zone's intermediate names' targets, as its last whole
	// reading showed them: an answer through one is served by the cluster it points at.
	intermediates map[string]map[string]string
}

// of says who serves a failover zone's answer (failover.Attribute); "" for other zones.
func (a attribution) of(controller, answer string) string {
	region, ok := a.zoneRegions[controller]
	if !ok {
		return ""
	}
	return failover.Attribute(failover.ThroughIntermediate(answer, a.intermediates[controller]), region, a.cluster, a.servers)
}

func (a attribution) equal(b attribution) bool {
	return a.cluster == b.cluster && maps.Equal(a.zoneRegions, b.zoneRegions) && maps.Equal(a.servers, b.servers) &&
		maps.EqualFunc(a.intermediates, b.intermediates, maps.Equal)
}

// zoneReads are the last readings of one zone: whole and of its heartbeats (failover.ReadPlan).
type zoneReads struct {
	whole, witness failover.ZoneReading
	at             failover.ZoneReads
	// legacyRemoved says this cluster's heartbeat under its earlier name is gone from the zone.
	legacyRemoved bool
	// formsAt is the whole reading the routes' forms were last checked against (keepForms).
	formsAt time.Time
	// reads and beats keep the zone out of the rounds' reads, and out of their heartbeat writes,
	// for a while after one of them failed (failover.ZoneBackoff). A zone that answered, if only to
	// refuse (its role for this cluster cut to Reader), keeps the other kind going: the round must
	// go on reading it to judge and to try the takeover that tells why. One that did not answer
	// at all (zonewriter.DidNotAnswer) is left out of both.
	reads, beats failover.ZoneBackoff
	// failure is why the zone's last read or heartbeat write failed, in a few words; "" once a
	// read succeeds (a zone left out of the rounds, failover.ZoneBackoff, keeps it).
	failure string
}

// record notes how the zone answered a request of one kind (a read, or a heartbeat write: b is
// that kind's backoff) tried from started and over at now: the backoff that follows, for both
// kinds when the zone did not answer at all (silent to one, silent to all: its timeout is not
// waited out twice), and why it failed.
func (r *zoneReads) record(b *failover.ZoneBackoff, s roundSettings, err error, started, now time.Time) {
	*b = s.backedOff(*b, err, started, now)
	if zonewriter.DidNotAnswer(err) {
		r.reads, r.beats = *b, *b
	}
	if err != nil {
		reason, _ := azureprivatedns.Classify(err)
		r.failure = decide.Truncate(reason, 200)
	}
}

// known is what the readings say of the zone, as of the last one (failover.Merge).
func (r *zoneReads) known(read bool) failover.ZoneReading {
	return failover.Merge(r.whole, r.witness, r.at.Witness.After(r.at.Full), read)
}

// verifiedListing is a listing verification made of a zone, and when it started.
type verifiedListing struct {
	listing verify.Listing
	started time.Time
}

// Listed takes a listing publication verification made of a zone read through Resource Manager
// (prober.Prober.Listed): the next round uses it as its whole reading of the zone when it is newer
// than its own, so that a zone both verify is listed once, not twice.
func (f *Loop) Listed(controller string, l verify.Listing, started time.Time) {
	f.listedMu.Lock()
	defer f.listedMu.Unlock()
	if f.listed == nil {
		f.listed = map[string]verifiedListing{}
	}
	f.listed[controller] = verifiedListing{l, started}
}

// takeListed makes the listings verification made since the last round the zones' whole readings
// where they are newer.
func (f *Loop) takeListed(zones []failoverZone) {
	f.listedMu.Lock()
	listed := f.listed
	f.listed = nil
	f.listedMu.Unlock()
	for _, z := range zones {
		l, ok := listed[z.controller]
		if !ok || z.transferred {
			continue
		}
		if r := f.zoneReads(z.controller); l.started.After(r.at.Full) {
			r.whole, r.at.Full = z.labelled(zonewriter.ReadingOf(z.zone, l.listing)), l.started
			if l.started.After(r.at.Witness) {
				r.at.Witness = l.started
			}
		}
	}
}

type cachedIO struct {
	key string
	io  zoneIO
}

// New is the loop of the cluster c reads (DNSEndpoints) and writes (the marks of a pass on its own
// DNSEndpoints), reads the singletons and policies from, and whose DNSConfiguration recorder
// announces passes and judgements on. observed and routeChanges are publication verification's
// routes and where a route whose answer is attributed otherwise is sent to be reconciled again
// (both nil: nothing is sent). clockOffset runs the loop's clock this far off the node's: a fault
// the tests inject, zero in any real cluster.
func New(c client.Client, cluster Reads, recorder events.EventRecorder, observed RouteObservations, routeChanges chan<- event.GenericEvent, clockOffset time.Duration) *Loop {
	f := &Loop{cluster: cluster, recorder: recorder, changes: make(chan event.GenericEvent, 1),
		probe: dialProbe, now: time.Now, regions: map[string]failover.RegionView{}, ios: map[string]cachedIO{}, reads: map[string]*zoneReads{}, beatsSeen: failover.Observations{}, forming: map[string]bool{},
		observed: observed, routeChanges: routeChanges}
	if c != nil {
		f.reader, f.writer = c, c
	}
	if clockOffset != 0 {
		f.now = func() time.Time { return time.Now().Add(clockOffset) }
	}
	return f
}

// Changes sends an event whenever what Regions or Drain say changes: the DNSConfiguration
// reconciler's source.
func (f *Loop) Changes() <-chan event.GenericEvent { return f.changes }

// dialProbe is a probe of a gateway's data plane: the listener accepts a TCP connection.
func dialProbe(ctx context.Context, address string) error {
	d := net.Dialer{Timeout: probeTimeout}
	conn, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return err
	}
	return conn.Close()
}

// NeedLeaderElection: only the leader writes heartbeats and takes names.
func (f *Loop) NeedLeaderElection() bool { return true }

// Start runs a round every probe interval until ctx ends.
func (f *Loop) Start(ctx context.Context) error {
	for {
		interval := f.round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// Regions is this cluster's view of the other regions, for the DNSConfiguration's status; known is
// false until this leader's first round has judged them (the status then keeps what it says).
func (f *Loop) Regions() (regions []clusterv1alpha1.RegionFailoverStatus, known bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.judged {
		return nil, false
	}
	var out []clusterv1alpha1.RegionFailoverStatus
	for region, v := range f.regions {
		// Refusals and unreadable zones first: the judgement's message is long, and the status
		// keeps 1,024 bytes. A zone that could not be read matters to a region only while the
		// probes fail (its witness decides).
		message := v.Judgement.Message
		if v.Judgement.State != failover.Serving {
			for _, controller := range slices.Sorted(maps.Keys(f.unreadable)) {
				message = fmt.Sprintf("zone %s did not answer this cluster: %s; %s", controller, f.unreadable[controller], message)
			}
		}
		for _, r := range f.refused {
			if r.region == region {
				message = fmt.Sprintf("zone %s refused %d ownership write(s) in the last round, retried every round: %s; %s", r.controller, r.names, r.err, message)
			}
		}
		st := clusterv1alpha1.RegionFailoverStatus{Region: region, State: string(v.Judgement.State), Reason: v.Judgement.Reason,
			Message: decide.Truncate(message, 1024), Since: &metav1.Time{Time: v.Since.Truncate(time.Second)}}
		taken := map[string]int32{}
		for _, p := range f.held {
			// The names a user publishes, not the intermediates they moved with.
			if p.Region == region && !naming.IsIntermediate(p.Hostname) {
				taken[p.Controller]++
			}
		}
		for controller, n := range taken {
			st.Taken = append(st.Taken, clusterv1alpha1.ZoneTakeover{Controller: controller, Names: n})
		}
		slices.SortFunc(st.Taken, func(a, b clusterv1alpha1.ZoneTakeover) int { return strings.Compare(a.Controller, b.Controller) })
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b clusterv1alpha1.RegionFailoverStatus) int { return strings.Compare(a.Region, b.Region) })
	return out, true
}

// round is one pass: heartbeat when due, read the zones, probe, judge, take over. It returns the
// time until the next.
func (f *Loop) round(ctx context.Context) time.Duration {
	log := ctrl.Log.WithName("failover")
	defer f.reattribute(ctx, f.attributionNow())
	identity, cfg, err := f.cluster.Singletons(ctx)
	if err != nil {
		log.Error(err, "reading the ClusterIdentity and the DNSConfiguration; nothing moves this round")
		return defaultProbeInterval
	}
	if identity == nil || cfg == nil {
		return defaultProbeInterval
	}
	s := failoverSettingsOf(cfg)
	// A drain ended while the Drained condition is still set: the names come back.
	s.returning = !s.drain && meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionDrained) != nil
	zones := f.zones(cfg, identity.Spec.Domain)
	if len(zones) == 0 {
		f.forget()
		return s.probeInterval
	}
	f.located(identity.Spec.Cluster, zones)
	own := identity.Spec.Region
	targets, addresses, err := f.ownGateways(ctx, zones)
	if err != nil {
		log.Error(err, "listing this cluster's gateway address DNSEndpoints; nothing moves this round")
		return s.probeInterval
	}
	now := f.now()
	answers := len(addresses) == 0 || f.anyAnswers(ctx, addresses, s.probePort)
	f.probedOwn(answers, now)
	// Due at the interval the fleet's write budget allows, and at once when what the heartbeat
	// says changes: this cluster's gateway (its stand-ins then need not wait for staleness), or the
	// interval (readers judge its freshness by the interval its last heartbeat states).
	interval := f.heartbeatInterval(identity.Spec.Cluster, zones, s)
	if now.Sub(f.lastBeat) >= interval || answers != f.beatAnswers || interval != f.beatInterval || s.drain != f.beatDraining {
		f.beatInterval = interval
		f.heartbeat(ctx, s, identity.Spec.Cluster, own, zones, answers, s.drain, targets, addresses, now)
	}
	names, err := f.standInNames(ctx, zones)
	if err != nil {
		log.Error(err, "listing the names this cluster stands in for; nothing moves this round")
		names = nil
	}
	// A drain that ended brings back every name of this region's zones a stand-in holds, whatever
	// the policies' failback (Reclaims takes back FailBack names of its own region only); while it
	// lasts, the zones holding them are read as often as for a failback (ZoneInterest's Holding),
	// so that the Drained condition follows them, but nothing goes back (interests).
	for i := range names {
		names[i].FailBack = names[i].FailBack || s.drain || s.returning
	}
	reading, probes, judged := f.observe(ctx, cfg, s, identity.Spec.Cluster, own, zones, names, now)
	// Every decision of the round from what it read and probed (failover.Round); what follows
	// carries it out.
	f.mu.Lock()
	views, held := maps.Clone(f.regions), slices.Clone(f.held)
	f.mu.Unlock()
	d := failover.Round(failover.RoundInput{Now: now, Own: own, Draining: s.drain, Settings: s.judge,
		Readings: reading.merged, Ownership: reading.ownership(), Probes: probes, Names: names,
		MayReclaim: f.interests(own, judged, names, now, s).MayReclaim, Views: views, Earlier: earlierViews(cfg),
		Held: held, Unanswered: f.unansweredPasses()})
	f.formsUnknownIn(zones, passedIn(d.Takeovers, d.Reclaims, d.Landed))
	landed := f.settleUnanswered(ctx, cfg, d.Landed, d.Waiting)
	taken, refused := f.pass(ctx, cfg, zones, d.Takeovers, true, "NameTakenOver",
		"%s in zone %s: ownership passed from %s (region %s, lost or drained) to %s; ExternalDNS now points it at this cluster")
	_, refusedBack := f.pass(ctx, cfg, zones, d.Reclaims, false, "NameTakenBack",
		"%s in zone %s: ownership passed back from %s (region %s, its stand-in) to %s; ExternalDNS now points it at this cluster again")
	takenNow := failover.WithNamesThrough(append(taken, landed...), names, reading.ownership())
	drainChanged := f.drained(s, own, zones, names)
	refusalsChanged := f.setRefusals(append(refused, refusedBack...))
	unreadableChanged := f.setUnreadable(zones)
	if f.remember(d, takenNow, reading.merged, cfg) || drainChanged || refusalsChanged || unreadableChanged {
		select {
		case f.changes <- event.GenericEvent{Object: &clusterv1alpha1.DNSConfiguration{}}:
		default:
		}
	}
	f.writeMarks(ctx, names, d.Returned, takenNow)
	f.keepForms(ctx, own, identity.Spec.Cluster, identity.Spec.Domain, zones, passedIn(d.Takeovers, d.Reclaims, landed))
	return s.probeInterval
}

// observe reads the zones as the decisions need them (failover.ReadPlan), probes the other regions
// and judges them; a zone holding a name this round may pass is read whole before anything passes
// (the escalation). Heartbeats are judged by when this cluster saw them change, on its own clock.
func (f *Loop) observe(ctx context.Context, cfg *clusterv1alpha1.DNSConfiguration, s roundSettings, cluster, own string,
	zones []failoverZone, names []failover.Name, now time.Time) (roundReading, map[string]failover.Probes, map[string]failover.Judgement) {
	f.takeListed(zones)
	reading := f.readZones(ctx, cfg, s, cluster, own, zones, f.plans(now, own, zones, names, s), now)
	reading.merged = f.beatsSeen.Observe(now, reading.merged)
	probes := f.probeRegions(ctx, own, reading.merged, s.probePort)
	judged := failover.JudgeRegions(now, own, s.drain, reading.merged, probes, s.judge)
	if escalate := f.escalations(zones, reading, f.interests(own, judged, names, now, s)); escalate != nil {
		reading = f.readZones(ctx, cfg, s, cluster, own, zones, escalate, now).over(reading)
		reading.merged = f.beatsSeen.Observe(now, reading.merged)
		judged = failover.JudgeRegions(now, own, s.drain, reading.merged, probes, s.judge)
	}
	return reading, probes, judged
}

// settings of one round, from DNSConfiguration.spec.failover.
type roundSettings struct {
	probePort                        string
	probeInterval, heartbeatInterval time.Duration
	judge                            failover.Settings
	// drain is spec.failover.drain; returning says a drain ended and its names come back.
	drain, returning bool
}

// backedOff is z's backoff after it was tried from started, its answer (or its timeout) come at
// now (failover.ZoneBackoff: from one probe interval, or as long as the attempt took, to the
// heartbeat's stale bound). The wait counts from the timeout's end, not from the round's start, or
// it would be over before it began.
func (s roundSettings) backedOff(b failover.ZoneBackoff, err error, started, now time.Time) failover.ZoneBackoff {
	return b.After(err, now, now.Sub(started), s.probeInterval, s.judge.HeartbeatStaleAfter)
}

func failoverSettingsOf(cfg *clusterv1alpha1.DNSConfiguration) roundSettings {
	s := roundSettings{probePort: strconv.Itoa(defaultProbePort), probeInterval: defaultProbeInterval,
		heartbeatInterval: defaultHeartbeatInterval, judge: failover.DefaultSettings}
	// The readers' bound on how long a heartbeat vouches (failover.Settings.MaxInterval) starts
	// from the interval the fleet is configured with, not from what any heartbeat states.
	s.judge.HeartbeatInterval = s.heartbeatInterval
	f := cfg.Spec.Failover
	if f == nil {
		return s
	}
	if f.ProbePort != nil {
		s.probePort = strconv.Itoa(int(*f.ProbePort))
	}
	if f.ProbeInterval != nil && f.ProbeInterval.Duration > 0 {
		s.probeInterval = f.ProbeInterval.Duration
	}
	if f.HeartbeatInterval != nil && f.HeartbeatInterval.Duration > 0 {
		s.heartbeatInterval = f.HeartbeatInterval.Duration
		s.judge.HeartbeatInterval = s.heartbeatInterval
	}
	if f.FailureThreshold != nil {
		s.judge.FailureThreshold = int(*f.FailureThreshold)
	}
	if f.HeartbeatStaleAfter != nil && f.HeartbeatStaleAfter.Duration > 0 {
		s.judge.HeartbeatStaleAfter = f.HeartbeatStaleAfter.Duration
	}
	if f.FailbackAfter != nil && f.FailbackAfter.Duration > 0 {
		s.judge.FailbackAfter = f.FailbackAfter.Duration
	}
	s.drain = f.Drain
	return s
}

// zones are the zones with failover settings this cluster can read and write; a zone whose writer
// cannot be built (an unreadable key file, an Azure configuration error) is left out this round
// and logged.
func (f *Loop) zones(cfg *clusterv1alpha1.DNSConfiguration, domain string) []failoverZone {
	var out []failoverZone
	for _, c := range cfg.Spec.ExternalDNSControllers {
		if c.Failover == nil || c.Verification == nil {
			continue
		}
		io, err := f.zoneIO(c, domain)
		if err != nil {
			ctrl.Log.WithName("failover").Error(err, "the zone takes no part in failover this round", "controller", c.Name)
			continue
		}
		zone, transferred := cmp.Or(c.Verification.TransferZone, domain), true
		if a := c.Verification.AzurePrivateDNS; a != nil {
			zone, transferred = zoneconfig.AzureZone(a).ZoneName, false
		}
		out = append(out, failoverZone{controller: c.Name, region: c.Region, zone: zone, transferred: transferred, settings: *c.Failover, io: io})
	}
	return out
}

// zoneIO builds (or reuses, while its settings stay the same) the reader and writer of a zone. An
// RFC 2136 zone's apex is verification.transferZone, or the cluster's domain.
func (f *Loop) zoneIO(c clusterv1alpha1.ExternalDNSController, domain string) (zoneIO, error) {
	v := c.Verification
	if a := v.AzurePrivateDNS; a != nil {
		key := fmt.Sprintf("%+v", *a)
		if cached, ok := f.ios[c.Name]; ok && cached.key == key {
			return cached.io, nil
		}
		w, err := zonewriter.NewAzurePrivateDNS(*zoneconfig.AzureZone(a), nil)
		if err != nil {
			return nil, err
		}
		f.ios[c.Name] = cachedIO{key, azureIO{w}}
		return azureIO{w}, nil
	}
	if len(v.Nameservers) == 0 {
		return nil, errors.New("failover needs the zone's primary: verification.nameservers")
	}
	w := zonewriter.RFC2136{Server: v.Nameservers[0], Zone: cmp.Or(v.TransferZone, domain)}
	if v.Timeout != nil {
		w.Timeout = v.Timeout.Duration
	}
	if k := c.Failover.TSIG; k != nil {
		secret, err := os.ReadFile(k.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("reading the TSIG secret of zone %s: %w", c.Name, err)
		}
		w.TSIGName, w.TSIGAlgorithm, w.TSIGSecret = k.KeyName, cmp.Or(k.Algorithm, "hmac-sha256"), strings.TrimSpace(string(secret))
	}
	return rfc2136IO{w}, nil
}

// ownGateways are this cluster's gateway target hostnames and their load balancer addresses, from
// the address DNSEndpoints of the zones with failover settings.
func (f *Loop) ownGateways(ctx context.Context, zones []failoverZone) (targets, addresses []string, err error) {
	for _, z := range zones {
		list := &externaldnsv1alpha1.DNSEndpointList{}
		// Read only, and only the gateway entry points' DNSEndpoints: no copy of every route's,
		// every round.
		if err := f.reader.List(ctx, list, client.MatchingLabels{naming.LabelController: z.controller, naming.LabelResourceType: naming.ResourceTypeGateway},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, err
		}
		for _, ep := range list.Items {
			if _, ok := desired.IngressOfLabels(ep.Labels); !ok {
				continue
			}
			for _, e := range ep.Spec.Endpoints {
				if !slices.Contains(targets, e.DNSName) {
					targets = append(targets, e.DNSName)
				}
				for _, a := range e.Targets {
					if !slices.Contains(addresses, a) {
						addresses = append(addresses, a)
					}
				}
			}
		}
	}
	slices.Sort(targets)
	slices.Sort(addresses)
	return targets, addresses, nil
}

// heartbeatInterval is how often this cluster writes its heartbeat (failover.HeartbeatInterval):
// the configured interval, or longer when the clusters the zones' heartbeats show would together
// write the zones read through Resource Manager more often than the fleet's share of the write
// budget allows.
func (f *Loop) heartbeatInterval(cluster string, zones []failoverZone, s roundSettings) time.Duration {
	clusters := map[string]bool{cluster: true}
	azureZones := 0
	for _, z := range zones {
		if !z.transferred {
			azureZones++
		}
		for _, beats := range f.zoneReads(z.controller).known(true).Beats {
			for _, b := range beats {
				clusters[b.Cluster] = true
			}
		}
	}
	return failover.HeartbeatInterval(s.heartbeatInterval, len(clusters), azureZones, failover.HeartbeatWritesPerMinute)
}

// anyAnswers probes the addresses at port; true when one answers.
func (f *Loop) anyAnswers(ctx context.Context, addresses []string, port string) bool {
	results := make(chan error, len(addresses))
	for _, a := range addresses {
		go func() { results <- f.probe(ctx, net.JoinHostPort(a, port)) }()
	}
	answered := false
	for range addresses {
		if <-results == nil {
			answered = true
		}
	}
	return answered
}

// heartbeat writes this cluster's heartbeat into every zone.
func (f *Loop) heartbeat(ctx context.Context, s roundSettings, cluster, region string, zones []failoverZone, answers, draining bool, targets, addresses []string, now time.Time) {
	// Every zone at once: a zone that does not answer costs the round its timeout once, not once
	// per zone after it.
	failed := make([]bool, len(zones))
	var wg sync.WaitGroup
	for i, z := range zones {
		r := f.zoneReads(z.controller)
		if r.beats.Skip(now) {
			continue
		}
		wg.Go(func() {
			value := failover.HeartbeatValue(failover.Heartbeat{At: now, GatewayAnswers: answers, Draining: draining, Interval: f.beatInterval, Owner: z.settings.OwnerID,
				Targets: targets, Addresses: addresses})
			started := f.now()
			err := z.io.WriteHeartbeat(ctx, cluster, region, value)
			r.record(&r.beats, s, err, started, f.now())
			if failed[i] = err != nil; failed[i] {
				ctrl.Log.WithName("failover").Error(err, "writing the heartbeat", "controller", z.controller, "skippedUntil", r.beats.Until)
			}
		})
	}
	wg.Wait()
	ok := !slices.Contains(failed, true)
	if ok {
		if f.drainSaidAt.IsZero() || draining != f.beatDraining {
			f.drainSaidAt = now
		}
		f.lastBeat, f.beatAnswers, f.beatDraining = now, answers, draining
	}
	// A failed write is retried next round: the interval it stated is not known to the zones.
	if !ok {
		f.beatInterval = 0
	}
}

// roundReading is what a round read of the zones, in the order of its zones: merged the readings
// its decisions take (failover.Merge: Read when read this round), whole which were read whole.
type roundReading struct {
	merged []failover.ZoneReading
	whole  []bool
}

// ownership is the readings as the decisions that pass names take them (failover.Ownership).
func (r roundReading) ownership() []failover.ZoneReading {
	out := make([]failover.ZoneReading, len(r.merged))
	for i, z := range r.merged {
		out[i] = failover.Ownership(z, r.whole[i])
	}
	return out
}

// over is r, an escalation's reading of some zones, laid over the round's earlier one.
func (r roundReading) over(earlier roundReading) roundReading {
	for i := range r.merged {
		if r.whole[i] || !r.merged[i].Read {
			earlier.merged[i].Read = earlier.merged[i].Read || r.merged[i].Read
		}
		if r.whole[i] {
			earlier.merged[i], earlier.whole[i] = r.merged[i], true
		}
	}
	return earlier
}

// plans are what this round reads of each zone (failover.ReadPlan): suspect while any region's
// probes fail, with each zone's interest as the last judgement and readings left it. An RFC 2136
// zone is read whole (a transfer, skipped when its serial is unchanged) when its heartbeats are due
// at rest: a DNS server can be asked for a heartbeat by name only, so a new cluster is found by a
// transfer; there is no request budget to spare it.
func (f *Loop) plans(now time.Time, own string, zones []failoverZone, names []failover.Name, s roundSettings) []failover.Read {
	f.mu.Lock()
	suspect := false
	judged := map[string]failover.Judgement{}
	for region, v := range f.regions {
		suspect = suspect || v.Probes.Failures > 0
		judged[region] = v.Judgement
	}
	f.mu.Unlock()
	in := f.interests(own, judged, names, now, s)
	out := make([]failover.Read, len(zones))
	for i, z := range zones {
		settings := failover.DefaultReadSettings(s.judge.HeartbeatStaleAfter, verify.DefaultSettings.SettledInterval)
		if z.transferred {
			settings.FullInterval = settings.WitnessInterval
		}
		r := f.zoneReads(z.controller)
		out[i] = failover.ReadPlan(now, r.at, suspect, in.ZoneInterest(z.labelled(r.whole)), settings)
	}
	return out
}

// interests are the inputs of each zone's failover.ZoneInterest. Names go back only while this
// cluster's heartbeats reach every zone: a cluster the others may judge lost (its heartbeat stale
// in a majority of the zones) must not take back what they would take again, round after round.
// While a drain is asked for, nothing goes back; once it has ended, names go back as soon as this
// cluster's gateway answers and the stand-ins have had a heartbeat reading to see the drain end
// (they read the heartbeats every heartbeatStaleAfter, and act on a reading in the round that
// makes it: the stale-after of this cluster's heartbeat and a probe interval), without the wait
// of failbackAfter (the drain, not a loss, took them). Sooner, a stand-in still judging the region
// Drained would take a name back again.
func (f *Loop) interests(own string, judged map[string]failover.Judgement, names []failover.Name, now time.Time, s roundSettings) failover.Interests {
	f.mu.Lock()
	defer f.mu.Unlock()
	reaching := now.Sub(f.lastBeat) <= 2*max(f.beatInterval, s.heartbeatInterval)
	var mayReclaim bool
	switch {
	case s.drain:
	case s.returning:
		// This cluster's own interval, uncapped: the stand-ins read at the pace it announced.
		seen := !f.drainSaidAt.IsZero() && now.Sub(f.drainSaidAt) >= max(s.judge.HeartbeatStaleAfter, failover.StaleIntervals*f.beatInterval)+s.probeInterval
		mayReclaim = reaching && seen && f.own.Probes.Successes >= s.judge.FailureThreshold
	default:
		mayReclaim = reaching && failover.MayFailBack(now, f.own.HealthySince, f.own.Probes, s.judge)
	}
	return failover.Interests{Own: own, Judged: judged, Names: names, Held: slices.Clone(f.held), MayReclaim: mayReclaim, Forming: maps.Clone(f.forming)}
}

// drained records where a drain of this cluster's region stands (failover.DrainProgress, on each
// zone's last whole reading); it reports whether that changed.
func (f *Loop) drained(s roundSettings, own string, zones []failoverZone, names []failover.Name) bool {
	readings := make([]failover.ZoneReading, len(zones))
	for i, z := range zones {
		r := f.zoneReads(z.controller)
		readings[i] = z.labelled(r.whole)
		readings[i].Read = !r.at.Full.IsZero()
	}
	d := decide.Drain{Draining: s.drain, Returning: s.returning}
	d.Here, d.Away, d.Known = failover.DrainProgress(own, readings, names)
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := d != f.drain
	f.drain = d
	return changed
}

// Drain is where a drain of this cluster's region stands, for the DNSConfiguration's Drained
// condition; known is false until this leader's first round (the status then keeps what it says).
func (f *Loop) Drain() (d decide.Drain, known bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.drain, f.judged
}

// escalations are the whole readings a round still needs once it has judged: the zones holding a
// name it may pass now that were not read whole; nil when there are none.
func (f *Loop) escalations(zones []failoverZone, r roundReading, in failover.Interests) []failover.Read {
	var out []failover.Read
	for i, z := range zones {
		if r.whole[i] || in.ZoneInterest(z.labelled(f.zoneReads(z.controller).whole)) != failover.Passing {
			continue
		}
		if out == nil {
			out = make([]failover.Read, len(zones))
		}
		out[i] = failover.Read{Witness: true, Full: true}
	}
	return out
}

// zoneReads is the record of a zone's readings, created on first use.
func (f *Loop) zoneReads(controller string) *zoneReads {
	r := f.reads[controller]
	if r == nil {
		r = &zoneReads{}
		f.reads[controller] = r
	}
	return r
}

// readZones reads each zone as plans say, in parallel. A zone that cannot be read (throttled,
// unreachable) counts as not read: it says nothing this round, either way, and is left out of the
// next rounds for a while (failover.ZoneBackoff), so that a zone that does not answer does not
// make every round wait out its timeout. After this cluster's first whole reading of a zone, its
// heartbeat under the earlier name is removed.
func (f *Loop) readZones(ctx context.Context, cfg *clusterv1alpha1.DNSConfiguration, s roundSettings, cluster, own string, zones []failoverZone, plans []failover.Read, now time.Time) roundReading {
	out := roundReading{merged: make([]failover.ZoneReading, len(zones)), whole: make([]bool, len(zones))}
	records := make([]*zoneReads, len(zones))
	for i, z := range zones {
		records[i] = f.zoneReads(z.controller)
	}
	var wg sync.WaitGroup
	for i, z := range zones {
		wg.Go(func() {
			r, want := records[i], plans[i]
			read, tried := false, (want.Full || want.Witness) && !r.reads.Skip(now)
			var err error
			started := f.now()
			switch {
			case (want.Full || want.Witness) && !tried:
				ctrl.Log.WithName("failover").V(1).Info("the zone did not answer lately; it says nothing this round", "controller", z.controller,
					"until", r.reads.Until, "error", r.reads.Err.Error())
			case want.Full:
				var zr failover.ZoneReading
				if zr, err = z.io.Read(ctx); err == nil {
					r.whole, r.at.Full, r.at.Witness = z.labelled(zr), now, now
					out.whole[i], read = true, true
				}
			case want.Witness:
				var zr failover.ZoneReading
				if zr, err = z.io.ReadWitness(ctx, failover.KnownHeartbeats(r.known(true), z.zone)); err == nil {
					r.witness, r.at.Witness, read = z.labelled(zr), now, true
				}
			}
			if tried {
				r.failure = ""
				r.record(&r.reads, s, err, started, f.now())
			}
			if err != nil {
				f.unread(cfg, z.controller, err)
			}
			out.merged[i] = z.labelled(r.known(read))
			if out.whole[i] && !r.legacyRemoved {
				r.legacyRemoved = f.removeLegacyHeartbeat(ctx, z, cluster, own, r.whole)
			}
		})
	}
	wg.Wait()
	return out
}

// unread logs a zone that could not be read, and announces one throttled by Resource Manager.
func (f *Loop) unread(cfg *clusterv1alpha1.DNSConfiguration, controller string, err error) {
	ctrl.Log.WithName("failover").V(1).Info("the zone could not be read; it says nothing this round", "controller", controller, "error", err.Error())
	if reason, retryAfter := azureprivatedns.Classify(err); retryAfter > 0 || strings.HasPrefix(reason, verify.ThrottledReason(0)) {
		f.recorder.Eventf(cfg, nil, "Warning", "ZoneThrottled", "Failover",
			"zone %s: Resource Manager throttled failover's reading (%s); the zone says nothing until it is read again", controller, reason)
	}
}

// removeLegacyHeartbeat removes this cluster's heartbeat under its earlier name when a whole
// reading shows it; true once it is gone.
func (f *Loop) removeLegacyHeartbeat(ctx context.Context, z failoverZone, cluster, own string, whole failover.ZoneReading) bool {
	if !slices.ContainsFunc(whole.Beats[own], func(b failover.Heartbeat) bool { return b.Legacy && b.Cluster == cluster }) {
		return true
	}
	if err := z.io.RemoveLegacyHeartbeat(ctx, cluster, own); err != nil {
		ctrl.Log.WithName("failover").Error(err, "removing this cluster's heartbeat under its earlier name", "controller", z.controller)
		return false
	}
	return true
}

// probeRegions probes every other region's gateway addresses, as the zones publish them, and
// counts the run of failures or successes. A region with no address to probe is not counted
// either way: an unknown is not a failure.
func (f *Loop) probeRegions(ctx context.Context, own string, readings []failover.ZoneReading, port string) map[string]failover.Probes {
	out := map[string]failover.Probes{}
	for _, region := range failover.Regions(own, readings) {
		f.mu.Lock()
		p := f.regions[region].Probes
		f.mu.Unlock()
		addresses := failover.Addresses(region, readings)
		if len(addresses) > 0 {
			p = p.After(f.anyAnswers(ctx, addresses, port))
		}
		f.mu.Lock()
		v := f.regions[region]
		v.Probes = p
		f.regions[region] = v
		f.mu.Unlock()
		out[region] = p
	}
	return out
}

// standInNames are the names this cluster publishes into the zones with failover settings for
// routes whose namespace's DNSPolicy lists stand-ins, with the policy's failback
// (decide.FailoverNames); this lists the DNSEndpoints and the policies in force.
func (f *Loop) standInNames(ctx context.Context, zones []failoverZone) ([]failover.Name, error) {
	policies := map[string]*routingv1alpha1.DNSPolicy{}
	var out []failover.Name
	for _, z := range zones {
		list := &externaldnsv1alpha1.DNSEndpointList{}
		// Read only: the cache's own objects, not a copy of every route's DNSEndpoint every round.
		if err := f.reader.List(ctx, list, client.MatchingLabels{naming.LabelController: z.controller}, client.HasLabels{naming.LabelServiceRoute},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		endpoints := make([]*externaldnsv1alpha1.DNSEndpoint, len(list.Items))
		for i := range list.Items {
			endpoints[i] = &list.Items[i]
			if _, known := policies[endpoints[i].Namespace]; known {
				continue
			}
			p, err := f.cluster.PolicyInForce(ctx, endpoints[i].Namespace)
			if err != nil {
				return nil, err
			}
			policies[endpoints[i].Namespace] = p
		}
		standIn, _ := decide.FailoverNames(z.controller, endpoints, policies)
		out = append(out, standIn...)
		lastWhole := f.zoneReads(z.controller).at.Full
		f.forming[z.controller] = slices.ContainsFunc(endpoints, func(ep *externaldnsv1alpha1.DNSEndpoint) bool {
			p := policies[ep.Namespace]
			return p != nil && p.Spec.Failover != nil && (forming(ep) || ep.CreationTimestamp.After(lastWhole))
		})
	}
	return out, nil
}

// pass writes the ownership passes, each announced by an Event of reason on the DNSConfiguration
// (note formats the name, zone, old owner, region and new owner) and marked on this cluster's
// DNSEndpoint of the name (mark; takeover says the pass takes a lost region's name, not one back
// home); it returns those that succeeded, and the zones' refusals of the others.
// A pass refused because the value changed (another stand-in was first, or the owner wrote it) is
// no error: the zone says who owns it now. Any other refusal (a rotated TSIG key, a role taken
// away: 403) leaves the name where it is, whole (the pass is one conditional write), and is
// tried again next round; it is announced once a round per zone (OwnershipPassRefused) and said
// in the region's status.
func (f *Loop) pass(ctx context.Context, cfg *clusterv1alpha1.DNSConfiguration, zones []failoverZone, passes []failover.Pass, takeover bool, reason, note string) (done []failover.Pass, refused []refusal) {
	ios := map[string]zoneIO{}
	for _, z := range zones {
		ios[z.controller] = z.io
	}
	for _, p := range passes {
		err := ios[p.Controller].Pass(ctx, p)
		a := announcedPass{pass: p, takeover: takeover, reason: reason, note: note}
		metrics.CountOwnershipWrite(p.Controller, ownershipResult(err))
		switch {
		case errors.Is(err, zonewriter.ErrChanged):
			continue
		case err != nil:
			ctrl.Log.WithName("failover").Error(err, "passing a name's ownership", "controller", p.Controller, "name", p.Hostname)
			refused = refusedOnce(refused, p, err)
			// A timeout may still land: the zones say next time (settleUnanswered).
			f.unanswered = append(slices.DeleteFunc(f.unanswered, func(u announcedPass) bool {
				return u.pass.Controller == p.Controller && u.pass.Hostname == p.Hostname
			}), a)
			continue
		}
		done = append(done, p)
		f.announce(ctx, cfg, a)
	}
	for _, r := range refused {
		f.recorder.Eventf(cfg, nil, "Warning", "OwnershipPassRefused", "Failover", "zone %s refused %d ownership write(s) of names of region %s this round, retried every round (the names stay where they are): %s",
			r.controller, r.names, r.region, r.err)
	}
	return done, refused
}

// ownershipResult is a conditional ownership write's result as
// service_router_failover_ownership_writes_total counts it.
func ownershipResult(err error) string {
	switch {
	case err == nil:
		return metrics.OwnershipPassed
	case errors.Is(err, zonewriter.ErrChanged):
		return metrics.OwnershipChanged
	default:
		return metrics.OwnershipRefused
	}
}

// announcedPass is an ownership write with how it is announced: the Event's reason and note (the
// name, zone, old owner, region and new owner), and whether it takes a lost region's name.
type announcedPass struct {
	pass         failover.Pass
	takeover     bool
	reason, note string
}

// announce records a pass that took effect: an Event on the DNSConfiguration, and the marks on
// this cluster's DNSEndpoint of the name (when it passed; for a takeover, from which region).
func (f *Loop) announce(ctx context.Context, cfg *clusterv1alpha1.DNSConfiguration, a announcedPass) {
	p := a.pass
	f.recorder.Eventf(cfg, nil, "Warning", a.reason, "Failover", a.note, p.Hostname, p.Controller, p.From, p.Region, p.To)
	marks := map[string]string{naming.AnnotationOwnershipPassed: f.now().UTC().Format(time.RFC3339), naming.AnnotationTakenFrom: ""}
	if a.takeover {
		marks[naming.AnnotationTakenFrom] = p.Region
	}
	f.mark(ctx, p.Namespace, p.Endpoint, marks)
}

// unansweredPasses are the passes whose writes got no definite answer yet.
func (f *Loop) unansweredPasses() []failover.Pass {
	out := make([]failover.Pass, len(f.unanswered))
	for i, u := range f.unanswered {
		out[i] = u.pass
	}
	return out
}

// settleUnanswered announces the unanswered passes the zones, read whole this round, show landed
// (a zone whose server resumed after the client gave up applies what it had received), forgets
// those they show did not, and returns the takeovers among the landed: without this, a name the
// zone moved would be served here with no mark, no Event and no count.
func (f *Loop) settleUnanswered(ctx context.Context, cfg *clusterv1alpha1.DNSConfiguration, landed, waiting []failover.Pass) (taken []failover.Pass) {
	var keep []announcedPass
	for _, u := range f.unanswered {
		switch {
		case slices.Contains(landed, u.pass):
			f.announce(ctx, cfg, u)
			if u.takeover {
				taken = append(taken, u.pass)
			}
		case slices.Contains(waiting, u.pass):
			keep = append(keep, u)
		}
	}
	f.unanswered = keep
	return taken
}

// refusal is what a zone refused of a round's ownership writes of one region's names: how many,
// and the first error.
type refusal struct {
	controller, region string
	names              int
	err                string
}

// refusedOnce counts p's refusal in refused, one entry per zone and region.
func refusedOnce(refused []refusal, p failover.Pass, err error) []refusal {
	for i := range refused {
		if refused[i].controller == p.Controller && refused[i].region == p.Region {
			refused[i].names++
			return refused
		}
	}
	// In a few words: Resource Manager's errors start with the request's URL, its status and code
	// come after (azureprivatedns.Classify).
	reason, _ := azureprivatedns.Classify(err)
	return append(refused, refusal{controller: p.Controller, region: p.Region, names: 1, err: decide.Truncate(reason, 300)})
}

// setRefusals records the round's refusals for the status (Regions); it reports whether which
// zones refuse how many writes changed (not the errors' words, which may name a request: the
// status is not written again every round for them).
// setUnreadable records why the zones whose last read or heartbeat write failed did not answer,
// for the status (Regions); it reports whether which zones those are changed (not the words).
func (f *Loop) setUnreadable(zones []failoverZone) bool {
	unreadable := map[string]string{}
	for _, z := range zones {
		if failure := f.zoneReads(z.controller).failure; failure != "" {
			unreadable[z.controller] = failure
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := !slices.Equal(slices.Sorted(maps.Keys(unreadable)), slices.Sorted(maps.Keys(f.unreadable)))
	f.unreadable = unreadable
	return changed
}

func (f *Loop) setRefusals(refused []refusal) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := !slices.EqualFunc(refused, f.refused, func(a, b refusal) bool {
		return a.controller == b.controller && a.region == b.region && a.names == b.names
	})
	f.refused = refused
	return changed
}

// writeMarks writes the DNSEndpoints' taken-from marks the round leaves out of date
// (failover.Marks): those of held takeovers whose DNSEndpoint lacks it, and those of names that
// went back.
func (f *Loop) writeMarks(ctx context.Context, names []failover.Name, returned []failover.Name, taken []failover.Pass) {
	f.mu.Lock()
	set, clear := failover.Marks(f.held, names, returned, taken)
	f.mu.Unlock()
	for _, n := range clear {
		f.mark(ctx, n.Namespace, n.Endpoint, map[string]string{naming.AnnotationTakenFrom: ""})
	}
	for _, p := range set {
		f.mark(ctx, p.Namespace, p.Endpoint, map[string]string{naming.AnnotationTakenFrom: p.Region})
	}
}

// mark sets the annotations of marks ("" removes one) on this cluster's DNSEndpoint of a name whose
// ownership passed: naming.AnnotationOwnershipPassed, the time of the pass, an update an ExternalDNS
// run with --events synchronises on within seconds instead of at its next interval (a minute by
// default); naming.AnnotationTakenFrom, the region a takeover took the name from, from which a
// later leader counts the takeovers that stand (failover.Standing). The DNSEndpoint is the
// operator's own (it was listed by the operator's labels); only these annotations change. A
// failed mark costs time, not correctness: the next interval synchronises anyway, and this
// leader remembers its takeovers.
func (f *Loop) mark(ctx context.Context, namespace, name string, marks map[string]string) {
	log := ctrl.Log.WithName("failover")
	cached := &externaldnsv1alpha1.DNSEndpoint{}
	if err := f.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cached); err != nil {
		log.Error(err, "reading the DNSEndpoint to mark a pass", "namespace", namespace, "name", name)
		return
	}
	if cached.Labels[naming.LabelManagedBy] != naming.ManagedByValue {
		return
	}
	annotations := maps.Clone(cached.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	for k, v := range marks {
		if v == "" {
			delete(annotations, k)
		} else {
			annotations[k] = v
		}
	}
	if maps.Equal(annotations, cached.Annotations) {
		return
	}
	ep := cached.DeepCopy()
	ep.Annotations = annotations
	// The resourceVersion read is the update's precondition: a conflict means the DNSEndpoint
	// changed meanwhile (that change is an update ExternalDNS reacts to); a taken-from mark still
	// missing is set again next round (remark).
	if err := f.writer.Update(ctx, ep); err != nil && !apierrors.IsConflict(err) {
		log.Error(err, "marking a pass on its DNSEndpoint", "namespace", namespace, "name", name)
	}
}

// earlierViews are the judgements the DNSConfiguration's status holds (an earlier leader's, or
// this one's own), by region: failover.Advance's earlier.
func earlierViews(cfg *clusterv1alpha1.DNSConfiguration) map[string]failover.RegionView {
	out := map[string]failover.RegionView{}
	for _, st := range cfg.Status.Failover {
		v := failover.RegionView{Judgement: failover.Judgement{State: failover.State(st.State), Reason: st.Reason, Message: st.Message}}
		if st.Since != nil {
			v.Since = st.Since.Time
		}
		out[st.Region] = v
	}
	return out
}

// probedOwn records a probe of this cluster's own gateway.
func (f *Loop) probedOwn(answered bool, now time.Time) {
	f.own = f.own.After(answered, now)
}

// remember records the round's judgements and takeovers; it reports whether the status changes.
func (f *Loop) remember(d failover.RoundOutput, taken []failover.Pass, readings []failover.ZoneReading, cfg *clusterv1alpha1.DNSConfiguration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := !f.judged
	f.judged = true
	// The readings are from before this round's passes: they judge the earlier ones only. A round
	// that read no zone knows no server: the attribution stays as the last reading said.
	if slices.ContainsFunc(readings, func(r failover.ZoneReading) bool { return r.Read }) {
		f.attribution.servers = failover.Servers(readings)
	}
	// The takeovers that stand (this leader's that the zones still say are ours, those the marks
	// say stand) and this round's.
	held := failover.Union(d.Held, taken)
	changed = changed || len(held) != len(f.held) || len(taken) > 0
	f.held = held
	f.regions = d.Views
	for _, c := range d.Changes {
		j := c.Judgement
		f.recorder.Eventf(cfg, nil, eventType(j.State), "Region"+string(j.State), "Failover", "region %s: %s (%s): %s", c.Region, j.State, j.Reason, j.Message)
	}
	return changed || d.ViewsChanged
}

func eventType(s failover.State) string {
	if s == failover.Serving || s == failover.Drained {
		return "Normal"
	}
	return "Warning"
}

// located records this cluster's name and the failover zones' regions, for Attribute.
func (f *Loop) located(cluster string, zones []failoverZone) {
	regions := make(map[string]string, len(zones))
	for _, z := range zones {
		regions[z.controller] = z.region
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attribution.cluster, f.attribution.zoneRegions = cluster, regions
}

// Attribute says who serves a failover zone's answer when it is not the zone's own region
// (failover.Attribute), "" otherwise or for other zones.
func (f *Loop) Attribute(controller, answer string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attribution.of(controller, answer)
}

func (f *Loop) attributionNow() attribution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attribution
}

// reattribute sends to be reconciled again every route whose answer in a zone the attribution
// now reports otherwise than before. A route's status says who serves its answer as its last
// reconcile saw it, and nothing else wakes it when only that changes: a new leader's routes are
// reconciled before its first round has read the heartbeats (they would say Drifted without
// naming who serves the name until the zone's answer next changed), and a cluster joining or
// leaving the zones changes who the answers name.
func (f *Loop) reattribute(ctx context.Context, before attribution) {
	after := f.attributionNow()
	if f.observed == nil || f.routeChanges == nil || before.equal(after) {
		return
	}
	// Every zone either attribution knows, each once.
	controllers := map[string]bool{}
	for c := range before.zoneRegions {
		controllers[c] = true
	}
	for c := range after.zoneRegions {
		controllers[c] = true
	}
	for controller := range controllers {
		for k, o := range f.observed.Routes(controller) {
			if before.of(controller, o.Answer) == after.of(controller, o.Answer) {
				continue
			}
			select {
			case f.routeChanges <- event.GenericEvent{Object: &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// forget drops every view when no zone has failover settings.
func (f *Loop) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attribution, f.drain, f.forms = attribution{}, decide.Drain{}, formView{}
	f.reads, f.beatsSeen, f.unanswered, f.forming = map[string]*zoneReads{}, failover.Observations{}, nil, map[string]bool{}
	if !f.judged || len(f.regions) > 0 {
		f.judged = true
		f.regions = map[string]failover.RegionView{}
		select {
		case f.changes <- event.GenericEvent{Object: &clusterv1alpha1.DNSConfiguration{}}:
		default:
		}
	}
}
