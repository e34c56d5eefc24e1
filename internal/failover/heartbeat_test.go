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
		{"written, answering", HeartbeatValue(at, true, "", nil, nil), Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true}, true},
		{"written, failing", HeartbeatValue(at, false, "", nil, nil), Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC()}, true},
		{"quoted, as dig prints it", `"` + HeartbeatValue(at, true, "", nil, nil) + `"`, Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true}, true},
		{"with owner and targets", HeartbeatValue(at, true, "external-dns-weu-aks01", []string{"aks01-weu-internal.example.com", "aks01-weu-public.example.com"}, nil),
			Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true, Owner: "external-dns-weu-aks01",
				Targets: []string{"aks01-weu-internal.example.com", "aks01-weu-public.example.com"}}, true},
		{"with addresses", HeartbeatValue(at, true, "external-dns-weu-aks01", []string{"aks01-weu-internal.example.com"}, []string{"10.0.0.1", "fd00::1"}),
			Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true, Owner: "external-dns-weu-aks01",
				Targets: []string{"aks01-weu-internal.example.com"}, Addresses: []string{"10.0.0.1", "fd00::1"}}, true},
		{"fields in another order", "gateway=answers at=2026-11-27T02:00:00Z", Heartbeat{Zone: "weu", Read: true, Found: true, At: at.UTC(), GatewayAnswers: true}, true},
		{"no time", "gateway=answers", Heartbeat{Zone: "weu", Read: true}, false},
		{"an unknown gateway state", "at=2026-11-27T02:00:00Z gateway=maybe", Heartbeat{Zone: "weu", Read: true}, false},
		{"somebody else's TXT", "v=spf1 -all", Heartbeat{Zone: "weu", Read: true}, false},
	}
	for _, tt := range tests {
		got, ok := ParseHeartbeat("weu", tt.value)
		if ok != tt.ok || got.Zone != tt.want.Zone || got.Read != tt.want.Read || got.Found != tt.want.Found ||
			!got.At.Equal(tt.want.At) || got.GatewayAnswers != tt.want.GatewayAnswers || got.Owner != tt.want.Owner ||
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
	v := HeartbeatValue(time.Unix(0, 0), true, "external-dns-weu-aks01", targets(20), nil)
	hb, ok := ParseHeartbeat("weu", v)
	if !ok || len(v) <= 255 || !slices.Equal(hb.Targets, targets(20)) {
		t.Errorf("want all 20 targets in %d bytes; got %v from %s", len(v), hb.Targets, v)
	}

	v = HeartbeatValue(time.Unix(0, 0), true, "external-dns-weu-aks01", targets(40), nil)
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
