# muster's image: a static binary on a distroless base, running as non-root (65532).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/muster ./cmd/muster \
 && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/kubectl-muster ./cmd/kubectl-muster

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/muster /out/kubectl-muster /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/muster"]
