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
# puppeteer-core from npm/ (.ci/browser.sh); the venv (NumPy), zarrita and the fixture
# server are .ci/fixture_zarrd.sh's.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$REPO_ROOT"
LOG_TAG=browser-zarrita
# shellcheck source=.ci/fixture_zarrd.sh
source .ci/fixture_zarrd.sh
use_zarrd "${1:?usage: .ci/browser_zarrita.sh path/to/zarrd}"
NPM_DIR=$CI_CACHE/npm

command -v chromium >/dev/null 2>&1 || die "no chromium: run .ci/browser.sh first"
[[ -f $NPM_DIR/node_modules/puppeteer-core/package.json ]] || die "no puppeteer-core in $NPM_DIR: run .ci/browser.sh first"
ensure_venv
ensure_zarrita

make_work browser-zarrita

# The ESM build the page imports: the installed packages, copied so the page's server
# sees nothing else of the machine.
mkdir -p "$WORK/modules/@zarrita"
for pkg in zarrita @zarrita/storage numcodecs fflate; do
    cp -r "$NODE_DIR/node_modules/$pkg" "$WORK/modules/$pkg"
done

"$VENV/bin/python" tests/zarr_client/export_expected.py >"$WORK/expected.json"

start_zarrd "$ZARRD" "$WORK"

log "chromium $(chromium --version 2>/dev/null | awk '{print $2}'), zarrita $(sed -n 's/.*"version": "\(.*\)".*/\1/p' "$NODE_DIR/node_modules/zarrita/package.json")"
status=0
NODE_PATH=$NPM_DIR/node_modules MODULES=$WORK/modules EXPECTED_JSON=$WORK/expected.json \
    timeout 180 node .ci/browser_zarrita.cjs "$BASE" || status=$?
if [[ $status -ne 0 ]]; then
    log "failed; last lines of the zarrd log:"
    zarrd_log_tail 30
fi
exit "$status"
