package failover

// HeldBy is zone as it would read if region held every one of names published in it, from the
// same namespace: read whole, with a heartbeat of region naming an owner of its own, and that
// owner in each name's ownership record (ExternalDNS's TXT registry, current form, under the zone's
// TXTPrefix). zone gives the zone's Controller and Region and this cluster's Owner and TXTPrefix
// there. It is what `kubectl router plan --region-lost` supposes of the lost region, so that
// Takeovers decides the preview as it decides in the operator.
//
// The owner is "region <region>": no ExternalDNS owner ID holds a space, so it is never this
// cluster's. A hostname published from two namespaces is held for the first.
func HeldBy(zone ZoneReading, region string, names []Name) ZoneReading {
	owner := "region " + region
	zone.Read = true
	zone.Beats = map[string][]Heartbeat{region: {{Zone: zone.Controller, Read: true, Found: true, Owner: owner}}}
	zone.TXT = map[string]TXTSet{}
	for _, n := range names {
		txtName := ownershipNames(zone.TXTPrefix, n.Hostname)[0]
		if _, held := zone.TXT[txtName]; n.Controller != zone.Controller || held {
			continue
		}
		value := heritage + "," + ownerKey + owner + "," + resourceKey + "crd/" + n.Namespace + "/" + n.Endpoint
		zone.TXT[txtName] = TXTSet{Values: []string{value}}
	}
	return zone
}
