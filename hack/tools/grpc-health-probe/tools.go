//go:build tools

// Package tools pins grpc-health-probe for `go build` (hack/make/release.mk): the catalog image
// carries it at /bin/grpc_health_probe because OLM v0 (up to v0.38.0 at least) probes a
// CatalogSource's registry pod by exec'ing `grpc_health_probe -addr=:50051` in it.
package tools

import _ "github.com/grpc-ecosystem/grpc-health-probe"
