"""Writes the fleet test's store: `tiles`, 8192 x 8192 float32 in 2048 x 2048 shards of
256 x 256 zstd inner chunks (256 MiB decoded, ~4x a replica's chunk cache in the test),
a smooth terrain-like field. Usage: fleet_data.py DIR (writes DIR/bench.zarr, then
DIR/COMPLETE). Runs in the zarr-python venv of .ci/zarr_client.sh."""

import pathlib
import sys

import numpy as np
import zarr
from zarr.codecs import BytesCodec, ShardingCodec, ZstdCodec

N, SHARD, INNER = 8192, 2048, 256

out = pathlib.Path(sys.argv[1])
root = zarr.open_group(str(out / "bench.zarr"), mode="w", zarr_format=3)
root.attrs["title"] = "zarrd fleet test data (.ci/fleet_data.py)"
tiles = root.create_array(
    "tiles",
    shape=(N, N),
    dtype="float32",
    chunks=(SHARD, SHARD),
    serializer=ShardingCodec(chunk_shape=(INNER, INNER), codecs=[BytesCodec(), ZstdCodec(level=1)]),
    compressors=None,
    fill_value=0.0,
)
x = np.arange(N, dtype=np.float32)
for r in range(0, N, SHARD):
    rows = x[r : r + SHARD, None]
    block = 300 * np.sin(rows / 211.0) * np.cos(x[None, :] / 173.0) + 40 * np.sin((rows + x[None, :]) / 37.0)
    block += (rows * 7 + x[None, :] * 13) % 5  # a little deterministic roughness
    tiles[r : r + SHARD, :] = np.round(block * 8) / 8
(out / "COMPLETE").write_text("ok\n")
