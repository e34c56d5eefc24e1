package v1alpha1

// ConditionReady is the condition every cluster.router.io object carries: True once the object has
// been validated and its values are in use by the other controllers.
const ConditionReady = "Ready"

// ConditionReconciling and ConditionStalled are the conditions kstatus-based tools (Flux,
// cli-utils appliers) and the project's Argo CD health check read beside Ready, present only
// while True (removed when Ready is True): Reconciling while the operator waits for something
// expected to appear or retries an error (kstatus InProgress), Stalled while nothing changes until
// a person does (kstatus Failed). Both carry the Ready condition's reason and message.
const (
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Phase is the coarse lifecycle state shown in `kubectl get`.
// +kubebuilder:validation:Enum=Pending;Active;Failed
type Phase string

const (
	// PhasePending means the object has not been reconciled yet.
	PhasePending Phase = "Pending"
	// PhaseActive means the object is valid and in use.
	PhaseActive Phase = "Active"
	// PhaseFailed means the object is invalid; the Ready condition says why.
	PhaseFailed Phase = "Failed"
)

// Singleton names. Admission rejects any other name, so every controller can fetch these objects
// by name instead of listing.
const (
	ClusterIdentityName  = "cluster-identity"
	DNSConfigurationName = "dns-config"
)

// Reasons of the Ready condition (and of the Events emitted with it).
const (
	// ReasonValidationSucceeded: the ClusterIdentity is consistent with the DNSConfiguration.
	ReasonValidationSucceeded = "ValidationSucceeded"
	// ReasonDNSConfigurationNotFound: the dns-config DNSConfiguration does not exist, so no
	// DNSPolicy can activate a controller.
	ReasonDNSConfigurationNotFound = "DNSConfigurationNotFound"
	// ReasonRegionWithoutController: no ExternalDNS controller serves the cluster's own region, so
	// Active DNSPolicies publish nothing.
	ReasonRegionWithoutController = "RegionWithoutController"
	// ReasonAdoptedRegionWithoutController: an adopted region has no ExternalDNS controller, so
	// its zone gets no records.
	ReasonAdoptedRegionWithoutController = "AdoptedRegionWithoutController"
	// ReasonTargetHostnameTooLong: cluster and region leave no room in a 63-character DNS label
	// for the gateway target hostname {cluster}-{region}-{targetPostfix}.
	ReasonTargetHostnameTooLong = "TargetHostnameTooLong"
	// ReasonConfigurationValid: the DNSConfiguration is valid and in use.
	ReasonConfigurationValid = "ConfigurationValid"
	// ReasonExternalDNSNotInstalled: the DNSEndpoint API (externaldns.k8s.io/v1alpha1) is not
	// served, so no DNS record can be written; existing ones are kept and publishing starts when
	// the CRD is installed.
	ReasonExternalDNSNotInstalled = "ExternalDNSNotInstalled"
	// ReasonReconcileError: the last reconcile failed (the message says why); the status
	// otherwise still describes the generation in status.observedGeneration.
	ReasonReconcileError = "ReconcileError"
)

// ConditionDeletionsHeld is the DNSConfiguration condition of the mass-deletion guard: True
// while deletions of DNS records wait for their grace period.
const ConditionDeletionsHeld = "DeletionsHeld"

// Reasons of the DeletionsHeld condition.
const (
	// ReasonMassDeletionHeld: one change asked for more records to go than the guard allows at
	// once; they wait for the grace period, and reverting the change keeps them.
	ReasonMassDeletionHeld = "MassDeletionHeld"
	// ReasonNoDeletionsHeld: nothing waits.
	ReasonNoDeletionsHeld = "NoDeletionsHeld"
)

// ConditionOverRequestBudget is the DNSConfiguration condition of the Azure Resource Manager
// request budget: True when the requests this cluster plans to send to the zones read through
// Resource Manager (verification and failover, internal/budget), in one subscription, exceed the
// cluster's share of what Resource Manager allows; False otherwise, also without such zones.
const ConditionOverRequestBudget = "OverRequestBudget"

// Reasons of the OverRequestBudget condition.
const (
	// ReasonRequestBudgetExceeded: in a subscription, the planned reads or writes a minute exceed
	// the cluster's share; the message names the rate, the share and the setting to change.
	ReasonRequestBudgetExceeded = "RequestBudgetExceeded"
	// ReasonWithinRequestBudget: every subscription's planned rates are within the share (or no
	// zone is read through Resource Manager).
	ReasonWithinRequestBudget = "WithinRequestBudget"
)

// ConditionDrained is the DNSConfiguration condition of a drain of this cluster's region
// (spec.failover.drain): True while the drain is asked for, False while, the drain ended, names of
// the region's zones are still with a stand-in; absent otherwise.
const ConditionDrained = "Drained"

// Reasons of the Drained condition.
const (
	// ReasonDrainInProgress: drain asked for; some of the region's names still point here (or
	// the zones have not been read yet).
	ReasonDrainInProgress = "DrainInProgress"
	// ReasonDrainComplete: drain asked for; every name of the region's zones is with a stand-in.
	ReasonDrainComplete = "DrainComplete"
	// ReasonNamesReturning: the drain ended; names of the region's zones are still with a
	// stand-in, and come back as soon as this cluster may take them.
	ReasonNamesReturning = "NamesReturning"
)
