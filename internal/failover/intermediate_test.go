package failover

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

const (
	intName = "internal.myapp.weu._router-failover.example.com"
	intTXT  = "weu-p-cname-" + intName
)

// targets are the owners' clusters' gateway target hostnames, as weuZone's heartbeats name them.
var targets = map[string]string{aks01Owner: "aks01-weu-internal.example.com", aks02Owner: "aks02-neu-internal.example.com"}

// throughZone is weuZone with the API name answered through the policy's intermediate name, which
// the operators write as a CNAME to the target of intOwner's cluster ("": no intermediate yet).
func throughZone(intOwner string, mut ...func(*ZoneReading)) ZoneReading {
	return weuZone(append([]func(*ZoneReading){func(z *ZoneReading) {
		z.Region = "weu"
		z.CNAMEs = map[string]string{apiName: intName, intName: targets[intOwner]}
		if intOwner == "" {
			z.CNAMEs = map[string]string{apiName: "aks01-weu-internal.example.com"}
		}
	}}, mut...)...)
}

// legacy makes the zone's intermediate one an earlier version published through ExternalDNS:
// its ownership record names owner.
func legacy(owner string) func(*ZoneReading) {
	return func(z *ZoneReading) { z.TXT[intTXT] = TXTSet{Values: []string{ownership(owner)}, TTL: 300} }
}

func TestFormIn(t *testing.T) {
	nameHeldBy := func(owner string) func(*ZoneReading) {
		return func(z *ZoneReading) {
			if owner == "" {
				delete(z.TXT, apiTXT)
				return
			}
			z.TXT[apiTXT] = TXTSet{Values: []string{ownership(owner)}}
		}
	}
	direct, through, unheld := Form{}, Form{Through: true}, Form{Through: true, Unheld: true}
	tests := []struct {
		name      string
		own       string // aks02's region is neu; as aks01 the reading is the same with Owner aks01
		zone      ZoneReading
		want      Form
		wantKnown bool
	}{
		// The zone's own region (aks01 reading its weu zone).
		{"home, a new name: through, the intermediate created at the next reading", "weu",
			throughZone("", asOwner(aks01Owner), nameHeldBy("")), unheld, true},
		{"home, a new name, its intermediate there: through, no wait", "weu",
			throughZone(aks01Owner, asOwner(aks01Owner), nameHeldBy("")), through, true},
		{"home, upgrading a name it holds: direct until its intermediate exists", "weu",
			throughZone("", asOwner(aks01Owner)), direct, true},
		{"home, its name and its intermediate: through", "weu", throughZone(aks01Owner, asOwner(aks01Owner)), through, true},
		{"home, its name, the intermediate a stand-in's: direct, nobody's answer changes", "weu",
			throughZone(aks02Owner, asOwner(aks01Owner)), direct, true},
		{"home, a name a stand-in holds, no intermediate yet: the name stays", "weu",
			throughZone("", asOwner(aks01Owner), nameHeldBy(aks02Owner)), direct, true},
		{"home, not read whole: the form kept", "weu",
			throughZone(aks01Owner, asOwner(aks01Owner), func(z *ZoneReading) { z.Read = false }), direct, false},
		{"home, an intermediate its ExternalDNS owns (an earlier version's): still published, through", "weu",
			throughZone(aks01Owner, asOwner(aks01Owner), legacy(aks01Owner)), Form{Intermediate: true, Through: true}, true},
		{"home, that intermediate released to the operators: no longer published", "weu",
			throughZone(aks01Owner, asOwner(aks01Owner), legacy(IntermediateOwner)), through, true},
		// Another region's zone (aks02, a stand-in, reading weu's).
		{"stand-in, no intermediate in the zone: the name stays direct", "neu", throughZone(""), direct, true},
		{"stand-in, a new name, no intermediate: direct", "neu", throughZone("", nameHeldBy("")), direct, true},
		{"stand-in, the home's intermediate exists: the name through it", "neu", throughZone(aks01Owner), through, true},
		{"stand-in holding the name on its own, the intermediate the home's: direct until it takes the intermediate", "neu",
			throughZone(aks01Owner, nameHeldBy(aks02Owner)), direct, true},
		{"stand-in holding the name and the intermediate: through", "neu", throughZone(aks02Owner, nameHeldBy(aks02Owner)), through, true},
		{"stand-in, an intermediate no heartbeat names the target of: the name stays", "neu",
			throughZone(aks01Owner, nameHeldBy(aks02Owner), func(z *ZoneReading) { z.CNAMEs[intName] = "gone.example.com" }), direct, true},
		{"stand-in, not read whole: the form kept", "neu",
			throughZone(aks01Owner, func(z *ZoneReading) { z.Read = false }), direct, false},
		{"stand-in, no owner ID for the zone: not known", "neu", throughZone(aks01Owner, asOwner("")), direct, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, known := FormIn(tt.zone, tt.own, apiName, intName)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantKnown, known)
		})
	}
}

func asOwner(owner string) func(*ZoneReading) { return func(z *ZoneReading) { z.Owner = owner } }

// intermediateName is the Name of the policy's intermediate as cluster owner publishes through it.
func intermediateName(owner string) Name {
	return Name{Controller: "external-dns-weu", Hostname: intName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu",
		StandIns: []string{"neu"}, Target: targets[owner], TTL: 60}
}

func TestTakeovers_ANameThroughAnIntermediateMovesWithIt(t *testing.T) {
	lost := map[string]Judgement{"weu": {State: Lost}, "neu": {State: Serving}}
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu", StandIns: []string{"neu"},
		Intermediate: intName, Target: targets[aks02Owner]}
	move := Pass{Controller: "external-dns-weu", Hostname: intName, TTL: 60, Old: targets[aks01Owner], New: targets[aks02Owner],
		From: aks01Owner, To: aks02Owner, Region: "weu", Namespace: "myapp", Endpoint: "api-route-external-dns-weu"}
	got := Takeovers("neu", lost, []ZoneReading{throughZone(aks01Owner)}, []Name{api, intermediateName(aks02Owner)})
	assert.Equal(t, []Pass{move}, got, "one write moves the name: the intermediate's CNAME")

	got = Takeovers("neu", lost, []ZoneReading{throughZone(aks01Owner, legacy(aks01Owner))}, []Name{api, intermediateName(aks02Owner)})
	release := Pass{Controller: "external-dns-weu", Hostname: intName, TXTName: intTXT, TTL: 300, Old: ownership(aks01Owner), New: ownership(IntermediateOwner),
		From: aks01Owner, To: IntermediateOwner, Region: "weu", Namespace: "myapp", Endpoint: "api-route-external-dns-weu"}
	assert.Equal(t, []Pass{release, move}, got, "an intermediate an earlier version's ExternalDNS owns: released to the operators, then moved")

	got = Takeovers("neu", lost, []ZoneReading{throughZone("")}, []Name{api, intermediateName(aks02Owner)})
	assert.Len(t, got, 1, "a name still answered directly (its home not upgraded) moves on its own")
	assert.Equal(t, apiTXT, got[0].TXTName)
}

// The cost of a move: one write per intermediate name, whatever the number of names through it.
func TestTakeovers_WritesDoNotGrowWithTheNames(t *testing.T) {
	lost := map[string]Judgement{"weu": {State: Lost}, "neu": {State: Serving}}
	for _, count := range []int{1, 300, 3000} {
		z := throughZone(aks01Owner)
		names := []Name{intermediateName(aks02Owner)}
		for i := range count {
			h := fmt.Sprintf("svc%d-ns-d-dev-myapp.example.com", i)
			z.CNAMEs[h] = intName
			z.TXT["weu-p-cname-"+h] = TXTSet{Values: []string{ownership(aks01Owner)}}
			names = append(names, Name{Controller: "external-dns-weu", Hostname: h, Namespace: "myapp", StandIns: []string{"neu"}, Intermediate: intName})
		}
		assert.Len(t, Takeovers("neu", lost, []ZoneReading{z}, names), 1, "%d names", count)
	}
}

func TestStandingAndDrainProgress_ANameThroughAnIntermediateIsWhereItIs(t *testing.T) {
	marked := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu", TakenFrom: "weu"}
	held, returned := Standing([]Name{marked}, []ZoneReading{throughZone(aks02Owner)})
	assert.Len(t, held, 1, "the intermediate is this cluster's: the name's takeover stands, though its own record names the home")
	assert.Empty(t, returned)
	held, returned = Standing([]Name{marked}, []ZoneReading{throughZone(aks01Owner)})
	assert.Empty(t, held)
	assert.Len(t, returned, 1, "the intermediate went home: so did the name")

	name := Name{Controller: "external-dns-weu", Hostname: apiName}
	here, away, known := DrainProgress("weu", []ZoneReading{throughZone(aks02Owner, asOwner(aks01Owner))}, []Name{name})
	assert.Equal(t, []any{0, 1, true}, []any{here, away, known}, "the home holds the name's record, a stand-in its intermediate: away")
	here, away, _ = DrainProgress("weu", []ZoneReading{throughZone(aks01Owner, asOwner(aks01Owner))}, []Name{name})
	assert.Equal(t, []int{1, 0}, []int{here, away})
}

func TestStanding_TheNamesThroughAMarkedIntermediateStandWithIt(t *testing.T) {
	other := "web-ns-d-dev-myapp.example.com"
	zone := throughZone(aks02Owner, func(z *ZoneReading) { z.CNAMEs[other] = intName })
	markedIntermediate := Name{Controller: "external-dns-weu", Hostname: intName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu", TakenFrom: "weu"}
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu", TakenFrom: "weu"}
	web := Name{Controller: "external-dns-weu", Hostname: other, Namespace: "myapp", Endpoint: "web-route-external-dns-weu"}
	held, returned := Standing([]Name{markedIntermediate, api, web}, []ZoneReading{zone})
	assert.Empty(t, returned)
	var got []string
	for _, p := range held {
		got = append(got, p.Hostname+" via "+p.Through+" from "+p.Region)
	}
	assert.Equal(t, []string{intName + " via  from weu", apiName + " via " + intName + " from weu", other + " via " + intName + " from weu"}, got,
		"the unmarked name through the marked intermediate counts too")
	set, clear := Marks(held, []Name{markedIntermediate, api, web}, nil, nil)
	assert.Empty(t, set, "no name is marked one by one: the intermediate's mark says they moved")
	assert.Empty(t, clear)

	held, returned = Standing([]Name{markedIntermediate, api, web}, []ZoneReading{throughZone(aks01Owner, func(z *ZoneReading) { z.CNAMEs[other] = intName })})
	assert.Empty(t, held)
	assert.Equal(t, []Name{markedIntermediate, api}, returned, "back home: the marks go, the unmarked name has none to clear")
}

func TestAttribute_ThroughAnIntermediate(t *testing.T) {
	servers := map[string]Server{"aks02-neu-internal.example.com": {Cluster: "aks02", Region: "neu"}}
	ints := map[string]string{intName: "aks02-neu-internal.example.com"}
	assert.Equal(t, "served by cluster aks02, of region neu, for region weu",
		Attribute(ThroughIntermediate("CNAME "+intName+".", ints), "weu", "aks01", servers))
	assert.Equal(t, "", Attribute(ThroughIntermediate("CNAME "+intName+".", nil), "weu", "aks01", servers), "an intermediate whose target is not known: nothing said")
	assert.Equal(t, "CNAME aks02-neu-internal.example.com.", ThroughIntermediate("CNAME aks02-neu-internal.example.com.", ints), "a direct answer is left as it is")
}

func TestTakeovers_ANameItsStandInPublishesDirectlyMovesWithTheIntermediate(t *testing.T) {
	// aks02's route still publishes the name directly (its form came from a reading older than
	// the intermediate): the zone answers it through the intermediate all the same, and the
	// intermediate's CNAME, which no ExternalDNS writes, moves it.
	lost := map[string]Judgement{"weu": {State: Lost}, "neu": {State: Serving}}
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu", StandIns: []string{"neu"}, Intermediate: intName}
	got := Takeovers("neu", lost, []ZoneReading{throughZone(aks01Owner)}, []Name{api, intermediateName(aks02Owner)})
	assert.Len(t, got, 1)
	assert.Equal(t, intName, got[0].Hostname)
}

func TestReclaims_ANameAStandInTookOnItsOwnComesBackWithItsIntermediate(t *testing.T) {
	// aks01 (weu) healthy again; aks02 took the name on its own, then its intermediate.
	zone := throughZone(aks02Owner, asOwner(aks01Owner), func(z *ZoneReading) { z.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks02Owner)}} })
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", StandIns: []string{"neu"}, FailBack: true, Intermediate: intName}
	home := intermediateName(aks01Owner)
	home.FailBack = true
	var got []string
	for _, p := range Reclaims("weu", true, []ZoneReading{zone}, []Name{api, home}) {
		got = append(got, p.Hostname+" "+p.New)
	}
	assert.Equal(t, []string{apiName + " " + ownership(aks01Owner), intName + " " + targets[aks01Owner]}, got)
	zone.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks01Owner)}}
	assert.Len(t, Reclaims("weu", true, []ZoneReading{zone}, []Name{api, home}), 1, "the usual case: the names never left, the intermediate comes back alone")
}

func TestWithNamesThrough_TheNamesMovedWithTheirIntermediateCountAtOnce(t *testing.T) {
	pass := Pass{Controller: "external-dns-weu", Hostname: intName, Region: "weu", To: aks02Owner}
	names := []Name{{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", Endpoint: "api-route-external-dns-weu"},
		{Controller: "external-dns-weu", Hostname: "other.example.com"}}
	got := WithNamesThrough([]Pass{pass}, names, []ZoneReading{throughZone(aks01Owner)})
	assert.Len(t, got, 2, "the intermediate and the one name through it")
	assert.Equal(t, apiName, got[1].Hostname)
	assert.Equal(t, intName, got[1].Through)
	assert.True(t, got[1].heldIn(ptr(throughZone(aks02Owner))), "held while the intermediate points at this cluster")
	assert.False(t, got[1].heldIn(ptr(throughZone(aks01Owner))), "not once it points home")
}

func ptr[T any](v T) *T { return &v }

func TestUpkeeps(t *testing.T) {
	api := Name{Controller: "external-dns-weu", Hostname: apiName, Namespace: "myapp", StandIns: []string{"neu"}, Intermediate: intName, Target: targets[aks01Owner], TTL: 60}
	mine := []string{targets[aks01Owner]}
	home := func(mut ...func(*ZoneReading)) []ZoneReading {
		return []ZoneReading{throughZone(aks01Owner, append([]func(*ZoneReading){asOwner(aks01Owner)}, mut...)...)}
	}
	create := UpkeepWrite{Controller: "external-dns-weu", Name: intName, New: targets[aks01Owner], TTL: 60}
	tests := []struct {
		name  string
		own   string
		zones []ZoneReading
		names []Name
		want  []UpkeepWrite
	}{
		{"home, its intermediate missing: created", "weu", []ZoneReading{throughZone("", asOwner(aks01Owner))}, []Name{api}, []UpkeepWrite{create}},
		{"home, its intermediate there: nothing", "weu", home(), []Name{api}, nil},
		{"home, the intermediate a stand-in's: nothing (a move, not upkeep, brings it back)", "weu",
			[]ZoneReading{throughZone(aks02Owner, asOwner(aks01Owner))}, []Name{api}, nil},
		{"home, not read whole: nothing", "weu", home(func(z *ZoneReading) { z.Read = false; delete(z.CNAMEs, intName) }), []Name{api}, nil},
		{"home, names not listed: nothing", "weu", []ZoneReading{throughZone("", asOwner(aks01Owner))}, nil, nil},
		{"stand-in, no intermediate: it creates none", "neu", []ZoneReading{throughZone("", asOwner(aks02Owner))}, []Name{api}, nil},
		{"an intermediate its ExternalDNS owns: released", "weu", home(legacy(aks01Owner)), []Name{api},
			[]UpkeepWrite{{Controller: "external-dns-weu", Name: intName, TXTName: intTXT, Old: ownership(aks01Owner), New: ownership(IntermediateOwner), TTL: 300}}},
		{"an intermediate another cluster's ExternalDNS owns: left to a move", "weu", home(legacy(aks02Owner)), []Name{api}, nil},
		{"its intermediate wanted by no name, and a name still through it: kept", "weu", home(), []Name{}, nil},
		{"its intermediate wanted by no name, no name through it: deleted", "weu",
			home(func(z *ZoneReading) { delete(z.CNAMEs, apiName) }), []Name{},
			[]UpkeepWrite{{Controller: "external-dns-weu", Name: intName, Old: targets[aks01Owner]}}},
		{"another cluster's unwanted intermediate: kept", "weu",
			[]ZoneReading{throughZone(aks02Owner, asOwner(aks01Owner), func(z *ZoneReading) { delete(z.CNAMEs, apiName) })}, []Name{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Upkeeps(tt.own, mine, tt.zones, tt.names))
		})
	}
}
