#!/usr/bin/env bash
# Peak resident memory of zarrd under the memory-exhaustion cases of the "safe to expose"
# issue, with and without the memory budget. Loopback only, bounded in time; every zarrd
# started here is stopped by PID. Usage: bash benches/memory.sh [path/to/zarrd]
#   1. 8 concurrent one-element slices, each in a different 1 GiB zstd chunk (1 MiB stored)
#   2. 16 concurrent 256 MiB slices (bin, 64 chunks of 4 MiB of random f32)
#   3. 8 clients that ask for 256 MiB and never read, past the request timeout
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/zarrd}
DATA=${DATA:-/tmp/zarrd-memory-bench}
PORT=${PORT:-$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")}
BUDGET=${BUDGET:-2147483648}

make_data() {
    [[ -f $DATA/big.zarr/w/c/63/0 ]] && return
    mkdir -p "$DATA/big.zarr/g/c"
    echo '{"zarr_format":3,"node_type":"group"}' >"$DATA/big.zarr/zarr.json"
    local codecs='[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":1}}]'
    echo "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2147483648],\"data_type\":\"float32\",\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[268435456]}},\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,\"codecs\":$codecs}" >"$DATA/big.zarr/g/zarr.json"
    mkdir -p "$DATA/big.zarr/w"
    echo "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[16384,4096],\"data_type\":\"float32\",\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[256,4096]}},\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,\"codecs\":$codecs}" >"$DATA/big.zarr/w/zarr.json"
    truncate -s 1G "$DATA/zero1g"
    zstd -1 -q -f "$DATA/zero1g" -o "$DATA/big.zarr/g/c/0"
    rm -f "$DATA/zero1g"
    for i in 1 2 3 4 5 6 7; do cp "$DATA/big.zarr/g/c/0" "$DATA/big.zarr/g/c/$i"; done
    head -c 4194304 /dev/urandom | zstd -1 -q -f -o "$DATA/w0"
    for i in $(seq 0 63); do mkdir -p "$DATA/big.zarr/w/c/$i"; cp "$DATA/w0" "$DATA/big.zarr/w/c/$i/0"; done
}

PID=
start() { # budget
    ZARRD_LISTEN=127.0.0.1:$PORT ZARRD__LIMITS__MEMORY_BYTES=$1 ZARRD__CACHE__CHUNK_BYTES=0 \
        ZARRD__LIMITS__REQUEST_TIMEOUT_SECS=5 ZARRD__LOG__LEVEL=warn \
        "$BIN" serve --dataset "big=$DATA/big.zarr" >/dev/null 2>&1 &
    PID=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && return; sleep 0.1; done
    echo "zarrd did not start" >&2; exit 1
}
stop() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
trap stop EXIT
mib() { awk -v k="$(grep "^$1:" "/proc/$PID/status" | awk '{print $2}')" 'BEGIN{printf "%d", k/1024}'; }

statuses() { sort | uniq -c | awk '{printf "%s×%s ", $1, $2}'; }

case_one_element() {
    for k in 0 1 2 3 4 5 6 7; do
        curl -s -m 60 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$PORT/v1/slice/big/g?s=$((k * 268435456))&format=json" &
    done | statuses
}

case_large_slices() {
    for _ in $(seq 16); do
        curl -s -m 120 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$PORT/v1/slice/big/w?format=bin" &
    done | statuses
}

case_stalled() {
    python3 - "$PORT" <<'PY' &
import socket, sys, time
socks = []
for _ in range(8):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET /v1/slice/big/w?format=bin HTTP/1.1\r\nHost: x\r\n\r\n")
    socks.append(s)
time.sleep(14)
PY
    local clients=$!
    sleep 3
    printf 'RSS at 3 s %s MiB, ' "$(mib VmRSS)"
    sleep 8
    printf 'at 11 s (past the 5 s timeout) %s MiB ' "$(mib VmRSS)"
    wait "$clients"
}

make_data
printf '| case | budget | answers | peak RSS (VmHWM) |\n|---|---|---|---|\n'
for budget in "$BUDGET" 1099511627776; do
    label=$([[ $budget == "$BUDGET" ]] && echo "$((budget >> 20)) MiB" || echo "none (1 TiB)")
    for c in case_one_element case_large_slices case_stalled; do
        start "$budget"
        answers=$($c)
        printf '| %s | %s | %s | %s MiB |\n' "${c#case_}" "$label" "$answers" "$(mib VmHWM)"
        stop
    done
done
