#!/usr/bin/env bash
# Real OGC API - EDR clients against zarrd's /edr: OWSLib (owslib.ogcapi.edr), edr-pydantic
# and covjson-pydantic from PyPI (tests/edr_client/check_edr.py), and covjson-reader from npm
# in node (tests/zarr_client/js/read_covjson.mjs).
#
# Usage: .ci/edr_clients.sh [ZARRD_BINARY]     (default: target/release/zarrd)
#
# The venv, the npm install and the fixture server are .ci/fixture_zarrd.sh's (shared with
# the other client checks): zarrd serves, besides the other fixture sets, `analysis`
# (tests/fixtures/analysis/analysis.zarr) and `edr` (tests/fixtures/edr/edr.zarr), and here
# also `ic`, the versioned Icechunk repository tests/fixtures/virtual/icechunk/virtual.icechunk
# (its instances), whose virtual chunks name file:///tmp/zarrd-virtual-fixtures/source/: the
# NetCDF files are put there first, as tests/it/icechunk.rs does.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
LOG_TAG=edr-clients
# shellcheck source=.ci/fixture_zarrd.sh
source "$REPO_ROOT/.ci/fixture_zarrd.sh"
use_zarrd "${1:-}"

node_clients

# The Icechunk repository's virtual chunks, where its container says they are.
# shellcheck source=.ci/virtual_sources.sh
source "$REPO_ROOT/.ci/virtual_sources.sh"
place_virtual_sources "$REPO_ROOT"
# Two projected grids of tests/fixtures/grids (check_edr.py's PROJECTED).
export ZARRD_EXTRA_TOML="[datasets.ic]
url = \"$REPO_ROOT/tests/fixtures/virtual/icechunk/virtual.icechunk\"
virtual_refs = [\"file://$SOURCES/\"]
[datasets.hrrr_lcc]
url = \"$REPO_ROOT/tests/fixtures/grids/hrrr_lcc.zarr\"
[datasets.seaice_3413]
url = \"$REPO_ROOT/tests/fixtures/grids/seaice_3413.zarr\""

make_work edr
start_zarrd "$ZARRD" "$WORK"

# --- clients -----------------------------------------------------------------------------
log "OWSLib, edr-pydantic, covjson-pydantic"
run_client "$VENV/bin/python" -W ignore "$REPO_ROOT/tests/edr_client/check_edr.py" "$BASE"
log "covjson-reader $(node --version)"
run_client node "$JS/read_covjson.mjs" "$BASE"
if [[ $STATUS -ne 0 ]]; then
    log "a client failed; last lines of the zarrd log:"
    zarrd_log_tail
fi
exit "$STATUS"
