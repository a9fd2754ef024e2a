#!/usr/bin/env bash
# Map tiles on a projected grid against xpublish-tiles, in one run on the same data:
# docs/performance.md "Map tiles on projected grids". HRRR's 3 km Lambert conformal CONUS
# grid (1799 x 1059, sharded t2m; benches/datagen/make_hrrr.py), PNG tiles of step 0 at
# z5 (every tile over the grid), z6 and z7 (8 x 8 blocks at its middle), round-robin under
# wrk at CONNS connections; servers one at a time:
#   xpt-2w         xpublish-tiles 0.12 under uvicorn with 2 workers (maps-peers/xpt_app.py)
#   zarrd          default configuration
#   zarrd-nocache  chunk, tile and response caches off: every tile read and decoded again
#   zarrd-chunks   tile and response caches off, chunks cached: each tile's own cost (its
#                  pixels' cells looked up and drawn) from warm chunks
#   NAME@latlon    the same server on hrrr_latlon.zarr (the same values on a 1-D lat/lon grid of
#                  the same size): a projected tile's cost against a lat/lon tile's
#   NAME@curvilinear  the same server on hrrr_curvilinear.zarr (the same values on their 2-D
#                  latitude/longitude only: a curvilinear grid of 1.9 million cells; docs/
#                  performance.md "Map tiles on a curvilinear grid"). For zarrd, the first tile
#                  after start (the look-up built) is timed and the RSS it adds reported.
# Before the load, every tile of every set is checked against pyproj
# (benches/datagen/verify_hrrr_tiles.py: each pixel the value of pyproj's nearest cell), on
# the curvilinear store against a brute-force oracle (verify_curvilinear_tiles.py).
# Per run: req/s, p50/p90/p99 and the server's CPU s per 1000 tiles (its process group's
# utime+stime). wrk and the servers share the machine's cores.
#
#   MAPS_CHROOT=/tmp/trixie bash benches/maps_grids.sh
#
# Needs ../shared/tools/maps-peers/setup_peers.sh run once (the chroot and XPT_VENV).
# Knobs: MAPS_CHROOT, XPT_VENV (/opt/venv-xpt), ZARRD_BIN (else built), CONNS (16), DURATION
# (10 s), WARMUP (3 s), SERVERS, OUT (the log; the table is printed at the end).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MAPS_PEERS=${MAPS_PEERS:-$ROOT/../shared/tools/maps-peers}
MAPS_CHROOT=${MAPS_CHROOT:-/tmp/trixie}
XPT_VENV=${XPT_VENV:-/opt/venv-xpt}
WORK=${MAPS_GRIDS_WORK:-/tmp/mapsgrids}   # as the chroot sees it
HOSTWORK=$MAPS_CHROOT$WORK
CONNS=${CONNS:-16}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
SERVERS=${SERVERS:-"xpt-2w zarrd zarrd-nocache zarrd-chunks zarrd-chunks@latlon"}
PORT=${PORT:-19420}
OUT=${OUT:-/tmp/maps-grids-$(date +%F-%H%M).txt}
if [ -z "${ZARRD_BIN:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet) || exit 1
  ZARRD_BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/zarrd"
fi
CLK_TCK=$(getconf CLK_TCK)
note() { echo "$*" | tee -a "$OUT"; }  # a line of the report: printed, and appended to OUT
inchroot() { chroot "$MAPS_CHROOT" "$@"; }
mountpoint -q "$MAPS_CHROOT/proc" || mount -t proc proc "$MAPS_CHROOT/proc"
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }

mkdir -p "$HOSTWORK"/{data,tools,paths,logs}
cp "$ROOT"/benches/datagen/make_hrrr.py "$ROOT"/benches/datagen/verify_hrrr_tiles.py \
  "$ROOT"/benches/datagen/verify_curvilinear_tiles.py "$MAPS_PEERS"/xpt_app.py \
  "$MAPS_PEERS"/roundrobin.lua "$HOSTWORK/tools/"
[ -f "$HOSTWORK/data/hrrr_curvilinear.zarr/zarr.json" ] || inchroot "$XPT_VENV/bin/python" "$WORK/tools/make_hrrr.py" "$WORK/data" | tee -a "$OUT"
note "=== maps_grids.sh $(date -u +%FT%TZ) on $(nproc) CPUs; wrk -t2 -c$CONNS ${DURATION}s after ${WARMUP}s; zarrd $(git -C "$ROOT" rev-parse --short HEAD)"
inchroot "$XPT_VENV/bin/python" -c 'import importlib.metadata as m
print("    versions:", ", ".join(f"{p} {m.version(p)}" for p in ["xpublish-tiles", "xarray", "zarr", "pyproj"]))' | tee -a "$OUT"

pgrp_ticks() {  # utime+stime of every live process of process group $1
  local t=0 line rest f
  for f in /proc/[0-9]*/stat; do
    { read -r line < "$f"; } 2>/dev/null || continue
    rest=${line##*) }
    set -- $rest
    [ "$3" = "$PGID" ] && t=$((t + ${12} + ${13}))
  done
  echo $t
}

block() {  # sets START, ENVS, TILE (with {z} {x} {y}), READY for server $1 on port $P
  local store=hrrr.zarr
  [ "${1#*@}" = latlon ] && store=hrrr_latlon.zarr
  [ "${1#*@}" = curvilinear ] && store=hrrr_curvilinear.zarr
  case ${1%@*} in
    xpt-2w)
      ENVS="XPT_ZARR=$WORK/data/$store" RUN=chroot READY=/docs
      START="$XPT_VENV/bin/uvicorn xpt_app:app --app-dir $WORK/tools --host 127.0.0.1 --port $P --workers 2"
      TILE="/tiles/WebMercatorQuad/{z}/{y}/{x}?variables=t2m&style=raster/viridis&colorscalerange=270,310&width=256&height=256&time=2024-07-01T00:00:00&f=image/png" ;;
    zarrd | zarrd-nocache | zarrd-chunks)
      ENVS="" RUN=host READY=/readyz
      case ${1%@*} in
        zarrd-nocache) ENVS="ZARRD__CACHE__CHUNK_BYTES=0 ZARRD__CACHE__TILE_BYTES=0 ZARRD__CACHE__RESPONSE_BYTES=0" ;;
        zarrd-chunks) ENVS="ZARRD__CACHE__TILE_BYTES=0 ZARRD__CACHE__RESPONSE_BYTES=0" ;;
      esac
      START="$ZARRD_BIN serve --listen 127.0.0.1:$P --dataset bench=$HOSTWORK/data/$store"
      TILE="/maps/bench%2Ft2m[0]/{z}/{x}/{y}.png?colormap=viridis&vmin=270&vmax=310" ;;
    *) return 1 ;;
  esac
}

k=0
for NAME in $SERVERS; do
  P=$((PORT + k)); k=$((k + 1))
  block "$NAME" || { note "SKIP $NAME: no such server"; continue; }
  for z in 5 6 7; do
    awk -v z="$z" '$1 == z' "$HOSTWORK/data/tiles.txt" | while read -r tz tx ty; do
      s=${TILE//\{z\}/$tz}; s=${s//\{x\}/$tx}; echo "${s//\{y\}/$ty}"
    done > "$HOSTWORK/paths/z$z"
  done
  logf="$HOSTWORK/logs/$NAME.log"
  if [ "$RUN" = chroot ]; then setsid env $ENVS chroot "$MAPS_CHROOT" $START > "$logf" 2>&1 &
  else setsid env $ENVS $START > "$logf" 2>&1 &
  fi
  PGID=$!
  for _ in $(seq 1 240); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P$READY")" != 000 ] && break
    sleep 0.5
  done
  note "=== $NAME: $ENVS $START"
  if [ "${NAME%@*}" = zarrd ] && [ "${NAME#*@}" = curvilinear ]; then
    # The first tile after start builds the grid's look-up (lat/lon read whole, k-d tree).
    rss0=$(awk '/VmRSS/ {print $2}' /proc/$PGID/status)
    first=$(curl -g -s -o /dev/null -w '%{http_code} %{time_total}' "http://127.0.0.1:$P/maps/bench%2Ft2m[0]/5/7/12.png")
    rss1=$(awk '/VmRSS/ {print $2}' /proc/$PGID/status)
    second=$(curl -g -s -o /dev/null -w '%{http_code} %{time_total}' "http://127.0.0.1:$P/maps/bench%2Ft2m[0]/5/8/12.png")
    note "FIRST server=$NAME first_tile=\"$first\" next_tile=\"$second\" rss_added_mib=$(( (rss1 - rss0) / 1024 ))"
  fi
  if [ "$NAME" = zarrd ] || [ "$NAME" = zarrd@curvilinear ]; then
    npy="http://127.0.0.1:$P/maps/bench%2Ft2m[0]/{z}/{x}/{y}.npy"
    verify=verify_hrrr_tiles.py
    [ "$NAME" = zarrd@curvilinear ] && verify=verify_curvilinear_tiles.py
    inchroot "$XPT_VENV/bin/python" "$WORK/tools/$verify" "$WORK/data" "$npy" 2>&1 | sed 's/^/    /' | tee -a "$OUT"
  fi
  for z in 5 6 7; do
    first=$(head -1 "$HOSTWORK/paths/z$z")
    note "    z$z: $(wc -l < "$HOSTWORK/paths/z$z") tiles, first $(curl -g -s -o /dev/null -w '%{http_code} %{content_type} %{size_download}B' "http://127.0.0.1:$P$first")"
    wrk -t2 -c"$CONNS" -d"${WARMUP}s" --timeout 60s -s "$HOSTWORK/tools/roundrobin.lua" "http://127.0.0.1:$P" -- "$HOSTWORK/paths/z$z" > /dev/null 2>&1
    t0=$(pgrp_ticks)
    res=$(wrk -t2 -c"$CONNS" -d"${DURATION}s" --timeout 60s --latency -s "$HOSTWORK/tools/roundrobin.lua" "http://127.0.0.1:$P" -- "$HOSTWORK/paths/z$z" 2>&1 | sed -n 's/^RESULT //p')
    t1=$(pgrp_ticks)
    req=$(sed -n 's/.*requests=\([0-9]*\).*/\1/p' <<< "$res")
    cpu=$(awk -v a="$t0" -v b="$t1" -v hz="$CLK_TCK" -v n="${req:-0}" 'BEGIN { printf "%.2f", n ? (b - a) / hz / n * 1000 : 0 }')
    note "ROW server=$NAME zoom=z$z conns=$CONNS $res cpu_s_per_1k=$cpu"
  done
  kill -TERM -- -"$PGID" 2>/dev/null; sleep 1; kill -KILL -- -"$PGID" 2>/dev/null; sleep 0.5
done

python3 - "$OUT" <<'EOF' | tee -a "$OUT"
import sys
rows = {}
for line in open(sys.argv[1]):
    if line.startswith("ROW "):
        kv = dict(x.split("=", 1) for x in line.split()[1:])
        rows[(kv["server"], kv["zoom"])] = kv
# Each server against the peer on the same store (NAME@curvilinear against xpt-2w@curvilinear).
peer = {(s.partition("@")[2], z): float(r["rps"]) for (s, z), r in rows.items() if s.startswith("xpt-2w")}
print("\n| server | zoom | req/s | × xpublish-tiles | p50 ms | p99 ms | errors | CPU s/1k tiles |")
print("|---|---|---|---|---|---|---|---|")
for (s, z), r in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    ref = peer.get((s.partition("@")[2], z)) or peer.get(("", z))
    ratio = f"{float(r['rps']) / ref:.0f}×" if ref else "–"
    print(f"| {s} | {z} | {r['rps']} | {ratio} | {r['p50_ms']} | {r['p99_ms']} | {int(r['non2xx']) + int(r['errors'])} | {r['cpu_s_per_1k']} |")
EOF
