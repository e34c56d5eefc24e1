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

// HeartbeatValue is the heartbeat's TXT value: when it was written, what the cluster's own probe
// of its own gateway found, the ExternalDNS owner ID of the cluster's instance for the zone, its
// gateway target hostnames, whose addresses the zone publishes, and those addresses, which the
// other clusters probe, e.g. "at=2026-11-27T03:00:00Z gateway=answers owner=external-dns-weu-aks01
// addresses=10.0.0.1 targets=aks01-weu-internal.example.com". Carrying the addresses lets a reader
// that reads only the heartbeats (failover.ReadPlan's witness reading) probe without reading the
// zone's address records. Addresses, then targets, that would make it longer than maxHeartbeat
// (about 25 target hostnames) are left out, never cut.
func HeartbeatValue(at time.Time, gatewayAnswers bool, owner string, targets, addresses []string) string {
	gateway := "fails"
	if gatewayAnswers {
		gateway = "answers"
	}
	v := fmt.Sprintf("at=%s gateway=%s", at.UTC().Format(time.RFC3339), gateway)
	if owner != "" {
		v += " owner=" + owner
	}
	v = appendList(v, "addresses", addresses)
	return appendList(v, "targets", targets)
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
// zone says of the region; ok is false for a value that is not a heartbeat, which then counts as
// no heartbeat at all.
func ParseHeartbeat(zone, value string) (hb Heartbeat, ok bool) {
	value = strings.Trim(value, `"`)
	var at, gateway, owner string
	var targets, addresses []string
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
		}
	}
	when, err := time.Parse(time.RFC3339, at)
	if err != nil || (gateway != "answers" && gateway != "fails") {
		return Heartbeat{Zone: zone, Read: true}, false
	}
	return Heartbeat{Zone: zone, Read: true, Found: true, At: when, GatewayAnswers: gateway == "answers", Owner: owner, Targets: targets, Addresses: addresses}, true
}
