package framework

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Record is one resource record of a dig answer.
type Record struct {
	Name  string // owner name as dig prints it, fully qualified with a trailing dot
	TTL   int
	Class string // IN
	Type  string // A, CNAME, TXT, SOA, ...
	Data  string // the RDATA as dig prints it, fields separated by one space
}

// Short is "TYPE DATA", the form WaitForAnswer compares, e.g. "A 10.1.2.3".
func (r Record) Short() string { return r.Type + " " + r.Data }

// String is the record in zone-file form.
func (r Record) String() string {
	return fmt.Sprintf("%s %d %s %s %s", r.Name, r.TTL, r.Class, r.Type, r.Data)
}

// Answer is the result of one query.
type Answer struct {
	// Status is the response code (NOERROR, NXDOMAIN, REFUSED, ...).
	Status  string
	Records []Record
}

// Shorts returns the records' Short forms, in answer order.
func (a Answer) Shorts() []string {
	out := make([]string, 0, len(a.Records))
	for _, r := range a.Records {
		out = append(out, r.Short())
	}
	return out
}

// String renders the answer on one line, e.g. "NOERROR [CNAME b.example.com. | A 10.1.2.3]".
func (a Answer) String() string {
	return fmt.Sprintf("%s [%s]", a.Status, strings.Join(a.Shorts(), " | "))
}

// Query names a question to a DNS server on 127.0.0.1.
type Query struct {
	Port int    // the server's port on 127.0.0.1
	Name string // e.g. api.example.com
	Type string // e.g. A, CNAME, TXT, AXFR
}

func (q Query) String() string {
	return fmt.Sprintf("%s %s @127.0.0.1#%d", q.Name, q.Type, q.Port)
}

// DigBinary returns the path of dig, installed by `make bind-tools`.
func DigBinary() (string, error) { return lookBinary("dig", "/usr/bin", "/usr/local/bin") }

// Dig asks the DNS server on 127.0.0.1:port for name/qtype with dig, without recursion, and
// returns the answer section. An authoritative server answering for a name that is a CNAME returns
// the CNAME followed by the records of its target when the target is in one of its zones.
func Dig(ctx context.Context, port int, name, qtype string) (Answer, error) {
	dig, err := DigBinary()
	if err != nil {
		return Answer{}, err
	}
	args := []string{
		"@127.0.0.1", "-p", strconv.Itoa(port),
		"+norecurse", "+time=1", "+tries=1",
		"+noall", "+answer", "+comments",
		name, qtype,
	}
	if strings.EqualFold(qtype, "AXFR") {
		// A zone transfer has no header comment; a refused one prints "; Transfer failed.".
		args = []string{"@127.0.0.1", "-p", strconv.Itoa(port), "+time=2", "+tries=1", "+noall", "+answer", name, "AXFR"}
	}
	out, err := exec.CommandContext(ctx, dig, args...).CombinedOutput()
	if err != nil {
		return Answer{}, fmt.Errorf("dig %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	ans, err := parseDig(string(out))
	if err != nil {
		return Answer{}, fmt.Errorf("dig %s: %w", strings.Join(args, " "), err)
	}
	if strings.EqualFold(qtype, "AXFR") && ans.Status == "" {
		ans.Status = "NOERROR"
	}
	return ans, nil
}

// DigZone transfers the whole zone (AXFR) from the server, for diagnostics and for looking at
// ExternalDNS's TXT ownership records.
func DigZone(ctx context.Context, port int, zone string) (Answer, error) {
	return Dig(ctx, port, zone, "AXFR")
}

// parseDig parses `dig +noall +answer +comments` output.
func parseDig(out string) (Answer, error) {
	var ans Answer
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, ";"):
			if i := strings.Index(line, "status: "); i >= 0 && strings.Contains(line, "->>HEADER<<-") {
				status := line[i+len("status: "):]
				if j := strings.IndexByte(status, ','); j >= 0 {
					status = status[:j]
				}
				ans.Status = status
			}
			if strings.Contains(line, "Transfer failed") || strings.Contains(line, "communications error") ||
				strings.Contains(line, "connection timed out") || strings.Contains(line, "no servers could be reached") {
				return ans, errors.New(line)
			}
			continue
		}
		f := strings.Fields(line)
		if len(f) < 5 {
			return ans, fmt.Errorf("unexpected line in dig output: %q", line)
		}
		ttl, err := strconv.Atoi(f[1])
		if err != nil {
			return ans, fmt.Errorf("unexpected TTL in dig output line %q", line)
		}
		ans.Records = append(ans.Records, Record{Name: f[0], TTL: ttl, Class: f[2], Type: f[3], Data: strings.Join(f[4:], " ")})
	}
	return ans, nil
}

// normalizeShort makes "TYPE DATA" comparable: upper-case type, lower-case data, no trailing dots
// on names, single spaces.
func normalizeShort(s string) string {
	f := strings.Fields(s)
	for i := range f {
		if i == 0 {
			f[i] = strings.ToUpper(f[i])
			continue
		}
		f[i] = strings.TrimSuffix(strings.ToLower(f[i]), ".")
	}
	return strings.Join(f, " ")
}

// SameRecords reports whether the answer holds exactly the wanted records ("TYPE DATA"), in any
// order, ignoring case, TTLs and trailing dots.
func SameRecords(ans Answer, want []string) bool {
	got := make([]string, 0, len(ans.Records))
	for _, s := range ans.Shorts() {
		got = append(got, normalizeShort(s))
	}
	w := make([]string, 0, len(want))
	for _, s := range want {
		w = append(w, normalizeShort(s))
	}
	slices.Sort(got)
	slices.Sort(w)
	return slices.Equal(got, w)
}

// pollInterval is how often WaitForAnswer asks again. A dig against a local server takes a few
// milliseconds.
const pollInterval = 100 * time.Millisecond

// WaitForAnswer polls q until the answer holds exactly the records in want ("TYPE DATA" strings in
// any order, e.g. "CNAME target.example.com." and "A 10.1.2.3"; an empty want waits for an empty
// answer) or timeout passes. It returns how long it took. The error names the query, the wanted
// and the last seen answer (or dig error), followed by whatever the diagnostics functions return
// (for example ExternalDNS log tails).
func WaitForAnswer(ctx context.Context, q Query, want []string, timeout time.Duration, diagnostics ...func() string) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last Answer
	var lastErr error
	seen := false
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		ans, err := Dig(ctx, q.Port, q.Name, q.Type)
		if err == nil {
			last, lastErr, seen = ans, nil, true
			if SameRecords(ans, want) {
				return time.Since(start), nil
			}
		} else if ctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			var b strings.Builder
			fmt.Fprintf(&b, "%s: no answer %s after %s", q, formatWant(want), time.Since(start).Round(time.Millisecond))
			if seen {
				fmt.Fprintf(&b, "\nlast answer: %s", last)
			}
			if lastErr != nil {
				fmt.Fprintf(&b, "\nlast dig error: %v", lastErr)
			}
			for _, d := range diagnostics {
				fmt.Fprintf(&b, "\n%s", d())
			}
			return time.Since(start), errors.New(b.String())
		case <-ticker.C:
		}
	}
}

func formatWant(want []string) string {
	if len(want) == 0 {
		return "[] (empty)"
	}
	return "[" + strings.Join(want, " | ") + "]"
}

// Observation is one distinct answer seen while observing a query, and when it was first seen
// relative to the start of the observation.
type Observation struct {
	At     time.Duration
	Answer Answer
	Err    error
}

func (o Observation) String() string {
	if o.Err != nil {
		return fmt.Sprintf("+%s error: %v", o.At.Round(time.Millisecond), o.Err)
	}
	return fmt.Sprintf("+%s %s", o.At.Round(time.Millisecond), o.Answer)
}

// ObserveAnswers asks q every interval for the given duration and returns each change of answer
// (the first answer included), to find out whether records stay put or flap.
func ObserveAnswers(ctx context.Context, q Query, duration, interval time.Duration) []Observation {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	var out []Observation
	last := ""
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		ans, err := Dig(ctx, q.Port, q.Name, q.Type)
		if ctx.Err() != nil {
			return out
		}
		if key := answerKey(ans, err); key != last {
			out = append(out, Observation{At: time.Since(start), Answer: ans, Err: err})
			last = key
		}
		select {
		case <-ctx.Done():
			return out
		case <-ticker.C:
		}
	}
}

// Expect is the answer a query should get: exactly Records ("TYPE DATA" strings, any order, case,
// TTL and trailing dots ignored) and, when Status is not empty, that response code.
type Expect struct {
	Status  string
	Records []string
}

// Resolves expects a NOERROR answer holding exactly records.
func Resolves(records ...string) Expect { return Expect{Status: "NOERROR", Records: records} }

// NXDomain expects the name not to exist.
func NXDomain() Expect { return Expect{Status: "NXDOMAIN"} }

// Matches reports whether a is the expected answer.
func (e Expect) Matches(a Answer) bool {
	return (e.Status == "" || e.Status == a.Status) && SameRecords(a, e.Records)
}

func (e Expect) String() string {
	if len(e.Records) == 0 && e.Status != "" {
		return e.Status
	}
	s := formatWant(e.Records)
	if e.Status != "" && e.Status != "NOERROR" {
		s = e.Status + " " + s
	}
	return s
}

// Trace is how a query's answer converged: every distinct answer seen, in order (the first one
// included), each with when it was first seen relative to the start of the wait, and how long
// the wait took.
type Trace struct {
	Took time.Duration
	Seen []Observation
}

// String renders the trace compactly, e.g.
// "CNAME aks02-neu-internal.example.com. (+0s) -> NXDOMAIN (+812ms) -> CNAME aks01-... (+1.9s)".
func (tr Trace) String() string {
	parts := make([]string, 0, len(tr.Seen))
	for _, o := range tr.Seen {
		parts = append(parts, fmt.Sprintf("%s (+%s)", o.brief(), o.At.Round(time.Millisecond)))
	}
	return strings.Join(parts, " -> ")
}

// Answers returns the answers the trace saw, in order: a query that got none (dig timing out on a
// loaded machine) is not an answer a resolver would have passed on, and the same answer on both
// sides of it is one.
func (tr Trace) Answers() []Observation {
	var out []Observation
	for _, o := range tr.Seen {
		if o.Err != nil || len(out) > 0 && answerKey(out[len(out)-1].Answer, nil) == answerKey(o.Answer, nil) {
			continue
		}
		out = append(out, o)
	}
	return out
}

// brief renders the observation without TTLs: "NXDOMAIN", "CNAME x. | A 1.2.3.4" or the error.
func (o Observation) brief() string {
	if o.Err != nil {
		return "error: " + o.Err.Error()
	}
	if len(o.Answer.Records) == 0 {
		if o.Answer.Status == "NOERROR" {
			return "NOERROR (no records)"
		}
		return o.Answer.Status
	}
	return strings.Join(o.Answer.Shorts(), " | ")
}

// Converge polls q every interval until the answer matches want or timeout passes, recording every
// distinct answer on the way (so that a record that disappears before it is replaced shows an
// NXDOMAIN step). The error names the query, the expected and the last seen answer, followed by
// whatever the diagnostics functions return.
func Converge(ctx context.Context, q Query, want Expect, timeout, interval time.Duration, diagnostics ...func() string) (Trace, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var tr Trace
	last := ""
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		ans, err := Dig(ctx, q.Port, q.Name, q.Type)
		if ctx.Err() == nil {
			key := answerKey(ans, err)
			if key != last {
				tr.Seen = append(tr.Seen, Observation{At: time.Since(start), Answer: ans, Err: err})
				last = key
			}
			if err == nil && want.Matches(ans) {
				tr.Took = time.Since(start)
				return tr, nil
			}
		}
		select {
		case <-ctx.Done():
			tr.Took = time.Since(start)
			var b strings.Builder
			fmt.Fprintf(&b, "%s: no answer %s after %s", q, want, tr.Took.Round(time.Millisecond))
			if len(tr.Seen) > 0 {
				fmt.Fprintf(&b, "\nanswers seen: %s", tr)
			}
			for _, d := range diagnostics {
				fmt.Fprintf(&b, "\n%s", d())
			}
			return tr, errors.New(b.String())
		case <-ticker.C:
		}
	}
}

// answerKey identifies an answer for change detection: status and sorted records, TTLs ignored.
func answerKey(ans Answer, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	shorts := ans.Shorts()
	slices.Sort(shorts)
	return ans.Status + " " + strings.Join(shorts, "|")
}
