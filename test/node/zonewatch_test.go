//go:build node

package node

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/service-router/service-router-operator/test/e2e/framework"
)

// zoneWatch watches a zone the way its users see it while something changes: a transfer of the
// whole zone every 200 ms (every record present at the start must stay), and a dig of each name
// every 50 ms (the answer must stay the one at the start: never NXDOMAIN, never without its CNAME
// or address). It keeps a timeline of every departure from the start and every return to it, and
// notes records rewritten in place (another TTL).
type zoneWatch struct {
	zone *framework.BindServer
	// records are the zone's records at the start, by recordKey; answers the names' answers.
	records map[string]framework.Record
	answers map[string]framework.Answer

	mu sync.Mutex
	// seen and failed count the successful observations and failed queries, by what was asked
	// ("transfer", or a name); departures the observations that differed from the start.
	seen, failed, departures map[string]int
	// longest is the longest time between two successful observations of the same thing.
	longest map[string]time.Duration
	// timeline has one line per change of what an observation saw (the start, a departure, the
	// return to the start); added the records that appeared in the zone meanwhile; ttls the
	// current TTL of each record of the start, and rewrites when a transfer first showed another.
	timeline []string
	added    map[string]bool
	ttls     map[string]int
	rewrites []string

	stop context.CancelFunc
	wg   sync.WaitGroup
}

// How often the zone is transferred and each name asked.
const (
	transferEvery = 200 * time.Millisecond
	digEvery      = 50 * time.Millisecond
	// watchBlindLimit is the longest the watch may go without a successful observation of
	// something: longer, and it proves too little. A record ExternalDNS deletes by mistake stays
	// away until its next synchronization (a minute by default, seconds with --events), far
	// longer; on the busy 2-core machine the longest measured was 1.6 s (a transfer).
	watchBlindLimit = 3 * time.Second
)

// recordKey identifies a record by what a resolver gets: its name, type and data (not its TTL).
func recordKey(r framework.Record) string {
	return strings.ToLower(r.Name) + " " + r.Type + " " + r.Data
}

// watchZone takes the zone's records and the names' answers as they are now (each name must
// resolve: NOERROR with records) and watches them until finish is called or the test ends.
func watchZone(ctx context.Context, t *testing.T, zone *framework.BindServer, names ...string) *zoneWatch {
	t.Helper()
	recs, err := zone.ZoneRecords(ctx)
	if err != nil {
		t.Fatalf("transferring zone %s: %v", zone.Zone, err)
	}
	zw := &zoneWatch{
		zone: zone, records: map[string]framework.Record{}, answers: map[string]framework.Answer{},
		seen: map[string]int{}, failed: map[string]int{}, departures: map[string]int{}, longest: map[string]time.Duration{},
		added: map[string]bool{}, ttls: map[string]int{},
	}
	for _, r := range recs {
		zw.records[recordKey(r)] = r
		zw.ttls[recordKey(r)] = r.TTL
	}
	for _, name := range names {
		ans, err := zone.Dig(ctx, name, "A")
		if err != nil || ans.Status != "NOERROR" || len(ans.Records) == 0 {
			t.Fatalf("watching zone %s: %s does not resolve at the start: %s %v", zone.Zone, name, ans, err)
		}
		zw.answers[name] = ans
	}
	watchCtx, stop := context.WithCancel(ctx)
	zw.stop = stop
	t.Cleanup(stop)
	zw.wg.Add(1 + len(names))
	go zw.loop(watchCtx, "transfer", transferEvery, zw.transfer)
	for _, name := range names {
		go zw.loop(watchCtx, name, digEvery, func(ctx context.Context) (string, error) { return zw.dig(ctx, name) })
	}
	keys := slices.Sorted(maps.Keys(zw.records))
	t.Logf("watching zone %s from now on: a transfer every %s (%d records must stay), and %s every %s",
		zone.Zone, transferEvery, len(keys), strings.Join(names, " and "), digEvery)
	return zw
}

// transfer returns the records of the start missing from the zone now ("" when none is).
func (zw *zoneWatch) transfer(ctx context.Context) (string, error) {
	recs, err := zw.zone.ZoneRecords(ctx)
	if err != nil {
		return "", err
	}
	now := map[string]bool{}
	zw.mu.Lock()
	for _, r := range recs {
		key := recordKey(r)
		now[key] = true
		if _, ok := zw.records[key]; !ok {
			zw.added[r.String()] = true
		} else if ttl := zw.ttls[key]; r.TTL != ttl {
			zw.rewrites = append(zw.rewrites, fmt.Sprintf("%s %s %s: TTL %d -> %d", time.Now().Format("15:04:05.000"), r.Name, r.Type, ttl, r.TTL))
			zw.ttls[key] = r.TTL
		}
	}
	zw.mu.Unlock()
	var missing []string
	for key, r := range zw.records {
		if !now[key] {
			missing = append(missing, r.String())
		}
	}
	if len(missing) == 0 {
		return "", nil
	}
	slices.Sort(missing)
	return "missing " + strings.Join(missing, "; "), nil
}

// dig returns the name's answer when it is not the one of the start ("" when it is).
func (zw *zoneWatch) dig(ctx context.Context, name string) (string, error) {
	ans, err := zw.zone.Dig(ctx, name, "A")
	if err != nil {
		return "", err
	}
	if want := zw.answers[name]; ans.Status == want.Status && framework.SameRecords(ans, want.Shorts()) {
		return "", nil
	}
	return ans.String(), nil
}

func (zw *zoneWatch) loop(ctx context.Context, what string, every time.Duration, observe func(context.Context) (string, error)) {
	defer zw.wg.Done()
	last, current := time.Now(), ""
	for ctx.Err() == nil {
		began := time.Now()
		state, err := observe(ctx)
		zw.mu.Lock()
		switch {
		case ctx.Err() != nil:
		case err != nil:
			zw.failed[what]++
		default:
			zw.seen[what]++
			zw.longest[what] = max(zw.longest[what], time.Since(last))
			last = time.Now()
			if state != "" {
				zw.departures[what]++
			}
			if state != current {
				shown := state
				if shown == "" {
					shown = "as at the start again"
				}
				zw.timeline = append(zw.timeline, fmt.Sprintf("%s %s: %s", began.Format("15:04:05.000"), what, shown))
				current = state
			}
		}
		zw.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(began.Add(every))):
		}
	}
}

// finish stops the watch, logs what it saw (how often it looked, the longest it went without an
// answer, the records that appeared) and fails the test if a record of the start went missing,
// an answer changed, or the watch went blind for longer than watchBlindLimit.
func (zw *zoneWatch) finish(t *testing.T, during string) {
	t.Helper()
	zw.stop()
	zw.wg.Wait()
	zw.mu.Lock()
	defer zw.mu.Unlock()
	var lines []string
	for _, what := range append([]string{"transfer"}, slices.Sorted(maps.Keys(zw.answers))...) {
		lines = append(lines, fmt.Sprintf("%s: %d answers (%d queries failed), at most %s between two answers, %d differed from the start",
			what, zw.seen[what], zw.failed[what], zw.longest[what].Round(time.Millisecond), zw.departures[what]))
		if zw.longest[what] > watchBlindLimit {
			t.Errorf("zone %s %s: the watch went %s without an answer (%s), longer than %s: a gap in DNS could have gone unseen",
				zw.zone.Zone, during, zw.longest[what].Round(time.Millisecond), what, watchBlindLimit)
		}
	}
	t.Logf("zone %s watched %s:\n    %s\nrecords rewritten in place (same name, type and data): %v\nrecords that appeared meanwhile: %v",
		zw.zone.Zone, during, strings.Join(lines, "\n    "), zw.rewrites, slices.Sorted(maps.Keys(zw.added)))
	departed := 0
	for _, n := range zw.departures {
		departed += n
	}
	if departed > 0 {
		want := []string{}
		for name, ans := range zw.answers {
			want = append(want, name+" "+ans.String())
		}
		slices.Sort(want)
		t.Errorf("zone %s %s: %d observations differed from the start (want every record of the start in every transfer, and %s); timeline:\n%s",
			zw.zone.Zone, during, departed, strings.Join(want, ", "), strings.Join(zw.timeline, "\n"))
	}
}
