#!/usr/bin/env bash
# Installs the storage servers that .ci/services.sh starts for the integration tests:
#   - Garage 2.5.0 (S3 server), built with `cargo install` (~10 min, so only when missing)
#   - nginx from Debian (static HTTP server, and the load balancer of .ci/fleet.sh)
#   - docker.io, debootstrap, wrk and haproxy from Debian (.ci/docker.sh, .ci/fleet.sh)
# Idempotent: anything already present is left alone. Meant for a clean Debian 12 CI
# machine (run as root, or with sudo available for the apt part).
set -euo pipefail

GARAGE_VERSION=2.5.0
CARGO_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"

LOG_TAG=install-tools
# shellcheck source=.ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUDO=()
if [[ $EUID -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "not root and sudo is missing: cannot run apt-get"
    SUDO=(sudo)
fi

# Stop Debian's maintainer scripts from starting nginx as a system service on port 80
# while the package is installed; restored (removed) again on exit.
POLICY_RC=/usr/sbin/policy-rc.d
POLICY_RC_CREATED=0
cleanup() {
    if [[ $POLICY_RC_CREATED -eq 1 ]]; then
        "${SUDO[@]}" rm -f "$POLICY_RC" || true
    fi
}
trap cleanup EXIT

apt_install() {
    # apt_install PKG... : install, running `apt-get update` first only if the install fails.
    if [[ ! -e $POLICY_RC ]]; then
        printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$POLICY_RC" >/dev/null
        "${SUDO[@]}" chmod 755 "$POLICY_RC"
        POLICY_RC_CREATED=1
    fi
    local apt=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@")
    if ! "${apt[@]}"; then
        log "apt-get install $* failed; running apt-get update and retrying"
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
        "${apt[@]}"
    fi
}

did=()

# --- nginx -----------------------------------------------------------------------------
find_nginx() {
    command -v nginx 2>/dev/null && return 0
    [[ -x /usr/sbin/nginx ]] && { echo /usr/sbin/nginx; return 0; }
    return 1
}
if nginx_bin=$(find_nginx); then
    log "nginx already installed: $nginx_bin ($("$nginx_bin" -v 2>&1))"
    did+=("nginx: already present, skipped")
else
    log "installing Debian nginx"
    apt_install nginx
    nginx_bin=$(find_nginx) || die "nginx still not found after apt-get install"
    log "installed nginx: $nginx_bin ($("$nginx_bin" -v 2>&1))"
    did+=("nginx: installed with apt-get")
fi

# --- the deployment checks' tools (Debian packages) ------------------------------------
# dockerd for .ci/docker.sh, debootstrap for its base-image stand-in, wrk for the load of
# .ci/fleet.sh, haproxy to check deploy/haproxy/haproxy.cfg; ncdump and gdalinfo, the
# readers of .ci/downloads.sh.
declare -A DEPLOY_TOOLS=([dockerd]=docker.io [debootstrap]=debootstrap [wrk]=wrk [haproxy]=haproxy
    [ncdump]=netcdf-bin [gdalinfo]=gdal-bin)
missing=()
for tool in "${!DEPLOY_TOOLS[@]}"; do
    if command -v "$tool" >/dev/null 2>&1 || [[ -x /usr/sbin/$tool ]]; then
        did+=("$tool: already present, skipped")
    else
        missing+=("${DEPLOY_TOOLS[$tool]}")
    fi
done
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt_install "${missing[@]}"
    did+=("${missing[*]}: installed with apt-get")
fi

# --- Garage ----------------------------------------------------------------------------
find_garage() {
    command -v garage 2>/dev/null && return 0
    [[ -x $CARGO_BIN/garage ]] && { echo "$CARGO_BIN/garage"; return 0; }
    [[ -x $HOME/.cargo/bin/garage ]] && { echo "$HOME/.cargo/bin/garage"; return 0; }
    return 1
}
if garage_bin=$(find_garage); then
    version=$("$garage_bin" --version 2>&1 | head -n1 || true)
    log "garage already installed: $garage_bin ($version)"
    if [[ $version != *"$GARAGE_VERSION"* ]]; then
        log "WARNING: expected garage $GARAGE_VERSION; keeping the installed one"
    fi
    did+=("garage: already present, skipped")
else
    cargo_bin=$(command -v cargo 2>/dev/null || true)
    [[ -z $cargo_bin && -x $CARGO_BIN/cargo ]] && cargo_bin=$CARGO_BIN/cargo
    [[ -n $cargo_bin ]] || die "cargo not found (needed to build garage); install a Rust toolchain first"
    # Garage's bundled C libraries (sqlite, lmdb, zstd, aws-lc) need a C toolchain.
    if ! command -v cc >/dev/null 2>&1; then
        log "no C compiler found; installing build-essential and pkg-config"
        apt_install build-essential pkg-config
        did+=("build-essential, pkg-config: installed with apt-get (C toolchain for garage)")
    fi
    log "building garage $GARAGE_VERSION with cargo install (this takes ~10 min)"
    # A test server needs no fat LTO or single codegen unit: these overrides of garage's
    # release profile roughly halve the build time on 2 cores.
    CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=64 CARGO_PROFILE_RELEASE_DEBUG=0 \
        "$cargo_bin" install garage --locked --version "$GARAGE_VERSION"
    garage_bin=$(find_garage) || die "garage still not found after cargo install"
    log "installed garage: $garage_bin ($("$garage_bin" --version 2>&1 | head -n1))"
    did+=("garage: built and installed with cargo install")
fi

log "summary:"
for line in "${did[@]}"; do
    log "  - $line"
done
