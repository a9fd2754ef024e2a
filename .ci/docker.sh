#!/usr/bin/env bash
# Builds the Dockerfile with Debian's docker.io and proves the image:
#   - it runs as UID 10001 (not root) on a read-only root filesystem;
#   - /healthz and /readyz answer, and a slice of the bundled sample equals what
#     zarr-python reads from data/sample.zarr;
#   - configuration by ZARRD__... environment variables and by a mounted config file (the
#     ConfigMap's config.toml of deploy/kubernetes) both take effect;
#   - `docker stop` drains: /readyz fails first while /healthz answers, a request in flight
#     finishes with its whole body, and the container exits 0 within the grace period;
#   - the image's HEALTHCHECK command turns the container healthy.
# It reports the image size and how long the build took.
#
#   .ci/docker.sh
#
# dockerd is started by this script on a private socket (never the system's), with no
# bridge and no iptables rules: containers use the host network and listen on 127.0.0.1
# only. It is stopped, and every container removed, on exit.
#
# Stand-ins for the Dockerfile's FROM images. Registry images cannot be pulled here, so
# before building, the two base images are made locally under the names the Dockerfile
# uses (the Dockerfile itself is the one users build, unchanged):
#   debian:bookworm-slim   a Debian bookworm rootfs made with debootstrap (minbase, with
#                          docs, man pages and locales removed as in -slim), from the
#                          Debian archive; its tarball is cached under
#                          ~/.cache/zarrd-ci/debootstrap so a rerun makes none.
#   rust:1.95-bookworm     the same rootfs with gcc, make and binutils from Debian, the
#                          host's Rust toolchain (the same 1.95.0 the real image has) and
#                          the host's cargo registry and release build (target/release)
#                          copied in at /build/target, so the Dockerfile's
#                          `cargo build --release --locked` reuses the dependencies .ci/run
#                          has already compiled and only builds zarrd itself. It is remade
#                          when Cargo.lock or the toolchain changes.
# Docker's data (the stand-ins and build cache) lives in ~/.cache/zarrd-ci/docker.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO_ROOT"
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci
DATA_ROOT=$CACHE/docker
# The name changes whenever what goes into the rootfs does, so a cached one is remade.
DEBOOTSTRAP_TAR=$CACHE/debootstrap/bookworm-minbase-2.tar
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
IMAGE=zarrd:ci
RUNTIME_BASE=debian:bookworm-slim
BUILDER_BASE=rust:1.95-bookworm
PYTHON=${DOCKER_CI_PYTHON:-$CACHE/compat-clients-venv/bin/python}
TOOLCHAIN=$(rustc --print sysroot)
CARGO_DIR=${CARGO_HOME:-$HOME/.cargo}
# exec-root holds containerd's socket, whose path must stay short (108 bytes at most).
RUN_DIR=$(mktemp -d /tmp/zarrd-docker.XXXXXX)
SOCK=$RUN_DIR/docker.sock
# Every curl here is bounded in time, also those inside `bash -c`.
mkdir -p "$RUN_DIR/curl"
echo 'max-time = 60' >"$RUN_DIR/curl/.curlrc"
export CURL_HOME=$RUN_DIR/curl
export DOCKER_HOST=unix://$SOCK
# The classic builder: Debian's docker.io has no buildx.
export DOCKER_BUILDKIT=0
DOCKER=/usr/bin/docker
[[ -x $DOCKER ]] || DOCKER=$(command -v docker)

LOG_TAG=docker
# shellcheck source=.ci/lib.sh
source "$REPO_ROOT/.ci/lib.sh"
timed() { # timed LABEL CMD...: runs CMD, logs how long it took (to stderr: CMD's output may be redirected)
    local label=$1 t0=$SECONDS
    shift
    "$@"
    log "$label: $((SECONDS - t0)) s" >&2
}

CONTAINERS=()
DOCKERD_PID=""
cleanup() {
    local c i
    if [[ -n $DOCKERD_PID ]]; then
        for c in "${CONTAINERS[@]}"; do "$DOCKER" rm -f "$c" >/dev/null 2>&1 || true; done
        kill -TERM "$DOCKERD_PID" 2>/dev/null || true
        for ((i = 0; i < 150; i++)); do
            kill -0 "$DOCKERD_PID" 2>/dev/null || break
            sleep 0.2
        done
        if kill -0 "$DOCKERD_PID" 2>/dev/null; then
            log "dockerd did not stop within 30 s; SIGKILL"
            kill -KILL "$DOCKERD_PID" 2>/dev/null || true
        fi
    fi
    # The containerd that dockerd started leaves with it; its state dir goes too, once
    # the network namespace dockerd bind-mounted there is unmounted.
    local m
    while read -r _ m _; do
        [[ $m == "$RUN_DIR"/* ]] && umount "$m" 2>/dev/null
    done < <(grep -F "$RUN_DIR" /proc/mounts || true)
    rm -rf "$RUN_DIR"
}
trap cleanup EXIT

command -v dockerd >/dev/null || die "dockerd is missing (apt-get install docker.io; .ci/install-tools.sh does)"
command -v debootstrap >/dev/null || die "debootstrap is missing (apt-get install debootstrap)"
[[ $EUID -eq 0 ]] || die "dockerd and debootstrap need root"
[[ -x $PYTHON ]] || die "no Python with zarr at $PYTHON (run .ci/zarr_client.sh first, or set DOCKER_CI_PYTHON)"
[[ -x target/release/zarrd ]] || die "no release build: run cargo build --release --locked first"

# ---------------------------------------------------------------- dockerd
start=$SECONDS
mkdir -p "$DATA_ROOT"
# One dockerd per data root: another run of this script on the same machine (another work
# tree, say) waits for this one instead of corrupting the shared image store.
exec 9>"$CACHE/docker.lock"
flock -w 1800 9 || die "another .ci/docker.sh held $CACHE/docker.lock for 30 min"
dockerd --host "$DOCKER_HOST" --data-root "$DATA_ROOT" --exec-root "$RUN_DIR/exec" \
    --pidfile "$RUN_DIR/dockerd.pid" --bridge none --iptables=false --ip6tables=false --ip-masq=false \
    --userland-proxy=false --log-level warn </dev/null >"$RUN_DIR/dockerd.log" 2>&1 &
DOCKERD_PID=$!
for ((i = 0; i < 150; i++)); do
    "$DOCKER" version >/dev/null 2>&1 && break
    kill -0 "$DOCKERD_PID" 2>/dev/null || die "dockerd exited: $(tail -20 "$RUN_DIR/dockerd.log")"
    sleep 0.2
done
"$DOCKER" version --format 'docker {{.Server.Version}} (client {{.Client.Version}})' ||
    die "dockerd did not answer within 30 s: $(tail -20 "$RUN_DIR/dockerd.log")"

# ---------------------------------------------------------------- stand-in: debian:bookworm-slim
if [[ ! -s $DEBOOTSTRAP_TAR ]]; then
    log "debootstrap bookworm (minbase) from $MIRROR"
    rootfs=$RUN_DIR/rootfs
    t0=$SECONDS
    debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$RUN_DIR/debootstrap.log" 2>&1 ||
        die "debootstrap failed: $(tail -20 "$RUN_DIR/debootstrap.log")"
    log "debootstrap: $((SECONDS - t0)) s"
    # What debian:*-slim leaves out (its dpkg path-exclude list), and apt's caches.
    rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
        "$rootfs"/usr/share/locale/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
        "$rootfs"/var/lib/apt/lists/*
    # As the real debian images do: apt cleans its caches after every install (else an
    # image's apt-get layer carries ~40 MB of package caches), and dpkg skips docs.
    cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
    printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
        'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' \
        >"$rootfs/etc/dpkg/dpkg.cfg.d/docker"
    mkdir -p "$(dirname "$DEBOOTSTRAP_TAR")"
    tar -C "$rootfs" --numeric-owner -cf "$DEBOOTSTRAP_TAR.tmp" .
    mv "$DEBOOTSTRAP_TAR.tmp" "$DEBOOTSTRAP_TAR"
    rm -rf "$rootfs"
fi
tar_id=$(stat -c '%s-%Y' "$DEBOOTSTRAP_TAR")
if [[ $("$DOCKER" image inspect -f '{{index .Config.Labels "zarrd.ci.rootfs"}}' "$RUNTIME_BASE" 2>/dev/null) != "$tar_id" ]]; then
    timed "import $RUNTIME_BASE stand-in" "$DOCKER" import \
        --change 'CMD ["bash"]' --change "LABEL zarrd.ci.rootfs=$tar_id" \
        "$DEBOOTSTRAP_TAR" "$RUNTIME_BASE" >/dev/null
fi

# ---------------------------------------------------------------- stand-in: rust:1.95-bookworm
builder_key="$(rustc -V | tr ' ' '_')-$(sha256sum Cargo.lock | cut -c1-16)-$tar_id"
if [[ $("$DOCKER" image inspect -f '{{index .Config.Labels "zarrd.ci.key"}}' "$BUILDER_BASE" 2>/dev/null) != "$builder_key" ]]; then
    log "making the $BUILDER_BASE stand-in (toolchain $TOOLCHAIN, registry $CARGO_DIR/registry, target/release)"
    "$DOCKER" rm -f zarrd-ci-builder >/dev/null 2>&1 || true
    CONTAINERS+=(zarrd-ci-builder)
    # The toolchain, registry and build keep the host's paths (/root/.rustup/..., 
    # /root/.cargo): cargo's fingerprints of registry crates name their source paths, so
    # the copied dependencies are only fresh at the same paths.
    t0=$SECONDS
    "$DOCKER" run --name zarrd-ci-builder --network host \
        -v "$TOOLCHAIN:/mnt/toolchain:ro" -v "$CARGO_DIR/registry:/mnt/registry:ro" \
        -v "$REPO_ROOT/target/release:/mnt/release:ro" \
        -e TOOLCHAIN="$TOOLCHAIN" -e CARGO_DIR="$CARGO_DIR" "$RUNTIME_BASE" bash -euc '
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq
            apt-get install -y -qq --no-install-recommends gcc libc6-dev make binutils ca-certificates >/dev/null
            rm -rf /var/lib/apt/lists/*
            mkdir -p "$TOOLCHAIN/bin" "$CARGO_DIR" /build/target
            cp -a /mnt/toolchain/bin/cargo /mnt/toolchain/bin/rustc "$TOOLCHAIN/bin/"
            cp -a /mnt/toolchain/lib "$TOOLCHAIN/"
            cp -a /mnt/registry "$CARGO_DIR/registry"
            mkdir -p /build/target/release
            cp -a /mnt/release/deps /mnt/release/build /mnt/release/.fingerprint /build/target/release/
            # Only the dependencies: zarrd itself is what the Dockerfile builds.
            rm -rf /build/target/release/deps/*zarrd* /build/target/release/.fingerprint/zarrd-*
        ' >"$RUN_DIR/builder.log" 2>&1 || die "making the builder stand-in failed: $(tail -20 "$RUN_DIR/builder.log")"
    "$DOCKER" commit \
        --change "ENV PATH=$TOOLCHAIN/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --change "ENV CARGO_HOME=$CARGO_DIR" --change "LABEL zarrd.ci.key=$builder_key" \
        --change 'CMD ["bash"]' zarrd-ci-builder "$BUILDER_BASE" >/dev/null
    "$DOCKER" rm zarrd-ci-builder >/dev/null
    log "builder stand-in: $((SECONDS - t0)) s"
fi

# ---------------------------------------------------------------- build
log "docker build (the Dockerfile as users build it)"
build_start=$SECONDS
"$DOCKER" build --network host -t "$IMAGE" . >"$RUN_DIR/build.log" 2>&1 ||
    die "docker build failed: $(tail -40 "$RUN_DIR/build.log")"
grep -E '^(Step|Successfully)|Compiling zarrd|Finished' "$RUN_DIR/build.log" | sed 's/^/[docker]   /'
log "docker build: $((SECONDS - build_start)) s"
size=$("$DOCKER" image inspect -f '{{.Size}}' "$IMAGE")
base_size=$("$DOCKER" image inspect -f '{{.Size}}' "$RUNTIME_BASE")
binary=$("$DOCKER" run --rm --network none --entrypoint stat "$IMAGE" -c %s /usr/local/bin/zarrd)
log "image $IMAGE: $((size / 1000000)) MB (runtime base stand-in $((base_size / 1000000)) MB, zarrd binary $((binary / 1000000)) MB)"
if "$DOCKER" run --rm --network none --entrypoint bash "$IMAGE" -c 'command -v gcc || command -v cc || command -v cargo'; then
    die "build tools in the runtime image"
fi

# ---------------------------------------------------------------- run
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() {
    local p
    for ((p = $1; p < $1 + 500; p++)); do port_open "$p" || { echo "$p"; return; }; done
    die "no free port above $1"
}
wait_ready() { # wait_ready CONTAINER PORT
    local i
    for ((i = 0; i < 150; i++)); do
        curl -fsS --max-time 5 -o /dev/null "http://127.0.0.1:$2/readyz" 2>/dev/null && return 0
        [[ $("$DOCKER" inspect -f '{{.State.Running}}' "$1") == true ]] ||
            die "container $1 exited: $("$DOCKER" logs "$1" 2>&1 | tail -20)"
        sleep 0.2
    done
    die "container $1 not ready within 30 s: $("$DOCKER" logs "$1" 2>&1 | tail -20)"
}
status() { curl -s --max-time 10 -o /dev/null -w '%{http_code}' "$1"; }
check() { # check DESCRIPTION CONDITION...
    local what=$1
    shift
    if "$@"; then log "ok      $what"; else die "FAILED  $what"; fi
}

# 1. Defaults, read-only root filesystem, configuration from the environment.
P1=$(free_port 18480)
CONTAINERS+=(zarrd-ci-env)
"$DOCKER" run -d --name zarrd-ci-env --network host --read-only --stop-timeout 25 \
    --health-interval 2s --health-start-period 2s \
    -e ZARRD_LISTEN="127.0.0.1:$P1" -e ZARRD__HTTP__CACHE_CONTROL="private, max-age=7" \
    "$IMAGE" >/dev/null
wait_ready zarrd-ci-env "$P1"
B1=http://127.0.0.1:$P1
pid=$("$DOCKER" inspect -f '{{.State.Pid}}' zarrd-ci-env)
check "runs as UID 10001, not root" grep -qE '^Uid:\s+10001\s+10001' "/proc/$pid/status"
check "image user is 10001:10001" test "$("$DOCKER" inspect -f '{{.Config.User}}' "$IMAGE")" = 10001:10001
check "root filesystem is read-only" test "$("$DOCKER" inspect -f '{{.HostConfig.ReadonlyRootfs}}' zarrd-ci-env)" = true
check "no write to the root filesystem" bash -c "! $DOCKER exec zarrd-ci-env touch /srv/zarrd/x 2>/dev/null"
check "/healthz answers 200 ok" test "$(curl -fsS "$B1/healthz")" = ok
check "/readyz answers 200 ready" test "$(curl -fsS "$B1/readyz")" = ready
# The sharded terrain array (zarr-python 3.1 reads no rectilinear grid, so not climate/t2m).
slice="/v1/slice/sample/terrain/elevation?s=100:300,200:456&format=npy"
curl -fsS -o "$RUN_DIR/slice.npy" "$B1$slice"
check "a slice of the bundled sample equals zarr-python's read of data/sample.zarr" \
    "$PYTHON" -c '
import sys, numpy as np, zarr
got = np.load(sys.argv[1])
want = zarr.open_array(sys.argv[2], mode="r")[100:300, 200:456]
sys.exit(0 if got.dtype == want.dtype and got.shape == (200, 256) and np.array_equal(got, want) else 1)
' "$RUN_DIR/slice.npy" data/sample.zarr/terrain/elevation
check "ZARRD__HTTP__CACHE_CONTROL from the environment applies" \
    bash -c "curl -fsS -D- -o /dev/null '$B1$slice' | grep -qi '^cache-control: private, max-age=7'"
check "text logs from a container carry no ANSI colour codes" bash -c "! $DOCKER logs zarrd-ci-env 2>&1 | grep -q $'\x1b'"

# 2. HEALTHCHECK: the image's own command, run every 2 s instead of 30 s to keep CI short.
for ((i = 0; i < 60; i++)); do
    health=$("$DOCKER" inspect -f '{{.State.Health.Status}}' zarrd-ci-env)
    [[ $health == starting ]] || break
    sleep 0.5
done
check "the HEALTHCHECK turns healthy (was: $health)" test "$health" = healthy

# 3. docker stop drains: a slow client's request in flight finishes, /readyz fails first.
# The whole of climate/t2m, 15 MB, read at 3 MB/s: more than socket buffers hold, so the
# response is still being written when the signal comes.
bigslice="/v1/slice/sample/climate/t2m?format=npy"
curl -fsS --max-time 30 -o "$RUN_DIR/bigslice.full" "$B1$bigslice"
(curl -sS --max-time 60 --limit-rate 3000k -o "$RUN_DIR/bigslice.slow" -w '%{http_code}' "$B1$bigslice" >"$RUN_DIR/slow.status" 2>&1) &
slow_pid=$!
sleep 0.5
stop_start=$SECONDS
"$DOCKER" stop -t 25 zarrd-ci-env >/dev/null &
stop_pid=$!
ready_during="" health_during=""
for ((i = 0; i < 20; i++)); do
    sleep 0.1
    ready_during=$(status "$B1/readyz")
    [[ $ready_during == 503 ]] && { health_during=$(status "$B1/healthz"); break; }
done
wait "$stop_pid"
stop_secs=$((SECONDS - stop_start))
wait "$slow_pid" || true
check "/readyz fails (503) as soon as docker stop signals, while /healthz still answers ($health_during)" \
    test "$ready_during:$health_during" = 503:200
check "the request in flight finished with its whole body" \
    bash -c "[[ \$(cat '$RUN_DIR/slow.status') == 200 ]] && cmp -s '$RUN_DIR/bigslice.full' '$RUN_DIR/bigslice.slow'"
check "exit code 0 after docker stop" test "$("$DOCKER" inspect -f '{{.State.ExitCode}}' zarrd-ci-env)" = 0
check "stopped within the grace period (${stop_secs} s <= 22 s: drain 2 + shutdown timeout 20)" test "$stop_secs" -le 22

# 4. A mounted config file: the Kubernetes ConfigMap's config.toml, as the Deployment mounts it.
P2=$(free_port $((P1 + 1)))
mkdir -p "$RUN_DIR/etc-zarrd"
"$PYTHON" -c '
import sys, yaml
print(yaml.safe_load(open(sys.argv[1]))["data"]["config.toml"], end="")
' deploy/kubernetes/configmap.yaml >"$RUN_DIR/etc-zarrd/config.toml"
chmod -R a+rX "$RUN_DIR/etc-zarrd"
CONTAINERS+=(zarrd-ci-file)
"$DOCKER" run -d --name zarrd-ci-file --network host --read-only --cap-drop ALL \
    --security-opt no-new-privileges -v "$RUN_DIR/etc-zarrd:/etc/zarrd:ro" \
    -e ZARRD_CONFIG=/etc/zarrd/config.toml -e ZARRD_LISTEN="127.0.0.1:$P2" "$IMAGE" >/dev/null
wait_ready zarrd-ci-file "$P2"
B2=http://127.0.0.1:$P2
check "the mounted config file's datasets are served" \
    bash -c "curl -fsS '$B2/v1/datasets' | grep -q '\"name\":\"sample\"'"
check "the mounted config file's log format (json) applies" \
    bash -c "$DOCKER logs zarrd-ci-file 2>&1 | head -1 | $PYTHON -c 'import json,sys; json.loads(sys.stdin.readline())'"
check "probes are not in the INFO access log" bash -c "! $DOCKER logs zarrd-ci-file 2>&1 | grep -q '/readyz'"
"$DOCKER" rm -f zarrd-ci-file >/dev/null

# Old images of earlier runs (the stand-ins stay for the next run).
"$DOCKER" image prune -f >/dev/null
log "passed in $((SECONDS - start)) s; image $IMAGE $((size / 1000000)) MB"
