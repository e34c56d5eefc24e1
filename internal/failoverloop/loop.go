// Package failoverloop runs regional failover (docs/ARCHITECTURE.md#regional-failover-design):
// the leader drives internal/failover's Machine, which decides everything (when to write this
// cluster's heartbeat, what to read of the zones with failover settings, which region to probe
// and to judge lost, which names to pass to this cluster's own ExternalDNS instances), and does
// what it says: the cluster's objects, the zones (internal/zonewriter), the probes, the clock.
// Nothing happens without a zone with failover settings, and nothing moves for a route whose
// DNSPolicy lists no stand-ins: the seed's model is untouched. What it concludes is reported
// through the DNSConfiguration's status (its reconciler reads Regions and Drain) and Events.
//
// It sits beside internal/failover, not in it, so that the pure package imports nothing that does
// I/O; the controllers construct it (controllers/setup.go) and read its view through a small
// interface.
package failoverloop

import (
	"context"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/verify"
)

// Defaults of DNSConfiguration.spec.failover.
const (
	defaultProbePort         = 443
	defaultProbeInterval     = 5 * time.Second
	defaultHeartbeatInterval = 10 * time.Second
	// probeTimeout bounds one TCP connection attempt to a gateway address.
	probeTimeout = 2 * time.Second
)

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

	// machine decides; only the round's goroutine uses it. ios are the zones' readers and writers.
	machine *failover.Machine
	ios     map[string]cachedIO

	// view is what the machine last concluded, for the other goroutines (Regions, Drain, Forms,
	// Attribute).
	mu   sync.Mutex
	view failover.View

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

// New is the loop of the cluster c reads (DNSEndpoints) and writes (the marks of a pass on its own
// DNSEndpoints), reads the singletons and policies from, and whose DNSConfiguration recorder
// announces passes and judgements on. observed and routeChanges are publication verification's
// routes and where a route whose answer is attributed otherwise is sent to be reconciled again
// (both nil: nothing is sent). clockOffset runs the loop's clock this far off the node's: a fault
// the tests inject, zero in any real cluster.
func New(c client.Client, cluster Reads, recorder events.EventRecorder, observed RouteObservations, routeChanges chan<- event.GenericEvent, clockOffset time.Duration) *Loop {
	f := &Loop{cluster: cluster, recorder: recorder, changes: make(chan event.GenericEvent, 1), probe: dialProbe, now: time.Now,
		machine: failover.NewMachine(), ios: map[string]cachedIO{}, observed: observed, routeChanges: routeChanges}
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

// round is one round: what the cluster says, then what the machine asks for until it is done,
// then what it concluded. It returns the time until the next.
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
	zones := f.zones(cfg, identity.Spec.Domain)
	if len(zones) == 0 {
		f.publish(f.machine.Forget(), f.machine.View())
		return s.ProbeInterval
	}
	start, err := f.start(ctx, cfg, identity, zones, s)
	if err != nil {
		log.Error(err, "listing this cluster's gateway address DNSEndpoints; nothing moves this round")
		return s.ProbeInterval
	}
	rd := f.machine.Begin(start)
	for !rd.Done {
		rd = f.machine.Advance(f.carryOut(ctx, identity, zones, s.probePort, rd))
	}
	f.conclude(ctx, cfg, identity, zones, rd.Outcome)
	return s.ProbeInterval
}

// publish makes view what the other goroutines see, and wakes the DNSConfiguration reconciler when
// the status it says changed.
func (f *Loop) publish(changed bool, view failover.View) {
	f.mu.Lock()
	f.view = view
	f.mu.Unlock()
	if !changed {
		return
	}
	select {
	case f.changes <- event.GenericEvent{Object: &clusterv1alpha1.DNSConfiguration{}}:
	default:
	}
}

// settings of one round: the machine's, and the port gateways are probed on.
type settings struct {
	failover.MachineSettings
	probePort string
}

func failoverSettingsOf(cfg *clusterv1alpha1.DNSConfiguration) settings {
	s := settings{probePort: strconv.Itoa(defaultProbePort), MachineSettings: failover.MachineSettings{ProbeInterval: defaultProbeInterval,
		HeartbeatInterval: defaultHeartbeatInterval, SettledInterval: verify.DefaultSettings.SettledInterval, Judge: failover.DefaultSettings}}
	// The readers' bound on how long a heartbeat vouches (failover.Settings.MaxInterval) starts
	// from the interval the fleet is configured with, not from what any heartbeat states.
	s.Judge.HeartbeatInterval = s.HeartbeatInterval
	// A drain ended while the Drained condition is still set: the names come back.
	s.Returning = meta.FindStatusCondition(cfg.Status.Conditions, clusterv1alpha1.ConditionDrained) != nil
	f := cfg.Spec.Failover
	if f == nil {
		return s
	}
	if f.ProbePort != nil {
		s.probePort = strconv.Itoa(int(*f.ProbePort))
	}
	if f.ProbeInterval != nil && f.ProbeInterval.Duration > 0 {
		s.ProbeInterval = f.ProbeInterval.Duration
	}
	if f.HeartbeatInterval != nil && f.HeartbeatInterval.Duration > 0 {
		s.HeartbeatInterval = f.HeartbeatInterval.Duration
		s.Judge.HeartbeatInterval = s.HeartbeatInterval
	}
	if f.FailureThreshold != nil {
		s.Judge.FailureThreshold = int(*f.FailureThreshold)
	}
	if f.HeartbeatStaleAfter != nil && f.HeartbeatStaleAfter.Duration > 0 {
		s.Judge.HeartbeatStaleAfter = f.HeartbeatStaleAfter.Duration
	}
	if f.FailbackAfter != nil && f.FailbackAfter.Duration > 0 {
		s.Judge.FailbackAfter = f.FailbackAfter.Duration
	}
	s.Drain = f.Drain
	s.Returning = s.Returning && !f.Drain
	return s
}
