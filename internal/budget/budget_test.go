package budget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	subA = "00000000-0000-0000-0000-00000000000a"
	subB = "00000000-0000-0000-0000-00000000000b"
)

// zone is a zone of names names (record sets 2 × names) in subA with the default verification.
func zone(controller string, names int, withFailover bool) Zone {
	return Zone{Controller: controller, SubscriptionID: subA, Failover: withFailover, RecordSets: RecordSetsOf(names)}
}

// The package comment's formulas, component by component, one cluster and one zone.
func TestPlanOf_ComponentsOfOneZone(t *testing.T) {
	type components struct{ heartbeatWrites, heartbeatReads, wholeReadings, settled, changing float64 }
	for _, tc := range []struct {
		name     string
		failover FailoverSettings
		zone     Zone
		want     components
		interval time.Duration // the heartbeat interval as spaced and rounded
	}{
		{"defaults, 3,000 names (6,000 record sets, 6 pages)", FailoverSettings{}, zone("weu", 3000, true),
			// 60/10 s; 60/30 s − 60/300 s; failover takes verification's listing; 6 × 60/300 s; 6 × 60/30 s
			components{6, 1.8, 0, 1.2, 12}, 10 * time.Second},
		{"without failover settings: verification alone", FailoverSettings{}, zone("weu", 3000, false),
			components{0, 0, 0, 1.2, 12}, 0},
		{"an empty zone still costs one request a listing", FailoverSettings{}, zone("weu", 0, true),
			components{6, 1.8, 0, 0.2, 2}, 10 * time.Second},
		{"pageSize 100: verification's listings take 60 requests, and are failover's whole readings", FailoverSettings{},
			Zone{Controller: "weu", SubscriptionID: subA, Failover: true, PageSize: 100, RecordSets: 6000},
			components{6, 1.8, 0, 12, 120}, 10 * time.Second},
		{"interval 10 minutes: verification lists too seldom, failover reads whole every 6 minutes itself", FailoverSettings{},
			Zone{Controller: "weu", SubscriptionID: subA, Failover: true, Interval: 10 * time.Minute, RecordSets: 6000},
			// F = 5.5 min + 30 s; 60/30 s − 60/360 s; 6 × 60/360 s; 6 × 60/600 s
			components{6, 2 - 60.0/360, 6 * 60.0 / 360, 0.6, 0.6}, 10 * time.Second},
		{"an interval longer than the settled interval: listed every interval either way", FailoverSettings{},
			Zone{Controller: "weu", SubscriptionID: subA, Interval: 10 * time.Minute, RecordSets: 6000},
			components{0, 0, 0, 0.6, 0.6}, 0},
		{"probeInterval 7 s: failover's intervals run to the next round (14 s, 35 s)", FailoverSettings{ProbeInterval: 7 * time.Second}, zone("weu", 3000, true),
			components{60.0 / 14, 60.0/35 - 60.0/300, 0, 1.2, 12}, 14 * time.Second},
		{"heartbeatStaleAfter of 6 minutes: verification's listings are more frequent than the heartbeat listings", FailoverSettings{HeartbeatInterval: time.Minute, HeartbeatStaleAfter: 6 * time.Minute},
			zone("weu", 3000, true), components{1, 0, 0, 1.2, 12}, time.Minute},
		{"heartbeatInterval 1 s, probeInterval 1 s (the end-to-end suite's): sized to 2 s, the zone's 30 updates a minute for heartbeats",
			FailoverSettings{ProbeInterval: time.Second, HeartbeatInterval: time.Second, HeartbeatStaleAfter: 5 * time.Second},
			zone("weu", 3000, true), components{30, 12 - 0.2, 0, 1.2, 12}, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PlanOf(Input{Failover: tc.failover, Zones: []Zone{tc.zone}})
			require.Len(t, p.Zones, 1)
			z := p.Zones[0]
			got := components{z.HeartbeatWrites, z.HeartbeatReads, z.WholeReadings, z.VerificationSettled, z.VerificationChanging}
			assert.InDeltaSlice(t, []float64{tc.want.heartbeatWrites, tc.want.heartbeatReads, tc.want.wholeReadings, tc.want.settled, tc.want.changing},
				[]float64{got.heartbeatWrites, got.heartbeatReads, got.wholeReadings, got.settled, got.changing}, 1e-9)
			assert.Equal(t, tc.interval, p.HeartbeatInterval)
			assert.False(t, z.LowerBound)
		})
	}
}

// The figures the documentation states: a zone of 3,000 names with failover, defaults.
func TestPlanOf_DefaultsForAZoneOf3000Names(t *testing.T) {
	p := PlanOf(Input{Zones: []Zone{zone("weu", 3000, true)}})
	assert.InDelta(t, 3.0, p.Zones[0].AtRest().Reads, 1e-9)
	assert.InDelta(t, 6.0, p.Zones[0].AtRest().Writes, 1e-9)
	assert.InDelta(t, 13.8, p.Zones[0].Changing().Reads, 1e-9)
	assert.InDelta(t, 6.0, p.Zones[0].Changing().Writes, 1e-9, "verification writes nothing")
}

func TestPlanOf_UnknownSizeIsALowerBound(t *testing.T) {
	p := PlanOf(Input{Zones: []Zone{{Controller: "weu", SubscriptionID: subA, Failover: true, RecordSets: UnknownRecordSets}}})
	z := p.Zones[0]
	assert.True(t, z.LowerBound)
	assert.InDelta(t, 0.2, z.VerificationSettled, 1e-9, "one request a listing")
	assert.InDelta(t, 2.0, z.VerificationChanging, 1e-9)
	assert.True(t, p.Subscriptions[0].LowerBound)
}

func TestPlanOf_SumsBySubscription(t *testing.T) {
	b := zone("neu", 3000, true)
	b.SubscriptionID = subB
	p := PlanOf(Input{Zones: []Zone{zone("weu", 3000, true), b, zone("frc", 3000, false)}})
	require.Len(t, p.Subscriptions, 2)
	a := p.Subscriptions[0]
	assert.Equal(t, subA, a.SubscriptionID)
	assert.Equal(t, 2, a.Zones)
	assert.InDelta(t, 3.0+1.2, a.AtRest.Reads, 1e-9)
	assert.InDelta(t, 13.8+12, a.Changing.Reads, 1e-9)
	assert.InDelta(t, 6.0, a.AtRest.Writes, 1e-9)
	assert.Equal(t, subB, p.Subscriptions[1].SubscriptionID)
	assert.InDelta(t, 3.0, p.Subscriptions[1].AtRest.Reads, 1e-9)
}

// A fleet sends each cluster's figures times its clusters, but for the heartbeat writes, which
// failover spaces so that the fleet's clusters × zones write 100 a minute at most.
func TestFleet_MultipliesReadsAndSpacesHeartbeats(t *testing.T) {
	var zones []Zone
	for _, c := range []string{"z0", "z1", "z2", "z3", "z4", "z5", "z6", "z7", "z8", "z9"} {
		zones = append(zones, zone(c, 3000, true))
	}
	in := Input{Zones: zones}
	for _, tc := range []struct {
		clusters          int
		heartbeatInterval time.Duration
		reads, writes     float64
	}{
		{1, 10 * time.Second, 30, 60},
		{2, 15 * time.Second, 60, 80},      // 2 × 10 zones / 100 a minute = 12 s, in rounds 5 s apart
		{20, 2 * time.Minute, 600, 100},    // the documented fleet: heartbeats every 2 minutes
		{100, 10 * time.Minute, 3000, 100}, // reads are not spaced: 3,000 a minute is beyond any subscription
	} {
		p := Fleet(in, tc.clusters)
		assert.Equal(t, tc.clusters, p.Clusters)
		assert.Equal(t, tc.heartbeatInterval, p.HeartbeatInterval, "%d clusters", tc.clusters)
		require.Len(t, p.Subscriptions, 1)
		assert.InDelta(t, tc.reads, p.Subscriptions[0].AtRest.Reads, 1e-6, "%d clusters", tc.clusters)
		assert.InDelta(t, tc.writes, p.Subscriptions[0].AtRest.Writes, 1e-6, "%d clusters", tc.clusters)
	}
}

func TestLimits_AreTheDocumentedOnes(t *testing.T) {
	assert.Equal(t, 1500, ReadsPerMinute, "the principal's 25 a second, below Microsoft.Network's 10,000 per 5 minutes")
	assert.Equal(t, 200, WritesPerMinute, "Microsoft.Network's 1,000 writes and deletes per 5 minutes, below the principal's 10 a second")
	assert.InDelta(t, 750.0, ReadShare, 0)
	assert.InDelta(t, 100.0, WriteShare, 0)
	assert.Equal(t, NetworkWindow, networkWindowInMinutes*time.Minute)
}

// While a region is lost one cluster lists each zone's heartbeats every probe round and the zone
// whole every heartbeatStaleAfter; verification lists it every interval, records changing.
func TestPlanOf_WhileNamesMove(t *testing.T) {
	z := PlanOf(Input{Zones: []Zone{zone("weu", 3000, true)}}).Zones[0]
	assert.InDelta(t, 12.0, z.HeartbeatReadsWhileProbesFail, 1e-9, "60 / 5 s")
	assert.InDelta(t, 12.0, z.WholeReadingsWhileNamesMove, 1e-9, "6 pages × 60 / 30 s")
	assert.InDelta(t, 36.0, z.WhileNamesMove().Reads, 1e-9)
	assert.Zero(t, PlanOf(Input{Zones: []Zone{zone("weu", 3000, false)}}).Zones[0].HeartbeatReadsWhileProbesFail, "no failover, no heartbeats")
}

func TestZoneLimits_AreTheDocumentedOnes(t *testing.T) {
	assert.Equal(t, []int{60, 60, 60, 200, 100}, []int{ZoneCreatesPerMinute, ZoneUpdatesPerMinute, ZoneDeletesPerMinute, ZoneGetsPerMinute, ZoneListsPerMinute})
	assert.InDelta(t, 50.0, ZoneListShare, 0)
	assert.InDelta(t, 30.0, ZoneUpdateShare, 0)
}

// ExternalDNS lists a zone of 3,000 names (6,000 record sets and the SOA) in 61 requests; the
// interval that keeps a zone within 100 lists a minute grows with the clusters writing it, as
// the fleet's operators take their part, until they leave it nothing.
func TestExternalDNSInterval_KeepsTheZoneWithin100ListsAMinute(t *testing.T) {
	assert.Equal(t, 61, ExternalDNSListsPerSync(6000))
	assert.Equal(t, 1, ExternalDNSListsPerSync(0), "the SOA record set alone")
	var zones []Zone
	for _, c := range []string{"z0", "z1", "z2", "z3", "z4", "z5", "z6", "z7", "z8", "z9"} {
		zones = append(zones, zone(c, 3000, true))
	}
	for _, tc := range []struct {
		clusters      int
		operatorLists float64
		interval      time.Duration
		ok            bool
	}{
		{1, 3.0, time.Minute, true},       // 61 / 97
		{2, 6.0, 2 * time.Minute, true},   // 122 / 94 = 1.3
		{6, 18.0, 5 * time.Minute, true},  // 366 / 82 = 4.5
		{10, 30.0, 9 * time.Minute, true}, // 610 / 70 = 8.7
		{20, 60.0, 31 * time.Minute, true},
		{33, 99.0, 2013 * time.Minute, true},
		{34, 102.0, 0, false}, // the operators' own lists alone are over 100 a minute
	} {
		z := Fleet(Input{Zones: zones}, tc.clusters).Zones[0]
		require.InDelta(t, tc.operatorLists, z.AtRest().Reads, 1e-6, "%d clusters", tc.clusters)
		interval, ok := ExternalDNSInterval(tc.clusters, z.RecordSets, z.AtRest().Reads)
		assert.Equal(t, tc.ok, ok, "%d clusters", tc.clusters)
		assert.Equal(t, tc.interval, interval, "%d clusters", tc.clusters)
		if ok {
			lists := z.AtRest().Reads + float64(tc.clusters*61)/interval.Minutes()
			assert.LessOrEqual(t, lists, 100.0, "%d clusters", tc.clusters)
			assert.Greater(t, z.AtRest().Reads+float64(tc.clusters*61)/(interval-time.Minute).Minutes(), 100.0,
				"%d clusters: a minute shorter crosses the limit", tc.clusters)
		}
	}
}

// A fleet shares each zone's limits: 20 clusters at rest list a zone of 3,000 names 60 times a
// minute and update it 10 times, within 100 and 60; 11 clusters in one zone write their heartbeats
// every 25 s instead of 10 (22 s for the zone's share, to the next probe round): 26.4 updates a
// minute, where 66 crossed its 60; while a region is lost (every survivor listing its heartbeats
// every probe round and the zone whole every heartbeatStaleAfter) 720 times as Fleet counts it
// (the lost cluster too: 684 for its 19 survivors), seven times the limit.
func TestFleet_PerZoneFigures(t *testing.T) {
	var zones []Zone
	for _, c := range []string{"z0", "z1", "z2", "z3", "z4", "z5", "z6", "z7", "z8", "z9"} {
		zones = append(zones, zone(c, 3000, true))
	}
	z := Fleet(Input{Zones: zones}, 20).Zones[0]
	assert.InDelta(t, 60.0, z.AtRest().Reads, 1e-6)
	assert.InDelta(t, 10.0, z.AtRest().Writes, 1e-6, "heartbeats every 2 minutes")
	assert.InDelta(t, 720.0, z.WhileNamesMove().Reads, 1e-6)
	one := Fleet(Input{Zones: zones[:1]}, 11).Zones[0]
	assert.InDelta(t, 26.4, one.AtRest().Writes, 1e-6, "11 clusters in one zone: every 25 s (22 s to the next probe round), within the zone's 30 heartbeat updates a minute")
}
