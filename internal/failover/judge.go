// Package failover holds the decisions of regional failover (docs/ARCHITECTURE.md#regional-failover-design),
// as pure functions of what one cluster observes: whether another region is lost, which stand-in
// takes its names, when they may go back, and the one write into a zone that passes a name's
// ownership. Nothing here reads or writes anything; the operator's probes, zone readings and zone
// writer feed and carry out these decisions.
package failover

import (
	"fmt"
	"strings"
	"time"
)

// Settings are the thresholds of the decisions.
type Settings struct {
	// FailureThreshold is how many of this cluster's probes of a region's gateway must fail in a
	// row before the region is unreachable from here.
	FailureThreshold int
	// HeartbeatStaleAfter is how old a region's heartbeat in a zone may be before it no longer
	// vouches for the region.
	HeartbeatStaleAfter time.Duration
	// FailbackAfter is how long a lost region's heartbeat must have been fresh and healthy in a
	// majority of its zones before its names go back automatically.
	FailbackAfter time.Duration
	// HeartbeatInterval is the configured heartbeatInterval, the interval a writer states when its
	// fleet is small (HeartbeatInterval). Zero when not given: HeartbeatStaleAfter then stands for
	// it, the longest any writer configured like this cluster may state (a DNSConfiguration's
	// heartbeatInterval must be shorter than its heartbeatStaleAfter).
	HeartbeatInterval time.Duration
}

// MaxInterval is the longest interval a heartbeat's writer may legitimately state, as this cluster
// computes it from its own settings and its own count of the fleet (f, Heartbeat.Fleet): the
// writers' rule (HeartbeatInterval) applied to a quarter more clusters than it counts, and at least
// two more (Fleet.withMargin), in every zone it reads. How long a heartbeat vouches for its writer
// must not be the writer's to say alone: a heartbeat stating an interval of a year (a bug, a
// hand edit, another version) would keep a region that stopped writing fresh, and so never lost,
// however dead. Beyond this bound the stated interval is read as the bound (StaleAfter), and the
// judgement says so (overstated).
func (s Settings) MaxInterval(f Fleet) time.Duration {
	floor, _ := s.intervalFloor()
	return HeartbeatInterval(floor, f.withMargin(), f.Zones, HeartbeatWritesPerMinute)
}

// intervalFloor is the interval MaxInterval starts from, and the setting it comes from.
func (s Settings) intervalFloor() (time.Duration, string) {
	if s.HeartbeatInterval > 0 {
		return s.HeartbeatInterval, "heartbeatInterval"
	}
	return s.HeartbeatStaleAfter, "heartbeatStaleAfter"
}

// explainBound says how MaxInterval(f) is computed, for a status message.
func (s Settings) explainBound(f Fleet) string {
	floor, setting := s.intervalFloor()
	if f.Zones == 0 {
		return fmt.Sprintf("%s (%s); no fleet counted", setting, floor)
	}
	return fmt.Sprintf("the longer of %s (%s) and %d clusters × %d zones / %d writes a minute (%d clusters counted in the zones, with a margin for writers that count more)",
		setting, floor, f.withMargin(), f.Zones, HeartbeatWritesPerMinute, f.Clusters)
}

// StaleAfter is how old a heartbeat may be before it no longer vouches for its region:
// HeartbeatStaleAfter, or StaleIntervals of the interval its writer states when that is longer (a
// fleet whose heartbeats are spaced to fit Resource Manager's write budget: HeartbeatInterval),
// the stated interval believed up to MaxInterval only. Capping before multiplying also keeps an
// interval near the largest time.Duration from overflowing.
func (s Settings) StaleAfter(b Heartbeat) time.Duration {
	return max(s.HeartbeatStaleAfter, StaleIntervals*min(b.Interval, s.MaxInterval(b.Fleet)))
}

// StaleBound is the longest any heartbeat vouches for its writer, whatever it states, for a reader
// that counts the fleet f: StaleAfter of a heartbeat stating an interval beyond MaxInterval. A
// region whose clusters all stopped writing (and whose probes fail) is Lost at most StaleBound
// after this cluster first saw their last values, give or take a reading (freshnessAt).
func (s Settings) StaleBound(f Fleet) time.Duration {
	return max(s.HeartbeatStaleAfter, StaleIntervals*s.MaxInterval(f))
}

// DefaultSettings are the design's defaults: 3 probes (5 s apart), a heartbeat refreshed every
// 10 s and stale after 30 s, failback after 5 minutes of health.
var DefaultSettings = Settings{FailureThreshold: 3, HeartbeatStaleAfter: 30 * time.Second, FailbackAfter: 5 * time.Minute}

// Probes is the run of this cluster's latest probes of a region's gateway data plane (the
// published address, on the listener's port): how many failed in a row, or succeeded in a row
// (one of the two is 0).
type Probes struct {
	Failures, Successes int
}

// After is the run after one more probe: a failure ends a run of successes and the reverse, so a
// gateway that answers every other probe never reaches a threshold either way.
func (p Probes) After(answered bool) Probes {
	if answered {
		return Probes{Successes: p.Successes + 1}
	}
	return Probes{Failures: p.Failures + 1}
}

// Heartbeat is what one zone says of a region: the heartbeat record its operator refreshes there.
type Heartbeat struct {
	Zone string
	// Read is false when the zone could not be read: it then says nothing, either way.
	Read bool
	// Found is false when the zone holds no heartbeat of the region.
	Found bool
	// At is the time the region's operator wrote into the heartbeat.
	At time.Time
	// GatewayAnswers is the region's own probe of its own gateway, as the heartbeat says.
	GatewayAnswers bool
	// Draining says the cluster asks for its region's names to move to their stand-ins, its
	// gateway answering or not (its DNSConfiguration's spec.failover.drain).
	Draining bool
	// Cluster is the cluster that wrote it (from the record's name).
	Cluster string
	// Owner is the ExternalDNS owner ID of the region's instance for the zone.
	Owner string
	// Targets are the region's gateway target hostnames, whose addresses the zone publishes.
	Targets []string
	// Addresses are those targets' addresses as the cluster that wrote the heartbeat knows them
	// (empty in heartbeats of earlier development builds: the zone's address records then say).
	Addresses []string
	// Legacy says the heartbeat was found under LegacyHeartbeatName.
	Legacy bool
	// Interval is how often its cluster writes it, as the heartbeat states (0 when it does not
	// say); readers believe it up to Settings.MaxInterval.
	Interval time.Duration
	// Fleet is the fleet as the reader counted it when it observed this heartbeat
	// (Observations.Observe): it bounds the Interval believed. It travels with the heartbeat
	// because the judgements (Witness, JudgeRegion) see the heartbeats, not the readings they
	// came in; zero when not followed, and the bound is then the settings' alone.
	Fleet Fleet
	// Observed is when the reader first saw this value, on its own clock (Observations.Observe);
	// zero when not followed: At, the writer's clock, then says how old it is.
	Observed time.Time
	// SeenChanging says the reader saw this value replace an earlier one: its writer wrote it
	// when the reader's clock said Observed (give or take a reading), whatever the writer's says.
	SeenChanging bool
	// Malformed is the value (cut) of a record under the heartbeat's name that is not a heartbeat
	// (ParseHeartbeat); Found is then false. It is neither fresh nor stale: the zone says nothing
	// of the region unless another of its clusters' heartbeats there is fresh (Witness).
	Malformed string
}

// freshness is what a heartbeat proves of its writer at a moment.
type freshness int

const (
	fresh freshness = iota
	stale
	// pending: the reader has not yet followed it long enough to tell (see freshnessAt).
	pending
)

// freshnessAt says whether a heartbeat vouches for its writer at now. One the reader follows is
// stale when its value has not changed for staleAfter on the reader's clock, and fresh when the
// reader saw it change since. A value seen for the first time (a leader that just started, a
// cluster that just joined) proves nothing on the reader's clock yet: the writer's clock then
// decides that it is fresh, never that it is stale (the writer's clock may be behind), so a value
// that clock calls stale is pending until the reader's own clock tells, staleAfter later.
func (b Heartbeat) freshnessAt(now time.Time, staleAfter time.Duration) freshness {
	switch {
	case b.Observed.IsZero():
		if now.Sub(b.At) > staleAfter {
			return stale
		}
		return fresh
	case now.Sub(b.Observed) > staleAfter:
		return stale
	case b.SeenChanging || now.Sub(b.At) <= staleAfter:
		return fresh
	default:
		return pending
	}
}

// vouchesMore says b says more for its region at now than o: it is fresher (fresh, then pending,
// then stale), or as fresh and newer. Of a region's clusters, a dead one's heartbeat met for the
// first time is not preferred to a live one's seen changing before it.
func (b Heartbeat) vouchesMore(o Heartbeat, now time.Time, s Settings) bool {
	rank := func(h Heartbeat) int {
		switch h.freshnessAt(now, s.StaleAfter(h)) {
		case fresh:
			return 2
		case pending:
			return 1
		}
		return 0
	}
	if rb, ro := rank(b), rank(o); rb != ro {
		return rb > ro
	}
	return b.newerThan(o)
}

// newerThan says b is a newer sign of life than o: seen changing later when the reader follows
// both (their writers' clocks may differ), else written later.
func (b Heartbeat) newerThan(o Heartbeat) bool {
	if !b.Observed.IsZero() && !o.Observed.IsZero() {
		return b.Observed.After(o.Observed)
	}
	return b.At.After(o.At)
}

// State is what this cluster concludes of a region.
type State string

const (
	// Serving: its gateway answers this cluster's probes.
	Serving State = "Serving"
	// Unreachable: its gateway does not answer from here, but the zones do not say it is lost (a
	// partition, or not enough zones read): nothing moves.
	Unreachable State = "Unreachable"
	// Lost: its gateway does not answer from here, and the zones, as witness, agree.
	Lost State = "Lost"
	// Drained: its cluster asks, in its heartbeat, for its names to move to their stand-ins (a
	// planned failover, for maintenance): they move as from a lost region, and go back when the
	// drain ends.
	Drained State = "Drained"
)

// MovesNames says a region in state s gives its names to their stand-ins.
func (s State) MovesNames() bool { return s == Lost || s == Drained }

// ReasonDrainRequested is the reason of Drained.
const ReasonDrainRequested = "DrainRequested"

// ReasonWitnessPending is the reason of a judgement this cluster cannot make yet: its heartbeats
// are too new to it to say whether their writers still write (Heartbeat.freshnessAt). It keeps a
// region judged lost as it is.
const ReasonWitnessPending = "WitnessPending"

// Judgement is the conclusion with its reason (CamelCase, for conditions and events) and a
// message a platform admin can act on.
type Judgement struct {
	State   State
	Reason  string
	Message string
}

// JudgeRegion decides whether a region is lost, from this cluster's probes of its gateway and its
// heartbeats in the zones. A region is lost only on a definite answer: the probes failed
// FailureThreshold times in a row, and either a majority of all the zones were read and hold no
// fresh heartbeat of it (its operator cannot reach them, or is gone), or its newest fresh
// heartbeat says its own gateway does not answer its own probes (it is alive and agrees). A zone
// that could not be read counts for neither, so unreadable zones keep the region where it is.
// With the network between two clusters cut but the zones reachable from both, each finds the
// other's heartbeat fresh and healthy: neither is lost.
//
// A region whose newest heartbeat known (read this round or before) asks for a drain is Drained
// whatever the probes say: its cluster's own word is a definite answer, and it stands until a
// newer heartbeat says otherwise (a drained cluster that then stops keeps its names away).
//
// A heartbeat stating an interval beyond what this cluster allows (Settings.MaxInterval) is judged
// as if it stated the bound, and the message names it, whatever the judgement: its writer
// misbehaves, and a platform admin should hear of it before it matters.
func JudgeRegion(now time.Time, probes Probes, beats []Heartbeat, s Settings) Judgement {
	j := judgeRegion(now, probes, beats, s)
	if note := overstated(beats, s); note != "" {
		j.Message += "; " + note
	}
	return j
}

// overstated names the heartbeats of beats that state an interval beyond Settings.MaxInterval,
// and what they are judged by instead, once per cluster and interval (a writer states the same in
// every zone); "" when none does.
func overstated(beats []Heartbeat, s Settings) string {
	type writer struct {
		cluster  string
		interval time.Duration
		fleet    Fleet
	}
	var order []writer
	zones := map[writer][]string{}
	for _, b := range beats {
		if b.Found && b.Interval > s.MaxInterval(b.Fleet) {
			w := writer{b.Cluster, b.Interval, b.Fleet}
			if zones[w] == nil {
				order = append(order, w)
			}
			zones[w] = append(zones[w], b.Zone)
		}
	}
	notes := make([]string, 0, len(order))
	for _, w := range order {
		bound := s.MaxInterval(w.fleet)
		notes = append(notes, fmt.Sprintf("cluster %s's heartbeat in %s states interval=%s, longer than any writer may state here (%s: %s), so it is read as %s and vouches for %s at most",
			w.cluster, strings.Join(zones[w], ", "), w.interval, bound, s.explainBound(w.fleet), bound, s.StaleAfter(Heartbeat{Interval: w.interval, Fleet: w.fleet})))
	}
	return strings.Join(notes, "; ")
}

// judgeRegion is JudgeRegion before the note on overstated intervals.
func judgeRegion(now time.Time, probes Probes, beats []Heartbeat, s Settings) Judgement {
	if d := newestKnown(beats); d != nil && d.Draining {
		return Judgement{Drained, ReasonDrainRequested, fmt.Sprintf("cluster %s asks for its region's names to move to their stand-ins (its DNSConfiguration's spec.failover.drain; its heartbeat in %s, %s)",
			d.Cluster, d.Zone, d.At.UTC().Format(time.RFC3339))}
	}
	if m := malformedOnly(beats); m != nil {
		return Judgement{Unreachable, ReasonHeartbeatMalformed, fmt.Sprintf("no zone holds a heartbeat of it this cluster can read: %s; nothing moves on it (the zones' heartbeats give the addresses to probe too)", m.describe())}
	}
	if probes.Failures < s.FailureThreshold {
		return Judgement{Serving, "GatewayAnswers", fmt.Sprintf("its gateway answers this cluster's probes (%d failed in a row, %d needed)", probes.Failures, s.FailureThreshold)}
	}
	var stales, unread, pendings int
	var newest, malformed *Heartbeat
	for i, b := range beats {
		switch {
		case !b.Read:
			unread++
		case b.Malformed != "":
			malformed = &beats[i]
		case !b.Found:
			stales++
		default:
			switch b.freshnessAt(now, s.StaleAfter(b)) {
			case stale:
				stales++
			case pending:
				pendings++
			default:
				if newest == nil || b.newerThan(*newest) {
					newest = &beats[i]
				}
			}
		}
	}
	seen := fmt.Sprintf("%d probes of its gateway failed in a row; of %d zones, %d hold no fresh heartbeat of it and %d could not be read",
		probes.Failures, len(beats), stales, unread)
	if pendings > 0 {
		seen += fmt.Sprintf("; %d hold a heartbeat this cluster has not yet followed long enough to tell", pendings)
	}
	if malformed != nil {
		seen += "; " + malformed.describe() + ", which counts for neither"
	}
	switch {
	case len(beats) > 0 && stales >= len(beats)/2+1:
		return Judgement{Lost, "HeartbeatStale", seen}
	case newest != nil && !newest.GatewayAnswers:
		return Judgement{Lost, "GatewayDown", seen + fmt.Sprintf("; its heartbeat in %s (%s) says its gateway does not answer its own probes", newest.Zone, newest.At.UTC().Format(time.RFC3339))}
	case newest != nil:
		return Judgement{Unreachable, "WitnessSaysAlive", seen + fmt.Sprintf("; its heartbeat in %s (%s) says its gateway answers: a partition between the clusters, not a loss", newest.Zone, newest.At.UTC().Format(time.RFC3339))}
	case pendings > 0:
		return Judgement{Unreachable, ReasonWitnessPending, seen + "; its clock and this cluster's may differ, so nothing moves until this cluster's own clock tells"}
	case malformed != nil:
		return Judgement{Unreachable, ReasonHeartbeatMalformed, seen + "; too few zones say anything to decide, so nothing moves"}
	default:
		return Judgement{Unreachable, "WitnessUnreadable", seen + "; too few zones read to decide, so nothing moves"}
	}
}

// ReasonHeartbeatMalformed is the reason of a judgement that records under a region's heartbeat
// names which are not heartbeats (a hand edit, another tool, a later version's format) keep from
// being made: nothing moves on them.
const ReasonHeartbeatMalformed = "HeartbeatMalformed"

// malformedOnly is a malformed heartbeat of beats when no zone holds a well-formed one of the
// region: this cluster then knows nothing of it, not even where its gateway is.
func malformedOnly(beats []Heartbeat) *Heartbeat {
	var m *Heartbeat
	for i, b := range beats {
		switch {
		case b.Found:
			return nil
		case b.Malformed != "" && m == nil:
			m = &beats[i]
		}
	}
	return m
}

// describe says where a malformed heartbeat is, for a status message.
func (b Heartbeat) describe() string {
	return fmt.Sprintf("zone %s holds a record under cluster %s's heartbeat name that is not a heartbeat (%s)", b.Zone, b.Cluster, b.Malformed)
}

// newestKnown is the newest heartbeat found in beats, read this round or not; nil when none is.
func newestKnown(beats []Heartbeat) *Heartbeat {
	var newest *Heartbeat
	for i, b := range beats {
		if b.Found && (newest == nil || b.newerThan(*newest)) {
			newest = &beats[i]
		}
	}
	return newest
}

// MayFailBack reports whether a lost region's names may go back: its heartbeat has been fresh and
// healthy in a majority of its zones since healthySince (the caller's memory of when that began;
// zero when it is not so now), for at least FailbackAfter, and its gateway answers this cluster.
func MayFailBack(now, healthySince time.Time, probes Probes, s Settings) bool {
	return !healthySince.IsZero() && now.Sub(healthySince) >= s.FailbackAfter && probes.Successes >= s.FailureThreshold
}

// StandIn returns the region that takes a lost region's names: the first of the policy's
// stand-ins, in its order, that is serving (neither lost nor the lost region itself), or "" when
// none is.
func StandIn(lost string, standIns []string, states map[string]State) string {
	for _, region := range standIns {
		if region != lost && states[region] == Serving {
			return region
		}
	}
	return ""
}
