package failover

import (
	"fmt"
	"strings"
	"time"
)

// HeartbeatLabel ends the name of every heartbeat record, relative to its zone; the underscore
// keeps it out of any hostname a route can generate (naming.SourceHostname's labels are letters,
// digits and '-'). Ending, not starting, the name lets one Resource Manager listing filtered by
// name suffix ($recordsetnamesuffix) return every heartbeat of an Azure zone and nothing else.
const HeartbeatLabel = "_router-heartbeat"

// HeartbeatName is the TXT record a cluster's operator refreshes in a zone to say it is alive:
// <cluster>.<region>._router-heartbeat.<zone>, one per cluster and zone, so that no two clusters
// ever write the same record.
func HeartbeatName(cluster, region, zone string) string {
	return fmt.Sprintf("%s.%s.%s.%s", cluster, region, HeartbeatLabel, strings.TrimSuffix(zone, "."))
}

// LegacyHeartbeatName is the name earlier development builds of 0.2.0 wrote a heartbeat under
// (_router-heartbeat.<cluster>.<region>.<zone>): still read, so that a fleet in the middle of an
// upgrade sees every cluster, and removed by its own cluster once it writes HeartbeatName.
func LegacyHeartbeatName(cluster, region, zone string) string {
	return fmt.Sprintf("%s.%s.%s.%s", HeartbeatLabel, cluster, region, strings.TrimSuffix(zone, "."))
}

// maxTXTString is the longest character-string of a TXT record (RFC 1035); a longer value is
// written as several (TXTStrings).
const maxTXTString = 255

// maxHeartbeat is the longest heartbeat value: 1,024 bytes, the longest TXT value Azure DNS takes,
// four strings of a TXT record.
const maxHeartbeat = 1024

// TXTStrings are the character-strings of a TXT record holding value: 255 bytes each, the last one
// shorter, as a zone file's parser (and so ExternalDNS's RFC 2136 provider) splits a longer value.
// Readers join a record's strings back into the value.
func TXTStrings(value string) []string {
	if value == "" {
		return []string{""}
	}
	var out []string
	for len(value) > maxTXTString {
		out = append(out, value[:maxTXTString])
		value = value[maxTXTString:]
	}
	return append(out, value)
}

// HeartbeatValue is the heartbeat's TXT value: when it was written (At), what the cluster's own
// probe of its own gateway found (GatewayAnswers), how often the cluster writes it (Interval,
// from which readers judge its freshness, up to a bound they compute: Settings.StaleAfter), the
// ExternalDNS owner ID of the cluster's instance for the zone (Owner), its gateway target
// hostnames, whose addresses the zone publishes (Targets), those addresses (Addresses), which the
// other clusters probe, and drain=true while the cluster asks for its names to move to their
// stand-ins (Draining; a reader of an earlier version ignores it, and judges the region by its
// probes alone), e.g. "at=2026-11-27T03:00:00Z gateway=answers interval=10s owner=external-dns-weu-aks01
// addresses=10.0.0.1 targets=aks01-weu-internal.example.com". Carrying the addresses lets a reader
// that reads only the heartbeats (ReadPlan's witness reading) probe without reading the zone's
// address records. Addresses, then targets, that would make it longer than maxHeartbeat (about 25
// target hostnames) are left out, never cut.
func HeartbeatValue(hb Heartbeat) string {
	gateway := "fails"
	if hb.GatewayAnswers {
		gateway = "answers"
	}
	v := fmt.Sprintf("at=%s gateway=%s", hb.At.UTC().Format(time.RFC3339), gateway)
	if hb.Draining {
		v += " drain=true"
	}
	if hb.Interval > 0 {
		v += " interval=" + hb.Interval.String()
	}
	if hb.Owner != "" {
		v += " owner=" + hb.Owner
	}
	v = appendList(v, "addresses", hb.Addresses)
	return appendList(v, "targets", hb.Targets)
}

// appendList appends " key=a,b,…" with as many whole items as keep v within maxHeartbeat.
func appendList(v, key string, items []string) string {
	var kept []string
	for _, item := range items {
		if len(v)+len(" "+key+"=")+len(strings.Join(append(kept, item), ",")) > maxHeartbeat {
			break
		}
		kept = append(kept, item)
	}
	if len(kept) == 0 {
		return v
	}
	return v + " " + key + "=" + strings.Join(kept, ",")
}

// ParseHeartbeatName reads the cluster and region out of a heartbeat record's name in zone, in
// its current form (HeartbeatName) or its earlier one (LegacyHeartbeatName); ok is false for any
// other name.
func ParseHeartbeatName(name, zone string) (cluster, region string, ok bool) {
	rest, found := strings.CutSuffix(strings.TrimSuffix(strings.ToLower(name), "."), "."+strings.TrimSuffix(strings.ToLower(zone), "."))
	if !found {
		return "", "", false
	}
	if pair, found := strings.CutSuffix(rest, "."+HeartbeatLabel); found {
		return clusterAndRegion(pair)
	}
	if pair, found := strings.CutPrefix(rest, HeartbeatLabel+"."); found {
		return clusterAndRegion(pair)
	}
	return "", "", false
}

// clusterAndRegion splits "<cluster>.<region>".
func clusterAndRegion(pair string) (cluster, region string, ok bool) {
	cluster, region, found := strings.Cut(pair, ".")
	if !found || cluster == "" || region == "" || strings.Contains(region, ".") || strings.HasPrefix(cluster, "_") {
		return "", "", false
	}
	return cluster, region, true
}

// ParseHeartbeat reads a heartbeat's TXT value (quotes, as dig prints it, allowed) into what a
// zone says of the region; ok is false for a value that is not a heartbeat. The reader keeps such
// a value as a malformed heartbeat (MalformedHeartbeat), never as no heartbeat at all: a record
// under a heartbeat's name whose value this version cannot read (a hand edit, another tool, a
// later version's format) says nothing either way, and a region is judged lost only on a definite
// answer.
func ParseHeartbeat(zone, value string) (hb Heartbeat, ok bool) {
	value = strings.Trim(value, `"`)
	var at, gateway, owner string
	var targets, addresses []string
	var interval time.Duration
	draining := false
	for field := range strings.FieldsSeq(value) {
		key, val, _ := strings.Cut(field, "=")
		switch key {
		case "at":
			at = val
		case "gateway":
			gateway = val
		case "owner":
			owner = val
		case "targets":
			targets = strings.Split(val, ",")
		case "addresses":
			addresses = strings.Split(val, ",")
		case "interval":
			interval, _ = time.ParseDuration(val)
		case "drain":
			draining = val == "true"
		}
	}
	when, err := time.Parse(time.RFC3339, at)
	if err != nil || (gateway != "answers" && gateway != "fails") {
		return MalformedHeartbeat(zone, value), false
	}
	return Heartbeat{Zone: zone, Read: true, Found: true, At: when, GatewayAnswers: gateway == "answers", Draining: draining, Owner: owner, Targets: targets, Addresses: addresses, Interval: max(interval, 0)}, true
}

// maxMalformedShown is how much of a malformed heartbeat's value a status message quotes.
const maxMalformedShown = 64

// MalformedHeartbeat is a record under a heartbeat's name in zone whose value is not a heartbeat:
// found, but saying nothing (Heartbeat.Malformed holds the value, cut for messages).
func MalformedHeartbeat(zone, value string) Heartbeat {
	shown := value
	if len(shown) > maxMalformedShown {
		shown = shown[:maxMalformedShown] + "…"
	}
	if shown == "" {
		shown = `""`
	}
	return Heartbeat{Zone: zone, Read: true, Malformed: shown}
}

// HeartbeatWritesPerMinute is the share of a subscription's write budget the heartbeats of a whole
// fleet may take by default: half of what Azure's network resource provider allows (1,000 writes
// and deletes per 5 minutes per subscription and region), the other half left to ExternalDNS's
// changes and the ownership passes.
const HeartbeatWritesPerMinute = 100

// ZoneHeartbeatWritesPerMinute is the share of one Azure Private DNS zone's record updates the
// heartbeats of a fleet may take: half of the 60 updates a minute Azure allows per zone (create,
// update and delete 60 each, MicrosoftDocs/azure-docs includes/dns-limits.md), the other half left
// to ExternalDNS's changes and the ownership passes in that zone. Every cluster writes its
// heartbeat into every zone, so it binds as soon as more than 5 clusters share a zone at 10 s.
const ZoneHeartbeatWritesPerMinute = 30

// StaleIntervals is how many of its writer's intervals a heartbeat stays fresh for: three, as the
// defaults (written every 10 s, stale after 30 s), so that one or two lost writes never make a
// cluster look lost.
const StaleIntervals = 3

// HeartbeatInterval is how often a cluster writes its heartbeat into each zone read through
// Resource Manager: the configured interval, or longer when the fleet's heartbeats would
// otherwise take more than writesPerMinute of the subscription — every cluster of clusters (as the
// zones' heartbeats show them, this one included) writing into each of zones zones — or more than
// ZoneHeartbeatWritesPerMinute of any one zone (clusters writes). It is the same for every
// cluster of a fleet that reads the same zones, and each writer states its own in its heartbeat,
// so readers judge freshness by what the writer does (Settings.StaleAfter), not by what they
// assume — up to the longest interval the same rule gives for their own count of the fleet
// (Settings.MaxInterval). zones is 0 without a zone read through Resource Manager (RFC 2136 zones
// have no request budget): the configured interval.
func HeartbeatInterval(configured time.Duration, clusters, zones int, writesPerMinute float64) time.Duration {
	if zones == 0 || writesPerMinute <= 0 {
		return configured
	}
	sized := time.Duration(float64(clusters*zones) / writesPerMinute * float64(time.Minute)).Round(time.Second)
	perZone := time.Duration(float64(clusters) / ZoneHeartbeatWritesPerMinute * float64(time.Minute)).Round(time.Second)
	return max(configured, sized, perZone)
}

// Fleet is the fleet as one reader counts it from the zones it reads (CountFleet): what bounds the
// interval it believes a heartbeat states (Settings.MaxInterval). A zero Fleet is no count at all.
type Fleet struct {
	// Clusters are the clusters with a heartbeat record in any of the zones; Zones the zones.
	Clusters, Zones int
}

// CountFleet counts the fleet in the zones this cluster reads: every cluster named by a heartbeat
// record in any of them (read this round or kept from before, malformed or not, this cluster's own
// included), as a writer counts the clusters it sizes its interval for (HeartbeatInterval), and
// every zone, where a writer counts only those read through Resource Manager: the reader does not
// know which are (a ZoneReading does not say), and counting more only widens the bound.
func CountFleet(zones []ZoneReading) Fleet {
	clusters := map[string]bool{}
	for _, z := range zones {
		for _, beats := range z.Beats {
			for _, b := range beats {
				if b.Cluster != "" {
					clusters[b.Cluster] = true
				}
			}
		}
	}
	return Fleet{Clusters: len(clusters), Zones: len(zones)}
}

// withMargin is the most clusters a writer may count where this reader counts f.Clusters: a quarter
// more, and at least two. A writer counts from its own readings, which may be ahead of this one's (a
// cluster that just joined, a zone this one leaves out for a while: ZoneBackoff) or hold clusters a
// zone shows only to it. A writer that counts more than that still stays fresh while its interval
// is shorter than StaleIntervals of the bound (it counts fewer than three times as many), only with
// fewer of its writes allowed to go missing.
func (f Fleet) withMargin() int {
	return f.Clusters + max(2, (f.Clusters+3)/4)
}
