package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ZoneState is what a regional DNS zone answers for a record the operator published, as the
// operator found it by asking the zone's name servers (or a resolver serving it) or, for an Azure
// Private DNS zone, by reading it through Azure Resource Manager.
// +kubebuilder:validation:Enum=Published;Pending;Drifted;Unreachable;Unverified
type ZoneState string

const (
	// ZonePublished: the zone answers exactly what the operator published (for a route: the CNAME
	// to the gateway target hostname, and that name's address records from the same zone).
	ZonePublished ZoneState = "Published"
	// ZonePending: the zone does not answer the name yet (NXDOMAIN or no such record), or it
	// has not been checked since the record changed. Expected for a moment after every change,
	// until ExternalDNS's next synchronization.
	ZonePending ZoneState = "Pending"
	// ZoneDrifted: the zone answers something else (another target, another address): someone
	// or something changed the zone behind ExternalDNS, or another cluster owns the name.
	ZoneDrifted ZoneState = "Drifted"
	// ZoneUnreachable: the zone could not be asked or read three checks in a row: its name servers
	// did not answer (timeouts, refused, SERVFAIL), or Resource Manager refused the listing
	// (throttled with 429, 403, 404, authentication).
	ZoneUnreachable ZoneState = "Unreachable"
	// ZoneUnverified: the DNSConfiguration has no verification settings for the zone's
	// controller; only whether ExternalDNS has processed the record is known.
	ZoneUnverified ZoneState = "Unverified"
)

// ZoneStatus is the publication state of an object's records in one regional DNS zone (one
// ExternalDNS controller).
type ZoneStatus struct {
	// controller is the ExternalDNS controller that publishes into the zone.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Controller string `json:"controller"`

	// region is that controller's region.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Region string `json:"region,omitempty"`

	// state is what the zone answers: Published, Pending, Drifted, Unreachable, or Unverified
	// when the zone's controller has no verification settings.
	// +required
	State ZoneState `json:"state"`

	// answer is what the zone answered, for example
	// "CNAME aks01-weu-internal.example.com. → A 10.1.2.3", "NXDOMAIN" or
	// "no answer from 10.0.0.53:53 (timeout)".
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Answer string `json:"answer,omitempty"`

	// lastChecked is when the check that found the current state and answer ran. It changes
	// only when the state or the answer changes: settled zones are checked again every few
	// minutes without rewriting it, so that a settled system writes no status at all.
	// +optional
	LastChecked *metav1.Time `json:"lastChecked,omitempty"`

	// processed is true when ExternalDNS has read the current version of the DNSEndpoint for
	// this zone (its status.observedGeneration equals its metadata.generation). ExternalDNS
	// records this when a synchronization reads the object, before it writes the zone.
	// +optional
	Processed bool `json:"processed"`
}

// ConditionPublished is the condition ServiceRoutes and Gateways carry next to Ready: True when
// every zone the object publishes into answers what the operator published. Ready says the
// DNSEndpoints are written; Published says the zones serve them.
const ConditionPublished = "Published"

// Reasons of the Published condition.
const (
	// ReasonZonesPublished: every zone answers correctly (Published=True).
	ReasonZonesPublished = "ZonesPublished"
	// ReasonZonesPending: at least one zone does not answer the record yet (Published=False).
	ReasonZonesPending = "ZonesPending"
	// ReasonZonesDrifted: at least one zone answers something else (Published=False).
	ReasonZonesDrifted = "ZonesDrifted"
	// ReasonZonesUnreachable: at least one zone could not be asked or read (Published=False).
	ReasonZonesUnreachable = "ZonesUnreachable"
	// ReasonVerificationNotConfigured: the verified zones answer correctly, but at least one zone
	// has no verification settings, so whether it serves the record is not known
	// (Published=Unknown).
	ReasonVerificationNotConfigured = "VerificationNotConfigured"
	// ReasonNothingPublished: the object has no DNS record to publish in any zone
	// (Published=False); Ready says why.
	ReasonNothingPublished = "NothingPublished"
)
