package failover

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Machine is regional failover's state and judgement for one leader
// (docs/ARCHITECTURE.md#regional-failover-design), driven by the operator's loop
// (internal/failoverloop) as etcd's raft node is driven by its application: Begin starts a round
// with what the loop read of the cluster, and each Ready says what to do next (probe gateways,
// write heartbeats, read zones, remove a legacy heartbeat, pass names) until one says Done with
// the round's Outcome; the loop does what a Ready says and hands the answers to Advance. The
// machine reads and writes nothing itself and keeps every judgement: what to read and when, which
// region is lost, what to pass, what the status, Events and marks say. A round is, in order: this
// cluster's own gateway probed; its heartbeat written when due; the zones read as their interest
// needs (ReadPlan); the other regions probed; the zones holding a name the round may pass read
// whole if they were not (the escalation); the passes (Round); the Outcome.
//
// A Machine is used by one goroutine; View is how others see what it concludes.
type Machine struct {
	judged  bool
	regions map[string]RegionView
	held    []Pass
	// own is the run of probes of this cluster's own gateway, and since when it answers.
	own      OwnGateway
	lastBeat time.Time
	// beatAnswers, beatInterval and beatDraining are what the last heartbeat written said of this
	// cluster's gateway, of how often it is written and of a drain; drainSaidAt is when a
	// heartbeat first said the drain as it is now.
	beatAnswers, beatDraining bool
	beatInterval              time.Duration
	drainSaidAt               time.Time
	refused                   []Refusal
	unreadable                map[string]string
	// unanswered are the ownership writes that got no definite answer, until the zones show
	// whether they landed (Unanswered).
	unanswered []PassWrite
	drain      DrainState
	// forming says in which zones a name waits for a reading to go through its intermediate.
	forming map[string]bool
	// creating says in which zones the last whole reading lacked an intermediate this cluster
	// creates (Upkeeps): they are read whole again until one shows it.
	creating    map[string]bool
	reads       map[string]*zoneRecord
	beatsSeen   Observations
	attribution Attribution
	forms       FormView
	round       *round
}

// NewMachine is a leader's machine before its first round.
func NewMachine() *Machine {
	return &Machine{regions: map[string]RegionView{}, reads: map[string]*zoneRecord{}, beatsSeen: Observations{}, forming: map[string]bool{}, creating: map[string]bool{}}
}

// phase is how far a round has got: each asks for something (ask) and takes the answers (take).
type phase int

const (
	starting phase = iota
	probingOwn
	beating
	reading
	probing
	escalating
	passing
	done
)

// round is what one round knows so far.
type round struct {
	RoundStart
	phase phase
	// removals are the zones the last Ready asked to remove a legacy heartbeat from.
	removals []int
	// pendingRemovals are those the next Ready asks for.
	pendingRemovals []int
	answers         bool
	beatDue         bool
	heartbeats      []HeartbeatWrite
	reads           []ZoneRead
	reading         roundReading
	probeRegions    []string
	probes          map[string]Probes
	judged          map[string]Judgement
	decision        RoundOutput
	landed          []Pass
	passes          []PassWrite
	taken           []Pass
	refused         []Refusal
	refusedBack     []Refusal
	events          []Event
	marks           []Mark
}

// Begin starts a round from what the loop read of the cluster, and says what to do first.
func (m *Machine) Begin(s RoundStart) Ready {
	r := &round{RoundStart: s}
	r.Names = slices.Clone(s.Names)
	// A drain that ended brings back every name of this region's zones a stand-in holds, whatever
	// the policies' failback (Reclaims takes back FailBack names of its own region only); while it
	// lasts, the zones holding them are read as often as for a failback (ZoneInterest's Holding),
	// so that the Drained condition follows them, but nothing goes back (interests).
	for i := range r.Names {
		r.Names[i].FailBack = r.Names[i].FailBack || s.Settings.Drain || s.Settings.Returning
	}
	m.round = r
	regions := make(map[string]string, len(s.Zones))
	for _, z := range s.Zones {
		regions[z.Controller] = z.Region
		if p, listed := s.Publishing[z.Controller]; listed {
			m.forming[z.Controller] = p.Forming || p.NewestCreated.After(m.record(z.Controller).at.Full) || m.creating[z.Controller]
		}
	}
	m.attribution.Cluster, m.attribution.ZoneRegions = s.Cluster, regions
	return m.next()
}

// Advance takes the answers to the last Ready, and says what to do next.
func (m *Machine) Advance(a Answers) Ready {
	r := m.round
	for i, zone := range r.removals {
		if i < len(a.Removals) && a.Removals[i] == nil {
			m.record(r.Zones[zone].Controller).legacyRemoved = true
		}
	}
	r.removals = nil
	m.take(a)
	return m.next()
}

// next moves on to the next phase that has something to do; a phase with nothing to ask takes no
// answers at once.
func (m *Machine) next() Ready {
	r := m.round
	for {
		r.phase++
		if r.phase == done {
			return m.finish()
		}
		rd := m.ask()
		rd.Removals, r.removals, r.pendingRemovals = r.pendingRemovals, r.pendingRemovals, nil
		if rd.Publish != nil || len(rd.Removals)+len(rd.ProbeOwn)+len(rd.Heartbeats)+len(rd.Reads)+len(rd.Probes)+len(rd.Passes)+len(rd.Upkeep) > 0 {
			return rd
		}
		m.take(Answers{})
	}
}

// ask is what the round's phase asks for.
func (m *Machine) ask() Ready {
	r := m.round
	switch r.phase {
	case probingOwn:
		return Ready{ProbeOwn: r.Addresses}
	case beating:
		return Ready{Heartbeats: m.heartbeatsDue()}
	case reading:
		m.takeListed()
		var rd Ready
		rd.Reads, rd.Skipped = m.tried(m.plans())
		return rd
	case probing:
		return Ready{Probes: m.regionProbes()}
	case escalating:
		var rd Ready
		rd.Reads, rd.Skipped = m.tried(m.escalations())
		return rd
	case passing:
		return m.decide()
	}
	return Ready{}
}

// take takes the answers to what the round's phase asked.
func (m *Machine) take(a Answers) {
	r := m.round
	switch r.phase {
	case probingOwn:
		r.answers = len(r.Addresses) == 0 || a.OwnAnswers
		m.own = m.own.After(r.answers, r.Now)
	case beating:
		m.beaten(a.Heartbeats)
	case reading:
		r.reading = m.readingOf(a.Reads)
		r.reading.merged = m.beatsSeen.Observe(r.Now, r.reading.merged)
	case probing:
		m.probed(a.Probes)
	case escalating:
		if len(r.reads) > 0 {
			r.reading = m.readingOf(a.Reads).over(r.reading)
			r.reading.merged = m.beatsSeen.Observe(r.Now, r.reading.merged)
			r.judged = JudgeRegions(r.Now, r.Own, r.Settings.Drain, r.reading.merged, r.probes, r.Settings.Judge)
		}
	case passing:
		m.passed(a.Passes)
	}
}

// Forget drops every view when no zone has failover settings; it says whether the status changes
// (once: to say there is nothing to report).
func (m *Machine) Forget() bool {
	m.attribution, m.drain, m.forms = Attribution{}, DrainState{}, FormView{}
	m.reads, m.beatsSeen, m.unanswered, m.forming, m.creating = map[string]*zoneRecord{}, Observations{}, nil, map[string]bool{}, map[string]bool{}
	m.round = nil
	if m.judged && len(m.regions) == 0 {
		return false
	}
	m.judged = true
	m.regions = map[string]RegionView{}
	return true
}

// heartbeatsDue are the heartbeat writes of this round: due at the interval the fleet's write
// budget allows, and at once when what the heartbeat says changes (this cluster's gateway, so that
// its stand-ins need not wait for staleness; the interval, by which readers judge its freshness;
// a drain). A zone that did not answer lately is left out.
func (m *Machine) heartbeatsDue() []HeartbeatWrite {
	r := m.round
	interval := m.heartbeatInterval()
	r.beatDue = r.Now.Sub(m.lastBeat) >= interval || r.answers != m.beatAnswers || interval != m.beatInterval || r.Settings.Drain != m.beatDraining
	if !r.beatDue {
		return nil
	}
	m.beatInterval = interval
	r.heartbeats = nil
	for i, z := range r.Zones {
		if m.record(z.Controller).beats.Skip(r.Now) {
			continue
		}
		value := HeartbeatValue(Heartbeat{At: r.Now, GatewayAnswers: r.answers, Draining: r.Settings.Drain, Interval: m.beatInterval,
			Owner: z.Owner, Targets: r.Targets, Addresses: r.Addresses})
		r.heartbeats = append(r.heartbeats, HeartbeatWrite{Zone: i, Value: value})
	}
	return r.heartbeats
}

// beaten takes the zones' answers to the heartbeat writes.
func (m *Machine) beaten(answers []ZoneAnswer) {
	r := m.round
	if !r.beatDue {
		return
	}
	ok := true
	for i, w := range r.heartbeats {
		rec := m.record(r.Zones[w.Zone].Controller)
		a := answerAt(answers, i)
		rec.took(&rec.beats, r.Settings, a)
		ok = ok && a.Err == nil
	}
	if !ok {
		// A failed write is retried next round: the interval it stated is not known to the zones.
		m.beatInterval = 0
		return
	}
	if m.drainSaidAt.IsZero() || r.Settings.Drain != m.beatDraining {
		m.drainSaidAt = r.Now
	}
	m.lastBeat, m.beatAnswers, m.beatDraining = r.Now, r.answers, r.Settings.Drain
}

// answerAt is answers[i], or a success when the loop gave none.
func answerAt(answers []ZoneAnswer, i int) ZoneAnswer {
	if i < len(answers) {
		return answers[i]
	}
	return ZoneAnswer{}
}

// regionProbes are the other regions' gateway addresses, as the zones publish them; a region with
// none is not probed, and not counted either way (an unknown is not a failure).
func (m *Machine) regionProbes() []RegionProbe {
	r := m.round
	r.probeRegions = Regions(r.Own, r.reading.merged)
	var out []RegionProbe
	for _, region := range r.probeRegions {
		if addresses := Addresses(region, r.reading.merged); len(addresses) > 0 {
			out = append(out, RegionProbe{Region: region, Addresses: addresses})
		}
	}
	return out
}

// probed counts the probes' run of failures or successes, and judges the regions.
func (m *Machine) probed(answered map[string]bool) {
	r := m.round
	r.probes = map[string]Probes{}
	for _, region := range r.probeRegions {
		v := m.regions[region]
		if len(Addresses(region, r.reading.merged)) > 0 {
			v.Probes = v.Probes.After(answered[region])
		}
		m.regions[region] = v
		r.probes[region] = v.Probes
	}
	r.judged = JudgeRegions(r.Now, r.Own, r.Settings.Drain, r.reading.merged, r.probes, r.Settings.Judge)
}

// decide is every decision of the round from what it read and probed (Round), and the passes to
// write. The routes' forms say nothing of the zones about to pass names (keepForms says why), from
// before the passes and the marks that wake the routes.
func (m *Machine) decide() Ready {
	r := m.round
	r.decision = Round(RoundInput{Now: r.Now, Own: r.Own, Draining: r.Settings.Drain, Settings: r.Settings.Judge,
		Readings: r.reading.merged, Ownership: r.reading.ownership(), Probes: r.probes, Names: r.Names,
		MayReclaim: m.interests(r.judged).MayReclaim, Views: maps.Clone(m.regions), Earlier: r.Earlier,
		Held: slices.Clone(m.held), Unanswered: m.unansweredPasses()})
	d := r.decision
	rd := Ready{}
	if m.formsUnknownIn(passedIn(d.Takeovers, d.Reclaims, d.Landed)) {
		v := m.View()
		rd.Publish = &v
	}
	r.landed = m.settleUnanswered(d.Landed, d.Waiting)
	r.passes = nil
	for _, p := range d.Takeovers {
		r.passes = append(r.passes, PassWrite{Pass: p, Takeover: true})
	}
	for _, p := range d.Reclaims {
		r.passes = append(r.passes, PassWrite{Pass: p})
	}
	rd.Passes = r.passes
	rd.Upkeep = m.upkeep()
	return rd
}

// passed takes the zones' answers to the ownership writes. A pass refused because the value
// changed is no error: the zone says who owns it now. Any other refusal (a rotated TSIG key, a role
// taken away: 403) leaves the name where it is, whole (the pass is one conditional write), and is
// tried again next round; it is announced once a round per zone (OwnershipPassRefused) and said in
// the region's status. One with no definite answer may still land: the zones say next time
// (settleUnanswered).
func (m *Machine) passed(answers []PassAnswer) {
	r := m.round
	for _, takeovers := range []bool{true, false} {
		var refused []Refusal
		for i, w := range r.passes {
			if w.Takeover != takeovers || i >= len(answers) {
				continue
			}
			a := answers[i]
			switch {
			case a.Changed:
				continue
			case a.Err != nil:
				refused = refusedOnce(refused, w.Pass, a.Reason)
				m.unanswered = append(slices.DeleteFunc(m.unanswered, func(u PassWrite) bool {
					return u.Pass.Controller == w.Pass.Controller && u.Pass.Hostname == w.Pass.Hostname
				}), w)
				continue
			}
			if w.Pass.To == IntermediateOwner {
				continue // a release, followed by the intermediate's own pass: that one is announced
			}
			if w.Takeover {
				r.taken = append(r.taken, w.Pass)
			}
			m.announce(w, a.At)
		}
		for _, f := range refused {
			r.events = append(r.events, Event{Warning: true, Reason: "OwnershipPassRefused", Message: fmt.Sprintf(
				"zone %s refused %d ownership write(s) of names of region %s this round, retried every round (the names stay where they are): %s",
				f.Controller, f.Names, f.Region, f.Err)})
		}
		if takeovers {
			r.refused = refused
		} else {
			r.refusedBack = refused
		}
	}
}

// finish is the round's outcome once its passes are made: the takeovers that stand, the status,
// the marks the round leaves out of date (Marks), the routes' forms.
func (m *Machine) finish() Ready {
	r := m.round
	d := r.decision
	takenNow := WithNamesThrough(append(r.taken, r.landed...), r.Names, r.reading.ownership())
	drainChanged := m.drained()
	refusalsChanged := m.setRefusals(append(r.refused, r.refusedBack...))
	unreadableChanged := m.setUnreadable()
	changed := m.remember(d, takenNow)
	set, clear := Marks(m.held, r.Names, d.Returned, takenNow)
	for _, n := range clear {
		r.marks = append(r.marks, Mark{Namespace: n.Namespace, Endpoint: n.Endpoint})
	}
	for _, p := range set {
		r.marks = append(r.marks, Mark{Namespace: p.Namespace, Endpoint: p.Endpoint, TakenFrom: p.Region})
	}
	formsChanged := m.keepForms(passedIn(d.Takeovers, d.Reclaims, r.landed))
	m.round = nil
	return Ready{Done: true, Outcome: Outcome{Events: r.events, Marks: r.marks, View: m.View(),
		Changed: changed || drainChanged || refusalsChanged || unreadableChanged, FormsChangedIn: formsChanged}}
}

// upkeep is the round's Upkeeps, each zone taken as its newest whole reading not yet used for
// them: this round's, or a listing publication verification made since (Listed), which in a zone
// read through Resource Manager stands for failover's own whole reading at rest. Every upkeep
// write is conditional on what that reading showed.
func (m *Machine) upkeep() []UpkeepWrite {
	r := m.round
	zones := make([]ZoneReading, len(r.Zones))
	for i, z := range r.Zones {
		rec := m.record(z.Controller)
		zones[i] = z.label(ZoneReading{})
		if !rec.at.Full.IsZero() && rec.at.Full.After(rec.upkeptAt) {
			zones[i], rec.upkeptAt = rec.whole, rec.at.Full
		}
	}
	writes := Upkeeps(r.Own, r.Targets, zones, r.Names)
	for _, z := range zones {
		if z.Read {
			m.creating[z.Controller] = slices.ContainsFunc(writes, func(w UpkeepWrite) bool {
				return w.Controller == z.Controller && w.Old == "" && w.TXTName == ""
			})
		}
	}
	return writes
}
