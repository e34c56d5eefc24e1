package routerplan

import (
	"fmt"
	"testing"

	routingv1alpha1 "github.com/service-router/service-router-operator/apis/routing/v1alpha1"
)

// BenchmarkPredict is plan's computation on a converged cluster of n routes in 50 namespaces
// (the operator is designed for 10,000), on either backend.
func BenchmarkPredict(b *testing.B) {
	for _, backend := range []routingv1alpha1.GatewayBackend{routingv1alpha1.BackendIstioGateway, routingv1alpha1.BackendGatewayAPI} {
		for _, n := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("backend=%s/routes=%d", backend, n), func(b *testing.B) {
				w := bigWorld(n, backend)
				b.ResetTimer()
				for range b.N {
					Predict(w, DefaultSettings)
				}
			})
		}
	}
}

// bigWorld is baseWorld with n routes spread over 50 namespaces, each with its policy, converged,
// its Gateway on the given backend.
func bigWorld(n int, backend routingv1alpha1.GatewayBackend) *World {
	w := baseWorld(0)
	w.Gateways[0].Spec.Backend = backend
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
	w.GatewayAPIGateways, w.ListenerSets, w.HTTPRoutes, w.ReferenceGrants = withUIDs(p.GatewayAPIGateways), withUIDs(p.ListenerSets), withUIDs(p.HTTPRoutes), withUIDs(p.ReferenceGrants)
	return w
}
