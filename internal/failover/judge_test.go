package failover

import (
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
