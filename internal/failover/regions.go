package failover

import (
	"cmp"
	"time"
)

// RegionView is what this cluster concludes of another region, kept from round to round.
type RegionView struct {
	Judgement Judgement
	// Since is when Judgement's state and reason began, as this leader (or, Inherited, an
	// earlier one) saw them.
	Since time.Time
	// Probes is the run of this leader's probes of the region's gateway.
	Probes Probes
	// Inherited says Judgement and Since are an earlier leader's (the DNSConfiguration's status),
	// kept until this leader's own probes decide.
	Inherited bool
}

// decided says this leader's own probes of a region reach a judgement: one answered, or threshold
// failed in a row.
func (v RegionView) decided(threshold int) bool {
	return v.Probes.Successes > 0 || v.Probes.Failures >= threshold
}

// Change is a region whose state or reason a round changed: an Event to announce it.
type Change struct {
	Region    string
	Judgement Judgement
}

// Advance is one round of this cluster's views of the other regions: views as the last round left
// them (their Probes this round's), judged this round's judgements (JudgeRegions; own, this
// cluster's region, is left out), earlier what the DNSConfiguration's status says (an earlier leader's, or this one's own),
// threshold the probes' failure threshold. It returns the views to keep, the changes to announce
// (not a region's first judgement) and whether anything the status shows changed.
//
// Three rules keep a leader change from being a change of mind:
//   - A new leader starts from the earlier leader's judgement: the same again keeps its since, and
//     another is a change (an Event).
//   - A new leader's probes start with none: until they decide (an answer, or threshold failures
//     in a row), a region stays as the earlier leader judged it, with its since, rather than
//     Serving for want of failures (the status, Events and metrics would flap).
//   - Heartbeats this leader has not followed long enough to tell (WitnessPending) keep a region
//     as the earlier leader judged it too, and keep a region found Lost, by either, Lost: not
//     knowing is no sign of life.
//   - A region no heartbeat names any more is forgotten.
func Advance(now time.Time, own string, views map[string]RegionView, judged map[string]Judgement, earlier map[string]RegionView, threshold int) (next map[string]RegionView, changes []Change, changed bool) {
	next = make(map[string]RegionView, len(judged))
	for region, j := range judged {
		if region == own {
			continue
		}
		v := views[region]
		if e, found := earlier[region]; found && e.Judgement.State != "" && v.Judgement.State == "" {
			v.Judgement, v.Since = e.Judgement, cmp.Or(e.Since, now)
			v.Inherited = !v.decided(threshold) || j.Reason == ReasonWitnessPending
		}
		switch {
		case v.Inherited && !v.decided(threshold):
		case v.Judgement.State == Lost && j.Reason == ReasonWitnessPending:
		default:
			v.Inherited = false
			if v.Judgement.State != j.State || v.Judgement.Reason != j.Reason {
				changed = true
				if v.Judgement.State != "" {
					changes = append(changes, Change{region, j})
				}
				v.Since = now
			}
			v.Judgement = j
		}
		next[region] = v
	}
	for region := range views {
		if _, ok := judged[region]; !ok {
			changed = true
		}
	}
	return next, changes, changed
}

// OwnGateway is this cluster's run of probes of its own gateway, and since when it has answered
// without a break (zero when the last probe failed or none was made): MayFailBack's inputs.
type OwnGateway struct {
	Probes       Probes
	HealthySince time.Time
}

// After is the run after one more probe at now.
func (g OwnGateway) After(answered bool, now time.Time) OwnGateway {
	g.Probes = g.Probes.After(answered)
	switch {
	case !answered:
		g.HealthySince = time.Time{}
	case g.HealthySince.IsZero():
		g.HealthySince = now
	}
	return g
}
