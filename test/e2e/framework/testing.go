package framework

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
)

// MustDig queries q and fails the test if dig cannot (an answer with an error status is an answer).
func MustDig(ctx context.Context, t testing.TB, q Query) Answer {
	t.Helper()
	ans, err := Dig(ctx, q.Port, q.Name, q.Type)
	if err != nil {
		t.Fatal(err)
	}
	return ans
}

// LogZone transfers b's zone, logs every record under title (TXT ownership records included) and
// returns them; it fails the test if the transfer fails.
func LogZone(ctx context.Context, t testing.TB, title string, b *BindServer) []Record {
	t.Helper()
	recs, err := b.ZoneRecords(ctx)
	if err != nil {
		t.Fatalf("transferring zone %s from named %q: %v", b.Zone, b.Name, err)
	}
	var s strings.Builder
	for _, r := range recs {
		s.WriteString("\n    " + r.String())
	}
	t.Logf("%s: zone %s on named %q:%s", title, b.Zone, b.Name, s.String())
	return recs
}

// HasRecord reports whether recs hold a record name (any case) of type rtype whose data contains data.
func HasRecord(recs []Record, name, rtype, data string) bool {
	for _, r := range recs {
		if strings.EqualFold(r.Name, name) && r.Type == rtype && strings.Contains(r.Data, data) {
			return true
		}
	}
	return false
}

// EnvInts reads a comma-separated list of positive numbers from the environment variable name, or
// returns the defaults: the sizes a benchmark runs at.
func EnvInts(name string, defaults ...int) []int {
	var out []int
	for _, f := range strings.Split(os.Getenv(name), ",") {
		if v, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && v > 0 {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return defaults
	}
	return out
}
