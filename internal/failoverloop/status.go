package failoverloop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/decide"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/naming"
	"github.com/service-router/service-router-operator/internal/verify"
	"github.com/service-router/service-router-operator/internal/zonewriter"
)

// Regions is this cluster's view of the other regions, for the DNSConfiguration's status; known is
// false until this leader's first round has judged them (the status then keeps what it says).
func (f *Loop) Regions() (regions []clusterv1alpha1.RegionFailoverStatus, known bool) {
	f.mu.Lock()
	v := f.view
	f.mu.Unlock()
	if !v.Judged {
		return nil, false
	}
	var out []clusterv1alpha1.RegionFailoverStatus
	for region, r := range v.Regions {
		// Refusals and unreadable zones first: the judgement's message is long, and the status
		// keeps 1,024 bytes. A zone that could not be read matters to a region only while the
		// probes fail (its witness decides).
		message := r.Judgement.Message
		if r.Judgement.State != failover.Serving {
			for _, controller := range slices.Sorted(maps.Keys(v.Unreadable)) {
				message = fmt.Sprintf("zone %s did not answer this cluster: %s; %s", controller, v.Unreadable[controller], message)
			}
		}
		for _, refused := range v.Refused {
			if refused.Region == region {
				message = fmt.Sprintf("zone %s refused %d ownership write(s) in the last round, retried every round: %s; %s", refused.Controller, refused.Names, refused.Err, message)
			}
		}
		st := clusterv1alpha1.RegionFailoverStatus{Region: region, State: string(r.Judgement.State), Reason: r.Judgement.Reason,
			Message: decide.Truncate(message, 1024), Since: &metav1.Time{Time: r.Since.Truncate(time.Second)}}
		taken := map[string]int32{}
		for _, p := range v.Held {
			// The names a user publishes, not the intermediates they moved with.
			if p.Region == region && !naming.IsIntermediate(p.Hostname) {
				taken[p.Controller]++
			}
		}
		for controller, n := range taken {
			st.Taken = append(st.Taken, clusterv1alpha1.ZoneTakeover{Controller: controller, Names: n})
		}
		slices.SortFunc(st.Taken, func(a, b clusterv1alpha1.ZoneTakeover) int { return strings.Compare(a.Controller, b.Controller) })
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b clusterv1alpha1.RegionFailoverStatus) int { return strings.Compare(a.Region, b.Region) })
	return out, true
}

// Drain is where a drain of this cluster's region stands, for the DNSConfiguration's Drained
// condition; known is false until this leader's first round (the status then keeps what it says).
func (f *Loop) Drain() (d decide.Drain, known bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.view.Drain
	return decide.Drain{Draining: s.Draining, Returning: s.Returning, Here: s.Here, Away: s.Away, Known: s.Known}, f.view.Judged
}

// Forms is how the ServiceRoute reconciler publishes a failover policy's names (decide.Forms):
// from the zones as this leader last read them whole; nil before its first round.
func (f *Loop) Forms() decide.Forms {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.view.Forms.Zones == nil {
		return nil
	}
	return f.view.Forms.Form
}

// Attribute says who serves a failover zone's answer when it is not the zone's own region
// (failover.Attribute), "" otherwise or for other zones.
func (f *Loop) Attribute(controller, answer string) string {
	return f.attributionNow().Of(controller, answer)
}

func (f *Loop) attributionNow() failover.Attribution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.view.Attribution
}

// reattribute sends to be reconciled again every route whose answer in a zone the attribution
// now reports otherwise than before. A route's status says who serves its answer as its last
// reconcile saw it, and nothing else wakes it when only that changes: a new leader's routes are
// reconciled before its first round has read the heartbeats (they would say Drifted without
// naming who serves the name until the zone's answer next changed), and a cluster joining or
// leaving the zones changes who the answers name.
func (f *Loop) reattribute(ctx context.Context, before failover.Attribution) {
	after := f.attributionNow()
	if f.observed == nil || f.routeChanges == nil || before.Equal(after) {
		return
	}
	// Every zone either attribution knows, each once.
	controllers := map[string]bool{}
	for c := range before.ZoneRegions {
		controllers[c] = true
	}
	for c := range after.ZoneRegions {
		controllers[c] = true
	}
	for controller := range controllers {
		for k, o := range f.observed.Routes(controller) {
			if before.Of(controller, o.Answer) == after.Of(controller, o.Answer) {
				continue
			}
			select {
			case f.routeChanges <- event.GenericEvent{Object: &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// verifiedListing is a listing verification made of a zone, and when it started.
type verifiedListing struct {
	listing verify.Listing
	started time.Time
}

// Listed takes a listing publication verification made of a zone read through Resource Manager
// (prober.Prober.Listed): the next round uses it as its whole reading of the zone when it is newer
// than its own, so that a zone both verify is listed once, not twice.
func (f *Loop) Listed(controller string, l verify.Listing, started time.Time) {
	f.listedMu.Lock()
	defer f.listedMu.Unlock()
	if f.listed == nil {
		f.listed = map[string]verifiedListing{}
	}
	f.listed[controller] = verifiedListing{l, started}
}

// takeListed are the listings verification made since the last round, as readings of the zones.
func (f *Loop) takeListed(zones []failoverZone) map[string]failover.Listing {
	f.listedMu.Lock()
	listed := f.listed
	f.listed = nil
	f.listedMu.Unlock()
	out := map[string]failover.Listing{}
	for _, z := range zones {
		if l, ok := listed[z.Controller]; ok && !z.Transferred {
			out[z.Controller] = failover.Listing{Reading: zonewriter.ReadingOf(z.Zone, l.listing), Started: l.started}
		}
	}
	return out
}
