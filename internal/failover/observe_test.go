package failover

import (
	"testing"
	"time"
)

// A heartbeat's value seen changing is fresh on the reader's clock, whatever the writer's says; one
// that stopped changing ages from when it was first seen; a zone not read keeps what was seen.
func TestObservations_Observe(t *testing.T) {
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	behind := start.Add(-time.Hour) // the writer's clock, an hour behind
	zone := func(read bool, at time.Time) []ZoneReading {
		return []ZoneReading{{Controller: "external-dns-weu", Read: read, Beats: map[string][]Heartbeat{"weu": {{Cluster: "aks01", Found: true, Read: read, At: at}}}}}
	}
	o := Observations{}
	got := o.Observe(start, zone(true, behind))
	if b := got[0].Beats["weu"][0]; !b.Observed.Equal(start) || b.SeenChanging {
		t.Errorf("first seen now, not seen changing: %+v", b)
	}
	got = o.Observe(start.Add(10*time.Second), zone(true, behind.Add(10*time.Second)))
	if b := got[0].Beats["weu"][0]; !b.Observed.Equal(start.Add(10*time.Second)) || !b.SeenChanging {
		t.Errorf("a new value is seen changing now: %+v", b)
	}
	got = o.Observe(start.Add(40*time.Second), zone(true, behind.Add(10*time.Second)))
	if b := got[0].Beats["weu"][0]; !b.Observed.Equal(start.Add(10*time.Second)) || !b.SeenChanging {
		t.Errorf("an unchanged value keeps when it was first seen: %+v", b)
	}
	if b := got[0].Beats["weu"][0]; b.Fleet != (Fleet{Clusters: 1, Zones: 1}) {
		t.Errorf("stamped with the fleet counted in the zones read: %+v", b.Fleet)
	}
	got = o.Observe(start.Add(50*time.Second), zone(false, behind.Add(10*time.Second)))
	if len(o) != 1 || !got[0].Beats["weu"][0].Observed.IsZero() {
		t.Errorf("a zone not read is not stamped, and keeps what was seen: %v %+v", o, got[0].Beats["weu"][0])
	}
	o.Observe(start.Add(60*time.Second), []ZoneReading{{Controller: "external-dns-weu", Read: true, Beats: map[string][]Heartbeat{}}})
	if len(o) != 0 {
		t.Errorf("a heartbeat gone from a zone read is forgotten: %v", o)
	}
}

// Two clusters of one region: the live one's heartbeat is the region's witness, though the dead
// one's clock, ahead, says its last heartbeat is newer.
func TestWitness_PrefersTheHeartbeatSeenChangingLast(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	dead := Heartbeat{Cluster: "aks01", Found: true, At: now.Add(time.Minute), Observed: now.Add(-time.Minute)}
	live := Heartbeat{Cluster: "aks03", Found: true, GatewayAnswers: true, At: now.Add(-5 * time.Second), Observed: now.Add(-5 * time.Second)}
	w := Witness(now, "weu", []ZoneReading{{Controller: "external-dns-weu", Read: true, Beats: map[string][]Heartbeat{"weu": {dead, live}}}}, DefaultSettings)
	if len(w) != 1 || w[0].Cluster != "aks03" {
		t.Errorf("Witness = %+v, want aks03's", w)
	}
	if j := JudgeRegion(now, Probes{Failures: 3}, w, DefaultSettings); j.State != Unreachable {
		t.Errorf("%s (%s): the region still has a live cluster", j.State, j.Reason)
	}
}

// A new reader meets two clusters of a region: the dead one's heartbeat, first seen now, and the
// live one's, seen changing 5 s ago. The live one is the witness, whichever was seen last.
func TestWitness_PrefersAFreshHeartbeatToOneMetForTheFirstTime(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	dead := Heartbeat{Cluster: "aks01", Found: true, At: now.Add(-time.Hour), Observed: now}
	live := Heartbeat{Cluster: "aks03", Found: true, GatewayAnswers: true, At: now.Add(-5 * time.Second), Observed: now.Add(-5 * time.Second), SeenChanging: true}
	for _, order := range [][]Heartbeat{{dead, live}, {live, dead}} {
		w := Witness(now, "weu", []ZoneReading{{Controller: "external-dns-weu", Read: true, Beats: map[string][]Heartbeat{"weu": order}}}, DefaultSettings)
		if len(w) != 1 || w[0].Cluster != "aks03" {
			t.Errorf("Witness = %+v, want aks03's", w)
		}
		if j := JudgeRegion(now, Probes{Failures: 3}, w, DefaultSettings); j.Reason != "WitnessSaysAlive" {
			t.Errorf("%s (%s): the region has a live cluster", j.State, j.Reason)
		}
	}
}

// A zone holding a record under a heartbeat's name that is not a heartbeat says nothing of the
// region unless another of its clusters' heartbeats there is fresh, and what was observed of the
// cluster's heartbeat before stays.
func TestWitness_AMalformedHeartbeatSaysNothing(t *testing.T) {
	now := time.Unix(10_000, 0)
	s := DefaultSettings
	garbage := Heartbeat{Read: true, Cluster: "aks01", Malformed: "hello"}
	staleBeat := Heartbeat{Read: true, Found: true, Cluster: "aks01", At: now.Add(-time.Hour), GatewayAnswers: true}
	freshBeat := Heartbeat{Read: true, Found: true, Cluster: "aks03", At: now.Add(-time.Second), GatewayAnswers: true}
	zone := func(beats ...Heartbeat) []ZoneReading {
		return []ZoneReading{{Controller: "external-dns-weu", Read: true, Beats: map[string][]Heartbeat{"weu": beats}}}
	}
	got := Witness(now, "weu", zone(staleBeat, garbage), s)
	if len(got) != 1 || got[0].Malformed != "hello" || got[0].Found || !got[0].Read || got[0].Zone != "external-dns-weu" {
		t.Errorf("a stale heartbeat beside a malformed one: %+v, want the malformed one (says nothing)", got)
	}
	got = Witness(now, "weu", zone(garbage, freshBeat), s)
	if len(got) != 1 || !got[0].Found || got[0].Cluster != "aks03" {
		t.Errorf("a fresh heartbeat beside a malformed one: %+v, want the fresh one (it vouches)", got)
	}
	unreadZone := zone(garbage)
	unreadZone[0].Read = false
	if got = Witness(now, "weu", unreadZone, s); got[0].Read || got[0].Malformed != "" {
		t.Errorf("a zone not read: %+v, want unread", got)
	}

	o := Observations{}
	before := zone(Heartbeat{Read: true, Found: true, Cluster: "aks01", At: now.Add(-5 * time.Second), GatewayAnswers: true})
	o.Observe(now.Add(-5*time.Second), before)
	o.Observe(now, zone(garbage))
	after := o.Observe(now.Add(time.Second), before)
	if b := after[0].Beats["weu"][0]; !b.Observed.Equal(now.Add(-5*time.Second)) || b.SeenChanging {
		t.Errorf("the value seen before the malformed record came back: %+v, want observed since its first sighting and not changing", b)
	}
	if len(Regions("neu", zone(garbage))) != 1 {
		t.Error("a region with only a malformed heartbeat is judged (and says why nothing moves)")
	}
}
