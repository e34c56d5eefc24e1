//go:build tools

// Package tools pins Istio's istiod (pilot-discovery) and istioctl for `go build`
// (hack/make/istio.mk): the control plane the node suite's Istio tests run as a pod
// (test/node/istio_test.go) and the istioctl whose `analyze` they run against the converged
// cluster. A module of its own: Istio pins its own Kubernetes, gateway-api and Envoy modules.
// The module proxy serves istio.io/istio only as pseudo-versions of its main line; the one pinned
// here is Istio 1.31 (its VERSION file) as of 2026-08-27.
package tools

import (
	_ "istio.io/istio/istioctl/cmd/istioctl"
	_ "istio.io/istio/pilot/cmd/pilot-discovery"
)
