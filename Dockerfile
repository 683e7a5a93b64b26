# The API server: a static binary on a distroless, non-root base.
#   docker build -t shutter-server .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/shutterhq/shutter/internal/version.Version=${VERSION}" -o /out/server ./cmd/server

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/server /server
USER 65532:65532
EXPOSE 3000 9464
ENV DATA_DIR=/data NODE_ENV=production
ENTRYPOINT ["/server"]
CMD ["serve"]
