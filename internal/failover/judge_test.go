package failover

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestJudgeRegion(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	s := DefaultSettings
	fresh := func(zone string, answers bool) Heartbeat {
		return Heartbeat{Zone: zone, Read: true, Found: true, At: now.Add(-10 * time.Second), GatewayAnswers: answers}
	}
	stale := func(zone string) Heartbeat {
		return Heartbeat{Zone: zone, Read: true, Found: true, At: now.Add(-31 * time.Second), GatewayAnswers: true}
	}
	missing := func(zone string) Heartbeat { return Heartbeat{Zone: zone, Read: true} }
	// firstSeen: a value this cluster just saw for the first time, its writer's clock 31 s behind
	// (or the heartbeat really that old: this cluster cannot tell yet).
	firstSeen := func(zone string) Heartbeat {
		return Heartbeat{Zone: zone, Read: true, Found: true, At: now.Add(-31 * time.Second), Observed: now, GatewayAnswers: true}
	}
	unread := func(zone string) Heartbeat { return Heartbeat{Zone: zone} }
	malformed := func(zone string) Heartbeat {
		return Heartbeat{Zone: zone, Read: true, Cluster: "aks01", Malformed: "v=spf1 -all"}
	}
	draining := func(b Heartbeat) Heartbeat { b.Draining = true; return b }
	down := Probes{Failures: 3}
	tests := []struct {
		name       string
		probes     Probes
		beats      []Heartbeat
		want       State
		wantReason string
	}{
		{"the gateway answers: serving, whatever the zones say", Probes{Successes: 5}, []Heartbeat{stale("weu"), stale("neu"), stale("frc")}, Serving, "GatewayAnswers"},
		{"probes failing, but fewer than the threshold: serving (a flapping gateway does not flap DNS)", Probes{Failures: 2}, []Heartbeat{stale("weu"), stale("neu"), stale("frc")}, Serving, "GatewayAnswers"},
		{"lost: no fresh heartbeat in any zone", down, []Heartbeat{stale("weu"), stale("neu"), missing("frc")}, Lost, "HeartbeatStale"},
		{"lost: stale in a majority, fresh in one (the region reaches one zone only)", down, []Heartbeat{stale("weu"), stale("neu"), fresh("frc", true)}, Lost, "HeartbeatStale"},
		{"partitioned: fresh and healthy in every zone, not lost", down, []Heartbeat{fresh("weu", true), fresh("neu", true), fresh("frc", true)}, Unreachable, "WitnessSaysAlive"},
		{"partitioned: stale in a minority only", down, []Heartbeat{stale("weu"), fresh("neu", true), fresh("frc", true)}, Unreachable, "WitnessSaysAlive"},
		{"alive, its gateway down by its own probes: lost", down, []Heartbeat{fresh("weu", false), fresh("neu", false), fresh("frc", false)}, Lost, "GatewayDown"},
		{"the newest heartbeat decides the region's own view", down,
			[]Heartbeat{fresh("weu", false), {Zone: "neu", Read: true, Found: true, At: now.Add(-2 * time.Second), GatewayAnswers: true}}, Unreachable, "WitnessSaysAlive"},
		{"unreadable zones are no evidence: nothing moves", down, []Heartbeat{unread("weu"), unread("neu"), stale("frc")}, Unreachable, "WitnessUnreadable"},
		{"stale in one of two zones is not a majority", down, []Heartbeat{stale("weu"), unread("neu")}, Unreachable, "WitnessUnreadable"},
		{"stale in both of two zones", down, []Heartbeat{stale("weu"), missing("neu")}, Lost, "HeartbeatStale"},
		{"no zone at all: no witness, nothing moves", down, nil, Unreachable, "WitnessUnreadable"},
		{"heartbeats just seen that the writer's clock calls stale: not yet known, nothing moves", down,
			[]Heartbeat{firstSeen("weu"), firstSeen("neu"), firstSeen("frc")}, Unreachable, ReasonWitnessPending},
		{"a definite majority decides beside a pending zone", down, []Heartbeat{stale("weu"), missing("neu"), firstSeen("frc")}, Lost, "HeartbeatStale"},
		{"a fresh heartbeat vouches beside pending ones", down, []Heartbeat{firstSeen("weu"), firstSeen("neu"), fresh("frc", true)}, Unreachable, "WitnessSaysAlive"},
		{"drained: its newest heartbeat asks for it, its gateway answering", Probes{Successes: 5},
			[]Heartbeat{draining(fresh("weu", true)), fresh("neu", true)}, Drained, ReasonDrainRequested},
		{"drained: its gateway down too", down, []Heartbeat{draining(fresh("weu", false))}, Drained, ReasonDrainRequested},
		{"drained: the drain's heartbeat stands when the zone is not read this round", Probes{Successes: 5},
			[]Heartbeat{func() Heartbeat { b := draining(fresh("weu", true)); b.Read = false; return b }()}, Drained, ReasonDrainRequested},
		{"drained: the last word of a cluster that stopped stands", down, []Heartbeat{draining(stale("weu")), missing("neu")}, Drained, ReasonDrainRequested},
		{"a malformed heartbeat is no missing one: nothing moves on it", down, []Heartbeat{malformed("weu")}, Unreachable, ReasonHeartbeatMalformed},
		{"malformed in every zone: nothing is known of the region, its probes unsent", Probes{}, []Heartbeat{malformed("weu"), malformed("neu")}, Unreachable, ReasonHeartbeatMalformed},
		{"malformed in one zone of two, stale in the other: not a majority", down, []Heartbeat{malformed("weu"), stale("neu")}, Unreachable, ReasonHeartbeatMalformed},
		{"malformed in one zone of three, stale in two: the majority decides", down, []Heartbeat{malformed("weu"), stale("neu"), missing("frc")}, Lost, "HeartbeatStale"},
		{"malformed beside a fresh, healthy heartbeat: a partition", down, []Heartbeat{malformed("weu"), fresh("neu", true)}, Unreachable, "WitnessSaysAlive"},
		{"the drain ended: a newer heartbeat without it", Probes{Successes: 5},
			[]Heartbeat{draining(stale("weu")), fresh("neu", true)}, Serving, "GatewayAnswers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := JudgeRegion(now, tt.probes, tt.beats, s)
			if got.State != tt.want || got.Reason != tt.wantReason {
				t.Errorf("JudgeRegion = %s (%s): %s; want %s (%s)", got.State, got.Reason, got.Message, tt.want, tt.wantReason)
			}
			if got.Message == "" {
				t.Error("no message for the platform admin")
			}
		})
	}
}

// A heartbeat this cluster follows is judged on its clock; one it has just met is judged fresh by
// the writer's clock, never stale by it.
func TestHeartbeat_FreshnessAt(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	const staleAfter = 30 * time.Second
	tests := []struct {
		name string
		beat Heartbeat
		want freshness
	}{
		{"not followed, written 10 s ago", Heartbeat{At: now.Add(-10 * time.Second)}, fresh},
		{"not followed, written 31 s ago", Heartbeat{At: now.Add(-31 * time.Second)}, stale},
		{"seen changing 10 s ago, the writer's clock an hour behind", Heartbeat{At: now.Add(-time.Hour), Observed: now.Add(-10 * time.Second), SeenChanging: true}, fresh},
		{"seen changing 31 s ago, the writer's clock an hour ahead", Heartbeat{At: now.Add(time.Hour), Observed: now.Add(-31 * time.Second), SeenChanging: true}, stale},
		{"first seen now, the writer's clock says 5 s ago", Heartbeat{At: now.Add(-5 * time.Second), Observed: now}, fresh},
		{"first seen now, the writer's clock says a minute ago", Heartbeat{At: now.Add(-time.Minute), Observed: now}, pending},
		{"first seen 29 s ago, the writer's clock says an hour ago", Heartbeat{At: now.Add(-time.Hour), Observed: now.Add(-29 * time.Second)}, pending},
		{"first seen 31 s ago and unchanged since", Heartbeat{At: now.Add(-time.Hour), Observed: now.Add(-31 * time.Second)}, stale},
		{"first seen 31 s ago, the writer's clock ahead: unchanged is stale all the same", Heartbeat{At: now.Add(time.Hour), Observed: now.Add(-31 * time.Second)}, stale},
	}
	for _, tt := range tests {
		if got := tt.beat.freshnessAt(now, staleAfter); got != tt.want {
			t.Errorf("%s: freshnessAt = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestMayFailBack(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	s := DefaultSettings
	tests := []struct {
		name         string
		healthySince time.Time
		probes       Probes
		want         bool
	}{
		{"healthy for the whole wait, gateway answering", now.Add(-5 * time.Minute), Probes{Successes: 3}, true},
		{"healthy, but not long enough", now.Add(-4 * time.Minute), Probes{Successes: 30}, false},
		{"not healthy now", time.Time{}, Probes{Successes: 30}, false},
		{"healthy heartbeats, but the gateway does not answer from here", now.Add(-time.Hour), Probes{Failures: 1}, false},
		{"answering again, but too few probes in a row", now.Add(-time.Hour), Probes{Successes: 2}, false},
	}
	for _, tt := range tests {
		if got := MayFailBack(now, tt.healthySince, tt.probes, s); got != tt.want {
			t.Errorf("%s: MayFailBack = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestStandIn(t *testing.T) {
	states := map[string]State{"weu": Lost, "neu": Unreachable, "frc": Serving, "swc": Serving}
	tests := []struct {
		name     string
		standIns []string
		want     string
	}{
		{"the first serving stand-in in the policy's order", []string{"neu", "frc", "swc"}, "frc"},
		{"the order decides", []string{"swc", "frc"}, "swc"},
		{"the lost region never stands in for itself", []string{"weu", "frc"}, "frc"},
		{"none serving: nobody takes the names", []string{"neu", "weu"}, ""},
		{"a region nobody judged is not serving", []string{"ger"}, ""},
	}
	for _, tt := range tests {
		if got := StandIn("weu", tt.standIns, states); got != tt.want {
			t.Errorf("%s: StandIn = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// A gateway that answers every other probe (flapping) is never judged lost, whatever the zones
// say, and a run of failures is judged the moment it reaches the threshold.
func TestJudgeRegion_FlappingProbesMoveNothing(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	stale := []Heartbeat{{Zone: "weu", Read: true}, {Zone: "neu", Read: true}, {Zone: "frc", Read: true}} // no heartbeat anywhere
	for _, tt := range []struct {
		name     string
		answers  []bool
		wantLost int // the probe after which the region is first Lost; -1: never
	}{
		{"every other probe answers", []bool{false, true, false, true, false, true, false, true, false, true}, -1},
		{"two of three fail", []bool{false, false, true, false, false, true, false, false, true}, -1},
		{"three in a row fail", []bool{false, true, false, false, false, true}, 4},
	} {
		var p Probes
		lost := -1
		for i, answered := range tt.answers {
			p = p.After(answered)
			if JudgeRegion(now, p, stale, DefaultSettings).State == Lost && lost < 0 {
				lost = i
			}
		}
		if lost != tt.wantLost {
			t.Errorf("%s: first Lost after probe %d, want %d", tt.name, lost, tt.wantLost)
		}
	}
}

// never is a row's within when the region must not be Lost (or Drained) in the whole run.
const never = time.Duration(-1)

// silentRegion is one run of a reader (aks01 of weu, reading every zone every probe interval, its
// probes of the other region failing throughout) against the record a cluster of another region
// left in every zone: what the reader judges that region, and when.
type silentRegion struct {
	name string
	// record is the record's name relative to its zone ("" for aks02.neu._router-heartbeat), the
	// judged region the one it names.
	record string
	// values are its value in each zone in turn; "AT" stands for when it was written.
	values []string
	// every is how often its writer still writes it (a new AT each time); 0 for a writer silent
	// since the reader first read the zones.
	every time.Duration
	// want is the judgement (state and reason) first reached no earlier than after and no later
	// than within after that first reading; with within never, the judgement at the end of the
	// run, the region never Lost nor Drained before it.
	want          State
	reason        string
	after, within time.Duration
	// overstated says the judgement names the heartbeat's interval as longer than any writer may
	// state.
	overstated bool
	// first, when set, is the reason of the judgement at the reader's first reading: what the
	// writer's clock may say before the reader's own tells (WitnessPending, WitnessSaysAlive).
	first string
}

// runSilentRegion runs row for an hour of the reader's clock in a fleet of clusters (aks01, the
// reader; aks02, the row's; the others, of region swc, alive) writing zones zones, and returns
// when the row's judgement was first reached (never if not), the judgement then (or at the end)
// and the fleet the reader counted.
func runSilentRegion(t *testing.T, s Settings, clusters, zones int, row silentRegion) (time.Duration, Judgement, Fleet) {
	t.Helper()
	const step, run = 5 * time.Second, time.Hour
	start := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	record := cmp.Or(row.record, "aks02.neu."+HeartbeatLabel)
	o := Observations{}
	written := start
	var last Judgement
	var fleet Fleet
	for now := start; now.Sub(start) <= run; now = now.Add(step) {
		if row.every > 0 && now.Sub(written) >= row.every {
			written = now
		}
		readings := make([]ZoneReading, zones)
		for i := range zones {
			domain := fmt.Sprintf("z%d.example.com", i)
			// As the zone writer reads a zone (zonewriter's reading.txt): a record under a
			// heartbeat's name is a heartbeat of the cluster and region it names, well-formed or
			// not.
			z := ZoneReading{Controller: "external-dns-z" + strconv.Itoa(i), Read: true, Beats: map[string][]Heartbeat{}}
			add := func(name, value string) {
				cluster, region, ok := ParseHeartbeatName(name+"."+domain, domain)
				if !ok {
					t.Fatalf("%s is no heartbeat's name", name)
				}
				hb, _ := ParseHeartbeat(region, value)
				hb.Cluster, hb.Legacy = cluster, strings.HasPrefix(name, HeartbeatLabel+".")
				z.Beats[region] = append(z.Beats[region], hb)
			}
			live := HeartbeatValue(Heartbeat{At: now, GatewayAnswers: true, Interval: HeartbeatInterval(10*time.Second, clusters, zones, HeartbeatWritesPerMinute)})
			add("aks01.weu."+HeartbeatLabel, live)
			for c := 3; c <= clusters; c++ {
				add(fmt.Sprintf("aks%02d.swc.%s", c, HeartbeatLabel), live)
			}
			add(record, strings.ReplaceAll(row.values[i%len(row.values)], "AT", written.Format(time.RFC3339)))
			readings[i] = z
		}
		readings = o.Observe(now, readings)
		fleet = CountFleet(readings)
		_, region, _ := ParseHeartbeatName(record+".example.com", "example.com")
		probes := map[string]Probes{region: {Failures: 3}, "swc": {Successes: 3}}
		last = JudgeRegions(now, "weu", false, readings, probes, s)[region]
		if now.Equal(start) && row.first != "" && last.Reason != row.first {
			t.Errorf("%s: at the first reading %s (%s), want %s: %s", row.name, last.State, last.Reason, row.first, last.Message)
		}
		if row.within != never && last.State == row.want && last.Reason == row.reason {
			return now.Sub(start), last, fleet
		}
		if row.within == never && last.State.MovesNames() {
			t.Errorf("%s: %s (%s) after %v: %s", row.name, last.State, last.Reason, now.Sub(start), last.Message)
			return now.Sub(start), last, fleet
		}
	}
	return never, last, fleet
}

// when says when a run's judgement was first reached.
func when(d time.Duration) string {
	if d == never {
		return "never within the hour"
	}
	return "after " + d.String()
}

// A region whose clusters stopped writing is judged Lost within a bound this cluster computes
// (Settings.StaleBound: three of the longest interval any writer of the fleet it counts may state),
// whatever its heartbeats say in any field: every field at its extremes, each row saying what the
// judgement must be and within what time of the reader's first reading of the region's last value.
// Two clusters in three zones, the defaults: the bound is 90 s (three of heartbeatStaleAfter, 30
// s, which stands for the configured interval), and the reader reads every 5 s (its probes fail),
// so a region silent since the first reading is Lost at 95 s at the latest. A value that is no
// heartbeat (no time, a gateway state unknown) in a majority of the zones still moves nothing (a
// malformed heartbeat says nothing either way), and the region's own word decides at once: its
// gateway fails, or it asks for a drain.
func TestJudgeRegions_ASilentRegionIsLostWithinTheBound(t *testing.T) {
	s := DefaultSettings
	const written = "at=AT gateway=answers interval=10s owner=external-dns-neu-aks02 addresses=10.1.0.1 targets=aks02-neu-internal.example.com"
	many := func(key, format string, n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf(format, i)
		}
		return key + "=" + strings.Join(items, ",")
	}
	stale := func(name string, values ...string) silentRegion {
		return silentRegion{name: name, values: values, want: Lost, reason: "HeartbeatStale", after: 30 * time.Second, within: 35 * time.Second}
	}
	capped := func(name string, values ...string) silentRegion {
		return silentRegion{name: name, values: values, want: Lost, reason: "HeartbeatStale", after: 90 * time.Second, within: 95 * time.Second, overstated: true}
	}
	pending := func(r silentRegion) silentRegion { r.first = ReasonWitnessPending; return r }
	alive := func(r silentRegion) silentRegion { r.first = "WitnessSaysAlive"; return r }
	named := func(record, name string) silentRegion {
		r := stale(name, written)
		r.record = record
		return r
	}
	rows := []silentRegion{
		stale("as written: 10 s interval, stale after heartbeatStaleAfter", written),

		// at: the writer's clock may call a value fresh until the reader's own clock tells, never stale.
		pending(stale("at: zero", "at=0001-01-01T00:00:00Z gateway=answers interval=10s")),
		pending(stale("at: far past, pending until this cluster's clock tells", "at=1970-01-01T00:00:00Z gateway=answers interval=10s")),
		alive(stale("at: far future, fresh until this cluster's clock tells", "at=9999-12-31T23:59:59Z gateway=answers interval=10s")),
		stale("at: another offset", "at=2026-12-02T19:00:00+14:00 gateway=answers"),
		{name: "at: not a time, in every zone: no heartbeat, nothing moves", values: []string{"at=yesterday gateway=answers interval=10s"},
			want: Unreachable, reason: ReasonHeartbeatMalformed, within: never},
		{name: "at: missing, in every zone: no heartbeat, nothing moves", values: []string{"gateway=answers interval=10s"},
			want: Unreachable, reason: ReasonHeartbeatMalformed, within: never},
		stale("at: not a time in one zone of three, the majority decides", "at=yesterday gateway=answers", written, written),

		// interval: believed up to the bound, whatever it says beyond.
		stale("interval: 0", "at=AT gateway=answers interval=0s"),
		stale("interval: missing", "at=AT gateway=answers"),
		stale("interval: negative", "at=AT gateway=answers interval=-1h"),
		stale("interval: not a duration", "at=AT gateway=answers interval=soon"),
		stale("interval: too large to parse", "at=AT gateway=answers interval=9999999999h"),
		{name: "interval: 29s, within the bound: three of it", values: []string{"at=AT gateway=answers interval=29s"},
			want: Lost, reason: "HeartbeatStale", after: 87 * time.Second, within: 90 * time.Second},
		{name: "interval: 30s, the bound", values: []string{"at=AT gateway=answers interval=30s"},
			want: Lost, reason: "HeartbeatStale", after: 90 * time.Second, within: 95 * time.Second},
		capped("interval: 31s, beyond the bound", "at=AT gateway=answers interval=31s"),
		capped("interval: a day", "at=AT gateway=answers interval=24h"),
		capped("interval: a year", "at=AT gateway=answers interval=8760h"),
		capped("interval: a million hours, three of which overflow a time.Duration", "at=AT gateway=answers interval=1000000h"),
		capped("interval: the largest duration", "at=AT gateway=answers interval=2562047h47m16.854775807s"),
		{name: "interval: a year, in one zone of three: the other two decide", values: []string{"at=AT gateway=answers interval=8760h", written, written},
			want: Lost, reason: "HeartbeatStale", after: 30 * time.Second, within: 35 * time.Second, overstated: true},
		alive(capped("interval: a year, at far future", "at=9999-12-31T23:59:59Z gateway=answers interval=8760h")),
		pending(capped("interval: a year, at far past", "at=1970-01-01T00:00:00Z gateway=answers interval=8760h")),

		// gateway: the region's own word that its gateway fails is definite at once.
		{name: "gateway: fails", values: []string{"at=AT gateway=fails interval=10s"}, want: Lost, reason: "GatewayDown", within: 0},
		{name: "gateway: fails, a year's interval", values: []string{"at=AT gateway=fails interval=8760h"}, want: Lost, reason: "GatewayDown", within: 0, overstated: true},
		{name: "gateway: fails, then answers (the last field counts)", values: []string{"at=AT gateway=fails gateway=answers"}, want: Lost, reason: "HeartbeatStale", after: 30 * time.Second, within: 35 * time.Second},
		{name: "gateway: unknown, in every zone: no heartbeat, nothing moves", values: []string{"at=AT gateway=ANSWERS interval=8760h"},
			want: Unreachable, reason: ReasonHeartbeatMalformed, within: never},
		{name: "gateway: empty, in every zone", values: []string{"at=AT gateway= interval=10s"}, want: Unreachable, reason: ReasonHeartbeatMalformed, within: never},
		stale("gateway: unknown in one zone of three, the majority decides", "at=AT gateway=maybe", written, written),

		// drain: the region's own word, at once, whatever else it says.
		{name: "drain: true", values: []string{written + " drain=true"}, want: Drained, reason: ReasonDrainRequested, within: 0},
		{name: "drain: true, at far past, a year's interval", values: []string{"at=1970-01-01T00:00:00Z gateway=answers drain=true interval=8760h"},
			want: Drained, reason: ReasonDrainRequested, within: 0, overstated: true},
		stale("drain: false", written+" drain=false"),
		stale("drain: not true", written+" drain=yes"),

		// owner, targets and addresses: nothing of the judgement.
		stale("owner: empty", "at=AT gateway=answers interval=10s owner="),
		stale("owner: missing", "at=AT gateway=answers interval=10s"),
		stale("owner: 1,000 characters", "at=AT gateway=answers interval=10s owner="+strings.Repeat("o", 1000)),
		stale("targets and addresses: empty", "at=AT gateway=answers interval=10s targets= addresses="),
		stale("targets and addresses: 10,000 each", "at=AT gateway=answers interval=10s "+many("addresses", "10.1.%d.%d", 10000)+" "+many("targets", "aks02-neu-%d.example.com", 10000)),
		stale("targets and addresses: not names nor addresses", "at=AT gateway=answers interval=10s targets=,,, addresses=::::,-1"),

		// unknown fields: ignored.
		stale("unknown fields", written+" v=2 weight=100 interval-unit=years"),
		stale("words without a value", written+" hello world"),
		stale("quoted, as dig prints it", `"`+written+`"`),
		capped("everything at its extreme", "v=9 at=9999-12-31T23:59:59Z gateway=answers drain=maybe interval=2562047h owner= targets= addresses= x"),

		// cluster and region names, as the record's name gives them.
		named(LegacyHeartbeatName("aks02", "neu", "")[:len(LegacyHeartbeatName("aks02", "neu", ""))-1], "the earlier form of the name"),
		named("AKS02.NEU."+strings.ToUpper(HeartbeatLabel), "upper case"),
		named(strings.Repeat("c", 63)+".neu."+HeartbeatLabel, "a 63-character cluster name"),
		named("aks01.neu."+HeartbeatLabel, "this cluster's name, in another region"),
		named("aks02."+strings.Repeat("r", 63)+"."+HeartbeatLabel, "a 63-character region name"),
		{name: "this cluster's own region: judged by nobody here", record: "aks02.weu." + HeartbeatLabel, values: []string{"at=AT gateway=answers interval=8760h"},
			want: Serving, reason: "OwnRegion", within: never},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			got, j, fleet := runSilentRegion(t, s, 2, 3, row)
			switch {
			case row.within == never && (j.State != row.want || j.Reason != row.reason):
				t.Errorf("after an hour: %s (%s), want %s (%s): %s", j.State, j.Reason, row.want, row.reason, j.Message)
			case row.within != never && (got == never || got < row.after || got > row.within):
				t.Errorf("%s (%s) %s, want it after %v and within %v (at the end: %s (%s): %s)", row.want, row.reason, when(got), row.after, row.within, j.State, j.Reason, j.Message)
			case row.within != never && row.want == Lost && got > s.StaleBound(fleet)+5*time.Second:
				t.Errorf("Lost after %v, beyond the bound (%v) and a reading", got, s.StaleBound(fleet))
			}
			if said := strings.Contains(j.Message, "longer than any writer may state"); said != row.overstated {
				t.Errorf("the message names the interval as overstated: %v, want %v: %s", said, row.overstated, j.Message)
			}
		})
	}
}

// The same in a fleet of 20 clusters × 10 zones, whose writers state 2 minutes (HeartbeatInterval):
// the reader counts 20 clusters, 25 with the margin, so the bound is 2m30s and a silent region is
// Lost within 7m30s and a reading, whatever its interval says. A region that still writes, only
// cut off from this cluster's probes (a partition), is never Lost while it writes at the interval
// it states for the fleet as the reader counts it, or as a writer counting a few more clusters
// does, or up to three times the bound (fewer of its writes may then go missing); nor when it
// writes often whatever it states. Only a writer whose interval is beyond three times the bound
// (one counting four times the clusters this one does) goes stale between its writes.
func TestJudgeRegions_ALargeFleetsSilentRegionIsLostWithinTheBound(t *testing.T) {
	s := DefaultSettings
	rows := []silentRegion{
		{name: "silent, stating the fleet's 2m", values: []string{"at=AT gateway=answers interval=2m0s"}, want: Lost, reason: "HeartbeatStale", after: 6 * time.Minute, within: 6*time.Minute + 5*time.Second},
		{name: "silent, stating 2m30s (it counts 25 clusters)", values: []string{"at=AT gateway=answers interval=2m30s"}, want: Lost, reason: "HeartbeatStale", after: 450 * time.Second, within: 455 * time.Second},
		{name: "silent, stating a year", values: []string{"at=AT gateway=answers interval=8760h"}, want: Lost, reason: "HeartbeatStale", after: 450 * time.Second, within: 455 * time.Second, overstated: true},
		{name: "silent, stating 4m (it counts 40 clusters)", values: []string{"at=AT gateway=answers interval=4m0s"}, want: Lost, reason: "HeartbeatStale", after: 450 * time.Second, within: 455 * time.Second, overstated: true},
		{name: "partitioned, writing every 2m as it states", values: []string{"at=AT gateway=answers interval=2m0s"}, every: 2 * time.Minute, want: Unreachable, reason: "WitnessSaysAlive", within: never},
		{name: "partitioned, writing every 2m30s as it states", values: []string{"at=AT gateway=answers interval=2m30s"}, every: 150 * time.Second, want: Unreachable, reason: "WitnessSaysAlive", within: never},
		{name: "partitioned, writing every 7m as it states (beyond the bound, within three of it)", values: []string{"at=AT gateway=answers interval=7m0s"}, every: 7 * time.Minute,
			want: Unreachable, reason: "WitnessSaysAlive", within: never, overstated: true},
		{name: "partitioned, writing every 10s, stating a year", values: []string{"at=AT gateway=answers interval=8760h"}, every: 10 * time.Second,
			want: Unreachable, reason: "WitnessSaysAlive", within: never, overstated: true},
		{name: "partitioned, writing every 8m as it states (beyond three of the bound): stale between writes", values: []string{"at=AT gateway=answers interval=8m0s"}, every: 8 * time.Minute,
			want: Lost, reason: "HeartbeatStale", after: 450 * time.Second, within: 455 * time.Second, overstated: true},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			got, j, fleet := runSilentRegion(t, s, 20, 10, row)
			if fleet != (Fleet{Clusters: 20, Zones: 10}) || s.StaleBound(fleet) != 450*time.Second {
				t.Fatalf("the reader counts %+v, bound %v; want 20 clusters × 10 zones, 7m30s", fleet, s.StaleBound(fleet))
			}
			switch {
			case row.within == never && (j.State != row.want || j.Reason != row.reason):
				t.Errorf("after an hour: %s (%s), want %s (%s): %s", j.State, j.Reason, row.want, row.reason, j.Message)
			case row.within != never && (got == never || got < row.after || got > row.within):
				t.Errorf("%s (%s) %s, want it after %v and within %v (at the end: %s (%s): %s)", row.want, row.reason, when(got), row.after, row.within, j.State, j.Reason, j.Message)
			}
			if said := strings.Contains(j.Message, "longer than any writer may state"); said != row.overstated {
				t.Errorf("the message names the interval as overstated: %v, want %v: %s", said, row.overstated, j.Message)
			}
		})
	}
}
