package failover

import "slices"

// IntermediateOwner is the owner ID an intermediate name's ExternalDNS ownership record is passed
// to when the operators take the intermediate over from ExternalDNS (one an earlier version
// published through the routes' DNSEndpoints): no ExternalDNS instance uses it, so every instance
// leaves the intermediate alone from then on, and the operators write its CNAME themselves
// (docs/ARCHITECTURE.md#one-record-moves-a-policy).
const IntermediateOwner = "service-router-intermediate"

// holding is who holds a name in a zone, and through which record: an ExternalDNS ownership
// record (TXTName, Set) naming Owner; or, for an intermediate name the operators write, its CNAME
// (Target), held by the cluster whose heartbeat in the zone names Target among its gateway target
// hostnames (Owner is that cluster's owner ID there, "" when no heartbeat names Target).
type holding struct {
	Owner   string
	TXTName string
	Set     TXTSet
	Target  string
}

// written says the name is an intermediate the operators write, held by its CNAME's target.
func (h holding) written() bool { return h.TXTName == "" }

// holding is who holds name in the zone; found is false when nobody does: no ownership record
// names an owner, and it is no intermediate with a CNAME. An intermediate whose ownership record
// names IntermediateOwner is the operators' (its ExternalDNS era is over).
func (z *ZoneReading) holding(name string) (h holding, found bool) {
	if txtName, set, ok := z.ownership(name); ok && OwnerOf(set.Values[0]) != IntermediateOwner {
		return holding{Owner: OwnerOf(set.Values[0]), TXTName: txtName, Set: set}, true
	}
	if !isIntermediate(name) {
		return holding{}, false
	}
	target, ok := z.CNAMEs[Canonical(name)]
	if !ok {
		return holding{}, false
	}
	return holding{Owner: z.ownerOfTarget(target), Target: target}, true
}

// servingHolding is the holding of whatever decides who serves name: its intermediate's when
// the zone answers name through one, its own otherwise.
func (z *ZoneReading) servingHolding(name string) (holding, bool) {
	if target := z.CNAMEs[Canonical(name)]; isIntermediate(target) {
		return z.holding(target)
	}
	return z.holding(name)
}

// ownerOf is the owner ID holding name in the zone, or "" when none does.
func (z *ZoneReading) ownerOf(name string) string {
	h, _ := z.holding(name)
	return h.Owner
}

// ownerOfTarget is the owner ID of the cluster whose heartbeat in the zone names target among its
// gateway target hostnames, or "".
func (z *ZoneReading) ownerOfTarget(target string) string {
	for _, beats := range z.Beats {
		for _, b := range beats {
			if b.Owner != "" && slices.ContainsFunc(b.Targets, func(t string) bool { return Canonical(t) == Canonical(target) }) {
				return b.Owner
			}
		}
	}
	return ""
}

// pointedAt says whether any CNAME of the zone points at name.
func (z *ZoneReading) pointedAt(name string) bool {
	name = Canonical(name)
	for _, target := range z.CNAMEs {
		if target == name {
			return true
		}
	}
	return false
}
