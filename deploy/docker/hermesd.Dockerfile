# The Hermes Cloud service image: `hermesd` (every role: api, worker, gateway, scheduler,
# migrate) and `hermesctl` (the operator's CLI), for clusters and compose files that pull from
# a registry. Machines without a registry build the equivalent image from their own binaries
# with deploy/docker/build-local-image.sh.
#
# Build from the repository root (BuildKit, for the cache mounts):
#   DOCKER_BUILDKIT=1 docker build -f deploy/docker/hermesd.Dockerfile \
#     --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     -t <registry>/hermes-cloud:0.1.0 .
#
# The runtime has no shell and no package manager: glibc, libgcc, CA certificates and the two
# binaries. It runs as uid 65532 on a read-only root filesystem (the chart mounts /tmp).
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
# The release profile keeps debug info for profiling; the image's binaries are stripped.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p hermesd -p hermesctl \
 && install -D -s -m 0755 target/release/hermesd /out/hermesd \
 && install -D -s -m 0755 target/release/hermesctl /out/hermesctl

FROM gcr.io/distroless/cc-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
# Where the source lives (the repository URL this image was built from).
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="hermes-cloud" \
      org.opencontainers.image.description="Hermes Cloud: hosted autonomous agents for many teams (hermesd, hermesctl)" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/hermesd /out/hermesctl /usr/local/bin/
# Listen on every interface inside the container; the ops port (probes, /metrics) is separate.
ENV HERMES__HTTP__BIND=0.0.0.0:8080 \
    HERMES__GATEWAY__BIND=0.0.0.0:8081 \
    HERMES__OPS__BIND=0.0.0.0:9090 \
    HERMES__TELEMETRY__LOG_FORMAT=json
EXPOSE 8080 8081 9090
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/hermesd"]
CMD ["all"]
