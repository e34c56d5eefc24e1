package failover

// Unanswered sorts the passes whose writes got no definite answer (a timeout, a connection cut:
// the zone may have applied the write after the client gave up, as a zone whose server was
// stopped does when it resumes) by what the zones, read whole since (Read), now say: landed are
// those whose ownership record holds the value the pass wrote (its To owner: the write took
// effect, and this cluster's bookkeeping of it — the DNSEndpoint's mark, the Event, the count — is
// still to do), waiting those whose zone was not read, and the rest are dropped (the zone shows
// another owner: the write did not land, or was overtaken; Takeovers and Reclaims decide afresh).
func Unanswered(passes []Pass, zones []ZoneReading) (landed, waiting []Pass) {
	byController := zonesByController(zones)
	for _, p := range passes {
		z := byController[p.Controller]
		if z == nil || !z.Read {
			waiting = append(waiting, p)
			continue
		}
		if h, found := z.holding(p.Hostname); found && h.Owner == p.To {
			landed = append(landed, p)
		}
	}
	return landed, waiting
}
