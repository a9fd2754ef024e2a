#!/usr/bin/env bash
# Questions near the data against xarray in-process (docs/performance.md, "Questions near
# the data against xarray in-process"): point series warm and cold from time-major and
# map-major chunks, a monthly area-weighted polygon mean (one and four at once), and
# zarrd's peak memory over growing reductions — on the EDR peers' store (../shared/tools/edr-peers,
# daily.zarr), xarray in the Debian trixie chroot. Not part of the test suite or of CI.
#
#   bash benches/analysis.sh
#
# Knobs: ZARRD_BIN (an existing release binary), CHROOT (/tmp/trixie), VENV (a venv in the
# chroot with xarray; default /opt/venv, given xarray, cftime and pandas when it lacks them),
# ROUNDS (3), PORT (19600; the caches-off server listens on PORT+1, the one with only its
# response cache off on PORT+3; PORT+2 is the memory measurement's).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED:-$ROOT/../shared}
CHROOT=${CHROOT:-/tmp/trixie}
VENV=${VENV:-/opt/venv}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-19600}
LOG_TAG=analysis
# shellcheck source=.ci/lib.sh
source "$ROOT/.ci/lib.sh"

bash "$SHARED/tools/setup_py313.sh" "$CHROOT" >/dev/null
if ! chroot "$CHROOT" "$VENV/bin/python" -c 'import xarray, cftime' 2>/dev/null; then
  log "installing xarray, cftime and pandas into $CHROOT$VENV"
  whl=$(mktemp -d)
  python3 -m pip download -q --only-binary=:all: --python-version 3.13 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d "$whl" xarray cftime pandas
  mkdir -p "$CHROOT/tmp/whl-analysis" && cp "$whl"/*.whl "$CHROOT/tmp/whl-analysis/"
  chroot "$CHROOT" "$VENV/bin/pip" install -q --no-index --find-links /tmp/whl-analysis xarray cftime pandas
fi
DATA=$CHROOT/tmp/edr-store
if [ ! -f "$DATA/daily.zarr/zarr.json" ]; then
  log "writing the EDR peers' store into $DATA"
  mkdir -p "$DATA" && cp "$SHARED/tools/edr-peers/make_bench.py" "$DATA/"
  chroot "$CHROOT" "$VENV/bin/python" /tmp/edr-store/make_bench.py /tmp/edr-store >/dev/null
fi
if [ -z "${ZARRD_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet)
  ZARRD_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/zarrd"
fi
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
"$ZARRD_BIN" serve --listen "127.0.0.1:$PORT" --dataset "daily=$DATA/daily.zarr" >/tmp/analysis-warm.log 2>&1 &
pids+=($!)
ZARRD__CACHE__CHUNK_BYTES=0 ZARRD__CACHE__RESPONSE_BYTES=0 \
  "$ZARRD_BIN" serve --listen "127.0.0.1:$((PORT + 1))" --dataset "daily=$DATA/daily.zarr" >/tmp/analysis-cold.log 2>&1 &
cold_pid=$!
pids+=("$cold_pid")
# Only the response cache off: warm answers read from the decoded-chunk cache, none replayed.
ZARRD__CACHE__RESPONSE_BYTES=0 \
  "$ZARRD_BIN" serve --listen "127.0.0.1:$((PORT + 3))" --dataset "daily=$DATA/daily.zarr" >/tmp/analysis-data.log 2>&1 &
pids+=($!)
for p in "$PORT" $((PORT + 1)) $((PORT + 3)); do
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$p/healthz" >/dev/null && break; sleep 0.2; done
done
cp "$ROOT/benches/analysis.py" "$CHROOT/tmp/analysis-bench.py"
log "zarrd $("$ZARRD_BIN" --version 2>/dev/null || echo) on $(nproc) cores; xarray $(chroot "$CHROOT" "$VENV/bin/python" -c 'import xarray; print(xarray.__version__)')"
chroot "$CHROOT" "$VENV/bin/python" /tmp/analysis-bench.py /tmp/edr-store/daily.zarr \
  "http://127.0.0.1:$PORT" "http://127.0.0.1:$((PORT + 1))" "$ROUNDS" "http://127.0.0.1:$((PORT + 3))"

# Peak memory: a fresh caches-off server for each request, its VmHWM read before and after,
# so no earlier request's peak is counted. The polygon's monthly mean over one and three
# years, then the whole grid's mean over time (every chunk of the array passes through).
kill "$cold_pid" 2>/dev/null || true
POLY='POLYGON((12.0%2036.0,%2038.0%2038.0,%2041.0%2055.0,%2025.0%2061.0,%2011.0%2052.0,%2012.0%2036.0))'
MEM_PORT=$((PORT + 2))
hwm() { awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
for what in "polygon monthly mean, 1 year|op=mean&over=lat,lon&weights=area&resample=time:1M&within=$POLY&sel=time:2020-01-01..2020-12-31" \
            "polygon monthly mean, 3 years|op=mean&over=lat,lon&weights=area&resample=time:1M&within=$POLY" \
            "whole grid mean over time, 1 year|op=mean&over=time&sel=time:2020-01-01..2020-12-31" \
            "whole grid mean over time, 3 years|op=mean&over=time"; do
  ZARRD__CACHE__CHUNK_BYTES=0 ZARRD__CACHE__RESPONSE_BYTES=0 \
    "$ZARRD_BIN" serve --listen "127.0.0.1:$MEM_PORT" --dataset "daily=$DATA/daily.zarr" >/tmp/analysis-memory.log 2>&1 &
  mem_pid=$!
  pids+=("$mem_pid")
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$MEM_PORT/healthz" >/dev/null && break; sleep 0.2; done
  before=$(hwm "$mem_pid")
  curl -sf -o /dev/null "http://127.0.0.1:$MEM_PORT/v1/reduce/daily/t2m?${what#*|}&format=npy"
  printf 'ROW memory %-38s VmHWM %7s MiB at start, %7s MiB after\n' "${what%%|*}" "$before" "$(hwm "$mem_pid")"
  kill "$mem_pid"
  wait "$mem_pid" 2>/dev/null || true
done
