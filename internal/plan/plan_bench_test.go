package plan

import (
	"testing"
	"time"

	"github.com/service-router/service-router-operator/internal/policy"
)

// BenchmarkRoute is the pure part of one ServiceRoute reconcile with three active controllers.
func BenchmarkRoute(b *testing.B) {
	controllers := []policy.Controller{{Name: "external-dns-weu", Region: "weu"}, {Name: "external-dns-neu", Region: "neu"}, {Name: "external-dns-frc", Region: "frc"}}
	in := RouteInputs{Route: serviceRoute(), Identity: identity(), Gateway: gateway("cert"), Controllers: controllers,
		Policy: evaluated(dnsPolicy("p", time.Now(), "RegionBound", "weu"), true, "external-dns-weu", "external-dns-neu", "external-dns-frc")}
	b.ReportAllocs()
	for b.Loop() {
		if p := Route(in); len(p.Endpoints) != 3 {
			b.Fatal("unexpected plan")
		}
	}
}
