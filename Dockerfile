# syntax=docker/dockerfile:1
# The operator image for people with Docker: the static manager binary alone on scratch (no shell,
# no CA bundle: the binary carries Mozilla's roots, golang.org/x/crypto/x509roots/fallback, for the
# TLS of the azurePrivateDNS verification; a bundle given with SSL_CERT_FILE replaces them),
# running as an unprivileged user. `make image` builds the same image without Docker (hack/image);
# test/packaging checks that both have the same base, user and entrypoint.

FROM golang:1.27 AS builder
ARG TARGETOS
ARG TARGETARCH
# The version service_router_build_info reports.
ARG VERSION=dev
WORKDIR /workspace

# Dependencies first, so that source changes reuse the module download layer.
COPY go.mod go.sum ./
RUN go mod download

COPY main.go ./
COPY apis/ apis/
COPY controllers/ controllers/
COPY internal/ internal/

RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w -X github.com/service-router/service-router-operator/internal/metrics.Version=${VERSION}" -o manager .

FROM scratch
WORKDIR /
COPY --from=builder /workspace/manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
