// Package azureprivatedns reads an Azure Private DNS zone through Azure Resource Manager for
// publication verification: one paged listing of the zone's record sets (armprivatedns, the
// client ExternalDNS's azure-private-dns provider uses) turned into a verify.Listing, with the
// credentials ExternalDNS takes (an azure.json, or Azure Workload Identity).
//
// Why not ExternalDNS's provider itself (sigs.k8s.io/external-dns/provider/azure): its config and
// credential functions are unexported, its constructor takes only a file path (no transport for
// a private CA, no way to turn the SDK's own 429 retries off), its Records() formats the SDK error
// with %v, so the Retry-After of a 429 is lost, and it lists with the default page size of 100
// (250 requests for a full zone instead of 25). Linking it would also cost: the static, stripped
// bin/manager measured 35.6 MB without Azure code, 36.5 MB with this package (+2.7 %), and 46.8 MB
// with ExternalDNS's provider/azure package linked as well (its provider framework, logrus,
// armdns). This package keeps its azure.json format and the order in which it picks a credential,
// on the same SDK modules and versions (armprivatedns v1.3.0, azidentity v1.14.0, azcore v1.23.0).
package azureprivatedns

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// Zone is one zone to read and how, from the DNSConfiguration's verification.azurePrivateDNS.
type Zone struct {
	SubscriptionID, ResourceGroup, ZoneName string
	// ConfigFile is an azure.json; empty: Azure Workload Identity from the environment.
	ConfigFile string
	// ResourceManagerEndpoint and ActiveDirectoryAuthorityHost override the azure.json's.
	ResourceManagerEndpoint, ActiveDirectoryAuthorityHost string
	// PageSize is the $top of each request of the listing.
	PageSize int32
	// Timeout bounds each request.
	Timeout time.Duration
}

// DefaultPageSize is the most record sets Resource Manager returns in one page ($top 1 to 1000;
// without $top, 100).
const DefaultPageSize = 1000

// DefaultTimeout bounds one request of a listing.
const DefaultTimeout = 30 * time.Second

// Config is an azure.json in the format ExternalDNS's Azure providers read
// (--azure-config-file).
type Config struct {
	Cloud                        string `json:"cloud"`
	TenantID                     string `json:"tenantId"`
	SubscriptionID               string `json:"subscriptionId"`
	ResourceGroup                string `json:"resourceGroup"`
	ClientID                     string `json:"aadClientId"`
	ClientSecret                 string `json:"aadClientSecret"`
	UseManagedIdentityExtension  bool   `json:"useManagedIdentityExtension"`
	UseWorkloadIdentityExtension bool   `json:"useWorkloadIdentityExtension"`
	UserAssignedIdentityID       string `json:"userAssignedIdentityID"`
	ActiveDirectoryAuthorityHost string `json:"activeDirectoryAuthorityHost"`
	ResourceManagerAudience      string `json:"resourceManagerAudience"`
	ResourceManagerEndpoint      string `json:"resourceManagerEndpoint"`
}

// ConfigOf is the configuration a zone is read with: the azure.json (contents of z.ConfigFile;
// nil without one, which means Azure Workload Identity) with the zone's settings over it.
func ConfigOf(z Zone, azureJSON []byte) (Config, error) {
	var cfg Config
	if azureJSON == nil {
		cfg.UseWorkloadIdentityExtension = true
	} else if err := json.Unmarshal(azureJSON, &cfg); err != nil {
		return Config{}, fmt.Errorf("parsing %s: %w", z.ConfigFile, err)
	}
	cfg.SubscriptionID, cfg.ResourceGroup = z.SubscriptionID, z.ResourceGroup
	if z.ResourceManagerEndpoint != "" {
		cfg.Cloud, cfg.ResourceManagerEndpoint = "AzureStackCloud", z.ResourceManagerEndpoint
	}
	if z.ActiveDirectoryAuthorityHost != "" {
		cfg.ActiveDirectoryAuthorityHost = z.ActiveDirectoryAuthorityHost
	}
	return cfg, nil
}

// CloudOf is the cloud a configuration names, as ExternalDNS reads it: the public cloud by
// default, the US government and China clouds by name, AzureStackCloud with the endpoints given
// (the token audience defaulting to the Resource Manager endpoint).
func CloudOf(cfg Config) (cloud.Configuration, error) {
	var out cloud.Configuration
	switch strings.ToUpper(cfg.Cloud) {
	case "", "AZURECLOUD", "AZUREPUBLICCLOUD":
		out = cloud.AzurePublic
	case "AZUREUSGOVERNMENT", "AZUREUSGOVERNMENTCLOUD":
		out = cloud.AzureGovernment
	case "AZURECHINACLOUD":
		out = cloud.AzureChina
	case "AZURESTACKCLOUD":
		if cfg.ResourceManagerEndpoint == "" || cfg.ActiveDirectoryAuthorityHost == "" {
			return cloud.Configuration{}, errors.New("cloud AzureStackCloud needs resourceManagerEndpoint and activeDirectoryAuthorityHost")
		}
		audience := cfg.ResourceManagerAudience
		if audience == "" {
			audience = cfg.ResourceManagerEndpoint
		}
		return cloud.Configuration{ActiveDirectoryAuthorityHost: cfg.ActiveDirectoryAuthorityHost,
			Services: map[cloud.ServiceName]cloud.ServiceConfiguration{cloud.ResourceManager: {Audience: audience, Endpoint: cfg.ResourceManagerEndpoint}}}, nil
	default:
		return cloud.Configuration{}, fmt.Errorf("unknown cloud %q (AzurePublicCloud, AzureUSGovernmentCloud, AzureChinaCloud or AzureStackCloud)", cfg.Cloud)
	}
	if cfg.ActiveDirectoryAuthorityHost != "" {
		out.ActiveDirectoryAuthorityHost = cfg.ActiveDirectoryAuthorityHost
	}
	return out, nil
}

// CredentialKind says which credential a configuration selects, in ExternalDNS's order: a
// service principal's secret (unless the historical placeholder "msi"), then workload identity,
// then a managed identity.
func CredentialKind(cfg Config) (string, error) {
	switch {
	case cfg.ClientID != "" && cfg.ClientSecret != "" && !strings.EqualFold(cfg.ClientID, "msi") && !strings.EqualFold(cfg.ClientSecret, "msi"):
		return "clientSecret", nil
	case cfg.UseWorkloadIdentityExtension:
		return "workloadIdentity", nil
	case cfg.UseManagedIdentityExtension:
		return "managedIdentity", nil
	}
	return "", errors.New("the azure.json names no credentials (aadClientId and aadClientSecret, useWorkloadIdentityExtension or useManagedIdentityExtension)")
}

// retryableStatus are the statuses the SDK retries by itself (a few times, quickly). Not 429:
// a throttled listing is reported and waited for by the caller, for as long as Retry-After says.
var retryableStatus = []int{http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout}

// clientOptions are the options of every client and credential of a zone; transport is nil
// except in tests.
func clientOptions(c cloud.Configuration, transport policy.Transporter) azcore.ClientOptions {
	o := azcore.ClientOptions{
		Cloud:     c,
		Retry:     policy.RetryOptions{MaxRetries: 2, RetryDelay: time.Second, MaxRetryDelay: 10 * time.Second, StatusCodes: retryableStatus},
		Telemetry: policy.TelemetryOptions{ApplicationID: "service-router-operator"},
	}
	if transport != nil {
		o.Transport = transport
	}
	return o
}

// credential builds the credential a configuration selects.
func credential(cfg Config, o azcore.ClientOptions) (azcore.TokenCredential, error) {
	kind, err := CredentialKind(cfg)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "clientSecret":
		return azidentity.NewClientSecretCredential(cfg.TenantID, cfg.ClientID, cfg.ClientSecret, &azidentity.ClientSecretCredentialOptions{ClientOptions: o})
	case "workloadIdentity":
		// Client and tenant IDs from the azure.json when it has them, else from the environment
		// the workload identity webhook sets (AZURE_CLIENT_ID, AZURE_TENANT_ID).
		return azidentity.NewWorkloadIdentityCredential(&azidentity.WorkloadIdentityCredentialOptions{ClientOptions: o, TenantID: cfg.TenantID, ClientID: cfg.ClientID})
	default:
		mo := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: o}
		if cfg.UserAssignedIdentityID != "" {
			mo.ID = azidentity.ClientID(cfg.UserAssignedIdentityID)
		}
		return azidentity.NewManagedIdentityCredential(mo)
	}
}

// armOptions are the Resource Manager client options: no resource provider registration (the
// reader may only read).
func armOptions(o azcore.ClientOptions) *arm.ClientOptions {
	return &arm.ClientOptions{ClientOptions: o, DisableRPRegistration: true}
}

// readConfig reads the zone's azure.json, nil without one.
func readConfig(z Zone) ([]byte, error) {
	if z.ConfigFile == "" {
		return nil, nil
	}
	b, err := os.ReadFile(z.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("reading the azure.json: %w", err)
	}
	return b, nil
}
