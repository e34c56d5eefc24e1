##@ Helm chart

# The chart never carries hand-written copies of generated things:
# - the CRD templates in templates/crds/ are generated from config/crd/bases by `make manifests`
#   (hack/chartcrds): templates, not crds/, so that `helm upgrade` carries every schema change;
# - the rules (and aggregation labels) of every Role and ClusterRole in templates/rbac/ are copied
#   from config/rbac by `make chart-rbac` (hack/chartrbac); only the names, namespaces, conditions
#   and Helm labels around them come from the generator's table. Bindings, the Deployment and the
#   rest of the templates are ordinary hand-written templates.
CHART_RBAC_DIR := $(CHART_DIR)/templates/rbac
CHART_DIST ?= dist

.PHONY: chart-rbac
chart-rbac: manifests ## Regenerate the rules of the chart's Roles and ClusterRoles from config/rbac.
	$(GO) run ./hack/chartrbac --config-dir=config/rbac --chart-dir=$(CHART_RBAC_DIR)

.PHONY: chart-lint
chart-lint: $(HELM) ## Lint the chart strictly, with the default values and with every docs/examples values file.
	$(HELM) lint --strict $(CHART_DIR)
	@for f in docs/examples/*values*.yaml; do \
		echo "$(HELM) lint --strict $(CHART_DIR) -f $$f"; \
		$(HELM) lint --strict $(CHART_DIR) -f $$f; \
	done

.PHONY: chart-verify
chart-verify: chart-rbac chart-lint ## Regenerate the chart's CRDs and RBAC, lint it, and fail if the chart differs from what is committed.
	@if [ -n "$$(git status --porcelain -- $(CHART_DIR))" ]; then \
		echo "$(CHART_DIR) differs from what 'make manifests chart-rbac' generates; commit the result:" >&2; \
		git status --porcelain -- $(CHART_DIR) >&2; git --no-pager diff -- $(CHART_DIR) >&2; exit 1; \
	fi

.PHONY: chart-package
chart-package: chart-rbac $(HELM) ## Package the chart into $(CHART_DIST)/.
	$(HELM) package $(CHART_DIR) --destination $(CHART_DIST)

# The packaging tests (test/packaging) run bin/helm and compare the chart with config/rbac, which
# `make test` regenerates first (like the CRDs).
test-go-prerequisites: $(HELM) chart-rbac

# `make verify` also regenerates the chart's RBAC and the OLM bundle (bundle.mk).
verify: chart-rbac
