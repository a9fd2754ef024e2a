#!/usr/bin/env bash
# zarrita.js in a real browser: headless Debian chromium (puppeteer-core) opens a page served
# from a second loopback origin, which imports zarrita's ESM build straight from the npm
# package (an import map over node_modules: no bundler, no CDN) and reads a representative
# set of arrays from zarrd cross-origin: /compat/v3 (regular, sharded arrays' inner chunks,
# rectilinear, v2, fanout; float, int, uint, bool, text) and one sharded array through
# /zarr (zarrita's own shard reads: Range requests). Expected values are the fixtures' .npy
# files exported as JSON (tests/zarr_client/export_expected.py), compared in the page.
# Usage: .ci/browser_zarrita.sh path/to/zarrd
# Reuses the caches of the other steps under ${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci:
# puppeteer-core from npm/ (.ci/browser.sh), zarrita from compat-node/<lock hash>
# (.ci/compat_clients.sh; installed here with `npm ci` when missing) and NumPy from the
# compat-clients venv (.ci/compat_clients.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:?usage: .ci/browser_zarrita.sh path/to/zarrd}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci
NPM_DIR=$CACHE/npm
VENV=$CACHE/compat-clients-venv
JS=tests/zarr_client/js
log() { printf '[browser-zarrita] %s\n' "$*"; }

command -v chromium >/dev/null 2>&1 || { log "no chromium: run .ci/browser.sh first"; exit 1; }
[[ -f $NPM_DIR/node_modules/puppeteer-core/package.json ]] || { log "no puppeteer-core in $NPM_DIR: run .ci/browser.sh first"; exit 1; }
[[ -x $VENV/bin/python ]] || { log "no venv at $VENV: run .ci/compat_clients.sh first"; exit 1; }
NODE_DIR=$CACHE/compat-node/$(sha256sum "$JS/package-lock.json" | cut -c1-16)
if [[ ! -d $NODE_DIR/node_modules/zarrita ]]; then
    log "npm ci into $NODE_DIR"
    rm -rf "$CACHE/compat-node"
    mkdir -p "$NODE_DIR"
    cp "$JS/package.json" "$JS/package-lock.json" "$NODE_DIR/"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error)
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/zarrd-browser-zarrita.XXXXXX")
SERVER=
# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
    [[ -z $SERVER ]] || kill "$SERVER" 2>/dev/null || true
    [[ -z $SERVER ]] || wait "$SERVER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# The ESM build the page imports: the installed packages, copied so the page's server
# sees nothing else of the machine.
mkdir -p "$WORK/modules/@zarrita"
for pkg in zarrita @zarrita/storage numcodecs fflate; do
    cp -r "$NODE_DIR/node_modules/$pkg" "$WORK/modules/$pkg"
done

"$VENV/bin/python" tests/zarr_client/export_expected.py >"$WORK/expected.json"

F=$PWD/tests/fixtures
PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
cat >"$WORK/zarrd.toml" <<TOML
listen = "127.0.0.1:$PORT"
[datasets.conf]
url = "$F/conformance/data.zarr"
[datasets.extra]
url = "$F/extra/data.zarr"
[datasets.v2]
url = "$F/zarr-v2/data.zarr"
[datasets.fanout]
url = "$F/fanout/data.zarr"
[datasets.strings]
url = "$F/strings/data.zarr"
TOML
RUST_LOG=${RUST_LOG:-warn} "$BIN" serve --config "$WORK/zarrd.toml" >"$WORK/zarrd.log" 2>&1 &
SERVER=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.2; done
curl -fs "http://127.0.0.1:$PORT/healthz" >/dev/null || { cat "$WORK/zarrd.log" >&2; log "zarrd did not start"; exit 1; }

log "chromium $(chromium --version 2>/dev/null | awk '{print $2}'), zarrita $(sed -n 's/.*"version": "\(.*\)".*/\1/p' "$NODE_DIR/node_modules/zarrita/package.json")"
status=0
NODE_PATH=$NPM_DIR/node_modules MODULES=$WORK/modules EXPECTED_JSON=$WORK/expected.json \
    timeout 180 node .ci/browser_zarrita.cjs "http://127.0.0.1:$PORT" || status=$?
if [[ $status -ne 0 ]]; then
    log "failed; last lines of the zarrd log:"
    tail -n 30 "$WORK/zarrd.log" | sed 's/\x1b\[[0-9;]*m//g' >&2 || true
fi
exit "$status"
