// Package e2e holds the end-to-end suite: real control planes, the operator binary, the real
// ExternalDNS binary and BIND 9 `named` servers, checked with `dig`. The tests carry the `e2e`
// build tag so that `go test ./...` skips them; run them with `make e2e`, which builds
// bin/external-dns, installs BIND (bind9, bind9-dnsutils) when missing and builds bin/manager.
//
// The harness is in test/e2e/framework. Set E2E_ARTIFACTS_DIR to keep every process's log.
package e2e
