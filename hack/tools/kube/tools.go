//go:build tools

// Package tools pins the Kubernetes commands this module builds: the control plane (envtest,
// `make demo`, the end-to-end suite) and the node (kubelet, kube-scheduler, kube-proxy) of the
// node suite, which runs the operator as pods (test/node).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
