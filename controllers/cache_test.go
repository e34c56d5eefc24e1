package controllers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	externaldnsv1alpha1 "sigs.k8s.io/external-dns/apis/v1alpha1"
	"sigs.k8s.io/external-dns/endpoint"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

func TestTrimForCache_DropsOnlyWhatTheOperatorNeverReads(t *testing.T) {
	meta := func() metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "api", Namespace: "app", Labels: map[string]string{"team": "a"},
			Annotations:   map[string]string{lastAppliedAnnotation: `{"big":"copy"}`, "owner": "team-a"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
	}
	route := &routingv1alpha1.ServiceRoute{ObjectMeta: meta(), Spec: routingv1alpha1.ServiceRouteSpec{GatewayName: "gw", Environment: "dev"},
		Status: routingv1alpha1.ServiceRouteStatus{Phase: "Active", Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "ReconciliationSucceeded"}}}}
	want := route.DeepCopy()
	want.ManagedFields = nil
	delete(want.Annotations, lastAppliedAnnotation)
	_, err := trimForCache(route)
	assert.NoError(t, err)
	assert.Equal(t, want, route, "everything else is kept as it was")

	onlyLastApplied := &routingv1alpha1.ServiceRoute{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{lastAppliedAnnotation: "{}"}}}
	_, _ = trimForCache(onlyLastApplied)
	assert.Nil(t, onlyLastApplied.Annotations)

	// Generated objects are updated whole from their cached copy: their annotations all stay.
	ep := &externaldnsv1alpha1.DNSEndpoint{ObjectMeta: meta(), Spec: externaldnsv1alpha1.DNSEndpointSpec{
		Endpoints: []*endpoint.Endpoint{{DNSName: "a.example.com", RecordType: "CNAME", Targets: endpoint.Targets{"t.example.com"}}}}}
	wantEP := ep.DeepCopy()
	wantEP.ManagedFields = nil
	_, err = trimGenerated(ep)
	assert.NoError(t, err)
	assert.Equal(t, wantEP, ep)
}
