"""Opens zarrd's GeoTIFF downloads (`/v1/slice/...&format=tif`) with real readers and compares
them with the fixtures read directly: `rio cogeo validate` (rio-cogeo's validator), rasterio
(GDAL 3.10 in its wheel) for values, nodata, transform, CRS, band descriptions, scale/offset and
overviews, and Debian's `gdalinfo -json` (GDAL 3.6) for size and transform. The expected side is
xarray's read of the fixture store with the stored (packed) values, the transform computed here
from its x/y centres (or GeoZarr `spatial:transform`), the CRS from pyproj (`CRS.from_cf` of the
grid mapping, or the EPSG code), and each overview the 2 x 2 mean of the pixels above it that are
not missing (integers rounded half away from zero) — never zarrd's output.

    python read_geotiffs.py BASE FIXTURES      (FIXTURES = tests/fixtures)

BASE serves the datasets of .ci/downloads.sh. Prints a line per case and exits 1 when anything
differs.
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import warnings

import numpy as np
import pyproj
import rasterio
import xarray as xr
from rio_cogeo.cogeo import cog_validate

warnings.simplefilter("ignore")
BASE, FIX = sys.argv[1], sys.argv[2]
PROJ = f"{FIX}/downloads/projections.zarr"

# (name, dataset/path, query, store, group, variable, isel, the CRS: "cf" (the grid mapping) or
#  an EPSG code)
CASES = [
    ("geographic, 3 bands (time), descending lat", "analysis/daily/tas", "s=0:3,::2,100:130",
     "analysis/analysis.zarr", "daily", "tas", {"time": slice(0, 3), "lat": slice(None, None, 2), "lon": slice(100, 130)}, 4326),
    ("packed int16 by labels, time dropped", "analysis/daily/pr", "sel=time:2001-05-15,lat:0..30,lon:100..150",
     "analysis/analysis.zarr", "daily", "pr", {"sel": {"time": "2001-05-15", "lat": slice(30, 0), "lon": slice(100, 150)}}, 4326),
    ("360_day calendar: band labels", "analysis/calendars/c360/v", "s=57:61", "analysis/analysis.zarr",
     "calendars/c360", "v", {"time": slice(57, 61)}, 4326),
    ("julian calendar: band labels", "analysis/calendars/julian/v", "s=58:61", "analysis/analysis.zarr",
     "calendars/julian", "v", {"time": slice(58, 61)}, 4326),
    ("Lambert conformal on a sphere, south-up", "hrrr/t2m", "s=1,5:30,10:50", "grids/hrrr_lcc.zarr", None, "t2m",
     {"time": 1, "y": slice(5, 30), "x": slice(10, 50)}, "cf"),
    ("polar stereographic EPSG:3413, 2 bands", "seaice/ice", "s=:,::3,10:60", "grids/seaice_3413.zarr", None, "ice",
     {"y": slice(None, None, 3), "x": slice(10, 60)}, 3413),
]
for group, what in [("tm", "transverse Mercator, packed int16, south-up, overviews"),
                    ("merc_a", "Mercator A, uint8"), ("merc_b", "Mercator B, float64"),
                    ("aea", "Albers, 2 bands, NaN holes, overviews"), ("laea", "Lambert azimuthal equal area"),
                    ("ps_a", "polar stereographic A"), ("ps_b", "polar stereographic B")]:
    CASES.append((what, f"proj/{group}/v", "s=", "downloads/projections.zarr", group, "v", {}, "cf"))

# GeoZarr (no coordinate arrays): (name, path, query, store, group, variable, rows, cols, EPSG)
GEOZARR = [("GeoZarr UTM uint16 (affine)", "s2/r60m/b04", "s=10:50,20:90", "grids/s2_utm.zarr", "r60m", "b04",
            slice(10, 50), slice(20, 90), 32633)]

# What GeoTIFF cannot hold: 422 naming why.
REFUSED = [
    ("rotated pole", "cordex/tas?s=0,:,:", "rotated"),
    ("curvilinear", "coastal/temp?s=:,10:30,5:40", "curvilinear"),
    ("rotated GeoZarr transform", "s2/r60m_rotated/b04?s=:,:", "rotated"),
    ("the last two dimensions not the grid's", "analysis/daily/tas?s=0:3,0:4,0", "last two"),
    ("four dimensions", "edr/ta?s=0:2,0:2,:,:", "at most one more"),
    ("text", "strings/grid_2d_missing?s=:,:", "integers and floats"),
]

bad = 0


def report(ok, name, detail=""):
    global bad
    print(("ok   " if ok else "FAIL ") + name + (f": {detail}" if detail and not ok else ""))
    bad += 0 if ok else 1


def fetch(url):
    # Compressed on the way as a client asking for gzip gets it (Python has no zstd); a
    # GeoTIFF is an image and never is.
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    try:
        r = urllib.request.urlopen(request)
    except urllib.error.HTTPError as e:
        r = e
    with r:
        body = r.read()
        headers = {k.lower(): v for k, v in r.headers.items()}
        if headers.get("content-encoding") == "gzip":
            body = gzip.decompress(body)
        return r.status if hasattr(r, "status") else r.code, headers, body


def expected_crs(spec, store, group, variable):
    if spec != "cf":
        return pyproj.CRS.from_epsg(spec)
    ds = xr.open_zarr(f"{FIX}/{store}", group=group, decode_cf=False)
    return pyproj.CRS.from_cf(ds[ds[variable].attrs["grid_mapping"]].attrs)


def same_crs(got, want, near):
    """Both CRSs put the same points (around `near`, lon/lat) at the same x/y within 1 mm."""
    if got.is_geographic or want.is_geographic:
        return got.is_geographic and want.is_geographic and got.ellipsoid.semi_major_metre == want.ellipsoid.semi_major_metre
    lon, lat = near
    points = [(lon + dx, lat + dy) for dx in (-2, 0, 2) for dy in (-2, 0, 2)]
    a = pyproj.Transformer.from_crs("EPSG:4326", got, always_xy=True)
    b = pyproj.Transformer.from_crs("EPSG:4326", want, always_xy=True)
    return all(np.allclose(a.transform(*p), b.transform(*p), atol=1e-3, rtol=0) for p in points)


def halved(data, nodata, integer):
    """The next overview of (bands, rows, cols): the mean of each 2 x 2 block's values that
    are not missing."""
    bands, rows, cols = data.shape
    out = np.empty((bands, (rows + 1) // 2, (cols + 1) // 2), dtype=np.float64)
    values = data.astype(np.float64)
    missing = np.isnan(values) | ((values == nodata) if nodata is not None and not np.isnan(nodata) else False)
    values = np.where(missing, 0.0, values)
    for r in range(out.shape[1]):
        for c in range(out.shape[2]):
            block = values[:, 2 * r:2 * r + 2, 2 * c:2 * c + 2].reshape(bands, -1)
            n = (~missing[:, 2 * r:2 * r + 2, 2 * c:2 * c + 2]).reshape(bands, -1).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[:, r, c] = np.where(n > 0, block.sum(axis=1) / np.maximum(n, 1), np.nan)
    fill = np.nan if nodata is None else nodata
    if integer:
        out = np.sign(out) * np.floor(np.abs(out) + 0.5)
    return np.where(np.isnan(out), fill, out).astype(data.dtype)


def same_values(got, want):
    if got.dtype.kind == "f":
        return got.shape == want.shape and np.array_equal(got, want, equal_nan=True)
    return got.shape == want.shape and np.array_equal(got, want)


def check_file(name, body, want, transform, crs, near, nodata, descriptions=None, scale=None):
    tmp = tempfile.NamedTemporaryFile(suffix=".tif", delete=False)
    tmp.write(body)
    tmp.close()
    valid, errors, warns = cog_validate(tmp.name, strict=True)
    report(valid, f"{name}: rio cogeo validate", f"{errors} {warns}")
    with rasterio.open(tmp.name) as src:
        data = src.read()
        report(same_values(data, want), f"{name}: values (rasterio)",
               f"shape {data.shape} vs {want.shape}; first {data.ravel()[:4]} vs {want.ravel()[:4]}")
        report(np.allclose(src.transform[:6], transform, rtol=1e-12, atol=1e-9), f"{name}: transform",
               f"{tuple(src.transform)[:6]} vs {transform}")
        got_nodata = src.nodata
        ok = (nodata is None and got_nodata is None) or (
            got_nodata is not None and nodata is not None and (got_nodata == nodata or (np.isnan(got_nodata) and np.isnan(nodata))))
        report(ok, f"{name}: nodata", f"{got_nodata} vs {nodata}")
        report(same_crs(pyproj.CRS.from_wkt(src.crs.to_wkt()), crs, near), f"{name}: CRS", src.crs.to_wkt()[:200])
        if descriptions is not None:
            report(list(src.descriptions) == descriptions, f"{name}: band labels", f"{src.descriptions} vs {descriptions}")
        if scale is not None:
            report(src.scales[0] == scale[0] and src.offsets[0] == scale[1], f"{name}: scale/offset",
                   f"{src.scales} {src.offsets} vs {scale}")
        overviews = src.overviews(1)
    # Each overview from the level above it.
    above = want
    for level in range(len(overviews)):
        with rasterio.open(tmp.name, OVERVIEW_LEVEL=level) as ov:
            expect = halved(above, nodata, want.dtype.kind in "iu")
            got = ov.read()
            close = got.shape == expect.shape and (
                np.allclose(got, expect, rtol=1e-6, equal_nan=True) if want.dtype.kind == "f" else np.array_equal(got, expect))
            report(close, f"{name}: overview {level} ({got.shape[2]} x {got.shape[1]})", f"{got.shape} vs {expect.shape}")
            above = expect if want.dtype.kind in "iu" else got
    report(max(want.shape[1:]) <= 512 or (overviews and max(want.shape[1:]) / overviews[-1] <= 512),
           f"{name}: overviews down to 512 ({overviews})")
    info = json.loads(subprocess.run(["gdalinfo", "-json", tmp.name], capture_output=True, text=True, check=True).stdout)
    gt = info["geoTransform"]
    gdal_affine = (gt[1], gt[2], gt[0], gt[4], gt[5], gt[3])
    report(info["size"] == [want.shape[2], want.shape[1]] and np.allclose(gdal_affine, transform, rtol=1e-12),
           f"{name}: gdalinfo (Debian GDAL) size and transform", f"{info['size']} {gt}")
    os.unlink(tmp.name)


def north_up(values, ys, xs):
    """(bands, rows, cols) values and centres turned north-up, east-right; the transform."""
    ys, xs = np.asarray(ys, dtype=np.float64), np.asarray(xs, dtype=np.float64)
    if len(ys) > 1 and ys[1] > ys[0]:
        values, ys = values[:, ::-1, :], ys[::-1]
    dx = (xs[-1] - xs[0]) / (len(xs) - 1)
    dy = (ys[-1] - ys[0]) / (len(ys) - 1)
    return values, (dx, 0.0, xs[0] - dx / 2, 0.0, dy, ys[0] - dy / 2)


for name, path, query, store, group, variable, isel, crs_spec in CASES:
    status, headers, body = fetch(f"{BASE}/v1/slice/{path}?{query}&format=tif")
    if status != 200:
        report(False, name, f"HTTP {status}: {body[:300]}")
        continue
    report(headers.get("content-type") == "image/tiff; application=geotiff; profile=cloud-optimized"
           and headers.get("content-disposition") == f'attachment; filename="{variable}.tif"'
           and "content-encoding" not in headers, f"{name}: media type, attachment, not re-compressed", str(headers))
    ds = xr.open_zarr(f"{FIX}/{store}", group=group, mask_and_scale=False, decode_times=True, use_cftime=True)
    da = ds[variable]
    if "sel" in isel:
        da = da.sel(**isel["sel"])
        # A single date is a partial-string slice to xarray: the one step it selects.
        da = da.squeeze([d for d, v in isel["sel"].items() if isinstance(v, str)])
    else:
        da = da.isel(**isel)
    stored = da.values
    dims = list(da.dims)
    ydim, xdim = dims[-2], dims[-1]
    values = stored if stored.ndim == 3 else stored[np.newaxis]
    values, transform = north_up(values, da[ydim].values, da[xdim].values)
    descriptions = None
    if stored.ndim == 3:
        descriptions = [t.isoformat()[:10] if hasattr(t, "isoformat") else str(t) for t in da[dims[0]].values]
    attrs = da.attrs
    nodata = attrs.get("_FillValue", ds[variable].encoding.get("_FillValue"))
    if nodata is None:
        fill = ds[variable].encoding.get("fill_value")
        nodata = fill
    nodata = None if nodata is None else float(nodata)
    scale = (attrs["scale_factor"], attrs.get("add_offset", 0.0)) if "scale_factor" in attrs else None
    crs = expected_crs(crs_spec, store, group, variable)
    x0, y0 = transform[2], transform[5]
    near = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True).transform(x0, y0)
    check_file(name, body, values, transform, crs, near, nodata, descriptions, scale)

for name, path, query, store, group, variable, rows, cols, epsg in GEOZARR:
    status, headers, body = fetch(f"{BASE}/v1/slice/{path}?{query}&format=tif")
    if status != 200:
        report(False, name, f"HTTP {status}: {body[:300]}")
        continue
    import zarr
    arr = zarr.open_group(f"{FIX}/{store}", mode="r")[group][variable]
    a, b, c, d, e, f = zarr.open_group(f"{FIX}/{store}", mode="r")[group].attrs["spatial:transform"]
    values = arr[rows, cols][np.newaxis]
    transform = (a, 0.0, c + a * cols.start, 0.0, e, f + e * rows.start)
    crs = pyproj.CRS.from_epsg(epsg)
    near = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True).transform(transform[2], transform[5])
    check_file(name, body, values, transform, crs, near, float(arr.fill_value))

# A latitude/longitude box on a polar stereographic grid of uint8 without _FillValue: the
# cells of its index box whose centre (pyproj) lies outside it get the first value no cell
# inside holds of the Zarr fill (0) and NetCDF's default (255), else the largest free one
# (docs/downloads.md), declared the nodata.
name = "a lat/lon box on polar stereographic uint8 without _FillValue"
status, headers, body = fetch(f"{BASE}/v1/slice/proj/ps_u8/v?sel=lat:84..88,lon:-40..40&format=tif")
if status != 200:
    report(False, name, f"HTTP {status}: {body[:300]}")
else:
    ds = xr.open_zarr(f"{FIX}/downloads/projections.zarr", group="ps_u8", mask_and_scale=False)
    crs = pyproj.CRS.from_cf(ds["crs"].attrs)
    lon, lat = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True).transform(
        *np.meshgrid(ds["x"].values, ds["y"].values))
    inside = (lat >= 84) & (lat <= 88) & (lon >= -40) & (lon <= 40)
    rows, cols = np.nonzero(inside)
    box = (slice(rows.min(), rows.max() + 1), slice(cols.min(), cols.max() + 1))
    values, held = ds["v"].values[box].copy(), set(ds["v"].values[inside].tolist())
    free = [v for v in [0, 255] + list(range(255, -1, -1)) if v not in held][0]
    values[~inside[box]] = free
    values, transform = north_up(values[np.newaxis], ds["y"].values[box[0]], ds["x"].values[box[1]])
    near = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True).transform(transform[2], transform[5])
    check_file(name, body, values, transform, crs, near, float(free))

# EDR `f=GeoTIFF` on a cube: one parameter, CF-decoded float64 with NaN, the steps (time x
# level) as bands labelled "time, z=level".
name = "EDR cube: time x levels as bands"
status, headers, body = fetch(f"{BASE}/edr/collections/edr/cube?bbox=10,20,40,50&z=850,500"
                              "&datetime=2000-01-02T00:00:00Z/2000-01-04T00:00:00Z&parameter-name=ta&f=GeoTIFF")
if status != 200:
    report(False, name, f"HTTP {status}: {body[:300]}")
else:
    ds = xr.open_zarr(f"{FIX}/edr/edr.zarr")
    da = ds["ta"].sel(time=slice("2000-01-02T00:00:00", "2000-01-04T00:00:00"), plev=[850.0, 500.0],
                      lat=slice(20, 50), lon=slice(10, 40)).astype(np.float64)
    values = da.values.reshape(-1, da.sizes["lat"], da.sizes["lon"])
    values, transform = north_up(values, da["lat"].values, da["lon"].values)
    labels = [f"{np.datetime_as_string(t, unit='s')}Z, z={z:g}" for t in da["time"].values for z in da["plev"].values]
    check_file(name, body, values, transform, pyproj.CRS.from_epsg(4326), (25.0, 35.0), float("nan"), labels)
status, _, body = fetch(f"{BASE}/edr/collections/edr")
formats = json.loads(body)["data_queries"]["cube"]["link"]["variables"]["output_formats"] if status == 200 else []
report("GeoTIFF" in formats, "EDR cube lists GeoTIFF in output_formats", str(formats))

for name, path, says in REFUSED:
    url = f"{BASE}/v1/slice/{path}" + ("" if "format=" in path else "&format=tif")
    status, _, body = fetch(url)
    detail = json.loads(body).get("detail", "") if status != 200 else ""
    report(status == 422 and says in detail, f"422: {name}", f"HTTP {status}: {detail or body[:200]}")

print(f"{bad} difference(s)" if bad else "every GeoTIFF matched")
sys.exit(1 if bad else 0)
