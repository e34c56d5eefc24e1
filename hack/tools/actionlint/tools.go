//go:build tools

// Package tools pins github.com/rhysd/actionlint for `go build` (hack/make/release.mk).
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"
