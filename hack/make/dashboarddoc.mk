##@ Dashboard documentation

# The panel descriptions of docs/OPERATOR-GUIDE.md#dashboard (title, type, unit, description and
# PromQL of every panel) are generated from the Grafana dashboard's JSON by hack/dashboarddoc, since
# no image of it can be rendered here; the rest of the section is written by hand. hack/dashboarddoc's
# own tests fail when the description is out of date.
.PHONY: dashboard-docs
dashboard-docs: ## Regenerate the dashboard's panel descriptions in docs/OPERATOR-GUIDE.md from its JSON.
	$(GO) run ./hack/dashboarddoc -dashboard $(GRAFANA_DASHBOARD) -doc docs/OPERATOR-GUIDE.md

verify: dashboard-docs
