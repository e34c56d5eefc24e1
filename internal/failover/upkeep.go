package failover

import (
	"maps"
	"slices"
)

// UpkeepWrite is a write of an intermediate name the operators make outside a move (Upkeeps): its
// CNAME in the zone of Controller created (Old ""), deleted (New ""), or, for one ExternalDNS still
// owns, its ownership record released to IntermediateOwner (TXTName, Old and New its values).
type UpkeepWrite struct {
	Controller, Name string
	TXTName          string
	Old, New         string
	TTL              uint32
}

// Upkeeps are the writes that keep this cluster's intermediate names in the zones read whole
// (zones: Read only when read whole this round), each one conditional on what the reading showed:
//   - create: an intermediate of a name this cluster publishes into a zone of its own region
//     (own) that the zone does not hold, as a CNAME to this cluster's target, on the condition
//     that the name is still unused (RFC 2136's "name is not in use", Azure's If-None-Match);
//   - release: an intermediate whose ownership record names this cluster's ExternalDNS (an
//     earlier version's), to IntermediateOwner, so that no ExternalDNS deletes or rewrites it once
//     the routes stop publishing it;
//   - delete: an intermediate the operators write that points at one of this cluster's targets,
//     that no name of this cluster wants and no CNAME of the zone points at: its policy or its
//     routes are gone. Any other intermediate stays.
//
// names nil (they could not be listed) writes nothing.
func Upkeeps(own string, targets []string, zones []ZoneReading, names []Name) []UpkeepWrite {
	if names == nil {
		return nil
	}
	type key struct{ controller, name string }
	wanted := map[key]Name{}
	for _, n := range names {
		if n.Intermediate != "" {
			k := key{n.Controller, Canonical(n.Intermediate)}
			if _, seen := wanted[k]; !seen {
				wanted[k] = n
			}
		}
		if isIntermediate(n.Hostname) {
			wanted[key{n.Controller, Canonical(n.Hostname)}] = n
		}
	}
	mine := func(target string) bool {
		return slices.ContainsFunc(targets, func(t string) bool { return Canonical(t) == target })
	}
	var out []UpkeepWrite
	for _, z := range zones {
		if !z.Read || z.Owner == "" {
			continue
		}
		var here []string
		for k := range wanted {
			if k.controller == z.Controller {
				here = append(here, k.name)
			}
		}
		slices.Sort(here)
		for _, name := range here {
			n := wanted[key{z.Controller, name}]
			h, exists := z.holding(name)
			switch {
			case exists && !h.written() && h.Owner == z.Owner:
				if released, ok := PassOwnership(h.Set.Values[0], h.Owner, IntermediateOwner); ok {
					out = append(out, UpkeepWrite{Controller: z.Controller, Name: name, TXTName: h.TXTName, Old: h.Set.Values[0], New: released, TTL: h.Set.TTL})
				}
			case !exists && z.Region == own && n.Target != "" && z.CNAMEs[name] == "":
				out = append(out, UpkeepWrite{Controller: z.Controller, Name: name, New: Canonical(n.Target), TTL: n.TTL})
			}
		}
		for _, name := range slices.Sorted(maps.Keys(z.CNAMEs)) {
			target := z.CNAMEs[name]
			if !isIntermediate(name) || !mine(target) || z.pointedAt(name) {
				continue
			}
			if _, want := wanted[key{z.Controller, name}]; want {
				continue
			}
			if h, _ := z.holding(name); h.written() {
				out = append(out, UpkeepWrite{Controller: z.Controller, Name: name, Old: target})
			}
		}
	}
	return out
}
