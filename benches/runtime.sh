#!/usr/bin/env bash
# The two ways of serving connections, side by side (issue 38, item 2; docs/performance.md
# "Shared runtime or a runtime per core"): `http.runtime = "shared"` (one work-stealing
# runtime) against `"per_core"` (a single-threaded runtime per core on SO_REUSEPORT
# listeners), alternated ROUNDS times on the bundled sample. Not part of CI.
#
#   bash benches/runtime.sh         # ZARRD_BIN=target/release/zarrd, ROUNDS=3, DUR=5
#
# CORES="1 8" measures at each of those core counts: zarrd started on the first C cores
# (taskset, so both runtimes and the CPU pool are sized to them), the clients on the rest.
# Unset, zarrd and the clients share every CPU. PIN_CORE_THREADS=1 (an experiment) pins each
# of per_core's serving threads (`zarrd-core-N`) to a CPU of its own after the start.
#
# Per round and runtime:
#   hot    a cached 36 x 36 npy slice again and again (wrk, 2 threads, 8 connections):
#          req/s and zarrd's CPU per request (utime + stime from /proc over the run)
#   beside the same hot slice while two clients fetch large JSON slices (about 3 MB of
#          text each, never the same twice, so none comes from the response cache): the
#          hot requests' p50 / p99, to see whether a CPU-heavy request stalls the other
#          connections of its thread
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZARRD_BIN=${ZARRD_BIN:-$ROOT/target/release/zarrd}
ROUNDS=${ROUNDS:-3}
DUR=${DUR:-5}
PORT=${PORT:-19820}
TICK=$(getconf CLK_TCK)
HOT="/v1/slice/sample/climate/t2m?s=0,0:36,0:36&format=npy"
LUA="$ROOT/benches/wrk.lua"
pid=""
stop() { if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; fi; pid=""; }
trap 'stop; kill $(jobs -p) 2>/dev/null || true' EXIT
NPROC=$(nproc)
ON=() CLIENT=()
start() {
  ZARRD__HTTP__RUNTIME=$1 ZARRD__LOG__LEVEL=warn "${ON[@]}" "$ZARRD_BIN" serve --listen "127.0.0.1:$PORT" >/tmp/runtime-zarrd.log 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && pin_core_threads && return; sleep 0.1; done
  cat /tmp/runtime-zarrd.log >&2
  echo "zarrd did not start" >&2; exit 1
}
pin_core_threads() {
  [[ ${PIN_CORE_THREADS:-0} == 1 ]] || return 0
  local cpus t n
  read -r -a cpus < <(taskset -pc "$pid" | sed 's/.*: //' | tr ',' '\n' \
    | awk -F- '{ if (NF == 2) for (i = $1; i <= $2; i++) printf "%d ", i; else printf "%d ", $1 }')
  for t in /proc/$pid/task/*; do
    n=$(cat "$t/comm")
    [[ $n == zarrd-core-* ]] && taskset -pc "${cpus[$((${n#zarrd-core-} % ${#cpus[@]}))]}" "${t##*/}" >/dev/null
  done
  return 0
}
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }
heavy() {  # fetch large JSON slices, each another one, until killed
  local k=0
  while :; do
    "${CLIENT[@]}" curl -s -o /dev/null "http://127.0.0.1:$PORT/v1/slice/sample/climate/t2m?s=$((k % 300)):$((k % 300 + 30)),:,:&format=json"
    k=$((k + $1))
  done
}
for cores in ${CORES:-all}; do
  if [[ $cores == all ]]; then
    ON=() CLIENT=()
  else
    ON=(taskset -c "0-$((cores - 1))")
    if ((cores < NPROC)); then CLIENT=(taskset -c "$cores-$((NPROC - 1))"); else CLIENT=(); fi
  fi
  for round in $(seq "$ROUNDS"); do
    for runtime in shared per_core; do
      start "$runtime"
      curl -s -o /dev/null "http://127.0.0.1:$PORT$HOT"
      "${CLIENT[@]}" wrk -t2 -c8 -d1s "http://127.0.0.1:$PORT$HOT" >/dev/null  # warm-up
      c0=$(cpu)
      out=$("${CLIENT[@]}" wrk -t2 -c8 -d"${DUR}s" -s "$LUA" "http://127.0.0.1:$PORT$HOT" | grep '^WRK')
      c1=$(cpu)
      req=$(echo "$out" | field requests)
      dur=$(echo "$out" | field duration_us)
      awk -v cs="$cores" -v r="$round" -v rt="$runtime$([[ ${PIN_CORE_THREADS:-0} == 1 && $runtime == per_core ]] && echo +pinned)" -v n="$req" -v d="$dur" -v c="$((c1 - c0))" -v t="$TICK" \
        'BEGIN { printf "ROW cores=%s round=%s runtime=%s scen=hot rps=%.0f cpu_us_per_req=%.1f\n", cs, r, rt, n / (d / 1e6), c / t / n * 1e6 }'
      heavy 1 & h1=$!
      heavy 7 & h2=$!
      sleep 0.5
      out=$("${CLIENT[@]}" wrk -t2 -c8 -d"${DUR}s" -s "$LUA" "http://127.0.0.1:$PORT$HOT" | grep '^WRK')
      kill "$h1" "$h2" 2>/dev/null; wait "$h1" "$h2" 2>/dev/null || true
      awk -v cs="$cores" -v r="$round" -v rt="$runtime$([[ ${PIN_CORE_THREADS:-0} == 1 && $runtime == per_core ]] && echo +pinned)" -v n="$(echo "$out" | field requests)" -v d="$(echo "$out" | field duration_us)" \
        -v p50="$(echo "$out" | field p50_us)" -v p99="$(echo "$out" | field p99_us)" \
        'BEGIN { printf "ROW cores=%s round=%s runtime=%s scen=beside rps=%.0f p50_us=%s p99_us=%s\n", cs, r, rt, n / (d / 1e6), p50, p99 }'
      stop
    done
  done
done
