package prober

import (
	"context"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/verify"
)

// DefaultListInterval is the shortest time between two listings of a zone read through an API
// when its settings give none.
const DefaultListInterval = 30 * time.Second

// MaxListBackoff bounds the wait after failed listings (a longer Retry-After is still honoured).
const MaxListBackoff = 5 * time.Minute

// listed is a zone loop for a zone read whole (a zone transfer, or Azure Private DNS through
// Resource Manager): it
// waits until a record is due, lists the zone — at most once per interval, later after failures
// and never before a Retry-After — and answers from that one listing every record due by the
// time it started, plus the settled records due within the next fifth of the settled interval
// (the jitter's width), so that a zone whose records are all settled is listed about once per
// settled interval, not once per record. A failed listing is a failed check of every record that
// was due: Unreachable, with the reason, after Settings.FailuresBeforeUnreachable in a row.
func (p *Prober) listed(ctx context.Context, l *loop) {
	log := ctrl.Log.WithName("verification").WithValues("zone", l.zone.Controller)
	controller := l.zone.Controller
	pacing := verify.ListingPacing{Interval: p.listInterval(l.zone), MaxBackoff: MaxListBackoff}
	horizon := p.tracker.Settings().SettledInterval / 5
	var (
		reader     lister
		last       time.Time
		failures   int
		retryAfter time.Duration
	)
	timer := time.NewTimer(0)
	defer timer.Stop()
	sleep := func(d time.Duration, wake bool) bool {
		timer.Reset(max(d, 0))
		var wakeCh chan struct{}
		if wake {
			wakeCh = l.wake
		}
		select {
		case <-ctx.Done():
			return false
		case <-wakeCh:
		case <-timer.C:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		return true
	}
	for {
		first, ok, next := p.tracker.Next(controller, time.Now())
		if !ok {
			wait := idleWait
			if !next.IsZero() {
				wait = min(time.Until(next), idleWait)
			}
			if !sleep(wait, true) {
				return
			}
			continue
		}
		if !last.IsZero() {
			if !sleep(time.Until(pacing.NextListing(last, failures, retryAfter)), false) {
				p.tracker.Return([]verify.Check{first}, time.Now())
				return
			}
		}
		start := time.Now()
		batch := []verify.Check{first}
		for {
			c, ok, _ := p.tracker.Next(controller, start)
			if !ok {
				break
			}
			batch = append(batch, c)
		}
		if reader == nil {
			r, err := p.newLister(l.zone)
			if err != nil {
				failures, retryAfter, last = failures+1, 0, start
				p.counted(controller, "error")
				log.Error(err, "reading the zone's Azure configuration")
				p.reportAll(batch, verify.ListingFailed(azureprivatedns.Source, "configuration: "+err.Error()))
				continue
			}
			reader = r
		}
		listing, requests, err := reader.List(ctx)
		if ctx.Err() != nil {
			// Stopping: a loop with new settings (same tracker) checks them again.
			p.tracker.Return(batch, time.Now())
			return
		}
		last = start
		if err != nil {
			source, reason, wait := reader.Failure(err)
			failures, retryAfter = failures+1, wait
			if azureprivatedns.CredentialsRejected(err) {
				reader = nil // read the azure.json again: its Secret may have been rotated
			}
			p.countPages(controller, requests-1, reason, wait > 0)
			log.V(1).Info("listing the zone failed", "source", source, "reason", reason, "failures", failures, "records", len(batch))
			p.reportAll(batch, verify.ListingFailed(source, reason))
			continue
		}
		failures, retryAfter = 0, 0
		p.countPages(controller, requests, "", false)
		if p.Listed != nil && l.zone.Azure != nil {
			p.Listed(controller, listing, start)
		}
		for {
			c, ok := p.tracker.NextSettled(controller, start.Add(horizon))
			if !ok {
				break
			}
			batch = append(batch, c)
		}
		var changes []verify.Change
		for _, c := range batch {
			changes = append(changes, p.tracker.Report(c, verify.JudgeListing(c.Expected, listing), time.Now())...)
		}
		log.V(2).Info("listed", "requests", requests, "names", len(listing.Records), "checked", len(batch), "changes", len(changes))
		if len(changes) > 0 {
			p.notify(changes)
		}
	}
}

// reportAll reports one finding for every check of a batch.
func (p *Prober) reportAll(batch []verify.Check, f verify.Finding) {
	var changes []verify.Change
	for _, c := range batch {
		changes = append(changes, p.tracker.Report(c, f, time.Now())...)
	}
	if len(changes) > 0 {
		p.notify(changes)
	}
}

// countPages counts a listing's requests for the metrics: answered ones, and the one that failed
// (throttled, timeout or error) when failure is set.
func (p *Prober) countPages(controller string, answered int, failure string, throttled bool) {
	for range answered {
		p.counted(controller, "answered")
	}
	switch {
	case failure == "":
	case throttled || failure == verify.ThrottledReason(0):
		p.counted(controller, "throttled")
	case failure == "timeout":
		p.counted(controller, "timeout")
	default:
		p.counted(controller, "error")
	}
}

// azureTransport is the HTTP client of the Azure readers; nil: the SDK's.
type azureTransport = policy.Transporter
