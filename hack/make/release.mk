# `make release VERSION=x.y.z REGISTRY=host/owner`: publishes a version users can install from a
# registry, without a container daemon (docs/DEVELOPMENT.md#releasing):
#   1. the multi-architecture operator image of `make image` (dist/image), pushed to
#      $(REGISTRY)/service-router-operator:v$(VERSION) and referred to by its digest from then on;
#   2. the Helm chart, its image pinned to that digest, packaged and pushed to oci://$(REGISTRY)/charts;
#   3. the OLM bundle image (bundle/ with the operator image pinned to the digest, as bundle.Dockerfile
#      describes it) to $(REGISTRY)/service-router-operator-bundle:v$(VERSION);
#   4. the file-based catalog (FBC) of the bundle's channel, rendered and validated with opm, as a
#      multi-architecture catalog image ($(REGISTRY)/service-router-operator-catalog:v$(VERSION)):
#      the catalog in /configs and opm itself, serving it (what OLM's CatalogSource runs);
#   5. into $(RELEASE_DIR): the chart archive, the binaries, an SPDX SBOM, the catalog, the digests,
#      the kubectl plugin's archives (kubectl-router-$(VERSION)-{linux,darwin}-{amd64,arm64}.tar.gz,
#      -windows-amd64.tar.gz) and its krew manifest (router.yaml, from hack/krew/router.yaml),
#      SHA256SUMS;
#   6. with RELEASE_SIGNING_KEY: cosign signatures of the three images and the chart (in the
#      registry) and of SHA256SUMS (SHA256SUMS.sig), and the public key (cosign.pub).
# Pushing is hack/image/release (go-containerregistry); credentials come from the Docker
# configuration (docker login / a CI login action) for images and from `helm registry login` for
# the chart. REGISTRY_PLAIN_HTTP=true talks plain HTTP (a registry on localhost: the release test).

# Tools (paths under bin/), defined before any rule that lists them (see hack/make/tools.mk).
ACTIONLINT := $(BIN)/actionlint
RELEASE_TOOL := $(BIN)/release-tool
# opm for this machine (render, validate), and for every platform of the catalog image (it serves
# the catalog there). Static builds: the FBC commands need none of opm's cgo (SQLite) code.
OPM := $(BIN)/opm
opm_binary = $(BIN)/opm-$(subst /,-,$(1))
OPM_PLATFORM_BINARIES = $(foreach p,$(IMAGE_PLATFORMS),$(call opm_binary,$(p)))
# grpc_health_probe for every platform of the catalog image: OLM v0 (v0.38.0, the release OperatorHub
# clusters run) probes a CatalogSource's pod by exec'ing `grpc_health_probe -addr=:50051` in it.
grpc_health_probe_binary = $(BIN)/grpc_health_probe-$(subst /,-,$(1))
GRPC_HEALTH_PROBE_PLATFORM_BINARIES = $(foreach p,$(IMAGE_PLATFORMS),$(call grpc_health_probe_binary,$(p)))
# cosign signs the pushed images and SHA256SUMS when RELEASE_SIGNING_KEY is set (below).
COSIGN := $(BIN)/cosign

REGISTRY ?=
# Where the GitHub release serves its assets: the krew manifest's download URLs.
RELEASE_DOWNLOAD_URL ?= https://github.com/service-router/service-router-operator/releases/download/v$(VERSION)
# The kubectl plugin's platforms (where kubectl users are: Linux, macOS on Intel and Apple silicon,
# Windows), archives (a krew archive: the binary and the LICENSE) and their build directory. On
# Windows the binary is kubectl-router.exe, the name kubectl looks for there.
PLUGIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
PLUGIN_DIST := dist/plugin
plugin_archive = $(PLUGIN_DIST)/kubectl-router-$(VERSION)-$(subst /,-,$(1)).tar.gz
plugin_binary = kubectl-router$(if $(filter windows/%,$(1)),.exe)
REGISTRY_PLAIN_HTTP ?= false
RELEASE_DIR ?= dist/release
RELEASE_IMAGE_REPO = $(REGISTRY)/service-router-operator
RELEASE_BUNDLE_REPO = $(REGISTRY)/service-router-operator-bundle
RELEASE_CATALOG_REPO = $(REGISTRY)/service-router-operator-catalog
# The OLM package, its channel and the version the new bundle replaces (the CSV's spec.replaces).
RELEASE_OLM_PACKAGE := service-router-operator
RELEASE_REPLACES = $(shell sed -n 's/^  replaces: //p' $(BUNDLE_CSV))
RELEASE_CHART_REPO = oci://$(REGISTRY)/charts
RELEASE_INSECURE = $(if $(filter true,$(REGISTRY_PLAIN_HTTP)),--insecure)
RELEASE_HELM_PLAIN_HTTP = $(if $(filter true,$(REGISTRY_PLAIN_HTTP)),--plain-http)
# The image reference the committed bundle (and the chart's default values) name: `make bundle`
# writes $(IMG); the release replaces it with the pushed digest.
RELEASE_BUNDLE_IMG_IN_TREE := $(IMG)
# Key-based signing with cosign, offline (no transparency log, no Fulcio): RELEASE_SIGNING_KEY is a
# cosign key reference, a file or env://VARIABLE holding the encrypted private key (the release
# workflow's secret), with its password in COSIGN_PASSWORD. Empty: nothing is signed.
RELEASE_SIGNING_KEY ?=
RELEASE_COSIGN_REGISTRY_FLAGS = $(if $(filter true,$(REGISTRY_PLAIN_HTTP)),--allow-http-registry --allow-insecure-registry)

# Fail at once, before building anything, when a release goal has nowhere to push.
ifneq ($(filter release,$(MAKECMDGOALS)),)
ifeq ($(strip $(REGISTRY)),)
$(error REGISTRY is not set: run `make release VERSION=$(VERSION) REGISTRY=<registry host>/<owner>` (e.g. REGISTRY=ghcr.io/service-router); it pushes $$REGISTRY/service-router-operator, -bundle, -catalog and oci://$$REGISTRY/charts)
endif
endif

# The signing steps of `make release`, when there is a key (a canned recipe: each line a command).
ifneq ($(strip $(RELEASE_SIGNING_KEY)),)
define RELEASE_SIGN_RECIPE
@echo "==> signing the images, the chart and SHA256SUMS with $(RELEASE_SIGNING_KEY)"
for ref in $(RELEASE_IMAGE_REPO)@$$(cat $(RELEASE_DIR)/image.digest) $(RELEASE_BUNDLE_REPO)@$$(cat $(RELEASE_DIR)/bundle.digest) \
	$(RELEASE_CATALOG_REPO)@$$(cat $(RELEASE_DIR)/catalog.digest) $(REGISTRY)/charts/service-router-operator@$$(cat $(RELEASE_DIR)/chart.digest); do \
	$(COSIGN) sign --yes --key "$(RELEASE_SIGNING_KEY)" --tlog-upload=false $(RELEASE_COSIGN_REGISTRY_FLAGS) "$$ref"; \
done
$(COSIGN) sign-blob --yes --key "$(RELEASE_SIGNING_KEY)" --tlog-upload=false \
	--output-signature $(RELEASE_DIR)/SHA256SUMS.sig $(RELEASE_DIR)/SHA256SUMS
$(COSIGN) public-key --key "$(RELEASE_SIGNING_KEY)" > $(RELEASE_DIR)/cosign.pub
endef
else
RELEASE_SIGN_RECIPE = @echo "==> not signed (RELEASE_SIGNING_KEY is empty)"
endif

##@ Release

# go build is incremental: instant when nothing changed.
.PHONY: release-tool
release-tool: ## Build hack/image/release (push an OCI layout, build the bundle image, write the SBOM) into bin/release-tool.
	cd hack/image && $(GO) build -o $(RELEASE_TOOL) ./release

# The committed chart and bundle must be those of VERSION: a release never edits the tree, it
# publishes what is committed (bump VERSION, `make bundle`, Chart.yaml's version and appVersion).
.PHONY: release-check
release-check:
	@if ! [[ "$(VERSION)" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]]; then \
		echo "release: VERSION=$(VERSION) is not a semantic version without a leading v (e.g. 0.2.0)" >&2; exit 1; fi
	@grep -qx 'version: $(VERSION)' $(CHART_DIR)/Chart.yaml || { \
		echo "release: $(CHART_DIR)/Chart.yaml is not version $(VERSION); set its version and appVersion and commit" >&2; exit 1; }
	@grep -q '^  name: service-router-operator.v$(VERSION)$$' $(BUNDLE_CSV) || { \
		echo "release: bundle/ is not version $(VERSION); run 'make bundle VERSION=$(VERSION)' and commit" >&2; exit 1; }
	@grep -q '$(RELEASE_BUNDLE_IMG_IN_TREE)' $(BUNDLE_CSV) || { \
		echo "release: the bundle's CSV does not name $(RELEASE_BUNDLE_IMG_IN_TREE) (IMG); run 'make bundle' with the default IMG and commit" >&2; exit 1; }

# The plugin's release archives, built static (-trimpath, no cgo) for each platform: five
# cross-compiled links, so only when an input changed (as `make image`), since each OLM test of
# the node suite runs `make release`.
PLUGIN_ARCHIVES := $(foreach p,$(PLUGIN_PLATFORMS),$(call plugin_archive,$(p)))

.PHONY: plugin-archives
plugin-archives: $(PLUGIN_ARCHIVES) ## Build the kubectl plugin's release archives (PLUGIN_PLATFORMS) into dist/plugin.

$(eval $(call inputs_stamp,plugin,$(VERSION) $(PLUGIN_PLATFORMS) $(PLUGIN_LDFLAGS)))
$(PLUGIN_ARCHIVES) &: $(call stamp_file,plugin) $(OPERATOR_GO_SOURCES) $(shell find cmd/kubectl-router -name '*.go')
	rm -rf $(PLUGIN_DIST) && mkdir -p $(PLUGIN_DIST)
	$(foreach p,$(PLUGIN_PLATFORMS),\
		mkdir -p $(PLUGIN_DIST)/$(subst /,-,$(p)) && cp LICENSE $(PLUGIN_DIST)/$(subst /,-,$(p))/ && \
		CGO_ENABLED=0 GOOS=$(word 1,$(subst /, ,$(p))) GOARCH=$(word 2,$(subst /, ,$(p))) \
		$(GO) build -trimpath -ldflags "-s -w $(PLUGIN_LDFLAGS)" -o $(PLUGIN_DIST)/$(subst /,-,$(p))/$(call plugin_binary,$(p)) ./cmd/kubectl-router && \
		tar -C $(PLUGIN_DIST)/$(subst /,-,$(p)) --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
			-czf $(call plugin_archive,$(p)) $(call plugin_binary,$(p)) LICENSE &&) true

.PHONY: release
release: release-check image plugin-archives $(HELM) release-tool $(OPM) $(OPM_PLATFORM_BINARIES) $(GRPC_HEALTH_PROBE_PLATFORM_BINARIES) $(if $(RELEASE_SIGNING_KEY),$(COSIGN)) ## Publish VERSION to REGISTRY: image (by digest), Helm chart (oci://REGISTRY/charts), bundle and catalog images, SBOM and checksums in dist/release.
	rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)
	@echo "==> pushing the operator image to $(RELEASE_IMAGE_REPO):v$(VERSION)"
	$(RELEASE_TOOL) push --layout=$(IMAGE_LAYOUT) --ref-name=v$(VERSION) --to=$(RELEASE_IMAGE_REPO):v$(VERSION) \
		$(RELEASE_INSECURE) --digest-file=$(RELEASE_DIR)/image.digest
	@echo "==> packaging the chart with image $(RELEASE_IMAGE_REPO)@$$(cat $(RELEASE_DIR)/image.digest) and pushing it to $(RELEASE_CHART_REPO)"
	mkdir -p $(RELEASE_DIR)/chart && cp -R $(CHART_DIR) $(RELEASE_DIR)/chart/
	@# Only the image block of values.yaml changes: the repository pushed to and its digest (which
	@# the chart's image helper prefers over the tag).
	sed -i -E '/^image:/,/^[^ #]/ { s|^(  repository: ).*$$|\1$(RELEASE_IMAGE_REPO)|; s|^(  digest: ).*$$|\1"'"$$(cat $(RELEASE_DIR)/image.digest)"'"| }' \
		$(RELEASE_DIR)/chart/service-router-operator/values.yaml
	@grep -qx "  digest: \"$$(cat $(RELEASE_DIR)/image.digest)\"" $(RELEASE_DIR)/chart/service-router-operator/values.yaml \
		|| { echo "release: could not pin the image digest in the chart's values.yaml" >&2; exit 1; }
	$(HELM) package $(RELEASE_DIR)/chart/service-router-operator --version $(VERSION) --app-version $(VERSION) --destination $(RELEASE_DIR)
	$(HELM) push $(RELEASE_DIR)/service-router-operator-$(VERSION).tgz $(RELEASE_CHART_REPO) $(RELEASE_HELM_PLAIN_HTTP) 2>&1 \
		| tee $(RELEASE_DIR)/chart.push.log
	sed -n 's/^Digest: //p' $(RELEASE_DIR)/chart.push.log > $(RELEASE_DIR)/chart.digest && rm $(RELEASE_DIR)/chart.push.log
	@grep -q '^sha256:' $(RELEASE_DIR)/chart.digest || { echo "release: helm push printed no digest" >&2; exit 1; }
	rm -rf $(RELEASE_DIR)/chart
	@echo "==> building the bundle image and pushing it to $(RELEASE_BUNDLE_REPO):v$(VERSION)"
	mkdir -p $(RELEASE_DIR)/bundle-context && cp -R bundle bundle.Dockerfile $(RELEASE_DIR)/bundle-context/
	@# The CSV's Deployment, containerImage and relatedImages name the image by its digest.
	sed -i 's|$(RELEASE_BUNDLE_IMG_IN_TREE)|$(RELEASE_IMAGE_REPO)@'"$$(cat $(RELEASE_DIR)/image.digest)"'|g' \
		$(RELEASE_DIR)/bundle-context/$(BUNDLE_CSV)
	$(RELEASE_TOOL) bundle-image --context=$(RELEASE_DIR)/bundle-context --dockerfile=$(RELEASE_DIR)/bundle-context/bundle.Dockerfile \
		--to=$(RELEASE_BUNDLE_REPO):v$(VERSION) $(RELEASE_INSECURE) --digest-file=$(RELEASE_DIR)/bundle.digest
	@echo "==> rendering the file-based catalog (channel $(BUNDLE_DEFAULT_CHANNEL)) and pushing its image to $(RELEASE_CATALOG_REPO):v$(VERSION)"
	@# One package, its default channel, the bundle and the channel entry upgrading from the release
	@# the CSV replaces. opm renders the bundle from the directory the bundle image was just built
	@# from (the same files), not from the registry: pulling needs a containers policy.json
	@# (/etc/containers, ~/.config/containers) that neither this machine nor CI runners are sure to
	@# have. The rendered bundle's image, empty for a directory, is the pushed image by digest.
	mkdir -p $(RELEASE_DIR)/catalog/$(RELEASE_OLM_PACKAGE)
	{ $(OPM) init $(RELEASE_OLM_PACKAGE) --default-channel=$(BUNDLE_DEFAULT_CHANNEL) --output=yaml; \
	  echo "---"; \
	  $(OPM) render $(RELEASE_DIR)/bundle-context/bundle --output=yaml \
		| sed 's|^image: ""$$|image: $(RELEASE_BUNDLE_REPO)@'"$$(cat $(RELEASE_DIR)/bundle.digest)"'|'; \
	  printf -- '---\nschema: olm.channel\npackage: %s\nname: %s\nentries:\n  - name: %s.v%s\n' \
		$(RELEASE_OLM_PACKAGE) $(BUNDLE_DEFAULT_CHANNEL) $(RELEASE_OLM_PACKAGE) $(VERSION); \
	  if [ -n "$(RELEASE_REPLACES)" ]; then printf '    replaces: %s\n' $(RELEASE_REPLACES); fi; \
	} > $(RELEASE_DIR)/catalog/$(RELEASE_OLM_PACKAGE)/catalog.yaml
	@grep -q '^image: $(RELEASE_BUNDLE_REPO)@sha256:' $(RELEASE_DIR)/catalog/$(RELEASE_OLM_PACKAGE)/catalog.yaml || { \
		echo "release: the rendered bundle does not name the pushed bundle image" >&2; exit 1; }
	$(OPM) validate $(RELEASE_DIR)/catalog
	rm -rf $(RELEASE_DIR)/bundle-context
	$(RELEASE_TOOL) catalog-image --catalog=$(RELEASE_DIR)/catalog --version=v$(VERSION) \
		$(foreach p,$(IMAGE_PLATFORMS),--opm=$(p)=$(call opm_binary,$(p)) --grpc-health-probe=$(p)=$(call grpc_health_probe_binary,$(p))) \
		--to=$(RELEASE_CATALOG_REPO):v$(VERSION) $(RELEASE_INSECURE) --digest-file=$(RELEASE_DIR)/catalog.digest
	tar -C $(RELEASE_DIR) --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -czf $(RELEASE_DIR)/service-router-operator-catalog-$(VERSION).tar.gz catalog
	rm -rf $(RELEASE_DIR)/catalog
	@echo "==> SBOM, binaries and checksums in $(RELEASE_DIR)"
	$(foreach p,$(IMAGE_PLATFORMS),cp $(call image_binary,$(p)) $(RELEASE_DIR)/service-router-operator-$(subst /,-,$(p)) &&) true
	$(foreach p,$(PLUGIN_PLATFORMS),cp $(call plugin_archive,$(p)) $(RELEASE_DIR)/ &&) true
	$(RELEASE_TOOL) krew-manifest --template=hack/krew/router.yaml --version=$(VERSION) --url-base=$(RELEASE_DOWNLOAD_URL) \
		$(foreach p,$(PLUGIN_PLATFORMS),--archive=$(p)=$(RELEASE_DIR)/$(notdir $(call plugin_archive,$(p)))) --output=$(RELEASE_DIR)/router.yaml
	$(RELEASE_TOOL) sbom --version=v$(VERSION) --image=$(RELEASE_IMAGE_REPO)@$$(cat $(RELEASE_DIR)/image.digest) \
		$(foreach p,$(IMAGE_PLATFORMS),--binary=$(p)=$(RELEASE_DIR)/service-router-operator-$(subst /,-,$(p))) \
		--output=$(RELEASE_DIR)/service-router-operator-$(VERSION).spdx.json
	{ echo "$(RELEASE_IMAGE_REPO):v$(VERSION)@$$(cat $(RELEASE_DIR)/image.digest)"; \
	  echo "$(RELEASE_BUNDLE_REPO):v$(VERSION)@$$(cat $(RELEASE_DIR)/bundle.digest)"; \
	  echo "$(RELEASE_CATALOG_REPO):v$(VERSION)@$$(cat $(RELEASE_DIR)/catalog.digest)"; \
	  echo "$(RELEASE_CHART_REPO)/service-router-operator:$(VERSION)@$$(cat $(RELEASE_DIR)/chart.digest)"; } > $(RELEASE_DIR)/images.txt
	cd $(RELEASE_DIR) && sha256sum service-router-operator-* kubectl-router-* router.yaml images.txt image.digest bundle.digest catalog.digest chart.digest > SHA256SUMS
	$(RELEASE_SIGN_RECIPE)
	@echo "==> released $(VERSION):"; cat $(RELEASE_DIR)/images.txt

# The version opm reports, from the pinned module (as its own release build sets it).
OPM_VERSION = $(shell awk '{ for (i = 1; i < NF; i++) if ($$i == "github.com/operator-framework/operator-registry") print $$(i + 1) }' hack/tools/opm/go.mod)
OPM_BUILD_FLAGS = -tags containers_image_openpgp \
	-ldflags "-s -w -X github.com/operator-framework/operator-registry/cmd/opm/version.opmVersion=$(OPM_VERSION)"
OPM_PACKAGE := github.com/operator-framework/operator-registry/cmd/opm

# About 5 minutes on 2 cores the first time (operator-registry links containers/image, gRPC and
# Kubernetes client code; 100 MB); each platform binary a few minutes more.
$(OPM): hack/tools/opm/go.mod
	@echo "==> building opm $(OPM_VERSION) into bin/ (first run only, about 5 minutes)"
	cd hack/tools/opm && CGO_ENABLED=0 $(GO) build $(OPM_BUILD_FLAGS) -o $@ $(OPM_PACKAGE)

$(BIN)/opm-linux-%: hack/tools/opm/go.mod
	@echo "==> building opm $(OPM_VERSION) for linux/$* (the catalog image) into bin/ (first run only)"
	cd hack/tools/opm && CGO_ENABLED=0 GOOS=linux GOARCH=$* $(GO) build $(OPM_BUILD_FLAGS) -o $@ $(OPM_PACKAGE)

# Static (as its own releases are); under a minute of CPU per platform.
$(BIN)/grpc_health_probe-linux-%: hack/tools/grpc-health-probe/go.mod
	@echo "==> building grpc_health_probe for linux/$* (the catalog image) into bin/ (first run only)"
	cd hack/tools/grpc-health-probe && CGO_ENABLED=0 GOOS=linux GOARCH=$* $(GO) build -ldflags "-s -w" -o $@ github.com/grpc-ecosystem/grpc-health-probe

.PHONY: opm
opm: $(OPM) ## Build opm (operator-framework/operator-registry) into bin/.
	@: # (a recipe, so that make does not say "Nothing to be done" when a sub-make finds it built)

.PHONY: opm-tidy
opm-tidy:
	cd hack/tools/opm && $(GO) mod tidy

verify: opm-tidy

# Built when a release is signed. CGO_ENABLED=0: cosign's key-based signing needs no cgo (no
# PKCS#11 hardware keys).
COSIGN_VERSION = $(shell awk '{ for (i = 1; i < NF; i++) if ($$i == "github.com/sigstore/cosign/v2") print $$(i + 1) }' hack/tools/cosign/go.mod)

$(COSIGN): hack/tools/cosign/go.mod
	@echo "==> building cosign $(COSIGN_VERSION) into bin/ (first run only, several minutes)"
	cd hack/tools/cosign && CGO_ENABLED=0 $(GO) build -ldflags "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$(COSIGN_VERSION)" -o $@ github.com/sigstore/cosign/v2/cmd/cosign

.PHONY: cosign
cosign: $(COSIGN) ## Build cosign into bin/ (signs releases when RELEASE_SIGNING_KEY is set).
	@: # (a recipe, so that make does not say "Nothing to be done" when a sub-make finds it built)

.PHONY: cosign-tidy
cosign-tidy:
	cd hack/tools/cosign && $(GO) mod tidy

verify: cosign-tidy

##@ Workflows

$(ACTIONLINT): hack/tools/actionlint/go.mod
	@echo "==> building actionlint into bin/ (first run only)"
	cd hack/tools/actionlint && $(GO) build -o $@ github.com/rhysd/actionlint/cmd/actionlint

# shellcheck and pyflakes (which actionlint runs on `run:` scripts when it finds them on PATH) are
# turned off: the check must say the same on every machine, and neither is built by the Makefile.
.PHONY: actionlint
actionlint: $(ACTIONLINT) ## Check the GitHub Actions workflows (.github/workflows) with actionlint.
	$(ACTIONLINT) -no-color -shellcheck= -pyflakes=

.PHONY: actionlint-tidy
actionlint-tidy:
	cd hack/tools/actionlint && $(GO) mod tidy

# `make verify` checks the workflows and keeps the actionlint module tidy.
verify: actionlint actionlint-tidy

# test/release runs `make release`, which builds opm for this machine and every image platform: built
# here first, so that the tests do not wait for them one by one.
test-go-prerequisites: $(OPM) $(OPM_PLATFORM_BINARIES) $(HELM) $(COSIGN)
TEST_TOOLS += $(OPM) $(OPM_PLATFORM_BINARIES) $(COSIGN)
