# OLM v0 (the Operator Lifecycle Manager that OperatorHub clusters run) for the node suite's
# OperatorHub tests (test/node/olm_test.go): its olm and catalog operators, package server,
# copy-content and cpb (the bundle unpack Job's util image), built from the
# operator-lifecycle-manager module v0.38.0 (hack/tools/olm). The test packages them as images in
# the world's registry and installs OLM from that version's own manifests
# (deploy/upstream/quickstart/crds.yaml and olm.yaml), only the image references replaced.
#
# The paths are defined here, at the top of the file, before any rule that lists them (see the
# comment at the top of hack/make/tools.mk); node.mk's e2e-node-prerequisites builds `olm`.

OLM_BIN := $(BIN)/olm
OLM_COMMANDS := $(OLM_BIN)/olm $(OLM_BIN)/catalog $(OLM_BIN)/package-server $(OLM_BIN)/copy-content $(OLM_BIN)/cpb
# The test of `operator-sdk scorecard` (test/node/olm_scorecard_test.go): the scorecard-test
# command of operator-sdk's scorecard-test image, from the operator-sdk module of hack/tools/operator-sdk.
SCORECARD_TEST := $(BIN)/scorecard-test

##@ OLM (node suite)

# Static, as upstream's image ships them (distroless/static): the images the suite builds hold
# nothing else. One go build: the five share most of their compiled packages.
$(OLM_COMMANDS) &: hack/tools/olm/go.mod
	@echo "==> building OLM v0.38.0 (olm, catalog, package-server, copy-content, cpb) into bin/olm (first run only, a few minutes)"
	cd hack/tools/olm && CGO_ENABLED=0 $(GO) build -o $(OLM_BIN)/ \
		github.com/operator-framework/operator-lifecycle-manager/cmd/olm \
		github.com/operator-framework/operator-lifecycle-manager/cmd/catalog \
		github.com/operator-framework/operator-lifecycle-manager/cmd/package-server \
		github.com/operator-framework/operator-lifecycle-manager/cmd/copy-content \
		github.com/operator-framework/operator-lifecycle-manager/util/cpb
	@touch $(OLM_COMMANDS)

# Static: the suite packages it as an image with nothing else in it.
$(SCORECARD_TEST): hack/tools/operator-sdk/go.mod
	@echo "==> building operator-sdk's scorecard-test into bin/ (first run only)"
	cd hack/tools/operator-sdk && CGO_ENABLED=0 $(GO) build -o $@ github.com/operator-framework/operator-sdk/images/scorecard-test

.PHONY: olm
olm: $(OLM_COMMANDS) $(OPERATOR_SDK) $(SCORECARD_TEST) ## Build OLM v0.38.0's commands, operator-sdk and scorecard-test for the node suite.
	@:
