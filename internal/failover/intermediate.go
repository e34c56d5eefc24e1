package failover

import (
	"slices"
	"strings"
)

// Form is how a cluster publishes one name of a failover policy into one zone
// (docs/ARCHITECTURE.md#one-record-moves-a-policy): Intermediate, the policy's intermediate name
// there (naming.IntermediateName) as a CNAME to this cluster's gateway target hostname; Through,
// the name as a CNAME to that intermediate name instead of to the target hostname directly. A
// move then rewrites the intermediate's ownership, one record for all the policy's names.
type Form struct {
	Intermediate, Through bool
}

// FormIn is the form a name should take in a zone as the zone's last whole reading shows it;
// known is false when the zone was not read whole (the caller then keeps the form it has). own is
// this cluster's region, hostname the name, intermediate its intermediate name there.
//
// Only a cluster of the zone's own region creates an intermediate name: another region's
// cluster (a stand-in) publishes it only once it exists, so that no stand-in, however early its
// ExternalDNS synchronises, becomes the first owner of a region's intermediate name and draws its
// traffic. A name goes through the intermediate only when that changes nobody's answer:
//   - a name nobody holds yet: it did not resolve before (the intermediate is created in the same
//     synchronisation by the zone's own region, or exists already);
//   - a name this cluster holds: once the intermediate is held by this cluster too, so that it
//     resolves to the same gateway as before (a cluster upgraded from direct names, or a stand-in
//     that took a name on its own before taking the intermediate);
//   - a name another cluster holds: this cluster's record of it is not the one served (ExternalDNS
//     leaves it alone), and it goes through the intermediate once that exists.
//
// The caller keeps a form once taken (the DNSEndpoint's records say it), so that a failover that
// moved the intermediate away from this cluster never makes its names point past it.
func FormIn(z ZoneReading, own, hostname, intermediate string) (f Form, known bool) {
	if !z.Read || z.Owner == "" {
		return Form{Intermediate: z.Region == own}, false
	}
	nameOwner, intOwner := z.ownerOf(hostname), z.ownerOf(intermediate)
	f.Intermediate = z.Region == own || intOwner != ""
	switch {
	case !f.Intermediate:
	case nameOwner == "":
		f.Through = true
	case nameOwner == z.Owner:
		f.Through = intOwner == z.Owner
	default:
		f.Through = intOwner != ""
	}
	return f, true
}

// ownerOf is the owner ID the ownership record of name in the zone names, or "" when none does.
func (z *ZoneReading) ownerOf(name string) string {
	if _, set, found := z.ownership(name); found {
		return OwnerOf(set.Values[0])
	}
	return ""
}

// servingOwnership is the ownership record of whatever decides who serves name: its
// intermediate's when the zone answers name through one, its own otherwise.
func (z *ZoneReading) servingOwnership(name string) (txtName string, set TXTSet, found bool) {
	if target := z.CNAMEs[Canonical(name)]; isIntermediate(target) {
		return z.ownership(target)
	}
	return z.ownership(name)
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
