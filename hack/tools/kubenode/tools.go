//go:build tools

// Package tools pins the node's commands the node suite (test/node) runs: kubelet and kube-proxy.
// They stay a minor version behind the control plane of hack/tools/kube: see go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
