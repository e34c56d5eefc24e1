package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAdvance(t *testing.T) {
	now := time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC)
	before := now.Add(-time.Hour)
	const threshold = 3
	lost := Judgement{State: Lost, Reason: "HeartbeatStale", Message: "mine"}
	serving := Judgement{State: Serving, Reason: "GatewayAnswers"}
	pending := Judgement{State: Unreachable, Reason: ReasonWitnessPending}
	drained := Judgement{State: Drained, Reason: ReasonDrainRequested}
	earlierLost := map[string]RegionView{"weu": {Judgement: Judgement{State: Lost, Reason: "HeartbeatStale", Message: "an earlier leader's"}, Since: before}}
	probed := func(p Probes) map[string]RegionView { return map[string]RegionView{"weu": {Probes: p}} }
	tests := []struct {
		name        string
		views       map[string]RegionView
		judged      Judgement
		earlier     map[string]RegionView
		want        RegionView
		wantChange  bool
		wantChanged bool
	}{
		{"a first judgement: no Event, the status changes", probed(Probes{Successes: 1}), serving, nil,
			RegionView{Judgement: serving, Since: now, Probes: Probes{Successes: 1}}, false, true},
		{"a new leader, one failed probe of three: the earlier leader's Lost, since then", probed(Probes{Failures: 1}), serving, earlierLost,
			RegionView{Judgement: earlierLost["weu"].Judgement, Since: before, Probes: Probes{Failures: 1}, Inherited: true}, false, false},
		{"a new leader whose probes agree: its own message, the earlier since, no Event", probed(Probes{Failures: 3}), lost, earlierLost,
			RegionView{Judgement: lost, Since: before, Probes: Probes{Failures: 3}}, false, false},
		{"a new leader whose gateway probe answered: decided, Serving now, an Event", probed(Probes{Successes: 1}), serving, earlierLost,
			RegionView{Judgement: serving, Since: now, Probes: Probes{Successes: 1}}, true, true},
		{"a new leader, probes decided, heartbeats not yet followed: the earlier Lost stays", probed(Probes{Failures: 3}), pending, earlierLost,
			RegionView{Judgement: earlierLost["weu"].Judgement, Since: before, Probes: Probes{Failures: 3}, Inherited: true}, false, false},
		{"Lost stays Lost while the heartbeats are pending", map[string]RegionView{"weu": {Judgement: lost, Since: before, Probes: Probes{Failures: 9}}}, pending, nil,
			RegionView{Judgement: lost, Since: before, Probes: Probes{Failures: 9}}, false, false},
		{"Unreachable to pending: a change of reason, an Event", map[string]RegionView{"weu": {Judgement: Judgement{State: Unreachable, Reason: "WitnessSaysAlive"}, Since: before, Probes: Probes{Failures: 3}}},
			pending, nil, RegionView{Judgement: pending, Since: now, Probes: Probes{Failures: 3}}, true, true},
		{"Serving to Drained: an Event", map[string]RegionView{"weu": {Judgement: serving, Since: before, Probes: Probes{Successes: 4}}}, drained, nil,
			RegionView{Judgement: drained, Since: now, Probes: Probes{Successes: 4}}, true, true},
		{"the same judgement, a new message: since kept, no Event", map[string]RegionView{"weu": {Judgement: Judgement{State: Lost, Reason: "HeartbeatStale", Message: "old"}, Since: before, Probes: Probes{Failures: 5}}},
			lost, nil, RegionView{Judgement: lost, Since: before, Probes: Probes{Failures: 5}}, false, false},
		{"an earlier status without a state is no judgement", probed(Probes{Failures: 1}), serving, map[string]RegionView{"weu": {}},
			RegionView{Judgement: serving, Since: now, Probes: Probes{Failures: 1}}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, changes, changed := Advance(now, "neu", tt.views, map[string]Judgement{"weu": tt.judged, "neu": serving}, tt.earlier, threshold)
			assert.Equal(t, map[string]RegionView{"weu": tt.want}, next)
			if tt.wantChange {
				assert.Equal(t, []Change{{"weu", tt.judged}}, changes)
			} else {
				assert.Empty(t, changes)
			}
			assert.Equal(t, tt.wantChanged, changed)
		})
	}
}

func TestAdvance_ForgetsARegionNoHeartbeatNames(t *testing.T) {
	now := time.Unix(1000, 0)
	views := map[string]RegionView{"weu": {Judgement: Judgement{State: Serving, Reason: "GatewayAnswers"}, Since: now}}
	next, changes, changed := Advance(now, "neu", views, map[string]Judgement{"neu": {State: Serving}}, nil, 3)
	assert.Empty(t, next)
	assert.Empty(t, changes)
	assert.True(t, changed, "the status no longer lists it")
}

func TestOwnGateway_After(t *testing.T) {
	t0 := time.Unix(1000, 0)
	g := OwnGateway{}.After(true, t0).After(true, t0.Add(time.Second))
	assert.Equal(t, OwnGateway{Probes: Probes{Successes: 2}, HealthySince: t0}, g, "healthy since the first answer of the run")
	g = g.After(false, t0.Add(2*time.Second))
	assert.Equal(t, OwnGateway{Probes: Probes{Failures: 1}}, g, "a failure ends the run")
	g = g.After(true, t0.Add(3*time.Second))
	assert.Equal(t, OwnGateway{Probes: Probes{Successes: 1}, HealthySince: t0.Add(3 * time.Second)}, g)
}
