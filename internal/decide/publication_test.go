package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/desired"
	"github.com/service-router/service-router-operator/internal/policy"
	"github.com/service-router/service-router-operator/internal/verify"
)

// zoneOf builds the input of one zone of the sample route: published towards target, the cached
// copy at generation 2 processed by ExternalDNS up to observed.
func zoneOf(region string, verified bool, target string, observed int64, obs *verify.Observation) ZoneInput {
	c := policy.Controller{Name: "external-dns-" + region, Region: region}
	want := desired.WithRecordTTL(desired.RouteEndpoint(serviceRoute(), c, "api-ns-d-dev-myapp.example.com", "aks01-weu-internal.example.com"), 300)
	var current *externaldnsv1alpha1.DNSEndpoint
	if target != "" {
		current = desired.WithRecordTTL(desired.RouteEndpoint(serviceRoute(), c, "api-ns-d-dev-myapp.example.com", target), 300)
		current.Generation, current.Status.ObservedGeneration = 2, observed
	}
	return ZoneInput{Controller: c.Name, Region: region, Verified: verified, Desired: want, Current: current, Observation: obs}
}

const wantTarget = "aks01-weu-internal.example.com"

var wantKey = verify.ExpectedOf(desired.RouteEndpoint(serviceRoute(), policy.Controller{Name: "x"}, "api-ns-d-dev-myapp.example.com", wantTarget).Spec.Endpoints).Key()

func observed(state routingv1alpha1.ZoneState, answer string, since time.Time) *verify.Observation {
	return &verify.Observation{State: state, Answer: answer, Since: since, For: wantKey}
}

func TestPublish(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	ok := observed(routingv1alpha1.ZonePublished, "CNAME aks01-weu-internal.example.com. → A 10.1.2.3", t0)
	nx := observed(routingv1alpha1.ZonePending, "NXDOMAIN", t0)
	drift := observed(routingv1alpha1.ZoneDrifted, "CNAME aks02-neu-internal.example.com.", t0)
	down := observed(routingv1alpha1.ZoneUnreachable, "no answer from 10.0.0.53:53 (timeout)", t0)
	stale := &verify.Observation{State: routingv1alpha1.ZonePublished, Answer: "CNAME old.example.com.", Since: t0, For: "old"}
	prevPublished := []routingv1alpha1.ZoneStatus{{Controller: "external-dns-weu", Region: "weu", State: routingv1alpha1.ZonePublished, Answer: "CNAME x", LastChecked: &metav1.Time{Time: t0}, Processed: true}}

	tests := []struct {
		name       string
		zones      []ZoneInput
		previous   []routingv1alpha1.ZoneStatus
		wantStates []routingv1alpha1.ZoneState
		wantCount  string
		status     metav1.ConditionStatus
		reason     string
		message    string
	}{
		{"every zone answers", []ZoneInput{zoneOf("weu", true, wantTarget, 2, ok), zoneOf("neu", true, wantTarget, 2, ok)}, nil,
			[]routingv1alpha1.ZoneState{"Published", "Published"}, "2/2", "True", "ZonesPublished", "every zone answers the published records: external-dns-weu, external-dns-neu"},
		{"one zone not there yet", []ZoneInput{zoneOf("weu", true, wantTarget, 2, ok), zoneOf("frc", true, wantTarget, 1, nx)}, nil,
			[]routingv1alpha1.ZoneState{"Published", "Pending"}, "1/2", "False", "ZonesPending", "not answering the published records yet: external-dns-frc (NXDOMAIN; not processed by ExternalDNS yet)"},
		{"drift wins over an unreachable zone", []ZoneInput{zoneOf("weu", true, wantTarget, 2, down), zoneOf("neu", true, wantTarget, 2, drift)}, nil,
			[]routingv1alpha1.ZoneState{"Unreachable", "Drifted"}, "0/2", "False", "ZonesDrifted", "answering something else than what is published: external-dns-neu (CNAME aks02-neu-internal.example.com.)"},
		{"unreachable", []ZoneInput{zoneOf("weu", true, wantTarget, 2, down)}, nil,
			[]routingv1alpha1.ZoneState{"Unreachable"}, "0/1", "False", "ZonesUnreachable", "zones that could not be asked or read: external-dns-weu (no answer from 10.0.0.53:53 (timeout))"},
		{"a zone without verification makes it unknown", []ZoneInput{zoneOf("weu", true, wantTarget, 2, ok), zoneOf("neu", false, wantTarget, 2, nil)}, nil,
			[]routingv1alpha1.ZoneState{"Published", "Unverified"}, "1/2", "Unknown", "VerificationNotConfigured",
			"not known: no verification settings in DNSConfiguration dns-config for external-dns-neu (processed by ExternalDNS); the other zones answer the published records"},
		{"records just written are Pending whatever was found before", []ZoneInput{zoneOf("weu", true, "aks01-weu-external.example.com", 2, ok)}, prevPublished,
			[]routingv1alpha1.ZoneState{"Pending"}, "0/1", "False", "ZonesPending", "not answering the published records yet: external-dns-weu (not checked yet; not processed by ExternalDNS yet)"},
		{"not created yet", []ZoneInput{zoneOf("weu", true, "", 0, nil)}, nil,
			[]routingv1alpha1.ZoneState{"Pending"}, "0/1", "False", "ZonesPending", "not answering the published records yet: external-dns-weu (not checked yet; not processed by ExternalDNS yet)"},
		{"a result about older records counts for nothing", []ZoneInput{zoneOf("weu", true, wantTarget, 2, stale)}, prevPublished,
			[]routingv1alpha1.ZoneState{"Pending"}, "0/1", "False", "ZonesPending", "not answering the published records yet: external-dns-weu (not checked yet)"},
		{"no result yet: the status is kept (a new leader writes nothing)", []ZoneInput{zoneOf("weu", true, wantTarget, 2, nil)}, prevPublished,
			[]routingv1alpha1.ZoneState{"Published"}, "1/1", "True", "ZonesPublished", "every zone answers the published records: external-dns-weu"},
		{"nothing to publish", nil, prevPublished, nil, "", "False", "NothingPublished", "no records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Publish(tt.zones, tt.previous, 7, "no records")
			var states []routingv1alpha1.ZoneState
			for _, z := range got.Zones {
				states = append(states, z.State)
			}
			assert.Equal(t, tt.wantStates, states)
			assert.Equal(t, tt.wantCount, got.Published)
			assert.Equal(t, metav1.Condition{Type: "Published", Status: tt.status, Reason: tt.reason, Message: tt.message, ObservedGeneration: 7}, got.Condition)
		})
	}

	got := Publish([]ZoneInput{zoneOf("weu", true, wantTarget, 2, ok), zoneOf("neu", false, wantTarget, 1, nil)}, nil, 1, "")
	assert.Equal(t, routingv1alpha1.ZoneStatus{Controller: "external-dns-weu", Region: "weu", State: "Published",
		Answer: "CNAME aks01-weu-internal.example.com. → A 10.1.2.3", LastChecked: &metav1.Time{Time: t0}, Processed: true}, got.Zones[0])
	assert.Equal(t, routingv1alpha1.ZoneStatus{Controller: "external-dns-neu", Region: "neu", State: "Unverified"}, got.Zones[1],
		"an unverified zone says only whether ExternalDNS has processed the record")

	kept := Publish([]ZoneInput{zoneOf("weu", true, wantTarget, 2, nil)}, prevPublished, 1, "")
	assert.Equal(t, prevPublished[0].LastChecked, kept.Zones[0].LastChecked, "kept with the time it was found")

	later := observed(routingv1alpha1.ZonePublished, "CNAME x", t0.Add(time.Hour+300*time.Millisecond))
	again := Publish([]ZoneInput{zoneOf("weu", true, wantTarget, 2, later)}, prevPublished, 1, "")
	assert.Equal(t, prevPublished[0].LastChecked, again.Zones[0].LastChecked,
		"a new leader's first check finding what the status says keeps its time: nothing to write")
	moved := Publish([]ZoneInput{zoneOf("weu", true, wantTarget, 2, drift)}, prevPublished, 1, "")
	assert.Equal(t, &metav1.Time{Time: t0}, moved.Zones[0].LastChecked)
	fresh := Publish([]ZoneInput{zoneOf("weu", true, wantTarget, 2, later)}, nil, 1, "")
	assert.Equal(t, &metav1.Time{Time: t0.Add(time.Hour)}, fresh.Zones[0].LastChecked, "whole seconds, as the API stores them")
}

func TestVerified_InEveryMode(t *testing.T) {
	cfg := &clusterv1alpha1.DNSConfiguration{Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
		{Name: "external-dns-weu", Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{"10.0.0.53:53"}}},
		{Name: "external-dns-neu", Verification: &clusterv1alpha1.ZoneVerification{Resolvers: []string{"168.63.129.16:53"}}},
		{Name: "external-dns-frc", Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &clusterv1alpha1.AzurePrivateDNSVerification{
			SubscriptionID: "00000000-0000-0000-0000-000000000000", ResourceGroup: "rg-dns-frc", ZoneName: "aks.example.com"}}},
		{Name: "external-dns-sea"},
	}}}
	for controller, want := range map[string]bool{"external-dns-weu": true, "external-dns-neu": true, "external-dns-frc": true, "external-dns-sea": false, "unknown": false} {
		assert.Equal(t, want, Verified(cfg, controller), controller)
	}
	assert.False(t, Verified(nil, "external-dns-weu"))
}
