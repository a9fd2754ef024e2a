"""Checks every tile of the curvilinear map benchmark by brute force, not against zarrd: for
each tile of tiles.txt, zarrd's .npy tile (t2m, step 0) must hold, at every pixel, the value
of the cell whose centre (2-D latitude/longitude as unit vectors) is nearest the pixel
centre, provided the pixel is inside that cell's quadrilateral of corners (design/API.md:
corners from the centres padded by linear extrapolation, each the normalised mean of the
four centres around it; inside = on the inner side of the four great-circle edges), else
NaN. Nearest centres from scipy's cKDTree, ties to the lower flat index.

    python verify_curvilinear_tiles.py DATA_DIR URL_TEMPLATE    # template with {z} {x} {y}

Prints one line per zoom and exits non-zero when a pixel differs (pixels within 1e-9 of an
edge or of a tie may take either side; they are counted apart)."""
import io
import pathlib
import sys
import urllib.request

import numpy as np
import zarr
from scipy.spatial import cKDTree

data, template = pathlib.Path(sys.argv[1]), sys.argv[2]
root = zarr.open_group(data / "hrrr_curvilinear.zarr", mode="r")
t2m = root["t2m"][0]
lat, lon = np.deg2rad(root["latitude"][:]), np.deg2rad(root["longitude"][:])
ny, nx = lat.shape
c = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], -1)
p = np.empty((ny + 2, nx + 2, 3))
p[1:-1, 1:-1] = c
p[1:-1, 0], p[1:-1, -1] = 2 * c[:, 0] - c[:, 1], 2 * c[:, -1] - c[:, -2]
p[0], p[-1] = 2 * p[1] - p[2], 2 * p[-2] - p[-3]
corner = p[:-1, :-1] + p[:-1, 1:] + p[1:, :-1] + p[1:, 1:]
corner /= np.linalg.norm(corner, axis=-1, keepdims=True)
tree = cKDTree(c.reshape(-1, 3))
HALF = 20037508.342789244
bad_total = 0
by_zoom = {}
for line in (data / "tiles.txt").read_text().split("\n"):
    if not line.strip():
        continue
    z, tx, ty = map(int, line.split())
    with urllib.request.urlopen(template.format(z=z, x=tx, y=ty)) as r:
        got = np.load(io.BytesIO(r.read())).ravel()
    size = 2 * HALF / 2**z
    px = -HALF + (tx + (np.arange(256) + 0.5) / 256) * size
    py = HALF - (ty + (np.arange(256) + 0.5) / 256) * size
    mx, my = np.meshgrid(px, py)
    plon, plat = mx / HALF * np.pi, np.arctan(np.sinh(my / HALF * np.pi))
    q = np.stack([np.cos(plat) * np.cos(plon), np.cos(plat) * np.sin(plon), np.sin(plat)], -1).reshape(-1, 3)
    dist, k = tree.query(q, k=2)
    near = k[:, 0]
    tie = np.abs(dist[:, 1] - dist[:, 0]) < 1e-9
    near = np.where(tie, np.minimum(k[:, 0], k[:, 1]), near)
    r, col = near // nx, near % nx
    quad = [corner[r, col], corner[r, col + 1], corner[r + 1, col + 1], corner[r + 1, col]]
    sides = np.stack([np.einsum("ij,ij->i", np.cross(quad[i], quad[(i + 1) % 4]), q) for i in range(4)], -1)
    inside = ((sides >= 0).all(-1) | (sides <= 0).all(-1)) & (np.einsum("ij,ij->i", c[r, col], q) > 0)
    want = np.where(inside, t2m[r, col], np.nan)
    edge = tie | (np.abs(sides) < 1e-9).any(-1)
    differs = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    n, e = int((differs & ~edge).sum()), int((differs & edge).sum())
    s = by_zoom.setdefault(z, [0, 0, 0, 0])
    s[0] += 1
    s[1] += int(inside.sum())
    s[2] += n
    s[3] += e
    bad_total += n
for z, (tiles, cells, n, e) in sorted(by_zoom.items()):
    print(f"verify z{z}: {tiles} tiles, {cells} pixels on the grid, {n} differ from the brute-force cell, {e} at an edge or tie")
sys.exit(1 if bad_total else 0)
