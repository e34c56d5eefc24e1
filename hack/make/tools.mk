##@ Tools (built once into bin/ from the Go module proxy)

# The one place where the path of every binary under bin/ is defined, and how each is built. The
# top Makefile includes this file before anything else: make expands a rule's prerequisites when
# it reads the rule, so a path defined after a rule that lists it would silently expand to nothing
# and the tool would never be built (a fresh clone's `make demo` once failed that way). The
# feature files (hack/make/*.mk) only use these variables; test/packaging/makefile_test.go checks,
# with `make -n` and an empty bin directory, that every first-run target builds what it runs.

CONTROLLER_GEN := $(BIN)/controller-gen
KUSTOMIZE := $(BIN)/kustomize
HELM := $(BIN)/helm
STATICCHECK := $(BIN)/staticcheck
ETCD := $(BIN)/etcd
KUBE_APISERVER := $(BIN)/kube-apiserver
KUBE_CONTROLLER_MANAGER := $(BIN)/kube-controller-manager
KUBECTL := $(BIN)/kubectl
OPERATOR_SDK := $(BIN)/operator-sdk
EXTERNAL_DNS := $(BIN)/external-dns
# Built by `make build` and `make demo-build` (go build is incremental, so they are phony targets).
MANAGER := $(BIN)/manager
PLUGIN := $(BIN)/kubectl-router
DEMO := $(BIN)/demo

CONTROL_PLANE := $(ETCD) $(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBECTL)

# The node suite (test/node, hack/make/node.mk): the kube-scheduler of the control plane's version;
# the node's kubelet and kube-proxy, a minor version older (hack/tools/kubenode: kubelet 1.37 needs
# containerd 2, the test world runs containerd 1.6); and the CNI plugins the kubelet's pods get their
# network from (bin/cni/bridge, host-local, loopback, portmap).
KUBELET := $(BIN)/kubelet
KUBE_SCHEDULER := $(BIN)/kube-scheduler
KUBE_PROXY := $(BIN)/kube-proxy
CNI_BIN := $(BIN)/cni
CNI_PLUGINS := $(CNI_BIN)/bridge $(CNI_BIN)/host-local $(CNI_BIN)/loopback $(CNI_BIN)/portmap
NODE := $(KUBELET) $(KUBE_SCHEDULER) $(KUBE_PROXY) $(CNI_PLUGINS)

# The tools are independent builds (each in its own module, into its own file): the first-run
# targets (`make demo`, `make test`) build what they need in one sub-make with TOOL_JOBS jobs, so
# that one build's module downloads, its single-threaded link and apt-get's install of BIND overlap
# another's compilation (go build already compiles on every core). 3 jobs on 2 cores: a fourth
# adds memory (each link of the Kubernetes binaries or ExternalDNS takes 1-2 GiB), not speed.
# TOOL_JOBS=1 builds them one after another.
# (Recipes say `$(MAKE) $(SIDE_BY_SIDE) targets` with $(MAKE) spelled out: make runs such a line
# even under -n, which is how `make -n demo` shows the sub-make's commands.)
TOOL_JOBS ?= 3
SIDE_BY_SIDE = --no-print-directory -j$(TOOL_JOBS)

.PHONY: tools
tools: $(CONTROLLER_GEN) $(KUSTOMIZE) $(HELM) $(STATICCHECK) ## Build the development tools.

.PHONY: control-plane
control-plane: $(CONTROL_PLANE) ## Build etcd, kube-apiserver, kube-controller-manager and kubectl.
	@: # (a recipe, so that make does not say "Nothing to be done" when a sub-make finds it built)

.PHONY: operator-sdk
operator-sdk: $(OPERATOR_SDK) ## Build operator-sdk into bin/.

.PHONY: external-dns
external-dns: $(EXTERNAL_DNS) ## Build ExternalDNS v0.23.0 (rfc2136 and Azure providers) into bin/external-dns.
	@: # (a recipe, so that make does not say "Nothing to be done" when a sub-make finds it built)

$(CONTROLLER_GEN): hack/tools/go.mod
	@echo "==> building controller-gen into bin/ (first run only)"
	cd hack/tools && $(GO) build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

$(KUSTOMIZE): hack/tools/go.mod
	@echo "==> building kustomize into bin/ (first run only)"
	cd hack/tools && $(GO) build -o $@ sigs.k8s.io/kustomize/kustomize/v5

$(HELM): hack/tools/go.mod
	@echo "==> building helm into bin/ (first run only)"
	cd hack/tools && $(GO) build -o $@ helm.sh/helm/v3/cmd/helm

$(STATICCHECK): hack/tools/go.mod
	@echo "==> building staticcheck into bin/ (first run only)"
	cd hack/tools && $(GO) build -o $@ honnef.co/go/tools/cmd/staticcheck

$(ETCD): hack/tools/etcd/go.mod hack/tools/etcd/main.go
	@echo "==> building etcd into bin/ (first run only, about a minute)"
	cd hack/tools/etcd && $(GO) build -o $@ .

# The version the Kubernetes binaries report (/version, kubectl version, --version): without it
# they say v0.0.0-master, which no kubeVersion constraint (Helm charts, OLM minKubeVersion) accepts.
# Each module's binaries report the k8s.io/kubernetes version its go.mod requires (its
# k8s.io/component-base, whose variables these are, is that release's own): hack/tools/kube the
# control plane's, hack/tools/kubenode the node's.
kube_module_version = $(shell awk '$$1 == "require" && $$2 == "k8s.io/kubernetes" {print $$3}' $(1))
kube_version_ldflags = -X k8s.io/component-base/version.gitVersion=$(1) \
	-X k8s.io/component-base/version.gitMajor=$(patsubst v%,%,$(word 1,$(subst ., ,$(1)))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(1))) \
	-X k8s.io/component-base/version.gitTreeState=clean
KUBE_VERSION := $(call kube_module_version,hack/tools/kube/go.mod)
KUBE_NODE_VERSION := $(call kube_module_version,hack/tools/kubenode/go.mod)

# One go build for the three Kubernetes commands shares the compilation of k8s.io/kubernetes.
$(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBECTL) &: hack/tools/kube/go.mod
	@echo "==> building kube-apiserver, kube-controller-manager and kubectl $(KUBE_VERSION) into bin/ (first run only, 5-10 minutes on 2 cores)"
	cd hack/tools/kube && $(GO) build -ldflags "$(call kube_version_ldflags,$(KUBE_VERSION))" -o $(BIN)/ k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl
	@touch $(KUBE_APISERVER) $(KUBE_CONTROLLER_MANAGER) $(KUBECTL)

# The node suite's scheduler, from the control plane's module (and so mostly the same compiled
# packages), in a build of its own: `make demo` needs none of it. A control-plane component, it
# runs the API server's version (the skew policy allows it at most one minor older).
$(KUBE_SCHEDULER): hack/tools/kube/go.mod
	@echo "==> building kube-scheduler $(KUBE_VERSION) into bin/ (first run only, a minute or two)"
	cd hack/tools/kube && $(GO) build -ldflags "$(call kube_version_ldflags,$(KUBE_VERSION))" -o $(BIN)/ k8s.io/kubernetes/cmd/kube-scheduler
	@touch $(KUBE_SCHEDULER)

# The node's commands, from a module of their own at the node's version (hack/tools/kubenode's
# go.mod says why it is older, and how far the skew may go).
$(KUBELET) $(KUBE_PROXY) &: hack/tools/kubenode/go.mod
	@echo "==> building kubelet and kube-proxy $(KUBE_NODE_VERSION) into bin/ (first run only, several minutes)"
	cd hack/tools/kubenode && $(GO) build -ldflags "$(call kube_version_ldflags,$(KUBE_NODE_VERSION))" -o $(BIN)/ k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy
	@touch $(KUBELET) $(KUBE_PROXY)

# Static, as CNI plugins are shipped: the kubelet's runtime execs them in the node's network namespace.
$(CNI_PLUGINS) &: hack/tools/cni/go.mod
	@echo "==> building the CNI plugins (bridge, host-local, loopback, portmap) into bin/cni (first run only)"
	cd hack/tools/cni && CGO_ENABLED=0 $(GO) build -o $(CNI_BIN)/ github.com/containernetworking/plugins/plugins/main/bridge \
		github.com/containernetworking/plugins/plugins/ipam/host-local github.com/containernetworking/plugins/plugins/main/loopback \
		github.com/containernetworking/plugins/plugins/meta/portmap
	@touch $(CNI_PLUGINS)

.PHONY: node
node: $(NODE) ## Build the node suite's kube-scheduler, kubelet, kube-proxy and CNI plugins.
	@: # (a recipe, so that make does not say "Nothing to be done" when a sub-make finds it built)

# The version operator-sdk reports (and writes into the bundle's builder labels) is set at link time
# from the pinned module version, as its own release build does.
OPERATOR_SDK_VERSION = $(shell awk '{ for (i = 1; i < NF; i++) if ($$i == "github.com/operator-framework/operator-sdk") print $$(i + 1) }' hack/tools/operator-sdk/go.mod)
OPERATOR_SDK_LDFLAGS = $(foreach v,Version GitVersion ImageVersion,-X github.com/operator-framework/operator-sdk/internal/version.$(v)=$(OPERATOR_SDK_VERSION))

$(OPERATOR_SDK): hack/tools/operator-sdk/go.mod
	@echo "==> building operator-sdk $(OPERATOR_SDK_VERSION) into bin/ (first run only, several minutes)"
	cd hack/tools/operator-sdk && $(GO) build -tags containers_image_openpgp -ldflags "$(OPERATOR_SDK_LDFLAGS)" \
		-o $@ github.com/operator-framework/operator-sdk/cmd/operator-sdk

# ExternalDNS (the version hack/tools/external-dns pins) with the two providers the project runs,
# rfc2136 (the demo, the end-to-end suite) and azure-private-dns (the AKS world): ExternalDNS' main
# imports all its providers through one table (provider/factory), so hack/externaldnsslim copies
# the module from the module cache into a temporary directory with the other providers' lines
# dropped from that table (every other line as upstream ships it) and writes a go.mod replacing the module with that copy, removed
# after the build. Not under the repository: controller-gen's `paths=./...` loads every module it
# finds below the root, a copy under bin/ included. Half the CPU time of the full build (6.3
# against 13.1 minutes measured, cold caches) and fewer downloads. The full binary:
# `cd hack/tools/external-dns && go build sigs.k8s.io/external-dns`. Static (no cgo), as ExternalDNS'
# own images are: the node suite runs the same binary as a pod from a scratch image.
EXTERNAL_DNS_PROVIDERS := rfc2136,azure
# The version the tools module pins, stamped into the binary as ExternalDNS's own build does
# (`external-dns --version`, its start-up log).
EXTERNAL_DNS_VERSION := $(shell awk '$$1 == "sigs.k8s.io/external-dns" {print $$2}' hack/tools/external-dns/go.mod)
$(EXTERNAL_DNS): hack/tools/external-dns/go.mod hack/tools/external-dns/go.sum hack/externaldnsslim/main.go
	@echo "==> building external-dns (providers $(EXTERNAL_DNS_PROVIDERS) only) into bin/ (first run only, a few minutes)"
	src=$$(mktemp -d) && trap 'rm -rf "$$src"' EXIT && \
		$(GO) run ./hack/externaldnsslim --tools-module=hack/tools/external-dns --out=$$src --keep=$(EXTERNAL_DNS_PROVIDERS) && \
		cd hack/tools/external-dns && CGO_ENABLED=0 $(GO) build -modfile=$$src/go.mod -trimpath \
			-ldflags "-X sigs.k8s.io/external-dns/pkg/apis/externaldns.Version=$(EXTERNAL_DNS_VERSION)" -o $@ sigs.k8s.io/external-dns
	@touch $@
