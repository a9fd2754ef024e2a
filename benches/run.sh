#!/usr/bin/env bash
# zarrd benchmark against references measured in the same run (see docs/performance.md).
# Not part of the test suite: it never decides whether CI passes.
#
#   bash benches/run.sh
#
# Environment:
#   ZARRD_BIN          use this zarrd binary instead of building one (cargo build --release)
#   CARGO_TARGET_DIR   where zarrd and the datagen tools are built (default: ./target)
#   BENCH_DATA         data directory (default: $CARGO_TARGET_DIR/bench-data); generated
#                      once and reused while its COMPLETE marker is there
#   BENCH_DURATION     seconds of each wrk measurement (default 5)
#   BENCH_ROUNDS       rounds of the paired comparisons (default 3); each round measures the
#                      reference and zarrd back to back, so load from other processes hits
#                      both alike, and the ratio reported is the median of the round ratios
#   LARGE_REPS         timed large-slice reads per server and round (default 3)
#   BENCH_CORES        core counts for the hot-tile measurements (default "1 N", N = all
#                      CPUs): the servers are pinned with taskset to the first C cores and
#                      wrk to the others when there are any. On a bigger machine, e.g.
#                      BENCH_CORES="1 2 4 8" gives the per-core tables of docs/performance.md.
#   TENSORSTORE_PYTHON a Python command with `tensorstore` and `numpy` for the second
#                      in-process reference of the large slice (default: a virtualenv made
#                      once in ~/.cache/zarrd-bench/tensorstore with pip; skipped, with a
#                      warning, when it cannot be made)
#   ZARRD_PORT         loopback port of zarrd with the default config (default 18080); zarrd
#                      with the decoded-data caches off listens on ZARRD_PORT+2, and zarrd
#                      with the default config but `http.runtime = "shared"` (measured
#                      beside the default `per_core` on the hot tile) on ZARRD_PORT+4
#   NGINX_PORT         loopback port of nginx (default 18081)
#
# Everything runs on 127.0.0.1; the servers it starts are stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
LOG_TAG=bench
# shellcheck source=benches/lib.sh
source "$ROOT/benches/lib.sh"
NPROC=$(nproc)
CORES=${BENCH_CORES:-$( ((NPROC > 1)) && echo "1 $NPROC" || echo 1)}
TICK=$(getconf CLK_TCK)
WRK_PIN=()
ZPORT=${ZARRD_PORT:-18080}
NPORT=${NGINX_PORT:-18081}
declare -A PORT=([default]=$ZPORT [nocache]=$((ZPORT + 2)) [shared]=$((ZPORT + 4)))
declare -A ZPID=([default]="" [nocache]="" [shared]="")
Z="http://127.0.0.1:${PORT[default]}"
ZN="http://127.0.0.1:${PORT[nocache]}"
N="http://127.0.0.1:$NPORT"
LUA="$ROOT/benches/wrk.lua"

# ---------------------------------------------------------------- tools
missing=()
for t in wrk nginx curl; do
  command -v "$t" >/dev/null 2>&1 || [[ -x /usr/sbin/$t ]] || missing+=("$t")
done
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  if [[ $(id -u) == 0 ]]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    die "missing ${missing[*]}: apt-get install -y ${missing[*]}"
  fi
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# ---------------------------------------------------------------- builds
if [[ -n ${ZARRD_BIN:-} ]]; then
  ZARRD=$ZARRD_BIN
else
  log "building zarrd (release)"
  cargo build --release --quiet --bin zarrd
  ZARRD=$TARGET/release/zarrd
fi
[[ -x $ZARRD ]] || die "no zarrd binary at $ZARRD"

TOOLS_TARGET=$TARGET/bench-datagen
log "building benches/datagen (datagen, zarrs-read, viewport)"
CARGO_TARGET_DIR=$TOOLS_TARGET cargo build --release --quiet --manifest-path benches/datagen/Cargo.toml
TOOLS=$TOOLS_TARGET/release

if [[ ! -f $DATA/COMPLETE ]]; then
  log "generating data in $DATA"
  mkdir -p "$DATA"
  "$TOOLS/datagen" "$DATA" >&2
else
  log "reusing data in $DATA"
fi
# shellcheck disable=SC1091
source "$DATA/bench.env"

# ---------------------------------------------------------------- servers
TMP=$(mktemp -d /tmp/zarrd-bench.XXXXXX)
NPID=""
cleanup() {
  local pid
  for pid in "${ZPID[@]}" "$NPID"; do
    [[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  rm -rf "$TMP"
}
trap cleanup EXIT

# zarrd_config NAME CACHE_BYTES: benches/lib.sh's zarrd configuration on NAME's port.
zarrd_config() { zarrd_conf "$TMP/zarrd-$1.toml" "${PORT[$1]}" "$2" "$DATA"; }
zarrd_config default 268435456 # the defaults: 256 MiB decoded-chunk cache, 64 MiB response cache
zarrd_config nocache 0         # decoded-chunk and response caches off: every read decodes
zarrd_config shared 268435456  # the defaults, served by one work-stealing runtime
printf '[http]\nruntime = "shared"\n' >>"$TMP/zarrd-shared.toml"

stop_zarrd() { # NAME
  if [[ -n ${ZPID[$1]} ]]; then
    kill "${ZPID[$1]}" 2>/dev/null || true
    wait "${ZPID[$1]}" 2>/dev/null || true
    ZPID[$1]=""
  fi
}
# start_zarrd NAME [CPULIST]: a fresh process (empty caches), default, nocache or shared;
# on CPULIST alone when given, so that it sizes its runtime and CPU pool to those CPUs as it
# would on a machine (or a container's cpuset) of that many cores.
start_zarrd() {
  stop_zarrd "$1"
  local on=()
  [[ -n ${2:-} ]] && on=(taskset -c "$2")
  "${on[@]}" "$ZARRD" serve --config "$TMP/zarrd-$1.toml" >>"$TMP/zarrd-$1.log" 2>&1 &
  ZPID[$1]=$!
  wait_http "http://127.0.0.1:${PORT[$1]}/healthz" || { tail -20 "$TMP/zarrd-$1.log" >&2; die "zarrd did not start"; }
}

mkdir -p "$TMP/www"
cp "$DATA/tile.bin" "$TMP/www/tile.bin"
chmod -R a+rX "$TMP"
nginx_conf "$TMP/nginx.conf" "$TMP" "$NPORT"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
T_START=$(date +%s)
"$NGINX" -p "$TMP" -c "$TMP/nginx.conf" 2>>"$TMP/nginx-error.log" &
NPID=$!
wait_http "$N/tile.bin" || { cat "$TMP/nginx-error.log" >&2; die "nginx did not start"; }
start_zarrd default
start_zarrd nocache

# ---------------------------------------------------------------- helpers
# snap BASE_URL: storage requests, data requests served (ops routes excluded) and
# shard-index cache misses of that zarrd.
snap() {
  local m
  m=$(curl -fs "$1/metrics")
  SR=$(awk '$1 == "zarrd_storage_requests_total" { s += $2 } END { printf "%.0f", s }' <<<"$m")
  HR=$(awk 'index($1, "zarrd_http_requests_total{") == 1 && $1 !~ /route="\/(metrics|healthz|readyz)"/ { s += $2 }
            END { printf "%.0f", s }' <<<"$m")
  IM=$(awk 'index($1, "zarrd_cache_misses_total{") == 1 && $1 ~ /shard_index/ { s += $2 } END { printf "%.0f", s }' <<<"$m")
}
# snap0 URL before a measurement, delta URL after: DS storage requests, DH requests served,
# DI shard-index misses in between.
snap0() { snap "$1"; SR0=$SR; HR0=$HR; IM0=$IM; }
delta() { snap "$1"; DS=$((SR - SR0)); DH=$((HR - HR0)); DI=$((IM - IM0)); }

# run_wrk CONNS SECONDS URL [PATH...] -> W_REQ W_RPS W_P50 W_P99 (ms)
run_wrk() {
  local conns=$1 secs=$2 url=$3
  shift 3
  local threads=$((conns < 2 ? conns : 2))
  local out line
  out=$("${WRK_PIN[@]}" wrk -t"$threads" -c"$conns" -d"${secs}s" --timeout 10s -s "$LUA" "$url" -- "$@" 2>&1) \
    || { echo "$out" >&2; die "wrk failed"; }
  line=$(grep '^WRK ' <<<"$out") || { echo "$out" >&2; die "no wrk summary"; }
  W_REQ=$(kv "$line" requests)
  W_RPS=$(calc %.0f "$W_REQ / ($(kv "$line" duration_us) / 1e6)")
  W_P50=$(calc %.2f "$(kv "$line" p50_us) / 1000")
  W_P99=$(calc %.2f "$(kv "$line" p99_us) / 1000")
  local non2xx errors
  non2xx=$(kv "$line" non2xx)
  errors=$(kv "$line" errors)
  ((non2xx == 0 && errors == 0)) || log "warning: $url: $non2xx non-2xx, $errors socket errors"
}

# pin CPULIST PID...: every thread of each process onto CPULIST.
pin() {
  local list=$1 p
  shift
  for p in "$@"; do taskset -apc "$list" "$p" >/dev/null; done
}
nginx_pids() { echo "$NPID" $(pgrep -P "$NPID"); }
# cpu_ticks PID...: user + system clock ticks of these processes so far (all threads).
cpu_ticks() {
  local s=0 p
  for p in "$@"; do s=$((s + $(awk '{ print $14 + $15 }' "/proc/$p/stat"))); done
  echo "$s"
}
# cpu_wrk URL PID...: run_wrk with 64 connections for DUR seconds, and W_CPU = the CPU
# time of PIDs per request, in µs.
cpu_wrk() {
  local url=$1 t0
  shift
  t0=$(cpu_ticks "$@")
  run_wrk 64 "$DUR" "$url"
  W_CPU=$(calc %.1f "($(cpu_ticks "$@") - $t0) / $TICK * 1e6 / $W_REQ")
}

# vparse VIEWPORT-LINE -> V_ok V_total_ms V_p50_ms V_p99_ms V_body_bytes
vparse() {
  V_ok=$(kv "$1" ok)
  V_total_ms=$(kv "$1" total_ms)
  V_p50_ms=$(kv "$1" p50_ms)
  V_p99_ms=$(kv "$1" p99_ms)
  V_body_bytes=$(kv "$1" body_bytes)
}

# large_reps BASE_URL N -> appends N download times (s) to LT and the times to the first
# body byte to LF: sequential curl downloads (pinned like wrk).
large_reps() {
  local r code size secs first
  for _ in $(seq "$2"); do
    r=$("${WRK_PIN[@]}" curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total} %{time_starttransfer}' "$1$LARGE_PATH")
    read -r code size secs first <<<"$r"
    [[ $code == 200 && $size == "$LARGE_BYTES" ]] || die "large slice: $r"
    LT+=("$secs")
    LF+=("$first")
  done
}

# The TensorStore reference's Python: TENSORSTORE_PYTHON, else a cached virtualenv.
TS_PY=()
if [[ -n ${TENSORSTORE_PYTHON:-} ]]; then
  read -r -a TS_PY <<<"$TENSORSTORE_PYTHON"
else
  venv=${XDG_CACHE_HOME:-$HOME/.cache}/zarrd-bench/tensorstore
  if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import tensorstore, numpy' 2>/dev/null; then
    log "making the TensorStore virtualenv in $venv"
    python3 -m venv "$venv" >&2 && "$venv/bin/pip" install -q tensorstore numpy >&2 || log "warning: no TensorStore virtualenv"
  fi
  "$venv/bin/python" -c 'import tensorstore, numpy' 2>/dev/null && TS_PY=("$venv/bin/python")
fi
# ts_read N [ARGS...]: TensorStore reads the large region N times after a warm-up (its
# summary line); ARGS go to tensorstore_read.py (--out FILE, --quiet).
ts_read() { "${READ_PIN[@]}" "${TS_PY[@]}" "$ROOT/benches/tensorstore_read.py" "$DATA/data.zarr" large "$LARGE_SEL" "$@"; }

ROWS=""
STORAGE=""
row() { ROWS+="| $1 | $2 | $3 | $4 | $5 | $6 | $7 | $8 |"$'\n'; }
# srow SCENARIO MINIMUM [REQUESTS STORAGE_REQUESTS INDEX_MISSES]: defaults from the last delta.
srow() {
  local dh=${3:-$DH} ds=${4:-$DS} di=${5:-$DI}
  STORAGE+="| $1 | $dh | $ds | $(calc %.2f "$ds / $dh") | $2 | $di |"$'\n'
}

# ---------------------------------------------------------------- checks
TILE_PATH="/v1/slice/bench/tiles?s=$TILE_SEL&format=bin"
for base in "$Z" "$ZN"; do
  curl -fs "$base$TILE_PATH" -o "$TMP/tile.zarrd" || die "zarrd cannot serve the tile"
  cmp -s "$TMP/tile.zarrd" "$DATA/tile.bin" || die "zarrd's tile differs from zarrs' bytes"
done
[[ $(stat -c %s "$TMP/tile.zarrd") == "$TILE_BYTES" ]] || die "tile size"
log "zarrd's tile equals zarrs' ($TILE_BYTES bytes, the nginx file)"

# ---------------------------------------------------------------- 0. cold-tile references
# The hot tile is exactly one read-grid chunk (datagen): its chunk coordinates.
IFS=, read -r tr tc <<<"$TILE_SEL"
HOT_TILE_COORDS="$((${tr%%:*} / (${tr##*:} - ${tr%%:*}))),$((${tc%%:*} / (${tc##*:} - ${tc%%:*})))"
# The codec's own cost for the hot tile (its stored zstd frame, decoded on one thread with a
# reused context) and zarrs' single-thread read of the same tile, CPU per call.
curl -fs "$ZN/v1/chunk/bench/tiles?c=$HOT_TILE_COORDS" -o "$TMP/tile.zst" || die "cannot fetch the tile's stored bytes"
zline=$("$TOOLS/zstd-decode" "$TMP/tile.zst" "$DATA/tile.bin" 3000)
ZSTD_US=$(calc %.1f "$(kv "$zline" cpu_per_decode_s) * 1e6")
zline=$("$TOOLS/zarrs-read" "$DATA/data.zarr" tiles "$TILE_SEL" 2000 --threads 1 --quiet)
ZARRS_TILE_US=$(calc %.1f "$(kv "$zline" cpu_per_read_s) * 1e6")
log "0. references: zstd decode of the tile ${ZSTD_US} µs CPU, zarrs single-thread tile read ${ZARRS_TILE_US} µs CPU"

# ---------------------------------------------------------------- 1. hot tile
# Per core count: the servers' threads pinned to the first C cores (taskset), wrk on the
# others when there are any; each round measures nginx, zarrd default and zarrd with the
# caches off back to back, with req/s and the server's CPU per request.
declare -A H_REQ H_RPS H_P50 H_P99 H_CPU
HOT_RATIOS=()
HOT_RATIOS_NC=()
declare -A CPU_RATIO CPU_RATIO_NC CPU_RATIO_SH
HS=(0 0 0 0 0 0) # storage requests, requests, index misses: default, then nocache
ALL="0-$((NPROC - 1))"
for c in $CORES; do
  pin "0-$((c - 1))" $(nginx_pids)
  for name in default nocache shared; do start_zarrd "$name" "0-$((c - 1))"; done
  if ((c < NPROC)); then WRK_PIN=(taskset -c "$c-$((NPROC - 1))"); else WRK_PIN=(); fi
  log "1. hot tile on $c core(s): warm-up"
  run_wrk 64 2 "$N/tile.bin"
  for name in default nocache shared; do run_wrk 64 2 "http://127.0.0.1:${PORT[$name]}$TILE_PATH"; done
  for r in $(seq "$ROUNDS"); do
    log "1. hot tile on $c core(s), round $r/$ROUNDS: nginx, zarrd, zarrd without chunk cache, zarrd shared runtime; 64 connections, ${DUR}s each"
    cpu_wrk "$N/tile.bin" $(nginx_pids)
    H_REQ[nginx,$c]+=" $W_REQ" H_RPS[nginx,$c]+=" $W_RPS" H_P50[nginx,$c]+=" $W_P50" H_P99[nginx,$c]+=" $W_P99"
    H_CPU[nginx,$c]+=" $W_CPU"
    ng=$W_RPS ngcpu=$W_CPU
    for name in default nocache shared; do
      base="http://127.0.0.1:${PORT[$name]}"
      snap0 "$base"
      cpu_wrk "$base$TILE_PATH" "${ZPID[$name]}"
      delta "$base"
      H_REQ[$name,$c]+=" $W_REQ" H_RPS[$name,$c]+=" $W_RPS" H_P50[$name,$c]+=" $W_P50" H_P99[$name,$c]+=" $W_P99"
      H_CPU[$name,$c]+=" $W_CPU"
      if [[ $name == shared ]]; then
        CPU_RATIO_SH[$c]+=" $(calc %.2f "$W_CPU / $ngcpu")"
      elif [[ $name == default ]]; then
        CPU_RATIO[$c]+=" $(calc %.2f "$W_CPU / $ngcpu")"
        [[ $c == "${CORES##* }" ]] && HOT_RATIOS+=("$(calc %.2f "$W_RPS / $ng")")
        HS[0]=$((HS[0] + DS)) HS[1]=$((HS[1] + DH)) HS[2]=$((HS[2] + DI))
      else
        CPU_RATIO_NC[$c]+=" $(calc %.2f "$W_CPU / $ZSTD_US")"
        [[ $c == "${CORES##* }" ]] && HOT_RATIOS_NC+=("$(calc %.2f "$W_RPS / $ng")")
        HS[3]=$((HS[3] + DS)) HS[4]=$((HS[4] + DH)) HS[5]=$((HS[5] + DI))
      fi
    done
  done
done
pin "$ALL" $(nginx_pids)
stop_zarrd shared
start_zarrd default
start_zarrd nocache
WRK_PIN=()
declare -A HOT_LABEL=(
  [nginx]="nginx, static file of the same size"
  [default]="zarrd slice 256×256 f32 bin, default config (response and decoded-chunk caches, a runtime per core)"
  [nocache]="zarrd, caches off (range read + zstd decode per request)"
  [shared]="zarrd, default config but http.runtime = shared (one work-stealing runtime)"
)
LASTC=${CORES##* }
for name in nginx default nocache; do
  # shellcheck disable=SC2086
  rps=$(med ${H_RPS[$name,$LASTC]})
  # shellcheck disable=SC2086
  row "1 hot tile, $LASTC cores (median of $ROUNDS rounds)" "${HOT_LABEL[$name]}" 64 "$(sum ${H_REQ[$name,$LASTC]})" \
    "$rps" "$(med ${H_P50[$name,$LASTC]})" "$(med ${H_P99[$name,$LASTC]})" "$(calc %.0f "$rps * $TILE_BYTES / 1e6")"
done
CPUROWS=""
for c in $CORES; do
  for name in nginx default shared nocache; do
    # shellcheck disable=SC2086
    CPUROWS+="| $c | ${HOT_LABEL[$name]} | $(med ${H_RPS[$name,$c]}) | $(med ${H_CPU[$name,$c]}) |"$'\n'
  done
done
HOT_RATIO=$(med "${HOT_RATIOS[@]}")
HOT_RATIO_NC=$(med "${HOT_RATIOS_NC[@]}")
srow "1 hot tile, default config" "0 (response cache)" "${HS[1]}" "${HS[0]}" "${HS[2]}"
srow "1 hot tile, caches off" "1 (index cached: one range read; concurrent requests of the same chunk of a remote store merged within storage.coalesce_window_ms)" "${HS[4]}" "${HS[3]}" "${HS[5]}"

# ---------------------------------------------------------------- 2. viewport
VPATHS=()
for s in $VIEWPORT_SELS; do VPATHS+=("/v1/slice/bench/tiles?s=$s&format=bin"); done
NV=${#VPATHS[@]}
log "2. viewport: $NV tiles at once; cold (fresh zarrd, default config)"
start_zarrd default
snap0 "$Z"
vout=$("$TOOLS/viewport" "127.0.0.1:$ZPORT" 1 "${VPATHS[@]}")
delta "$Z"
vparse "$vout"
((V_ok == NV)) || log "warning: viewport cold: only $V_ok of $NV were 200"
row "2 viewport cold (fresh zarrd)" "zarrd, $NV tiles at once, new connections" "$NV" "$NV" \
  "$(calc %.0f "$NV / ($V_total_ms / 1000)")" "$V_p50_ms" "$V_p99_ms" \
  "$(calc %.0f "$V_body_bytes / ($V_total_ms / 1000) / 1e6")"
VCOLD_MS=$V_total_ms
srow "2 viewport cold" \
  "$(calc %.2f "($NV + $VIEWPORT_SHARDS + 1) / $NV") ($NV ranges + $VIEWPORT_SHARDS shard indexes + 1 zarr.json)"
log "2. viewport: warm, 5 rounds"
snap0 "$Z"
vout=$("$TOOLS/viewport" "127.0.0.1:$ZPORT" 5 "${VPATHS[@]}")
delta "$Z"
# The median round by total time.
vline=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^total_ms=/) { split($i, a, "="); print a[2] "\t" $0 } }' <<<"$vout" \
  | sort -g | sed -n 3p | cut -f2-)
vparse "$vline"
row "2 viewport warm (median of 5 rounds)" "zarrd, $NV tiles at once, new connections" "$NV" "$((NV * 5))" \
  "$(calc %.0f "$NV / ($V_total_ms / 1000)")" "$V_p50_ms" "$V_p99_ms" \
  "$(calc %.0f "$V_body_bytes / ($V_total_ms / 1000) / 1e6")"
VWARM_MS=$V_total_ms
srow "2 viewport warm" "0 (decoded-chunk cache)"

# ---------------------------------------------------------------- 3. large slice
LARGE_PATH="/v1/slice/bench/large?s=$LARGE_SEL&format=bin"
LNAME="3 large slice 64 MiB ($LARGE_SHARDS shards, $LARGE_INNER_CHUNKS zstd inner chunks)"
log "3. large slice: first request to a fresh zarrd (caches off), checked against zarrs"
"$TOOLS/zarrs-read" "$DATA/data.zarr" large "$LARGE_SEL" 0 --out "$TMP/large.zarrs" >/dev/null
READ_PIN=()
if ((${#TS_PY[@]})); then
  ts_read 0 --out "$TMP/large.ts" >/dev/null || die "TensorStore could not read the large slice"
  cmp -s "$TMP/large.ts" "$TMP/large.zarrs" || die "TensorStore's large slice differs from zarrs'"
  rm -f "$TMP/large.ts"
  log "   TensorStore's bytes equal zarrs'"
fi
start_zarrd nocache
snap0 "$ZN"
code=$(curl -s -o "$TMP/large.zarrd" -w '%{http_code}' "$ZN$LARGE_PATH")
delta "$ZN"
[[ $code == 200 ]] || die "large slice: HTTP $code: $(head -c 300 "$TMP/large.zarrd")"
cmp -s "$TMP/large.zarrd" "$TMP/large.zarrs" || die "zarrd's large slice differs from zarrs'"
rm -f "$TMP/large.zarrd" "$TMP/large.zarrs"
log "   zarrd's $LARGE_BYTES bytes equal zarrs'"
srow "3 large slice, first request (fresh zarrd)" \
  "$((2 * LARGE_SHARDS + 1)) ($LARGE_SHARDS index reads + $LARGE_SHARDS coalesced ranges + 1 zarr.json)"
curl -s -o /dev/null "$Z$LARGE_PATH" # fills the default zarrd's chunk cache
LS_NC=(0 0 0)
LS_C=(0 0 0)
ZR_T=()
LT_NC=()
LT_C=()
LARGE_RATIOS=()
LARGE_RATIOS_C=()
ZR_CPU=()
LCPU_NC=()
TS_T=()
TS_CPU=()
LARGE_RATIOS_TS=()
LF_NC=()
for r in $(seq "$ROUNDS"); do
  log "3. large slice, round $r/$ROUNDS: zarrs and TensorStore in-process, zarrd without chunk cache, zarrd default; $LARGE_REPS reads each"
  zout=$("$TOOLS/zarrs-read" "$DATA/data.zarr" large "$LARGE_SEL" "$LARGE_REPS")
  mapfile -t zt < <(grep '^rep' <<<"$zout" | awk '{ print $3 }')
  ZR_T+=("${zt[@]}")
  ZR_CPU+=("$(kv "$(grep '^zarrs-read:' <<<"$zout")" cpu_per_read_s)")
  zr=$(med "${zt[@]}")
  if ((${#TS_PY[@]})); then
    tout=$(ts_read "$LARGE_REPS")
    mapfile -t tt < <(grep '^rep' <<<"$tout" | awk '{ print $3 }')
    TS_T+=("${tt[@]}")
    TS_CPU+=("$(kv "$(grep '^tensorstore-read:' <<<"$tout")" cpu_per_read_s)")
    TS_VERSION=$(kv "$(grep '^tensorstore-read:' <<<"$tout")" version)
  fi
  LT=()
  LF=()
  snap0 "$ZN"
  t0=$(cpu_ticks "${ZPID[nocache]}")
  large_reps "$ZN" "$LARGE_REPS"
  LCPU_NC+=("$(calc %.4f "($(cpu_ticks "${ZPID[nocache]}") - $t0) / $TICK / $LARGE_REPS")")
  delta "$ZN"
  LS_NC=($((LS_NC[0] + DS)) $((LS_NC[1] + DH)) $((LS_NC[2] + DI)))
  LT_NC+=("${LT[@]}")
  LF_NC+=("${LF[@]}")
  LARGE_RATIOS+=("$(calc %.2f "$zr / $(med "${LT[@]}")")")
  ((${#TS_PY[@]})) && LARGE_RATIOS_TS+=("$(calc %.2f "$(med "${tt[@]}") / $(med "${LT[@]}")")")
  LT=()
  snap0 "$Z"
  large_reps "$Z" "$LARGE_REPS"
  delta "$Z"
  LS_C=($((LS_C[0] + DS)) $((LS_C[1] + DH)) $((LS_C[2] + DI)))
  LT_C+=("${LT[@]}")
  LARGE_RATIOS_C+=("$(calc %.2f "$zr / $(med "${LT[@]}")")")
done
lrow() { # LABEL TIMES...
  local label=$1
  shift
  local m
  m=$(med "$@")
  row "$LNAME" "$label" 1 "$#" "$(calc %.2f "1 / $m")" "$(calc %.0f "$m * 1000")" \
    "$(calc %.0f "$(max "$@") * 1000") (max)" "$(calc %.0f "$LARGE_BYTES / $m / 1e6")"
}
lrow "zarrs-read in-process (all cores), median" "${ZR_T[@]}"
((${#TS_T[@]})) && lrow "TensorStore $TS_VERSION in-process (all cores, no cache), median" "${TS_T[@]}"
lrow "zarrd HTTP bin, caches off, curl sequential, median (first byte after $(calc %.1f "$(med "${LF_NC[@]}") * 1000") ms)" "${LT_NC[@]}"
lrow "zarrd HTTP bin, default config (repeats hit the chunk cache), median" "${LT_C[@]}"
LARGE_RATIO=$(med "${LARGE_RATIOS[@]}")
LARGE_CPU_NC=$(med "${LCPU_NC[@]}")
LARGE_CPU_ZARRS=$(med "${ZR_CPU[@]}")
# The large slice per core count (caches off): zarrd pinned to the first C cores with curl on
# the others, zarrs (C threads) and TensorStore pinned to the same C cores; one round each.
LROWS=""
for c in $CORES; do
  start_zarrd nocache "0-$((c - 1))"
  READ_PIN=(taskset -c "0-$((c - 1))")
  if ((c < NPROC)); then WRK_PIN=(taskset -c "$c-$((NPROC - 1))"); else WRK_PIN=(); fi
  log "3. large slice on $c core(s)"
  zout=$("${READ_PIN[@]}" "$TOOLS/zarrs-read" "$DATA/data.zarr" large "$LARGE_SEL" "$LARGE_REPS" --threads "$c" --quiet)
  zr_s=$(kv "$zout" median_s) zr_cpu=$(kv "$zout" cpu_per_read_s)
  ts_s="—" ts_cpu="—"
  if ((${#TS_PY[@]})); then
    tout=$(ts_read "$LARGE_REPS" | grep '^tensorstore-read:')
    ts_s=$(calc %.1f "$(kv "$tout" median_s) * 1000") ts_cpu=$(calc %.1f "$(kv "$tout" cpu_per_read_s) * 1000")
  fi
  LT=()
  LF=()
  curl -s -o /dev/null "$ZN$LARGE_PATH"
  t0=$(cpu_ticks "${ZPID[nocache]}")
  large_reps "$ZN" "$LARGE_REPS"
  zd_cpu=$(calc %.1f "($(cpu_ticks "${ZPID[nocache]}") - $t0) / $TICK / $LARGE_REPS * 1000")
  zd_s=$(med "${LT[@]}")
  LROWS+="| $c | $(calc %.1f "$zd_s * 1000") | $(calc %.1f "$(med "${LF[@]}") * 1000") | $zd_cpu | $(calc %.1f "$zr_s * 1000") | $(calc %.1f "$zr_cpu * 1000") | $ts_s | $ts_cpu | $(calc %.2f "$zr_s / $zd_s") |"$'\n'
done
start_zarrd nocache
READ_PIN=()
WRK_PIN=()
# N concurrent large slices (caches off): wall time of all of them, against N times
# the sequential median. Work that overlaps (fetch, decode, send) and spreads over the
# cores gives a ratio well below 1; requests that queue behind each other give 1.
CONC=4
log "3. large slice: $CONC at once, caches off"
CONC_T=()
for r in $(seq "$ROUNDS"); do
  t0=$(date +%s.%N)
  cpids=()
  for _ in $(seq "$CONC"); do
    curl -fs -o /dev/null "$ZN$LARGE_PATH" &
    cpids+=($!)
  done
  # Only the downloads: a bare `wait` would also wait for the servers.
  for p in "${cpids[@]}"; do wait "$p" || die "a concurrent large slice failed"; done
  CONC_T+=("$(calc %.4f "$(date +%s.%N) - $t0")")
done
CONC_WALL=$(med "${CONC_T[@]}")
CONC_RATIO=$(calc %.2f "$CONC_WALL / ($CONC * $(med "${LT_NC[@]}"))")
LARGE_RATIO_C=$(med "${LARGE_RATIOS_C[@]}")
srow "3 large slice, caches off, indexes cached" "$LARGE_SHARDS (1 coalesced range per shard)" \
  "${LS_NC[1]}" "${LS_NC[0]}" "${LS_NC[2]}"
srow "3 large slice, default config, repeated" "0 (decoded-chunk cache)" "${LS_C[1]}" "${LS_C[0]}" "${LS_C[2]}"

# ---------------------------------------------------------------- 4. rectilinear
RECT_PATH="/v1/slice/bench/rect?s=$RECT_SEL&format=bin"
for spec in "slice:$RECT_PATH" "slice-nocache:$RECT_PATH" "arrays:/v1/arrays/bench/rect" \
  "chunks:/v1/chunks/bench/rect?s=$RECT_SEL"; do
  name=${spec%%:*}
  path=${spec#*:}
  base=$Z
  [[ $name == slice-nocache ]] && base=$ZN
  code=$(curl -s -o "$TMP/body" -w '%{http_code}' "$base$path")
  [[ $code == 200 ]] || die "$path: HTTP $code: $(head -c 300 "$TMP/body")"
  size=$(stat -c %s "$TMP/body")
  run_wrk 16 2 "$base$path"
  log "4. rectilinear $name: 16 connections, ${DUR}s"
  snap0 "$base"
  run_wrk 16 "$DUR" "$base$path"
  delta "$base"
  case $name in
    slice)
      what="/v1/slice rect, $RECT_CHUNKS uneven chunks, bin, default config"
      min="0 (decoded-chunk cache)" ;;
    slice-nocache)
      what="the same, caches off"
      min="$RECT_CHUNKS (one GET per chunk)" ;;
    arrays)
      what="/v1/arrays/bench/rect"
      min="0 (metadata cached for metadata_ttl_secs)" ;;
    chunks)
      what="/v1/chunks rect, $RECT_CHUNKS chunks"
      min="0 if chunk states are cached, else $RECT_CHUNKS HEADs or 1 LIST" ;;
  esac
  row "4 rectilinear" "zarrd $what" 16 "$W_REQ" "$W_RPS" "$W_P50" "$W_P99" \
    "$(calc %.0f "$W_RPS * $size / 1e6")"
  srow "4 rect $name" "$min"
done

stop_zarrd default
stop_zarrd nocache
T_END=$(date +%s)

# ---------------------------------------------------------------- report
bar() { awk -v r="$1" -v t="$2" 'BEGIN { print (r >= t ? "met" : "MISSED") }'; }
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
MEM=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
REPORT="$TMP/report.md"
{
  echo "## zarrd benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Machine: $(nproc) CPUs ($CPU), $MEM RAM, Linux $(uname -r); client, zarrd and nginx share these CPUs."
  echo "Load average before: $LOAD_BEFORE; after: $(cut -d' ' -f1-3 /proc/loadavg) (includes the benchmark's own client and servers; other work on the machine skews absolute numbers, the paired rounds keep ratios fair). Measurements took $((T_END - T_START)) s."
  echo "zarrd: $ZARRD; $("$NGINX" -v 2>&1 | sed 's/.*: //'); $(wrk -v 2>&1 | head -1 | awk '{ print $1, $2 }'); zarrs $(grep -A1 '^name = "zarrs"$' benches/datagen/Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p')."
  echo "wrk: 2 threads, ${DUR} s per measurement after a 2 s warm-up; $ROUNDS paired rounds for the hot tile and the large slice; MB/s = response bodies, 10^6 B/s."
  echo
  echo "| scenario | server / request | conns | requests | req/s | p50 ms | p99 ms | MB/s |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  printf '%s' "$ROWS"
  echo
  echo "| bar (median of the per-round ratios) | rounds | measured | target | |"
  echo "|---|---|---:|---:|---|"
  echo "| hot tile: zarrd req/s ÷ nginx req/s, default config | ${HOT_RATIOS[*]} | $HOT_RATIO | ≥ 0.5 | $(bar "$HOT_RATIO" 0.5) |"
  echo "| hot tile: the same, caches off | ${HOT_RATIOS_NC[*]} | $HOT_RATIO_NC | (≥ 0.5) | $(bar "$HOT_RATIO_NC" 0.5) |"
  echo "| large slice: zarrd MB/s ÷ zarrs in-process MB/s, caches off (both decode) | ${LARGE_RATIOS[*]} | $LARGE_RATIO | ≥ 1.0 | $(bar "$LARGE_RATIO" 1.0) |"
  ((${#LARGE_RATIOS_TS[@]})) && echo "| large slice: zarrd MB/s ÷ TensorStore in-process MB/s, caches off (both decode) | ${LARGE_RATIOS_TS[*]} | $(med "${LARGE_RATIOS_TS[@]}") | ≥ 1.0 | $(bar "$(med "${LARGE_RATIOS_TS[@]}")" 1.0) |"
  echo "| large slice: the same, default config (zarrd serves repeats from its cache) | ${LARGE_RATIOS_C[*]} | $LARGE_RATIO_C | (≥ 1.0) | $(bar "$LARGE_RATIO_C" 1.0) |"
  echo "| viewport: cold ÷ warm time for all $NV tiles | | $(calc %.1f "$VCOLD_MS / $VWARM_MS") ($VCOLD_MS ms vs $VWARM_MS ms) | — | |"
  for c in $CORES; do
    # shellcheck disable=SC2086
    r1=$(med ${CPU_RATIO[$c]})
    # shellcheck disable=SC2086
    r2=$(med ${CPU_RATIO_NC[$c]})
    echo "| hot tile on $c core(s): zarrd CPU per request ÷ nginx's, default config | ${CPU_RATIO[$c]} | $r1 | ≤ 1.5 | $(awk -v r="$r1" 'BEGIN { print (r <= 1.5 ? "met" : "MISSED") }') |"
    # shellcheck disable=SC2086
    r3=$(med ${CPU_RATIO_SH[$c]})
    echo "| hot tile on $c core(s): the same, http.runtime = shared | ${CPU_RATIO_SH[$c]} | $r3 | ≤ 1.5 | $(awk -v r="$r3" 'BEGIN { print (r <= 1.5 ? "met" : "MISSED") }') |"
    echo "| cold tile on $c core(s): zarrd CPU per request (caches off) ÷ the zstd decode of the tile (${ZSTD_US} µs) | ${CPU_RATIO_NC[$c]} | $r2 | ≤ 1.5 | $(awk -v r="$r2" 'BEGIN { print (r <= 1.5 ? "met" : "MISSED") }') |"
  done
  # CPU per cached request as cores grow (issue 38: ≤ 1.15× from the first core count to the last).
  FIRSTC=${CORES%% *}
  if [[ $FIRSTC != "$LASTC" ]]; then
    for name in default shared nocache; do
      # shellcheck disable=SC2086
      g=$(calc %.2f "$(med ${H_CPU[$name,$LASTC]}) / $(med ${H_CPU[$name,$FIRSTC]})")
      echo "| CPU per request on $LASTC cores ÷ on $FIRSTC: ${HOT_LABEL[$name]} | | $g | (≤ 1.15) | $(awk -v r="$g" 'BEGIN { print (r <= 1.15 ? "met" : "MISSED") }') |"
    done
  fi
  # shellcheck disable=SC2086
  cold1=$(med ${H_CPU[nocache,${CORES%% *}]})
  echo "| cold tile: zarrd CPU per request on ${CORES%% *} core ÷ zarrs' single-thread read of the tile (${ZARRS_TILE_US} µs) | | $(calc %.2f "$cold1 / $ZARRS_TILE_US") | < 1 | $(awk -v a="$cold1" -v b="$ZARRS_TILE_US" 'BEGIN { print (a < b ? "met" : "MISSED") }') |"
  echo "| large slice: zarrd CPU per request (caches off) ÷ zarrs' CPU per read | | $(calc %.2f "$LARGE_CPU_NC / $LARGE_CPU_ZARRS") ($(calc %.0f "$LARGE_CPU_NC * 1000") ms vs $(calc %.0f "$LARGE_CPU_ZARRS * 1000") ms) | — | |"
  echo "| large slice: $CONC at once, wall ÷ ($CONC × sequential median), caches off (1 = no worse than one after another; below 1 only where one request leaves cores idle) | ${CONC_T[*]} | $CONC_RATIO | ≤ 1.0 | $(awk -v r="$CONC_RATIO" 'BEGIN { print (r <= 1.0 ? "met" : "MISSED") }') |"
  echo
  echo "CPU per request of the server process (user + system time of all its threads from \`/proc/PID/stat\`, nginx: master and workers), zarrd started on the first C cores (\`taskset\`: its runtime and CPU pool sized to them, as on a machine of C cores), nginx pinned there, wrk on the others when there are any; median of $ROUNDS rounds. References on one thread: zstd decode of the tile's stored frame ${ZSTD_US} µs, zarrs reading the tile ${ZARRS_TILE_US} µs."
  echo
  echo "| cores | server | req/s | CPU µs per request |"
  echo "|---:|---|---:|---:|"
  printf '%s' "$CPUROWS"
  echo
  echo "The large slice per core count, caches off: zarrd started on the first C cores (curl on the others when there are any), zarrs (\`--threads C\`) and TensorStore pinned to the same cores; medians of $LARGE_REPS reads, CPU per read of the reading process."
  echo
  echo "| cores | zarrd ms | zarrd first byte ms | zarrd CPU ms | zarrs ms | zarrs CPU ms | TensorStore ms | TensorStore CPU ms | zarrd ÷ zarrs speed |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s' "$LROWS"
  echo
  echo "Storage requests (\`zarrd_storage_requests_total\` delta ÷ data requests served, from /metrics):"
  echo
  echo "| scenario | requests | storage requests | per request | minimum per request | shard-index cache misses |"
  echo "|---|---:|---:|---:|---|---:|"
  printf '%s' "$STORAGE"
} >"$REPORT"
cat "$REPORT"
cp "$REPORT" "$DATA/last-results.md"
log "report also in $DATA/last-results.md"
