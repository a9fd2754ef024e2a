#!/usr/bin/env bash
# Map tiles against the Python servers people run for them today (titiler-xarray,
# xpublish-tiles), in one run on the same 0.25 deg ERA5-like data: docs/performance.md "Map tiles".
#
# The peers, their venvs and the data are set up by the shared tools (maps-peers/README.md:
# setup_peers.sh, in a Debian trixie chroot, offline once installed); this wrapper builds
# zarrd and calls their bench_peers.sh with it. Not part of the test suite or of CI.
#
#   MAPS_PEERS=../shared/tools/maps-peers MAPS_CHROOT=/tmp/trixie bash benches/maps.sh
#
# Knobs: MAPS_PEERS (the folder with bench_peers.sh), MAPS_CHROOT (the chroot of the Python
# peers; empty: they run here), TITILER_VENV / XPT_VENV (venvs as the servers see them),
# STORES (era5.zarr and/or era5_sharded.zarr), ZARRD_BIN (an existing binary), and every
# knob of bench_peers.sh (SERVERS, CONNS, DURATION, WARMUP, COLD, SCENARIOS, OUT).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MAPS_PEERS=${MAPS_PEERS:-$ROOT/../shared/tools/maps-peers}
[ -f "$MAPS_PEERS/bench_peers.sh" ] || { echo "no bench_peers.sh in MAPS_PEERS=$MAPS_PEERS" >&2; exit 1; }
if [ -z "${ZARRD_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
  ZARRD_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/zarrd"
fi
export ZARRD_BIN
export MAPS_CHROOT=${MAPS_CHROOT-/tmp/trixie}
export TITILER_VENV=${TITILER_VENV:-/opt/venv-maps}
export XPT_VENV=${XPT_VENV:-/opt/venv-xpt}
export STORES=${STORES:-"era5.zarr era5_sharded.zarr"}
exec bash "$MAPS_PEERS/bench_peers.sh"
