package zonewriter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/failover"
)

// AzurePrivateDNS writes into an Azure Private DNS zone through Resource Manager, with the zone's
// configuration and credentials as publication verification reads it; the credentials need the
// Private DNS Zone Contributor role on the zone (Reader is enough only for verification).
type AzurePrivateDNS struct {
	zone    azureprivatedns.Zone
	records *armprivatedns.RecordSetsClient
}

// NewAzurePrivateDNS builds the writer of a zone; transport is nil except in tests.
func NewAzurePrivateDNS(z azureprivatedns.Zone, transport policy.Transporter) (*AzurePrivateDNS, error) {
	records, err := azureprivatedns.RecordSets(z, transport)
	if err != nil {
		return nil, err
	}
	return &AzurePrivateDNS{zone: z, records: records}, nil
}

// WriteHeartbeat replaces the cluster's heartbeat record set in the zone with value
// (failover.HeartbeatValue).
func (w *AzurePrivateDNS) WriteHeartbeat(ctx context.Context, cluster, region, value string) error {
	name := w.relative(failover.HeartbeatName(cluster, region, w.zone.ZoneName))
	_, err := w.records.CreateOrUpdate(ctx, w.zone.ResourceGroup, w.zone.ZoneName, armprivatedns.RecordTypeTXT, name,
		armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{TTL: to.Ptr[int64](heartbeatTTL), TxtRecords: txtRecords(value)}}, nil)
	if err != nil {
		return fmt.Errorf("writing the heartbeat %s in zone %s: %w", name, w.zone.ZoneName, err)
	}
	return nil
}

// RemoveLegacyHeartbeat deletes the cluster's heartbeat under the name earlier development builds wrote
// (failover.LegacyHeartbeatName), once it writes failover.HeartbeatName: the one record set of the
// zone this cluster alone writes. Deleting what is not there is no error.
func (w *AzurePrivateDNS) RemoveLegacyHeartbeat(ctx context.Context, cluster, region string) error {
	name := w.relative(failover.LegacyHeartbeatName(cluster, region, w.zone.ZoneName))
	if _, err := w.records.Delete(ctx, w.zone.ResourceGroup, w.zone.ZoneName, armprivatedns.RecordTypeTXT, name, nil); err != nil {
		return fmt.Errorf("removing the earlier heartbeat %s in zone %s: %w", name, w.zone.ZoneName, err)
	}
	return nil
}

// PassOwnership replaces the ownership TXT value old of name (relative to the zone or fully
// qualified) by new, keeping the record set's TTL, on the condition that the record set holds
// exactly old and has not changed since it was read (If-Match on its ETag): of two clusters
// passing the same record, only the first succeeds; the second gets ErrChanged.
func (w *AzurePrivateDNS) PassOwnership(ctx context.Context, name, old, new string) error {
	name = w.relative(name)
	current, err := w.records.Get(ctx, w.zone.ResourceGroup, w.zone.ZoneName, armprivatedns.RecordTypeTXT, name, nil)
	var re *azcore.ResponseError
	switch {
	case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
		return fmt.Errorf("passing the ownership of %s in zone %s: %w", name, w.zone.ZoneName, ErrChanged)
	case err != nil:
		return fmt.Errorf("reading %s in zone %s: %w", name, w.zone.ZoneName, err)
	}
	values := txtValues(current.Properties)
	if len(values) != 1 || strings.Trim(values[0], `"`) != strings.Trim(old, `"`) {
		return fmt.Errorf("passing the ownership of %s in zone %s (it holds %q): %w", name, w.zone.ZoneName, values, ErrChanged)
	}
	// ExternalDNS's azure-private-dns provider stores the value with its quotes: the new one is
	// written in the form the old one had.
	new = strings.Trim(new, `"`)
	if strings.HasPrefix(values[0], `"`) {
		new = `"` + new + `"`
	}
	props := *current.Properties
	props.TxtRecords = []*armprivatedns.TxtRecord{{Value: []*string{to.Ptr(new)}}}
	_, err = w.records.CreateOrUpdate(ctx, w.zone.ResourceGroup, w.zone.ZoneName, armprivatedns.RecordTypeTXT, name,
		armprivatedns.RecordSet{Properties: &props}, &armprivatedns.RecordSetsClientCreateOrUpdateOptions{IfMatch: current.Etag})
	if errors.As(err, &re) && re.StatusCode == http.StatusPreconditionFailed {
		return fmt.Errorf("passing the ownership of %s in zone %s: %w", name, w.zone.ZoneName, ErrChanged)
	}
	if err != nil {
		return fmt.Errorf("passing the ownership of %s in zone %s: %w", name, w.zone.ZoneName, err)
	}
	return nil
}

// WriteIntermediate writes an intermediate name's CNAME record set, which the operators write
// themselves, on the condition that the zone still holds what it was read with: create it pointing
// at new when old is "" (If-None-Match: one create), rewrite it from old to new keeping its TTL, or
// delete it when new is "" (a get, then If-Match on its ETag: one update or one delete). Of two
// clusters writing the same intermediate, only the first succeeds; the second gets ErrChanged.
func (w *AzurePrivateDNS) WriteIntermediate(ctx context.Context, name string, ttl uint32, old, new string) error {
	name = w.relative(name)
	var re *azcore.ResponseError
	changed := func(err error) error {
		if errors.As(err, &re) && (re.StatusCode == http.StatusPreconditionFailed || re.StatusCode == http.StatusConflict) {
			return fmt.Errorf("writing the intermediate %s in zone %s: %w", name, w.zone.ZoneName, ErrChanged)
		}
		if err != nil {
			return fmt.Errorf("writing the intermediate %s in zone %s: %w", name, w.zone.ZoneName, err)
		}
		return nil
	}
	if old == "" {
		set := armprivatedns.RecordSet{Properties: &armprivatedns.RecordSetProperties{TTL: to.Ptr(int64(ttl)), CnameRecord: &armprivatedns.CnameRecord{Cname: to.Ptr(new)}}}
		_, err := w.records.CreateOrUpdate(ctx, w.zone.ResourceGroup, w.zone.ZoneName, armprivatedns.RecordTypeCNAME, name, set,
			&armprivatedns.RecordSetsClientCreateOrUpdateOptions{IfNoneMatch: to.Ptr("*")})
		return changed(err)
	}
	current, err := w.records.Get(ctx, w.zone.ResourceGroup, w.zone.ZoneName, armprivatedns.RecordTypeCNAME, name, nil)
	switch {
	case errors.As(err, &re) && re.StatusCode == http.StatusNotFound:
		return fmt.Errorf("writing the intermediate %s in zone %s: %w", name, w.zone.ZoneName, ErrChanged)
	case err != nil:
		return fmt.Errorf("reading %s in zone %s: %w", name, w.zone.ZoneName, err)
	}
	p := current.Properties
	if p == nil || p.CnameRecord == nil || p.CnameRecord.Cname == nil || failover.Canonical(*p.CnameRecord.Cname) != failover.Canonical(old) {
		return fmt.Errorf("writing the intermediate %s in zone %s (it points elsewhere): %w", name, w.zone.ZoneName, ErrChanged)
	}
	if new == "" {
		_, err = w.records.Delete(ctx, w.zone.ResourceGroup, w.zone.ZoneName, armprivatedns.RecordTypeCNAME, name,
			&armprivatedns.RecordSetsClientDeleteOptions{IfMatch: current.Etag})
		return changed(err)
	}
	props := *p
	props.CnameRecord = &armprivatedns.CnameRecord{Cname: to.Ptr(new)}
	_, err = w.records.CreateOrUpdate(ctx, w.zone.ResourceGroup, w.zone.ZoneName, armprivatedns.RecordTypeCNAME, name,
		armprivatedns.RecordSet{Properties: &props}, &armprivatedns.RecordSetsClientCreateOrUpdateOptions{IfMatch: current.Etag})
	return changed(err)
}

// relative is a record set's name relative to the zone, as Resource Manager names it.
func (w *AzurePrivateDNS) relative(name string) string {
	return strings.TrimSuffix(strings.TrimSuffix(name, "."), "."+w.zone.ZoneName)
}

// txtRecords is a TXT record set's records for one value, without the quotes dig prints, in
// 255-byte strings (failover.TXTStrings).
func txtRecords(value string) []*armprivatedns.TxtRecord {
	var strs []*string
	for _, s := range failover.TXTStrings(strings.Trim(value, `"`)) {
		strs = append(strs, to.Ptr(s))
	}
	return []*armprivatedns.TxtRecord{{Value: strs}}
}

// txtValues returns a record set's TXT values, each record's strings joined.
func txtValues(p *armprivatedns.RecordSetProperties) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, r := range p.TxtRecords {
		var b strings.Builder
		for _, v := range r.Value {
			if v != nil {
				b.WriteString(*v)
			}
		}
		out = append(out, b.String())
	}
	return out
}
