"""Expected series for the series panel in .ci/browser_series.cjs, from first principles with
NumPy (never from zarrd): on the analysis fixture's noleap daily `daily/tas`, the series and
monthly means of a clicked place's nearest grid point, and a drawn polygon's and box's
area-weighted means (weights R^2 dlon (sin phi2 - sin phi1) from cell edges midway between
the coordinates, outer cells as wide as their neighbour, lat clipped to +-90; cells whose
centre is inside, even-odd, longitudes modulo 360; NaN skipped); the sample's grid point and
dates (for the private-dataset run); and the EDR fixture's 4-D `ua` at one level, when that
fixture is there.

    python .ci/browser_expected_series.py STORE OUT_JSON    (from the repository root)

STORE is tests/fixtures/analysis/analysis.zarr, or a path where it is missing: then a store
like it (a year of daily noleap steps on the same 2.5 degree grid, with NaN holes) is first
written there by zarr-python. The expected values are written to OUT_JSON, which
.ci/browser.sh passes to browser_series.cjs as EXPECTED_SERIES. Run with the client venv's
Python (zarr, NumPy).
"""

import json, math, os, sys
import numpy as np, zarr
store, out = sys.argv[1], sys.argv[2]
MONTHS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
if not os.path.exists(os.path.join(store, "daily", "tas", "zarr.json")):
    # The fallback store: smooth, quantized to 1/8 K (so it compresses and prints exactly),
    # with NaN holes (a block, and one point's days) that the means must skip.
    n = 365
    lat = 88.75 - 2.5 * np.arange(72)
    lon = 2.5 * np.arange(144)
    t = np.arange(n)
    la, lo = np.meshgrid(np.deg2rad(lat), np.deg2rad(lon), indexing="ij")
    base = 288 - 40 * np.sin(la) ** 2 + 3 * np.cos(7 * lo) * np.cos(la)
    seas = 12 * np.sin(la)[None] * -np.cos(2 * np.pi * (t[:, None, None] - 15) / 365)
    tas = np.round((base[None] + seas + 0.01 * t[:, None, None] * np.cos(3 * lo)[None]) * 8) / 8
    tas = tas.astype("f4")
    tas[100:160, 20:26, 100:110] = np.nan
    tas[40:50, 17, 114] = np.nan
    root = zarr.open_group(store, mode="w", zarr_format=3)
    g = root.create_group("daily")
    def coord(name, values, dtype, attrs):
        a = g.create_array(name, shape=values.shape, dtype=dtype, chunks=values.shape, dimension_names=[name], fill_value=0)
        a[:] = values
        a.attrs.update(attrs)
    coord("time", t, "int64", {"units": "days since 2001-01-01", "calendar": "noleap"})
    coord("lat", lat, "float64", {"units": "degrees_north", "standard_name": "latitude"})
    coord("lon", lon, "float64", {"units": "degrees_east", "standard_name": "longitude"})
    a = g.create_array("tas", shape=tas.shape, dtype="float32", chunks=(73, 24, 36), fill_value=float("nan"),
                       dimension_names=["time", "lat", "lon"])
    a[:] = tas
    a.attrs.update({"units": "K", "long_name": "near-surface air temperature"})

g = zarr.open_group(os.path.join(store, "daily"), mode="r")
lat, lon, time = g["lat"][:].astype("f8"), g["lon"][:].astype("f8"), g["time"]
assert time.attrs["units"] == "days since 2001-01-01" and time.attrs["calendar"] in ("noleap", "365_day")
tas = g["tas"][:].astype("f8")
fill = g["tas"].attrs.get("_FillValue")
if isinstance(fill, (int, float)):
    tas[tas == fill] = np.nan
def noleap(day):
    y, d = 2001 + day // 365, day % 365
    m = 0
    while d >= MONTHS[m]:
        d -= MONTHS[m]; m += 1
    return y, m + 1, d + 1
days = [int(v) for v in time[:]]
dates = ["%04d-%02d-%02d" % noleap(d) for d in days]
month_of = [s[:7] + "-01" for s in dates]
months = sorted(set(month_of))
steps = {m: [i for i, s in enumerate(month_of) if s == m] for m in months}
clean = lambda xs: [None if x is None or not math.isfinite(x) else float(x) for x in xs]

# The clicked place and its nearest grid point (longitudes modulo 360, ties the lower index).
click = {"lat": 45.3, "lon": -75.2}
iy = int(np.argmin(np.abs(lat - click["lat"])))
ix = int(np.argmin(np.abs((lon - click["lon"] + 180) % 360 - 180)))
point = tas[:, iy, ix]
def nanmean(v):
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else None

# Area weights from the whole grid's cell edges.
def edges(c):
    e = np.empty(len(c) + 1)
    e[1:-1] = (c[:-1] + c[1:]) / 2
    e[0], e[-1] = c[0] - (c[1] - c[0]) / 2, c[-1] + (c[-1] - c[-2]) / 2
    return e
R = 6371008.8
phi = np.deg2rad(np.clip(edges(lat), -90, 90))
dlam = np.deg2rad(np.abs(np.diff(edges(lon))))
w = R * R * np.abs(np.diff(np.sin(phi)))[:, None] * dlam[None, :]

def inside(ring):
    """Cells whose centre is inside (even-odd), the centres' longitudes moved next to the ring."""
    xs, ys = np.array([p[0] for p in ring]), np.array([p[1] for p in ring])
    cx = ((lon - xs.min()) % 360 + xs.min())[None, :] * np.ones((len(lat), 1))
    cy = lat[:, None] * np.ones((1, len(lon)))
    mask = np.zeros(cx.shape, bool)
    near = np.inf
    for (x1, y1), (x2, y2) in zip(ring[:-1], ring[1:]):
        cross = (y1 > cy) != (y2 > cy)
        xat = x1 + (cy - y1) * (x2 - x1) / ((y2 - y1) if y2 != y1 else 1)
        mask ^= cross & (cx < xat)
        # How near a centre comes to an edge: the drawing's pixels must not matter.
        dx, dy = x2 - x1, y2 - y1
        tt = np.clip(((cx - x1) * dx + (cy - y1) * dy) / (dx * dx + dy * dy), 0, 1)
        near = min(near, float(np.hypot(cx - x1 - tt * dx, cy - y1 - tt * dy).min()))
    assert near > 0.3, f"a cell centre is {near} degrees from an edge of {ring}"
    return mask

def area_series(ring):
    m = inside(ring)
    assert m.sum() > 5, ring
    daily, monthly = [], []
    for t in range(tas.shape[0]):
        v = tas[t]
        ok = m & np.isfinite(v)
        daily.append(float((w * v)[ok].sum() / w[ok].sum()) if ok.any() else None)
    for mo in months:
        v = tas[steps[mo]]
        ok = m[None] & np.isfinite(v)
        ww = np.broadcast_to(w, v.shape)
        monthly.append(float((ww * v)[ok].sum() / ww[ok].sum()) if ok.any() else None)
    return {"ring": ring, "cells": int(m.sum()), "series": daily, "monthly": monthly}

# Edges level, upright or at 45 degrees, placed midway between cell centres (lat 1.25 mod
# 2.5, lon 0 mod 2.5): no centre within 0.88 degrees of an edge.
polygon = [[-101.25, 30.0], [-80.0, 30.0], [-65.0, 45.0], [-75.0, 55.0], [-90.0, 55.0], [-101.25, 43.75], [-101.25, 30.0]]
# A box is drawn corner to corner: its edges midway between grid coordinates.
box = [[-93.75, 35.0], [-78.75, 35.0], [-78.75, 50.0], [-93.75, 50.0], [-93.75, 35.0]]

# The sample (private on the auth server): the grid point nearest 45 N 75 W (its t2m has a
# rectilinear chunk grid, which this zarr-python does not read).
s = zarr.open_group("data/sample.zarr/climate", mode="r")
slat, slon = s["lat"][:].astype("f8"), s["lon"][:].astype("f8")
sy = int(np.argmin(np.abs(slat - 45.0)))
sx = int(np.argmin(np.abs((slon + 75.0 + 180) % 360 - 180)))
def edr_point():
    """The EDR fixture's 4-D `ua` (time, plev, lat, lon) at 850 hPa, at the grid point
    nearest 50 N 80 W (NaN on three steps there): a series with a level fixed."""
    path = "tests/fixtures/edr/edr.zarr"
    if not os.path.exists(os.path.join(path, "ua", "zarr.json")):
        return None
    e = zarr.open_group(path, mode="r")
    plev, elat, elon = e["plev"][:], e["lat"][:].astype("f8"), e["lon"][:].astype("f8")
    iz = int(np.argmin(np.abs(plev - 850)))
    ey, ex = int(np.argmin(np.abs(elat - 50))), int(np.argmin(np.abs((elon + 80 + 180) % 360 - 180)))
    ua = e["ua"][:, iz, ey, ex].astype("f8")
    return {"dataset": "edr", "path": "ua", "level": iz, "plev": float(plev[iz]), "lat": 50.0, "lon": -80.0,
            "series": clean(ua)}

json.dump({
    "dataset": "analysis", "path": "daily/tas", "store": store,
    "units": g["tas"].attrs["units"], "long_name": g["tas"].attrs["long_name"],
    "dates": dates, "months": months,
    "click": click, "point": {"lat": float(lat[iy]), "lon": float(lon[ix]), "cell": [iy, ix],
              "series": clean(point), "monthly": [nanmean(point[steps[m]]) for m in months]},
    "polygon": area_series(polygon), "box": area_series(box),
    "sample": {"lat": float(slat[sy]), "lon": float(slon[sx]), "steps": 365,
               "dates": [str(np.datetime64("2025-01-01", "D") + np.timedelta64(int(d), "D")) for d in s["time"][:]]},
    "edr": edr_point(),
}, open(out, "w"))
