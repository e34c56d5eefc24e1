package failover

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHeartbeatName(t *testing.T) {
	for _, tt := range []struct{ zone, want string }{
		{"example.com", "aks01.weu._router-heartbeat.example.com"},
		{"example.com.", "aks01.weu._router-heartbeat.example.com"},
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
		{"written, answering", HeartbeatValue(Heartbeat{At: at, GatewayAnswers: true}), Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true}, true},
		{"written, failing", HeartbeatValue(Heartbeat{At: at, GatewayAnswers: false}), Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC()}, true},
		{"quoted, as dig prints it", `"` + HeartbeatValue(Heartbeat{At: at, GatewayAnswers: true}) + `"`, Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true}, true},
		{"with owner and targets", HeartbeatValue(Heartbeat{At: at, GatewayAnswers: true, Owner: "external-dns-weu-aks01", Targets: []string{"aks01-weu-internal.example.com", "aks01-weu-public.example.com"}}),
			Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true, Owner: "external-dns-weu-aks01",
				Targets: []string{"aks01-weu-internal.example.com", "aks01-weu-public.example.com"}}, true},
		{"with addresses", HeartbeatValue(Heartbeat{At: at, GatewayAnswers: true, Owner: "external-dns-weu-aks01", Targets: []string{"aks01-weu-internal.example.com"}, Addresses: []string{"10.0.0.1", "fd00::1"}}),
			Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true, Owner: "external-dns-weu-aks01",
				Targets: []string{"aks01-weu-internal.example.com"}, Addresses: []string{"10.0.0.1", "fd00::1"}}, true},
		{"draining, its gateway answering", HeartbeatValue(Heartbeat{At: at, GatewayAnswers: true, Draining: true}),
			Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true, Draining: true}, true},
		{"fields in another order", "gateway=answers at=2026-11-27T02:00:00Z", Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true}, true},
		{"no time", "gateway=answers", Heartbeat{Zone: "weu", Read: true, Malformed: "gateway=answers"}, false},
		{"an unknown gateway state", "at=2026-11-27T02:00:00Z gateway=maybe", Heartbeat{Zone: "weu", Read: true, Malformed: "at=2026-11-27T02:00:00Z gateway=maybe"}, false},
		{"somebody else's TXT", "v=spf1 -all", Heartbeat{Zone: "weu", Read: true, Malformed: "v=spf1 -all"}, false},
		{"empty", "", Heartbeat{Zone: "weu", Read: true, Malformed: `""`}, false},
		{"long: cut for the status", strings.Repeat("x", 300), Heartbeat{Zone: "weu", Read: true, Malformed: strings.Repeat("x", 64) + "…"}, false},
	}
	for _, tt := range tests {
		got, ok := ParseHeartbeat("weu", tt.value)
		if ok != tt.ok || got.Zone != tt.want.Zone || got.Read != tt.want.Read || got.Found != tt.want.Found || got.Malformed != tt.want.Malformed ||
			!got.At.Equal(tt.want.At) || got.GatewayAnswers != tt.want.GatewayAnswers || got.Draining != tt.want.Draining || got.Owner != tt.want.Owner ||
			!slices.Equal(got.Targets, tt.want.Targets) || !slices.Equal(got.Addresses, tt.want.Addresses) {
			t.Errorf("%s: ParseHeartbeat(%q) = %+v, %v; want %+v, %v", tt.name, tt.value, got, ok, tt.want, tt.ok)
		}
	}
}

// A heartbeat names every target of a cluster with many gateways (20 here, over 255 bytes: several
// strings of one TXT record); past 1,024 bytes, the longest TXT value Azure DNS takes, the targets
// that do not fit are left out, never cut.
func TestHeartbeatValue_KeepsWholeTargetsUpTo1024Bytes(t *testing.T) {
	targets := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("aks01-weu-gateway-%02d.example.com", i))
		}
		return out
	}
	v := HeartbeatValue(Heartbeat{At: time.Unix(0, 0), GatewayAnswers: true, Owner: "external-dns-weu-aks01", Targets: targets(20)})
	hb, ok := ParseHeartbeat("weu", v)
	if !ok || len(v) <= 255 || !slices.Equal(hb.Targets, targets(20)) {
		t.Errorf("want all 20 targets in %d bytes; got %v from %s", len(v), hb.Targets, v)
	}

	v = HeartbeatValue(Heartbeat{At: time.Unix(0, 0), GatewayAnswers: true, Owner: "external-dns-weu-aks01", Targets: targets(40)})
	if len(v) > 1024 {
		t.Fatalf("%d bytes: %s", len(v), v)
	}
	hb, ok = ParseHeartbeat("weu", v)
	if !ok || len(hb.Targets) == 0 || len(hb.Targets) == 40 || !slices.Equal(hb.Targets, targets(40)[:len(hb.Targets)]) {
		t.Errorf("want the first targets that fit, whole; got %v from %s", hb.Targets, v)
	}
	if strings.Contains(v, "gateway-39") {
		t.Errorf("the last target cannot fit: %s", v)
	}
}

func TestTXTStrings(t *testing.T) {
	long := strings.Repeat("a", 255) + strings.Repeat("b", 255) + "c"
	for _, tt := range []struct {
		name, value string
		want        []string
	}{
		{"empty: one empty string", "", []string{""}},
		{"short: one string", "at=2026-11-27T03:00:00Z gateway=answers", []string{"at=2026-11-27T03:00:00Z gateway=answers"}},
		{"exactly 255 bytes: one string", strings.Repeat("a", 255), []string{strings.Repeat("a", 255)}},
		{"longer: 255-byte strings, the rest last", long, []string{strings.Repeat("a", 255), strings.Repeat("b", 255), "c"}},
	} {
		got := TXTStrings(tt.value)
		if !slices.Equal(got, tt.want) || strings.Join(got, "") != tt.value {
			t.Errorf("%s: TXTStrings = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParseHeartbeatName(t *testing.T) {
	for _, tt := range []struct {
		name, zone      string
		cluster, region string
		ok              bool
	}{
		{"aks01.weu._router-heartbeat.example.com.", "example.com", "aks01", "weu", true},
		{"aks01.weu._ROUTER-HEARTBEAT.Example.com", "example.com.", "aks01", "weu", true},
		// The earlier form, which earlier development builds write.
		{"_router-heartbeat.aks01.weu.example.com.", "example.com", "aks01", "weu", true},
		{"_ROUTER-HEARTBEAT.aks01.weu.Example.com", "example.com.", "aks01", "weu", true},
		{LegacyHeartbeatName("aks-01", "west-eu", "example.com"), "example.com", "aks-01", "west-eu", true},
		{"aks01.weu._router-heartbeat.other.com.", "example.com", "", "", false},
		{"weu._router-heartbeat.example.com.", "example.com", "", "", false},
		{"a.b.c._router-heartbeat.example.com.", "example.com", "", "", false},
		{"_router-heartbeat.example.com.", "example.com", "", "", false},
		{HeartbeatName("aks-01", "west-eu", "example.com"), "example.com", "aks-01", "west-eu", true},
		{"_router-heartbeat.aks01.weu.other.com.", "example.com", "", "", false},
		{"_router-heartbeat.weu.example.com.", "example.com", "", "", false},
		{"_router-heartbeat.a.b.c.example.com.", "example.com", "", "", false},
		{"weu-p-cname-api.example.com.", "example.com", "", "", false},
	} {
		cluster, region, ok := ParseHeartbeatName(tt.name, tt.zone)
		if cluster != tt.cluster || region != tt.region || ok != tt.ok {
			t.Errorf("ParseHeartbeatName(%q, %q) = %q, %q, %v; want %q, %q, %v", tt.name, tt.zone, cluster, region, ok, tt.cluster, tt.region, tt.ok)
		}
	}
}

// A fleet's heartbeats fit the write budget: the configured interval while they do, longer as
// clusters and zones grow (each cluster writes each zone once an interval).
func TestHeartbeatInterval(t *testing.T) {
	for _, tt := range []struct {
		name            string
		clusters, zones int
		want            time.Duration
	}{
		{"2 clusters, 3 zones: 36 writes a minute at 10 s", 2, 3, 10 * time.Second},
		{"16 clusters, 1 zone: 96 a minute", 16, 1, 10 * time.Second},
		{"20 clusters, 10 zones: 200 heartbeats to spread over a minute at 100 a minute", 20, 10, 2 * time.Minute},
		{"6 clusters, 10 zones", 6, 10, 36 * time.Second},
		{"RFC 2136 zones only: no budget", 20, 0, 10 * time.Second},
	} {
		if got := HeartbeatInterval(10*time.Second, tt.clusters, tt.zones, HeartbeatWritesPerMinute); got != tt.want {
			t.Errorf("%s: HeartbeatInterval = %v, want %v", tt.name, got, tt.want)
		}
		if got := HeartbeatInterval(10*time.Second, tt.clusters, tt.zones, HeartbeatWritesPerMinute); tt.zones > 0 &&
			float64(tt.clusters*tt.zones)*float64(time.Minute)/float64(got) > HeartbeatWritesPerMinute+0.01 {
			t.Errorf("%s: %v makes %.1f writes a minute", tt.name, got, float64(tt.clusters*tt.zones)*float64(time.Minute)/float64(got))
		}
	}
}

// A heartbeat says how often it is written, and readers judge it fresh for three of its intervals
// when that is longer than heartbeatStaleAfter: a heartbeat spaced to fit the budget is not stale
// between two writes.
func TestStaleAfter_FollowsTheWritersInterval(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	hb, ok := ParseHeartbeat("weu", HeartbeatValue(Heartbeat{At: at, GatewayAnswers: true, Interval: 2 * time.Minute}))
	if !ok || hb.Interval != 2*time.Minute {
		t.Fatalf("interval not read back: %+v", hb)
	}
	s := DefaultSettings
	if got := s.StaleAfter(hb); got != 6*time.Minute {
		t.Errorf("StaleAfter = %v, want 6m", got)
	}
	if got := s.StaleAfter(Heartbeat{Interval: 5 * time.Second}); got != s.HeartbeatStaleAfter {
		t.Errorf("a shorter interval keeps heartbeatStaleAfter: %v", got)
	}
	probes := Probes{Failures: 3}
	if j := JudgeRegion(at.Add(5*time.Minute), probes, []Heartbeat{hb}, s); j.State != Unreachable {
		t.Errorf("5 minutes after a heartbeat written every 2: %s (%s), want Unreachable", j.State, j.Reason)
	}
	if j := JudgeRegion(at.Add(7*time.Minute), probes, []Heartbeat{hb}, s); j.State != Lost {
		t.Errorf("7 minutes after: %s (%s), want Lost", j.State, j.Reason)
	}
}
