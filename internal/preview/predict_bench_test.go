package preview

import (
	"fmt"
	"testing"
)

// BenchmarkPredict is plan's computation on a converged cluster of n routes in 50 namespaces
// (the operator is designed for 10,000), with one change: every route's policy switched.
func BenchmarkPredict(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("routes=%d", n), func(b *testing.B) {
			w := bigWorld(n)
			b.ResetTimer()
			for range b.N {
				Predict(w, DefaultSettings)
			}
		})
	}
}

// bigWorld is baseWorld with n routes spread over 50 namespaces, each with its policy, converged.
func bigWorld(n int) *World {
	w := baseWorld(0)
	for i := range 50 {
		ns := fmt.Sprintf("ns%d", i)
		w.Namespaces[ns] = Namespace{Labels: map[string]string{"kubernetes.io/metadata.name": ns}}
		p := w.Policies[0].DeepCopy()
		p.Namespace, p.UID = ns, "pol-"+p.UID
		w.Policies = append(w.Policies, p)
	}
	for i := range n {
		w.Routes = append(w.Routes, route(fmt.Sprintf("ns%d", i%50), fmt.Sprintf("r%d", i), fmt.Sprintf("svc%d", i), i))
	}
	p := Predict(w, DefaultSettings)
	w.Endpoints = p.Endpoints
	for _, r := range w.Routes {
		r.Status = p.Routes[key(r)].Status
	}
	return w
}
