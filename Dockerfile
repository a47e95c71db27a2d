# The switchboard gateway, as a small non-root image.
#
#   docker build -t switchboard \
#     --build-arg VERSION="$(git describe --tags --always --dirty | sed 's/^v//')" \
#     --build-arg COMMIT="$(git rev-parse HEAD)" .
#   docker run --rm -p 7777:7777 -e SWITCHBOARD_TOKEN=change-me switchboard
#
# Without VERSION, `switchboard version` reports dev. Releases build their
# image from the release binaries instead (Dockerfile.release, by
# GoReleaser; see docs/releasing.md).
#
# The image has no shell and no Node or Python: it runs remote (http, sse)
# servers, and the built-in demo servers of the embedded default config.
# For stdio servers that need a runtime, build FROM an image that has it.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags="-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
    -o /out/switchboard ./cmd/switchboard

FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/switchboard /usr/local/bin/switchboard
# Where the image's Debian packages keep theirs.
COPY LICENSE NOTICE /usr/share/doc/switchboard/
USER nonroot:nonroot
EXPOSE 7777
ENTRYPOINT ["/usr/local/bin/switchboard"]
# Listening beyond loopback needs a token: set SWITCHBOARD_TOKEN. Mount a
# config at /etc/switchboard/mcp.json and add "--config", that path.
CMD ["serve", "--listen", "0.0.0.0:7777", "--auth-token-env", "SWITCHBOARD_TOKEN"]
