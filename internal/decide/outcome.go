package decide

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// Written is what the write step of a reconcile found, as far as the owner's status is concerned.
type Written struct {
	// Kind names the generated objects for people: "DNSEndpoint", "Istio Gateway".
	Kind string
	// Owner is the kind of the object whose status reports them: "ServiceRoute", "Gateway".
	Owner string
	// Conflicts are the namespace/names of desired objects whose name a foreign object holds.
	Conflicts []string
	// HeldUntil is when the earliest deletion held back by the mass-deletion guard may proceed
	// (zero: none was held).
	HeldUntil time.Time
}

// AfterWrite adds what the write step found to the plan's outcome: a generated object whose name
// somebody else's object holds fails the owner (OwnershipConflict: the foreign object is left
// alone and nothing is published in its place); deletions held by the mass-deletion guard are
// announced in the message, the outcome otherwise standing.
func AfterWrite(o Outcome, w Written) Outcome {
	if len(w.Conflicts) > 0 {
		return Outcome{Phase: string(routingv1alpha1.PhaseFailed), Reason: routingv1alpha1.ReasonOwnershipConflict,
			Message: OwnershipConflictMessage(w.Kind, w.Conflicts, "this "+w.Owner)}
	}
	if !w.HeldUntil.IsZero() {
		o.Message += fmt.Sprintf("; the deletion of the %s(s) it no longer wants waits until %s (mass-deletion guard)", w.Kind, w.HeldUntil.UTC().Format(time.RFC3339))
	}
	return o
}

// OwnershipConflictMessage says that the objects of kind named by keys exist and are not managed
// by owner, and were left untouched.
func OwnershipConflictMessage(kind string, keys []string, owner string) string {
	if len(keys) == 1 {
		return fmt.Sprintf("%s %s exists and is not managed by %s; it was left untouched", kind, keys[0], owner)
	}
	return fmt.Sprintf("%ss %s exist and are not managed by %s; they were left untouched", kind, strings.Join(keys, ", "), owner)
}

// Event is a Kubernetes Event the operator records about an object.
type Event struct {
	// Type is "Normal" or "Warning".
	Type string
	// Reason is the reason of the condition the Event announces, so that `kubectl describe`
	// and the conditions tell the same story.
	Reason string
	// Action is what the operator did: "Reconcile", "Verify".
	Action string
	Note   string
}

const (
	eventNormal  = "Normal"
	eventWarning = "Warning"
)

// IngressConflictEvent is the Event of an entry point whose address DNSEndpoints (keys) are held
// by foreign objects. IngressDNS has no status of its own: the Event, on the oldest Gateway of
// the entry point, and the metrics are where the conflict shows.
func IngressConflictEvent(keys []string) Event {
	return Event{Type: eventWarning, Reason: routingv1alpha1.ReasonOwnershipConflict, Action: "Reconcile",
		Note: OwnershipConflictMessage("DNSEndpoint", keys, "the operator")}
}

// StatusEvents are the Events that a written status change announces, from the conditions before
// and after it:
//   - Ready: any change of status or reason; Normal when Ready, Warning otherwise.
//   - Published: a change of reason to every zone answering (Normal) or to a zone that drifted or
//     does not answer (Warning). Pending zones, expected for a moment after every change, are
//     not announced.
//   - DeletionsHeld: the mass-deletion guard starting to hold deletions (Warning) or holding none
//     any more (Normal).
//   - Drained: a change of reason (Normal), and DrainEnded when the condition goes.
func StatusEvents(before, after []metav1.Condition) []Event {
	var events []Event
	if now := meta.FindStatusCondition(after, clusterv1alpha1.ConditionReady); now != nil {
		if prev := meta.FindStatusCondition(before, clusterv1alpha1.ConditionReady); prev == nil || prev.Status != now.Status || prev.Reason != now.Reason {
			events = append(events, Event{Type: typeOf(now.Status == metav1.ConditionTrue), Reason: now.Reason, Action: "Reconcile", Note: now.Message})
		}
	}
	if now := meta.FindStatusCondition(after, routingv1alpha1.ConditionPublished); now != nil {
		prev := meta.FindStatusCondition(before, routingv1alpha1.ConditionPublished)
		changed := prev == nil || prev.Reason != now.Reason
		switch {
		case changed && now.Status == metav1.ConditionTrue:
			events = append(events, Event{Type: eventNormal, Reason: now.Reason, Action: "Verify", Note: now.Message})
		case changed && (now.Reason == routingv1alpha1.ReasonZonesDrifted || now.Reason == routingv1alpha1.ReasonZonesUnreachable):
			events = append(events, Event{Type: eventWarning, Reason: now.Reason, Action: "Verify", Note: now.Message})
		}
	}
	if now := meta.FindStatusCondition(after, clusterv1alpha1.ConditionDeletionsHeld); now != nil {
		prev := meta.FindStatusCondition(before, clusterv1alpha1.ConditionDeletionsHeld)
		if prev == nil && now.Status == metav1.ConditionTrue || prev != nil && prev.Status != now.Status {
			events = append(events, Event{Type: typeOf(now.Status != metav1.ConditionTrue), Reason: now.Reason, Action: "Reconcile", Note: now.Message})
		}
	}
	if now, prev := meta.FindStatusCondition(after, clusterv1alpha1.ConditionDrained), meta.FindStatusCondition(before, clusterv1alpha1.ConditionDrained); now != nil && (prev == nil || prev.Reason != now.Reason) {
		events = append(events, Event{Type: eventNormal, Reason: now.Reason, Action: "Drain", Note: now.Message})
	} else if now == nil && prev != nil {
		events = append(events, Event{Type: eventNormal, Reason: ReasonDrainEnded, Action: "Drain",
			Note: "the drain has ended and every name of this region's zones with failover settings is back with this cluster"})
	}
	return events
}

// ReasonDrainEnded is the Event of the Drained condition going: every name is back.
const ReasonDrainEnded = "DrainEnded"

// typeOf is the Event type of a change that is good news (Normal) or not (Warning).
func typeOf(good bool) string {
	if good {
		return eventNormal
	}
	return eventWarning
}
