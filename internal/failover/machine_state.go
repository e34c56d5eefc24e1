package failover

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// zoneRecord is what this leader knows of one zone from round to round: its last readings, whole
// and of its heartbeats (ReadPlan), and when; how it answered lately.
type zoneRecord struct {
	whole, witness ZoneReading
	at             ZoneReads
	// legacyRemoved says this cluster's heartbeat under its earlier name is gone from the zone.
	legacyRemoved bool
	// formsAt is the whole reading the routes' forms were last checked against (keepForms);
	// upkeptAt the one the intermediates were last kept by (upkeep).
	formsAt, upkeptAt time.Time
	// reads and beats keep the zone out of the rounds' reads, and out of their heartbeat writes,
	// for a while after one of them failed (ZoneBackoff). A zone that answered, if only to refuse
	// (its role for this cluster cut to Reader), keeps the other kind going: the round must go on
	// reading it to judge and to try the takeover that tells why. One that did not answer at all
	// is left out of both.
	reads, beats ZoneBackoff
	// failure is why the zone's last read or heartbeat write failed, in a few words; "" once a
	// read succeeds (a zone left out of the rounds keeps it).
	failure string
}

// record is the record of a zone's readings, created on first use.
func (m *Machine) record(controller string) *zoneRecord {
	r := m.reads[controller]
	if r == nil {
		r = &zoneRecord{}
		m.reads[controller] = r
	}
	return r
}

// took notes how the zone answered a request of one kind (b: that kind's backoff): the backoff
// that follows (from one probe interval, or as long as the attempt took, to the heartbeat's stale
// bound; counted from the answer, not from the round's start, or it would be over before it
// began), for both kinds when the zone did not answer at all (silent to one, silent to all: its
// timeout is not waited out twice), and why it failed.
func (r *zoneRecord) took(b *ZoneBackoff, s MachineSettings, a ZoneAnswer) {
	*b = b.After(a.Err, a.Finished, a.Finished.Sub(a.Started), s.ProbeInterval, s.Judge.HeartbeatStaleAfter)
	if a.Silent {
		r.reads, r.beats = *b, *b
	}
	if a.Err != nil {
		r.failure = a.Reason
	}
}

// known is what the readings say of the zone, as of the last one (Merge).
func (r *zoneRecord) known(read bool) ZoneReading {
	return Merge(r.whole, r.witness, r.at.Witness.After(r.at.Full), read)
}

// takeListed makes the listings verification made since the last round the zones' whole readings
// where they are newer than this leader's own, so that a zone both read is listed once, not twice.
func (m *Machine) takeListed() {
	r := m.round
	for _, z := range r.Zones {
		l, ok := r.Listed[z.Controller]
		if !ok || z.Transferred {
			continue
		}
		if rec := m.record(z.Controller); l.Started.After(rec.at.Full) {
			rec.whole, rec.at.Full = z.label(l.Reading), l.Started
			if l.Started.After(rec.at.Witness) {
				rec.at.Witness = l.Started
			}
		}
	}
}

// plans are what this round reads of each zone (ReadPlan): suspect while any region's probes fail,
// with each zone's interest as the last judgement and readings left it. An RFC 2136 zone is read
// whole (a transfer, skipped when its serial is unchanged) when its heartbeats are due at rest: a
// DNS server can be asked for a heartbeat by name only, so a new cluster is found by a transfer.
func (m *Machine) plans() []Read {
	r := m.round
	suspect := false
	judged := map[string]Judgement{}
	for region, v := range m.regions {
		suspect = suspect || v.Probes.Failures > 0
		judged[region] = v.Judgement
	}
	in := m.interests(judged)
	out := make([]Read, len(r.Zones))
	for i, z := range r.Zones {
		settings := DefaultReadSettings(r.Settings.Judge.HeartbeatStaleAfter, r.Settings.SettledInterval)
		if z.Transferred {
			settings.FullInterval = settings.WitnessInterval
		}
		rec := m.record(z.Controller)
		out[i] = ReadPlan(r.Now, rec.at, suspect, in.ZoneInterest(z.label(rec.whole)), settings)
	}
	return out
}

// escalations are the whole readings a round still needs once it has judged: the zones holding a
// name it may pass now that were not read whole; nil when there are none.
func (m *Machine) escalations() []Read {
	r := m.round
	in := m.interests(r.judged)
	var out []Read
	for i, z := range r.Zones {
		if r.reading.whole[i] || in.ZoneInterest(z.label(m.record(z.Controller).whole)) != Passing {
			continue
		}
		if out == nil {
			out = make([]Read, len(r.Zones))
		}
		out[i] = Read{Witness: true, Full: true}
	}
	return out
}

// tried are the reads of plans the round makes: a zone that did not answer lately is left out
// (ZoneBackoff), so that a zone that does not answer does not make every round wait out its
// timeout; it says nothing this round, either way.
func (m *Machine) tried(plans []Read) (reads []ZoneRead, skipped []SkippedZone) {
	r := m.round
	for i, want := range plans {
		if !want.Full && !want.Witness {
			continue
		}
		z := r.Zones[i]
		rec := m.record(z.Controller)
		if rec.reads.Skip(r.Now) {
			skipped = append(skipped, SkippedZone{Controller: z.Controller, Until: rec.reads.Until, Err: rec.reads.Err})
			continue
		}
		read := ZoneRead{Zone: i, Full: want.Full}
		if !want.Full {
			read.Known = KnownHeartbeats(rec.known(true), z.Zone)
		}
		reads = append(reads, read)
	}
	r.reads = reads
	return reads, skipped
}

// readingOf takes the zones' answers to the round's reads: what the round now knows of every
// zone. After this cluster's first whole reading of a zone, its heartbeat under the earlier name is
// removed (the next Ready asks for it).
func (m *Machine) readingOf(answers []ReadAnswer) roundReading {
	r := m.round
	out := roundReading{merged: make([]ZoneReading, len(r.Zones)), whole: make([]bool, len(r.Zones))}
	read := make([]bool, len(r.Zones))
	for i, q := range r.reads {
		var a ReadAnswer
		if i < len(answers) {
			a = answers[i]
		}
		z := r.Zones[q.Zone]
		rec := m.record(z.Controller)
		switch {
		case a.Err != nil:
			if a.Throttled {
				r.events = append(r.events, Event{Warning: true, Reason: "ZoneThrottled", Message: fmt.Sprintf(
					"zone %s: Resource Manager throttled failover's reading (%s); the zone says nothing until it is read again", z.Controller, a.Reason)})
			}
		case q.Full:
			rec.whole, rec.at.Full, rec.at.Witness = z.label(a.Reading), r.Now, r.Now
			out.whole[q.Zone], read[q.Zone] = true, true
		default:
			rec.witness, rec.at.Witness, read[q.Zone] = z.label(a.Reading), r.Now, true
		}
		rec.failure = ""
		rec.took(&rec.reads, r.Settings, a.ZoneAnswer)
	}
	for i, z := range r.Zones {
		rec := m.record(z.Controller)
		out.merged[i] = z.label(rec.known(read[i]))
		if !out.whole[i] || rec.legacyRemoved {
			continue
		}
		if slices.ContainsFunc(rec.whole.Beats[r.Own], func(b Heartbeat) bool { return b.Legacy && b.Cluster == r.Cluster }) {
			r.pendingRemovals = append(r.pendingRemovals, i)
		} else {
			rec.legacyRemoved = true
		}
	}
	return out
}

// roundReading is what a round read of the zones, in the order of its zones: merged the readings
// its decisions take (Merge: Read when read this round), whole which were read whole.
type roundReading struct {
	merged []ZoneReading
	whole  []bool
}

// ownership is the readings as the decisions that pass names take them (Ownership).
func (r roundReading) ownership() []ZoneReading {
	out := make([]ZoneReading, len(r.merged))
	for i, z := range r.merged {
		out[i] = Ownership(z, r.whole[i])
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

// heartbeatInterval is how often this cluster writes its heartbeat (HeartbeatInterval): the
// configured interval, or longer when the clusters the zones' heartbeats show would together write
// the zones read through Resource Manager more often than the fleet's share of the write budget
// allows.
func (m *Machine) heartbeatInterval() time.Duration {
	r := m.round
	clusters := map[string]bool{r.Cluster: true}
	azureZones := 0
	for _, z := range r.Zones {
		if !z.Transferred {
			azureZones++
		}
		for _, beats := range m.record(z.Controller).known(true).Beats {
			for _, b := range beats {
				clusters[b.Cluster] = true
			}
		}
	}
	return HeartbeatInterval(r.Settings.HeartbeatInterval, len(clusters), azureZones, HeartbeatWritesPerMinute)
}

// interests are the inputs of each zone's ZoneInterest. Names go back only while this cluster's
// heartbeats reach every zone: a cluster the others may judge lost (its heartbeat stale in a
// majority of the zones) must not take back what they would take again, round after round. While
// a drain is asked for, nothing goes back; once it has ended, names go back as soon as this
// cluster's gateway answers and the stand-ins have had a heartbeat reading to see the drain end
// (they read the heartbeats every heartbeatStaleAfter, and act on a reading in the round that
// makes it: the stale-after of this cluster's heartbeat and a probe interval), without the wait of
// failbackAfter (the drain, not a loss, took them). Sooner, a stand-in still judging the region
// Drained would take a name back again.
func (m *Machine) interests(judged map[string]Judgement) Interests {
	r := m.round
	s := r.Settings
	reaching := r.Now.Sub(m.lastBeat) <= 2*max(m.beatInterval, s.HeartbeatInterval)
	var mayReclaim bool
	switch {
	case s.Drain:
	case s.Returning:
		// This cluster's own interval, uncapped: the stand-ins read at the pace it announced.
		seen := !m.drainSaidAt.IsZero() && r.Now.Sub(m.drainSaidAt) >= max(s.Judge.HeartbeatStaleAfter, StaleIntervals*m.beatInterval)+s.ProbeInterval
		mayReclaim = reaching && seen && m.own.Probes.Successes >= s.Judge.FailureThreshold
	default:
		mayReclaim = reaching && MayFailBack(r.Now, m.own.HealthySince, m.own.Probes, s.Judge)
	}
	return Interests{Own: r.Own, Judged: judged, Names: r.Names, Held: slices.Clone(m.held), MayReclaim: mayReclaim, Forming: maps.Clone(m.forming)}
}

// drained records where a drain of this cluster's region stands (DrainProgress, on each zone's
// last whole reading); it reports whether that changed.
func (m *Machine) drained() bool {
	r := m.round
	readings := make([]ZoneReading, len(r.Zones))
	for i, z := range r.Zones {
		rec := m.record(z.Controller)
		readings[i] = z.label(rec.whole)
		readings[i].Read = !rec.at.Full.IsZero()
	}
	d := DrainState{Draining: r.Settings.Drain, Returning: r.Settings.Returning}
	d.Here, d.Away, d.Known = DrainProgress(r.Own, readings, r.Names)
	changed := d != m.drain
	m.drain = d
	return changed
}

// setRefusals records the round's refusals for the status; it reports whether which zones refuse
// how many writes changed (not the errors' words, which may name a request: the status is not
// written again every round for them).
func (m *Machine) setRefusals(refused []Refusal) bool {
	changed := !slices.EqualFunc(refused, m.refused, func(a, b Refusal) bool {
		return a.Controller == b.Controller && a.Region == b.Region && a.Names == b.Names
	})
	m.refused = refused
	return changed
}

// setUnreadable records why the zones whose last read or heartbeat write failed did not answer,
// for the status; it reports whether which zones those are changed (not the words).
func (m *Machine) setUnreadable() bool {
	unreadable := map[string]string{}
	for _, z := range m.round.Zones {
		if failure := m.record(z.Controller).failure; failure != "" {
			unreadable[z.Controller] = failure
		}
	}
	changed := !slices.Equal(slices.Sorted(maps.Keys(unreadable)), slices.Sorted(maps.Keys(m.unreadable)))
	m.unreadable = unreadable
	return changed
}

// remember records the round's judgements and takeovers (an Event for each judgement that
// changed); it reports whether the status changes.
func (m *Machine) remember(d RoundOutput, taken []Pass) bool {
	r := m.round
	changed := !m.judged
	m.judged = true
	// The readings are from before this round's passes: they judge the earlier ones only. A round
	// that read no zone knows no server: the attribution stays as the last reading said.
	if slices.ContainsFunc(r.reading.merged, func(z ZoneReading) bool { return z.Read }) {
		m.attribution.Servers = Servers(r.reading.merged)
	}
	// The takeovers that stand (this leader's that the zones still say are ours, those the marks
	// say stand) and this round's.
	held := Union(d.Held, taken)
	changed = changed || len(held) != len(m.held) || len(taken) > 0
	m.held = held
	m.regions = d.Views
	for _, c := range d.Changes {
		j := c.Judgement
		r.events = append(r.events, Event{Warning: j.State != Serving && j.State != Drained, Reason: "Region" + string(j.State),
			Message: fmt.Sprintf("region %s: %s (%s): %s", c.Region, j.State, j.Reason, j.Message)})
	}
	return changed || d.ViewsChanged
}

// announce records a pass that took effect at: an Event, and the marks on this cluster's
// DNSEndpoint of the name (when it passed; for a takeover, from which region).
func (m *Machine) announce(w PassWrite, at time.Time) {
	r, p := m.round, w.Pass
	e := Event{Warning: true, Reason: "NameTakenBack", Message: fmt.Sprintf(
		"%s in zone %s: ownership passed back from %s (region %s, its stand-in) to %s; ExternalDNS now points it at this cluster again",
		p.Hostname, p.Controller, p.From, p.Region, p.To)}
	mark := Mark{Namespace: p.Namespace, Endpoint: p.Endpoint, PassedAt: at}
	if w.Takeover {
		e.Reason, e.Message = "NameTakenOver", fmt.Sprintf(
			"%s in zone %s: ownership passed from %s (region %s, lost or drained) to %s; ExternalDNS now points it at this cluster",
			p.Hostname, p.Controller, p.From, p.Region, p.To)
		mark.TakenFrom = p.Region
	}
	r.events, r.marks = append(r.events, e), append(r.marks, mark)
}

// unansweredPasses are the passes whose writes got no definite answer yet.
func (m *Machine) unansweredPasses() []Pass {
	out := make([]Pass, len(m.unanswered))
	for i, u := range m.unanswered {
		out[i] = u.Pass
	}
	return out
}

// settleUnanswered announces the unanswered passes the zones, read whole this round, show landed
// (a zone whose server resumed after the client gave up applies what it had received), forgets
// those they show did not, and returns the takeovers among the landed: without this, a name the
// zone moved would be served here with no mark, no Event and no count.
func (m *Machine) settleUnanswered(landed, waiting []Pass) (taken []Pass) {
	var keep []PassWrite
	for _, u := range m.unanswered {
		switch {
		case slices.Contains(landed, u.Pass):
			m.announce(u, m.round.Now)
			if u.Takeover {
				taken = append(taken, u.Pass)
			}
		case slices.Contains(waiting, u.Pass):
			keep = append(keep, u)
		}
	}
	m.unanswered = keep
	return taken
}

// passedIn are the zones (by controller) in which any of lists passes a name.
func passedIn(lists ...[]Pass) map[string]bool {
	out := map[string]bool{}
	for _, list := range lists {
		for _, p := range list {
			out[p.Controller] = true
		}
	}
	return out
}

// formsUnknownIn makes the routes' forms say nothing of the zones about to pass names (keepForms
// says why), before the passes and the marks that wake the routes; it says whether that changed
// the forms.
func (m *Machine) formsUnknownIn(passed map[string]bool) bool {
	if m.forms.Zones == nil || len(passed) == 0 {
		return false
	}
	view := FormView{Own: m.forms.Own, Zones: maps.Clone(m.forms.Zones)}
	for _, z := range m.round.Zones {
		if passed[z.Controller] {
			view.Zones[z.Controller] = z.label(ZoneReading{})
		}
	}
	m.forms = view
	return true
}

// keepForms makes the zones' latest whole readings what the routes' forms are decided from, and
// returns the zones read whole since the routes' forms were last checked: nothing else wakes a
// route when only the zone changed (its intermediate created, or taken by this cluster). A zone
// this round passed names in says nothing until it is read again: its reading is from before the
// passes, and a name this cluster just took on its own would go through an intermediate still the
// lost region's.
func (m *Machine) keepForms(passed map[string]bool) (changed []string) {
	r := m.round
	view := FormView{Own: r.Own, Zones: map[string]ZoneReading{}}
	for _, z := range r.Zones {
		rec := m.record(z.Controller)
		view.Zones[z.Controller] = z.label(ZoneReading{})
		if passed[z.Controller] {
			continue
		}
		if !rec.at.Full.IsZero() {
			view.Zones[z.Controller] = rec.whole
		}
		if rec.at.Full.After(rec.formsAt) {
			rec.formsAt = rec.at.Full
			changed = append(changed, z.Controller)
		}
	}
	intermediates := map[string]map[string]string{}
	for controller, z := range view.Zones {
		for name, target := range z.CNAMEs {
			if isIntermediate(name) {
				if intermediates[controller] == nil {
					intermediates[controller] = map[string]string{}
				}
				intermediates[controller][name] = target
			}
		}
	}
	m.forms, m.attribution.Intermediates = view, intermediates
	return changed
}
