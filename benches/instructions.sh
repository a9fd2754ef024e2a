#!/usr/bin/env bash
# Instructions per request (docs/performance.md "Per-request cost, counted"): zarrd under
# valgrind's callgrind, each route asked N times on one keep-alive connection after a
# warm-up of N, the user-space instructions of those N divided by N. A count, not a time:
# it does not move with other tenants of a shared machine, so two builds compare within
# 1-2 % (moka's housekeeping runs on a clock) where wall-clock or CPU-time measurements of
# the same requests spread by ±10 % (the 2-core sandbox). It leaves out the kernel's share (the socket calls,
# about as much again) and says nothing of waiting; benches/run.sh measures those.
# Not part of the test suite.
#
#   bash benches/instructions.sh [BIN...]     # default: target/release/zarrd
#
# Each BIN (e.g. a build of main and one of a branch) gets its own column. Knobs: N (300),
# PORT (19750; BIN k listens on PORT+k), PATHS (newline-separated request targets on the
# bundled sample, default below), SERVE_ARGS (more arguments for `zarrd serve`, e.g.
# `--dataset daily=/tmp/trixie/tmp/edr-store/daily.zarr` for analysis.sh's store), OUT (a directory to keep callgrind's files in, for
# `callgrind_annotate --inclusive=yes OUT/<bin>-<route>.out`).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
N=${N:-300}
PORT=${PORT:-19750}
OUT=${OUT:-$(mktemp -d)}
command -v valgrind >/dev/null || { echo "instructions.sh needs valgrind (apt install valgrind)" >&2; exit 1; }
[ $# -gt 0 ] || set -- "$ROOT/target/release/zarrd"
# (The subshell execs valgrind, so $! below is valgrind's pid, which callgrind_control takes.)
# The response cache is off (it would replay every answer after the first); the chunk cache
# is on, so the data routes read decoded chunks: the per-request cost, not the decode.
DEFAULT_PATHS='/healthz
/v1/arrays/sample/climate/t2m
/v1/slice/sample/climate/t2m?sel=lat:~45,lon:~-75&format=bin
/v1/slice/sample/climate/t2m?s=100,0:36,0:72&format=bin
/v1/slice/sample/terrain/elevation?s=0:256,0:256&format=bin'
PATHS=${PATHS:-$DEFAULT_PATHS}
mkdir -p "$OUT"

declare -A COUNT
k=0
for bin in "$@"; do
  k=$((k + 1))
  port=$((PORT + k))
  log=$OUT/zarrd-$k.log
  (cd "$ROOT" && ZARRD__CACHE__RESPONSE_BYTES=0 exec valgrind --tool=callgrind --dump-instr=no \
    --callgrind-out-file="$OUT/cg-$k.%p" "$bin" serve --listen "127.0.0.1:$port" ${SERVE_ARGS:-} >"$log" 2>&1) &
  pid=$!
  for _ in $(seq 120); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.5; done
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { echo "zarrd ($bin) did not start; $log:" >&2; tail "$log" >&2; exit 1; }
  i=0
  while IFS= read -r path; do
    i=$((i + 1))
    cfg=$OUT/curl-$k-$i.cfg
    : >"$cfg"
    for _ in $(seq "$N"); do printf 'url = "http://127.0.0.1:%s%s"\noutput = /dev/null\n' "$port" "$path" >>"$cfg"; done
    curl -sf -K "$cfg" || { echo "zarrd ($bin) failed $path" >&2; exit 1; }
    callgrind_control -z "$pid" >/dev/null 2>&1
    curl -sf -K "$cfg"
    before=$(ls "$OUT"/cg-$k.* 2>/dev/null | wc -l)
    callgrind_control -d "$pid" >/dev/null 2>&1
    for _ in $(seq 50); do [ "$(ls "$OUT"/cg-$k.* | wc -l)" -gt "$before" ] && break; sleep 0.1; done
    dump=$(ls -t "$OUT"/cg-$k.* | head -1)
    mv "$dump" "$OUT/$k-$i.out"
    total=$(awk '/^(summary|totals):/{print $2; exit}' "$OUT/$k-$i.out")
    COUNT[$k,$i]=$((total / N))
  done <<<"$PATHS"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
done

printf '%-70s' "instructions per request (N=$N)"
for ((b = 1; b <= $#; b++)); do printf ' %12s' "bin $b"; done
[ $# -gt 1 ] && printf ' %10s' "last/first"
echo
i=0
while IFS= read -r path; do
  i=$((i + 1))
  printf '%-70s' "$path"
  for ((b = 1; b <= $#; b++)); do printf ' %12s' "${COUNT[$b,$i]}"; done
  [ $# -gt 1 ] && awk -v a="${COUNT[1,$i]}" -v z="${COUNT[$#,$i]}" 'BEGIN{printf " %10.3f", z / a}'
  echo
done <<<"$PATHS"
k=0
for bin in "$@"; do k=$((k + 1)); echo "bin $k: $bin"; done
echo "callgrind files: $OUT/<bin>-<route>.out (route numbers in the order above)"
