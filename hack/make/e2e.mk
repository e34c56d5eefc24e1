# End-to-end infrastructure: the real ExternalDNS binary (v0.22.0 with its rfc2136 and Azure
# providers), BIND 9 as an RFC 2136 DNS server, and the Go end-to-end suite in test/e2e (build tag
# `e2e`), which starts control planes, `named` processes, ExternalDNS processes and the operator as
# plain local processes.
#
# bin/external-dns and the control plane are built by the rules of hack/make/tools.mk.

E2E_TIMEOUT ?= 30m
E2E_FLAGS ?=

##@ End-to-end (real ExternalDNS + BIND)

# `named`, `dig` and `nsupdate` come from the distribution (Debian: bind9, bind9-dnsutils).
# Installing needs root; it runs non-interactively so that it works in CI without a terminal.
.PHONY: bind-tools
bind-tools: ## Make sure BIND 9 `named`, `dig` and `nsupdate` are installed (apt-get when missing).
	@if { command -v named || [ -x /usr/sbin/named ]; } >/dev/null 2>&1 && command -v dig >/dev/null 2>&1 && command -v nsupdate >/dev/null 2>&1; then \
		exit 0; \
	fi; \
	echo "==> installing bind9 and bind9-dnsutils (named, dig, nsupdate) with apt-get"; \
	if ! command -v apt-get >/dev/null 2>&1; then \
		echo "bind-tools: named/dig/nsupdate missing and apt-get not available; install BIND 9 (named), dig and nsupdate by hand" >&2; exit 1; \
	fi; \
	SUDO=""; if [ "$$(id -u)" != "0" ]; then SUDO="sudo -n"; fi; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$SUDO apt-get update -q </dev/null; \
	$$SUDO apt-get install -y -q --no-install-recommends bind9 bind9-dnsutils </dev/null; \
	{ command -v named || [ -x /usr/sbin/named ]; } >/dev/null && command -v dig >/dev/null && command -v nsupdate >/dev/null

# demo-build (demo.mk): the suite also runs the demo program as `make demo` does; helm renders the
# ExternalDNS example values with the ExternalDNS chart (TestExternalDNSExample_RestartKeepsTheZone).
.PHONY: e2e-prerequisites
e2e-prerequisites:
	@$(MAKE) $(SIDE_BY_SIDE) control-plane external-dns bind-tools $(HELM) manager demo-build

.PHONY: e2e
e2e: e2e-prerequisites ## Run the end-to-end suite: two clusters, three regional BIND zones, the real ExternalDNS, dig (docs/EXTERNALDNS-INTEGRATION.md).
	KUBEBUILDER_ASSETS=$(BIN) $(GO) test -tags e2e ./test/e2e/... -count=1 -v -timeout $(E2E_TIMEOUT) $(E2E_FLAGS)
