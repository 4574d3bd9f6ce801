# etl in a container: a static binary on a small base.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /etl ./cmd/etl

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /etl /usr/local/bin/etl
COPY jobs.yaml /etc/etl/jobs.yaml
ENTRYPOINT ["/usr/local/bin/etl"]
