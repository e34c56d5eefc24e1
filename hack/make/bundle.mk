##@ OLM bundle

# The bundle (bundle/, bundle.Dockerfile) is generated from config/ only:
#   config/manifests/bases/*.clusterserviceversion.yaml  UI metadata, descriptors, install modes
#   config/default (CRDs, RBAC, Deployment, metrics Service), config/samples (alm-examples),
#   config/scorecard (bundle/tests/scorecard).
# OLM channel naming convention (https://olm.operatorframework.io/docs/best-practices/channel-naming):
# candidate for pre-releases such as this alpha, fast and stable once the API is v1.
BUNDLE_CHANNELS ?= candidate
BUNDLE_DEFAULT_CHANNEL ?= candidate
BUNDLE_METADATA_OPTS ?= --channels=$(BUNDLE_CHANNELS) --default-channel=$(BUNDLE_DEFAULT_CHANNEL)
BUNDLE_IMG ?= $(IMAGE_REGISTRY)/service-router-operator-bundle:v$(VERSION)
# operator-sdk stamps the CSV with the time of generation; a fixed value keeps `make verify`
# reproducible. Set it to the release date when VERSION changes.
BUNDLE_CREATED_AT ?= 2026-11-25T00:00:00Z
# Kubernetes version the optional validators check removed APIs against (the newest we test on).
BUNDLE_VALIDATE_K8S_VERSION ?= 1.37
BUNDLE_CSV := bundle/manifests/service-router-operator.clusterserviceversion.yaml

.PHONY: bundle
bundle: manifests $(KUSTOMIZE) $(OPERATOR_SDK) ## Generate the OLM bundle (bundle/, bundle.Dockerfile) for IMG and VERSION, then validate it.
	@# The API types carry no operator-sdk CSV markers: --apis-dir names no Go package, so that
	@# the owned-CRD descriptions and descriptors of the CSV base are kept as written.
	$(OPERATOR_SDK) generate kustomize manifests -q --apis-dir config/manifests/no-go-apis 2>&1 \
		| { grep -v 'Skipping definitions parsing' || true; }
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	rm -rf bundle/manifests bundle/metadata bundle/tests
	$(KUSTOMIZE) build config/manifests | $(OPERATOR_SDK) generate bundle -q --overwrite --version $(VERSION) $(BUNDLE_METADATA_OPTS)
	sed -i -E 's|^(    createdAt: ).*$$|\1"$(BUNDLE_CREATED_AT)"|' $(BUNDLE_CSV)
	$(OPERATOR_SDK) bundle validate ./bundle

.PHONY: bundle-validate
bundle-validate: $(OPERATOR_SDK) ## Validate bundle/ with the operatorframework suite; fail on any error or warning.
	@out="$$($(OPERATOR_SDK) bundle validate ./bundle --select-optional suite=operatorframework \
		--optional-values=k8s-version=$(BUNDLE_VALIDATE_K8S_VERSION) 2>&1)" || { echo "$$out"; exit 1; }; \
	echo "$$out"; \
	if echo "$$out" | grep -Eq '^(WARN|ERRO)|level=(warning|error)'; then \
		echo "bundle-validate: the validators reported warnings; an OperatorHub review would reject them" >&2; exit 1; \
	fi

.PHONY: bundle-verify
bundle-verify: bundle bundle-validate ## Regenerate and strictly validate the bundle, and fail if it differs from what is committed.
	@if [ -n "$$(git status --porcelain -- bundle bundle.Dockerfile config/manifests config/manager)" ]; then \
		echo "The bundle differs from what 'make bundle' generates; commit the result:" >&2; \
		git status --porcelain -- bundle bundle.Dockerfile config/manifests config/manager >&2; \
		git --no-pager diff --stat -- bundle bundle.Dockerfile config/manifests config/manager >&2; exit 1; \
	fi

.PHONY: bundle-build
bundle-build: ## Build the bundle image BUNDLE_IMG (needs a Docker engine).
	docker build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

# `make verify` regenerates the bundle too, so that its drift check covers bundle/.
verify: bundle-verify
