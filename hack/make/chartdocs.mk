##@ Chart documentation

# The values table of charts/service-router-operator/README.md is generated from the `# --`
# comments of values.yaml by hack/chartdocs (helm-docs' convention, without the tool); the rest of
# the README is written by hand. hack/chartdocs' own tests fail when the table is out of date.
.PHONY: chart-docs
chart-docs: ## Regenerate the chart README's values table from the comments of values.yaml.
	$(GO) run ./hack/chartdocs $(CHART_DIR)

verify: chart-docs
