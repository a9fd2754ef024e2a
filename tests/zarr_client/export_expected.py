"""The expected values of the arrays .ci/browser_zarrita.sh reads in chromium, as JSON.

Usage: python export_expected.py > expected.json
Prints a list of {name, store, path, shape, suffix, item, b64 | texts}: `store` is the URL path of
the Zarr store under zarrd (/compat/v3/DATASET or /zarr/DATASET), `b64` the little-endian
C-order bytes of the fixture's expected .npy (written by the fixture writers, never by
zarrd), `texts` the elements of a text array.
"""

import base64
import json
from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SETS = {"conf": "conformance", "extra": "extra", "v2": "zarr-v2", "fanout": "fanout", "strings": "strings"}

# (dataset, path): regular (stored chunks served as they are, or re-encoded), sharded
# arrays (a view chunk is an inner chunk), rectilinear grids, v2 arrays (F order, big
# endian), the fanout key encoding, float16/32/64, (u)int8-64, bool and text.
COMPAT = [
    ("conf", "regular/f4_zstd_partial"),
    ("conf", "regular/i8_gzip_transpose_be"),
    ("conf", "regular/u1_blosc"),
    ("conf", "regular/bool_v2key"),
    ("conf", "regular/f2_inf_fill"),
    ("conf", "sharded/u4_nested"),
    ("conf", "sharded/i2_rect_shards"),
    ("conf", "rectilinear/f4"),
    ("conf", "rectilinear/u1_months_3d"),
    ("extra", "regular/f8_neg_fill_zstd_checksum"),
    ("extra", "regular/i1_neg_fill_blosclz"),
    ("extra", "regular/u8_max_fill_blosc_zstd_bitshuffle"),
    ("v2", "grid/f8_zstd_be"),
    ("v2", "grid/i2_zlib_order_f"),
    ("v2", "grid/u4_gzip_slash"),
    ("fanout", "f4_1d_many"),
    ("fanout", "u2_2d"),
    ("fanout", "i4_sharded_rect"),
    ("strings", "words_1d_zstd"),
    ("strings", "grid_2d_missing"),
]
# Sharded arrays through /zarr as stored: zarrita reads shard indexes and inner chunks with
# Range requests; the index at a shard's end by HEAD + bounded range, or (suffix=True) by a
# suffix range, which the browser preflights.
ZARR = [("conf", "tensorstore/i4_sharded", False), ("conf", "sharded/f4_crc32c_inner_boundary", True)]


def entry(store: str, ds: str, path: str, suffix: bool = False) -> dict:
    a = np.load(FIXTURES / SETS[ds] / "expected" / (path.replace("/", "__") + ".npy"))
    out = {"name": f"{store}/{path}", "store": store, "path": path, "shape": list(a.shape), "suffix": suffix}
    if a.dtype.kind == "U":
        out["texts"] = [str(x) for x in a.ravel().tolist()]
    else:
        little = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<")))
        out["item"] = a.dtype.itemsize
        out["b64"] = base64.b64encode(little.tobytes()).decode()
    return out


compat = [entry(f"/compat/v3/{ds}", ds, p) for ds, p in COMPAT]
print(json.dumps(compat + [entry(f"/zarr/{ds}", ds, p, s) for ds, p, s in ZARR]))
