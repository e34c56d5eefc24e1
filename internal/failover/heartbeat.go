package failover

import (
	"fmt"
	"strings"
	"time"
)

// heartbeatLabel starts the name of every heartbeat record; the underscore keeps it out of any
// hostname a route can generate (naming.SourceHostname's labels are letters, digits and '-').
const heartbeatLabel = "_router-heartbeat"

// HeartbeatName is the TXT record a cluster's operator refreshes in a zone to say it is alive:
// _router-heartbeat.<cluster>.<region>.<zone>, one per cluster and zone, so that no two clusters
// ever write the same record.
func HeartbeatName(cluster, region, zone string) string {
	return fmt.Sprintf("%s.%s.%s.%s", heartbeatLabel, cluster, region, strings.TrimSuffix(zone, "."))
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
// of its own gateway found, the ExternalDNS owner ID of the cluster's instance for the zone and
// its gateway target hostnames, whose addresses the zone publishes and the other clusters probe,
// e.g. "at=2026-11-27T03:00:00Z gateway=answers owner=external-dns-weu-aks01
// targets=aks01-weu-internal.example.com". Targets that would make it longer than maxHeartbeat
// (about 25 target hostnames) are left out, never cut.
func HeartbeatValue(at time.Time, gatewayAnswers bool, owner string, targets []string) string {
	gateway := "fails"
	if gatewayAnswers {
		gateway = "answers"
	}
	v := fmt.Sprintf("at=%s gateway=%s", at.UTC().Format(time.RFC3339), gateway)
	if owner != "" {
		v += " owner=" + owner
	}
	var kept []string
	for _, t := range targets {
		if len(v)+len(" targets=")+len(strings.Join(append(kept, t), ",")) > maxHeartbeat {
			break
		}
		kept = append(kept, t)
	}
	if len(kept) > 0 {
		v += " targets=" + strings.Join(kept, ",")
	}
	return v
}

// ParseHeartbeatName reads the cluster and region out of a heartbeat record's name in zone;
// ok is false for any other name.
func ParseHeartbeatName(name, zone string) (cluster, region string, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSuffix(strings.ToLower(name), "."), heartbeatLabel+".")
	if !found {
		return "", "", false
	}
	rest, found = strings.CutSuffix(rest, "."+strings.TrimSuffix(strings.ToLower(zone), "."))
	if !found {
		return "", "", false
	}
	cluster, region, found = strings.Cut(rest, ".")
	if !found || cluster == "" || region == "" || strings.Contains(region, ".") {
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
	var targets []string
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
		}
	}
	when, err := time.Parse(time.RFC3339, at)
	if err != nil || (gateway != "answers" && gateway != "fails") {
		return Heartbeat{Zone: zone, Read: true}, false
	}
	return Heartbeat{Zone: zone, Read: true, Found: true, At: when, GatewayAnswers: gateway == "answers", Owner: owner, Targets: targets}, true
}
