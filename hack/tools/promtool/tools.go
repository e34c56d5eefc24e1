//go:build tools

// Package tools pins promtool, which `make rules-test` builds into bin/ to run the alert rules'
// unit tests (config/prometheus/rules_test.yaml). It has its own module because Prometheus'
// service-discovery dependencies would otherwise enter the other tools' dependency graph.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
