package azureprivatedns

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
)

// Resource Manager throttles each subscription and principal (the client ID a request is
// authenticated as) with one token bucket per operation type (learn.microsoft.com, "Understand
// how Azure Resource Manager throttles requests", regional throttling since 2024): reads 250
// tokens refilled at 25 a second, writes and deletes 200 refilled at 10 a second. Every answer
// says how many tokens are left (x-ms-ratelimit-remaining-subscription-<type>); an empty bucket
// answers 429 with Retry-After. Verification's listings and failover's heartbeats and
// ownership writes of every zone that uses the same principal in the same subscription draw on
// the same buckets, in this process and in any other that uses the principal (ExternalDNS, a
// standby replica): one budget per principal, process-wide, shared by every client RecordSets
// builds, honours a 429 for all of them and slows them all down before the bucket is empty.

// Operation is the kind of a Resource Manager request, as Resource Manager counts it.
type Operation string

// The operation types: GET and HEAD read, PUT, PATCH and POST write, DELETE deletes.
const (
	OperationRead   Operation = "read"
	OperationWrite  Operation = "write"
	OperationDelete Operation = "delete"
)

// Operations are the operation types, in the order of the index of a budget's quotas.
var Operations = []Operation{OperationRead, OperationWrite, OperationDelete}

// OperationOf is the operation type of an HTTP method.
func OperationOf(method string) Operation {
	switch method {
	case http.MethodGet, http.MethodHead:
		return OperationRead
	case http.MethodDelete:
		return OperationDelete
	}
	return OperationWrite
}

func (o Operation) index() int {
	switch o {
	case OperationWrite:
		return 1
	case OperationDelete:
		return 2
	}
	return 0
}

// bucket is what Resource Manager documents of an operation type's token bucket.
type bucket struct {
	// header carries the tokens left after a request.
	header string
	// low is the number of tokens left below which requests are paced: a tenth of the bucket,
	// the headroom for the requests already on their way and for the principal's other users.
	low int
	// refill is the interval between two tokens: the pace of requests while the bucket is low,
	// which keeps it from emptying whatever else happens.
	refill time.Duration
}

var buckets = [...]bucket{
	{header: "x-ms-ratelimit-remaining-subscription-reads", low: 25, refill: time.Second / 25},
	{header: "x-ms-ratelimit-remaining-subscription-writes", low: 20, refill: time.Second / 10},
	{header: "x-ms-ratelimit-remaining-subscription-deletes", low: 20, refill: time.Second / 10},
}

// DefaultRetryAfter is the backoff after a 429 that names no wait.
const DefaultRetryAfter = 10 * time.Second

// tailWait is the end of a backoff that a request waits out instead of being refused: a caller
// that waits out Retry-After itself from the start of its request (the prober's listing loop)
// comes back a response's time before the backoff, counted from the response, ends; refusing it
// would count a failure for a few milliseconds. Without it, the prober's test of a 1 s
// Retry-After (TestListed_OneListingServesEveryRecordAndHonoursRetryAfter) counted 5 throttled
// listings of which Resource Manager saw 4.
const tailWait = time.Second

// Principal is the key of a budget: who Resource Manager counts a request against.
type Principal struct {
	// Endpoint is the Resource Manager endpoint (lower case, without a trailing slash).
	Endpoint string
	// SubscriptionID is the zone's subscription (lower case).
	SubscriptionID string
	// ClientID is the client ID the credential authenticates as (lower case): the azure.json's
	// aadClientId, for workload identity that or AZURE_CLIENT_ID, for a managed identity its
	// userAssignedIdentityID, or "managed-identity" for the system-assigned one.
	ClientID string
}

// SystemAssignedIdentity is the ClientID of a Principal that is the system-assigned managed
// identity (whose client ID the operator does not know).
const SystemAssignedIdentity = "managed-identity"

func (p Principal) String() string {
	return fmt.Sprintf("principal %s in subscription %s at %s", p.ClientID, p.SubscriptionID, p.Endpoint)
}

// PrincipalOf is the principal a zone's requests are counted against, from its configuration
// (its azure.json, or workload identity), without building a client.
func PrincipalOf(z Zone) (Principal, error) {
	file, err := readConfig(z)
	if err != nil {
		return Principal{}, err
	}
	cfg, err := ConfigOf(z, file)
	if err != nil {
		return Principal{}, err
	}
	c, err := CloudOf(cfg)
	if err != nil {
		return Principal{}, err
	}
	return principalOf(cfg, c)
}

// principalOf is the principal of a configuration in its cloud.
func principalOf(cfg Config, c cloud.Configuration) (Principal, error) {
	kind, err := CredentialKind(cfg)
	if err != nil {
		return Principal{}, err
	}
	id := cfg.ClientID
	switch kind {
	case "workloadIdentity":
		if id == "" {
			id = os.Getenv("AZURE_CLIENT_ID")
		}
		if id == "" {
			return Principal{}, errors.New("workload identity without a client ID (aadClientId in the azure.json, or AZURE_CLIENT_ID)")
		}
	case "managedIdentity":
		id = cmp.Or(cfg.UserAssignedIdentityID, SystemAssignedIdentity)
	}
	return Principal{
		Endpoint:       strings.TrimSuffix(strings.ToLower(c.Services[cloud.ResourceManager].Endpoint), "/"),
		SubscriptionID: strings.ToLower(cfg.SubscriptionID),
		ClientID:       strings.ToLower(id),
	}, nil
}

// quota is what a budget knows of one operation type's bucket.
type quota struct {
	// remaining is the tokens left at seen (zero seen: no answer yet).
	remaining int
	seen      time.Time
	// until is the end of the backoff after a 429, which asked for Retry-After asked.
	until time.Time
	asked time.Duration
	// next is the earliest time of the next paced request.
	next time.Time
}

// low reports whether requests are paced: the last answer left fewer tokens than b.low.
func (q *quota) low(b bucket) bool {
	return !q.seen.IsZero() && q.remaining < b.low
}

// admission is the decision on a request before it is sent.
type admission struct {
	// held is the wait left of a backoff: the request is refused, not sent.
	held time.Duration
	// wait is how long the request waits before it is sent (the tail of a backoff, pacing).
	wait time.Duration
	// paced says it was given a slot at the refill rate.
	paced bool
}

// admit decides on a request at now, taking a pacing slot when the bucket is low.
func (q *quota) admit(b bucket, now time.Time) admission {
	var a admission
	if left := q.until.Sub(now); left > tailWait {
		return admission{held: left}
	} else if left > 0 {
		a.wait = left
	}
	if q.low(b) {
		slot := now.Add(a.wait)
		if q.next.After(slot) {
			slot = q.next
		}
		q.next = slot.Add(b.refill)
		a.wait, a.paced = slot.Sub(now), true
	}
	return a
}

// observe records an answer: the tokens its header says are left and, for a 429, the backoff it
// asks for (the longer of two, should answers cross). A 429 without the header leaves no token.
func (q *quota) observe(b bucket, header http.Header, status int, retryAfter time.Duration, now time.Time) {
	if n, err := strconv.Atoi(header.Get(b.header)); err == nil {
		q.remaining, q.seen = n, now
	} else if status == http.StatusTooManyRequests {
		q.remaining, q.seen = 0, now
	}
	if status != http.StatusTooManyRequests {
		return
	}
	if retryAfter <= 0 {
		retryAfter = DefaultRetryAfter
	}
	if until := now.Add(retryAfter); until.After(q.until) {
		q.until, q.asked = until, retryAfter
	}
}

// principalBudget is the budget of one principal: a quota per operation type.
type principalBudget struct {
	key    Principal
	mu     sync.Mutex
	quotas [len(buckets)]quota
}

func (p *principalBudget) admit(op Operation, now time.Time) (admission, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := &p.quotas[op.index()]
	return q.admit(buckets[op.index()], now), q.asked
}

// heldAfterWait is the backoff left after a request waited, should a 429 have come meanwhile.
func (p *principalBudget) heldAfterWait(op Operation, now time.Time) (time.Duration, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := &p.quotas[op.index()]
	return max(q.until.Sub(now), 0), q.asked
}

// observe records an answer to a request of type op: the tokens left of every type it names, and
// a 429's backoff for op.
func (p *principalBudget) observe(op Operation, resp *http.Response, now time.Time) {
	retryAfter := time.Duration(0)
	if resp.StatusCode == http.StatusTooManyRequests {
		retryAfter = RetryAfter(resp)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range buckets {
		status := 0
		if i == op.index() {
			status = resp.StatusCode
		}
		p.quotas[i].observe(b, resp.Header, status, retryAfter, now)
	}
}

// budgets are the process's budgets, one per principal.
var budgets = struct {
	sync.Mutex
	m map[Principal]*principalBudget
}{m: map[Principal]*principalBudget{}}

// budgetOf is the principal's budget, made at its first use.
func budgetOf(p Principal) *principalBudget {
	budgets.Lock()
	defer budgets.Unlock()
	b, ok := budgets.m[p]
	if !ok {
		b = &principalBudget{key: p}
		budgets.m[p] = b
	}
	return b
}

// QuotaState is what the operator knows of one of a principal's token buckets.
type QuotaState struct {
	// Remaining is the tokens the last answer said were left (x-ms-ratelimit-remaining-
	// subscription-<type>; 0 after a 429 that did not say), at Seen; zero Seen: no answer yet.
	Remaining int
	Seen      time.Time
	// Paced says that requests of this type are sent no faster than the bucket refills, because
	// Remaining is low (below a tenth of the bucket), until an answer says it recovered.
	Paced bool
	// BackoffUntil is when the backoff after a 429 ends (requests until then are refused
	// without being sent), RetryAfter the wait that 429 asked for; zero before any 429.
	BackoffUntil time.Time
	RetryAfter   time.Duration
}

// PrincipalState is a principal's budget: one QuotaState per operation type.
type PrincipalState struct {
	Principal
	Reads, Writes, Deletes QuotaState
}

// Principals is the state of the budget of every principal this process has sent requests
// for, sorted by endpoint, subscription and client ID.
func Principals() []PrincipalState {
	budgets.Lock()
	all := make([]*principalBudget, 0, len(budgets.m))
	for _, b := range budgets.m {
		all = append(all, b)
	}
	budgets.Unlock()
	out := make([]PrincipalState, 0, len(all))
	for _, b := range all {
		out = append(out, b.stateOf())
	}
	slices.SortFunc(out, func(a, b PrincipalState) int {
		return cmp.Or(cmp.Compare(a.Endpoint, b.Endpoint), cmp.Compare(a.SubscriptionID, b.SubscriptionID), cmp.Compare(a.ClientID, b.ClientID))
	})
	return out
}

func (p *principalBudget) stateOf() PrincipalState {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := PrincipalState{Principal: p.key}
	for i, dst := range []*QuotaState{&s.Reads, &s.Writes, &s.Deletes} {
		q := &p.quotas[i]
		*dst = QuotaState{Remaining: q.remaining, Seen: q.seen, Paced: q.low(buckets[i]), BackoffUntil: q.until, RetryAfter: q.asked}
	}
	return s
}

// Quota is the state of the bucket of an operation type.
func (s PrincipalState) Quota(op Operation) QuotaState {
	switch op {
	case OperationWrite:
		return s.Writes
	case OperationDelete:
		return s.Deletes
	}
	return s.Reads
}
