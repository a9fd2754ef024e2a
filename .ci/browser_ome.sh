#!/usr/bin/env bash
# ome-zarr.js in a real browser: headless Debian chromium (puppeteer-core) opens OME-Zarr 0.4
# and 0.5 images of tests/fixtures/ome (written by ome-zarr-py and ngff-zarr) through zarrd's
# /zarr, /compat/v2 and /compat/v3 with ome-zarr.js, imported from its npm package through an
# import map (.ci/browser_ome.cjs). Expected values are zarr-python's reads of the fixtures
# (their .npy files, read by browser_ome.cjs), never zarrd's.
# Usage: .ci/browser_ome.sh path/to/zarrd
# Reuses chromium and puppeteer-core from .ci/browser.sh; ome-zarr.js (pinned below, with
# its zarrita) is installed once into ${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/npm-ome.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:?usage: .ci/browser_ome.sh path/to/zarrd}
OME_ZARR_JS_VERSION=0.0.19
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci
NPM_DIR=$CACHE/npm
OME_DIR=$CACHE/npm-ome
LOG_TAG=browser-ome
# shellcheck source=.ci/lib.sh
source .ci/lib.sh

command -v chromium >/dev/null 2>&1 || { log "no chromium: run .ci/browser.sh first"; exit 1; }
[[ -f $NPM_DIR/node_modules/puppeteer-core/package.json ]] || { log "no puppeteer-core: run .ci/browser.sh first"; exit 1; }
if ! grep -qs "\"version\": \"$OME_ZARR_JS_VERSION\"" "$OME_DIR/node_modules/ome-zarr.js/package.json"; then
    log "installing ome-zarr.js $OME_ZARR_JS_VERSION into $OME_DIR"
    mkdir -p "$OME_DIR"
    npm install --prefix "$OME_DIR" --no-audit --no-fund --no-save "ome-zarr.js@$OME_ZARR_JS_VERSION" >/dev/null
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/zarrd-browser-ome.XXXXXX")
# shellcheck source=.ci/ports.sh
source .ci/ports.sh
PORT=$(free_port)
F=tests/fixtures/ome/images
"$BIN" serve --listen "127.0.0.1:$PORT" --dataset "ozp04_5d=$F/ozp04_5d.ome.zarr" \
    --dataset "ozp05_5d=$F/ozp05_5d.ome.zarr" --dataset "nz05_cyx=$F/nz05_cyx.ome.zarr" >"$WORK/zarrd.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$WORK"' EXIT
up "$PORT" "$WORK/zarrd.log"

log "chromium $(chromium --version 2>/dev/null | awk '{print $2}'), ome-zarr.js $OME_ZARR_JS_VERSION"
NODE_PATH=$NPM_DIR/node_modules MODULES=$OME_DIR/node_modules EXPECTED_DIR=tests/fixtures/ome/expected \
    timeout 150 node .ci/browser_ome.cjs "http://127.0.0.1:$PORT"
if grep -q 'zarrd::panic' "$WORK/zarrd.log"; then
    grep -m1 -A2 'zarrd::panic' "$WORK/zarrd.log" >&2
    echo "browser_ome.sh: zarrd logged a panic" >&2
    exit 1
fi
