// Package zoneconfig turns a zone's settings in the DNSConfiguration into the settings of the
// clients that read and write it, so that every reader of a zone reads the same zone: publication
// verification's prober (internal/verifyloop), regional failover's loop
// (internal/failoverloop, whose whole readings verification's listings stand in for) and the
// DNSConfiguration's request figures (controllers/dnsconfiguration_controller_budget.go). Pure.
package zoneconfig

import (
	clusterv1alpha1 "github.com/service-router/service-router-operator/apis/cluster/v1alpha1"
	"github.com/service-router/service-router-operator/internal/azureprivatedns"
)

// AzureZone is how an Azure Private DNS zone is read and written: the verification's settings,
// with azureprivatedns' page size and request timeout where they leave them out.
func AzureZone(a *clusterv1alpha1.AzurePrivateDNSVerification) *azureprivatedns.Zone {
	z := &azureprivatedns.Zone{SubscriptionID: a.SubscriptionID, ResourceGroup: a.ResourceGroup, ZoneName: a.ZoneName, ConfigFile: a.ConfigFile,
		ResourceManagerEndpoint: a.ResourceManagerEndpoint, ActiveDirectoryAuthorityHost: a.ActiveDirectoryAuthorityHost,
		PageSize: azureprivatedns.DefaultPageSize, Timeout: azureprivatedns.DefaultTimeout}
	if a.PageSize != nil {
		z.PageSize = *a.PageSize
	}
	if a.Timeout != nil {
		z.Timeout = a.Timeout.Duration
	}
	return z
}
