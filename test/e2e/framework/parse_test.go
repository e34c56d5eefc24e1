package framework

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Output of `dig +norecurse +noall +answer +comments` from BIND 9.18 for a CNAME'd name.
const digCNAME = `;; Got answer:
;; ->>HEADER<<- opcode: QUERY, status: NOERROR, id: 63191
;; flags: qr aa; QUERY: 1, ANSWER: 2, AUTHORITY: 1, ADDITIONAL: 2

;; OPT PSEUDOSECTION:
; EDNS: version: 0, flags:; udp: 1232
; COOKIE: 7d3a3920580c5539010000006b0235a83899f8dee1248958 (good)
;; ANSWER SECTION:
api.example.com.	60	IN	CNAME	gw.example.com.
gw.example.com.		60	IN	A	10.1.2.3

`

const digNXDOMAIN = `;; Got answer:
;; ->>HEADER<<- opcode: QUERY, status: NXDOMAIN, id: 61745
;; flags: qr aa; QUERY: 1, ANSWER: 0, AUTHORITY: 1, ADDITIONAL: 1

;; OPT PSEUDOSECTION:
; EDNS: version: 0, flags:; udp: 1232
`

const digAXFR = `example.com.		60	IN	SOA	ns1.example.com. hostmaster.example.com. 1 60 60 3600 60
example.com.		60	IN	NS	ns1.example.com.
t.example.com.		60	IN	TXT	"heritage=external-dns,external-dns/owner=x"
example.com.		60	IN	SOA	ns1.example.com. hostmaster.example.com. 1 60 60 3600 60
`

func TestParseDig(t *testing.T) {
	ans, err := parseDig(digCNAME)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Status != "NOERROR" || len(ans.Records) != 2 {
		t.Fatalf("got %s", ans)
	}
	if r := ans.Records[0]; r.Name != "api.example.com." || r.TTL != 60 || r.Type != "CNAME" || r.Data != "gw.example.com." {
		t.Errorf("first record = %+v", r)
	}
	if !SameRecords(ans, []string{"a 10.1.2.3", "CNAME GW.example.com"}) {
		t.Errorf("SameRecords ignores order, case and trailing dots; got %s", ans)
	}
	if SameRecords(ans, []string{"CNAME gw.example.com."}) {
		t.Error("SameRecords matched a subset")
	}

	ans, err = parseDig(digNXDOMAIN)
	if err != nil || ans.Status != "NXDOMAIN" || len(ans.Records) != 0 || !SameRecords(ans, nil) {
		t.Errorf("NXDOMAIN: %s, %v", ans, err)
	}

	ans, err = parseDig(digAXFR)
	if err != nil || len(ans.Records) != 4 || ans.Records[2].Data != `"heritage=external-dns,external-dns/owner=x"` {
		t.Errorf("AXFR: %s, %v", ans, err)
	}

	if _, err := parseDig(";; communications error to 127.0.0.1#1: connection refused\n"); err == nil {
		t.Error("want an error for a communications error")
	}
}

func TestParseMetrics(t *testing.T) {
	m, err := parseMetrics(strings.NewReader(`# HELP external_dns_controller_last_sync_timestamp_seconds Timestamp
# TYPE external_dns_controller_last_sync_timestamp_seconds gauge
external_dns_controller_last_sync_timestamp_seconds 1.7637681239876542e+09
external_dns_registry_records{record_type="a"} 2
`))
	if err != nil {
		t.Fatal(err)
	}
	ts := unixFloat(m[metricSyncSucceeded])
	if want := time.Unix(1763768123, 987654200); ts.Sub(want).Abs() > time.Microsecond {
		t.Errorf("timestamp = %s, want %s", ts, want)
	}
	if m[`external_dns_registry_records{record_type="a"}`] != 2 {
		t.Errorf("labelled sample missing: %v", m)
	}
}

func TestTeardownRunsInReverseOnce(t *testing.T) {
	var td Teardown
	var order []int
	for i := range 3 {
		td.Cleanup(func() { order = append(order, i) })
	}
	td.Run()
	td.Run()
	if len(order) != 3 || order[0] != 2 || order[2] != 0 {
		t.Errorf("order = %v, want [2 1 0]", order)
	}
}

// A query that got no answer is not an answer, and the same answer on both sides of it is one;
// an NXDOMAIN between two answers stays.
func TestTrace_AnswersLeaveOutQueriesThatGotNone(t *testing.T) {
	a := Observation{Answer: Answer{Status: "NOERROR", Records: []Record{{Type: "CNAME", Data: "a.example.com."}}}}
	b := Observation{Answer: Answer{Status: "NOERROR", Records: []Record{{Type: "CNAME", Data: "b.example.com."}}}}
	nx := Observation{Answer: Answer{Status: "NXDOMAIN"}}
	timedOut := Observation{Err: errors.New("communications error to 127.0.0.1#53: timed out")}
	for _, tt := range []struct {
		name string
		seen []Observation
		want []string
	}{
		{"a direct switch", []Observation{a, b}, []string{"CNAME a.example.com.", "CNAME b.example.com."}},
		{"a timeout in a switch", []Observation{a, timedOut, b}, []string{"CNAME a.example.com.", "CNAME b.example.com."}},
		{"a timeout between the same answers", []Observation{a, timedOut, a, b}, []string{"CNAME a.example.com.", "CNAME b.example.com."}},
		{"NXDOMAIN is an answer", []Observation{a, nx, timedOut, b}, []string{"CNAME a.example.com.", "NXDOMAIN", "CNAME b.example.com."}},
	} {
		var got []string
		for _, o := range (Trace{Seen: tt.seen}).Answers() {
			got = append(got, o.brief())
		}
		if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
			t.Errorf("%s: answers %v, want %v", tt.name, got, tt.want)
		}
	}
}
