#!/usr/bin/env bash
# Real clients reading every fixture array through zarrd's compatibility views
# (/compat/v3 and /compat/v2) bit for bit: zarr-python 3.1 (no rectilinear support),
# TensorStore and xarray from PyPI (tests/zarr_client/read_compat.py), and zarrita.js from
# npm in node (tests/zarr_client/js/read_compat.mjs). Text arrays (the strings set) are read
# by zarr-python and zarrita through both views; TensorStore has no text data type, which
# read_compat.py confirms on the fixture itself and records as a client limitation.
#
# Usage: .ci/compat_clients.sh [ZARRD_BINARY]     (default: target/release/zarrd)
#
# Installs are cached under ${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci: the Python 3.11 venv
# (compat-clients-venv, rebuilt when the pins change) and the npm install (compat-node, keyed
# by the package-lock.json hash, installed with `npm ci`). node and npm come from Debian when
# missing. zarrd is started on a free loopback port with every fixture set and the sample,
# and always stopped on exit.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
ZARRD=${1:-$REPO_ROOT/target/release/zarrd}
PYTHON=${ZARR_CLIENT_PYTHON:-python3.11}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci
VENV=$CACHE/compat-clients-venv
STARTUP_TIMEOUT=30 # seconds

# zarr 3.1.6 (no rectilinear grid), TensorStore and xarray, with what they resolved to.
PINS=(
    zarr==3.1.6
    numpy==2.4.6
    numcodecs==0.16.6
    donfig==0.8.1.post1
    google-crc32c==1.9.0
    packaging==26.3
    typing_extensions==4.16.0
    PyYAML==6.0.3
    fsspec==2026.9.0
    aiohttp==3.14.5
    aiohappyeyeballs==2.7.1
    aiosignal==1.4.0
    attrs==26.1.0
    frozenlist==1.8.0
    multidict==7.2.1
    propcache==0.5.4
    yarl==1.25.1
    requests==2.34.2
    certifi==2026.10.18
    charset-normalizer==3.5.2
    idna==3.20
    urllib3==2.8.0
    tensorstore==0.1.86
    ml_dtypes==0.6.0
    xarray==2026.9.0
    pandas==3.1.1
    python-dateutil==4.0.0
    tzdata==2026.6
)

log() { printf '[compat-clients] %s\n' "$*"; }
die() { printf '[compat-clients] ERROR: %s\n' "$*" >&2; exit 1; }

[[ -x $ZARRD ]] || die "no zarrd binary at $ZARRD (build it with: cargo build --release)"
ZARRD=$(cd "$(dirname "$ZARRD")" && pwd -P)/$(basename "$ZARRD")

# --- Python venv -------------------------------------------------------------------------
STAMP=$VENV/.zarrd-pins
WANT_STAMP=$(printf '%s\n' "${PINS[@]}")
if [[ ! -x $VENV/bin/python || ! -f $STAMP || $(cat "$STAMP") != "$WANT_STAMP" ]]; then
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (zarr 3.1 needs Python >= 3.11)"
    log "creating venv $VENV"
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${PINS[@]}"
    printf '%s\n' "$WANT_STAMP" >"$STAMP"
else
    log "using cached venv $VENV"
fi

# --- node + zarrita ----------------------------------------------------------------------
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    log "installing node and npm from Debian"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
JS=$REPO_ROOT/tests/zarr_client/js
LOCK_HASH=$(sha256sum "$JS/package-lock.json" | cut -c1-16)
NODE_DIR=$CACHE/compat-node/$LOCK_HASH
if [[ ! -d $NODE_DIR/node_modules ]]; then
    log "npm ci into $NODE_DIR"
    rm -rf "$CACHE/compat-node"
    mkdir -p "$NODE_DIR"
    cp "$JS/package.json" "$JS/package-lock.json" "$NODE_DIR/"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error)
else
    log "using cached node_modules $NODE_DIR"
fi
# Node resolves ESM imports from the script's directory upwards: link the cached install there.
ln -sfn "$NODE_DIR/node_modules" "$JS/node_modules"

# --- server ------------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zarrd-compat.XXXXXX")
SERVER_PID=
CLIENT_PID=
# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
    local status=$?
    if [[ -n $CLIENT_PID ]]; then
        kill "$CLIENT_PID" 2>/dev/null || true
        wait "$CLIENT_PID" 2>/dev/null || true
    fi
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
F=$REPO_ROOT/tests/fixtures
cat >"$WORK/zarrd.toml" <<TOML
listen = "127.0.0.1:$PORT"

[datasets.conf]
url = "$F/conformance/data.zarr"
[datasets.extra]
url = "$F/extra/data.zarr"
[datasets.v2]
url = "$F/zarr-v2/data.zarr"
[datasets.v2extra]
url = "$F/zarr-v2-extra/data.zarr"
[datasets.fanout]
url = "$F/fanout/data.zarr"
[datasets.fanoutextra]
url = "$F/fanout-extra/data.zarr"
[datasets.strings]
url = "$F/strings/data.zarr"
[datasets.sample]
url = "$REPO_ROOT/data/sample.zarr"
TOML

log "starting $ZARRD on 127.0.0.1:$PORT"
RUST_LOG=${RUST_LOG:-warn} "$ZARRD" serve --config "$WORK/zarrd.toml" >"$WORK/zarrd.log" 2>&1 &
SERVER_PID=$!
BASE=http://127.0.0.1:$PORT
deadline=$((SECONDS + STARTUP_TIMEOUT))
until "$VENV/bin/python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$BASE/healthz" 2>/dev/null; do
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/zarrd.log" >&2; die "zarrd exited during startup"; }
    ((SECONDS < deadline)) || die "zarrd did not answer $BASE/healthz within ${STARTUP_TIMEOUT}s"
    sleep 0.2
done

# --- clients -----------------------------------------------------------------------------
STATUS=0
run() {
    "$@" &
    CLIENT_PID=$!
    wait "$CLIENT_PID" || STATUS=1
    CLIENT_PID=
}
log "zarr-python, TensorStore, xarray"
run "$VENV/bin/python" -W ignore "$REPO_ROOT/tests/zarr_client/read_compat.py" "$BASE"
log "zarrita.js $(node --version)"
run node "$JS/read_compat.mjs" "$BASE"
if [[ $STATUS -ne 0 ]]; then
    log "a client failed; last lines of the zarrd log:"
    tail -n 40 "$WORK/zarrd.log" | sed 's/\x1b\[[0-9;]*m//g' >&2 || true
fi
exit "$STATUS"
