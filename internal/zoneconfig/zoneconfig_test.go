package zoneconfig

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/azureprivatedns"
)

// An Azure zone is the verification's settings, with the client's page size and timeout where
// they are left out.
func TestAzureZone(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   clusterv1alpha1.AzurePrivateDNSVerification
		want azureprivatedns.Zone
	}{
		{"defaults", clusterv1alpha1.AzurePrivateDNSVerification{SubscriptionID: "sub", ResourceGroup: "rg", ZoneName: "example.com"},
			azureprivatedns.Zone{SubscriptionID: "sub", ResourceGroup: "rg", ZoneName: "example.com",
				PageSize: azureprivatedns.DefaultPageSize, Timeout: azureprivatedns.DefaultTimeout}},
		{"everything set", clusterv1alpha1.AzurePrivateDNSVerification{SubscriptionID: "sub", ResourceGroup: "rg", ZoneName: "example.com",
			ConfigFile: "/etc/azure.json", ResourceManagerEndpoint: "https://rm", ActiveDirectoryAuthorityHost: "https://aad",
			PageSize: ptr.To[int32](50), Timeout: &metav1.Duration{Duration: 5 * time.Second}},
			azureprivatedns.Zone{SubscriptionID: "sub", ResourceGroup: "rg", ZoneName: "example.com", ConfigFile: "/etc/azure.json",
				ResourceManagerEndpoint: "https://rm", ActiveDirectoryAuthorityHost: "https://aad", PageSize: 50, Timeout: 5 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, *AzureZone(&tc.in))
		})
	}
}
