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

// HeartbeatValue is the heartbeat's TXT value: when it was written and what the cluster's own
// probe of its own gateway found, e.g. "at=2026-11-27T03:00:00Z gateway=answers".
func HeartbeatValue(at time.Time, gatewayAnswers bool) string {
	gateway := "fails"
	if gatewayAnswers {
		gateway = "answers"
	}
	return fmt.Sprintf("at=%s gateway=%s", at.UTC().Format(time.RFC3339), gateway)
}

// ParseHeartbeat reads a heartbeat's TXT value (quotes, as dig prints it, allowed) into what a
// zone says of the region; ok is false for a value that is not a heartbeat, which then counts as
// no heartbeat at all.
func ParseHeartbeat(zone, value string) (hb Heartbeat, ok bool) {
	value = strings.Trim(value, `"`)
	var at, gateway string
	for field := range strings.FieldsSeq(value) {
		key, val, _ := strings.Cut(field, "=")
		switch key {
		case "at":
			at = val
		case "gateway":
			gateway = val
		}
	}
	when, err := time.Parse(time.RFC3339, at)
	if err != nil || (gateway != "answers" && gateway != "fails") {
		return Heartbeat{Zone: zone, Read: true}, false
	}
	return Heartbeat{Zone: zone, Read: true, Found: true, At: when, GatewayAnswers: gateway == "answers"}, true
}
