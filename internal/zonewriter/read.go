package zonewriter

import (
	"context"
	"fmt"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/privatedns/armprivatedns"

	"github.com/service-router/service-router-operator/internal/azureprivatedns"
	"github.com/service-router/service-router-operator/internal/failover"
	"github.com/service-router/service-router-operator/internal/verify"
)

// reading collects what failover reads of a zone: heartbeats, TXT values and addresses.
type reading struct {
	zone string
	out  failover.ZoneReading
}

func newReading(zone string) *reading {
	return &reading{zone: zone, out: failover.ZoneReading{Read: true, Beats: map[string][]failover.Heartbeat{},
		TXT: map[string]failover.TXTSet{}, Addresses: map[string][]string{}, CNAMEs: map[string]string{}}}
}

func (r *reading) txt(name string, ttl uint32, value string) {
	name = failover.Canonical(name)
	if cluster, region, ok := failover.ParseHeartbeatName(name, r.zone); ok {
		// A value that is not a heartbeat is kept as a malformed one (ParseHeartbeat), so that it
		// counts as unread, not as no heartbeat, and stays among the names asked for (RFC 2136).
		hb, _ := failover.ParseHeartbeat(region, value)
		hb.Cluster, hb.Legacy = cluster, strings.HasPrefix(name, failover.HeartbeatLabel+".")
		r.out.Beats[region] = append(r.out.Beats[region], hb)
		return
	}
	set := r.out.TXT[name]
	set.Values, set.TTL = append(set.Values, value), ttl
	r.out.TXT[name] = set
}

func (r *reading) cname(name, target string) {
	r.out.CNAMEs[failover.Canonical(name)] = failover.Canonical(target)
}

func (r *reading) address(name, value string) {
	name = failover.Canonical(name)
	r.out.Addresses[name] = append(r.out.Addresses[name], value)
}

// Read lists the zone's record sets through Resource Manager, 1,000 a request (the largest page),
// and returns its heartbeats, TXT records and addresses; Controller, Owner and TXTPrefix are the
// caller's to fill.
func (w *AzurePrivateDNS) Read(ctx context.Context) (failover.ZoneReading, error) {
	pager := w.records.NewListPager(w.zone.ResourceGroup, w.zone.ZoneName, &armprivatedns.RecordSetsClientListOptions{Top: to.Ptr[int32](azureprivatedns.DefaultPageSize)})
	r, err := readPages(ctx, w.zone.ZoneName, pager, func(p armprivatedns.RecordSetsClientListResponse) []*armprivatedns.RecordSet { return p.Value })
	if err != nil {
		return failover.ZoneReading{}, fmt.Errorf("listing the record sets of zone %s: %w", w.zone.ZoneName, err)
	}
	return r.out, nil
}

// ReadWitness lists only the zone's heartbeats: the TXT record sets whose names end with
// failover.HeartbeatLabel, one request for up to 1,000 clusters, whatever the zone's size.
// Heartbeats under failover.LegacyHeartbeatName are not among them (Read finds those).
func (w *AzurePrivateDNS) ReadWitness(ctx context.Context, _ []string) (failover.ZoneReading, error) {
	pager := w.records.NewListByTypePager(w.zone.ResourceGroup, w.zone.ZoneName, armprivatedns.RecordTypeTXT,
		&armprivatedns.RecordSetsClientListByTypeOptions{Recordsetnamesuffix: to.Ptr(failover.HeartbeatLabel), Top: to.Ptr[int32](azureprivatedns.DefaultPageSize)})
	r, err := readPages(ctx, w.zone.ZoneName, pager, func(p armprivatedns.RecordSetsClientListByTypeResponse) []*armprivatedns.RecordSet { return p.Value })
	if err != nil {
		return failover.ZoneReading{}, fmt.Errorf("listing the heartbeats of zone %s: %w", w.zone.ZoneName, err)
	}
	r.out.TXT, r.out.Addresses, r.out.CNAMEs = nil, nil, nil
	return r.out, nil
}

// readPages reads every page of a record set listing of zone; a listing that failed on any page is
// no reading (a record on a page not read is not missing from the zone).
func readPages[T any](ctx context.Context, zone string, pager *runtime.Pager[T], records func(T) []*armprivatedns.RecordSet) (*reading, error) {
	r := newReading(zone)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, rs := range records(page) {
			if rs != nil && rs.Name != nil && rs.Properties != nil {
				r.recordSet(zone, *rs.Name, rs.Properties)
			}
		}
	}
	return r, nil
}

// ReadingOf is what failover reads of a zone, taken from a listing of it that publication
// verification made (prober.Prober.Listed): its heartbeats, TXT records and addresses, as Read
// would have returned them, without listing the zone again. TTLs are not in a listing; a pass in
// an Azure zone keeps the record set's own.
func ReadingOf(zone string, l verify.Listing) failover.ZoneReading {
	r := newReading(zone)
	for name, values := range l.TXT {
		for _, v := range values {
			r.txt(name, 0, v)
		}
	}
	for name, records := range l.Records {
		for _, rec := range records {
			switch rec.Type {
			case "A", "AAAA":
				r.address(name, rec.Value)
			case "CNAME":
				r.cname(name, rec.Value)
			}
		}
	}
	return r.out
}

// recordSet adds a Resource Manager record set's TXT values and addresses.
func (r *reading) recordSet(zone, relative string, p *armprivatedns.RecordSetProperties) {
	name := relative + "." + zone
	if relative == "@" {
		name = zone
	}
	var ttl uint32
	if p.TTL != nil {
		ttl = uint32(*p.TTL)
	}
	for _, v := range txtValues(p) {
		r.txt(name, ttl, v)
	}
	for _, a := range p.ARecords {
		if a != nil && a.IPv4Address != nil {
			r.address(name, *a.IPv4Address)
		}
	}
	if p.CnameRecord != nil && p.CnameRecord.Cname != nil {
		r.cname(name, *p.CnameRecord.Cname)
	}
	for _, a := range p.AaaaRecords {
		if a != nil && a.IPv6Address != nil {
			r.address(name, *a.IPv6Address)
		}
	}
}
