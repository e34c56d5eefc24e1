package verify

import (
	"testing"

	"github.com/stretchr/testify/assert"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

func TestSnapshot_AnswersAsTheZonesServerWould(t *testing.T) {
	snap := NewSnapshot("10.0.0.53:53", "example.com", []Record{
		{Name: "example.com.", Type: "SOA", Value: "ns.example.com."},
		{Name: "api.ns1.weu.example.com.", Type: "CNAME", Value: "aks01-weu-internal.example.com."},
		{Name: "WEB.ns1.weu.example.com.", Type: "CNAME", Value: "elsewhere.example.com."},
		{Name: "aks01-weu-internal.example.com.", Type: "A", Value: "10.1.0.1"},
		{Name: "aks01-weu-internal.example.com.", Type: "A", Value: "10.1.0.2"},
		{Name: "aks01-weu-internal.example.com.", Type: "AAAA", Value: "fd00::1"},
		{Name: "as-address.example.com.", Type: "A", Value: "10.9.9.9"},
		{Name: "api.other-zone.test.", Type: "CNAME", Value: "aks01-weu-internal.example.com."}, // not the zone's
	})
	target := "aks01-weu-internal.example.com."
	cases := []struct {
		name       string
		rs         RecordSet
		state      routingv1alpha1.ZoneState
		answer     string
		wantRcode  string
		wantLength int
	}{
		{"a published CNAME", RecordSet{Name: "api.ns1.weu.example.com.", Type: "CNAME", Values: []string{target}}, routingv1alpha1.ZonePublished, "CNAME " + target, "NOERROR", 1},
		{"a CNAME to another target, names compared in lower case", RecordSet{Name: "web.ns1.weu.example.com.", Type: "CNAME", Values: []string{target}}, routingv1alpha1.ZoneDrifted, "CNAME elsewhere.example.com.", "NOERROR", 1},
		{"a name given an A record instead of the CNAME", RecordSet{Name: "as-address.example.com.", Type: "CNAME", Values: []string{target}}, routingv1alpha1.ZoneDrifted, "A 10.9.9.9", "NOERROR", 1},
		{"a name not published yet", RecordSet{Name: "new.ns1.weu.example.com.", Type: "CNAME", Values: []string{target}}, routingv1alpha1.ZonePending, "NXDOMAIN", "NXDOMAIN", 0},
		{"an empty non-terminal is not NXDOMAIN", RecordSet{Name: "ns1.weu.example.com.", Type: "CNAME", Values: []string{target}}, routingv1alpha1.ZonePending, "no CNAME record", "NOERROR", 0},
		{"every address of the target", RecordSet{Name: target, Type: "A", Values: []string{"10.1.0.1", "10.1.0.2"}}, routingv1alpha1.ZonePublished, "A 10.1.0.1,10.1.0.2", "NOERROR", 2},
		{"one address missing", RecordSet{Name: target, Type: "A", Values: []string{"10.1.0.1", "10.1.0.2", "10.1.0.3"}}, routingv1alpha1.ZoneDrifted, "A 10.1.0.1,10.1.0.2", "NOERROR", 2},
		{"the AAAA record alone for an AAAA query", RecordSet{Name: target, Type: "AAAA", Values: []string{"fd00::1"}}, routingv1alpha1.ZonePublished, "AAAA fd00::1", "NOERROR", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := snap.Answer(tc.rs)
			assert.Equal(t, "10.0.0.53:53", resp.Server)
			assert.Equal(t, tc.wantRcode, resp.Rcode)
			assert.Len(t, resp.Records, tc.wantLength)
			f := Judge(tc.rs, resp)
			assert.Equal(t, tc.state, f.State)
			assert.Equal(t, tc.answer, f.Answer)
		})
	}
}

func TestSnapshot_CoversOnlyTheZone(t *testing.T) {
	snap := NewSnapshot("s:53", "Example.com.", []Record{
		{Name: "api.other-zone.test.", Type: "CNAME", Value: "x.example.com."},
		{Name: "a.example.com.", Type: "A", Value: "10.0.0.1"},
	})
	assert.True(t, snap.Covers("example.com"))
	assert.True(t, snap.Covers("deep.below.EXAMPLE.com."))
	assert.False(t, snap.Covers("notexample.com."), "a name that only ends in the same letters")
	assert.False(t, snap.Covers("api.other-zone.test."))
	assert.Equal(t, 1, snap.Len(), "records outside the zone are not kept")
}
