package failover

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// ZoneReading is what one zone with failover settings held when this cluster last read it: the
// heartbeats of every cluster writing it, the ownership TXT records and the gateway addresses.
type ZoneReading struct {
	// Controller is the zone's ExternalDNS controller; Region the region whose zone it is.
	Controller, Region string
	// Read is false when the zone could not be read: it then says nothing of anyone.
	Read bool
	// Beats are the heartbeats found in the zone, by region (one per cluster of the region).
	Beats map[string][]Heartbeat
	// TXT are the zone's TXT values and TTL by Canonical name.
	TXT map[string]TXTSet
	// Addresses are the zone's A and AAAA values by Canonical name.
	Addresses map[string][]string
	// CNAMEs are the zone's CNAME targets (Canonical) by Canonical name: they say which names
	// already resolve through an intermediate name (naming.IntermediateName), whose move moves
	// them, and which still resolve directly, each moving on its own.
	CNAMEs map[string]string
	// Owner is the ExternalDNS owner ID of this cluster's instance for the zone; TXTPrefix the
	// zone's --txt-prefix.
	Owner, TXTPrefix string
}

// TXTSet is the TXT record set of one name.
type TXTSet struct {
	Values []string
	TTL    uint32
}

// Canonical is a DNS name as the readings key it: lower case, without the final dot.
func Canonical(name string) string { return strings.ToLower(strings.TrimSuffix(name, ".")) }

// Regions lists the regions other than own that have a heartbeat in any zone read, sorted (a
// malformed one included: its region is judged, and says why nothing moves).
func Regions(own string, zones []ZoneReading) []string {
	var out []string
	for _, z := range zones {
		for region := range z.Beats {
			if region != own && !slices.Contains(out, region) {
				out = append(out, region)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Witness is what the zones say of a region at now, one Heartbeat per zone for JudgeRegion: of its
// clusters' heartbeats there the one that vouches most for it (fresh before pending before stale,
// then the newest), not read when the zone was not, not found when it holds none. A zone that
// holds a malformed heartbeat of the region (Heartbeat.Malformed) and no fresh one says nothing:
// the malformed one stands for it, neither fresh nor stale.
func Witness(now time.Time, region string, zones []ZoneReading, s Settings) []Heartbeat {
	out := make([]Heartbeat, 0, len(zones))
	for _, z := range zones {
		hb := Heartbeat{Zone: z.Controller, Read: z.Read}
		var malformed *Heartbeat
		for i, b := range z.Beats[region] {
			switch {
			case b.Malformed != "":
				if malformed == nil {
					malformed = &z.Beats[region][i]
				}
			case b.Found && (!hb.Found || b.vouchesMore(hb, now, s)):
				hb = b
				hb.Zone, hb.Read = z.Controller, z.Read
			}
		}
		if malformed != nil && z.Read && (!hb.Found || hb.freshnessAt(now, s.StaleAfter(hb)) != fresh) {
			hb = Heartbeat{Zone: z.Controller, Read: true, Cluster: malformed.Cluster, Malformed: malformed.Malformed}
		}
		out = append(out, hb)
	}
	return out
}

// Addresses are the gateway addresses of a region to probe: those its heartbeats carry, and the
// zones' address records of the target hostnames its heartbeats name, each once, sorted.
func Addresses(region string, zones []ZoneReading) []string {
	var out []string
	add := func(a string) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	for _, z := range zones {
		for _, b := range z.Beats[region] {
			for _, a := range b.Addresses {
				add(a)
			}
			for _, target := range b.Targets {
				for _, a := range z.Addresses[Canonical(target)] {
					add(a)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// JudgeRegions judges every other region known from the zones' heartbeats (JudgeRegion), with
// this cluster's probes of each; own is Serving, or Drained while this cluster asks for a drain
// (draining): it then stands in for no other region (StandIn passes over it), as the other
// clusters, which judge it Drained, expect.
func JudgeRegions(now time.Time, own string, draining bool, zones []ZoneReading, probes map[string]Probes, s Settings) map[string]Judgement {
	out := map[string]Judgement{own: {State: Serving, Reason: "OwnRegion", Message: "this cluster's own region"}}
	if draining {
		out[own] = Judgement{State: Drained, Reason: ReasonDrainRequested, Message: "this cluster's own region, drained (spec.failover.drain)"}
	}
	for _, region := range Regions(own, zones) {
		out[region] = JudgeRegion(now, probes[region], Witness(now, region, zones, s), s)
	}
	return out
}

// Name is a name this cluster publishes into a zone with failover settings, for a route whose
// DNSPolicy lists stand-ins.
type Name struct {
	// Controller is the zone's ExternalDNS controller; Hostname the name (the route's CNAME);
	// Namespace the route's namespace; Endpoint the name of the DNSEndpoint that publishes it.
	Controller, Hostname, Namespace, Endpoint string
	// StandIns are the policy's stand-in regions, in order.
	StandIns []string
	// FailBack says the name goes back to its own region once that region may take it back: the
	// policy's failback is Automatic, or a drain of this cluster's region has just ended.
	FailBack bool
	// TakenFrom is the region this cluster took the name over from, as its DNSEndpoint's mark
	// (naming.AnnotationTakenFrom) says; "" when it took none.
	TakenFrom string
	// Intermediate is, for a route's name, its policy's intermediate name in the zone
	// (naming.IntermediateName; "" when it has none); for an intermediate name, "" (Hostname is
	// it).
	Intermediate string
	// Target is this cluster's gateway target hostname the name (or its intermediate) points at
	// from this cluster, and TTL the records' TTL: what the operators write an intermediate with.
	Target string
	TTL    uint32
}

// Pass is one ownership write: the TXT record TXTName in the zone of Controller goes from the
// lost region's owner From to this cluster's owner To (Old replaced by New, TTL kept). For an
// intermediate name the operators write (TXTName ""), it is the intermediate's CNAME that goes
// from the target Old, of From's cluster, to this cluster's target New.
type Pass struct {
	Controller, Hostname, TXTName string
	TTL                           uint32
	Old, New                      string
	From, To                      string
	// Region is the lost region the name is taken from.
	Region string
	// Namespace and Endpoint name this cluster's DNSEndpoint that publishes the name.
	Namespace, Endpoint string
	// Through is the intermediate name the zone answers Hostname through, whose ownership record
	// TXTName is (Standing): the name moved with it, and carries no mark of its own.
	Through string
}

// Takeovers are the ownership writes this cluster (of region own) makes: every name it publishes
// whose ownership record in the zone names the owner of a region judged Lost or Drained
// (State.MovesNames), when own is the
// first serving stand-in of the name's policy. A name whose owner no heartbeat of the zone names,
// or whose region is not Lost, or whose record set holds other than one ownership value, or that
// the lost region published from another namespace (another team's DNSEndpoint), stays where it
// is.
func Takeovers(own string, judged map[string]Judgement, zones []ZoneReading, names []Name) []Pass {
	states := make(map[string]State, len(judged))
	for region, j := range judged {
		states[region] = j.State
	}
	return passes(zones, names, true, func(_ *ZoneReading, n Name, holder string) bool {
		return states[holder].MovesNames() && StandIn(holder, n.StandIns, states) == own
	})
}

// Reclaims are the ownership writes by which this cluster (of region own), healthy again, takes
// back the names of its own region's zones that a stand-in holds: every name it publishes there
// under a policy with automatic failback whose ownership record names the owner of one of the
// policy's stand-in regions. healthy is MayFailBack's answer for this cluster's own gateway; a
// cluster that has not been healthy for long enough reclaims nothing.
func Reclaims(own string, healthy bool, zones []ZoneReading, names []Name) []Pass {
	if !healthy {
		return nil
	}
	// A name through an intermediate is passed back too when a stand-in holds its own record: it
	// took it on its own (passes) before its routes published the intermediate. Same content, no
	// answer changes: the home holds its names again, and the stand-in counts nothing.
	return passes(zones, names, false, func(z *ZoneReading, n Name, holder string) bool {
		return n.FailBack && z.Region == own && holder != own && slices.Contains(n.StandIns, holder)
	})
}

// passes walks the holdings of the names in their zones and passes to this cluster's owner those
// held by another owner whose region (known from the zone's heartbeats) take accepts: an
// intermediate the operators write by rewriting its CNAME to this cluster's target, any other name
// by rewriting its ownership record, when it was published from the name's own namespace. A zone
// not read, a record set of other than one ownership value and an owner no heartbeat names are
// left alone, and so is a name the zone answers through an intermediate name this cluster wants
// too: the intermediate's pass moves it. One whose intermediate this cluster does not publish
// through yet is passed on its own: its ExternalDNS then points it at this cluster's gateway
// directly, and the name is not left with a lost region meanwhile. An intermediate ExternalDNS
// still owns (an earlier version's) is first released to IntermediateOwner, in the same round as
// its CNAME's pass.
func passes(zones []ZoneReading, names []Name, skipThrough bool, take func(z *ZoneReading, n Name, holder string) bool) []Pass {
	byController := zonesByController(zones)
	type key struct{ controller, name string }
	published := map[key]bool{}
	for _, n := range names {
		published[key{n.Controller, Canonical(n.Hostname)}] = true
	}
	var out []Pass
	for _, n := range names {
		z := byController[n.Controller]
		if z == nil || !z.Read || z.Owner == "" {
			continue
		}
		if target := z.CNAMEs[Canonical(n.Hostname)]; skipThrough && isIntermediate(target) && published[key{n.Controller, target}] {
			continue
		}
		h, found := z.holding(n.Hostname)
		if !found || h.Owner == "" || h.Owner == z.Owner {
			continue
		}
		holder := z.regionOf(h.Owner)
		if holder == "" || !take(z, n, holder) {
			continue
		}
		pass := Pass{Controller: n.Controller, Hostname: Canonical(n.Hostname), From: h.Owner, To: z.Owner, Region: holder, Namespace: n.Namespace, Endpoint: n.Endpoint}
		if isIntermediate(n.Hostname) {
			out = append(out, intermediatePasses(z, n, h, pass)...)
			continue
		}
		if resourceNamespace(h.Set.Values[0]) != n.Namespace {
			continue
		}
		if passed, ok := PassOwnership(h.Set.Values[0], h.Owner, z.Owner); ok {
			pass.TXTName, pass.TTL, pass.Old, pass.New = h.TXTName, h.Set.TTL, h.Set.Values[0], passed
			out = append(out, pass)
		}
	}
	return out
}

// intermediatePasses move an intermediate name held as h to this cluster: its CNAME rewritten to
// this cluster's target, after (for one ExternalDNS still owns) its ownership record released to
// IntermediateOwner.
func intermediatePasses(z *ZoneReading, n Name, h holding, pass Pass) []Pass {
	target := z.CNAMEs[Canonical(n.Hostname)]
	if n.Target == "" || target == "" || target == Canonical(n.Target) {
		return nil
	}
	var out []Pass
	if !h.written() {
		released, ok := PassOwnership(h.Set.Values[0], h.Owner, IntermediateOwner)
		if !ok {
			return nil
		}
		release := pass
		release.TXTName, release.TTL, release.Old, release.New, release.To = h.TXTName, h.Set.TTL, h.Set.Values[0], released, IntermediateOwner
		out = append(out, release)
	}
	pass.Old, pass.New, pass.TTL = target, Canonical(n.Target), n.TTL
	return append(out, pass)
}

// Held counts, by region and zone, the names of taken whose holding in the zones is still this
// cluster's owner: the takeovers that still stand (a name passed back, or taken by its own region
// again, no longer counts). A zone not read keeps its names counted.
func Held(taken []Pass, zones []ZoneReading) (held []Pass) {
	byController := zonesByController(zones)
	for _, p := range taken {
		z := byController[p.Controller]
		if z != nil && z.Read && !p.heldIn(z) {
			continue
		}
		held = append(held, p)
	}
	return held
}

// heldIn says the zone still shows what the pass wrote: its ownership record naming To, or, for
// an intermediate the operators write (TXTName ""), the record that serves its name held by To.
func (p Pass) heldIn(z *ZoneReading) bool {
	if p.TXTName != "" {
		set := z.TXT[p.TXTName]
		return len(set.Values) == 1 && OwnerOf(set.Values[0]) == p.To
	}
	h, found := z.servingHolding(p.Hostname)
	return found && h.Owner == p.To
}

// Standing are the takeovers the DNSEndpoints' marks and the zones say still stand, whoever made
// them (this leader, or an earlier one): every name marked as taken from a region (TakenFrom)
// whose ownership record in its zone names this cluster's owner; a zone not read keeps its marked
// names counted. Returned are the marked names whose ownership record names another owner: they
// went back (or on), and their marks are out of date. A marked name whose zone holds no ownership
// record for it is neither: nothing definite is known. A name the zone answers through an
// intermediate name stands or went back with it, and one whose intermediate is marked stands
// with it, unmarked itself (Pass.Through): one pass moved them all, and one mark says so.
func Standing(names []Name, zones []ZoneReading) (held []Pass, returned []Name) {
	byController := zonesByController(zones)
	type key struct{ controller, intermediate string }
	intermediateMarks := map[key]string{}
	for _, n := range names {
		if n.TakenFrom != "" && isIntermediate(n.Hostname) {
			intermediateMarks[key{n.Controller, Canonical(n.Hostname)}] = n.TakenFrom
		}
	}
	for _, n := range names {
		z := byController[n.Controller]
		if z == nil || z.Owner == "" {
			continue
		}
		takenFrom, through := n.TakenFrom, ""
		if target := z.CNAMEs[Canonical(n.Hostname)]; z.Read && isIntermediate(target) {
			if region := intermediateMarks[key{n.Controller, target}]; region != "" {
				through = target
				takenFrom = cmp.Or(takenFrom, region)
			}
		}
		if takenFrom == "" {
			continue
		}
		pass := Pass{Controller: n.Controller, Hostname: Canonical(n.Hostname), To: z.Owner, Region: takenFrom, Namespace: n.Namespace, Endpoint: n.Endpoint, Through: through}
		if !z.Read {
			pass.TXTName = ownershipNames(z.TXTPrefix, n.Hostname)[0]
			held = append(held, pass)
			continue
		}
		h, found := z.servingHolding(n.Hostname)
		switch {
		case !found || h.Owner == "":
		case h.Owner == z.Owner:
			if !h.written() {
				pass.TXTName, pass.TTL, pass.New = h.TXTName, h.Set.TTL, h.Set.Values[0]
			}
			held = append(held, pass)
		case n.TakenFrom != "":
			returned = append(returned, n)
		}
	}
	return held, returned
}

// Union is every pass of lists, the first of each zone and name (Controller, Hostname) kept.
func Union(lists ...[]Pass) []Pass {
	type key struct{ controller, hostname string }
	seen := map[key]bool{}
	var out []Pass
	for _, list := range lists {
		for _, p := range list {
			k := key{p.Controller, Canonical(p.Hostname)}
			if !seen[k] {
				seen[k] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// zonesByController indexes zones by their ExternalDNS controller.
func zonesByController(zones []ZoneReading) map[string]*ZoneReading {
	out := make(map[string]*ZoneReading, len(zones))
	for i := range zones {
		out[zones[i].Controller] = &zones[i]
	}
	return out
}

// ownershipNames are the names of a CNAME's ownership records under ExternalDNS's TXT registry:
// the current form (<prefix>cname-<name>) and the old one (<prefix><name>), Canonical.
func ownershipNames(prefix, hostname string) []string {
	h := Canonical(hostname)
	return []string{Canonical(prefix + "cname-" + h), Canonical(prefix + h)}
}

// ownership is the ownership record of a name in the zone: the first of its forms
// (ownershipNames) that holds one ownership value naming an owner; found is false when none does.
func (z *ZoneReading) ownership(hostname string) (txtName string, set TXTSet, found bool) {
	for _, txtName := range ownershipNames(z.TXTPrefix, hostname) {
		set, ok := z.TXT[txtName]
		if ok && len(set.Values) == 1 && OwnerOf(set.Values[0]) != "" {
			return txtName, set, true
		}
	}
	return "", TXTSet{}, false
}

// regionOf is the region whose heartbeat in the zone names owner, or "".
func (z *ZoneReading) regionOf(owner string) string {
	if owner == "" {
		return ""
	}
	for region, beats := range z.Beats {
		for _, b := range beats {
			if b.Owner == owner {
				return region
			}
		}
	}
	return ""
}

// DrainProgress counts the names this cluster (of region own) publishes into its own region's
// zones, as the zones' ownership records say: here those its owner holds, away those another
// owner holds (a stand-in); a name answered through an intermediate name is where its
// intermediate is. known is false while a zone of its region has not been read whole (its count
// is then not known).
func DrainProgress(own string, zones []ZoneReading, names []Name) (here, away int, known bool) {
	byController := zonesByController(zones)
	known = true
	for _, n := range names {
		z := byController[n.Controller]
		if z == nil || z.Region != own {
			continue
		}
		if !z.Read || z.Owner == "" {
			known = false
			continue
		}
		switch h, found := z.servingHolding(n.Hostname); {
		case !found || h.Owner == "":
		case h.Owner == z.Owner:
			here++
		default:
			away++
		}
	}
	return here, away, known
}

// Server is a cluster that serves names through its gateway target hostnames.
type Server struct {
	Cluster, Region string
}

// Servers maps every gateway target hostname (Canonical) the zones' heartbeats name to the cluster
// that named it.
func Servers(zones []ZoneReading) map[string]Server {
	out := map[string]Server{}
	for _, z := range zones {
		for region, beats := range z.Beats {
			for _, b := range beats {
				for _, t := range b.Targets {
					out[Canonical(t)] = Server{Cluster: b.Cluster, Region: region}
				}
			}
		}
	}
	return out
}

// Attribute says who serves what a zone answers when it is not the zone's own region: the cluster
// whose gateway target hostname the answer's CNAME names, e.g. "served by cluster aks02, of region
// neu, for region weu" ("this cluster" for ownCluster). It is "" when the answer names no known
// target, or the zone's own region serves it (the usual case, nothing to say).
func Attribute(answer, zoneRegion, ownCluster string, servers map[string]Server) string {
	rest, ok := strings.CutPrefix(answer, "CNAME ")
	if !ok {
		return ""
	}
	target, _, _ := strings.Cut(rest, " ")
	s, known := servers[Canonical(target)]
	if !known || s.Region == zoneRegion {
		return ""
	}
	who := "cluster " + s.Cluster
	if s.Cluster == ownCluster {
		who = "this cluster"
	}
	return "served by " + who + ", of region " + s.Region + ", for region " + zoneRegion
}
