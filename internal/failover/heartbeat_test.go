package failover

import (
	"testing"
	"time"
)

func TestHeartbeatName(t *testing.T) {
	for _, tt := range []struct{ zone, want string }{
		{"example.com", "_router-heartbeat.aks01.weu.example.com"},
		{"example.com.", "_router-heartbeat.aks01.weu.example.com"},
	} {
		if got := HeartbeatName("aks01", "weu", tt.zone); got != tt.want {
			t.Errorf("HeartbeatName(%q) = %q, want %q", tt.zone, got, tt.want)
		}
	}
}

// What a cluster writes reads back as the same heartbeat; anything else is no heartbeat.
func TestParseHeartbeat(t *testing.T) {
	at := time.Date(2026, 11, 27, 3, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name, value string
		want        Heartbeat
		ok          bool
	}{
		{"written, answering", HeartbeatValue(at, true), Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true}, true},
		{"written, failing", HeartbeatValue(at, false), Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC()}, true},
		{"quoted, as dig prints it", `"` + HeartbeatValue(at, true) + `"`, Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true}, true},
		{"fields in another order", "gateway=answers at=2026-11-27T02:00:00Z", Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true}, true},
		{"no time", "gateway=answers", Heartbeat{Zone: "weu", Read: true}, false},
		{"an unknown gateway state", "at=2026-11-27T02:00:00Z gateway=maybe", Heartbeat{Zone: "weu", Read: true}, false},
		{"somebody else's TXT", "v=spf1 -all", Heartbeat{Zone: "weu", Read: true}, false},
	}
	for _, tt := range tests {
		got, ok := ParseHeartbeat("weu", tt.value)
		if ok != tt.ok || got.Zone != tt.want.Zone || got.Read != tt.want.Read || got.Found != tt.want.Found ||
			!got.At.Equal(tt.want.At) || got.GatewayAnswers != tt.want.GatewayAnswers {
			t.Errorf("%s: ParseHeartbeat(%q) = %+v, %v; want %+v, %v", tt.name, tt.value, got, ok, tt.want, tt.ok)
		}
	}
}
