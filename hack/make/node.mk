# The node suite (test/node, build tag `node`): the operator as it ships, its image and the chart's
# and the CSV's Deployments, running as pods under a real kubelet. test/e2e/framework's NodeWorld
# starts a whole cluster inside a network namespace it creates: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kube-proxy, two kubelets each with Debian's containerd
# and runc, bridge CNI, and an OCI registry every image is pushed to (nothing is pulled from
# outside). It needs root, like the kubelet it runs.
#
# The kubelet, kube-scheduler, kube-proxy and CNI plugin paths come from hack/make/tools.mk.

# hack/testqueue runs each test in a process of its own, NODE_E2E_WORKERS at a time, each
# starting its worlds in a network namespace of its own; one after another they took 17-26 minutes
# on 2 cores. NODE_E2E_RUN selects tests (a -test.run expression), NODE_E2E_FLAGS adds test binary
# flags (-test.failfast, ...), NODE_E2E_TIMEOUT bounds each test.
NODE_E2E_RUN ?= .
# The suite alone: three tests at a time, as its three shards ran before.
NODE_E2E_WORKERS ?= 3
NODE_E2E_TIMEOUT ?= 30m
NODE_E2E_FLAGS ?=
NODE_E2E_BINARY := $(BIN)/node.test

##@ Node suite (the operator in pods)

# containerd, runc, iptables (kube-proxy) and conntrack come from the distribution (Debian:
# containerd 1.6 and runc 1.1, which kubelet 1.36 accepts).
.PHONY: node-packages
node-packages: ## Make sure containerd, runc, iptables and conntrack are installed (apt-get when missing).
	@if command -v containerd >/dev/null && command -v containerd-shim-runc-v2 >/dev/null && command -v runc >/dev/null \
		&& command -v iptables >/dev/null && command -v conntrack >/dev/null; then exit 0; fi; \
	echo "==> installing containerd, runc, iptables and conntrack with apt-get"; \
	if ! command -v apt-get >/dev/null 2>&1; then \
		echo "node-packages: containerd/runc/iptables/conntrack missing and apt-get not available; install them by hand" >&2; exit 1; \
	fi; \
	SUDO=""; if [ "$$(id -u)" != "0" ]; then SUDO="sudo -n"; fi; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$SUDO apt-get update -q </dev/null; \
	$$SUDO apt-get install -y -q --no-install-recommends containerd runc iptables conntrack </dev/null

# What the suite runs: the whole node, the packages, ExternalDNS (packaged as an image by the
# suite), helm, BIND, the operator's image layout (dist/image), the release tool that pushes it and
# the kubectl plugin (the homelab walkthrough's `kubectl router status`).
.PHONY: e2e-node-prerequisites
e2e-node-prerequisites: node-root
	@$(MAKE) $(SIDE_BY_SIDE) control-plane node node-packages external-dns bind-tools $(HELM) release-tool plugin olm istio

# The node suite runs kubelets, containerd and a network namespace of its own: it needs root. Said
# at once, before anything is built, rather than deep in the suite (`make test` leaves it out).
.PHONY: node-root
node-root:
	@if [ "$$(id -u)" != "0" ]; then \
		echo "The node suite (part of make test) runs kubelets, containerd and a network namespace: it needs root." >&2; \
		echo "Run 'sudo make e2e-node' (or 'sudo make test'); 'make test' as any user runs every other suite." >&2; exit 1; \
	fi

.PHONY: e2e-node
e2e-node: e2e-node-prerequisites image node-binary ## Run the node suite: the operator's image, chart and CSV as pods on a two-node cluster (needs root).
	KUBEBUILDER_ASSETS=$(BIN) $(GO) run ./hack/testqueue --workers=$(NODE_E2E_WORKERS) --run='$(NODE_E2E_RUN)' \
		--timeout=$(NODE_E2E_TIMEOUT) test/node=$(NODE_E2E_BINARY) -- $(NODE_E2E_FLAGS)

.PHONY: node-binary
node-binary:
	$(GO) test -c -tags node -o $(NODE_E2E_BINARY) ./test/node

# `make test` runs its tests in one queue with the end-to-end suite's, and builds the kubelet's and
# OLM's binaries (the longest builds) while test-go runs; as another user than root it leaves the
# suite out and says so.
ifeq ($(AS_ROOT),yes)
TEST_SUITE_PREREQUISITES += e2e-node-prerequisites image node-binary
TEST_SUITE_BINARIES += test/node=$(NODE_E2E_BINARY)
TEST_GO_BESIDE += node olm istio
else
TEST_SUITES_NEEDING_ROOT += e2e-node
endif
