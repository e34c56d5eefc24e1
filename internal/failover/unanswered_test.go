package failover

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnanswered(t *testing.T) {
	pass := Pass{Controller: "external-dns-weu", Hostname: apiName, TXTName: apiTXT, From: aks01Owner, To: aks02Owner, Region: "weu",
		Namespace: "myapp", Endpoint: "api-route-external-dns-weu"}
	other := pass
	other.Controller = "external-dns-frc"
	tests := []struct {
		name                 string
		zones                []ZoneReading
		passes               []Pass
		wantLanded, wantWait []Pass
	}{
		{"the zone applied it after the client gave up: landed", []ZoneReading{weuZone(func(z *ZoneReading) {
			z.TXT[apiTXT] = TXTSet{Values: []string{ownership(aks02Owner)}}
		})}, []Pass{pass}, []Pass{pass}, nil},
		{"the zone still shows the old owner: dropped (Takeovers decides afresh)", []ZoneReading{weuZone()}, []Pass{pass}, nil, nil},
		{"a third owner holds it now: dropped", []ZoneReading{weuZone(func(z *ZoneReading) {
			z.TXT[apiTXT] = TXTSet{Values: []string{ownership("external-dns-weu-aks03")}}
		})}, []Pass{pass}, nil, nil},
		{"the zone not read whole: still waiting", []ZoneReading{weuZone(func(z *ZoneReading) { z.Read = false })}, []Pass{pass}, nil, []Pass{pass}},
		{"a zone this round does not know: still waiting", []ZoneReading{weuZone()}, []Pass{other}, nil, []Pass{other}},
		{"the ownership record gone: dropped", []ZoneReading{weuZone(func(z *ZoneReading) { delete(z.TXT, apiTXT) })}, []Pass{pass}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			landed, waiting := Unanswered(tt.passes, tt.zones)
			assert.Equal(t, tt.wantLanded, landed, "landed")
			assert.Equal(t, tt.wantWait, waiting, "waiting")
		})
	}
}
