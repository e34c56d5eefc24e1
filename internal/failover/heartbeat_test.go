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

// A fleet's heartbeats fit the write budgets, the subscription's and each zone's: the configured
// interval while they do, longer as clusters and zones grow (each cluster writes each zone once an
// interval).
func TestHeartbeatInterval(t *testing.T) {
	for _, tt := range []struct {
		name            string
		clusters, zones int
		want            time.Duration
	}{
		{"2 clusters, 3 zones: 36 writes a minute at 10 s", 2, 3, 10 * time.Second},
		{"5 clusters, 1 zone: 30 a minute in the zone at 10 s", 5, 1, 10 * time.Second},
		{"16 clusters, 1 zone: 96 a minute in the zone at 10 s, over its 30", 16, 1, 32 * time.Second},
		{"11 clusters, 1 zone: 66 a minute at 10 s, over the zone's 60 updates", 11, 1, 22 * time.Second},
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
		if got := HeartbeatInterval(10*time.Second, tt.clusters, tt.zones, HeartbeatWritesPerMinute); tt.zones > 0 &&
			float64(tt.clusters)*float64(time.Minute)/float64(got) > ZoneHeartbeatWritesPerMinute+0.01 {
			t.Errorf("%s: %v makes %.1f writes a minute in each zone", tt.name, got, float64(tt.clusters)*float64(time.Minute)/float64(got))
		}
	}
}

// A heartbeat says how often it is written, and readers judge it fresh for three of its intervals
// when that is longer than heartbeatStaleAfter: a heartbeat spaced to fit the budget is not stale
// between two writes. Its reader counts the fleet it is written for (20 clusters × 10 zones: 2
// minutes, within the 2m30s that count allows).
func TestStaleAfter_FollowsTheWritersInterval(t *testing.T) {
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	hb, ok := ParseHeartbeat("weu", HeartbeatValue(Heartbeat{At: at, GatewayAnswers: true, Interval: 2 * time.Minute}))
	if !ok || hb.Interval != 2*time.Minute {
		t.Fatalf("interval not read back: %+v", hb)
	}
	hb.Fleet = Fleet{Clusters: 20, Zones: 10}
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

// How long a heartbeat vouches for its writer is bounded by what its reader computes: the writers'
// own rule (HeartbeatInterval) for a quarter more clusters than the reader counts (at least two
// more) in every zone it reads, from heartbeatInterval or, not given, heartbeatStaleAfter; three of
// that at most, whatever the heartbeat states.
func TestSettings_MaxInterval(t *testing.T) {
	wired := DefaultSettings
	wired.HeartbeatInterval = 10 * time.Second
	for _, tt := range []struct {
		name            string
		s               Settings
		fleet           Fleet
		wantMax, wantSB time.Duration // MaxInterval, StaleBound
	}{
		{"no count (a heartbeat not followed): the settings alone", DefaultSettings, Fleet{}, 30 * time.Second, 90 * time.Second},
		{"the defaults, 2 clusters × 3 zones: 4 × 3 / 100 a minute is 7s, heartbeatStaleAfter stands", DefaultSettings, Fleet{2, 3}, 30 * time.Second, 90 * time.Second},
		{"heartbeatInterval given: 10s, stale after 30s whatever is stated", wired, Fleet{2, 3}, 10 * time.Second, 30 * time.Second},
		{"20 clusters × 10 zones: counted as 25, 2m30s (writers state 2m)", DefaultSettings, Fleet{20, 10}, 150 * time.Second, 450 * time.Second},
		{"the same, heartbeatInterval given", wired, Fleet{20, 10}, 150 * time.Second, 450 * time.Second},
		{"5 clusters × 10 zones: counted as 7, 42s", DefaultSettings, Fleet{5, 10}, 42 * time.Second, 126 * time.Second},
		{"100 clusters × 10 zones: counted as 125, 12m30s", DefaultSettings, Fleet{100, 10}, 750 * time.Second, 2250 * time.Second},
	} {
		if got := tt.s.MaxInterval(tt.fleet); got != tt.wantMax {
			t.Errorf("%s: MaxInterval = %v, want %v", tt.name, got, tt.wantMax)
		}
		if got := tt.s.StaleBound(tt.fleet); got != tt.wantSB {
			t.Errorf("%s: StaleBound = %v, want %v", tt.name, got, tt.wantSB)
		}
		// Every writer of the fleet counted as the reader counts it, or a few more, states an
		// interval the reader believes: no writer that writes is ever stale for its own rule.
		for _, more := range []int{0, 1, 2} {
			if stated := HeartbeatInterval(10*time.Second, tt.fleet.Clusters+more, tt.fleet.Zones, HeartbeatWritesPerMinute); tt.s.StaleAfter(Heartbeat{Interval: stated, Fleet: tt.fleet}) < StaleIntervals*stated {
				t.Errorf("%s: a writer counting %d more clusters states %v, and is believed for only %v", tt.name, more, stated, tt.s.StaleAfter(Heartbeat{Interval: stated, Fleet: tt.fleet}))
			}
		}
		for _, stated := range []time.Duration{0, time.Second, tt.wantMax, tt.wantMax + time.Second, 1_000_000 * time.Hour, time.Duration(1<<63 - 1)} {
			if got := tt.s.StaleAfter(Heartbeat{Interval: stated, Fleet: tt.fleet}); got > tt.wantSB || got < tt.s.HeartbeatStaleAfter {
				t.Errorf("%s: stating %v vouches for %v, want between heartbeatStaleAfter and %v", tt.name, stated, got, tt.wantSB)
			}
		}
	}
}

// The fleet a reader counts: every cluster named by a heartbeat record in any zone it reads, read
// this round or not, malformed or not, each once; every zone.
func TestCountFleet(t *testing.T) {
	zones := []ZoneReading{
		{Controller: "external-dns-weu", Read: true, Beats: map[string][]Heartbeat{"weu": {{Cluster: "aks01", Found: true}}, "neu": {{Cluster: "aks02", Found: true}}}},
		{Controller: "external-dns-neu", Read: false, Beats: map[string][]Heartbeat{"weu": {{Cluster: "aks01", Found: true}}, "frc": {{Cluster: "aks03", Found: true}}}},
		{Controller: "external-dns-frc", Read: true, Beats: map[string][]Heartbeat{"swc": {{Cluster: "aks04", Malformed: "hello"}}}},
		{Controller: "external-dns-swc", Read: true},
	}
	if got := CountFleet(zones); got != (Fleet{Clusters: 4, Zones: 4}) {
		t.Errorf("CountFleet = %+v, want 4 clusters in 4 zones", got)
	}
	if got := CountFleet(nil); got != (Fleet{}) {
		t.Errorf("CountFleet(nil) = %+v, want none", got)
	}
}
