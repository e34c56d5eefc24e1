package v1alpha1

// ConditionReady is the condition every routing.router.io object carries: True once everything
// the object asks for has been generated.
const ConditionReady = "Ready"

// Phase is the coarse lifecycle state shown in `kubectl get`. Inactive is used only by
// DNSPolicy: the policy is valid but does not apply to this cluster.
// +kubebuilder:validation:Enum=Pending;Active;Failed;Inactive
type Phase string

const (
	// PhasePending means the object waits for something it depends on; the Ready condition says what.
	PhasePending Phase = "Pending"
	// PhaseActive means everything the object asks for exists.
	PhaseActive Phase = "Active"
	// PhaseFailed means the object cannot be served as written; the Ready condition says why.
	PhaseFailed Phase = "Failed"
	// PhaseInactive means a DNSPolicy does not apply to this cluster.
	PhaseInactive Phase = "Inactive"
)

// DefaultGatewayNamespace is where a ServiceRoute looks for its Gateway when gatewayNamespace is
// not set.
const DefaultGatewayNamespace = "istio-system"
