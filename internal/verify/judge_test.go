package verify

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

const (
	host   = "api-ns-d-dev-myapp.example.com."
	target = "aks01-weu-internal.example.com."
)

var (
	cnameSet = RecordSet{Name: host, Type: "CNAME", Values: []string{target}}
	aSet     = RecordSet{Name: target, Type: "A", Values: []string{"10.1.2.3", "10.1.2.4"}}
)

func answered(rcode string, records ...Record) Response {
	return Response{Server: "127.0.0.1:53", Rcode: rcode, Records: records}
}

func TestExpectedOf_NormalisesNamesAndSortsValues(t *testing.T) {
	got := ExpectedOf([]*endpoint.Endpoint{
		{DNSName: "AKS01-weu-internal.example.com", RecordType: "AAAA", Targets: endpoint.Targets{"fd00::1"}, RecordTTL: 300},
		{DNSName: "aks01-weu-internal.example.com", RecordType: "A", Targets: endpoint.Targets{"10.1.2.4", "10.1.2.3"}},
		{DNSName: "ignored.example.com", RecordType: "TXT", Targets: endpoint.Targets{"x"}},
		nil,
	})
	assert.Equal(t, Expected{
		{Name: target, Type: "A", Values: []string{"10.1.2.3", "10.1.2.4"}},
		{Name: target, Type: "AAAA", Values: []string{"fd00::1"}},
	}, got)
	assert.Equal(t, "aks01-weu-internal.example.com. A 10.1.2.3,10.1.2.4; aks01-weu-internal.example.com. AAAA fd00::1", got.Key())

	route := ExpectedOf([]*endpoint.Endpoint{{DNSName: "api-ns-d-dev-myapp.example.com", RecordType: "CNAME", Targets: endpoint.Targets{"aks01-weu-internal.example.com"}, RecordTTL: 60}})
	assert.Equal(t, Expected{cnameSet}, route)
	assert.Equal(t, "A", route[0].QueryType(), "a CNAME is asked for with an A query, as clients do")
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name   string
		rs     RecordSet
		resp   Response
		want   routingv1alpha1.ZoneState
		answer string
		failed bool
	}{
		{"CNAME with its chased target", cnameSet, answered("NOERROR",
			Record{host, "CNAME", "AKS01-weu-internal.example.com."}, Record{target, "A", "10.1.2.3"}),
			routingv1alpha1.ZonePublished, "CNAME " + target, false},
		{"CNAME to another cluster", cnameSet, answered("NOERROR", Record{host, "CNAME", "aks02-neu-internal.example.com."}),
			routingv1alpha1.ZoneDrifted, "CNAME aks02-neu-internal.example.com.", false},
		{"CNAME to a name missing from the zone (NXDOMAIN is about the target)", cnameSet, answered("NXDOMAIN", Record{host, "CNAME", "aks09-neu-internal.example.com."}),
			routingv1alpha1.ZoneDrifted, "CNAME aks09-neu-internal.example.com.", false},
		{"A record instead of the CNAME", cnameSet, answered("NOERROR", Record{host, "A", "192.0.2.1"}),
			routingv1alpha1.ZoneDrifted, "A 192.0.2.1", false},
		{"name not there yet", cnameSet, answered("NXDOMAIN"), routingv1alpha1.ZonePending, "NXDOMAIN", false},
		{"name there without the record", cnameSet, answered("NOERROR"), routingv1alpha1.ZonePending, "no CNAME record", false},
		{"every address", aSet, answered("NOERROR", Record{target, "A", "10.1.2.4"}, Record{target, "A", "10.1.2.3"}),
			routingv1alpha1.ZonePublished, "A 10.1.2.3,10.1.2.4", false},
		{"an address missing", aSet, answered("NOERROR", Record{target, "A", "10.1.2.3"}),
			routingv1alpha1.ZoneDrifted, "A 10.1.2.3", false},
		{"target made a CNAME", aSet, answered("NOERROR", Record{target, "CNAME", "elsewhere.example.com."}),
			routingv1alpha1.ZoneDrifted, "CNAME elsewhere.example.com.", false},
		{"timeout", cnameSet, Response{Server: "10.0.0.53:53", Failure: "timeout"},
			routingv1alpha1.ZoneUnreachable, "no answer from 10.0.0.53:53 (timeout)", true},
		{"SERVFAIL", aSet, Response{Server: "10.0.0.53:53", Failure: "SERVFAIL"},
			routingv1alpha1.ZoneUnreachable, "no answer from 10.0.0.53:53 (SERVFAIL)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Judge(tt.rs, tt.resp)
			assert.Equal(t, Finding{State: tt.want, Answer: tt.answer, Failed: tt.failed}, got)
		})
	}
}

func TestCombine_AddressRecordIsAsPublishedAsItsWorstSet(t *testing.T) {
	ok := Finding{State: routingv1alpha1.ZonePublished, Answer: "A 10.1.2.3"}
	pending := Finding{State: routingv1alpha1.ZonePending, Answer: "no AAAA record"}
	failed := Finding{State: routingv1alpha1.ZoneUnreachable, Answer: "no answer from x (timeout)", Failed: true}
	assert.Equal(t, ok, Combine([]Finding{ok}))
	assert.Equal(t, Finding{State: routingv1alpha1.ZonePending, Answer: "A 10.1.2.3, no AAAA record"}, Combine([]Finding{ok, pending}))
	assert.Equal(t, failed, Combine([]Finding{ok, failed}))
	assert.True(t, Worse(routingv1alpha1.ZoneDrifted, routingv1alpha1.ZoneUnreachable), "a wrong answer is worse than none")
}
