//go:build tools

// Package tools pins operator-registry's cmd/opm for `go build` (hack/make/release.mk).
package tools

import _ "github.com/operator-framework/operator-registry/cmd/opm"
