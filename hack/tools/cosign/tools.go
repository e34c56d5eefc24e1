//go:build tools

// Package tools pins sigstore's cosign for `go build` (hack/make/release.mk).
package tools

import _ "github.com/sigstore/cosign/v2/cmd/cosign"
