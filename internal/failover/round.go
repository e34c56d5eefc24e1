package failover

import "time"

// RoundInput is what one failover round knows once it has read the zones and probed the regions:
// the operator's loop (internal/failoverloop/loop.go) gathers it, Round decides, and the loop carries
// out the decision (the writes into the zones, the DNSEndpoints' marks, the Events, the status).
type RoundInput struct {
	Now time.Time
	// Own is this cluster's region; Draining says it asks for a drain (spec.failover.drain).
	Own      string
	Draining bool
	Settings Settings
	// Readings are the zones as the round read them, heartbeats stamped (Observations.Observe);
	// Ownership the same as the passes take them (Ownership: Read only when read whole now).
	Readings, Ownership []ZoneReading
	// Probes are this cluster's runs of probes of each other region's gateway.
	Probes map[string]Probes
	// Names are the names this cluster publishes under policies with stand-ins.
	Names []Name
	// MayReclaim says this cluster may take its own region's names back (failback, or the end of
	// a drain: the loop's Interests).
	MayReclaim bool
	// Views are this leader's views of the other regions as the last round left them (their
	// Probes this round's), Earlier what the DNSConfiguration's status says (Advance).
	Views, Earlier map[string]RegionView
	// Held are the takeovers this leader recorded so far; Unanswered the passes whose writes got
	// no definite answer.
	Held, Unanswered []Pass
}

// RoundOutput is what Round decided.
type RoundOutput struct {
	// Judged is every region's judgement; Views the views to keep, Changes the judgements that
	// changed (an Event each), ViewsChanged whether the status's regions change.
	Judged       map[string]Judgement
	Views        map[string]RegionView
	Changes      []Change
	ViewsChanged bool
	// Takeovers and Reclaims are the ownership writes to make.
	Takeovers, Reclaims []Pass
	// Landed are unanswered passes the zones show took effect (to announce, mark and count);
	// Waiting those whose zones were not read whole.
	Landed, Waiting []Pass
	// Standing are the takeovers the marks and the zones say still stand; Returned the marked
	// names that went back (their marks to clear).
	Standing []Pass
	Returned []Name
	// Held are the takeovers that stand before this round's writes: this leader's that the zones
	// still say are this cluster's, and those the marks say stand. The loop adds the takeovers it
	// makes and those of Landed (it knows which of its passes took a lost region's name).
	Held []Pass
}

// Round is one round's decisions: the regions judged (JudgeRegions) and their views advanced
// (Advance), the writes (Takeovers, Reclaims), the unanswered writes sorted (Unanswered), the
// takeovers that stand (Standing, Held). Nothing here reads or writes anything.
func Round(in RoundInput) RoundOutput {
	out := RoundOutput{Judged: JudgeRegions(in.Now, in.Own, in.Draining, in.Readings, in.Probes, in.Settings)}
	out.Views, out.Changes, out.ViewsChanged = Advance(in.Now, in.Own, in.Views, out.Judged, in.Earlier, in.Settings.FailureThreshold)
	out.Landed, out.Waiting = Unanswered(in.Unanswered, in.Ownership)
	out.Standing, out.Returned = Standing(in.Names, in.Ownership)
	out.Takeovers = Takeovers(in.Own, out.Judged, in.Ownership, in.Names)
	out.Reclaims = Reclaims(in.Own, in.MayReclaim, in.Ownership, in.Names)
	out.Held = Union(Held(in.Held, in.Ownership), out.Standing)
	return out
}

// Marks are the DNSEndpoints' taken-from marks a round writes once its passes are made (taken:
// the takeovers that succeeded now, whose marks the pass itself wrote): set, the held takeovers
// whose DNSEndpoint lacks its mark (an earlier leader's, or a mark lost), but a name that moved
// with its intermediate (the intermediate's mark says it); clear, the returned names whose mark
// is out of date.
func Marks(held []Pass, names []Name, returned []Name, taken []Pass) (set []Pass, clear []Name) {
	passedNow := func(namespace, endpoint string) bool {
		for _, p := range taken {
			if p.Namespace == namespace && p.Endpoint == endpoint {
				return true
			}
		}
		return false
	}
	for _, p := range held {
		if p.Through != "" || passedNow(p.Namespace, p.Endpoint) {
			continue
		}
		for _, n := range names {
			if n.Namespace == p.Namespace && n.Endpoint == p.Endpoint && n.TakenFrom != p.Region {
				set = append(set, p)
				break
			}
		}
	}
	for _, n := range returned {
		if !passedNow(n.Namespace, n.Endpoint) {
			clear = append(clear, n)
		}
	}
	return set, clear
}
