//go:build tools

// Package tools pins operator-lifecycle-manager's commands for `go build` (hack/make/olm.mk): the
// olm and catalog operators, the package server and copy-content (the bundle unpack Job's util
// image), all four in the one OLM image as upstream ships it, plus util/cpb, which
// the unpack Job's init container copies into a shared volume.
package tools

import (
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/catalog"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/copy-content"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/olm"
	_ "github.com/operator-framework/operator-lifecycle-manager/cmd/package-server"
	_ "github.com/operator-framework/operator-lifecycle-manager/util/cpb"
)
