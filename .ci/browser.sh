#!/usr/bin/env bash
# The viewer in a real browser: Debian's chromium driven by puppeteer-core opens the viewer
# page on the bundled sample, and a bare OpenSeadragon page opens info.json alone
# (.ci/browser.cjs), and an Icechunk repository's versions are picked in the dataset tree;
# the viewer for people (.ci/browser_viewer.cjs): the map of an xarray-written global grid
# (tests/fixtures/maps/global_0360.zarr) and the deep-zoom view of the sample's terrain draw,
# the readout under the cursor, the time slider's dates, the time series of a clicked
# point, the colorbar, the view restored from the URL, nothing overflowing 1280x800; the
# series panel (.ci/browser_series.cjs) on three years of noleap daily data
# (tests/fixtures/analysis/analysis.zarr, else a small store written here): a clicked
# point's series, a drawn polygon's and box's area-weighted mean, monthly means, the CSV
# download, the series restored from the URL, and the CSV of a private dataset; the links
# to an array's OGC API – EDR collection and to a point's EDR position query (also on the
# 4-D tests/fixtures/edr/edr.zarr, a level fixed), absent where /edr has none; the
# viewer for microscopists on OME-Zarr fixtures (.ci/browser_ome_viewer.cjs: channels,
# composite, z slider, scale bar, labels, plate grid; viewer-ome.png);
# then, on a server where the sample is private, the viewer is given an API key and reads
# everything through a capability URL (.ci/browser_auth.cjs). Expected values come from
# zarr-python + NumPy reading the stores directly (the venv .ci/zarr_client.sh caches),
# never from zarrd.
# Usage: .ci/browser.sh path/to/zarrd [screenshot-dir]   (writes viewer-map.png,
# viewer-deepzoom.png and viewer-ome.png there, as in docs/)
# chromium comes from apt when missing; puppeteer-core is installed once into
# ${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci/npm (pinned below).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:?usage: .ci/browser.sh path/to/zarrd [screenshot-dir]}
SHOTS=${2:-}
PUPPETEER_VERSION=24.43.1  # 25.x needs node >= 22.12; Debian 12 has 18 (this machine 20)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-ci
NPM_DIR=$CACHE/npm
VENV=${ZARR_CLIENT_VENV:-$CACHE/compat-clients-venv}
LOG_TAG=browser
# shellcheck source=.ci/lib.sh
source .ci/lib.sh

if ! command -v chromium >/dev/null 2>&1; then
    log "installing Debian chromium"
    SUDO=(); [[ $EUID -ne 0 ]] && SUDO=(sudo)
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium \
        || { "${SUDO[@]}" apt-get update && "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }
fi
if [[ ! -f $NPM_DIR/node_modules/puppeteer-core/package.json ]] \
    || ! grep -q "\"version\": \"$PUPPETEER_VERSION\"" "$NPM_DIR/node_modules/puppeteer-core/package.json"; then
    log "installing puppeteer-core $PUPPETEER_VERSION into $NPM_DIR"
    mkdir -p "$NPM_DIR"
    npm install --prefix "$NPM_DIR" --no-audit --no-fund --no-save "puppeteer-core@$PUPPETEER_VERSION" >/dev/null
fi
[[ -x $VENV/bin/python ]] || { log "no client venv at $VENV: run .ci/zarr_client.sh first (.ci/fixture_zarrd.sh)"; exit 1; }

# Expected gray levels at known spots of terrain/elevation, from the store itself.
EXPECTED=$("$VENV/bin/python" .ci/browser_expected_sample.py)

# The map fixture as zarr-python reads it: coordinates, a cell off its centre, its values
# along time, and the CF dates decoded by NumPy.
MAPS=tests/fixtures/maps/global_0360.zarr
EXPECTED_MAP=$("$VENV/bin/python" .ci/browser_expected_map.py "$MAPS")

# The series panel's data: the analysis fixture's noleap daily `daily/tas` (written by
# another script with xarray), or where it is missing a store like it (a year of daily
# noleap steps on the same 2.5 degree grid, lat descending, lon 0..357.5) written here by
# zarr-python. Expected series from first principles with NumPy: the nearest grid point of
# the clicked place; area weights R^2 dlon (sin phi2 - sin phi1) from edges midway between
# the coordinates of the whole grid (outer cells as wide as their neighbour, lat clipped to
# +-90); cells whose centre is inside the polygon (even-odd, longitudes modulo 360); NaN
# skipped; months of the noleap calendar, each month's steps and cells together.
SERIES_DIR=$(mktemp -d "${TMPDIR:-/tmp}/zarrd-browser-series.XXXXXX")
trap 'rm -rf "$SERIES_DIR"' EXIT
ANALYSIS=tests/fixtures/analysis/analysis.zarr
[[ -f $ANALYSIS/daily/tas/zarr.json ]] || ANALYSIS=$SERIES_DIR/analysis.zarr
"$VENV/bin/python" .ci/browser_expected_series.py "$ANALYSIS" "$SERIES_DIR/expected.json"

[[ -z $SHOTS ]] || mkdir -p "$SHOTS"
# shellcheck source=.ci/ports.sh
source .ci/ports.sh
PORT=$(free_port)
"$BIN" serve --listen "127.0.0.1:$PORT" --dataset sample=data/sample.zarr \
    --dataset ic=tests/fixtures/virtual/icechunk/native.icechunk --dataset climate="$MAPS" \
    --dataset conf=tests/fixtures/conformance/data.zarr --dataset analysis="$ANALYSIS" \
    --dataset edr=tests/fixtures/edr/edr.zarr --dataset hrrr=tests/fixtures/grids/hrrr_lcc.zarr --dataset coastal=tests/fixtures/curvilinear/coastal.zarr \
    >"${TMPDIR:-/tmp}/zarrd-browser.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; rm -rf "$SERIES_DIR"' EXIT
up "$PORT" "${TMPDIR:-/tmp}/zarrd-browser.log"

NODE_PATH=$NPM_DIR/node_modules EXPECTED=$EXPECTED \
    timeout 150 node .ci/browser.cjs "http://127.0.0.1:$PORT"
# `zarrd serve` with nothing configured: the embedded default's sample alone, whose landing
# page browser_viewer.cjs opens (LANDING).
LANDING_PORT=$(free_port)
LANDING_LOG="${TMPDIR:-/tmp}/zarrd-browser-landing.log"
"$BIN" serve --listen "127.0.0.1:$LANDING_PORT" >"$LANDING_LOG" 2>&1 &
LANDING_SERVER=$!
trap 'kill "$SERVER" "$LANDING_SERVER" 2>/dev/null || true; rm -rf "$SERIES_DIR"' EXIT
up "$LANDING_PORT" "$LANDING_LOG"
NODE_PATH=$NPM_DIR/node_modules EXPECTED_MAP=$EXPECTED_MAP SHOTS=$SHOTS LANDING="http://127.0.0.1:$LANDING_PORT" \
    timeout 150 node .ci/browser_viewer.cjs "http://127.0.0.1:$PORT"
kill "$LANDING_SERVER" 2>/dev/null || true
NODE_PATH=$NPM_DIR/node_modules EXPECTED_SERIES=$SERIES_DIR/expected.json SHOTS=$SHOTS \
    timeout 200 node .ci/browser_series.cjs "http://127.0.0.1:$PORT"
# A panic is a bug even when it was answered 500 or cut a body.
if grep -q 'zarrd::panic' "${TMPDIR:-/tmp}/zarrd-browser.log"; then
    grep -m1 -A2 'zarrd::panic' "${TMPDIR:-/tmp}/zarrd-browser.log" >&2
    echo "browser.sh: zarrd logged a panic" >&2
    exit 1
fi

# The viewer for microscopists (.ci/browser_ome_viewer.cjs): an OME-Zarr 0.5 image (t, c,
# z, y, x with omero channels and labels) and an HCS plate written by ome-zarr-py; expected
# names, colours, scales and units come from the fixtures' own metadata files.
OME_PORT=$(free_port)
OME_LOG="${TMPDIR:-/tmp}/zarrd-browser-ome-viewer.log"
"$BIN" serve --listen "127.0.0.1:$OME_PORT" --dataset ozp05=tests/fixtures/ome/images/ozp05_5d.ome.zarr \
    --dataset plate04=tests/fixtures/ome/images/plate04.ome.zarr >"$OME_LOG" 2>&1 &
OME_SERVER=$!
trap 'kill "$SERVER" "$OME_SERVER" 2>/dev/null || true; rm -rf "$SERIES_DIR"' EXIT
up "$OME_PORT" "$OME_LOG"
NODE_PATH=$NPM_DIR/node_modules SHOTS=$SHOTS timeout 150 node .ci/browser_ome_viewer.cjs "http://127.0.0.1:$OME_PORT"
kill "$OME_SERVER" 2>/dev/null || true
if grep -q 'zarrd::panic' "$OME_LOG"; then
    grep -m1 -A2 'zarrd::panic' "$OME_LOG" >&2
    echo "browser.sh: zarrd (OME-Zarr) logged a panic" >&2
    exit 1
fi

# The sample as a private dataset, read by the holder of one API key.
AUTH_PORT=$(free_port)
AUTH_DIR=$(mktemp -d "${TMPDIR:-/tmp}/zarrd-browser-auth.XXXXXX")
API_KEY=browser-test-key
cat >"$AUTH_DIR/zarrd.toml" <<EOF
listen = "127.0.0.1:$AUTH_PORT"
[[auth.api_keys]]
name = "viewer"
sha256 = "$(printf %s "$API_KEY" | sha256sum | cut -d' ' -f1)"
[datasets.sample]
url = "$PWD/data/sample.zarr"
read = ["viewer"]
EOF
ZARRD_SIGNING_KEY=browser-test-signing-key-of-32-bytes-or-more \
    "$BIN" serve --config "$AUTH_DIR/zarrd.toml" >"$AUTH_DIR/zarrd.log" 2>&1 &
AUTH_SERVER=$!
trap 'kill "$SERVER" "$AUTH_SERVER" 2>/dev/null || true; rm -rf "$AUTH_DIR" "$SERIES_DIR"' EXIT
up "$AUTH_PORT" "$AUTH_DIR/zarrd.log"
NODE_PATH=$NPM_DIR/node_modules API_KEY=$API_KEY timeout 120 node .ci/browser_auth.cjs "http://127.0.0.1:$AUTH_PORT"
NODE_PATH=$NPM_DIR/node_modules API_KEY=$API_KEY EXPECTED_SERIES=$SERIES_DIR/expected.json \
    timeout 120 node .ci/browser_series.cjs "http://127.0.0.1:$AUTH_PORT" private
if grep -q 'zarrd::panic' "$AUTH_DIR/zarrd.log"; then
    grep -m1 -A2 'zarrd::panic' "$AUTH_DIR/zarrd.log" >&2
    echo "browser.sh: zarrd (private sample) logged a panic" >&2
    exit 1
fi
