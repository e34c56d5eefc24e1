# Istio for the node suite's Istio tests (test/node/istio_test.go): istiod (pilot-discovery) and
# istioctl built from istio.io/istio (hack/tools/istio pins the version), and the two charts users
# install Istio with (base: the CRDs and the default validating webhook; istiod), copied from the
# same module. The test packages istiod as an image in the world's registry and installs the
# charts with helm, only the image reference set; istioctl runs `analyze` against the cluster.
#
# The paths are defined here, at the top of the file, before any rule that lists them (see the
# comment at the top of hack/make/tools.mk); node.mk's e2e-node-prerequisites builds `istio`.

ISTIO_BIN := $(BIN)/istio
ISTIO_COMMANDS := $(ISTIO_BIN)/pilot-discovery $(ISTIO_BIN)/istioctl
ISTIO_CHARTS := $(ISTIO_BIN)/charts
# The module version, and the version the binaries report (Istio's own builds of its main line
# call themselves <minor>-alpha.<commit>). The minor, 1.31, is the pinned module's VERSION file:
# change it with the pin (the tests read the version from the binary, the docs name 1.31).
ISTIO_MODULE_VERSION = $(shell sed -n 's/^require istio.io\/istio //p' hack/tools/istio/go.mod)
ISTIO_BUILD_VERSION = 1.31-alpha.$(lastword $(subst -, ,$(ISTIO_MODULE_VERSION)))

##@ Istio (node suite)

# Static, as Istio's distroless images ship them. One go build: the two share most of their
# compiled packages (measured from empty Go caches on 2 cores: 3 min 42 s, 7 minutes of CPU).
$(ISTIO_COMMANDS) &: hack/tools/istio/go.mod
	@echo "==> building Istio $(ISTIO_BUILD_VERSION) (istiod's pilot-discovery and istioctl) into bin/istio (first run only, a few minutes)"
	cd hack/tools/istio && CGO_ENABLED=0 $(GO) build -o $(ISTIO_BIN)/ \
		-ldflags "-X istio.io/istio/pkg/version.buildVersion=$(ISTIO_BUILD_VERSION) -X istio.io/istio/pkg/version.buildGitRevision=$(ISTIO_MODULE_VERSION) -X istio.io/istio/pkg/version.buildStatus=Clean" \
		istio.io/istio/pilot/cmd/pilot-discovery istio.io/istio/istioctl/cmd/istioctl
	@touch $(ISTIO_COMMANDS)

# The charts of the same module version (`helm install istio-base istio/base` and `istiod
# istio/istiod` install these charts from Istio's repository).
$(ISTIO_CHARTS): hack/tools/istio/go.mod
	@rm -rf $@ && mkdir -p $@
	dir=$$(cd hack/tools/istio && $(GO) mod download -json istio.io/istio | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p') && \
		cp -R $$dir/manifests/charts/base $@/base && \
		cp -R $$dir/manifests/charts/istio-control/istio-discovery $@/istiod && \
		chmod -R u+w $@ && echo "$(ISTIO_MODULE_VERSION)" > $@/MODULE_VERSION

.PHONY: istio
istio: $(ISTIO_COMMANDS) $(ISTIO_CHARTS) ## Build Istio's istiod and istioctl into bin/istio, with its base and istiod charts.
	@:
