#!/usr/bin/env bash
# Reads every fixture array through zarrd's /zarr store with a real Zarr client:
# zarr-python 3.1 over HTTP (FsspecStore -> fsspec HTTPFileSystem -> aiohttp), which reads
# sharded arrays with Range requests. See tests/zarr_client/read_through_zarrd.py.
# Then checks pyramids written by `zarrd overviews` with the same zarr-python, against
# NumPy area averages of the fixtures (tests/zarr_client/check_overviews.py).
#
# Usage: .ci/zarr_client.sh [ZARRD_BINARY]     (default: target/release/zarrd)
#
# The Python venv (Python 3.11, pinned packages below) is created once and cached under
# ${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/zarr-client-venv; it is rebuilt when the pins
# change. zarrd is started on a free loopback port with the `conf`, `extra`, `v2` and `v2extra`
# fixture datasets (Zarr v3 and v2) and is always stopped on exit. Exits with the Python script's status.
#
# Environment overrides:
#   ZARR_CLIENT_PYTHON   the Python 3.11 interpreter to build the venv with (default python3.11)
#   ZARR_CLIENT_VENV     venv directory (default: the cache path above)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
ZARRD=${1:-$REPO_ROOT/target/release/zarrd}
PYTHON=${ZARR_CLIENT_PYTHON:-python3.11}
VENV=${ZARR_CLIENT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/zarr-client-venv}
STARTUP_TIMEOUT=30 # seconds

# zarr 3.1.6 is the newest 3.1 release (needs Python >= 3.11); the rest is what it resolved
# to with fsspec + aiohttp (its HTTP path) and requests, pinned so runs are reproducible.
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
)

log() { printf '[zarr-client] %s\n' "$*"; }
die() { printf '[zarr-client] ERROR: %s\n' "$*" >&2; exit 1; }

[[ -x $ZARRD ]] || die "no zarrd binary at $ZARRD (build it with: cargo build --release)"
ZARRD=$(cd "$(dirname "$ZARRD")" && pwd -P)/$(basename "$ZARRD")

# --- venv --------------------------------------------------------------------------------
STAMP=$VENV/.zarrd-pins
WANT_STAMP=$(printf '%s\n' "${PINS[@]}")
if [[ ! -x $VENV/bin/python || ! -f $STAMP || $(cat "$STAMP") != "$WANT_STAMP" ]]; then
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (zarr 3.1 needs Python >= 3.11)"
    log "creating venv $VENV with ${PINS[*]}"
    rm -rf "$VENV"
    mkdir -p "$(dirname "$VENV")"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${PINS[@]}"
    printf '%s\n' "$WANT_STAMP" >"$STAMP"
else
    log "using cached venv $VENV"
fi

# --- server ------------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zarrd-zarr-client.XXXXXX")
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

# A free loopback port: bind port 0 and read back what the kernel chose.
PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
cat >"$WORK/zarrd.toml" <<EOF
listen = "127.0.0.1:$PORT"

[datasets.conf]
url = "$REPO_ROOT/tests/fixtures/conformance/data.zarr"

[datasets.extra]
url = "$REPO_ROOT/tests/fixtures/extra/data.zarr"

[datasets.v2]
url = "$REPO_ROOT/tests/fixtures/zarr-v2/data.zarr"

[datasets.v2extra]
url = "$REPO_ROOT/tests/fixtures/zarr-v2-extra/data.zarr"
EOF

log "starting $ZARRD on 127.0.0.1:$PORT"
RUST_LOG=${RUST_LOG:-info} "$ZARRD" serve --config "$WORK/zarrd.toml" >"$WORK/zarrd.log" 2>&1 &
SERVER_PID=$!

BASE=http://127.0.0.1:$PORT
deadline=$((SECONDS + STARTUP_TIMEOUT))
until "$VENV/bin/python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$BASE/healthz" 2>/dev/null; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        cat "$WORK/zarrd.log" >&2
        die "zarrd exited during startup"
    fi
    if ((SECONDS >= deadline)); then
        tail -n 40 "$WORK/zarrd.log" >&2
        die "zarrd did not answer $BASE/healthz within ${STARTUP_TIMEOUT}s"
    fi
    sleep 0.2
done
log "zarrd is up"

# --- client ------------------------------------------------------------------------------
# In the background and waited for, so that a signal to this script is handled at once.
"$VENV/bin/python" "$REPO_ROOT/tests/zarr_client/read_through_zarrd.py" "$BASE" &
CLIENT_PID=$!
STATUS=0
wait "$CLIENT_PID" || STATUS=$?
CLIENT_PID=
if [[ $STATUS -ne 0 ]]; then
    log "client failed ($STATUS); last lines of the zarrd log:"
    tail -n 40 "$WORK/zarrd.log" | sed 's/\x1b\[[0-9;]*m//g' >&2 || true
fi
# The server's own account of the ranged reads, as a cross-check of the client's.
n206=$(sed 's/\x1b\[[0-9;]*m//g' "$WORK/zarrd.log" | grep -c 'zarrd::access.* status=206' || true)
log "zarrd access log: ${n206} responses with status=206"
if [[ $STATUS -eq 0 && $n206 -eq 0 ]]; then
    log "FAIL: the client passed but zarrd logged no 206 response: zarr-python made no Range request"
    STATUS=1
fi
if [[ $STATUS -eq 0 ]]; then
    log "zarrd overviews: pyramids read by zarr-python, levels checked against NumPy"
    "$VENV/bin/python" "$REPO_ROOT/tests/zarr_client/check_overviews.py" "$ZARRD" \
        "$REPO_ROOT/tests/fixtures/conformance" "$WORK/overviews" &
    CLIENT_PID=$!
    wait "$CLIENT_PID" || STATUS=$?
    CLIENT_PID=
fi
exit "$STATUS"
