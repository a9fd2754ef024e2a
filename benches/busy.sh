#!/usr/bin/env bash
# How busy a 64 MiB read keeps the CPU pool, and what bounds it (issue 38, item 1): zarrd
# with its caches off serves benches/run.sh's data; the large slice is read REPS times with
# curl. Not part of CI.
#
#   bash benches/busy.sh            # ZARRD_BIN=target/release/zarrd, REPS=5, PORT=19800
#
# Reported per read, from zarrd's own /metrics and /proc (docs/performance.md "Every core"):
# - the pool's busy fraction: `zarrd_cpu_pool_busy_seconds_total` over the wall time ×
#   `zarrd_cpu_pool_threads`. That counts the tasks handed to the pool, not the work other
#   pool threads steal from inside them (a band's chunks decoded in parallel), so the CPU
#   time the kernel counts for the pool's threads (`zarrd-cpu-N`, /proc/PID/task) is shown
#   beside it (it includes rayon's short spin before an idle thread sleeps);
# - what the sender waited on (`zarrd_stream_wait_seconds_total`): the next band (fetch and
#   decode) or the client taking the one before (the connection);
# - the floor: nginx sending the same 64 MiB from a file (sendfile) to curl, when nginx is
#   there.
#
# POOL_NICE=N renices the pool's threads after the start (an experiment: decoding that
# yields the CPU to the threads serving sockets). RAYON_NUM_THREADS sizes the pool.
# Needs the data benches/run.sh generates (BENCH_DATA, default target/bench-data).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=benches/lib.sh
source "$ROOT/benches/lib.sh"
ZARRD_BIN=${ZARRD_BIN:-$TARGET/release/zarrd}
REPS=${REPS:-5}
PORT=${PORT:-19800}
[ -f "$DATA/COMPLETE" ] || { echo "no bench data in $DATA: run benches/run.sh once" >&2; exit 1; }
# shellcheck disable=SC1091
source "$DATA/bench.env"
TMP=$(mktemp -d /tmp/zarrd-busy.XXXXXX)
npid=""
ZARRD__CACHE__CHUNK_BYTES=0 ZARRD__CACHE__RESPONSE_BYTES=0 ZARRD__CACHE__TILE_BYTES=0 \
  "$ZARRD_BIN" serve --listen "127.0.0.1:$PORT" --dataset "bench=$DATA/data.zarr" >"$TMP/zarrd.log" 2>&1 &
pid=$!
stop() {
  kill $pid $npid 2>/dev/null || true
  wait $pid $npid 2>/dev/null || true
  rm -rf "$TMP"
}
trap stop EXIT
wait_http "http://127.0.0.1:$PORT/healthz" || { cat "$TMP/zarrd.log" >&2; exit 1; }
url="http://127.0.0.1:$PORT/v1/slice/bench/large?s=$LARGE_SEL&format=bin"
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
# pool_threads: zarrd's CPU-pool threads (/proc/PID/task/TID).
pool_threads() { grep -l '^zarrd-cpu-' /proc/$pid/task/*/comm | xargs -n1 dirname; }
# pool_ticks: user + system clock ticks of zarrd's CPU-pool threads so far.
pool_ticks() {
  local s=0 t
  for t in $(pool_threads); do s=$((s + $(sed 's/.*) //' "$t/stat" | awk '{ print $12 + $13 }'))); done
  echo "$s"
}
proc_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
# machine_ticks: "busy steal" clock ticks of every CPU so far (/proc/stat: user, nice,
# system, irq, softirq; steal apart, the time a hypervisor gave the CPU to someone else).
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8, $9 }' /proc/stat; }
curl -s -o "$TMP/large.bin" "$url" # the shard indexes once, as a running server has them
if [[ -n ${POOL_NICE:-} ]]; then
  for t in $(pool_threads); do renice -n "$POOL_NICE" -p "${t##*/}" >/dev/null; done
fi
threads=$(metric zarrd_cpu_pool_threads)
busy0=$(metric zarrd_cpu_pool_busy_seconds_total)
band0=$(metric 'zarrd_stream_wait_seconds_total{on="band"}')
client0=$(metric 'zarrd_stream_wait_seconds_total{on="client"}')
ticks0=$(pool_ticks) all0=$(proc_ticks)
read -r machine0 steal0 < <(machine_ticks)
times=()
for _ in $(seq "$REPS"); do times+=("$(curl -s -o /dev/null -w '%{time_total}' "$url")"); done
busy1=$(metric zarrd_cpu_pool_busy_seconds_total)
band1=$(metric 'zarrd_stream_wait_seconds_total{on="band"}')
client1=$(metric 'zarrd_stream_wait_seconds_total{on="client"}')
ticks1=$(pool_ticks) all1=$(proc_ticks)
read -r machine1 steal1 < <(machine_ticks)
echo "large slice ($LARGE_BYTES bytes, $LARGE_INNER_CHUNKS inner chunks), $REPS reads, caches off, $threads pool threads${POOL_NICE:+, pool at nice $POOL_NICE}"
echo "${times[@]}" | awk -v b="$(calc %.6f "$busy1 - $busy0")" -v n="$REPS" -v th="$threads" -v hz="$(getconf CLK_TCK)" \
  -v k="$((ticks1 - ticks0))" -v a="$((all1 - all0))" -v wb="$(calc %.6f "$band1 - $band0")" \
  -v wc="$(calc %.6f "$client1 - $client0")" -v m="$((machine1 - machine0))" -v st="$((steal1 - steal0))" \
  -v cores="$(nproc)" '{
  for (i = 1; i <= NF; i++) wall += $i
  cpu = k / hz
  printf "wall %.1f ms per read\n", wall / n * 1000
  printf "pool tasks busy %.1f ms per read: %.2f threads busy of %d (fraction %.2f)\n", b / n * 1000, b / wall, th, b / (wall * th)
  printf "pool threads CPU %.1f ms per read (kernel count, spinning included): %.2f threads of %d (fraction %.2f)\n", cpu / n * 1000, cpu / wall, th, cpu / (wall * th)
  printf "zarrd CPU %.1f ms per read, all threads: %.2f cores busy\n", a / hz / n * 1000, a / hz / wall
  printf "machine: %.2f of %d cores busy during the reads (zarrd %.2f; the rest is curl, the kernel and any other tenant), %.2f stolen by the hypervisor\n", m / hz / wall, cores, a / hz / wall, st / hz / wall
  printf "sender waited %.1f ms per read on the next band, %.1f ms on the client\n", wb / n * 1000, wc / n * 1000
}'
# The floor: the same bytes from nginx (sendfile), read the same way.
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [[ -x $NGINX ]]; then
  mkdir -p "$TMP/www"
  mv "$TMP/large.bin" "$TMP/www/large.bin"
  chmod -R a+rX "$TMP" # nginx's workers read it as another user
  nginx_conf "$TMP/nginx.conf" "$TMP" "$((PORT + 1))"
  "$NGINX" -p "$TMP" -c "$TMP/nginx.conf" 2>>"$TMP/nginx-error.log" &
  npid=$!
  wait_http "http://127.0.0.1:$((PORT + 1))/large.bin" || { cat "$TMP/nginx-error.log" >&2; exit 1; }
  nt=()
  for _ in $(seq "$REPS"); do nt+=("$(curl -s -o /dev/null -w '%{time_total}' "http://127.0.0.1:$((PORT + 1))/large.bin")"); done
  echo "floor: nginx sends the same $LARGE_BYTES bytes from a file in $(calc %.1f "$(med "${nt[@]}") * 1000") ms (median of $REPS)"
fi
