package failover

import (
	"slices"
	"strings"
)

// Form is how a cluster publishes one name of a failover policy into one zone
// (docs/ARCHITECTURE.md#one-record-moves-a-policy): Through, the name as a CNAME to the policy's
// intermediate name there (naming.IntermediateName) instead of to the gateway target hostname
// directly; Intermediate, the route's DNSEndpoint still publishes that intermediate's CNAME
// beside the name, as an earlier version did, while ExternalDNS owns it. The operators write the
// intermediates themselves (Upkeep), and a move rewrites one of them, one record for all the
// policy's names.
type Form struct {
	Intermediate, Through bool
	// Unheld: Through only because nobody held the name when the zone was read and the
	// intermediate is not there yet. A route whose DNSEndpoint already publishes the name directly
	// keeps it so (decide.RouteForm): its ExternalDNS may have written the name since the reading,
	// and pointing it at an intermediate not yet created would leave it without an address.
	Unheld bool
}

// FormIn is the form a name should take in a zone as the zone's last whole reading shows it;
// known is false when the zone was not read whole (the caller then keeps the form it has). own is
// this cluster's region, hostname the name, intermediate its intermediate name there.
//
// Only a cluster of the zone's own region creates an intermediate name (Upkeep): a name goes
// through one of another region only once it exists, so that no stand-in points a region's names
// at itself. A name goes through the intermediate only when that changes nobody's answer:
//   - a name nobody holds yet: it did not resolve before (the zone's own region creates the
//     intermediate at its next reading, or it exists already);
//   - a name this cluster holds: once the intermediate is held by this cluster too, so that it
//     resolves to the same gateway as before (a cluster upgraded from direct names, or a stand-in
//     that took a name on its own before taking the intermediate);
//   - a name another cluster holds: this cluster's record of it is not the one served (ExternalDNS
//     leaves it alone), and it goes through the intermediate once that exists.
//
// Intermediate is true only while the zone shows the intermediate owned by an ExternalDNS (an
// earlier version's): the route keeps publishing it until the operators take it over
// (IntermediateOwner), so that its ExternalDNS never deletes it meanwhile.
//
// The caller keeps a Through form once taken (the DNSEndpoint's records say it), so that a
// failover that moved the intermediate away from this cluster never makes its names point past it.
func FormIn(z ZoneReading, own, hostname, intermediate string) (f Form, known bool) {
	if !z.Read || z.Owner == "" {
		return Form{}, false
	}
	nameOwner := z.ownerOf(hostname)
	held, exists := z.holding(intermediate)
	f.Intermediate = exists && !held.written()
	switch {
	case nameOwner == "":
		f.Through = z.Region == own || held.Owner != ""
		f.Unheld = f.Through && held.Owner == ""
	case nameOwner == z.Owner:
		f.Through = held.Owner == z.Owner
	default:
		f.Through = held.Owner != ""
	}
	return f, true
}

// intermediateLabel is naming.IntermediateLabel (this package imports no other of ours).
const intermediateLabel = "_router-failover"

func isIntermediate(name string) bool {
	return name != "" && strings.Contains("."+Canonical(name)+".", "."+intermediateLabel+".")
}

// ThroughIntermediate is a zone's answer to a name ("CNAME <target> …", as verification words it)
// with an intermediate target replaced by the name it points at (intermediates: a zone's
// intermediate names and their targets, Canonical), so that Attribute can say who serves it.
func ThroughIntermediate(answer string, intermediates map[string]string) string {
	rest, ok := strings.CutPrefix(answer, "CNAME ")
	if !ok {
		return answer
	}
	target, more, _ := strings.Cut(rest, " ")
	if next, found := intermediates[Canonical(target)]; found && isIntermediate(target) {
		return strings.TrimSpace("CNAME " + next + ". " + more)
	}
	return answer
}

// WithNamesThrough is taken with, for each pass of an intermediate name, every name of names the
// zone answers through it (Pass.Through): they moved with it, and count as taken at once rather
// than once the intermediate's mark is read back (Standing).
func WithNamesThrough(taken []Pass, names []Name, zones []ZoneReading) []Pass {
	byController := zonesByController(zones)
	out := slices.Clone(taken)
	for _, p := range taken {
		z := byController[p.Controller]
		if z == nil || !isIntermediate(p.Hostname) {
			continue
		}
		for _, n := range names {
			if n.Controller == p.Controller && z.CNAMEs[Canonical(n.Hostname)] == Canonical(p.Hostname) {
				q := p
				q.Hostname, q.Namespace, q.Endpoint, q.Through = Canonical(n.Hostname), n.Namespace, n.Endpoint, Canonical(p.Hostname)
				out = append(out, q)
			}
		}
	}
	return Union(out)
}
