# Service Router Operator
#
# Every tool and control-plane binary is built from the Go module proxy into bin/ the first time a
# target needs it (see hack/tools/); nothing is downloaded from anywhere else.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Every module is built with this Go, whatever Go the machine has: the go command fetches it from
# the module proxy the first time (76 MB, once), so a machine with Go 1.26 needs no other step.
# ExternalDNS v0.23.0, which the end-to-end worlds run, needs Go 1.27.
GO_TOOLCHAIN_VERSION := go1.27.3
export GOTOOLCHAIN := $(GO_TOOLCHAIN_VERSION)

VERSION ?= 0.2.0
IMAGE_REGISTRY ?= ghcr.io/service-router
IMG ?= $(IMAGE_REGISTRY)/service-router-operator:v$(VERSION)

BIN := $(CURDIR)/bin
# The version service_router_build_info reports, for `make build`, `make image` and the Dockerfile.
MANAGER_LDFLAGS := -X github.com/service-router/service-router-operator/internal/metrics.Version=v$(VERSION)
# The version `kubectl router --version` reports.
PLUGIN_LDFLAGS := -X main.version=v$(VERSION)

# The Go files the operator's binaries are built from (tests left out), for the builds that run
# only when an input changed (make image, make plugin-archives).
OPERATOR_GO_SOURCES := main.go go.mod go.sum $(shell find apis controllers internal -name '*.go' -not -name '*_test.go')

# $(eval $(call inputs_stamp,NAME,TEXT)): a file, $(call stamp_file,NAME), whose contents are TEXT
# and the commit, rewritten only when they change, so that a build depending on it runs again when
# its inputs that no file's time shows (a version, flags, platforms) do, and only then.
stamp_file = dist/.inputs/$(1)
define inputs_stamp
.PHONY: $(call stamp_file,$(1)).check
$(call stamp_file,$(1)): $(call stamp_file,$(1)).check
	@mkdir -p $$(@D) && echo "$(2) $$$$(git rev-parse HEAD 2>/dev/null)" > $$@.new && \
		{ cmp -s $$@.new $$@ && rm $$@.new || mv $$@.new $$@; }
$(call stamp_file,$(1)).check: ;
endef
GO ?= go
GO_TEST_FLAGS ?=
# The architecture document the API implements; test/testdata/spec-manifests.yaml is extracted from it.
SPEC_DOC ?= ../shared/seeds/000_ae52c462c3f2aee5.txt

CHART_DIR := charts/service-router-operator

# Every path under bin/ and how it is built: first, so that every rule below and in the feature
# files sees them (see the file's header).
include hack/make/tools.mk

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code from the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC from the API types and +kubebuilder markers, and the chart's CRD templates.
	$(CONTROLLER_GEN) crd paths=./apis/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=service-router-operator paths=./... output:rbac:artifacts:config=config/rbac
	$(GO) run ./hack/chartcrds --crd-dir=config/crd/bases --chart-dir=$(CHART_DIR)/templates/crds

.PHONY: spec-manifests
spec-manifests: ## Re-extract the architecture document's manifests into test/testdata (needs ../shared/seeds).
	$(GO) run ./hack/specmanifests $(SPEC_DOC) test/testdata/spec-manifests.yaml

.PHONY: fmt
fmt: ## Format the Go code.
	$(GO) fmt ./...

.PHONY: vet
vet: ## Run go vet (the end-to-end and node suites' files too: build tags e2e and node).
	$(GO) vet ./...
	$(GO) vet -tags e2e,node ./test/...

.PHONY: lint
lint: $(STATICCHECK) vet ## Run go vet and staticcheck.
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags e2e,node ./test/...

.PHONY: test
test: test-needs-root test-prerequisites ## Run every test: unit, integration, packaging, the end-to-end and node suites (the node suite needs root; the first run builds every tool).
	@# The suites mostly wait (API servers, pods, ExternalDNS's synchronizations), so they run two
	@# at a time: test-go beside the builds only later suites need (TEST_GO_BESIDE: files no test
	@# of test-go reads), then the tests of the end-to-end suites in one queue (test-suites).
	@$(MAKE) --no-print-directory test-go-prerequisites
	@$(MAKE) --no-print-directory -j2 test-go-run $(TEST_GO_BESIDE)
	@$(MAKE) --no-print-directory test-suites
	@# Not every test ran: a pass here must not read as one of the whole.
	@if [ -n "$(strip $(TEST_SUITES_NEEDING_ROOT))" ]; then \
		echo "make test: every suite it ran passed; not run, as they need root: $(strip $(TEST_SUITES_NEEDING_ROOT)) (sudo make test runs them)." >&2; \
		exit 1; \
	fi

TEST_GO_BESIDE =

# The end-to-end suites (hack/make/*.mk add theirs: what they need built, their test binary among
# it, and DIR=TEST-BINARY) run as one queue, each test in a process of its own, TEST_WORKERS at a
# time (hack/testqueue): their tests mostly wait, but each world computes too. 4 is as many worlds
# as ran at once before (the end-to-end suite beside the node suite's three shards), now for both
# suites together. A node world (a two-node cluster, its images and releases) computes more than
# an end-to-end one: with four of them at once (the four longest tests, started first) the load
# reached 18 on 2 cores, so at most TEST_SUITE_CAPS of a suite run at once and the other suite's
# tests fill the workers. docs/DEVELOPMENT.md has what the queue measured.
TEST_WORKERS ?= 4
TEST_SUITE_CAPS ?= test/node=2
TEST_SUITE_TIMEOUT ?= 30m
TEST_SUITE_PREREQUISITES =
TEST_SUITE_BINARIES =

.PHONY: test-suites
test-suites:
	@$(MAKE) --no-print-directory $(SIDE_BY_SIDE) $(TEST_SUITE_PREREQUISITES)
	KUBEBUILDER_ASSETS=$(BIN) $(GO) run ./hack/testqueue --workers=$(TEST_WORKERS) --max=$(TEST_SUITE_CAPS) \
		--timeout=$(TEST_SUITE_TIMEOUT) $(TEST_SUITE_BINARIES)

# Suites that need root (hack/make/*.mk add theirs when make does not run as root): make test says
# at once which, runs every other suite, and fails at the end naming them.
AS_ROOT := $(shell [ "$$(id -u)" = 0 ] && echo yes)
TEST_SUITES_NEEDING_ROOT =

.PHONY: test-needs-root
test-needs-root:
	@if [ -n "$(strip $(TEST_SUITES_NEEDING_ROOT))" ]; then \
		echo "make test: not running as root, so these suites will not run: $(strip $(TEST_SUITES_NEEDING_ROOT))" >&2; \
		echo "  (the node suite starts kubelets, containerd and a network namespace); every other suite runs now, and make test fails at the end for the ones left out." >&2; \
	fi

# The tools `make test` runs, built side by side (TOOL_JOBS, hack/make/tools.mk) before the tests
# start; test-go and e2e then find them built.
.PHONY: test-prerequisites
test-prerequisites:
	@$(MAKE) $(SIDE_BY_SIDE) $(TEST_TOOLS)

# hack/make/*.mk add the tools of their tests.
TEST_TOOLS = control-plane external-dns bind-tools $(CONTROLLER_GEN) $(HELM) promtool

.PHONY: test-go
test-go: test-go-prerequisites ## Unit, integration (real etcd + kube-apiserver + kube-controller-manager) and packaging tests: the fast inner loop.
	@$(MAKE) --no-print-directory test-go-run

# What test-go's tests read, made one after another (code generation rewrites the tree); the
# hack/make/*.mk files add theirs (the chart's RBAC, the image, the alert rules, opm and cosign).
.PHONY: test-go-prerequisites
test-go-prerequisites: manifests generate fmt vet $(CONTROL_PLANE)

# test-go's tests alone, its prerequisites made (make test runs it beside builds: code generation
# must not rewrite the tree while they compile).
.PHONY: test-go-run
test-go-run:
	@# go test's default of 10 minutes per package is about what the integration package takes
	@# on 2 cores; 30 minutes keeps a slow machine from failing it (GO_TEST_FLAGS may override).
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test ./... -count=1 -timeout 30m $(GO_TEST_FLAGS)
	@# the image and release tools are a module of their own (hack/image), which ./... leaves out
	cd hack/image && $(GO) test ./... -count=1 $(GO_TEST_FLAGS)

# The scale benchmark's time ratios are judged with the control plane on a core of its own, as in a
# cluster (SCALE_CONTROL_PLANE_CPUS=1); `make bench SCALE_CONTROL_PLANE_CPUS=` runs unpinned.
SCALE_CONTROL_PLANE_CPUS ?= 1

.PHONY: bench
bench: manifests generate $(CONTROL_PLANE) istio ## Run the benchmarks; the scale runs against their floor at SCALE_ROUTES routes (default 3000 three times, 10000 once), control plane pinned to CPU 1, then 3000 three times unpinned; then the time until istiod programs 3000 new routes into the ingress gateway; then the time to fail over against its floor, with fast and with default failover settings; then a move's time and writes as the names grow.
	$(GO) test ./internal/... -run '^$$' -bench . -benchmem
	SCALE_CONTROL_PLANE_CPUS=$(SCALE_CONTROL_PLANE_CPUS) KUBEBUILDER_ASSETS=$(BIN) $(GO) test ./test/bench -run '^$$' -bench . -skip '^BenchmarkTimeToProgrammed$$' -benchtime 1x -timeout 180m
	@# The same scale runs with everything on the same cores (a small cluster, a homelab node, CI).
	SCALE_CONTROL_PLANE_CPUS= SCALE_ROUTES=3000 KUBEBUILDER_ASSETS=$(BIN) $(GO) test ./test/bench -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 60m
	@# Route created until istiod (bin/istio/pilot-discovery, a process) pushes its hostname to the
	@# ingress gateway, against a bare client writing the Istio Gateway; istiod shares the cores.
	SCALE_CONTROL_PLANE_CPUS= SCALE_ROUTES=3000 ISTIOD_BINARY=$(BIN)/istio/pilot-discovery KUBEBUILDER_ASSETS=$(BIN) $(GO) test ./test/bench -run '^$$' -bench '^BenchmarkTimeToProgrammed$$' -benchtime 1x -timeout 60m
	@# Time to fail over a lost region, against the takeover by hand at the instant of loss (real
	@# ExternalDNS and BIND: the end-to-end suite's prerequisites).
	$(MAKE) e2e-prerequisites
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags e2e ./test/e2e -run '^$$' -bench '^BenchmarkFailover_TimeToFailOver$$' -benchtime 1x -timeout 20m
	FAILOVER_SETTINGS=defaults KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags e2e ./test/e2e -run '^$$' -bench '^BenchmarkFailover_TimeToFailOver$$' -benchtime 1x -timeout 20m
	@# The same as users run it: ExternalDNS at 1 minute or with --events, the TTL 300 s or 30 s.
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags e2e ./test/e2e -run '^$$' -bench '^BenchmarkFailover_AsUsersRunIt$$' -benchtime 1x -timeout 60m -v
	@# Random fault schedules (loss, partition, leader changes, drains), the invariants checked throughout.
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags e2e ./test/e2e -run '^$$' -bench '^BenchmarkFailover_FaultSchedules$$' -benchtime 1x -timeout 60m -v
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags e2e ./test/e2e -run '^$$' -bench '^BenchmarkFleet_AzureBudget$$' -benchtime 1x -timeout 60m -v
	@# A move's time and record writes as a region's names grow: BIND at 300, 3,000 and 10,000 names in
	@# 30 policies (takeover and failback); Azure Private DNS at 3,000, every documented limit on.
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags e2e ./test/e2e -run '^$$' -bench '^BenchmarkFailover_AMoveAtScale$$' -benchtime 1x -timeout 120m -v
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags e2e ./test/e2e -run '^$$' -bench '^BenchmarkFailover_AzureMoveAtScale$$' -benchtime 1x -timeout 60m -v

.PHONY: verify
verify: verify-prerequisites manifests generate fmt lint ## Regenerate everything and fail if the tree changed (generated files must be committed).

# The tools `make verify` runs (the generators, the linters, the bundle and chart checks), built side
# by side (TOOL_JOBS, hack/make/tools.mk) before anything runs.
.PHONY: verify-prerequisites
verify-prerequisites:
	@$(MAKE) $(SIDE_BY_SIDE) $(CONTROLLER_GEN) $(STATICCHECK) $(KUSTOMIZE) $(OPERATOR_SDK) $(HELM)
	@if [ -f $(SPEC_DOC) ]; then $(MAKE) --no-print-directory spec-manifests; fi
	$(GO) mod tidy
	cd hack/tools && $(GO) mod tidy
	cd hack/tools/kube && $(GO) mod tidy
	cd hack/tools/kubenode && $(GO) mod tidy
	cd hack/tools/cni && $(GO) mod tidy
	cd hack/tools/etcd && $(GO) mod tidy
	cd hack/tools/operator-sdk && $(GO) mod tidy
	cd hack/tools/external-dns && $(GO) mod tidy
	cd hack/tools/istio && $(GO) mod tidy
	cd hack/image && $(GO) mod tidy
	@if [ -n "$$(git status --porcelain)" ]; then \
		echo "The tree differs from what the generators produce; run 'make manifests generate fmt' and commit:"; \
		git status --porcelain; git --no-pager diff --stat; exit 1; \
	fi
	@echo "verify: generated files are up to date"

##@ Build

.PHONY: build
build: generate fmt vet manager plugin ## Build the operator binary into bin/manager and the kubectl plugin into bin/kubectl-router.

# The binary alone, for what only runs it (the demo, the end-to-end suite): the generated files are
# committed, so regenerating, formatting and vetting every package first (what `build` adds) is
# work a first `make demo` would do for nothing. Built with the flags `go test` and `go vet` use
# (no -trimpath), so that the packages it shares with bin/demo and the tests are compiled once;
# `make image` builds its own -trimpath binaries.
.PHONY: manager
manager: ## Build bin/manager without regenerating or vetting anything first.
	$(GO) build -ldflags "$(MANAGER_LDFLAGS)" -o $(MANAGER) .

# The kubectl plugin (docs/PLUGIN.md): on the PATH, `kubectl router` runs it.
.PHONY: plugin
plugin: ## Build the kubectl plugin into bin/kubectl-router (kubectl router plan / status).
	$(GO) build -ldflags "$(PLUGIN_LDFLAGS)" -o $(PLUGIN) ./cmd/kubectl-router

.PHONY: run
run: manifests generate fmt vet ## Run the operator against the cluster in $KUBECONFIG (plain-HTTP metrics on :8080).
	$(GO) run . --metrics-bind-address=:8080 --metrics-secure=false

.PHONY: docker-build
docker-build: ## Build the operator image with the Dockerfile (needs a Docker engine; `make image` does not).
	docker build --build-arg VERSION=v$(VERSION) -t $(IMG) .

# Feature areas (packaging, end-to-end, demo) keep their targets in their own files.
include $(filter-out hack/make/tools.mk,$(sort $(wildcard hack/make/*.mk)))
