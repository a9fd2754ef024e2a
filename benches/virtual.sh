#!/usr/bin/env bash
# Virtual and versioned datasets against native Zarr, in one run (see docs/performance.md): the
# `large` array of benches/datagen as native Zarr, as a kerchunk reference set into one
# concatenated file (as an HDF5/NetCDF4 file holds its chunks), and as Icechunk repositories
# with virtual and with native chunks — the very same compressed bytes each time. One zarrd
# with its decoded-data caches off serves all four, so every request decodes.
# Not part of the test suite.
#
#   bash benches/virtual.sh
#
# Environment: ZARRD_BIN, CARGO_TARGET_DIR, BENCH_DATA, BENCH_DURATION, LARGE_REPS, BENCH_ROUNDS
# as for benches/run.sh; ZARRD_PORT (default 18090).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
LOG_TAG=virtual
# shellcheck source=benches/lib.sh
source "$ROOT/benches/lib.sh"
PORT=${ZARRD_PORT:-18090}
Z="http://127.0.0.1:$PORT"

for t in wrk curl; do command -v "$t" >/dev/null || die "missing $t (apt-get install -y $t)"; done
if [[ -n ${ZARRD_BIN:-} ]]; then
  ZARRD=$ZARRD_BIN
else
  log "building zarrd (release)"
  cargo build --release --quiet --bin zarrd
  ZARRD=$TARGET/release/zarrd
fi
if ! grep -qs "datagen v2" "$DATA/COMPLETE"; then
  log "building benches/datagen and generating data in $DATA"
  CARGO_TARGET_DIR=$TARGET/bench-datagen cargo build --release --quiet --manifest-path benches/datagen/Cargo.toml
  mkdir -p "$DATA"
  "$TARGET/bench-datagen/release/datagen" "$DATA" >&2
fi
# shellcheck disable=SC1091
source "$DATA/bench.env"

TMP=$(mktemp -d /tmp/zarrd-virtual.XXXXXX)
ZPID=""
cleanup() { [[ -n $ZPID ]] && kill "$ZPID" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
V="$DATA/virtual"
cat >"$TMP/zarrd.toml" <<EOF
listen = "127.0.0.1:$PORT"
[cache]
chunk_bytes = 0
response_bytes = 0
[log]
level = "warn"
[datasets.native]
url = "$DATA/data.zarr"
[datasets.kerchunk]
url = "$V/large.json"
virtual_refs = ["file://$V/"]
[datasets.icechunk-virtual]
url = "$V/virtual.icechunk"
virtual_refs = ["file://$V/"]
[datasets.icechunk-native]
url = "$V/native.icechunk"
EOF
"$ZARRD" serve --config "$TMP/zarrd.toml" >"$TMP/zarrd.log" 2>&1 &
ZPID=$!
for _ in $(seq 150); do curl -fs -o /dev/null "$Z/healthz" && break; sleep 0.1; done

KINDS=(native kerchunk icechunk-virtual icechunk-native)
TILE="/large?s=$VTILE_SEL&format=bin"
LARGE="/large?s=$LARGE_SEL&format=bin"
storage() { curl -fs "$Z/metrics" | awk '$1 == "zarrd_storage_requests_total" { s += $2 } END { printf "%.0f", s }'; }
log "checking that every form returns the native bytes"
for p in "$TILE" "$LARGE"; do
  for k in "${KINDS[@]}"; do
    code=$(curl -s -o "$TMP/$k" -w '%{http_code}' "$Z/v1/slice/$k$p")
    [[ $code == 200 ]] || die "$k$p: HTTP $code: $(head -c 300 "$TMP/$k")"
    [[ $k == native ]] && cp "$TMP/$k" "$TMP/want" || cmp -s "$TMP/$k" "$TMP/want" || die "$k$p differs from native"
  done
done

declare -A RPS MBS REQ
for r in $(seq "$ROUNDS"); do
  for k in "${KINDS[@]}"; do
    log "round $r/$ROUNDS: $k: tile (16 connections, ${DUR}s), 64 MiB slice ($LARGE_REPS reads)"
    out=$(wrk -t2 -c16 -d"${DUR}s" --timeout 10s -s benches/wrk.lua "$Z/v1/slice/$k$TILE" 2>&1)
    line=$(grep '^WRK ' <<<"$out") || die "wrk: $out"
    n=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<" $line")
    us=$(sed -n 's/.* duration_us=\([0-9]*\).*/\1/p' <<<" $line")
    RPS[$k]+="$(calc %.0f "$n / ($us / 1e6)") "
    t=()
    s0=$(storage)
    for _ in $(seq "$LARGE_REPS"); do
      t+=("$(curl -s -o /dev/null -w '%{time_total}' "$Z/v1/slice/$k$LARGE")")
    done
    REQ[$k]=$(( ($(storage) - s0) / LARGE_REPS ))
    MBS[$k]+="$(calc %.0f "$LARGE_BYTES / $(med "${t[@]}") / 1e6") "
  done
done

echo "## Virtual and versioned datasets, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "Machine: $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)); zarrd with its decoded-chunk and response caches off (every request decodes; shard indexes cached). Tile: 256×256 float32 (2×2 zstd inner chunks of one shard), wrk 16 connections, ${DUR} s. Large: the 64 MiB slice ($LARGE_SHARDS shards, $LARGE_INNER_CHUNKS inner chunks), median of $LARGE_REPS sequential reads. Median of $ROUNDS rounds (each round measures every form back to back)."
echo
echo "| dataset | tile req/s (rounds) | tile ÷ native | 64 MiB slice MB/s (rounds) | slice ÷ native | storage requests per slice |"
echo "|---|---|---:|---|---:|---:|"
# shellcheck disable=SC2086
nt=$(med ${RPS[native]}); nl=$(med ${MBS[native]})
for k in "${KINDS[@]}"; do
  # shellcheck disable=SC2086
  t=$(med ${RPS[$k]}); l=$(med ${MBS[$k]})
  echo "| $k | $t (${RPS[$k]% }) | $(calc %.2f "$t / $nt") | $l (${MBS[$k]% }) | $(calc %.2f "$l / $nl") | ${REQ[$k]} |"
done
