"""Benchmark data for map tiles on a projected grid: HRRR's 3 km CONUS Lambert conformal grid,
written with xarray + zarr-python as a user converting HRRR would. Run in the trixie chroot (the
xpublish-tiles venv of ../shared/tools/maps-peers has xarray, zarr 3.4.2 and pyproj):

    python make_hrrr.py OUT          # writes OUT/hrrr.zarr and OUT/tiles.txt

- OUT/hrrr.zarr   Zarr v3, t2m(time, y, x) float32 on 1799 x 1059 cells of 3 km, chunks
                  (1, 265, 300) in shards (1, 1060, 1800): one shard a step; CF grid_mapping
                  `lambert_conformal_conic` (HRRR's: standard parallel 38.5, central meridian 262.5,
                  sphere of 6371229 m) with CF parameters only (no EPSG code, no WKT), 1-D x/y in
                  metres, 2-D latitude/longitude as HRRR's files carry; 4 hourly steps.
- OUT/hrrr_latlon.zarr  the same t2m on a 1-D latitude/longitude grid of the same size over the
                  grid's bbox (latitudes descending): the reference for a projected tile's cost.
- OUT/hrrr_curvilinear.zarr  the same t2m with only its 2-D latitude/longitude (named by CF
                  `coordinates`; no grid mapping, no 1-D x/y): a curvilinear grid of 1.9 million
                  cells, as WRF output (XLAT/XLONG) or a converted model without its projection.
- OUT/tiles.txt   the z5, z6 and z7 tiles the scenarios ask ("z x y" per line): every z5 tile
                  over the grid, and an 8 x 8 block of z6 and of z7 tiles at the grid's middle.
The values are a smooth field plus N(0, 1 K) noise, so a wrong cell shows in the picture."""
import pathlib
import shutil
import sys

import numpy as np
import pyproj
import xarray as xr

if len(sys.argv) != 2:
    sys.exit(__doc__)
out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
NT, NY, NX = 4, 1059, 1799
cf = dict(grid_mapping_name="lambert_conformal_conic", standard_parallel=38.5,
          longitude_of_central_meridian=262.5, latitude_of_projection_origin=38.5, earth_radius=6371229.0)
crs = pyproj.CRS.from_cf(cf)
x = -2697520.142522 + 3000.0 * np.arange(NX)
y = -1587306.152557 + 3000.0 * np.arange(NY)
to_lonlat = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
X, Y = np.meshgrid(x, y)
lon, lat = to_lonlat.transform(X, Y)
rng = np.random.default_rng(2026)
rl, rn = np.deg2rad(lat), np.deg2rad(lon)
smooth = 255 + 40 * np.cos(rl) + 6 * np.sin(3 * rn) + 4 * np.cos(5 * rl) * np.sin(2 * rn)
t2m = np.empty((NT, NY, NX), "f4")
for t in range(NT):
    t2m[t] = smooth + 3 * np.cos(rn + 2 * np.pi * t / 24) + rng.standard_normal((NY, NX))
time = np.datetime64("2024-07-01T00", "ns") + np.arange(NT) * np.timedelta64(1, "h")
ds = xr.Dataset(
    {
        "t2m": (("time", "y", "x"), t2m, {"units": "K", "long_name": "2 metre temperature",
                                          "standard_name": "air_temperature",
                                          "grid_mapping": "lambert_conformal_conic"}),
        "lambert_conformal_conic": ((), np.int32(0), cf),
    },
    coords={
        "time": ("time", time, {"standard_name": "time"}),
        "y": ("y", y, {"standard_name": "projection_y_coordinate", "units": "m"}),
        "x": ("x", x, {"standard_name": "projection_x_coordinate", "units": "m"}),
        "latitude": (("y", "x"), lat, {"standard_name": "latitude", "units": "degrees_north"}),
        "longitude": (("y", "x"), lon % 360.0, {"standard_name": "longitude", "units": "degrees_east"}),
    },
    attrs={"title": "HRRR-like 3 km CONUS Lambert conformal grid (synthetic)", "Conventions": "CF-1.8"},
)
ds["t2m"].encoding["coordinates"] = "latitude longitude"
shutil.rmtree(out / "hrrr.zarr", ignore_errors=True)
tenc = {"units": "hours since 2024-07-01 00:00:00", "calendar": "standard", "dtype": "int64"}
ds.to_zarr(out / "hrrr.zarr", zarr_format=3, consolidated=True,
           encoding={"t2m": {"chunks": (1, 265, 300), "shards": (1, 1060, 1800)}, "time": tenc})

# The same values on their 2-D latitude/longitude only: a curvilinear grid.
curvilinear = ds.drop_vars(["lambert_conformal_conic", "x", "y"])
curvilinear["t2m"].attrs.pop("grid_mapping")
curvilinear["t2m"].encoding["coordinates"] = "latitude longitude"
shutil.rmtree(out / "hrrr_curvilinear.zarr", ignore_errors=True)
curvilinear.to_zarr(out / "hrrr_curvilinear.zarr", zarr_format=3, consolidated=True,
                    encoding={"t2m": {"chunks": (1, 265, 300), "shards": (1, 1060, 1800)}, "time": tenc,
                              "latitude": {"chunks": (265, 300)}, "longitude": {"chunks": (265, 300)}})

# The same values on a latitude/longitude grid of the same size over the footprint's bbox.
w, e, s, n = lon.min(), lon.max(), lat.min(), lat.max()
flat = xr.Dataset(
    {"t2m": (("time", "lat", "lon"), t2m, {"units": "K", "long_name": "2 metre temperature"})},
    coords={"time": ("time", time, {"standard_name": "time"}),
            "lat": ("lat", np.linspace(n, s, NY), {"standard_name": "latitude", "units": "degrees_north"}),
            "lon": ("lon", np.linspace(w, e, NX), {"standard_name": "longitude", "units": "degrees_east"})})
shutil.rmtree(out / "hrrr_latlon.zarr", ignore_errors=True)
flat.to_zarr(out / "hrrr_latlon.zarr", zarr_format=3, consolidated=True,
             encoding={"t2m": {"chunks": (1, 265, 300), "shards": (1, 1060, 1800)}, "time": tenc})


def tile_of(lo, la, z):
    n = 2 ** z
    tx = int((lo + 180.0) / 360.0 * n)
    ty = int((1.0 - np.arcsinh(np.tan(np.deg2rad(la))) / np.pi) / 2.0 * n)
    return min(max(tx, 0), n - 1), min(max(ty, 0), n - 1)


lines = []
x0, y0 = tile_of(w, n, 5)
x1, y1 = tile_of(e, s, 5)
lines += [f"5 {tx} {ty}" for ty in range(y0, y1 + 1) for tx in range(x0, x1 + 1)]
mid_lon, mid_lat = float(lon[NY // 2, NX // 2]), float(lat[NY // 2, NX // 2])
for z in (6, 7):
    cx, cy = tile_of(mid_lon, mid_lat, z)
    lines += [f"{z} {tx} {ty}" for ty in range(cy - 4, cy + 4) for tx in range(cx - 4, cx + 4)]
(out / "tiles.txt").write_text("\n".join(lines) + "\n")
print("hrrr.zarr", t2m.shape, "bbox", [round(float(v), 3) for v in (w, s, e, n)], "tiles", len(lines))
