# End-to-end infrastructure: the real ExternalDNS binary (v0.23.0 with its rfc2136 and Azure
# providers), BIND 9 as an RFC 2136 DNS server, and the Go end-to-end suite in test/e2e (build tag
# `e2e`), which starts control planes, `named` processes, ExternalDNS processes and the operator as
# plain local processes.
#
# bin/external-dns and the control plane are built by the rules of hack/make/tools.mk.

# hack/testqueue runs each test in a process of its own, TEST_WORKERS at a time (Makefile).
# E2E_RUN selects tests (a -test.run expression), E2E_FLAGS adds test binary flags
# (-test.failfast, ...), E2E_TIMEOUT bounds each test.
E2E_RUN ?= .
E2E_TIMEOUT ?= 30m
E2E_FLAGS ?=
E2E_BINARY := $(BIN)/e2e.test

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
e2e: e2e-prerequisites e2e-binary ## Run the end-to-end suite: two clusters, three regional BIND zones, the real ExternalDNS, dig (docs/EXTERNALDNS-INTEGRATION.md).
	KUBEBUILDER_ASSETS=$(BIN) $(GO) run ./hack/testqueue --workers=$(TEST_WORKERS) --run='$(E2E_RUN)' \
		--timeout=$(E2E_TIMEOUT) test/e2e=$(E2E_BINARY) -- $(E2E_FLAGS)

.PHONY: e2e-binary
e2e-binary:
	$(GO) test -c -tags e2e -o $(E2E_BINARY) ./test/e2e

# make test runs the suite's tests in one queue with the other suites' (TEST_SUITE_BINARIES).
TEST_SUITE_PREREQUISITES += e2e-prerequisites e2e-binary
TEST_SUITE_BINARIES += test/e2e=$(E2E_BINARY)
