//go:build tools

// Package tools pins the Kubernetes control-plane commands this module builds: kube-apiserver and
// kube-controller-manager (envtest, `make demo`, the end-to-end and node suites), kubectl, and the
// node suite's kube-scheduler. The node's own commands (kubelet, kube-proxy) come from
// hack/tools/kubenode, which stays a minor version behind: see its go.mod.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
