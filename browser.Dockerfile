# The browser pods: Debian's headless shell, run by Shutter's browser
# supervisor (`server browser`) under tini (which reaps the renderer
# processes). Chromium's DevTools listen on loopback only; the supervisor
# serves port 9222 to holders of BROWSER_TOKEN. The Noto fonts draw CJK,
# Arabic, Indic, Thai and emoji (about 150 MB of the image).
#   docker build -f browser.Dockerfile -t shutter-browser .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/shutterhq/shutter/internal/version.Version=${VERSION}" -o /out/server ./cmd/server

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium-headless-shell tini fonts-dejavu-core fonts-liberation fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji webext-ublock-origin-chromium ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 65532 --user-group --home-dir /tmp --no-create-home chromium
COPY --from=build /out/server /server
USER 65532:65532
ENV HOME=/tmp BROWSER_LISTEN=:9222
EXPOSE 9222
ENTRYPOINT ["/usr/bin/tini", "--", "/server"]
CMD ["browser", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic", "--disable-breakpad", "--js-flags=--max-old-space-size=512", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp"]
