package failover

import (
	"slices"
	"time"
)

// What a round reads of a zone, and how often. Reading a zone whole (every record set, for the
// ownership records) costs one request per 1,000 record sets on Resource Manager, and a zone
// transfer on RFC 2136; reading its heartbeats costs one request (one name-suffix listing) or one
// query per cluster. Neither is needed every probe interval while every region answers this
// cluster's probes: JudgeRegion calls a region Serving on its probes alone. So a zone is read
// when a decision needs it, not at the probe rate:
//   - its heartbeats (the witness) every round while any region's probes are failing, so that a
//     region is never judged on heartbeats older than this round, and otherwise every
//     WitnessInterval, to learn of new clusters, their addresses and who serves what;
//   - whole every round while it holds a name this cluster may pass now (a takeover candidate of
//     a lost region, or a name of its own to take back), every InPlayInterval while it holds a
//     name this cluster took or marked (to count them and to see them go back), and otherwise
//     every FullInterval.

// ReadSettings are the intervals of ReadPlan.
type ReadSettings struct {
	// WitnessInterval is how often a zone's heartbeats are read while every region answers.
	WitnessInterval time.Duration
	// FullInterval is how often a zone is read whole when it holds nothing this cluster passes or
	// took.
	FullInterval time.Duration
	// InPlayInterval is how often a zone is read whole while it holds names this cluster took.
	InPlayInterval time.Duration
}

// DefaultReadSettings: at rest, the heartbeats every heartbeatStaleAfter (30 s by default: a
// new cluster is known, and probed, within it) and the whole zone a heartbeat reading after
// publication verification's latest settled listing (verificationSettled + 10 % jitter): where
// verification lists the zone (Azure), failover takes that listing as its whole reading
// (failoverloop.Loop.Listed) and reads the zone whole itself only when verification did not;
// the whole zone every heartbeatStaleAfter while names are held.
func DefaultReadSettings(heartbeatStaleAfter, verificationSettled time.Duration) ReadSettings {
	return ReadSettings{WitnessInterval: heartbeatStaleAfter, FullInterval: verificationSettled*11/10 + heartbeatStaleAfter, InPlayInterval: heartbeatStaleAfter}
}

// Interest is how much this cluster's decisions need a zone's ownership records now.
type Interest int

const (
	// AtRest: nothing this cluster took or may pass is in the zone.
	AtRest Interest = iota
	// Holding: the zone holds names this cluster took (its leader's record, or the DNSEndpoints'
	// marks): read often enough to see them go back.
	Holding
	// Passing: the zone holds a name this cluster may pass this round: a takeover candidate of a
	// lost region, or a name of its own region to take back.
	Passing
)

// ZoneReads is when a zone was last read, whole and its heartbeats (zero: not by this leader).
type ZoneReads struct {
	Full, Witness time.Time
}

// Read is what a round reads of one zone.
type Read struct {
	// Witness: the heartbeats; Full: every record set (the heartbeats included).
	Witness, Full bool
}

// ReadPlan decides what a round reads of one zone: suspect says some region's probes are failing
// (one failure in a row is enough), interest how much the zone's ownership records matter.
func ReadPlan(now time.Time, last ZoneReads, suspect bool, interest Interest, s ReadSettings) Read {
	due := func(at time.Time, interval time.Duration) bool { return at.IsZero() || now.Sub(at) >= interval }
	full := due(last.Full, s.FullInterval) || interest == Passing || (interest == Holding && due(last.Full, s.InPlayInterval))
	if full {
		return Read{Witness: true, Full: true}
	}
	return Read{Witness: suspect || due(last.Witness, s.WitnessInterval)}
}

// Interests are what decides how much this cluster needs each zone's ownership records
// (ZoneInterest).
type Interests struct {
	// Own is this cluster's region; Judged the regions as last judged.
	Own    string
	Judged map[string]Judgement
	// Names are the names this cluster stands in for (Takeovers' and Reclaims' names); Held the
	// takeovers this leader holds.
	Names []Name
	Held  []Pass
	// MayReclaim is MayFailBack's answer for this cluster now (Reclaims' healthy).
	MayReclaim bool
	// Forming are the zones (by controller) where a name of this cluster waits for a reading to go
	// through its intermediate: published beside it, not yet through it, or published since the
	// zone's last whole reading (its form came from nothing newer; FormIn).
	Forming map[string]bool
}

// ZoneInterest is how much this cluster needs the ownership records of a zone, from its last whole
// reading (whole, labelled with its controller, region and owner): Passing when that reading holds
// a name this cluster would pass now (Takeovers of a region judged Lost, or, its failback allowed
// now, Reclaims); Holding when this cluster holds or marked a name there, when a region judged
// Lost has names there this cluster stands in for first (new ones may come), when a name of its
// own is held there by a stand-in (its failback not allowed yet), or when a name waits for a
// reading to go through its intermediate (Forming: an upgrade takes a reading, not six minutes);
// AtRest otherwise.
func (in Interests) ZoneInterest(whole ZoneReading) Interest {
	zone := []ZoneReading{whole}
	if len(Takeovers(in.Own, in.Judged, zone, in.Names)) > 0 || (in.MayReclaim && len(Reclaims(in.Own, true, zone, in.Names)) > 0) {
		return Passing
	}
	if len(Reclaims(in.Own, true, zone, in.Names)) > 0 || slices.ContainsFunc(in.Held, func(p Pass) bool { return p.Controller == whole.Controller }) ||
		in.Forming[whole.Controller] {
		return Holding
	}
	states := make(map[string]State, len(in.Judged))
	for region, j := range in.Judged {
		states[region] = j.State
	}
	for _, n := range in.Names {
		if n.Controller != whole.Controller {
			continue
		}
		if n.TakenFrom != "" {
			return Holding
		}
		for region, state := range states {
			if state.MovesNames() && StandIn(region, n.StandIns, states) == in.Own {
				return Holding
			}
		}
	}
	return AtRest
}

// Merge is what a round knows of a zone: the last whole reading (its ownership records and
// addresses; the zero reading when none) with the heartbeats of the newer witness reading in
// place of its own, but those under a name the witness reading does not cover
// (LegacyHeartbeatName: a name-suffix listing does not return them). read says whether the zone
// was read this round: a zone not read this round is not Read, so that no region is judged on
// what an earlier round saw.
func Merge(full, witness ZoneReading, witnessNewer, read bool) ZoneReading {
	out := full
	out.Read = read
	if !witnessNewer {
		return out
	}
	out.Beats = map[string][]Heartbeat{}
	for region, bs := range witness.Beats {
		out.Beats[region] = slices.Clone(bs)
	}
	for region, bs := range full.Beats {
		for _, b := range bs {
			if b.Legacy && !slices.ContainsFunc(out.Beats[region], func(w Heartbeat) bool { return w.Cluster == b.Cluster }) {
				out.Beats[region] = append(out.Beats[region], b)
			}
		}
	}
	return out
}

// Ownership is a merged reading as the decisions that pass names take it: Read only when the zone
// was read whole this round (wholeNow), so that Takeovers and Reclaims pass nothing, and Held and
// Standing keep what they count, on ownership records an earlier round read.
func Ownership(z ZoneReading, wholeNow bool) ZoneReading {
	z.Read = z.Read && wholeNow
	return z
}

// KnownHeartbeats are the heartbeat record names a zone's readings showed, as found (current or
// legacy form), for a reader that asks for each by name (RFC 2136).
func KnownHeartbeats(z ZoneReading, zone string) []string {
	var out []string
	for region, beats := range z.Beats {
		for _, b := range beats {
			name := HeartbeatName(b.Cluster, region, zone)
			if b.Legacy {
				name = LegacyHeartbeatName(b.Cluster, region, zone)
			}
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}
