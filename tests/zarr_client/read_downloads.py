"""Opens zarrd's region downloads (`/v1/slice/...&format=nc`) with real readers and compares
them with the fixtures read directly: xarray with the netCDF4 engine (and scipy's, for every
CDF-2 file), `ncdump -h`, and GDAL (`gdalinfo -json`) for the CRS and transform of projected
grids. The expected side is xarray's own read of the fixture store (`open_zarr(...).isel(...)`)
or, for a GeoZarr grid without coordinate arrays, the cell centres computed here from its
`spatial:transform` — never zarrd's output.

    python read_downloads.py BASE FIXTURES      (FIXTURES = tests/fixtures)

BASE serves the datasets of .ci/fixture_zarrd.sh plus those .ci/downloads.sh adds. Prints a
line per case and exits 1 when anything differs.
"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import warnings

import numpy as np
import pyproj
import xarray as xr
import zarr

warnings.simplefilter("ignore")
BASE, FIX = sys.argv[1], sys.argv[2]
TIMES = xr.coders.CFDatetimeCoder(use_cftime=True)
ENCODED = ("dtype", "scale_factor", "add_offset", "_FillValue", "units", "calendar")

# (name, dataset, path, query, store (under FIXTURES), group, variable, isel or {"sel": …},
#  what GDAL's CRS of a projected grid must say)
CASES = [
    ("float32, noleap time, descending lat, 0..360 lon", "analysis", "daily/tas",
     "s=0:40,::7,100:120", "analysis/analysis.zarr", "daily", "tas",
     {"time": slice(0, 40), "lat": slice(None, None, 7), "lon": slice(100, 120)}, None),
    ("packed int16 by labels", "analysis", "daily/pr",
     "sel=time:2001-02-01..2001-03-01,lat:60..30,lon:280..300", "analysis/analysis.zarr", "daily", "pr",
     {"sel": {"time": slice("2001-02-01", "2001-03-01"), "lat": slice(60, 30), "lon": slice(280, 300)}}, None),
    ("a dropped time: a scalar coordinate", "analysis", "daily/tas",
     "s=500,10:20,:", "analysis/analysis.zarr", "daily", "tas", {"time": 500, "lat": slice(10, 20)}, None),
    ("360_day", "analysis", "calendars/c360/v", "s=20:40", "analysis/analysis.zarr", "calendars/c360", "v",
     {"time": slice(20, 40)}, None),
    ("julian", "analysis", "calendars/julian/v", "s=50:90", "analysis/analysis.zarr", "calendars/julian", "v",
     {"time": slice(50, 90)}, None),
    ("all_leap", "analysis", "calendars/all_leap/v", "s=:", "analysis/analysis.zarr", "calendars/all_leap", "v", {}, None),
    ("standard, hours", "analysis", "calendars/standard_hours/v", "s=100:140,1:4", "analysis/analysis.zarr",
     "calendars/standard_hours", "v", {"time": slice(100, 140), "lat": slice(1, 4)}, None),
    ("Zarr v2 (the fill is _FillValue)", "anav2", "daily/tas", "s=0:30,0:10,0:10", "analysis/variants/v2.zarr",
     "daily", "tas",
     {"time": slice(0, 30), "lat": slice(0, 10), "lon": slice(0, 10)}, None),
    ("Lambert conformal: x/y, 2-D lat/lon, its grid mapping", "hrrr", "t2m", "s=1,5:30,10:50",
     "grids/hrrr_lcc.zarr", None, "t2m", {"time": 1, "y": slice(5, 30), "x": slice(10, 50)}, "Lambert Conic Conformal"),
    ("polar stereographic (spatial_ref)", "seaice", "ice", "s=:,::3,10:60", "grids/seaice_3413.zarr", None, "ice",
     {"y": slice(None, None, 3), "x": slice(10, 60)}, "Polar Stereographic"),
    ("rotated pole", "cordex", "tas", "s=0,:,:", "grids/cordex_rotated.zarr", None, "tas", {"time": 0}, None),
    ("curvilinear: 2-D lat/lon", "coastal", "temp", "s=:,10:30,5:40", "curvilinear/coastal.zarr", None, "temp",
     {"eta_rho": slice(10, 30), "xi_rho": slice(5, 40)}, None),
]

# GeoZarr without coordinate arrays: x/y from the transform, the CRS by its EPSG code.
GEOZARR = [
    ("GeoZarr UTM, uint16 (CDF-5)", "s2", "r60m/b04", "s=10:50,20:90", "grids/s2_utm.zarr", "r60m", "b04",
     (slice(10, 50), slice(20, 90)), 32633),
]

# EDR `f=NetCDF`: (name, collection, query, store, group, parameters, selection by xarray)
EDR = [
    ("EDR cube: two parameters, levels, a time range", "edr", "cube?bbox=10,20,40,50&z=850,500"
     "&datetime=2000-01-02T00:00:00Z/2000-01-04T00:00:00Z&parameter-name=ta,ua", "edr/edr.zarr", None, ["ta", "ua"],
     {"time": slice("2000-01-02T00:00:00", "2000-01-04T00:00:00"), "plev": [850.0, 500.0], "lat": slice(20, 50), "lon": slice(10, 40)}),
    ("EDR area: a rectangle of centres", "edr:surface",
     "area?coords=POLYGON((5 15,45 15,45 55,5 55,5 15))", "edr/edr.zarr", "surface", ["t2m", "tp"],
     {"lat": slice(15, 55), "lon": slice(5, 45)}),
]

bad = 0


def report(name, problems):
    global bad
    print(f"{'ok ' if not problems else 'BAD'} {name}" + "".join(f"\n    {p}" for p in problems))
    bad += bool(problems)


def download(dataset, path, query, into, url=None):
    url = url or f"{BASE}/v1/slice/{dataset}/{path}?{query}&format=nc".replace(" ", "%20")
    # Compressed on the way as a client asking for gzip gets it (Python has no zstd).
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request) as response:
        body = response.read()
        if response.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        disposition = response.headers.get("Content-Disposition", "")
        kind = response.headers.get("Content-Type")
    with open(into, "wb") as f:
        f.write(body)
    problems = []
    if kind != "application/x-netcdf":
        problems.append(f"Content-Type {kind}")
    if f'filename="{path.rsplit("/", 1)[-1]}.nc"' not in disposition or not disposition.startswith("attachment"):
        problems.append(f"Content-Disposition {disposition!r}")
    second = urllib.request.urlopen(url).read()
    if second != body:
        problems.append("the same request gave different bytes")
    return body, problems


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc" or b.dtype.kind in "fc":
        return bool(np.array_equal(a.astype("f8"), b.astype("f8"), equal_nan=True))
    return bool(np.array_equal(a, b))


def same_labels(a, b):
    """Labels: numbers as numbers, dates (cftime objects) by equality."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == object or b.dtype == object:
        return a.shape == b.shape and all(x == y for x, y in zip(a.ravel(), b.ravel()))
    return same(a, b)


def compare(got, want, problems, where):
    if not same(got.values, want.values):
        problems.append(f"{where}: values differ (dtype {got.dtype} vs {want.dtype}, shape {got.shape} vs {want.shape})")
    if got.dims != want.dims:
        problems.append(f"{where}: dims {got.dims} vs {want.dims}")
    for key, value in want.attrs.items():
        if key not in got.attrs or not same(got.attrs[key], value):
            problems.append(f"{where}: attribute {key} = {got.attrs.get(key)!r}, want {value!r}")


def ncdump_ok(path, problems):
    if shutil.which("ncdump") is None:
        problems.append("ncdump is not installed")
        return
    run = subprocess.run(["ncdump", "-h", path], capture_output=True, text=True)
    if run.returncode != 0:
        problems.append(f"ncdump -h failed: {run.stderr.strip()}")


def gdal_info(path, variable):
    run = subprocess.run(["gdalinfo", "-json", f"NETCDF:{path}:{variable}"], capture_output=True, text=True)
    return json.loads(run.stdout) if run.returncode == 0 else None


def gdal_check(file, var, want_ds, want, crs, problems):
    """GDAL (3.6, Debian's) opens a CDF-2 file and reads its CRS and transform; its driver
    has no CDF-5."""
    info = gdal_info(file, var)
    if info is None:
        problems.append("gdalinfo cannot open it")
        return
    wkt = info.get("coordinateSystem", {}).get("wkt", "")
    if crs not in wkt:
        problems.append(f"GDAL's CRS lacks {crs!r}: {wkt[:100]!r}")
    x, y = want["x"].values, want["y"].values
    dx, dy = x[1] - x[0], y[1] - y[0]
    # GDAL sets north up: the top edge is the largest y.
    top = max(y[0], y[-1]) + abs(dy) / 2
    expected = [x[0] - dx / 2, dx, 0.0, top, 0.0, -abs(dy)]
    if not np.allclose(info.get("geoTransform", []), expected, rtol=1e-9, atol=1e-3):
        problems.append(f"GDAL's transform {info.get('geoTransform')} vs {expected}")


def edr_projected(work, url, name, kind):
    """A latitude/longitude box on a Lambert conformal grid (an EDR cube, or `sel=` of a
    slice): the native box of the cells whose centre (the store's own 2-D latitude/longitude)
    lies in it, the others NaN; x/y, latitude/longitude and a grid mapping pyproj reads as
    the store's."""
    file = os.path.join(work, "case.nc")
    body, problems = download("hrrr", name, None, file, url)
    ncdump_ok(file, problems)
    ds = xr.open_zarr(os.path.join(FIX, "grids/hrrr_lcc.zarr"), consolidated=False)
    lat, lon = ds["latitude"].values, (ds["longitude"].values + 180) % 360 - 180
    inside = (lat >= 35) & (lat <= 40) & (lon >= -100) & (lon <= -90)
    rows, cols = np.nonzero(inside)
    box = (slice(rows.min(), rows.max() + 1), slice(cols.min(), cols.max() + 1))
    want = ds["t2m"].values[:, box[0], box[1]].astype("f8")
    want[:, ~inside[box]] = np.nan
    with xr.open_dataset(file, engine="netcdf4") as got:
        if not same(got["t2m"].values, want):
            problems.append(f"t2m differs ({got['t2m'].shape} vs {want.shape})")
        names = {"lat": "lat", "lon": "lon"} if kind == "EDR" else {"lat": "latitude", "lon": "longitude"}
        for key, values in [("lat", lat[box]), ("lon", lon[box]), ("x", ds["x"].values[box[1]]),
                            ("y", ds["y"].values[box[0]])]:
            got_values = got[names.get(key, key)].values
            if key == "lon":
                got_values = (got_values + 180) % 360 - 180
            if not np.allclose(got_values, values, rtol=0, atol=1e-9):
                problems.append(f"{key} differs")
        theirs = pyproj.CRS.from_cf(ds["lambert_conformal_conic"].attrs)
        ours = pyproj.CRS.from_cf(got[got["t2m"].attrs["grid_mapping"]].attrs)
        probe = pyproj.Transformer.from_crs(ours, theirs, always_xy=True).transform(123456.0, -654321.0)
        if not np.allclose(probe, (123456.0, -654321.0), atol=1e-3):
            problems.append(f"the grid mapping is another projection: {ours.to_proj4()}")
    report(f"{kind} box on Lambert conformal ({body[:4].decode(errors='replace')!r}, {len(body)} bytes)", problems)


def projected_integers(work):
    """A latitude/longitude box on a polar stereographic grid of integers without
    `_FillValue`: xarray reads the cells of its index box whose centre (pyproj) lies outside
    it as missing, the others as stored, in the stored type; the declared `_FillValue` is
    no value of a cell inside."""
    for group in ("ps_u8", "ps_i16"):
        file = os.path.join(work, "case.nc")
        body, problems = download("proj", f"{group}/v", "sel=lat:84..88,lon:-40..40", file)
        ncdump_ok(file, problems)
        ds = xr.open_zarr(os.path.join(FIX, "downloads/projections.zarr"), group=group, consolidated=False)
        crs = pyproj.CRS.from_cf(ds["crs"].attrs)
        lon, lat = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True).transform(
            *np.meshgrid(ds["x"].values, ds["y"].values))
        inside = (lat >= 84) & (lat <= 88) & (lon >= -40) & (lon <= 40)
        rows, cols = np.nonzero(inside)
        box = (slice(rows.min(), rows.max() + 1), slice(cols.min(), cols.max() + 1))
        stored = ds["v"].values[box]
        want = stored.astype("f8")
        want[~inside[box]] = np.nan
        with xr.open_dataset(file, engine="netcdf4") as got:
            if not same(got["v"].values, want):
                problems.append(f"values differ ({got['v'].shape} vs {want.shape})")
            if got["v"].encoding.get("dtype") != stored.dtype:
                problems.append(f"stored as {got['v'].encoding.get('dtype')}, not {stored.dtype}")
            if got["v"].encoding.get("_FillValue") in set(stored[inside[box]].tolist()):
                problems.append(f"_FillValue {got['v'].encoding.get('_FillValue')} is a value inside the box")
            if not same(got["x"].values, ds["x"].values[box[1]]) or not same(got["y"].values, ds["y"].values[box[0]]):
                problems.append("x/y differ")
        report(f"box on polar stereographic {stored.dtype} without _FillValue ({body[:4].decode(errors='replace')!r})",
               problems)


def main():
    work = tempfile.mkdtemp()
    for name, dataset, path, query, store, group, var, isel, projected in CASES:
        file = os.path.join(work, "case.nc")
        body, problems = download(dataset, path, query, file)
        cdf2 = body[:4] == b"CDF\x02"
        want_ds = xr.open_zarr(os.path.join(FIX, store), group=group, consolidated=False, decode_times=TIMES)
        # Label selections are made by xarray's own `sel`.
        want = want_ds[var].sel(isel["sel"]) if "sel" in isel else want_ds[var].isel(isel)
        ncdump_ok(file, problems)
        for engine in ["netcdf4"] + (["scipy"] if cdf2 else []):
            with xr.open_dataset(file, engine=engine, decode_times=TIMES) as got_ds:
                got = got_ds[var]
                compare(got, want, problems, engine)
                for key in ENCODED:
                    if key in want.encoding and not same(got.encoding.get(key), want.encoding[key]):
                        problems.append(f"{engine}: encoding {key} {got.encoding.get(key)!r}, want {want.encoding[key]!r}")
                for coord in want.coords:
                    if coord not in got.coords:
                        problems.append(f"{engine}: coordinate {coord} missing (has {list(got.coords)})")
                    else:
                        compare(got.coords[coord], want.coords[coord], problems, f"{engine} {coord}")
                mapping = want.attrs.get("grid_mapping")
                if mapping:
                    if mapping not in got_ds.variables:
                        problems.append(f"{engine}: grid mapping {mapping} missing")
                    else:
                        for key, value in want_ds[mapping].attrs.items():
                            if not same(got_ds[mapping].attrs.get(key), value):
                                problems.append(f"{engine}: {mapping}.{key} differs")
                if got_ds.attrs.get("Conventions") != "CF-1.10":
                    problems.append(f"{engine}: Conventions {got_ds.attrs.get('Conventions')!r}")
        if cdf2 and projected:
            # GDAL's netCDF driver: the CRS and the transform of the cell edges.
            gdal_check(file, var, want_ds, want, projected, problems)
        if not cdf2 and body[:4] != b"CDF\x05":
            problems.append(f"not a classic file: {body[:4]!r}")
        report(f"{name} ({body[:4].decode(errors='replace')!r}, {len(body)} bytes)", problems)
    for name, dataset, path, query, store, group, var, (ys, xs), epsg in GEOZARR:
        file = os.path.join(work, "case.nc")
        body, problems = download(dataset, path, query, file)
        ncdump_ok(file, problems)
        attrs = json.load(open(os.path.join(FIX, store, group, "zarr.json")))["attributes"]
        a, b, c, d, e, f = attrs["spatial:transform"]
        want_x = c + a * (np.arange(xs.start, xs.stop) + 0.5)
        want_y = f + e * (np.arange(ys.start, ys.stop) + 0.5)
        # The group's bands have other resolutions (dimensions of other sizes): read by zarr.
        stored = zarr.open_array(os.path.join(FIX, store, group, var), mode="r")
        with xr.open_dataset(file, engine="netcdf4", mask_and_scale=False) as got_ds:
            if not same(got_ds[var].values, stored[ys, xs]) or got_ds[var].dtype != stored.dtype:
                problems.append(f"values differ ({got_ds[var].dtype} vs {stored.dtype})")
            for key, value in stored.attrs.items():
                if not same(got_ds[var].attrs.get(key), value):
                    problems.append(f"attribute {key} = {got_ds[var].attrs.get(key)!r}, want {value!r}")
            if not same(got_ds["x"].values, want_x) or not same(got_ds["y"].values, want_y):
                problems.append("x/y are not the cell centres of the transform")
            # pyproj (PROJ) reads the CRS from the grid mapping as CF readers do.
            crs = pyproj.CRS.from_cf(got_ds[got_ds[var].attrs["grid_mapping"]].attrs)
            if crs.to_epsg() != epsg:
                problems.append(f"pyproj reads the grid mapping as {crs.to_epsg()}, not EPSG:{epsg}")
        report(f"{name} ({body[:4].decode(errors='replace')!r}, {len(body)} bytes)", problems)
    for name, cid, query, store, group, parameters, selection in EDR:
        file = os.path.join(work, "case.nc")
        url = f"{BASE}/edr/collections/{cid}/{query}&f=NetCDF".replace(" ", "%20")
        body, problems = download(cid, query.split("?")[0], None, file, url)
        ncdump_ok(file, problems)
        want_ds = xr.open_zarr(os.path.join(FIX, store), group=group, consolidated=False, decode_times=TIMES)
        want_ds = want_ds[parameters].sel(selection)
        for engine in ["netcdf4", "scipy"]:
            with xr.open_dataset(file, engine=engine, decode_times=TIMES) as got_ds:
                for p in parameters:
                    got, want = got_ds[p], want_ds[p].astype("f8")
                    if got.dtype != np.float64 or not same(got.values, want.values):
                        problems.append(f"{engine} {p}: values differ ({got.dtype}, {got.shape} vs {want.shape})")
                    for attr in ("units", "long_name"):
                        if attr in want.attrs and got.attrs.get(attr) != want.attrs[attr]:
                            problems.append(f"{engine} {p}: {attr} {got.attrs.get(attr)!r}")
                for coord in want_ds.coords:
                    if coord not in got_ds.coords or not same_labels(got_ds[coord].values, want_ds[coord].values):
                        problems.append(f"{engine}: coordinate {coord} differs")
        report(f"{name} ({body[:4].decode(errors='replace')!r}, {len(body)} bytes)", problems)
    edr_projected(work, f"{BASE}/edr/collections/hrrr/cube?bbox=-100,35,-90,40&f=NetCDF", "cube", "EDR")
    edr_projected(work, f"{BASE}/v1/slice/hrrr/t2m?sel=lat:35..40,lon:-100..-90&format=nc", "t2m", "sel=")
    projected_integers(work)
    for array in ("grid_2d_missing", "plain_1d", "scalar"):
        file = os.path.join(work, "case.nc")
        body, problems = download("strings", array, "s=", file)
        ncdump_ok(file, problems)
        want = np.asarray(zarr.open_array(os.path.join(FIX, "strings/data.zarr", array), mode="r")[...])
        for engine in ["netcdf4", "scipy"]:
            with xr.open_dataset(file, engine=engine) as got:
                values = np.asarray(got[array].values)
                if values.shape != want.shape or not all(str(g) == str(w) for g, w in zip(values.ravel(), want.ravel())):
                    problems.append(f"{engine}: the text differs")
        report(f"text as char: {array} ({body[:4].decode(errors='replace')!r}, {len(body)} bytes)", problems)
    print(f"bad {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
