# The browser pods: Debian's headless shell under tini (which reaps the
# renderer processes), DevTools on 9222 for in-cluster use only (the
# operator's NetworkPolicy admits the API pods alone). The Noto fonts draw
# CJK, Arabic, Indic, Thai and emoji (about 150 MB of the image).
#   docker build -f browser.Dockerfile -t shutter-browser .
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium-headless-shell tini fonts-dejavu-core fonts-liberation fonts-noto-core fonts-noto-cjk fonts-noto-color-emoji ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 65532 --user-group --home-dir /tmp --no-create-home chromium
USER 65532:65532
ENV HOME=/tmp
EXPOSE 9222
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/lib/chromium/chromium-headless-shell"]
CMD ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic", "--disable-breakpad", "--remote-debugging-address=0.0.0.0", "--remote-debugging-port=9222", "--user-data-dir=/tmp/chromium", "--js-flags=--max-old-space-size=512", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp"]
