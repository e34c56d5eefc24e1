package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

func TestAfterWrite_ConflictsFailTheOwnerHeldDeletionsAreAnnounced(t *testing.T) {
	published := Outcome{Phase: "Active", Ready: true, Reason: "ReconciliationSucceeded", Message: "published in 2 zone(s)"}
	until := time.Date(2026, 11, 25, 12, 30, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name    string
		written Written
		want    Outcome
	}{
		{"nothing to add", Written{Kind: "DNSEndpoint", Owner: "ServiceRoute"}, published},
		{"one conflict",
			Written{Kind: "Istio Gateway", Owner: "Gateway", Conflicts: []string{"istio-system/gw"}},
			Outcome{Phase: "Failed", Reason: routingv1alpha1.ReasonOwnershipConflict,
				Message: "Istio Gateway istio-system/gw exists and is not managed by this Gateway; it was left untouched"}},
		{"several conflicts",
			Written{Kind: "DNSEndpoint", Owner: "ServiceRoute", Conflicts: []string{"app/api-weu", "app/api-neu"}},
			Outcome{Phase: "Failed", Reason: routingv1alpha1.ReasonOwnershipConflict,
				Message: "DNSEndpoints app/api-weu, app/api-neu exist and are not managed by this ServiceRoute; they were left untouched"}},
		{"a conflict outweighs a held deletion",
			Written{Kind: "DNSEndpoint", Owner: "ServiceRoute", Conflicts: []string{"app/api-weu"}, HeldUntil: until},
			Outcome{Phase: "Failed", Reason: routingv1alpha1.ReasonOwnershipConflict,
				Message: "DNSEndpoint app/api-weu exists and is not managed by this ServiceRoute; it was left untouched"}},
		{"a held deletion keeps the outcome and says until when, in UTC",
			Written{Kind: "DNSEndpoint", Owner: "ServiceRoute", HeldUntil: until},
			Outcome{Phase: "Active", Ready: true, Reason: "ReconciliationSucceeded",
				Message: "published in 2 zone(s); the deletion of the DNSEndpoint(s) it no longer wants waits until 2026-11-25T11:30:00Z (mass-deletion guard)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, AfterWrite(published, tt.written))
		})
	}
}

func TestIngressConflictEvent_NamesTheObjectsReadably(t *testing.T) {
	assert.Equal(t, Event{Type: "Warning", Reason: routingv1alpha1.ReasonOwnershipConflict, Action: "Reconcile",
		Note: "DNSEndpoints istio-system/aks01-weu-internal-weu, istio-system/aks01-weu-internal-neu exist and are not managed by the operator; they were left untouched"},
		IngressConflictEvent([]string{"istio-system/aks01-weu-internal-weu", "istio-system/aks01-weu-internal-neu"}))
}

func TestStatusEvents_AnnounceOnlyTransitions(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: typ + " " + reason}
	}
	ready := cond(clusterv1alpha1.ConditionReady, metav1.ConditionTrue, "ReconciliationSucceeded")
	notReady := cond(clusterv1alpha1.ConditionReady, metav1.ConditionFalse, "GatewayNotFound")
	otherNotReady := cond(clusterv1alpha1.ConditionReady, metav1.ConditionFalse, "PolicyInactive")
	published := cond(routingv1alpha1.ConditionPublished, metav1.ConditionTrue, "AllZonesAnswer")
	pending := cond(routingv1alpha1.ConditionPublished, metav1.ConditionFalse, "ZonesPending")
	drifted := cond(routingv1alpha1.ConditionPublished, metav1.ConditionFalse, routingv1alpha1.ReasonZonesDrifted)
	unreachable := cond(routingv1alpha1.ConditionPublished, metav1.ConditionFalse, routingv1alpha1.ReasonZonesUnreachable)
	held := cond(clusterv1alpha1.ConditionDeletionsHeld, metav1.ConditionTrue, clusterv1alpha1.ReasonMassDeletionHeld)
	notHeld := cond(clusterv1alpha1.ConditionDeletionsHeld, metav1.ConditionFalse, clusterv1alpha1.ReasonNoDeletionsHeld)
	event := func(typ string, c metav1.Condition, action string) Event {
		return Event{Type: typ, Reason: c.Reason, Action: action, Note: c.Message}
	}
	list := func(c ...metav1.Condition) []metav1.Condition { return c }
	tests := []struct {
		name          string
		before, after []metav1.Condition
		want          []Event
	}{
		{"first Ready", nil, list(ready), []Event{event("Normal", ready, "Reconcile")}},
		{"first not Ready", nil, list(notReady), []Event{event("Warning", notReady, "Reconcile")}},
		{"Ready unchanged", list(ready), list(ready), nil},
		{"Ready's message alone changed", list(ready), list(func() metav1.Condition { c := ready; c.Message = "other"; return c }()), nil},
		{"another reason, same status", list(notReady), list(otherNotReady), []Event{event("Warning", otherNotReady, "Reconcile")}},
		{"recovered", list(notReady), list(ready), []Event{event("Normal", ready, "Reconcile")}},
		{"published in every zone", list(ready, pending), list(ready, published), []Event{event("Normal", published, "Verify")}},
		{"pending is expected after every change: silent", list(ready, published), list(ready, pending), nil},
		{"drifted", list(ready, published), list(ready, drifted), []Event{event("Warning", drifted, "Verify")}},
		{"unreachable, first seen", list(ready), list(ready, unreachable), []Event{event("Warning", unreachable, "Verify")}},
		{"still drifted", list(ready, drifted), list(ready, drifted), nil},
		{"deletions held", list(ready, notHeld), list(ready, held), []Event{event("Warning", held, "Reconcile")}},
		{"deletions held from the first status", nil, list(ready, held),
			[]Event{event("Normal", ready, "Reconcile"), event("Warning", held, "Reconcile")}},
		{"no deletion held from the first status: nothing to say", list(ready), list(ready, notHeld), nil},
		{"the held deletions went", list(ready, held), list(ready, notHeld), []Event{event("Normal", notHeld, "Reconcile")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, StatusEvents(tt.before, tt.after))
		})
	}
}
