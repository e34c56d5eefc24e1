package packaging

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The application admission policy is opt-in: a cluster without it still has the operator's
// enforcement, and installing it must be a decision (it rejects applies).
func TestChart_ApplicationPolicyIsOptIn(t *testing.T) {
	objs := renderChart(t)
	require.Empty(t, objectsOfKind(objs, "ValidatingAdmissionPolicy"))
	require.Empty(t, objectsOfKind(objs, "ValidatingAdmissionPolicyBinding"))
}

// The chart's policy is config/admission's (the one the integration tests install on a real API
// server), named after the release.
func TestChart_ApplicationPolicyIsTheConfigOne(t *testing.T) {
	rendered := renderChart(t, "--set", "admissionPolicy.applications.enabled=true")
	const name = releaseName + "-applications"
	configured := readObjects(t, "config", "admission", "application_policy.yaml")
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		want := findObject(t, configured, kind, "service-router-operator-applications")
		got := findObject(t, rendered, kind, name)
		require.Equal(t, want.Object["spec"], got.Object["spec"], "%s of the chart differs from config/admission/application_policy.yaml", kind)
	}
}
