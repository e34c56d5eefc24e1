package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const (
	aks01Owner = "external-dns-weu-aks01"
	aks02Owner = "external-dns-weu-aks02"
	apiName    = "api-ns-d-dev-myapp.example.com"
	apiTXT     = "weu-p-cname-" + apiName
)

func ownership(owner string) string {
	return "heritage=external-dns,external-dns/owner=" + owner + ",external-dns/resource=crd/myapp/api-route-external-dns-weu"
}

// weuZone is the weu zone as aks02 (region neu) reads it: aks01 (weu) and aks02 (neu) beat there,
// and aks01 owns the API name.
func weuZone(mut ...func(*ZoneReading)) ZoneReading {
	at := time.Unix(1000, 0)
	z := ZoneReading{
		Controller: "external-dns-weu", Read: true, Owner: aks02Owner, TXTPrefix: "weu-p-",
		Beats: map[string][]Heartbeat{
			"weu": {{Found: true, Read: true, At: at, GatewayAnswers: true, Owner: aks01Owner, Targets: []string{"aks01-weu-internal.example.com"}}},
			"neu": {{Found: true, Read: true, At: at, GatewayAnswers: true, Owner: aks02Owner, Targets: []string{"aks02-neu-internal.example.com"}}},
		},
		TXT:       map[string]TXTSet{apiTXT: {Values: []string{ownership(aks01Owner)}, TTL: 300}},
		Addresses: map[string][]string{"aks01-weu-internal.example.com": {"10.1.0.1"}, "aks02-neu-internal.example.com": {"10.2.0.1"}},
	}
	for _, m := range mut {
		m(&z)
	}
	return z
}

func TestTakeovers(t *testing.T) {
	lost := map[string]Judgement{"weu": {State: Lost}, "neu": {State: Serving}, "frc": {State: Serving}}
	api := Name{Controller: "external-dns-weu", Hostname: apiName + ".", Namespace: "myapp", Endpoint: "api-route-external-dns-weu", StandIns: []string{"neu"}}
	with := func(mut func(*Name)) []Name { n := api; mut(&n); return []Name{n} }
	// The pass names the DNSEndpoint that publishes the name here, which the loop then nudges.
	pass := Pass{Controller: "external-dns-weu", Hostname: apiName, TXTName: apiTXT, TTL: 300,
		Old: ownership(aks01Owner), New: ownership(aks02Owner), From: aks01Owner, To: aks02Owner, Region: "weu",
		Namespace: "myapp", Endpoint: "api-route-external-dns-weu"}
	tests := []struct {
		name   string
		judged map[string]Judgement
		zone   ZoneReading
		names  []Name
		want   []Pass
	}{
		{"the lost region's name passes to the first stand-in", lost, weuZone(), []Name{api}, []Pass{pass}},
		{"drained: the name passes as from a lost region", map[string]Judgement{"weu": {State: Drained}, "neu": {State: Serving}}, weuZone(), []Name{api}, []Pass{pass}},
		{"a drained stand-in takes nothing", map[string]Judgement{"weu": {State: Lost}, "neu": {State: Drained}}, weuZone(), []Name{api}, nil},
		{"unreachable, not lost: nothing moves", map[string]Judgement{"weu": {State: Unreachable}, "neu": {State: Serving}}, weuZone(), []Name{api}, nil},
		{"serving: nothing moves", map[string]Judgement{"weu": {State: Serving}, "neu": {State: Serving}}, weuZone(), []Name{api}, nil},
		{"another stand-in comes first and serves", lost, weuZone(), with(func(n *Name) { n.StandIns = []string{"frc", "neu"} }), nil},
		{"the first stand-in is lost too", map[string]Judgement{"weu": {State: Lost}, "frc": {State: Lost}, "neu": {State: Serving}}, weuZone(),
			with(func(n *Name) { n.StandIns = []string{"frc", "neu"} }), []Pass{pass}},
		{"this region is not a stand-in of the policy", lost, weuZone(), with(func(n *Name) { n.StandIns = []string{"frc"} }), nil},
		{"already this cluster's", lost, weuZone(func(z *ZoneReading) { z.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks02Owner)}} }), []Name{api}, nil},
		{"an owner no heartbeat names is nobody's to judge", lost, weuZone(func(z *ZoneReading) {
			z.TXT[apiTXT] = TXTSet{Values: []string{ownership("external-dns-weu-manual")}}
		}), []Name{api}, nil},
		{"the zone could not be read", lost, weuZone(func(z *ZoneReading) { z.Read = false }), []Name{api}, nil},
		{"two ownership values: not ExternalDNS's registry as it writes it", lost, weuZone(func(z *ZoneReading) {
			z.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks01Owner), ownership(aks02Owner)}}
		}), []Name{api}, nil},
		{"not an ownership value", lost, weuZone(func(z *ZoneReading) { z.TXT[apiTXT] = TXTSet{Values: []string{"v=spf1 -all"}} }), []Name{api}, nil},
		{"the old registry form, <prefix><name>", lost, weuZone(func(z *ZoneReading) {
			delete(z.TXT, apiTXT)
			z.TXT["weu-p-"+apiName] = TXTSet{Values: []string{ownership(aks01Owner)}, TTL: 300}
		}), []Name{api}, []Pass{func() Pass { p := pass; p.TXTName = "weu-p-" + apiName; return p }()}},
		{"a name in another zone", lost, weuZone(), with(func(n *Name) { n.Controller = "external-dns-neu" }), nil},
		{"no name published here under a failover policy", lost, weuZone(), nil, nil},
		{"the lost region published it from another namespace: another team's name", lost, weuZone(), with(func(n *Name) { n.Namespace = "other-team" }), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Takeovers("neu", tt.judged, []ZoneReading{tt.zone}, tt.names))
		})
	}
}

// DrainProgress counts, in aks01's own zone (weu), the names its owner holds and those a stand-in
// holds; a zone of its region not read whole leaves the count unknown.
func TestDrainProgress(t *testing.T) {
	asAKS01 := func(z *ZoneReading) { z.Owner, z.Region = aks01Owner, "weu" }
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", StandIns: []string{"neu"}}
	other := Name{Controller: "external-dns-weu", Hostname: "web.example.com", Namespace: "myapp", StandIns: []string{"neu"}}
	withOther := func(owner string) func(*ZoneReading) {
		return func(z *ZoneReading) {
			z.TXT["weu-p-cname-web.example.com"] = TXTSet{Values: []string{ownership(owner)}}
		}
	}
	tests := []struct {
		name       string
		zone       ZoneReading
		names      []Name
		here, away int
		known      bool
	}{
		{"every name here", weuZone(asAKS01, withOther(aks01Owner)), []Name{api, other}, 2, 0, true},
		{"one with the stand-in", weuZone(asAKS01, withOther(aks02Owner)), []Name{api, other}, 1, 1, true},
		{"a name the zone holds no ownership record of is not counted", weuZone(asAKS01), []Name{api, other}, 1, 0, true},
		{"another region's zone is not counted", weuZone(func(z *ZoneReading) { z.Owner, z.Region = aks02Owner, "neu" }), []Name{api}, 0, 0, true},
		{"not read whole: not known", weuZone(asAKS01, func(z *ZoneReading) { z.Read = false }), []Name{api}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z := tt.zone
			if z.Region == "" {
				z.Region = "weu"
			}
			here, away, known := DrainProgress("weu", []ZoneReading{z}, tt.names)
			assert.Equal(t, []any{tt.here, tt.away, tt.known}, []any{here, away, known})
		})
	}
}

func TestJudgeRegions_FromTheZonesHeartbeats(t *testing.T) {
	now := time.Unix(1000, 0)
	fresh, stale := weuZone(), weuZone(func(z *ZoneReading) { z.Beats["weu"][0].At = now.Add(-time.Minute) })
	s := DefaultSettings
	failing := map[string]Probes{"weu": {Failures: 3}}
	got := JudgeRegions(now, "neu", false, []ZoneReading{stale, weuZone(func(z *ZoneReading) {
		z.Controller = "external-dns-neu"
		z.Beats["weu"] = []Heartbeat{{Found: true, Read: true, At: now.Add(-time.Hour)}}
	})}, failing, s)
	assert.Equal(t, Lost, got["weu"].State, "probes fail and every zone's heartbeat is stale: %+v", got["weu"])
	assert.Equal(t, Serving, got["neu"].State, "its own region")

	got = JudgeRegions(now, "neu", false, []ZoneReading{fresh, stale}, failing, s)
	assert.Equal(t, Unreachable, got["weu"].State, "one of two zones holds a fresh, healthy heartbeat: a partition: %+v", got["weu"])

	got = JudgeRegions(now, "neu", false, []ZoneReading{stale, stale}, map[string]Probes{"weu": {Failures: 2}}, s)
	assert.Equal(t, Serving, got["weu"].State, "two failed probes are not enough")

	unread := weuZone(func(z *ZoneReading) { z.Read, z.Beats = false, nil })
	got = JudgeRegions(now, "neu", false, []ZoneReading{stale, unread, unread}, failing, s)
	assert.Equal(t, Unreachable, got["weu"].State, "one stale zone of three, two unread: not a majority: %+v", got["weu"])

	// A draining cluster's own region is Drained: it takes over nothing of a lost region.
	got = JudgeRegions(now, "neu", true, []ZoneReading{stale, stale}, failing, s)
	assert.Equal(t, Drained, got["neu"].State, "its own region, drained")
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu", StandIns: []string{"neu"}}
	assert.Empty(t, Takeovers("neu", got, []ZoneReading{stale}, []Name{api}), "a draining cluster stands in for nobody")
}

func TestAddresses_OfTheTargetsTheHeartbeatsName(t *testing.T) {
	z := weuZone()
	other := weuZone(func(z *ZoneReading) {
		z.Addresses["aks01-weu-internal.example.com"] = []string{"10.1.0.1", "10.1.0.2"}
	})
	assert.Equal(t, []string{"10.1.0.1", "10.1.0.2"}, Addresses("weu", []ZoneReading{z, other}))
	assert.Equal(t, []string{"10.2.0.1"}, Addresses("neu", []ZoneReading{z}))
	assert.Empty(t, Addresses("frc", []ZoneReading{z}))
}

func TestOwnerOf(t *testing.T) {
	assert.Equal(t, aks01Owner, OwnerOf(ownership(aks01Owner)))
	assert.Equal(t, aks01Owner, OwnerOf(`"`+ownership(aks01Owner)+`"`))
	assert.Empty(t, OwnerOf("heritage=external-dns,external-dns/resource=crd/a/b"))
	assert.Empty(t, OwnerOf("v=spf1 -all"))
}

func TestReclaims(t *testing.T) {
	// The weu zone as aks01 (weu), back, reads it: aks02 (neu) took the API name.
	zone := func(mut ...func(*ZoneReading)) ZoneReading {
		z := weuZone(func(z *ZoneReading) {
			z.Region, z.Owner = "weu", aks01Owner
			z.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks02Owner)}, TTL: 300}
		})
		for _, m := range mut {
			m(&z)
		}
		return z
	}
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu", StandIns: []string{"neu"}, FailBack: true}
	with := func(mut func(*Name)) []Name { n := api; mut(&n); return []Name{n} }
	back := Pass{Controller: "external-dns-weu", Hostname: apiName, TXTName: apiTXT, TTL: 300,
		Old: ownership(aks02Owner), New: ownership(aks01Owner), From: aks02Owner, To: aks01Owner, Region: "neu",
		Namespace: "myapp", Endpoint: "api-route-external-dns-weu"}
	tests := []struct {
		name    string
		healthy bool
		zone    ZoneReading
		names   []Name
		want    []Pass
	}{
		{"healthy long enough: the name comes back from the stand-in", true, zone(), []Name{api}, []Pass{back}},
		{"not healthy long enough", false, zone(), []Name{api}, nil},
		{"the policy's failback is Manual", true, zone(), with(func(n *Name) { n.FailBack = false }), nil},
		{"not this cluster's own region's zone", true, zone(func(z *ZoneReading) { z.Region = "frc" }), []Name{api}, nil},
		{"held by a region that is not one of the policy's stand-ins", true, zone(), with(func(n *Name) { n.StandIns = []string{"frc"} }), nil},
		{"already this cluster's", true, zone(func(z *ZoneReading) { z.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks01Owner)}} }), []Name{api}, nil},
		{"held by an owner no heartbeat names", true, zone(func(z *ZoneReading) { z.TXT[apiTXT] = TXTSet{Values: []string{ownership("manual")}} }), []Name{api}, nil},
		{"published from another namespace", true, zone(), with(func(n *Name) { n.Namespace = "other-team" }), nil},
		{"the zone could not be read", true, zone(func(z *ZoneReading) { z.Read = false }), []Name{api}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Reclaims("weu", tt.healthy, []ZoneReading{tt.zone}, tt.names))
		})
	}
}

func TestHeld_OnlyWhatTheZonesStillSayIsOurs(t *testing.T) {
	taken := Pass{Controller: "external-dns-weu", TXTName: apiTXT, From: aks01Owner, To: aks02Owner, Region: "weu"}
	ours := weuZone(func(z *ZoneReading) { z.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks02Owner)}} })
	assert.Equal(t, []Pass{taken}, Held([]Pass{taken}, []ZoneReading{ours}))
	assert.Empty(t, Held([]Pass{taken}, []ZoneReading{weuZone()}), "passed back: aks01 owns it again")
	gone := weuZone(func(z *ZoneReading) { delete(z.TXT, apiTXT) })
	assert.Empty(t, Held([]Pass{taken}, []ZoneReading{gone}), "the record is gone")
	unread := weuZone(func(z *ZoneReading) { z.Read, z.TXT = false, nil })
	assert.Equal(t, []Pass{taken}, Held([]Pass{taken}, []ZoneReading{unread}), "an unread zone says nothing: still counted")
}

func TestAttribute(t *testing.T) {
	servers := Servers([]ZoneReading{weuZone(func(z *ZoneReading) {
		z.Beats["weu"][0].Cluster, z.Beats["neu"][0].Cluster = "aks01", "aks02"
	})})
	assert.Equal(t, map[string]Server{"aks01-weu-internal.example.com": {"aks01", "weu"}, "aks02-neu-internal.example.com": {"aks02", "neu"}}, servers)
	for _, tt := range []struct{ answer, zoneRegion, own, want string }{
		{"CNAME aks02-neu-internal.example.com. → A 10.2.0.1", "weu", "aks01", "served by cluster aks02, of region neu, for region weu"},
		{"CNAME aks02-neu-internal.example.com. → A 10.2.0.1", "weu", "aks02", "served by this cluster, of region neu, for region weu"},
		{"CNAME aks01-weu-internal.example.com. → A 10.1.0.1", "weu", "aks02", ""}, // the zone's own region serves it
		{"CNAME other.example.com. → A 10.9.9.9", "weu", "aks02", ""},              // no heartbeat names it
		{"NXDOMAIN", "weu", "aks02", ""},
	} {
		assert.Equal(t, tt.want, Attribute(tt.answer, tt.zoneRegion, tt.own, servers), tt.answer)
	}
}

// A new leader finds the takeovers that stand from the marks on its DNSEndpoints and the zones'
// ownership records, and which marks are out of date.
func TestStanding(t *testing.T) {
	// The weu zone as aks02 (neu) reads it, having taken the API name from weu.
	taken := func(mut ...func(*ZoneReading)) ZoneReading {
		return weuZone(append([]func(*ZoneReading){func(z *ZoneReading) {
			z.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks02Owner)}, TTL: 300}
		}}, mut...)...)
	}
	marked := Name{Controller: "external-dns-weu", Hostname: apiName + ".", Namespace: "myapp", Endpoint: "api-route-external-dns-weu",
		StandIns: []string{"neu"}, TakenFrom: "weu"}
	with := func(mut func(*Name)) []Name { n := marked; mut(&n); return []Name{n} }
	stands := Pass{Controller: "external-dns-weu", Hostname: apiName, TXTName: apiTXT, TTL: 300, New: ownership(aks02Owner),
		To: aks02Owner, Region: "weu", Namespace: "myapp", Endpoint: "api-route-external-dns-weu"}
	tests := []struct {
		name         string
		zone         ZoneReading
		names        []Name
		held         []Pass
		returnedName []Name
	}{
		{"marked, and the zone says this cluster owns it: it stands", taken(), []Name{marked}, []Pass{stands}, nil},
		{"not marked: this cluster's own name, or one it published first", taken(), with(func(n *Name) { n.TakenFrom = "" }), nil, nil},
		{"marked, but the home cluster took it back: out of date", weuZone(), []Name{marked}, nil, []Name{marked}},
		{"marked, the zone not read: still counted", taken(func(z *ZoneReading) { z.Read = false }), []Name{marked},
			[]Pass{func() Pass { p := stands; p.TTL, p.New = 0, ""; return p }()}, nil},
		{"marked, no ownership record in the zone: nothing definite", weuZone(func(z *ZoneReading) { delete(z.TXT, apiTXT) }), []Name{marked}, nil, nil},
		{"marked, in a zone without failover settings here", taken(), with(func(n *Name) { n.Controller = "external-dns-neu" }), nil, nil},
		{"the old registry form", taken(func(z *ZoneReading) {
			delete(z.TXT, apiTXT)
			z.TXT["weu-p-"+apiName] = TXTSet{Values: []string{ownership(aks02Owner)}, TTL: 300}
		}), []Name{marked}, []Pass{func() Pass { p := stands; p.TXTName = "weu-p-" + apiName; return p }()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held, returned := Standing(tt.names, []ZoneReading{tt.zone})
			assert.Equal(t, tt.held, held)
			assert.Equal(t, tt.returnedName, returned)
		})
	}
}

func TestUnion(t *testing.T) {
	a := Pass{Controller: "external-dns-weu", Hostname: "a.example.com", Region: "weu", TXTName: "first"}
	b := Pass{Controller: "external-dns-weu", Hostname: "b.example.com", Region: "weu"}
	aAgain := Pass{Controller: "external-dns-weu", Hostname: "A.example.com.", Region: "weu", TXTName: "second"}
	aElsewhere := Pass{Controller: "external-dns-neu", Hostname: "a.example.com", Region: "weu"}
	assert.Equal(t, []Pass{a, b, aElsewhere}, Union([]Pass{a}, []Pass{b, aAgain}, nil, []Pass{aElsewhere}))
	assert.Empty(t, Union())
}
