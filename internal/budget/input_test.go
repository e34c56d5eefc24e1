package budget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
)

func TestInputOf_TheZonesReadThroughResourceManager(t *testing.T) {
	azure := func(sub string, interval *metav1.Duration, pageSize *int32) *clusterv1alpha1.ZoneVerification {
		return &clusterv1alpha1.ZoneVerification{AzurePrivateDNS: &clusterv1alpha1.AzurePrivateDNSVerification{SubscriptionID: sub, ResourceGroup: "rg",
			ZoneName: "example.internal", Interval: interval, PageSize: pageSize}}
	}
	cfg := &clusterv1alpha1.DNSConfiguration{Spec: clusterv1alpha1.DNSConfigurationSpec{
		Failover: &clusterv1alpha1.FailoverSettings{ProbeInterval: &metav1.Duration{Duration: 2 * time.Second}, HeartbeatStaleAfter: &metav1.Duration{Duration: time.Minute}},
		ExternalDNSControllers: []clusterv1alpha1.ExternalDNSController{
			{Name: "weu", Region: "weu", Verification: azure("00000000-0000-0000-0000-00000000000A", nil, nil), Failover: &clusterv1alpha1.ZoneFailover{OwnerID: "o"}},
			{Name: "bind", Region: "lab", Verification: &clusterv1alpha1.ZoneVerification{Nameservers: []string{"10.0.0.53:53"}}},
			{Name: "neu", Region: "neu", Verification: azure(subB, &metav1.Duration{Duration: time.Minute}, ptr.To[int32](200))},
			{Name: "frc", Region: "frc"},
		}}}
	names := map[string]int{"weu": 3000}
	in := InputOf(cfg, func(c string) (int, bool) { n, ok := names[c]; return n, ok })
	assert.Equal(t, Input{
		Failover: FailoverSettings{ProbeInterval: 2 * time.Second, HeartbeatInterval: DefaultHeartbeatInterval, HeartbeatStaleAfter: time.Minute},
		Zones: []Zone{
			{Controller: "weu", SubscriptionID: subA, Failover: true, Interval: DefaultInterval, PageSize: DefaultPageSize, RecordSets: 6000},
			{Controller: "neu", SubscriptionID: subB, Interval: time.Minute, PageSize: 200, RecordSets: UnknownRecordSets},
		},
	}, in)

	assert.Equal(t, Input{Failover: DefaultFailoverSettings()}, InputOf(nil, nil))
	assert.Equal(t, FailoverSettings{ProbeInterval: 5 * time.Second, HeartbeatInterval: 10 * time.Second, HeartbeatStaleAfter: 30 * time.Second}, DefaultFailoverSettings())
}
