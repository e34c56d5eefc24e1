package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// What a fleet of clusters needs of the Azure stand-in: a service principal per cluster, zones
// holding thousands of names without a request to Resource Manager, and the operators' own
// counts of their requests.

// AzureJSONAs writes an azure.json as AzureJSON does, but for the service principal clientID (one
// AddServicePrincipal added): each cluster of a fleet authenticates as a principal of its own, and
// Resource Manager's buckets are per principal.
func (a *AzurePrivateDNS) AzureJSONAs(subscriptionID, resourceGroup, clientID, secret string) (string, error) {
	cfg := map[string]string{}
	if err := json.Unmarshal(a.Server.AzureJSON(subscriptionID, resourceGroup), &cfg); err != nil {
		return "", err
	}
	cfg["aadClientId"], cfg["aadClientSecret"] = clientID, secret
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(a.Dir, "azure-"+resourceGroup+"-"+sanitize(clientID)+".json")
	return p, os.WriteFile(p, b, 0o600)
}

// RegistryRecord is a record set as ExternalDNS's TXT registry leaves it in a zone: the record
// (Type A or CNAME, Name relative to the zone) and its ownership record set,
// <prefix><type>-<name>, naming Owner and the DNSEndpoint Resource ("crd/<namespace>/<name>").
type RegistryRecord struct {
	Name, Type, Value, Owner, Resource string
}

// SeedRegistry writes records into a zone directly, as someone editing it in the portal would:
// no request to Resource Manager, so none of its budget. Each record gets its ownership TXT
// record set under txtPrefix with ExternalDNS's value, stored quoted as its azure-private-dns
// provider stores it.
func (a *AzurePrivateDNS) SeedRegistry(subscriptionID, resourceGroup, zone, txtPrefix string, records []RegistryRecord) error {
	for _, r := range records {
		var err error
		switch r.Type {
		case "A":
			err = a.SetA(subscriptionID, resourceGroup, zone, r.Name, r.Value)
		case "CNAME":
			err = a.SetCNAME(subscriptionID, resourceGroup, zone, r.Name, r.Value)
		default:
			err = fmt.Errorf("record %s: type %q, want A or CNAME", r.Name, r.Type)
		}
		if err != nil {
			return err
		}
		owner := fmt.Sprintf(`"heritage=external-dns,external-dns/owner=%s,external-dns/resource=%s"`, r.Owner, r.Resource)
		if err := a.SetTXT(subscriptionID, resourceGroup, zone, txtPrefix+strings.ToLower(r.Type)+"-"+r.Name, owner); err != nil {
			return err
		}
	}
	return nil
}

// ScrapeMetrics reads a Prometheus text endpoint on 127.0.0.1:port (an operator started with
// --metrics-bind-address=127.0.0.1:<port> --metrics-secure=false) and returns its samples by
// name, the labelled ones by their whole "name{labels}" text, as ExternalDNS.Metrics does.
func ScrapeMetrics(ctx context.Context, port int) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil, fmt.Errorf("GET 127.0.0.1:%d/metrics: %s", port, resp.Status)
	}
	return parseMetrics(resp.Body)
}
