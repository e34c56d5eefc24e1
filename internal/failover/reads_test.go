package failover

import (
	"testing"
	"time"
)

func TestReadPlan(t *testing.T) {
	now := time.Unix(10000, 0)
	s := DefaultReadSettings(30*time.Second, 5*time.Minute)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	tests := []struct {
		name     string
		last     ZoneReads
		suspect  bool
		interest Interest
		want     Read
	}{
		{"never read: whole", ZoneReads{}, false, AtRest, Read{Witness: true, Full: true}},
		{"at rest, both read lately: nothing", ZoneReads{Full: ago(time.Minute), Witness: ago(10 * time.Second)}, false, AtRest, Read{}},
		{"at rest, heartbeats due", ZoneReads{Full: ago(time.Minute), Witness: ago(30 * time.Second)}, false, AtRest, Read{Witness: true}},
		{"at rest, verification's listing due (within 5.5 minutes): not yet", ZoneReads{Full: ago(5*time.Minute + 29*time.Second), Witness: ago(time.Second)}, false, AtRest, Read{}},
		{"at rest, verification's listing late by a heartbeat reading: whole", ZoneReads{Full: ago(6 * time.Minute), Witness: ago(time.Second)}, false, AtRest, Read{Witness: true, Full: true}},
		{"a region's probes failing: heartbeats every round", ZoneReads{Full: ago(time.Minute), Witness: ago(time.Second)}, true, AtRest, Read{Witness: true}},
		{"holding names: whole every 30 s", ZoneReads{Full: ago(30 * time.Second), Witness: ago(time.Second)}, false, Holding, Read{Witness: true, Full: true}},
		{"holding names, whole read lately: nothing", ZoneReads{Full: ago(10 * time.Second), Witness: ago(time.Second)}, false, Holding, Read{}},
		{"a name to pass: whole every round", ZoneReads{Full: ago(time.Second), Witness: ago(time.Second)}, false, Passing, Read{Witness: true, Full: true}},
	}
	for _, tt := range tests {
		if got := ReadPlan(now, tt.last, tt.suspect, tt.interest, s); got != tt.want {
			t.Errorf("%s: ReadPlan = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestZoneInterest(t *testing.T) {
	lost := map[string]Judgement{"neu": {State: Serving}, "weu": {State: Lost}, "frc": {State: Serving}}
	serving := map[string]Judgement{"neu": {State: Serving}, "weu": {State: Serving}}
	owned := func(owner string) TXTSet {
		return TXTSet{Values: []string{`"heritage=external-dns,external-dns/owner=` + owner + `,external-dns/resource=crd/team/web"`}}
	}
	beats := map[string][]Heartbeat{"weu": {{Cluster: "aks01", Owner: "external-dns-weu-aks01"}}, "neu": {{Cluster: "aks02", Owner: "external-dns-neu-aks02"}}}
	// weu's zone as aks02 (neu) last read it whole: api is weu's; neu's zone: web is held by weu's
	// cluster, standing in.
	weuZone := ZoneReading{Controller: "external-dns-weu", Region: "weu", Read: true, Owner: "external-dns-weu-aks02", Beats: beats,
		TXT: map[string]TXTSet{"cname-api.example.com": owned("external-dns-weu-aks01")}}
	passedAlready := weuZone
	passedAlready.TXT = map[string]TXTSet{"cname-api.example.com": owned("external-dns-weu-aks02")}
	neuZone := ZoneReading{Controller: "external-dns-neu", Region: "neu", Read: true, Owner: "external-dns-neu-aks02",
		Beats: map[string][]Heartbeat{"weu": {{Cluster: "aks01", Owner: "external-dns-neu-aks01"}}},
		TXT:   map[string]TXTSet{"cname-web.example.com": owned("external-dns-neu-aks01")}}
	api := Name{Controller: "external-dns-weu", Hostname: "api.example.com", Namespace: "team", StandIns: []string{"neu"}}
	apiOtherFirst := Name{Controller: "external-dns-weu", Hostname: "api.example.com", Namespace: "team", StandIns: []string{"frc", "neu"}}
	web := Name{Controller: "external-dns-neu", Hostname: "web.example.com", Namespace: "team", StandIns: []string{"weu"}, FailBack: true}
	tests := []struct {
		name  string
		in    Interests
		whole ZoneReading
		want  Interest
	}{
		{"nothing lost, nothing held", Interests{Own: "neu", Judged: serving, Names: []Name{api}}, weuZone, AtRest},
		{"a lost region's name this cluster stands in for first", Interests{Own: "neu", Judged: lost, Names: []Name{api}}, weuZone, Passing},
		{"... already passed: new names may come", Interests{Own: "neu", Judged: lost, Names: []Name{api}}, passedAlready, Holding},
		{"another zone's name", Interests{Own: "neu", Judged: lost, Names: []Name{api}}, neuZone, AtRest},
		{"another stand-in first", Interests{Own: "neu", Judged: lost, Names: []Name{apiOtherFirst}}, weuZone, AtRest},
		{"a name this leader holds", Interests{Own: "neu", Judged: serving, Held: []Pass{{Controller: "external-dns-weu"}}}, weuZone, Holding},
		{"a name marked taken", Interests{Own: "neu", Judged: serving, Names: []Name{{Controller: "external-dns-weu", TakenFrom: "weu"}}}, weuZone, Holding},
		{"own name held by a stand-in, failback allowed", Interests{Own: "neu", Judged: serving, Names: []Name{web}, MayReclaim: true}, neuZone, Passing},
		{"own name held by a stand-in, failback not yet allowed", Interests{Own: "neu", Judged: serving, Names: []Name{web}}, neuZone, Holding},
		{"own name held by a stand-in, manual failback", Interests{Own: "neu", Judged: serving, Names: []Name{{Controller: "external-dns-neu",
			Hostname: "web.example.com", Namespace: "team", StandIns: []string{"weu"}}}, MayReclaim: true}, neuZone, AtRest},
		{"never read whole", Interests{Own: "neu", Judged: lost, Names: []Name{api}}, ZoneReading{Controller: "external-dns-weu"}, Holding},
		{"a name waits to go through its intermediate", Interests{Own: "neu", Judged: serving, Names: []Name{api}, Forming: map[string]bool{"external-dns-weu": true}}, weuZone, Holding},
		{"... in another zone", Interests{Own: "neu", Judged: serving, Names: []Name{api}, Forming: map[string]bool{"external-dns-neu": true}}, weuZone, AtRest},
	}
	for _, tt := range tests {
		if got := tt.in.ZoneInterest(tt.whole); got != tt.want {
			t.Errorf("%s: ZoneInterest = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The heartbeats of the newer witness reading replace the whole reading's, but those under the
// earlier name a witness reading does not see; ownership records and addresses stay the whole
// reading's; Read says this round's.
func TestMerge(t *testing.T) {
	at := time.Unix(1000, 0)
	whole := ZoneReading{Controller: "external-dns-weu", Read: true,
		Beats: map[string][]Heartbeat{
			"weu": {{Cluster: "aks01", At: at}},
			"frc": {{Cluster: "aks03", At: at, Legacy: true}},
			"neu": {{Cluster: "aks02", At: at, Legacy: true}},
		},
		TXT: map[string]TXTSet{"cname-api.example.com": {Values: []string{"v"}}}, Addresses: map[string][]string{"gw.example.com": {"10.0.0.1"}}}
	witness := ZoneReading{Read: true, Beats: map[string][]Heartbeat{
		"weu": {{Cluster: "aks01", At: at.Add(5 * time.Second)}},
		"neu": {{Cluster: "aks02", At: at.Add(5 * time.Second)}},
	}}

	got := Merge(whole, witness, true, true)
	if !got.Read || len(got.TXT) != 1 || len(got.Addresses) != 1 {
		t.Errorf("ownership records and addresses are the whole reading's: %+v", got)
	}
	if b := got.Beats["weu"]; len(b) != 1 || !b[0].At.Equal(at.Add(5*time.Second)) {
		t.Errorf("weu: the witness's newer heartbeat, got %+v", b)
	}
	if b := got.Beats["frc"]; len(b) != 1 || !b[0].Legacy {
		t.Errorf("frc: the legacy heartbeat only the whole reading sees is kept, got %+v", b)
	}
	if b := got.Beats["neu"]; len(b) != 1 || b[0].Legacy {
		t.Errorf("neu: the cluster's current heartbeat replaces its legacy one, got %+v", b)
	}
	if whole.Beats["weu"][0].At != at {
		t.Error("Merge changed the whole reading's heartbeats")
	}

	if got := Merge(whole, witness, false, false); got.Read || !got.Beats["weu"][0].At.Equal(at) {
		t.Errorf("an older witness reading is ignored, and a zone not read this round is not Read: %+v", got)
	}
	if own := Ownership(Merge(whole, witness, true, true), false); own.Read {
		t.Error("ownership decisions take a zone only when it was read whole this round")
	}
}

func TestKnownHeartbeats(t *testing.T) {
	z := ZoneReading{Beats: map[string][]Heartbeat{"weu": {{Cluster: "aks01"}}, "neu": {{Cluster: "aks02", Legacy: true}}}}
	got := KnownHeartbeats(z, "example.com.")
	want := []string{"_router-heartbeat.aks02.neu.example.com", "aks01.weu._router-heartbeat.example.com"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("KnownHeartbeats = %v, want %v", got, want)
	}
}
