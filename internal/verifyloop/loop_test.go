package verifyloop

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/prober"
	"github.com/service-router/service-router-operator/internal/zoneconfig"
)

// The prober's zones are the DNSConfiguration's zones with verification settings, each asked as
// they say: its name servers (authoritative) or resolvers (recursive), listed by transfer or
// through Resource Manager, with their timeout and listing interval or the prober's defaults.
func TestZonesOf(t *testing.T) {
	azure := &clusterv1alpha1.AzurePrivateDNSVerification{SubscriptionID: "sub", ResourceGroup: "rg", ZoneName: "example.internal"}
	tests := []struct {
		name        string
		controllers []clusterv1alpha1.ExternalDNSController
		want        []prober.Zone
	}{
		{"no verification settings: no zone", []clusterv1alpha1.ExternalDNSController{{Name: "a"}}, nil},
		{"name servers, transferred, with a timeout",
			[]clusterv1alpha1.ExternalDNSController{{Name: "a", Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{"10.0.0.53:53"},
				TransferZone: "example.com", Timeout: &metav1.Duration{Duration: time.Second}}}},
			[]prober.Zone{{Controller: "a", Nameservers: []string{"10.0.0.53:53"}, TransferZone: "example.com", Timeout: time.Second}}},
		{"resolvers: asked recursively",
			[]clusterv1alpha1.ExternalDNSController{{Name: "a", Verification: &clusterv1alpha1.ZoneVerification{Resolvers: []string{"10.0.0.10:53"}}}},
			[]prober.Zone{{Controller: "a", Nameservers: []string{"10.0.0.10:53"}, Recursive: true, Timeout: prober.DefaultTimeout}}},
		{"Azure Private DNS: listed at its interval, or the default",
			[]clusterv1alpha1.ExternalDNSController{
				{Name: "a", Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: azure}},
				{Name: "b", Verification: &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &clusterv1alpha1.AzurePrivateDNSVerification{
					SubscriptionID: "sub", ResourceGroup: "rg", ZoneName: "example.internal", Interval: &metav1.Duration{Duration: time.Hour}}}}},
			[]prober.Zone{{Controller: "a", Timeout: prober.DefaultTimeout, Azure: zoneconfig.AzureZone(azure), ListInterval: prober.DefaultListInterval},
				{Controller: "b", Timeout: prober.DefaultTimeout, Azure: zoneconfig.AzureZone(azure), ListInterval: time.Hour}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &clusterv1alpha1.DNSConfiguration{Spec: clusterv1alpha1.DNSConfigurationSpec{ExternalDNSControllers: tt.controllers}}
			assert.Equal(t, tt.want, zonesOf(cfg))
		})
	}
	assert.Nil(t, zonesOf(nil), "no DNSConfiguration: no zone")
}
