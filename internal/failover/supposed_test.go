package failover

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The reading supposed by `kubectl router plan --region-lost` holds each name as ExternalDNS's TXT
// registry does, for an owner that is never this cluster's.
func TestHeldBy(t *testing.T) {
	api := Name{Controller: "external-dns-weu", Hostname: "API.example.com.", Namespace: "myapp", Endpoint: "api-route-external-dns-weu", StandIns: []string{"neu"}}
	elsewhere := api
	elsewhere.Controller, elsewhere.Hostname = "external-dns-frc", "frc.example.com"
	sameName := api
	sameName.Namespace = "other-team"
	z := HeldBy(ZoneReading{Controller: "external-dns-weu", Region: "weu", Owner: aks02Owner, TXTPrefix: "weu-p-"}, "weu", []Name{api, elsewhere, sameName})
	assert.Equal(t, ZoneReading{Controller: "external-dns-weu", Region: "weu", Read: true, Owner: aks02Owner, TXTPrefix: "weu-p-",
		Beats: map[string][]Heartbeat{"weu": {{Zone: "external-dns-weu", Read: true, Found: true, Owner: "region weu"}}},
		TXT: map[string]TXTSet{"weu-p-cname-api.example.com": {Values: []string{
			"heritage=external-dns,external-dns/owner=region weu,external-dns/resource=crd/myapp/api-route-external-dns-weu"}}},
	}, z, "the zone's own names only, under its prefix; a hostname of two namespaces held for the first")
	assert.Equal(t, "region weu", OwnerOf(z.TXT["weu-p-cname-api.example.com"].Values[0]))
}

// Takeovers decides over the supposed reading as over a zone the lost region's cluster really
// holds (weuZone, aks01 owning the API name): the same names pass, whatever the judgements.
func TestHeldBy_TakeoversAgreeWithARealReading(t *testing.T) {
	api := Name{Controller: "external-dns-weu", Hostname: apiName + ".", Namespace: "myapp", Endpoint: "api-route-external-dns-weu", StandIns: []string{"neu"}}
	second := api
	second.StandIns = []string{"frc", "neu"}
	tests := []struct {
		name   string
		judged map[string]Judgement
		names  []Name
		passes bool
	}{
		{"this region first of the stand-ins", map[string]Judgement{"weu": {State: Lost}, "neu": {State: Serving}}, []Name{api}, true},
		{"behind a serving stand-in", map[string]Judgement{"weu": {State: Lost}, "neu": {State: Serving}, "frc": {State: Serving}}, []Name{second}, false},
		{"behind a lost stand-in", map[string]Judgement{"weu": {State: Lost}, "neu": {State: Serving}, "frc": {State: Lost}}, []Name{second}, true},
		{"behind an unreachable stand-in", map[string]Judgement{"weu": {State: Lost}, "neu": {State: Serving}, "frc": {State: Unreachable}}, []Name{second}, true},
		{"this region drained", map[string]Judgement{"weu": {State: Lost}, "neu": {State: Drained}}, []Name{api}, false},
		{"not a stand-in", map[string]Judgement{"weu": {State: Lost}, "neu": {State: Serving}}, []Name{{Controller: api.Controller, Hostname: api.Hostname,
			Namespace: api.Namespace, Endpoint: api.Endpoint, StandIns: []string{"frc"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			actual := Takeovers("neu", tt.judged, []ZoneReading{weuZone()}, tt.names)
			supposed := Takeovers("neu", tt.judged, []ZoneReading{HeldBy(weuZone(), "weu", tt.names)}, tt.names)
			assert.Equal(t, tt.passes, len(actual) == 1, "the real reading")
			assert.Equal(t, len(actual), len(supposed), "the supposed reading")
			for i := range supposed {
				assert.Equal(t, actual[i].Hostname, supposed[i].Hostname)
				assert.Equal(t, actual[i].TXTName, supposed[i].TXTName)
				assert.Equal(t, ownership(aks02Owner), supposed[i].New, "passed to this cluster's owner, the resource kept")
			}
		})
	}
}
