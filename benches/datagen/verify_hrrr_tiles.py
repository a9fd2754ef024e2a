"""Checks every tile of the projected-grid map benchmark against pyproj, not against zarrd:
for each tile of tiles.txt, zarrd's .npy tile (t2m, step 0) must hold, at every pixel, the
value of the cell whose centre is nearest the pixel centre's position on the Lambert
conformal grid (pyproj: Web Mercator -> lon/lat -> LCC x/y), NaN off the grid.

    python verify_hrrr_tiles.py DATA_DIR URL_TEMPLATE    # template with {z} {x} {y}

Prints one line per zoom and exits non-zero when a pixel differs (pixels within 1e-6 of
a cell edge may take either cell; they are counted apart)."""
import io
import pathlib
import sys
import urllib.request

import numpy as np
import pyproj
import zarr

data, template = pathlib.Path(sys.argv[1]), sys.argv[2]
root = zarr.open_group(data / "hrrr.zarr", mode="r")
t2m = root["t2m"][0]
x, y = root["x"][:], root["y"][:]
cf = dict(root["lambert_conformal_conic"].attrs)
lcc = pyproj.CRS.from_cf(cf)
merc_to_lcc = pyproj.Transformer.from_crs("EPSG:3857", lcc, always_xy=True)
HALF = 20037508.342789244
dx, dy = x[1] - x[0], y[1] - y[0]
bad_total = 0
by_zoom = {}
for line in (data / "tiles.txt").read_text().split("\n"):
    if not line.strip():
        continue
    z, tx, ty = map(int, line.split())
    with urllib.request.urlopen(template.format(z=z, x=tx, y=ty)) as r:
        got = np.load(io.BytesIO(r.read()))
    size = 2 * HALF / 2**z
    px = -HALF + (tx + (np.arange(256) + 0.5) / 256) * size
    py = HALF - (ty + (np.arange(256) + 0.5) / 256) * size
    mx, my = np.meshgrid(px, py)
    gx, gy = merc_to_lcc.transform(mx, my)
    fi, fj = (gx - x[0]) / dx, (gy - y[0]) / dy
    i, j = np.rint(fi).astype(np.int64), np.rint(fj).astype(np.int64)
    inside = (i >= 0) & (i < len(x)) & (j >= 0) & (j < len(y))
    want = np.full((256, 256), np.nan, "f8")
    want[inside] = t2m[j[inside], i[inside]]
    edge = (np.abs(np.abs(fi - np.floor(fi)) - 0.5) < 1e-6) | (np.abs(np.abs(fj - np.floor(fj)) - 0.5) < 1e-6)
    differs = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    n, e = int((differs & ~edge).sum()), int((differs & edge).sum())
    s = by_zoom.setdefault(z, [0, 0, 0, 0])
    s[0] += 1
    s[1] += int(inside.sum())
    s[2] += n
    s[3] += e
    bad_total += n
for z, (tiles, cells, n, e) in sorted(by_zoom.items()):
    print(f"verify z{z}: {tiles} tiles, {cells} pixels on the grid, {n} differ from pyproj's cell, {e} on a cell edge")
sys.exit(1 if bad_total else 0)
