#!/usr/bin/env bash
# zarrd benchmark against references measured in the same run (see BENCHMARKS.md).
# Not part of the test suite: it never decides whether CI passes.
#
#   bash benches/run.sh
#
# Environment:
#   ZARRD_BIN          use this zarrd binary instead of building one (cargo build --release)
#   CARGO_TARGET_DIR   where zarrd and the datagen tools are built (default: ./target)
#   BENCH_DATA         data directory (default: $CARGO_TARGET_DIR/bench-data); generated
#                      once and reused while its COMPLETE marker is there
#   BENCH_DURATION     seconds per wrk measurement of the hot tile (default 10; others scale)
#   ZARRD_PORT / NGINX_PORT   loopback ports (default 18080 / 18081)
#
# Everything runs on 127.0.0.1; the servers it starts are stopped on exit.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
DATA=${BENCH_DATA:-$TARGET/bench-data}
DUR=${BENCH_DURATION:-10}
SHORT=$(( DUR / 2 > 3 ? DUR / 2 : 3 ))
ZPORT=${ZARRD_PORT:-18080}
NPORT=${NGINX_PORT:-18081}
Z="http://127.0.0.1:$ZPORT"
N="http://127.0.0.1:$NPORT"
LUA="$ROOT/benches/wrk.lua"
LARGE_REPS=${LARGE_REPS:-5}

log() { printf '[bench] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

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
ZPID=""
NPID=""
cleanup() {
  [[ -n $ZPID ]] && kill "$ZPID" 2>/dev/null && wait "$ZPID" 2>/dev/null
  [[ -n $NPID ]] && kill -QUIT "$NPID" 2>/dev/null && wait "$NPID" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT

# zarrd_config FILE CHUNK_BYTES: config/default.toml's values, the benchmark dataset.
zarrd_config() {
  cat >"$1" <<EOF
listen = "127.0.0.1:$ZPORT"
[limits]
max_response_bytes = 268435456
max_chunks_per_request = 100000
request_timeout_secs = 30
max_in_flight = 512
[cache]
shard_index_bytes = 67108864
shard_index_ttl_secs = 300
chunk_bytes = $2
metadata_ttl_secs = 60
[log]
format = "text"
level = "info"
[datasets.bench]
url = "$DATA/data.zarr"
title = "zarrd benchmark data (benches/datagen)"
EOF
}
zarrd_config "$TMP/zarrd-default.toml" 268435456 # the default: 256 MiB decoded-chunk cache
zarrd_config "$TMP/zarrd-nocache.toml" 0         # decoded-chunk cache off: every read decodes

wait_http() { # URL: up to 15 s
  for _ in $(seq 150); do
    curl -fs -o /dev/null "$1" && return 0
    sleep 0.1
  done
  return 1
}

stop_zarrd() {
  if [[ -n $ZPID ]]; then
    kill "$ZPID" 2>/dev/null || true
    wait "$ZPID" 2>/dev/null || true
    ZPID=""
  fi
}
# start_zarrd default|nocache: a fresh process (empty caches).
start_zarrd() {
  stop_zarrd
  "$ZARRD" serve --config "$TMP/zarrd-$1.toml" >>"$TMP/zarrd.log" 2>&1 &
  ZPID=$!
  wait_http "$Z/healthz" || { tail -20 "$TMP/zarrd.log" >&2; die "zarrd did not start"; }
}

mkdir -p "$TMP/nginx-www"
cp "$DATA/tile.bin" "$TMP/nginx-www/tile.bin"
chmod -R a+rX "$TMP"
cat >"$TMP/nginx.conf" <<EOF
# Debian's nginx, static file, configured the usual way for static serving.
daemon off;
worker_processes auto;
pid $TMP/nginx.pid;
error_log $TMP/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log $TMP/nginx-access.log;
  client_body_temp_path $TMP/nginx-body;
  proxy_temp_path $TMP/nginx-proxy;
  fastcgi_temp_path $TMP/nginx-fastcgi;
  uwsgi_temp_path $TMP/nginx-uwsgi;
  scgi_temp_path $TMP/nginx-scgi;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:$NPORT;
    root $TMP/nginx-www;
  }
}
EOF
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
"$NGINX" -p "$TMP" -c "$TMP/nginx.conf" 2>>"$TMP/nginx-error.log" &
NPID=$!
wait_http "$N/tile.bin" || { cat "$TMP/nginx-error.log" >&2; die "nginx did not start"; }

# ---------------------------------------------------------------- helpers
# Storage requests, data requests served (ops routes excluded), shard-index cache misses.
snap() {
  local m
  m=$(curl -fs "$Z/metrics")
  SR=$(awk '$1 == "zarrd_storage_requests_total" { s += $2 } END { printf "%.0f", s }' <<<"$m")
  HR=$(awk 'index($1, "zarrd_http_requests_total{") == 1 && $1 !~ /route="\/(metrics|healthz|readyz)"/ { s += $2 }
            END { printf "%.0f", s }' <<<"$m")
  IM=$(awk 'index($1, "zarrd_cache_misses_total{") == 1 && $1 ~ /shard_index/ { s += $2 } END { printf "%.0f", s }' <<<"$m")
}
# snap0 before a measurement, delta after: DS storage requests, DH requests, DI index misses.
snap0() { snap; SR0=$SR; HR0=$HR; IM0=$IM; }
delta() { snap; DS=$((SR - SR0)); DH=$((HR - HR0)); DI=$((IM - IM0)); }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
# kv LINE KEY: the value of KEY=VALUE in a line of space-separated pairs.
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }

# run_wrk CONNS SECONDS URL [PATH...] -> W_REQ W_RPS W_P50 W_P99 (ms) W_NON2XX W_ERR
run_wrk() {
  local conns=$1 secs=$2 url=$3
  shift 3
  local threads=$((conns < 2 ? conns : 2))
  local out line
  out=$(wrk -t"$threads" -c"$conns" -d"${secs}s" --timeout 10s -s "$LUA" "$url" -- "$@" 2>&1) \
    || { echo "$out" >&2; die "wrk failed"; }
  line=$(grep '^WRK ' <<<"$out") || { echo "$out" >&2; die "no wrk summary"; }
  W_REQ=$(kv "$line" requests)
  W_RPS=$(calc %.0f "$W_REQ / ($(kv "$line" duration_us) / 1e6)")
  W_P50=$(calc %.2f "$(kv "$line" p50_us) / 1000")
  W_P99=$(calc %.2f "$(kv "$line" p99_us) / 1000")
  W_NON2XX=$(kv "$line" non2xx)
  W_ERR=$(kv "$line" errors)
  ((W_NON2XX == 0 && W_ERR == 0)) || log "warning: $url: $W_NON2XX non-2xx, $W_ERR socket errors"
}

# vparse VIEWPORT-LINE -> V_ok V_total_ms V_p50_ms V_p99_ms V_body_bytes
vparse() {
  V_ok=$(kv "$1" ok)
  V_total_ms=$(kv "$1" total_ms)
  V_p50_ms=$(kv "$1" p50_ms)
  V_p99_ms=$(kv "$1" p99_ms)
  V_body_bytes=$(kv "$1" body_bytes)
}

# large_reps N -> L_MED L_MAX (s), L_MBPS: sequential curl downloads of the large slice.
large_reps() {
  local times=() r code size secs sorted
  for _ in $(seq "$1"); do
    r=$(curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}' "$Z$LARGE_PATH")
    read -r code size secs <<<"$r"
    [[ $code == 200 && $size == "$LARGE_BYTES" ]] || die "large slice: $r"
    times+=("$secs")
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -n)
  L_MED=$(sed -n "$((($1 + 1) / 2))p" <<<"$sorted")
  L_MAX=$(tail -1 <<<"$sorted")
  L_MBPS=$(calc %.1f "$LARGE_BYTES / $L_MED / 1e6")
}

ROWS=""
STORAGE=""
row() { ROWS+="| $1 | $2 | $3 | $4 | $5 | $6 | $7 | $8 |"$'\n'; }
# srow SCENARIO MINIMUM: from the last snap0/delta pair.
srow() { STORAGE+="| $1 | $DH | $DS | $(calc %.2f "$DS / $DH") | $2 | $DI |"$'\n'; }

# ---------------------------------------------------------------- checks
start_zarrd default
TILE_PATH="/v1/slice/bench/tiles?s=$TILE_SEL&format=bin"
curl -fs "$Z$TILE_PATH" -o "$TMP/tile.zarrd" || die "zarrd cannot serve the tile"
cmp -s "$TMP/tile.zarrd" "$DATA/tile.bin" || die "zarrd's tile differs from zarrs' bytes"
[[ $(stat -c %s "$TMP/tile.zarrd") == "$TILE_BYTES" ]] || die "tile size"
log "zarrd's tile equals zarrs' ($TILE_BYTES bytes, the nginx file)"

# ---------------------------------------------------------------- 1. hot tile
log "1. hot tile: warm-up"
run_wrk 64 2 "$N/tile.bin"
run_wrk 64 2 "$Z$TILE_PATH"
log "1. hot tile: nginx static file, 64 connections, ${DUR}s"
run_wrk 64 "$DUR" "$N/tile.bin"
NG_RPS=$W_RPS
row "1 hot tile" "nginx, static file of the same size" 64 "$W_REQ" "$W_RPS" "$W_P50" "$W_P99" \
  "$(calc %.0f "$W_RPS * $TILE_BYTES / 1e6")"
log "1. hot tile: zarrd (default config), 64 connections, ${DUR}s"
snap0
run_wrk 64 "$DUR" "$Z$TILE_PATH"
delta
HOT_RATIO=$(calc %.2f "$W_RPS / $NG_RPS")
row "1 hot tile" "zarrd slice 256×256 f32 bin, default config (decoded-chunk cache)" 64 "$W_REQ" "$W_RPS" \
  "$W_P50" "$W_P99" "$(calc %.0f "$W_RPS * $TILE_BYTES / 1e6")"
srow "1 hot tile, default config" "0 (decoded-chunk cache)"
log "1. hot tile: zarrd with the decoded-chunk cache off, 64 connections, ${DUR}s"
start_zarrd nocache
run_wrk 64 2 "$Z$TILE_PATH"
snap0
run_wrk 64 "$DUR" "$Z$TILE_PATH"
delta
HOT_RATIO_NC=$(calc %.2f "$W_RPS / $NG_RPS")
row "1 hot tile" "zarrd, chunk cache off (range read + zstd decode per request)" 64 "$W_REQ" "$W_RPS" \
  "$W_P50" "$W_P99" "$(calc %.0f "$W_RPS * $TILE_BYTES / 1e6")"
srow "1 hot tile, chunk cache off" "1 (index cached: one range read)"

# ---------------------------------------------------------------- 2. viewport
VPATHS=()
for s in $VIEWPORT_SELS; do VPATHS+=("/v1/slice/bench/tiles?s=$s&format=bin"); done
NV=${#VPATHS[@]}
log "2. viewport: $NV tiles at once; cold (fresh zarrd, default config)"
start_zarrd default
snap0
vout=$("$TOOLS/viewport" "127.0.0.1:$ZPORT" 1 "${VPATHS[@]}")
delta
vparse "$vout"
((V_ok == NV)) || log "warning: viewport cold: only $V_ok of $NV were 200"
row "2 viewport cold (fresh zarrd)" "zarrd, $NV tiles at once, new connections" "$NV" "$NV" \
  "$(calc %.0f "$NV / ($V_total_ms / 1000)")" "$V_p50_ms" "$V_p99_ms" \
  "$(calc %.0f "$V_body_bytes / ($V_total_ms / 1000) / 1e6")"
VCOLD_MS=$V_total_ms
srow "2 viewport cold" \
  "$(calc %.2f "($NV + $VIEWPORT_SHARDS + 1) / $NV") ($NV ranges + $VIEWPORT_SHARDS shard indexes + 1 zarr.json)"
log "2. viewport: warm, 5 rounds"
snap0
vout=$("$TOOLS/viewport" "127.0.0.1:$ZPORT" 5 "${VPATHS[@]}")
delta
# The median round by total time.
vline=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^total_ms=/) { split($i, a, "="); print a[2] "\t" $0 } }' <<<"$vout" \
  | sort -n | sed -n 3p | cut -f2-)
vparse "$vline"
row "2 viewport warm (median of 5 rounds)" "zarrd, $NV tiles at once, new connections" "$NV" "$((NV * 5))" \
  "$(calc %.0f "$NV / ($V_total_ms / 1000)")" "$V_p50_ms" "$V_p99_ms" \
  "$(calc %.0f "$V_body_bytes / ($V_total_ms / 1000) / 1e6")"
VWARM_MS=$V_total_ms
srow "2 viewport warm" "0 (decoded-chunk cache)"

# ---------------------------------------------------------------- 3. large slice
LARGE_PATH="/v1/slice/bench/large?s=$LARGE_SEL&format=bin"
LNAME="3 large slice 64 MiB ($LARGE_SHARDS shards, $LARGE_INNER_CHUNKS zstd inner chunks)"
log "3. large slice: zarrs in-process ($LARGE_REPS reps after a warm-up)"
zout=$("$TOOLS/zarrs-read" "$DATA/data.zarr" large "$LARGE_SEL" "$LARGE_REPS" --out "$TMP/large.zarrs")
zline=$(grep '^zarrs-read:' <<<"$zout")
ZR_MBPS=$(kv "$zline" median_MBps)
ZR_MED=$(kv "$zline" median_s)
ZR_MAX=$(grep '^rep' <<<"$zout" | awk '{ print $3 }' | sort -n | tail -1)
row "$LNAME" "zarrs-read in-process (all cores)" 1 "$LARGE_REPS" \
  "$(calc %.2f "1 / $ZR_MED")" "$(calc %.0f "$ZR_MED * 1000")" "$(calc %.0f "$ZR_MAX * 1000") (max)" "$ZR_MBPS"

log "3. large slice: zarrd, chunk cache off (fresh), curl one at a time"
start_zarrd nocache
snap0
code=$(curl -s -o "$TMP/large.zarrd" -w '%{http_code}' "$Z$LARGE_PATH")
delta
[[ $code == 200 ]] || die "large slice: HTTP $code: $(head -c 300 "$TMP/large.zarrd")"
cmp -s "$TMP/large.zarrd" "$TMP/large.zarrs" || die "zarrd's large slice differs from zarrs'"
rm -f "$TMP/large.zarrd" "$TMP/large.zarrs"
log "   zarrd's $LARGE_BYTES bytes equal zarrs'"
srow "3 large slice, first request (fresh zarrd)" \
  "$((2 * LARGE_SHARDS + 1)) ($LARGE_SHARDS index reads + $LARGE_SHARDS coalesced ranges + 1 zarr.json)"
snap0
large_reps "$LARGE_REPS"
delta
LARGE_RATIO=$(calc %.2f "$L_MBPS / $ZR_MBPS")
row "$LNAME" "zarrd HTTP bin, chunk cache off, curl sequential" 1 "$LARGE_REPS" \
  "$(calc %.2f "1 / $L_MED")" "$(calc %.0f "$L_MED * 1000")" "$(calc %.0f "$L_MAX * 1000") (max)" "$L_MBPS"
srow "3 large slice, chunk cache off, indexes cached" "$LARGE_SHARDS (1 coalesced range per shard)"

log "3. large slice: zarrd, default config (decoded-chunk cache), curl one at a time"
start_zarrd default
curl -s -o /dev/null "$Z$LARGE_PATH"
snap0
large_reps "$LARGE_REPS"
delta
LARGE_RATIO_C=$(calc %.2f "$L_MBPS / $ZR_MBPS")
row "$LNAME" "zarrd HTTP bin, default config (repeats hit the chunk cache)" 1 "$LARGE_REPS" \
  "$(calc %.2f "1 / $L_MED")" "$(calc %.0f "$L_MED * 1000")" "$(calc %.0f "$L_MAX * 1000") (max)" "$L_MBPS"
srow "3 large slice, default config, repeated" "0 (decoded-chunk cache)"

# ---------------------------------------------------------------- 4. rectilinear
RECT_PATH="/v1/slice/bench/rect?s=$RECT_SEL&format=bin"
for spec in "slice:$RECT_PATH" "arrays:/v1/arrays/bench/rect" "chunks:/v1/chunks/bench/rect?s=$RECT_SEL"; do
  name=${spec%%:*}
  path=${spec#*:}
  code=$(curl -s -o "$TMP/body" -w '%{http_code}' "$Z$path")
  [[ $code == 200 ]] || die "$path: HTTP $code: $(head -c 300 "$TMP/body")"
  size=$(stat -c %s "$TMP/body")
  run_wrk 16 2 "$Z$path"
  log "4. rectilinear $name: 16 connections, ${SHORT}s"
  snap0
  run_wrk 16 "$SHORT" "$Z$path"
  delta
  case $name in
    slice)
      what="/v1/slice rect, $RECT_CHUNKS uneven chunks, bin"
      min="0 with the decoded-chunk cache ($RECT_CHUNKS without)" ;;
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

stop_zarrd

# ---------------------------------------------------------------- report
bar() { awk -v r="$1" -v t="$2" 'BEGIN { print (r >= t ? "met" : "MISSED") }'; }
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
MEM=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
REPORT="$TMP/report.md"
{
  echo "## zarrd benchmark, $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Machine: $(nproc) CPUs ($CPU), $MEM RAM, Linux $(uname -r); client, zarrd and nginx share these CPUs."
  echo "Load average before the run: $LOAD_BEFORE; after: $(cut -d' ' -f1-3 /proc/loadavg) (other processes on the machine skew results)."
  echo "zarrd: $ZARRD; $("$NGINX" -v 2>&1 | sed 's/.*: //'); $(wrk -v 2>&1 | head -1 | awk '{ print $1, $2 }'); zarrs $(grep -A1 '^name = "zarrs"$' benches/datagen/Cargo.lock | sed -n 's/version = "\(.*\)"/\1/p')."
  echo "wrk: 2 threads, ${DUR}s (hot tile) / ${SHORT}s (rectilinear) after a 2 s warm-up; MB/s = response bodies, 10^6 B/s."
  echo
  echo "| scenario | server / request | conns | requests | req/s | p50 ms | p99 ms | MB/s |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  printf '%s' "$ROWS"
  echo
  echo "| bar | measured | target | |"
  echo "|---|---:|---:|---|"
  echo "| hot tile: zarrd req/s ÷ nginx req/s (default config) | $HOT_RATIO | ≥ 0.5 | $(bar "$HOT_RATIO" 0.5) |"
  echo "| hot tile: zarrd req/s ÷ nginx req/s (chunk cache off) | $HOT_RATIO_NC | (≥ 0.5) | $(bar "$HOT_RATIO_NC" 0.5) |"
  echo "| large slice: zarrd MB/s ÷ zarrs in-process MB/s (chunk cache off: both decode) | $LARGE_RATIO | ≥ 0.9 | $(bar "$LARGE_RATIO" 0.9) |"
  echo "| large slice: the same, default config (zarrd serves repeats from its cache) | $LARGE_RATIO_C | (≥ 0.9) | $(bar "$LARGE_RATIO_C" 0.9) |"
  echo "| viewport: cold ÷ warm time for all $NV tiles | $(calc %.1f "$VCOLD_MS / $VWARM_MS") ($VCOLD_MS ms vs $VWARM_MS ms) | — | |"
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
