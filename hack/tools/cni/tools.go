//go:build tools

// Package tools pins the CNI plugins the node suite's kubelet gives its pods a network with
// (test/node): bridge with host-local addresses, loopback, and portmap.
package tools

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
)
