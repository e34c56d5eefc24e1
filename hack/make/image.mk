##@ Image

# `make image` builds the operator image as an OCI image layout in $(IMAGE_LAYOUT), without a
# container daemon: a multi-architecture index (IMAGE_PLATFORMS) of scratch images holding only the
# static manager binary, run as 65532:65532 (hack/image). The Dockerfile describes the same image
# for people with Docker; test/packaging checks the layout (user, entrypoint, architectures, no
# shell, the binary runs) and that the Dockerfile agrees with it.
#
# `make image-push IMG=<registry>/service-router-operator:<tag>` pushes it (below); so does any tool
# that reads OCI layouts, e.g.
#   skopeo copy --all oci:$(IMAGE_LAYOUT):v$(VERSION) docker://$(IMG)
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_LAYOUT ?= dist/image
IMAGE_BIN_DIR := dist/image-binaries
# As the Dockerfile: stripped (-s -w), with the version of `make build`.
IMAGE_LDFLAGS := -s -w $(MANAGER_LDFLAGS)

image_binary = $(IMAGE_BIN_DIR)/manager-$(subst /,-,$(1))

# It neither regenerates nor vets (`make test` and `make verify` do): the node suite's tests run
# `make image image-push` as the walkthroughs give it, several at a time, and code generation
# rewriting the tree under a concurrent build would race it. It builds only when an input changed:
# a Go file of the operator or of hack/image, the modules, or what no file's time shows (VERSION,
# the platforms, the flags, the commit: inputs_stamp). Each node test pushes the image, and on two
# busy cores the two cross-compiled links took minutes every time, one test after another under
# framework.LockTree.
IMAGE_INDEX := $(IMAGE_LAYOUT)/index.json

.PHONY: image
image: $(IMAGE_INDEX) ## Build the operator image (multi-arch OCI layout in dist/image) from the tree as it is, without Docker.

$(eval $(call inputs_stamp,image,$(VERSION) $(IMAGE_PLATFORMS) $(IMAGE_LDFLAGS) $(IMAGE_LAYOUT)))
$(IMAGE_INDEX): $(call stamp_file,image) $(OPERATOR_GO_SOURCES) $(shell find hack/image -name '*.go' -o -name 'go.*')
	@mkdir -p $(IMAGE_BIN_DIR)
	$(foreach p,$(IMAGE_PLATFORMS),CGO_ENABLED=0 GOOS=$(word 1,$(subst /, ,$(p))) GOARCH=$(word 2,$(subst /, ,$(p))) \
		$(GO) build -trimpath -ldflags "$(IMAGE_LDFLAGS)" -o $(call image_binary,$(p)) . &&) true
	cd hack/image && $(GO) run . --output=$(CURDIR)/$(IMAGE_LAYOUT) --ref-name=v$(VERSION) --version=v$(VERSION) \
		--revision="$$(git rev-parse HEAD 2>/dev/null || true)" \
		$(foreach p,$(IMAGE_PLATFORMS),--binary=$(p)=$(CURDIR)/$(call image_binary,$(p)))

# `make image-push`: the multi-architecture index `make image` wrote ($(IMAGE_LAYOUT), named
# v$(VERSION)) pushed to $(IMG) by the release tool (hack/image/release, go-containerregistry: no
# container daemon), which reads it back, checks the registry serves the layout's digest and
# prints $(IMG)'s repository@digest. Credentials come from the Docker configuration (docker login);
# REGISTRY_PLAIN_HTTP=true talks plain HTTP (a homelab registry without TLS: docs/INSTALLATION.md).
# RELEASE_TOOL and RELEASE_INSECURE are defined in release.mk (used here only in the recipe).
.PHONY: image-push
image-push: image release-tool ## Push the image of `make image` to IMG (REGISTRY_PLAIN_HTTP=true: plain HTTP) and print its digest.
	@echo "==> pushing $(IMAGE_LAYOUT) (v$(VERSION), $(IMAGE_PLATFORMS)) to $(IMG)"
	$(RELEASE_TOOL) push --layout=$(IMAGE_LAYOUT) --ref-name=v$(VERSION) --to=$(IMG) $(RELEASE_INSECURE)

# The packaging tests open the image layout.
test-go-prerequisites: image

# `make image-archive`: the image of `make image` as an OCI archive whose entry is named
# IMAGE_ARCHIVE_NAME, for a cluster without a registry: `kind load image-archive` and `k3s ctr
# images import` import it into the nodes' containerd under that name, and the chart runs it with
# image.pullPolicy Never (docs/INSTALLATION.md#five-minutes-on-k3s-or-kind). The name starts with a
# registry host (localhost/): the kubelet looks an image up by its full name.
IMAGE_ARCHIVE ?= dist/service-router-operator.tar
IMAGE_ARCHIVE_NAME ?= localhost/service-router-operator:v$(VERSION)

.PHONY: image-archive
image-archive: image release-tool ## Write the image of `make image` as an archive for `kind load image-archive` / `k3s ctr images import` (IMAGE_ARCHIVE).
	$(RELEASE_TOOL) archive --layout=$(IMAGE_LAYOUT) --ref-name=v$(VERSION) --name=$(IMAGE_ARCHIVE_NAME) --output=$(IMAGE_ARCHIVE)
