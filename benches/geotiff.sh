#!/usr/bin/env bash
# Cloud Optimized GeoTIFF downloads (docs/performance.md, "Region downloads"): a 4096 × 4096
# float32 field on a regular latitude/longitude grid (a smooth field plus noise to 0.01, as
# model output is; 16 zstd chunks) fetched as `format=tif` (512² deflate tiles with the
# floating-point predictor, three averaged overviews) and as `format=bin` in alternating
# rounds, caches off so every round reads and decodes; the GeoTIFF's rate in MB/s of image
# (64 MiB / its time), its ratio to the raw bytes' rate, its size, and the peak resident
# memory of a fresh server over one download of each. Loopback only; not part of the tests.
#
#   bash benches/geotiff.sh [path/to/zarrd]      (default: target/release/zarrd)
#
# Knobs: ROUNDS (7), DATA (/tmp/zarrd-geotiff-bench), PORT (a free one), PYTHON (a Python
# with zarr and numpy: the CI compat venv).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/zarrd}
ROUNDS=${ROUNDS:-7}
DATA=${DATA:-/tmp/zarrd-geotiff-bench}
PYTHON=${PYTHON:-$HOME/.cache/zarrd-ci/compat-clients-venv/bin/python}
PORT=${PORT:-$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")}
URL="http://127.0.0.1:$PORT/v1/slice/d/v?s=0:4096,0:4096"

make_data() {
    [[ -f $DATA/d.zarr/v/zarr.json ]] && return
    mkdir -p "$DATA"
    "$PYTHON" - "$DATA/d.zarr" <<'PY'
import sys
import numpy as np
import zarr
root = zarr.open_group(sys.argv[1], mode="w", zarr_format=3)
n = 4096
y, x = np.mgrid[0:n, 0:n].astype(np.float32)
rng = np.random.default_rng(1)
field = 280 + 20 * np.sin(x / 300) * np.cos(y / 200) + rng.normal(0, 0.5, (n, n))
v = root.create_array("v", shape=(n, n), chunks=(256, n), dtype="float32", fill_value=np.nan,
                      dimension_names=["lat", "lon"], attributes={"units": "K"})
v[:] = np.round(field, 2).astype(np.float32)
for name, values, units in [("lat", 90 - (np.arange(n) + 0.5) * 180 / n, "degrees_north"),
                            ("lon", -180 + (np.arange(n) + 0.5) * 360 / n, "degrees_east")]:
    a = root.create_array(name, shape=(n,), chunks=(n,), dtype="float64", dimension_names=[name],
                          attributes={"units": units})
    a[:] = values
PY
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
fetch tif >/dev/null
: >"$DATA/rounds"
for _ in $(seq "$ROUNDS"); do
    printf 'bin %s\n' "$(fetch bin)" >>"$DATA/rounds"
    printf 'tif %s\n' "$(fetch tif)" >>"$DATA/rounds"
done
stop
python3 - "$DATA/rounds" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
bins = [float(r[2]) for r in rows if r[0] == "bin"]
tifs = [(float(r[2]), int(r[3])) for r in rows if r[0] == "tif"]
image = 4096 * 4096 * 4
ratios = [b / t for b, (t, _) in zip(bins, tifs)]
t = statistics.median(t for t, _ in tifs)
print(f"GeoTIFF 4096x4096 float32: median {t * 1000:.0f} ms = {image / t / 1e6:.0f} MB/s of image "
      f"(rounds {min(image / t / 1e6 for t, _ in tifs):.0f}..{max(image / t / 1e6 for t, _ in tifs):.0f}); "
      f"file {tifs[0][1] / 2**20:.1f} MiB")
print(f"bin: median {statistics.median(bins) * 1000:.0f} ms; GeoTIFF rate / bin rate: median {statistics.median(ratios):.2f} "
      f"(pairs {min(ratios):.2f}..{max(ratios):.2f})")
PY
for format in bin tif; do
    start
    fetch "$format" >/dev/null
    echo "peak RSS after one $format download: $(hwm) MiB"
    stop
done
