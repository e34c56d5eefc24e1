package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// One round from what aks02 (neu) read and probed: weu's heartbeat stale, its gateway failing.
func TestRound(t *testing.T) {
	now := time.Unix(1000, 0).Add(time.Minute)
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu", StandIns: []string{"neu"}}
	pass := Pass{Controller: "external-dns-weu", Hostname: apiName, TXTName: apiTXT, TTL: 300,
		Old: ownership(aks01Owner), New: ownership(aks02Owner), From: aks01Owner, To: aks02Owner, Region: "weu",
		Namespace: "myapp", Endpoint: "api-route-external-dns-weu"}
	serving := map[string]RegionView{"weu": {Judgement: Judgement{State: Serving, Reason: "GatewayAnswers"}, Since: now.Add(-time.Hour), Probes: Probes{Failures: 3}}}
	input := func(mut func(*RoundInput)) RoundInput {
		in := RoundInput{Now: now, Own: "neu", Settings: DefaultSettings, Readings: []ZoneReading{weuZone()}, Ownership: []ZoneReading{weuZone()},
			Probes: map[string]Probes{"weu": {Failures: 3}}, Names: []Name{api}, Views: serving}
		if mut != nil {
			mut(&in)
		}
		return in
	}
	tests := []struct {
		name          string
		in            RoundInput
		wantState     State
		wantTakeovers []Pass
		wantChange    bool
		wantLanded    []Pass
		wantHeld      int
	}{
		{"lost: the name is taken, the change announced", input(nil), Lost, []Pass{pass}, true, nil, 0},
		{"probes answering: serving, nothing moves, nothing to announce", input(func(in *RoundInput) {
			in.Probes = map[string]Probes{"weu": {Successes: 3}}
			v := in.Views["weu"]
			v.Probes = Probes{Successes: 3}
			in.Views = map[string]RegionView{"weu": v}
		}), Serving, nil, false, nil, 0},
		{"the zone not read whole this round: judged, but nothing passes", input(func(in *RoundInput) {
			in.Ownership = []ZoneReading{weuZone(func(z *ZoneReading) { z.Read = false })}
		}), Lost, nil, true, nil, 0},
		{"an earlier write that timed out landed: nothing to write again, it is announced", input(func(in *RoundInput) {
			in.Ownership = []ZoneReading{weuZone(func(z *ZoneReading) { z.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks02Owner)}} })}
			in.Unanswered = []Pass{pass}
		}), Lost, nil, true, []Pass{pass}, 0},
		{"a takeover this leader made stands while the zone says so", input(func(in *RoundInput) {
			in.Ownership = []ZoneReading{weuZone(func(z *ZoneReading) { z.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks02Owner)}} })}
			in.Held = []Pass{pass}
		}), Lost, nil, true, nil, 1},
		{"a takeover the zone no longer says is ours is forgotten", input(func(in *RoundInput) { in.Held = []Pass{pass} }), Lost, []Pass{pass}, true, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Round(tt.in)
			assert.Equal(t, tt.wantState, out.Judged["weu"].State, out.Judged["weu"].Message)
			assert.Equal(t, tt.wantState, out.Views["weu"].Judgement.State, "the view kept")
			assert.Equal(t, tt.wantTakeovers, out.Takeovers)
			assert.Equal(t, tt.wantChange, len(out.Changes) == 1, "changes: %+v", out.Changes)
			assert.Equal(t, tt.wantLanded, out.Landed)
			assert.Len(t, out.Held, tt.wantHeld)
			assert.Empty(t, out.Reclaims, "no failback here")
		})
	}
}

func TestMarks(t *testing.T) {
	held := Pass{Controller: "external-dns-weu", Hostname: apiName, Region: "weu", Namespace: "myapp", Endpoint: "api-route-external-dns-weu"}
	unmarked := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu"}
	marked := unmarked
	marked.TakenFrom = "weu"
	returned := Name{Controller: "external-dns-weu", Hostname: "web.example.com", Namespace: "web", Endpoint: "web-route-external-dns-weu", TakenFrom: "weu"}
	tests := []struct {
		name      string
		held      []Pass
		names     []Name
		returned  []Name
		taken     []Pass
		wantSet   []Pass
		wantClear []Name
	}{
		{"a held takeover whose DNSEndpoint lacks its mark gets it", []Pass{held}, []Name{unmarked}, nil, nil, []Pass{held}, nil},
		{"marked already: nothing to write", []Pass{held}, []Name{marked}, nil, nil, nil, nil},
		{"passed this round: the pass wrote its mark", []Pass{held}, []Name{unmarked}, nil, []Pass{held}, nil, nil},
		{"a name that went back loses its mark", nil, nil, []Name{returned}, nil, nil, []Name{returned}},
		{"a name that went back and was taken again this round keeps it", nil, nil, []Name{returned},
			[]Pass{{Namespace: "web", Endpoint: "web-route-external-dns-weu", Region: "weu"}}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, clear := Marks(tt.held, tt.names, tt.returned, tt.taken)
			assert.Equal(t, tt.wantSet, set)
			assert.Equal(t, tt.wantClear, clear)
		})
	}
}
