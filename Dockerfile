# The API server: a static binary on a distroless, non-root base, with the
# maintained filter lists (EasyList, EasyPrivacy: Debian's snapshot) and
# DuckDuckGo's consent engine (npm, pinned and checked) it loads at start.
#   docker build -t shutter-server .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/shutterhq/shutter/internal/version.Version=${VERSION}" -o /out/server ./cmd/server

FROM debian:bookworm-slim AS data
ARG AUTOCONSENT_VERSION=16.23.0
ARG AUTOCONSENT_SHA256=b61907d0cae6f1f26679533c9951fe56573ca8038e12addfee5cb3f58de5fccc
RUN apt-get update \
 && apt-get install -y --no-install-recommends webext-ublock-origin-chromium curl ca-certificates \
 && curl -fsSL -o /tmp/autoconsent.tgz https://registry.npmjs.org/@duckduckgo/autoconsent/-/autoconsent-${AUTOCONSENT_VERSION}.tgz \
 && echo "${AUTOCONSENT_SHA256}  /tmp/autoconsent.tgz" | sha256sum -c - \
 && mkdir -p /usr/share/shutter/autoconsent \
 && tar xzf /tmp/autoconsent.tgz -C /usr/share/shutter/autoconsent --strip-components=1 \
      package/dist/autoconsent.playwright.js package/rules/compact-rules.json package/LICENSE package/package.json

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/server /server
COPY --from=data /usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist /usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist
COPY --from=data /usr/share/shutter/autoconsent /usr/share/shutter/autoconsent
USER 65532:65532
EXPOSE 3000 9464
ENV DATA_DIR=/data NODE_ENV=production
ENTRYPOINT ["/server"]
CMD ["serve"]
