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
# The venv, the npm install and the fixture server are .ci/fixture_zarrd.sh's (shared with
# the other client checks); node and npm come from Debian when missing. zarrd is started on
# a free loopback port with every fixture set and the sample,
# and always stopped on exit.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
LOG_TAG=compat-clients
# shellcheck source=.ci/fixture_zarrd.sh
source "$REPO_ROOT/.ci/fixture_zarrd.sh"
use_zarrd "${1:-}"

node_clients

make_work compat
start_zarrd "$ZARRD" "$WORK"

# --- clients -----------------------------------------------------------------------------
log "zarr-python, TensorStore, xarray"
run_client "$VENV/bin/python" -W ignore "$REPO_ROOT/tests/zarr_client/read_compat.py" "$BASE"
log "zarrita.js $(node --version)"
run_client node "$JS/read_compat.mjs" "$BASE"
if [[ $STATUS -ne 0 ]]; then
    log "a client failed; last lines of the zarrd log:"
    zarrd_log_tail
fi
exit "$STATUS"
