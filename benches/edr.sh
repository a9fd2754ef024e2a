#!/usr/bin/env bash
# OGC API - EDR against xpublish-edr, the open peer over Zarr, in one run on the same daily
# store: docs/performance.md "EDR against xpublish-edr".
#
# The peer, its venv and the store are set up by the shared tools (edr-peers/README.md:
# setup.sh and make_bench.py, in a Debian trixie chroot, offline once installed); this
# wrapper builds zarrd and calls their bench_peers.sh twice: zarrd as configured by
# default, then zarrd with its chunk and response caches off (every request read and
# decoded again, as the peer does). Not part of the test suite or of CI.
#
#   bash ../shared/tools/edr-peers/setup.sh
#   chroot /tmp/trixie /opt/venv-xpedr/bin/python /tmp/edr-store/make_bench.py /tmp/edr-store
#   bash benches/edr.sh
#
# Knobs: EDR_PEERS (the folder with bench_peers.sh), STORE (default the chroot's
# /tmp/edr-store/daily.zarr), ZARRD_BIN (an existing binary), COLD_TOO (0: skip the
# caches-off run), and every knob of bench_peers.sh (SERVERS, SCENARIOS, CONNS, DURATION,
# WARMUP, VAR, OUT).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
EDR_PEERS=${EDR_PEERS:-$ROOT/../shared/tools/edr-peers}
[ -f "$EDR_PEERS/bench_peers.sh" ] || { echo "no bench_peers.sh in EDR_PEERS=$EDR_PEERS" >&2; exit 1; }
if [ -z "${ZARRD_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
  ZARRD_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/zarrd"
fi
export ZARRD_BIN
export STORE=${STORE:-/tmp/trixie/tmp/edr-store/daily.zarr}
bash "$EDR_PEERS/bench_peers.sh"
if [ "${COLD_TOO:-1}" != 0 ]; then
  echo "=== zarrd with its chunk and response caches off"
  SERVERS=zarrd ZARRD_ENV="ZARRD__CACHE__CHUNK_BYTES=0 ZARRD__CACHE__RESPONSE_BYTES=0" \
    bash "$EDR_PEERS/bench_peers.sh"
fi
