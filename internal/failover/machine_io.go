package failover

import "time"

// MachineZone is a zone with failover settings as this cluster takes part in it: its controller,
// region and apex; Transferred says it is read whole by zone transfer (RFC 2136), not through
// Resource Manager; Owner and TXTPrefix are this cluster's ExternalDNS owner ID and TXT prefix
// there.
type MachineZone struct {
	Controller, Region, Zone string
	Transferred              bool
	Owner, TXTPrefix         string
}

// label is a reading of the zone with what this cluster knows of it.
func (z MachineZone) label(r ZoneReading) ZoneReading {
	r.Controller, r.Region, r.Owner, r.TXTPrefix = z.Controller, z.Region, z.Owner, z.TXTPrefix
	return r
}

// MachineSettings are one round's settings, from DNSConfiguration.spec.failover: Drain is
// spec.failover.drain, Returning says a drain ended while names were away (they come back);
// SettledInterval is publication verification's settled listing interval (DefaultReadSettings).
type MachineSettings struct {
	ProbeInterval, HeartbeatInterval, SettledInterval time.Duration
	Judge                                             Settings
	Drain, Returning                                  bool
}

// RoundStart is what the loop read of the cluster for a round.
type RoundStart struct {
	Now          time.Time
	Cluster, Own string
	Zones        []MachineZone
	Settings     MachineSettings
	// Targets and Addresses are this cluster's gateway target hostnames and their load balancer
	// addresses.
	Targets, Addresses []string
	// Names are the names this cluster publishes under policies with stand-ins (nil when they
	// could not be listed: nothing passes on them).
	Names []Name
	// Publishing says, by controller, how the routes of failover policies publish into the zone.
	Publishing map[string]Publishing
	// Earlier are the judgements the DNSConfiguration's status holds, by region (Advance).
	Earlier map[string]RegionView
	// Listed are whole readings publication verification made of zones read through Resource
	// Manager since the last round, by controller, and when each started.
	Listed map[string]Listing
}

// Publishing is how the routes of failover policies publish into one zone: Forming, one publishes
// its intermediate beside its name, not yet through it; NewestCreated, when the newest of their
// DNSEndpoints was created.
type Publishing struct {
	Forming       bool
	NewestCreated time.Time
}

// Listing is a zone read whole by someone else, and when that read started.
type Listing struct {
	Reading ZoneReading
	Started time.Time
}

// Ready is what to do next. The loop does all of it, in this order: publish View, remove the
// legacy heartbeats, probe this cluster's gateway, write the heartbeats, read the zones, probe the
// regions, pass the names; and gives Advance the answers, each list in the order asked.
type Ready struct {
	// Publish is a View to make what others see before anything else is done.
	Publish *View
	// Removals are the zones (indexes into RoundStart.Zones) to remove this cluster's heartbeat
	// under its earlier name from.
	Removals []int
	// ProbeOwn are this cluster's gateway addresses: does any answer?
	ProbeOwn   []string
	Heartbeats []HeartbeatWrite
	Reads      []ZoneRead
	// Skipped are zones a read was due in, left out because they did not answer lately.
	Skipped []SkippedZone
	// Probes are the other regions' gateway addresses: does any of each region's answer?
	Probes []RegionProbe
	Passes []PassWrite
	// Upkeep are the writes that keep this cluster's intermediate names (Upkeeps), made after the
	// passes; their answers come back in Answers.Upkeep.
	Upkeep []UpkeepWrite
	// Done ends the round, with what it concluded.
	Done    bool
	Outcome Outcome
}

// HeartbeatWrite is this cluster's heartbeat value to write into a zone.
type HeartbeatWrite struct {
	Zone  int
	Value string
}

// ZoneRead is a read of a zone: whole (Full) or its heartbeats only, Known the heartbeat names
// earlier readings showed (for a reader that asks for each by name).
type ZoneRead struct {
	Zone  int
	Full  bool
	Known []string
}

// SkippedZone is a zone left out of a round's reads until Until, because of Err.
type SkippedZone struct {
	Controller string
	Until      time.Time
	Err        error
}

// RegionProbe is a region's gateway addresses to probe.
type RegionProbe struct {
	Region    string
	Addresses []string
}

// PassWrite is an ownership write: Takeover says it takes a lost (or drained) region's name, not
// one back home.
type PassWrite struct {
	Pass     Pass
	Takeover bool
}

// Answers are what the loop found doing a Ready, each list in the order the Ready asked.
type Answers struct {
	Removals   []error
	OwnAnswers bool
	Heartbeats []ZoneAnswer
	Reads      []ReadAnswer
	// Probes say, by region, whether any address answered.
	Probes map[string]bool
	Passes []PassAnswer
	// Upkeep are the errors of the upkeep writes (nil: done): nothing is kept of them, the next
	// whole reading says what to write.
	Upkeep []error
}

// ZoneAnswer is how a zone answered a request tried from Started, its answer (or its timeout)
// come at Finished: Err nil when it succeeded; Silent when it did not answer at all; Throttled
// when Resource Manager throttled it; Reason its failure in a few words.
type ZoneAnswer struct {
	Err               error
	Silent, Throttled bool
	Reason            string
	Started, Finished time.Time
}

// ReadAnswer is a zone's answer to a read, and what it read.
type ReadAnswer struct {
	ZoneAnswer
	Reading ZoneReading
}

// PassAnswer is a zone's answer to an ownership write at At: Changed when the value had changed
// (another stand-in was first, or the owner wrote it: no error, the zone says who owns it now);
// Err any other refusal, Reason it in a few words.
type PassAnswer struct {
	Changed bool
	Err     error
	Reason  string
	At      time.Time
}

// Outcome is what a round concluded: Events to announce on the DNSConfiguration, Marks to write
// on this cluster's DNSEndpoints, the View to publish (Changed: the status it says changed), and
// the zones whose whole reading changed since the routes' forms were last checked against it.
type Outcome struct {
	Events         []Event
	Marks          []Mark
	View           View
	Changed        bool
	FormsChangedIn []string
}

// Event is an Event to announce on the DNSConfiguration.
type Event struct {
	Warning         bool
	Reason, Message string
}

// Mark is what to set on this cluster's DNSEndpoint of a name (naming.AnnotationOwnershipPassed
// and naming.AnnotationTakenFrom): when its ownership passed (zero: leave it), and the region a
// takeover took it from ("": none, removed).
type Mark struct {
	Namespace, Endpoint string
	PassedAt            time.Time
	TakenFrom           string
}
