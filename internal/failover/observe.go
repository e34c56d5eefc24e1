package failover

import "time"

// Freshness on this cluster's clock. A heartbeat's At is the writer's clock: compared with the
// reader's, two clusters whose clocks differ by more than heartbeatStaleAfter would judge each
// other's heartbeats stale (the one ahead) or never stale (the one behind), so that a partition
// which fails the probes would become the takeover of a healthy region — the very thing the
// witness exists to prevent. So, as client-go's leader election does with a lease's observed
// time, a reader judges a heartbeat by when it saw its value change, on its own clock: a writer
// that writes is fresh whatever its clock says; one that stopped is stale heartbeatStaleAfter (or
// three of its intervals) after this cluster first saw its last value. The cost is at most one
// reading interval of detection (the last value may be seen only at the next reading); a reader
// that starts (a new leader) has seen no heartbeat change, and so judges no region lost on
// staleness until that time has passed: a value first seen that the writer's clock calls stale is
// pending (Heartbeat.freshnessAt), and keeps a region an earlier judgement found lost as it is.
//
// How long is "three of its intervals" is this cluster's to bound, not the writer's: a heartbeat
// that states a huge interval would otherwise keep a writer that stopped fresh for ever. Observe
// counts the fleet in the zones read (CountFleet) and stamps each heartbeat with the count
// (Heartbeat.Fleet), from which the judgements bound the interval believed (Settings.MaxInterval).

// ObservationKey is one heartbeat record as a reader follows it: a cluster's, of a region, in the
// zone of a controller.
type ObservationKey struct {
	Zone, Region, Cluster string
}

// observation is a heartbeat's last value seen and when it was first seen.
type observation struct {
	at             time.Time
	gatewayAnswers bool
	interval       time.Duration
	since          time.Time
	// changed says the value replaced one seen before.
	changed bool
}

// Observations are when this cluster first saw each heartbeat's current value, on its own clock.
type Observations map[ObservationKey]observation

// Observe records the heartbeats of the zones read now (Read) and returns the readings with each
// of their heartbeats stamped with when its value was first seen (Heartbeat.Observed) and the
// fleet counted in zones, every zone this cluster reads (Heartbeat.Fleet). A zone not read keeps
// what was observed of it; a heartbeat a zone read no longer holds is forgotten.
func (o Observations) Observe(now time.Time, zones []ZoneReading) []ZoneReading {
	fleet := CountFleet(zones)
	out := make([]ZoneReading, len(zones))
	for i, z := range zones {
		out[i] = z
		if !z.Read {
			continue
		}
		seen := map[ObservationKey]bool{}
		beats := make(map[string][]Heartbeat, len(z.Beats))
		for region, bs := range z.Beats {
			stamped := make([]Heartbeat, len(bs))
			for j, b := range bs {
				k := ObservationKey{z.Controller, region, b.Cluster}
				seen[k] = true
				if b.Malformed != "" {
					// It says nothing of when its writer wrote: what was seen before stays.
					stamped[j] = b
					continue
				}
				prev, known := o[k]
				if !known || !prev.at.Equal(b.At) || prev.gatewayAnswers != b.GatewayAnswers || prev.interval != b.Interval {
					prev = observation{at: b.At, gatewayAnswers: b.GatewayAnswers, interval: b.Interval, since: now, changed: known}
					o[k] = prev
				}
				b.Observed, b.SeenChanging, b.Fleet = prev.since, prev.changed, fleet
				stamped[j] = b
			}
			beats[region] = stamped
		}
		out[i].Beats = beats
		for k := range o {
			if k.Zone == z.Controller && !seen[k] {
				delete(o, k)
			}
		}
	}
	return out
}
