package framework

import (
	"context"
	"fmt"
)

// StartRegionalZones starts one `named` per region, all serving the same domain, standing in for
// the regional private DNS zones of one domain (e.g. weu and neu copies of example.com).
func StartRegionalZones(ctx context.Context, c Cleanup, domain string, regions ...string) (map[string]*BindServer, error) {
	zones := make(map[string]*BindServer, len(regions))
	for _, region := range regions {
		b, err := StartBind(ctx, c, BindOptions{Name: region, Zone: domain})
		if err != nil {
			if c == nil {
				for _, started := range zones {
					_ = started.Stop()
				}
			}
			return nil, err
		}
		zones[region] = b
	}
	return zones, nil
}

// RegionalControllerName is the ExternalDNS controller name of a region, following the
// architecture's convention: external-dns-<region>.
func RegionalControllerName(region string) string { return "external-dns-" + region }

// StartRegionalExternalDNS starts in the cluster one ExternalDNS per zone, named and owned
// external-dns-<region> (so DNSEndpoints annotated for that controller land in that region's
// zone), with the TXT prefix txtPrefix(region) (e.g. "weu-p-aks01-"; nil for none). tweak, when
// not nil, adjusts each instance's options before it starts.
func (cl *Cluster) StartRegionalExternalDNS(ctx context.Context, c Cleanup, zones map[string]*BindServer,
	txtPrefix func(region string) string, tweak func(region string, o *ExternalDNSOptions)) (map[string]*ExternalDNS, error) {
	out := make(map[string]*ExternalDNS, len(zones))
	for region, zone := range zones {
		opts := ExternalDNSOptions{Name: RegionalControllerName(region)}.ForBind(zone)
		if txtPrefix != nil {
			opts.TXTPrefix = txtPrefix(region)
		}
		if tweak != nil {
			tweak(region, &opts)
		}
		ed, err := cl.StartExternalDNS(ctx, c, opts)
		if err != nil {
			if c == nil {
				for _, started := range out {
					_ = started.Stop()
				}
			}
			return nil, fmt.Errorf("cluster %q, region %s: %w", cl.Name, region, err)
		}
		out[region] = ed
	}
	return out, nil
}
