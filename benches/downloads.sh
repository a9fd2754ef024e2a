#!/usr/bin/env bash
# NetCDF downloads against the same selection as raw bytes (docs/performance.md, "Region
# downloads"): a 64 MiB float32 region (4096 × 4096 of 16 zstd chunks of random values)
# fetched as `format=nc` and as `format=bin` in alternating rounds, caches off so every
# round reads and decodes; the rate ratio, the time to the first byte against the whole
# transfer, and the peak resident memory of a fresh server over one download of each.
# Loopback only; not part of the test suite.
#
#   bash benches/downloads.sh [path/to/zarrd]      (default: target/release/zarrd)
#
# Knobs: ROUNDS (7), DATA (/tmp/zarrd-downloads-bench), PORT (a free one).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/zarrd}
ROUNDS=${ROUNDS:-7}
DATA=${DATA:-/tmp/zarrd-downloads-bench}
PORT=${PORT:-$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")}
URL="http://127.0.0.1:$PORT/v1/slice/d/v?s=0:4096,0:4096"

make_data() {
    [[ -f $DATA/d.zarr/v/c/15/0 ]] && return
    mkdir -p "$DATA/d.zarr/v"
    echo '{"zarr_format":3,"node_type":"group","attributes":{"title":"downloads benchmark"}}' >"$DATA/d.zarr/zarr.json"
    local codecs='[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":1}}]'
    echo "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[4096,4096],\"data_type\":\"float32\",\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[256,4096]}},\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":\"NaN\",\"codecs\":$codecs,\"dimension_names\":[\"y\",\"x\"],\"attributes\":{\"units\":\"1\"}}" >"$DATA/d.zarr/v/zarr.json"
    for i in $(seq 0 15); do
        mkdir -p "$DATA/d.zarr/v/c/$i"
        head -c 4194304 /dev/urandom | zstd -1 -q -f -o "$DATA/d.zarr/v/c/$i/0"
    done
}

PID=
start() {
    ZARRD_LISTEN=127.0.0.1:$PORT ZARRD__CACHE__CHUNK_BYTES=0 ZARRD__CACHE__RESPONSE_BYTES=0 \
        ZARRD__LIMITS__MAX_RESPONSE_BYTES=268435456 ZARRD__LOG__LEVEL=warn \
        "$BIN" serve --dataset "d=$DATA/d.zarr" >/dev/null 2>&1 &
    PID=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && return; sleep 0.1; done
    echo "zarrd did not start" >&2
    exit 1
}
stop() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
trap stop EXIT
hwm() { awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "/proc/$PID/status"; }
fetch() { curl -s -o /dev/null -w '%{time_starttransfer} %{time_total} %{size_download}\n' "$URL&format=$1"; }

make_data
start
fetch bin >/dev/null
fetch nc >/dev/null
: >"$DATA/rounds"
for _ in $(seq "$ROUNDS"); do
    printf 'bin %s\n' "$(fetch bin)" >>"$DATA/rounds"
    printf 'nc %s\n' "$(fetch nc)" >>"$DATA/rounds"
done
stop
python3 - "$DATA/rounds" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
pairs = []
for b, n in zip(rows[0::2], rows[1::2]):
    rate = lambda r: float(r[3]) / float(r[2])
    pairs.append((rate(n) / rate(b), float(b[1]), float(b[2]), float(n[1]), float(n[2]), int(b[3]), int(n[3])))
ratios = [p[0] for p in pairs]
med = lambda i: statistics.median(p[i] for p in pairs)
print(f"bytes: bin {pairs[0][5]}, nc {pairs[0][6]}")
print(f"ROW rate nc/bin: median {statistics.median(ratios):.2f}x, rounds {[round(r, 2) for r in ratios]}")
print(f"ROW bin: first byte {med(1) * 1000:.0f} ms, whole {med(2) * 1000:.0f} ms, {pairs[0][5] / med(2) / 2**20:.0f} MiB/s")
print(f"ROW nc:  first byte {med(3) * 1000:.0f} ms, whole {med(4) * 1000:.0f} ms, {pairs[0][6] / med(4) / 2**20:.0f} MiB/s")
PY
for format in bin nc; do
    start
    before=$(hwm)
    fetch "$format" >/dev/null
    echo "ROW memory $format: VmHWM $before MiB at start, $(hwm) MiB after one download"
    stop
done
