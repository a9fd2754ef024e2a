# zarrd container image.
#
#   docker build -t zarrd .
#   docker run --rm -p 8080:8080 zarrd                  # serves the bundled sample dataset
#
# Your own configuration (a config file replaces the embedded default as a whole, so it must
# set `listen` and at least one dataset; the image's ZARRD_LISTEN still overrides `listen`):
#
#   docker run --rm -p 8080:8080 \
#     -v ./my.toml:/etc/zarrd/config.toml:ro -e ZARRD_CONFIG=/etc/zarrd/config.toml zarrd
#
# Your own data, with the default config plus one more dataset:
#
#   docker run --rm -p 8080:8080 -v /srv/zarr:/data:ro zarrd serve --dataset era5=/data/era5.zarr
#
# Any config value can be set as ZARRD__SECTION__KEY, e.g. -e ZARRD__LIMITS__MAX_IN_FLIGHT=64;
# object-store credentials come from the usual AWS_*/GOOGLE_*/AZURE_* variables. The root
# filesystem can be read-only (--read-only): zarrd writes nothing but stdout.
#
# CI (.ci/docker.sh) builds this file unchanged, on local stand-ins for the two FROM images
# (registry images cannot be pulled there): a debootstrap'ed Debian bookworm rootfs as
# debian:bookworm-slim, and that rootfs plus the host's Rust 1.95.0 toolchain and already
# compiled dependencies as rust:1.95-bookworm. See docs/deployment.md.

# ---------------------------------------------------------------------------------------------
# Builder: compiles the release binary. The C parts (blosc-src, zstd-sys, libz-sys, aws-lc-sys
# for rustls) are built with cc, which needs only gcc/make from this image: no cmake, no
# OpenSSL (reqwest/object_store use rustls).
FROM rust:1.95-bookworm AS builder

WORKDIR /build

# Dependencies first, against stub sources of the workspace members (the server and
# crates/zarrd-core; xtask, the CI recipes, is never built here and keeps its stub), so this
# layer is reused until a manifest or Cargo.lock changes.
COPY Cargo.toml Cargo.lock ./
COPY crates/zarrd-core/Cargo.toml ./crates/zarrd-core/
COPY xtask/Cargo.toml ./xtask/
RUN mkdir src crates/zarrd-core/src xtask/src \
    && printf 'fn main() {}\n' > src/main.rs \
    && printf 'fn main() {}\n' > xtask/src/main.rs \
    && touch src/lib.rs crates/zarrd-core/src/lib.rs \
    && cargo build --release --locked \
    && rm -rf src crates/zarrd-core/src

# The real sources. config/default.toml is embedded with include_str!, so it is needed here.
# COPY keeps the files' old modification times: touch the crate roots so cargo rebuilds the
# crate instead of taking the stub build above as fresh. Stripping the symbols takes the
# binary from 21 to 17 MB (panic backtraces then show addresses, not function names).
COPY src ./src
COPY crates/zarrd-core/src ./crates/zarrd-core/src
COPY config ./config
RUN touch src/lib.rs src/main.rs crates/zarrd-core/src/lib.rs \
    && cargo build --release --locked \
    && strip target/release/zarrd

# ---------------------------------------------------------------------------------------------
# Runtime: glibc as in the builder, CA certificates for https object stores, nothing else.
FROM debian:bookworm-slim

LABEL org.opencontainers.image.title="zarrd" \
      org.opencontainers.image.description="An HTTP server for Zarr v3 arrays" \
      org.opencontainers.image.licenses="Apache-2.0"

RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# A fixed, unprivileged UID/GID so volume permissions can be planned (chown 10001 on the host).
RUN groupadd --system --gid 10001 zarrd \
    && useradd --system --no-log-init --uid 10001 --gid zarrd \
       --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin zarrd

# Relative dataset paths (the default's `data/sample.zarr`) resolve from here.
WORKDIR /srv/zarrd

COPY --from=builder /build/target/release/zarrd /usr/local/bin/zarrd
COPY data/sample.zarr ./data/sample.zarr
COPY config ./config

# The server binds loopback by default; in a container it must listen on all interfaces.
# This also overrides `listen` from a mounted config file: change the port here.
ENV ZARRD_LISTEN=0.0.0.0:8080
EXPOSE 8080

# Liveness without curl: bash (always in Debian) speaks HTTP over /dev/tcp to /healthz on the
# port taken from ZARRD_LISTEN. Load balancers should probe /readyz, which fails first on
# SIGTERM while in-flight requests finish.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["bash", "-c", "listen=${ZARRD_LISTEN:-:8080}; exec 3<>/dev/tcp/127.0.0.1/${listen##*:} && printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && read -r -t 4 _ status _ <&3 && [ \"$status\" = 200 ]"]

USER 10001:10001

# zarrd is PID 1 and handles SIGTERM itself (docker stop): readiness fails, it drains, and it
# exits within http.drain_secs + http.shutdown_timeout_secs (22 s; give `docker stop` that long).
ENTRYPOINT ["zarrd"]
CMD ["serve"]
