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
