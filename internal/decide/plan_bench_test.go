package decide

import (
	"testing"
	"time"
)

// BenchmarkRoute is the pure part of one ServiceRoute reconcile with three active controllers.
func BenchmarkRoute(b *testing.B) {
	in := RouteInputs{Route: serviceRoute(), Identity: identity(), Gateway: gateway("cert"), Configuration: configuration("weu", "neu", "frc"),
		Policy: dnsPolicy("p", time.Now(), "RegionBound", "weu")}
	b.ReportAllocs()
	for b.Loop() {
		if p := Route(in); len(p.Endpoints) != 3 {
			b.Fatal("unexpected plan")
		}
	}
}
