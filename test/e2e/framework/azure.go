package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/service-router/service-router-operator/test/azurestandin"
)

// AzurePrivateDNS is the Azure stand-in (test/azurestandin) serving the Azure Private DNS zones of
// an AKS world, with the files the processes need: the CA they trust (SSL_CERT_FILE, set for every
// process the test starts afterwards) and an azure.json per resource group.
type AzurePrivateDNS struct {
	*azurestandin.Server
	Dir string
}

// StartAzurePrivateDNS starts the stand-in and points SSL_CERT_FILE at its CA for the rest of the
// test or benchmark (ExternalDNS and the operator inherit its environment): the Azure SDK clients in
// them then trust it as they would Azure's public certificates.
func StartAzurePrivateDNS(t testing.TB) (*AzurePrivateDNS, error) {
	dir, err := newWorkDir("azure")
	if err != nil {
		return nil, err
	}
	s, err := azurestandin.Start(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	t.Cleanup(func() { _ = s.Close(); _ = os.RemoveAll(dir) })
	t.Setenv("SSL_CERT_FILE", s.CAFile)
	return &AzurePrivateDNS{Server: s, Dir: dir}, nil
}

// AzureJSON writes an azure.json for a subscription and resource group (ExternalDNS's
// --azure-config-file format, with the stand-in's endpoints and service principal) and returns
// its path.
func (a *AzurePrivateDNS) AzureJSON(subscriptionID, resourceGroup string) (string, error) {
	p := filepath.Join(a.Dir, "azure-"+resourceGroup+".json")
	return p, os.WriteFile(p, a.Server.AzureJSON(subscriptionID, resourceGroup), 0o600)
}

// Diagnostics summarises the stand-in's requests.
func (a *AzurePrivateDNS) Diagnostics() string {
	var parts []string
	for _, k := range []string{"token", "listZones", "listRecordSets", "getRecordSet", "putRecordSet", "deleteRecordSet", "throttled", "unauthorized"} {
		parts = append(parts, fmt.Sprintf("%s=%d", k, a.Count(k)))
	}
	return "--- Azure stand-in " + a.URL + " requests: " + strings.Join(parts, " ")
}

// AzureLocalArgs returns the arguments for an ExternalDNS process on this machine writing into
// the Azure stand-in: every argument the chart gave, the provider (azure-private-dns) and its
// --azure-subscription-id and --azure-resource-group included, plus --azure-config-file naming a
// local azure.json instead of the Secret the chart mounts at /etc/kubernetes (which holds the
// user's own credentials in a cluster). The framework adds --kubeconfig and --metrics-address.
func (x *ExternalDNSExample) AzureLocalArgs(azureConfigFile string) []string {
	args := slices.DeleteFunc(slices.Clone(x.ChartArgs), func(a string) bool { return strings.HasPrefix(a, "--azure-config-file=") })
	return append(args, "--azure-config-file="+azureConfigFile)
}
