#!/usr/bin/env bash
# How busy a 64 MiB read keeps the CPU pool (issue 38, item 1): zarrd with its caches off
# serves benches/run.sh's data; the large slice is read REPS times with curl, and the pool's
# busy fraction is zarrd's own `zarrd_cpu_pool_busy_seconds_total` over the reads' wall
# time × `zarrd_cpu_pool_threads` (docs/performance.md "Every core"). Not part of CI.
#
#   bash benches/busy.sh            # ZARRD_BIN=target/release/zarrd, REPS=5, PORT=19800
#
# Needs the data benches/run.sh generates (BENCH_DATA, default target/bench-data).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
DATA=${BENCH_DATA:-$TARGET/bench-data}
ZARRD_BIN=${ZARRD_BIN:-$TARGET/release/zarrd}
REPS=${REPS:-5}
PORT=${PORT:-19800}
[ -f "$DATA/COMPLETE" ] || { echo "no bench data in $DATA: run benches/run.sh once" >&2; exit 1; }
# shellcheck disable=SC1091
source "$DATA/bench.env"
ZARRD__CACHE__CHUNK_BYTES=0 ZARRD__CACHE__RESPONSE_BYTES=0 ZARRD__CACHE__TILE_BYTES=0 \
  "$ZARRD_BIN" serve --listen "127.0.0.1:$PORT" --dataset "bench=$DATA/data.zarr" >/tmp/busy-zarrd.log 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.2; done
url="http://127.0.0.1:$PORT/v1/slice/bench/large?s=$LARGE_SEL&format=bin"
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
curl -s -o /dev/null "$url"   # the shard indexes once, as a running server has them
threads=$(metric zarrd_cpu_pool_threads)
busy0=$(metric zarrd_cpu_pool_busy_seconds_total)
times=()
for _ in $(seq "$REPS"); do times+=("$(curl -s -o /dev/null -w '%{time_total}' "$url")"); done
busy1=$(metric zarrd_cpu_pool_busy_seconds_total)
echo "large slice ($LARGE_BYTES bytes, $LARGE_INNER_CHUNKS inner chunks), $REPS reads, caches off, $threads pool threads"
echo "${times[@]}" | awk -v b0="$busy0" -v b1="$busy1" -v n="$REPS" -v th="$threads" '{
  for (i = 1; i <= NF; i++) wall += $i
  busy = b1 - b0
  printf "wall %.3f s per read; pool busy %.3f s per read; %.2f threads busy of %d (fraction %.2f)\n", wall / n, busy / n, busy / wall, th, busy / (wall * th)
}'
