package azureprivatedns

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// ThrottledError is a request refused without being sent: its principal is in the backoff a 429
// asked for. Classify reports it as a 429 (its reason names the 429's Retry-After, its wait what
// is left), so that a caller waits it out as it waits out a 429 it got itself.
type ThrottledError struct {
	// Zone is the zone of the refused request, Operation its type.
	Zone      string
	Operation Operation
	// RetryAfter is what is left of the backoff: how long to wait before the next request.
	RetryAfter time.Duration
	// Asked is the Retry-After of the 429 that began the backoff (DefaultRetryAfter when it named
	// none).
	Asked time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("%s of zone %s not sent: Resource Manager throttled the principal's %ss (Retry-After %s), %s left",
		e.Operation, e.Zone, e.Operation, e.Asked.Round(time.Second), e.RetryAfter.Round(time.Millisecond))
}

// NonRetriable tells the SDK's retry policy not to retry the request.
func (*ThrottledError) NonRetriable() {}

// clock is the time of a budget policy: the real one but in tests.
type clock struct {
	now func() time.Time
	// sleep waits d or until ctx is done (its error then).
	sleep func(ctx context.Context, d time.Duration) error
}

var realClock = clock{now: time.Now, sleep: func(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}}

// budgetPolicy puts every request of a client through its principal's budget and counts it per
// zone. It is a per-retry policy: it sees every attempt the SDK's retry policy makes, after the
// bearer token policy, right before the attempt goes to the network.
type budgetPolicy struct {
	budget *principalBudget
	clock  clock
}

func (p *budgetPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	op, zone := OperationOf(raw.Method), zoneOfPath(raw.URL.Path)
	a, asked := p.budget.admit(op, p.clock.now())
	if a.held > 0 {
		count(zone, op, outcomeHeld, false)
		return nil, &ThrottledError{Zone: zone.zone, Operation: op, RetryAfter: a.held, Asked: asked}
	}
	if a.wait > 0 {
		if err := p.clock.sleep(raw.Context(), a.wait); err != nil {
			return nil, err
		}
		// A 429 may have come meanwhile, for another zone of the principal.
		if left, asked := p.budget.heldAfterWait(op, p.clock.now()); left > 0 {
			count(zone, op, outcomeHeld, a.paced)
			return nil, &ThrottledError{Zone: zone.zone, Operation: op, RetryAfter: left, Asked: asked}
		}
	}
	resp, err := req.Next()
	if err != nil {
		count(zone, op, outcomeFailed, a.paced)
		return resp, err
	}
	p.budget.observe(op, resp, p.clock.now())
	o := outcomeAnswered
	if resp.StatusCode == http.StatusTooManyRequests {
		o = outcomeThrottled
	}
	count(zone, op, o, a.paced)
	return resp, nil
}
