package metrics

// failoverStates are the values of the state label of service_router_failover_region_state.
var failoverStates = []string{"Serving", "Unreachable", "Lost", "Drained"}

// failover reads regional failover from the DNSConfiguration's status: each other region's state
// (1 for the current one, 0 for the others) and the names taken from it in each zone with failover
// settings (0 included, so that alerts and dashboards see 0 rather than no data).
func (s State) failover() (regions, active map[string]float64) {
	regions, active = map[string]float64{}, map[string]float64{}
	own := ""
	for _, ci := range s.Identities {
		own = ci.Spec.Region
	}
	for _, cfg := range s.Configurations {
		for _, r := range cfg.Status.Failover {
			for _, state := range failoverStates {
				v := 0.0
				if state == r.State {
					v = 1
				}
				regions[key(r.Region, state)] = v
			}
			for _, c := range cfg.Spec.ExternalDNSControllers {
				if c.Failover != nil {
					active[key(c.Name, r.Region, own)] = 0
				}
			}
			for _, z := range r.Taken {
				active[key(z.Controller, r.Region, own)] = float64(z.Names)
			}
		}
	}
	return regions, active
}
