package ownwrite

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// The status patch is computed from the two statuses alone; applied to the whole object it must
// give exactly the new status, with the rest of the object untouched, and carry the lock.
func TestStatusMergePatch_TurnsTheOldStatusIntoTheNewOne(t *testing.T) {
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "ReconciliationSucceeded", Message: "published"}
	tests := []struct {
		name          string
		before, after routingv1alpha1.ServiceRouteStatus
		wantPatch     string
	}{
		{
			name:      "first status",
			after:     routingv1alpha1.ServiceRouteStatus{Phase: "Active", Hostname: "api.example.com", Conditions: []metav1.Condition{ready}},
			wantPatch: `{"metadata":{"resourceVersion":"7"},"status":{"conditions":[{"lastTransitionTime":null,"message":"published","reason":"ReconciliationSucceeded","status":"True","type":"Ready"}],"hostname":"api.example.com","phase":"Active"}}`,
		},
		{
			name:      "a field that went is removed, unchanged ones are not sent",
			before:    routingv1alpha1.ServiceRouteStatus{Phase: "Active", Hostname: "api.example.com", TargetHostname: "aks01.example.com"},
			after:     routingv1alpha1.ServiceRouteStatus{Phase: "Active", Hostname: "api.example.com"},
			wantPatch: `{"metadata":{"resourceVersion":"7"},"status":{"targetHostname":null}}`,
		},
		{
			name:      "no change: only the lock",
			before:    routingv1alpha1.ServiceRouteStatus{Phase: "Active"},
			after:     routingv1alpha1.ServiceRouteStatus{Phase: "Active"},
			wantPatch: `{"metadata":{"resourceVersion":"7"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			patch, err := statusMergePatch(&tt.before, &tt.after, "7")
			require.NoError(t, err)
			assert.JSONEq(t, tt.wantPatch, string(patch))

			route := routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"team": "a"}},
				Spec: routingv1alpha1.ServiceRouteSpec{ServiceName: "api", GatewayName: "gw", Environment: "dev", Application: "app"}, Status: tt.before}
			whole, err := json.Marshal(route)
			require.NoError(t, err)
			patched, err := jsonpatch.MergePatch(whole, patch)
			require.NoError(t, err)
			var got routingv1alpha1.ServiceRoute
			require.NoError(t, json.Unmarshal(patched, &got))
			want := route
			want.Status = tt.after
			assert.Equal(t, want, got)
		})
	}
}
