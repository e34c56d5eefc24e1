# `make demo`: the operator on an embedded control plane with the real ExternalDNS and a BIND zone
# (hack/demo, docs/DEMO.md). Everything it needs is built or installed by the prerequisites below;
# the demo's state (kubeconfig, logs, pid file, every temporary directory) lives in DEMO_STATE_DIR
# and is removed when the demo stops (Ctrl-C, or `make demo-down` from another terminal).
# The paths of bin/demo, bin/external-dns and the control plane come from hack/make/tools.mk.

DEMO_STATE_DIR ?= $(CURDIR)/.demo
# Extra flags for hack/demo, e.g. DEMO_FLAGS=--check (exit after the report).
DEMO_FLAGS ?=

##@ Demo

# Says up front what the first run has to build, since the builds print nothing for minutes. The
# figures are measured (docs/DEVELOPMENT.md#how-long-the-first-runs-take): a fresh clone with empty
# Go module and build caches, 2 cores.
.PHONY: demo-intro
demo-intro:
	@missing=""; \
	for f in $(CONTROL_PLANE); do [ -x "$$f" ] || { missing="$$missing, the control plane (etcd, kube-apiserver, kube-controller-manager, kubectl)"; break; }; done; \
	[ -x "$(EXTERNAL_DNS)" ] || missing="$$missing, ExternalDNS (its rfc2136 and Azure providers)"; \
	{ command -v named >/dev/null 2>&1 || [ -x /usr/sbin/named ]; } && command -v dig >/dev/null 2>&1 || missing="$$missing, BIND 9 and dig (apt-get)"; \
	if [ -n "$$missing" ]; then \
		echo "==> make demo, first run: building or installing side by side$${missing#,}, the operator and the demo."; \
		echo "    Measured from empty Go caches on an idle 2-core machine: about 14 minutes until the report"; \
		echo "    (the Go 1.27.3 toolchain fetched included), 24 on a busy one; the Kubernetes binaries and"; \
		echo "    ExternalDNS finish last. Everything is cached in bin/ afterwards: later runs print the report in about 9 seconds."; \
	fi

# go build is incremental: this is instant when nothing changed.
.PHONY: demo-build
demo-build: ## Build the demo program into bin/demo.
	@echo "==> building bin/demo"
	@$(GO) build -o $(DEMO) ./hack/demo

# What the demo runs, and nothing else (no code generation, no vet: `make manager`, not `make
# build`), built side by side (TOOL_JOBS, hack/make/tools.mk).
DEMO_NEEDS = control-plane external-dns bind-tools manager demo-build

.PHONY: demo-prerequisites
demo-prerequisites:
	@$(MAKE) $(SIDE_BY_SIDE) $(DEMO_NEEDS)

.PHONY: demo
demo: demo-intro demo-prerequisites ## Run the operator locally with ExternalDNS and BIND, print what it generated and the dig answers, keep running until Ctrl-C.
	@echo "==> starting the demo (state in $(DEMO_STATE_DIR); Ctrl-C or 'make demo-down' stops it)"
	@KUBEBUILDER_ASSETS=$(BIN) $(DEMO) --state-dir=$(DEMO_STATE_DIR) $(DEMO_FLAGS)

.PHONY: demo-down
demo-down: demo-build ## Stop a demo running in another terminal (on a cluster: and delete what it created there) and remove its state.
	@$(DEMO) --down --state-dir=$(DEMO_STATE_DIR)

# `make demo-on-cluster`: the demo on a cluster you already have (kind, k3s), where the operator is
# installed with the Helm chart (docs/DEMO.md#on-a-cluster-you-already-have). No control plane and
# no operator here: only ExternalDNS, BIND and the demo. The cluster is the current context of the
# first file of $KUBECONFIG, else ~/.kube/config.
DEMO_KUBECONFIG ?= $(or $(firstword $(subst :, ,$(KUBECONFIG))),$(HOME)/.kube/config)
DEMO_ON_CLUSTER_NEEDS = external-dns bind-tools demo-build

.PHONY: demo-on-cluster
demo-on-cluster: ## Run the demo on the cluster of $KUBECONFIG (default ~/.kube/config) with the operator installed by the Helm chart: BIND and ExternalDNS locally, the samples applied, and deleted again on Ctrl-C.
	@[ -x "$(EXTERNAL_DNS)" ] || echo "==> make demo-on-cluster, first run: building ExternalDNS (its rfc2136 and Azure providers; several minutes) and installing BIND 9 and dig when missing. Cached in bin/ afterwards."
	@$(MAKE) $(SIDE_BY_SIDE) $(DEMO_ON_CLUSTER_NEEDS)
	@echo "==> starting the demo on the cluster of $(DEMO_KUBECONFIG) (state in $(DEMO_STATE_DIR); Ctrl-C or 'make demo-down' stops it and deletes what it created there)"
	@$(DEMO) --kubeconfig=$(DEMO_KUBECONFIG) --state-dir=$(DEMO_STATE_DIR) $(DEMO_FLAGS)
