package decide

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
	"github.com/service-router/service-router-operator/internal/verify"
)

func TestZoneVerification_CountsEachVerifiedZoneInOrder(t *testing.T) {
	verified := &clusterv1alpha1.ZoneVerification{Nameservers: []string{"10.0.0.53:53"}, Timeout: &metav1.Duration{Duration: time.Second}}
	cfg := &clusterv1alpha1.DNSConfiguration{Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
		{Name: "external-dns-weu", Region: "weu", Verification: verified},
		{Name: "external-dns-neu", Region: "neu"},
		{Name: "external-dns-frc", Region: "frc", Verification: verified},
	}}}
	counts := map[string]verify.ZoneCounts{
		"external-dns-weu": {routingv1alpha1.ZonePublished: 120, routingv1alpha1.ZoneDrifted: 2, routingv1alpha1.ZonePending: 1},
		"external-dns-neu": {routingv1alpha1.ZonePublished: 9}, // not verified: not reported
	}
	zones, summary := ZoneVerification(cfg, func(c string) verify.ZoneCounts { return counts[c] })
	assert.Equal(t, []clusterv1alpha1.ZoneVerificationStatus{
		{Controller: "external-dns-weu", Routes: 123, Published: 120, Pending: 1, Drifted: 2},
		{Controller: "external-dns-frc"},
	}, zones)
	assert.Equal(t, "external-dns-weu 120/123 published, 2 drifted, 1 pending; external-dns-neu unverified; external-dns-frc 0/0 published", summary)

	zones, summary = ZoneVerification(nil, nil)
	assert.Nil(t, zones)
	assert.Empty(t, summary, "no configuration: nothing to say")
}
