package failover

import (
	"maps"
	"slices"
)

// View is what a Machine concludes for the rest of the operator between rounds: the
// DNSConfiguration's status (Regions, Held, Refused, Unreadable, Drain), how the routes publish
// their names (Forms) and who serves an answer (Attribution). It is a snapshot: the Machine
// replaces what it changes, never a map a View holds.
type View struct {
	// Judged says a round has judged the regions since this leader started (or no zone has
	// failover settings any more): until then the status keeps what an earlier leader wrote.
	Judged  bool
	Regions map[string]RegionView
	// Held are the names this leader took over that the zones still say are this cluster's.
	Held []Pass
	// Refused are the last round's refused ownership writes; Unreadable why each zone whose last
	// read or heartbeat write failed did not answer, by controller.
	Refused    []Refusal
	Unreadable map[string]string
	Drain      DrainState
	Forms      FormView
	// Attribution says who serves a failover zone's answer.
	Attribution Attribution
}

// Refusal is what a zone refused of a round's ownership writes of one region's names: how many,
// and the first error in a few words.
type Refusal struct {
	Controller, Region string
	Names              int
	Err                string
}

// refusedOnce counts p's refusal (why: its error in a few words) in refused, one entry per zone
// and region.
func refusedOnce(refused []Refusal, p Pass, why string) []Refusal {
	for i := range refused {
		if refused[i].Controller == p.Controller && refused[i].Region == p.Region {
			refused[i].Names++
			return refused
		}
	}
	return append(refused, Refusal{Controller: p.Controller, Region: p.Region, Names: 1, Err: why})
}

// DrainState is where a drain of this cluster's region stands (decide.Drain): Draining is
// spec.failover.drain, Returning a drain that ended while names were away; Here and Away count
// this cluster's names of its region's zones its owner holds and a stand-in holds (DrainProgress);
// Known is false while a zone of the region has not been read whole.
type DrainState struct {
	Draining, Returning bool
	Here, Away          int
	Known               bool
}

// FormView is what the routes' forms are decided from (FormIn): this cluster's region and each
// failover zone's last whole reading, by controller (a zone not read whole, or whose reading is
// older than passes just made: Read false, its region known). Zones nil: no round yet.
type FormView struct {
	Own   string
	Zones map[string]ZoneReading
}

// Form is the form hostname takes in the zone of controller (FormIn); known false when the zone
// says nothing yet.
func (v FormView) Form(controller, hostname, intermediate string) (Form, bool) {
	z, ok := v.Zones[controller]
	if !ok {
		return Form{}, false
	}
	return FormIn(z, v.Own, hostname, intermediate)
}

// Attribution is what Attribute needs to say who serves a failover zone's answer: this cluster's
// name, each failover zone's region, the clusters behind the gateway target hostnames the zones'
// heartbeats name, and each zone's intermediate names' targets as its last whole reading showed
// them (an answer through one is served by the cluster it points at).
type Attribution struct {
	Cluster       string
	ZoneRegions   map[string]string
	Servers       map[string]Server
	Intermediates map[string]map[string]string
}

// Of says who serves a failover zone's answer (Attribute); "" for other zones.
func (a Attribution) Of(controller, answer string) string {
	region, ok := a.ZoneRegions[controller]
	if !ok {
		return ""
	}
	return Attribute(ThroughIntermediate(answer, a.Intermediates[controller]), region, a.Cluster, a.Servers)
}

// Equal says a and b attribute every answer alike.
func (a Attribution) Equal(b Attribution) bool {
	return a.Cluster == b.Cluster && maps.Equal(a.ZoneRegions, b.ZoneRegions) && maps.Equal(a.Servers, b.Servers) &&
		maps.EqualFunc(a.Intermediates, b.Intermediates, maps.Equal)
}

// View is the machine's conclusions now, for the rest of the operator.
func (m *Machine) View() View {
	return View{Judged: m.judged, Regions: maps.Clone(m.regions), Held: slices.Clone(m.held), Refused: slices.Clone(m.refused),
		Unreadable: maps.Clone(m.unreadable), Drain: m.drain, Forms: m.forms, Attribution: m.attribution}
}
