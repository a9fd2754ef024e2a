"""Checks `zarrd overviews` with zarr-python 3.1 and NumPy, from first principles.

For several conformance fixture arrays (any chunk grid, sharded or not, 2-D and 3-D,
integer and float, NaN and finite fill values, odd edges) this runs
`zarrd overviews --tile-size T` into a fresh directory, opens the result with zarr-python
and checks:

* the group is OME-NGFF 0.5 (`attributes.ome.version == "0.5"`) with one multiscale whose
  datasets are `0..n`, scaled by 2^k along the last two axes (1 along leading ones);
* every level is a sharded (`sharding_indexed`) Zarr v3 array with `zstd`, the source's
  dtype and fill value, shape `ceil(n / 2^k)` along the last two axes;
* level 0 equals the source bit for bit (the fixture's expected `.npy`);
* level k equals a NumPy area average of the source: the mean of the valid values (neither
  the fill value nor NaN) of each 2^k x 2^k block, where the last block along an odd edge
  is partial and averages the elements it holds; a block without valid values is the fill
  value; integer means are rounded half to even (`numpy.rint`), float means cast to the
  dtype. Floats are compared to within one unit in the last place plus float64 rounding
  of the block sums (the server sums a block's values in row order, NumPy pairwise), integers exactly below 2^53 (int64 means
  beyond are float64, so within a few float64 units in the last place);
* the coarsest level fits one tile and the one before it does not.

Usage: check_overviews.py ZARRD_BINARY CONFORMANCE_DIR WORK_DIR
"""

import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import zarr

# (array path, tile size): small tiles so the small fixtures get several levels and
# several shards per level.
CASES = [
    ("regular/u1_blosc", 16),
    ("regular/f4_zstd_partial", 8),
    ("regular/i8_gzip_transpose_be", 4),
    ("regular/u2_dot_separator", 2),
    ("regular/f2_inf_fill", 4),
    ("rectilinear/f4", 16),
    ("rectilinear/i4_overhang", 8),
    ("rectilinear/u1_months_3d", 2),
    ("sharded/u2_rect_shards_overhang", 16),
    ("sharded/f8_index_start_gzip_empty", 8),
    ("tensorstore/i4_sharded", 16),
]


def expected_level(src, fill, k):
    """The source reduced by 2^k along its last two axes, from first principles."""
    f = 2**k
    values = src.astype(np.float64)
    valid = ~np.isnan(values)
    if not (isinstance(fill, float) and math.isnan(fill)):
        valid &= values != np.float64(fill)
    h, w = src.shape[-2:]
    oh, ow = -(-h // f), -(-w // f)
    pad = [(0, 0)] * (src.ndim - 2) + [(0, oh * f - h), (0, ow * f - w)]
    sums = np.pad(np.where(valid, values, 0.0), pad)
    counts = np.pad(valid.astype(np.int64), pad)
    shape = src.shape[:-2] + (oh, f, ow, f)
    sums = sums.reshape(shape).sum(axis=(-3, -1))
    counts = counts.reshape(shape).sum(axis=(-3, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / counts
    if np.issubdtype(src.dtype, np.integer) or src.dtype == np.bool_:
        mean = np.rint(mean)
    out = np.where(counts > 0, mean, np.float64(fill)).astype(src.dtype)
    return out


def check(zarrd, conformance, work, path, tile):
    out = work / path.replace("/", "__")
    config = work / "zarrd.toml"
    config.write_text(f'listen = "127.0.0.1:0"\n[datasets.conf]\nurl = "{conformance / "data.zarr"}"\n')
    subprocess.run(
        [zarrd, "overviews", "--config", str(config), "--dataset", "conf", "--array", path,
         "--out", str(out), "--tile-size", str(tile)],
        check=True, stdout=subprocess.DEVNULL,
        env={**os.environ, "RUST_LOG": "warn"},  # no progress lines, errors still shown
    )
    src = np.load(conformance / "expected" / (path.replace("/", "__") + ".npy"))
    # The source's fill value from its zarr.json (zarr-python 3.1 cannot open the
    # rectilinear fixtures, so not through it).
    doc = json.loads((conformance / "data.zarr" / path / "zarr.json").read_text())
    fill = doc["fill_value"]
    fill = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(fill, fill)
    fill = src.dtype.type(fill).item()
    group = zarr.open_group(str(out), mode="r")
    ome = group.attrs["ome"]
    assert ome["version"] == "0.5", ome
    (multiscale,) = ome["multiscales"]
    datasets = multiscale["datasets"]
    assert [d["path"] for d in datasets] == [str(k) for k in range(len(datasets))], datasets
    assert len(multiscale["axes"]) == src.ndim, multiscale["axes"]
    h, w = src.shape[-2:]
    for k, d in enumerate(datasets):
        (scale,) = [t["scale"] for t in d["coordinateTransformations"] if t["type"] == "scale"]
        assert scale == [1.0] * (src.ndim - 2) + [2.0**k, 2.0**k], (k, scale)
        level = group[str(k)]
        assert isinstance(level, zarr.Array)
        meta = level.metadata.to_dict()
        (codec,) = meta["codecs"]
        assert codec["name"] == "sharding_indexed", codec
        assert "zstd" in [c["name"] for c in codec["configuration"]["codecs"]], codec
        assert level.dtype == src.dtype, (k, level.dtype, src.dtype)
        same_fill = (
            (isinstance(fill, float) and math.isnan(fill) and math.isnan(level.fill_value))
            or level.fill_value == fill
        )
        assert same_fill, (k, level.fill_value, fill)
        got = level[...]
        want = src if k == 0 else expected_level(src, fill, k)
        assert got.shape == want.shape, (path, k, got.shape, want.shape)
        if k == 0:
            assert np.array_equal(got, want, equal_nan=src.dtype.kind == "f"), (path, k, got, want)
        elif not np.issubdtype(src.dtype, np.floating):
            # Exact below 2^53 (sums of such integers are exact in float64 in any order);
            # beyond, means are float64 and the two summation orders may differ by a few
            # units in the last place of float64 at the size of a block's sum.
            biggest = float(np.abs(src.astype(np.float64)).max(initial=0.0))
            slack = 2 * np.spacing(4 ** k * biggest) if biggest >= 2.0**53 else 0.0
            assert np.all(np.abs(got.astype(np.float64) - want.astype(np.float64)) <= slack), (path, k, got, want)
        else:
            # One unit in the last place of the dtype, plus float64 rounding of a block's
            # sum in another order (NumPy sums pairwise, the server row by row).
            finite = np.abs(src[np.isfinite(src)].astype(np.float64))
            order = 4**k * 2.0**-52 * float(finite.max(initial=0.0))
            with np.errstate(invalid="ignore"):
                ulp = np.spacing(np.abs(want).astype(src.dtype)).astype(np.float64)
                close = np.abs(got.astype(np.float64) - want.astype(np.float64)) <= ulp + order
            same = np.isnan(got) & np.isnan(want) | (got == want)
            assert np.all(close | same), (path, k, got, want)
    top = len(datasets) - 1
    assert max(-(-h // 2**top), -(-w // 2**top)) <= tile, (path, top)
    assert top == 0 or max(-(-h // 2 ** (top - 1)), -(-w // 2 ** (top - 1))) > tile, (path, top)
    print(f"ok {path}: {len(datasets)} levels, tile {tile}")


def main():
    zarrd, conformance, work = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    work.mkdir(parents=True, exist_ok=True)
    for path, tile in CASES:
        check(zarrd, conformance, work, path, tile)
    print(json.dumps({"checked": len(CASES)}))


if __name__ == "__main__":
    main()
