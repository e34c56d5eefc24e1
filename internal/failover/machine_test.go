package failover

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rememberRound is a round of m at now, in region own, that judged judged (the views advanced as
// Round advances them, from earlier: the status's), read readings, took taken now and found
// standing standing; it returns whether the status changed, and the round's Events.
func rememberRound(m *Machine, now time.Time, own string, judged map[string]Judgement, readings []ZoneReading, taken, standing []Pass,
	earlier map[string]RegionView) (bool, []Event) {
	m.round = &round{RoundStart: RoundStart{Now: now, Own: own}, reading: roundReading{merged: readings}}
	defer func() { m.round = nil }()
	next, changes, changed := Advance(now, own, maps.Clone(m.regions), judged, earlier, DefaultSettings.FailureThreshold)
	c := m.remember(RoundOutput{Judged: judged, Views: next, Changes: changes, ViewsChanged: changed, Held: Union(Held(m.held, readings), standing)}, taken)
	return c, m.round.events
}

// A new leader says nothing of the regions until its first round has judged them, so that the
// status keeps what an earlier leader wrote; without zones with failover settings it says, once,
// that there is nothing to report.
func TestMachine_RegionsUnknownUntilJudged(t *testing.T) {
	m := NewMachine()
	assert.False(t, m.View().Judged, "before the first round")

	now := time.Unix(1000, 0)
	judged := map[string]Judgement{"neu": {State: Serving}, "weu": {State: Lost, Reason: "HeartbeatStale"}}
	changed, _ := rememberRound(m, now, "neu", judged, nil, nil, nil, nil)
	assert.True(t, changed, "the first judgement is a change")
	v := m.View()
	assert.True(t, v.Judged)
	assert.Equal(t, Lost, v.Regions["weu"].Judgement.State)
	changed, _ = rememberRound(m, now.Add(time.Second), "neu", judged, nil, nil, nil, nil)
	assert.False(t, changed, "the same judgement again changes nothing")

	g := NewMachine()
	assert.True(t, g.Forget(), "no zone has failover settings: a definite answer, once, to clear an earlier leader's status")
	assert.True(t, g.View().Judged)
	assert.Empty(t, g.View().Regions)
	assert.False(t, g.Forget(), "forgetting again changes nothing")
}

// A new leader counts, from its first round, the takeovers an earlier leader made that stand
// (Standing), beside its own.
func TestMachine_NewLeaderCountsStandingTakeovers(t *testing.T) {
	m := NewMachine()
	judged := map[string]Judgement{"neu": {State: Serving}, "weu": {State: Lost, Reason: "HeartbeatStale"}}
	standing := []Pass{{Controller: "external-dns-weu", Hostname: "a.example.com", Region: "weu"}}
	mine := []Pass{{Controller: "external-dns-weu", Hostname: "b.example.com", Region: "weu"}, {Controller: "external-dns-weu", Hostname: "a.example.com", Region: "weu"}}
	changed, _ := rememberRound(m, time.Unix(1000, 0), "neu", judged, nil, mine, standing, nil)
	assert.True(t, changed)
	assert.Len(t, m.View().Held, 2, "a.example.com once")
	changed, _ = rememberRound(m, time.Unix(1001, 0), "neu", judged, nil, nil, standing, nil)
	assert.False(t, changed, "the same takeovers again change nothing")
}

// A new leader whose probes have not decided yet keeps each region as the earlier leader's status
// says (state, reason and since), instead of judging it Serving for want of failures; once its
// own probes decide, its own judgement stands.
func TestMachine_NewLeaderKeepsTheEarlierJudgementUntilItDecides(t *testing.T) {
	lostSince := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	earlier := map[string]RegionView{"weu": {Judgement: Judgement{State: Lost, Reason: "HeartbeatStale", Message: "an earlier leader's"}, Since: lostSince}}
	undecided := map[string]Judgement{"neu": {State: Serving}, "weu": {State: Serving, Reason: "GatewayAnswers"}}
	lost := map[string]Judgement{"neu": {State: Serving}, "weu": {State: Lost, Reason: "HeartbeatStale", Message: "mine"}}
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	weu := func(m *Machine) RegionView {
		v := m.View()
		require.True(t, v.Judged)
		return v.Regions["weu"]
	}
	probed := func(m *Machine, p Probes) {
		v := m.regions["weu"]
		v.Probes = p
		m.regions["weu"] = v
	}

	m := NewMachine()
	probed(m, Probes{Failures: 1})
	rememberRound(m, now, "neu", undecided, nil, nil, nil, earlier)
	got := weu(m)
	assert.Equal(t, Lost, got.Judgement.State, "one failed probe of three decides nothing")
	assert.Equal(t, "HeartbeatStale", got.Judgement.Reason)
	assert.Equal(t, lostSince, got.Since)

	probed(m, Probes{Failures: 3})
	changed, events := rememberRound(m, now.Add(2*time.Second), "neu", lost, nil, nil, nil, earlier)
	assert.False(t, changed, "its own probes agree: no change")
	assert.Empty(t, events, "and no event")
	got = weu(m)
	assert.Equal(t, lostSince, got.Since, "lost since the earlier leader said so")
	assert.Equal(t, "mine", got.Judgement.Message)

	// Its probes decided, but the heartbeats are too new to it to tell (WitnessPending): still the
	// earlier leader's Lost, and no event; then its own clock finds them stale: Lost, unchanged.
	p := NewMachine()
	probed(p, Probes{Failures: 3})
	pending := map[string]Judgement{"neu": {State: Serving}, "weu": {State: Unreachable, Reason: ReasonWitnessPending}}
	rememberRound(p, now, "neu", pending, nil, nil, nil, earlier)
	got = weu(p)
	assert.Equal(t, Lost, got.Judgement.State, "heartbeats not yet followed are no sign of life")
	assert.Equal(t, lostSince, got.Since)
	rememberRound(p, now.Add(31*time.Second), "neu", lost, nil, nil, nil, earlier)
	assert.Equal(t, lostSince, weu(p).Since, "lost since the earlier leader said so")

	g := NewMachine()
	probed(g, Probes{Successes: 1})
	_, events = rememberRound(g, now, "neu", undecided, nil, nil, nil, earlier)
	got = weu(g)
	assert.Equal(t, Serving, got.Judgement.State, "its gateway answered this leader: decided")
	assert.Equal(t, now, got.Since)
	require.Len(t, events, 1, "Lost, as the status said, to Serving: announced")
	assert.Equal(t, Event{Reason: "RegionServing", Message: "region weu: Serving (GatewayAnswers): "}, events[0])
}

// Who serves an answer is learnt from the heartbeats a round reads; a round that reads no zone
// keeps what the last reading said, and forgetting drops it.
func TestMachine_AttributionFollowsTheHeartbeatsRead(t *testing.T) {
	m := NewMachine()
	m.attribution.Cluster, m.attribution.ZoneRegions = "aks01", map[string]string{"external-dns-weu": "weu"}
	aks02Beats := []ZoneReading{{Controller: "external-dns-weu", Region: "weu", Read: true, Beats: map[string][]Heartbeat{
		"neu": {{Found: true, Read: true, Cluster: "aks02", Targets: []string{"aks02-neu-internal.example.com"}}}}}}
	const answer, servedBy = "CNAME aks02-neu-internal.example.com.", "served by cluster aks02, of region neu, for region weu"
	now := time.Unix(1000, 0)

	assert.Empty(t, m.View().Attribution.Of("external-dns-weu", answer), "no heartbeat read yet")
	rememberRound(m, now, "weu", nil, aks02Beats, nil, nil, nil)
	assert.Equal(t, servedBy, m.View().Attribution.Of("external-dns-weu", answer))
	rememberRound(m, now.Add(10*time.Second), "weu", nil, []ZoneReading{{Controller: "external-dns-weu", Region: "weu"}}, nil, nil, nil)
	assert.Equal(t, servedBy, m.View().Attribution.Of("external-dns-weu", answer), "a zone that could not be read says nothing: kept")
	m.Forget()
	assert.Empty(t, m.View().Attribution.Of("external-dns-weu", answer), "no failover settings any more: the attribution goes")
}

// The machine drives a takeover from answers alone: rounds every 5 s whose requests are answered
// from a zone in memory, weu's gateway failing and its heartbeat no longer changing. While weu is
// only unreachable nothing is written; in the round that judges it lost, the zone is read whole
// before anything passes, the name is passed once (a takeover), announced and marked; the rounds
// after it pass nothing, the zone saying the name is aks02's.
func TestMachine_DrivesATakeoverFromAnswersAlone(t *testing.T) {
	zone := weuZone()
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu", StandIns: []string{"neu"}}
	settings := MachineSettings{ProbeInterval: 5 * time.Second, HeartbeatInterval: 10 * time.Second, SettledInterval: 5 * time.Minute, Judge: DefaultSettings}
	m := NewMachine()
	// round runs one round at now and returns what it asked for, in order, and its outcome.
	round := func(now time.Time) (asked []string, passes []PassWrite, o Outcome) {
		rd := m.Begin(RoundStart{Now: now, Cluster: "aks02", Own: "neu", Settings: settings, Addresses: []string{"10.2.0.1"}, Names: []Name{api},
			Zones: []MachineZone{{Controller: "external-dns-weu", Region: "weu", Zone: "example.com", Owner: aks02Owner, TXTPrefix: "weu-p-"}}})
		for !rd.Done {
			var a Answers
			if len(rd.ProbeOwn) > 0 {
				asked, a.OwnAnswers = append(asked, "probe own"), true
			}
			for range rd.Heartbeats {
				asked, a.Heartbeats = append(asked, "heartbeat"), append(a.Heartbeats, ZoneAnswer{Started: now, Finished: now})
			}
			for _, r := range rd.Reads {
				read := zone
				if !r.Full {
					read.TXT = nil
				}
				asked = append(asked, map[bool]string{true: "read whole", false: "read heartbeats"}[r.Full])
				a.Reads = append(a.Reads, ReadAnswer{ZoneAnswer: ZoneAnswer{Started: now, Finished: now}, Reading: read})
			}
			if len(rd.Probes) > 0 {
				asked, a.Probes = append(asked, "probe regions"), map[string]bool{}
			}
			for _, p := range rd.Passes {
				asked, passes = append(asked, "pass"), append(passes, p)
				zone.TXT[p.Pass.TXTName] = TXTSet{Values: []string{p.Pass.New}, TTL: p.Pass.TTL}
				a.Passes = append(a.Passes, PassAnswer{At: now})
			}
			rd = m.Advance(a)
		}
		return asked, passes, rd.Outcome
	}

	first := time.Unix(2000, 0)
	var judgedLost time.Time
	for now := first; judgedLost.IsZero(); now = now.Add(5 * time.Second) {
		require.LessOrEqual(t, now.Sub(first), DefaultSettings.HeartbeatStaleAfter+2*settings.ProbeInterval, "weu never judged lost")
		asked, passes, o := round(now)
		if o.View.Regions["weu"].Judgement.State != Lost {
			assert.Empty(t, passes, "at %s: weu not lost, nothing passes", now.Sub(first))
			continue
		}
		judgedLost = now
		require.Len(t, passes, 1, "the name passed once")
		assert.Equal(t, PassWrite{Pass: Pass{Controller: "external-dns-weu", Hostname: apiName, TXTName: apiTXT, TTL: 300, Old: ownership(aks01Owner),
			New: ownership(aks02Owner), From: aks01Owner, To: aks02Owner, Region: "weu", Namespace: "myapp", Endpoint: "api-route-external-dns-weu"}, Takeover: true}, passes[0])
		assert.Less(t, slices.Index(asked, "read whole"), slices.Index(asked, "pass"), "the zone read whole before anything passes: %v", asked)
		assert.Equal(t, []Mark{{Namespace: "myapp", Endpoint: "api-route-external-dns-weu", PassedAt: now, TakenFrom: "weu"}}, o.Marks)
		assert.True(t, slices.ContainsFunc(o.Events, func(e Event) bool { return e.Reason == "NameTakenOver" }), "announced: %v", o.Events)
		assert.Len(t, o.View.Held, 1)
		assert.True(t, o.Changed)
	}
	for now := judgedLost.Add(5 * time.Second); now.Before(judgedLost.Add(time.Minute)); now = now.Add(5 * time.Second) {
		_, passes, o := round(now)
		assert.Empty(t, passes, "the zone says the name is aks02's: nothing passes again")
		assert.Len(t, o.View.Held, 1, "held")
	}
}

// The machine creates the intermediate a new route of its own region wants: the round after the
// route's DNSEndpoint appears reads the zone whole and asks for the create; a refused create is
// asked again at the next whole reading, a heartbeatStaleAfter later (the holding pace, not rest's
// six minutes), and once the zone holds it nothing more is written.
func TestMachine_CreatesTheIntermediateItsNamesWant(t *testing.T) {
	zone := throughZone("", asOwner(aks01Owner))
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu", StandIns: []string{"neu"},
		Intermediate: intName, Target: targets[aks01Owner], TTL: 60}
	settings := MachineSettings{ProbeInterval: 5 * time.Second, HeartbeatInterval: 10 * time.Second, SettledInterval: 5 * time.Minute, Judge: DefaultSettings}
	m := NewMachine()
	created := time.Unix(2000, 0)
	refuse := true
	round := func(now time.Time) (whole bool, upkeep []UpkeepWrite) {
		rd := m.Begin(RoundStart{Now: now, Cluster: "aks01", Own: "weu", Settings: settings, Addresses: []string{"10.1.0.1"}, Targets: []string{targets[aks01Owner]},
			Names:      []Name{api, intermediateName(aks01Owner)},
			Publishing: map[string]Publishing{"external-dns-weu": {NewestCreated: created}},
			Zones:      []MachineZone{{Controller: "external-dns-weu", Region: "weu", Zone: "example.com", Owner: aks01Owner, TXTPrefix: "weu-p-"}}})
		for !rd.Done {
			a, read := answered(rd, now, zone)
			whole = whole || read
			for _, w := range rd.Upkeep {
				upkeep = append(upkeep, w)
				if refuse {
					a.Upkeep = append(a.Upkeep, errors.New("refused"))
					continue
				}
				zone.CNAMEs[w.Name] = w.New
				a.Upkeep = append(a.Upkeep, nil)
			}
			rd = m.Advance(a)
		}
		return whole, upkeep
	}
	create := []UpkeepWrite{{Controller: "external-dns-weu", Name: intName, New: targets[aks01Owner], TTL: 60}}
	now := created.Add(time.Second)
	whole, upkeep := round(now)
	assert.True(t, whole, "a new DNSEndpoint: the zone read whole")
	assert.Equal(t, create, upkeep)
	refuse = false
	_, upkeep = round(now.Add(5 * time.Second))
	assert.Empty(t, upkeep, "not read whole again yet: nothing asked")
	now = now.Add(DefaultSettings.HeartbeatStaleAfter)
	whole, upkeep = round(now)
	assert.True(t, whole, "the create refused: the zone read whole again at the holding pace")
	assert.Equal(t, create, upkeep, "and the create asked again")
	for i := 1; i < 20; i++ {
		_, upkeep = round(now.Add(time.Duration(i) * 5 * time.Second))
		assert.Empty(t, upkeep, "round %d: the zone holds it", i)
	}
}

// In a zone read through Resource Manager, a listing publication verification made stands for
// the whole reading at rest: the intermediate it lacks is created from it, once, without a read
// of failover's own.
func TestMachine_KeepsTheIntermediatesFromVerificationsListing(t *testing.T) {
	listed := throughZone("", asOwner(aks01Owner))
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", StandIns: []string{"neu"}, Intermediate: intName, Target: targets[aks01Owner], TTL: 60}
	settings := MachineSettings{ProbeInterval: 5 * time.Second, HeartbeatInterval: 10 * time.Second, SettledInterval: 5 * time.Minute, Judge: DefaultSettings}
	m := NewMachine()
	start := time.Unix(2000, 0)
	round := func(now time.Time, l map[string]Listing) (whole bool, upkeep []UpkeepWrite) {
		rd := m.Begin(RoundStart{Now: now, Cluster: "aks01", Own: "weu", Settings: settings, Targets: []string{targets[aks01Owner]},
			Names: []Name{api, intermediateName(aks01Owner)}, Listed: l,
			Zones: []MachineZone{{Controller: "external-dns-weu", Region: "weu", Zone: "example.com", Owner: aks01Owner, TXTPrefix: "weu-p-"}}})
		for !rd.Done {
			a, read := answered(rd, now, listed)
			whole = whole || read
			upkeep = append(upkeep, rd.Upkeep...)
			a.Upkeep = make([]error, len(rd.Upkeep))
			rd = m.Advance(a)
		}
		return whole, upkeep
	}
	whole, upkeep := round(start, map[string]Listing{"external-dns-weu": {Reading: listed, Started: start.Add(-time.Second)}})
	assert.False(t, whole, "verification's listing is the whole reading")
	assert.Equal(t, []UpkeepWrite{{Controller: "external-dns-weu", Name: intName, New: targets[aks01Owner], TTL: 60}}, upkeep)
	_, upkeep = round(start.Add(5*time.Second), nil)
	assert.Empty(t, upkeep, "the same listing is not used twice")
}

// answered are the answers of a healthy cluster's round to rd at now: its own gateway answers,
// every heartbeat and pass succeeds, and every read returns zone; whole says a read was whole.
func answered(rd Ready, now time.Time, zone ZoneReading) (a Answers, whole bool) {
	a = Answers{OwnAnswers: true, Probes: map[string]bool{}}
	for range rd.Heartbeats {
		a.Heartbeats = append(a.Heartbeats, ZoneAnswer{Started: now, Finished: now})
	}
	for _, r := range rd.Reads {
		whole = whole || r.Full
		a.Reads = append(a.Reads, ReadAnswer{ZoneAnswer: ZoneAnswer{Started: now, Finished: now}, Reading: zone})
	}
	for range rd.Passes {
		a.Passes = append(a.Passes, PassAnswer{At: now})
	}
	return a, whole
}
