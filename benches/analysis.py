"""Questions near the data, zarrd over HTTP against xarray in-process, in one run on the same
store (docs/performance.md "Analysis near the data"). Run by benches/analysis.sh with a
Python that has xarray (the trixie chroot's venv); never part of CI.

    python analysis.py STORE WARM_URL COLD_URL [ROUNDS]

STORE is the EDR peers' daily.zarr (t2m: 1096 daily steps on a 2 deg grid, time-major
inner chunks (274, 15, 15) in shards). WARM_URL is zarrd with its default caches,
COLD_URL zarrd with the decoded-data caches off; both serve the store as dataset `daily`.

Measured, each round pairing the two back to back (the ratio reported is the median of
the rounds' ratios, xarray time / zarrd time):
- point series, warm: the whole time axis at 24 random points, each asked before (zarrd's
  caches hot; xarray's dataset open, the files in the page cache);
- point series, cold: new points each round, nothing reused from an earlier answer —
  zarrd with its data caches off (its metadata cached, as a running server's is), xarray
  opening the store for each point as a script does (also reported: xarray with the
  dataset kept open, "open");
- monthly area-weighted mean over a polygon: 36 months, the polygon's cells together
  (xarray: .where(mask).weighted(area).mean(lat, lon).resample(time="MS").mean()), warm
  (zarrd's caches hot, xarray's dataset open) and cold (caches off; xarray opening the
  store);
- memory: zarrd's peak resident memory after a whole-grid reduction over 1 and over 3
  years (flat when the reduction holds accumulators, not data).
Answers are compared (series exactly, means to 1e-5 relative: xarray keeps float32).
"""
import gzip
import http.client
import io
import statistics
import sys
import time
import urllib.parse
import zlib

import numpy as np
import xarray as xr

STORE, WARM, COLD = sys.argv[1], sys.argv[2], sys.argv[3]
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
# What Python HTTP clients (requests, urllib3) send.
HEADERS = {"Accept-Encoding": "gzip, deflate"}
R = 6371008.8
# Vertices off the grid (odd longitudes or even latitudes): no cell centre lies on an edge,
# where zarrd counts it inside and this even-odd test may not.
POLYGON = [(12.0, 36.0), (38.0, 38.0), (41.0, 55.0), (25.0, 61.0), (11.0, 52.0), (12.0, 36.0)]


class Client:
    """One keep-alive connection, bodies read whole."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port)

    def npy(self, target):
        self.conn.request("GET", target, headers=HEADERS)
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise SystemExit(f"{target}: {r.status} {body[:300]!r}")
        coding = r.getheader("Content-Encoding", "")
        if coding == "gzip":
            body = gzip.decompress(body)
        elif coding == "deflate":
            body = zlib.decompress(body)
        elif coding not in ("", "identity"):
            raise SystemExit(f"unexpected Content-Encoding {coding}")
        return np.load(io.BytesIO(body))


def points(rng, n):
    return [(float(rng.uniform(-80, 80)), float(rng.uniform(-180, 180))) for _ in range(n)]


def series_target(lat, lon):
    return f"/v1/slice/daily/t2m?sel=lat:~{lat:.4f},lon:~{lon:.4f}&format=npy"


def xr_series(da, lat, lon):
    return da.sel(lat=lat, lon=lon % 360, method="nearest").values


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def polygon_mask(lat, lon):
    """Cell centres inside POLYGON (even-odd, on an edge inside: none of these centres is)."""
    x, y = np.meshgrid(lon, lat)
    inside = np.zeros(x.shape, bool)
    for (x1, y1), (x2, y2) in zip(POLYGON[:-1], POLYGON[1:]):
        crosses = ((y1 > y) != (y2 > y)) & (x < (x2 - x1) * (y - y1) / (y2 - y1) + x1)
        inside ^= crosses
    return inside


def area_weights(lat, lon):
    def edges(c):
        return np.concatenate([[c[0] - (c[1] - c[0]) / 2], (c[1:] + c[:-1]) / 2, [c[-1] + (c[-1] - c[-2]) / 2]])
    le = np.clip(edges(lat), -90, 90)
    lo = edges(lon)
    fy = np.abs(np.diff(np.sin(np.deg2rad(le))))
    fx = np.abs(np.diff(np.deg2rad(lo))) * R * R
    return fy[:, None] * fx[None, :]


def vm(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1]) * 1024
    return 0


def main():
    ds = xr.open_zarr(STORE, chunks=None)
    da = ds.t2m
    warm, cold = Client(WARM), Client(COLD)
    rng = np.random.default_rng(2026)
    hot = points(rng, 24)
    # Correctness first: the same series from both, the same grid point.
    for lat, lon in hot[:4]:
        a, b = warm.npy(series_target(lat, lon)), xr_series(da, lat, lon)
        assert np.array_equal(a, b.astype(a.dtype)), (lat, lon)
    wkt = "POLYGON((" + ", ".join(f"{x} {y}" for x, y in POLYGON) + "))"
    region = da.sel(lat=slice(62, 34), lon=slice(8, 42))
    weights = xr.DataArray(area_weights(ds.lat.values, ds.lon.values), dims=("lat", "lon"),
                           coords={"lat": ds.lat, "lon": ds.lon}).sel(lat=region.lat, lon=region.lon)
    mask = xr.DataArray(polygon_mask(region.lat.values, region.lon.values), dims=("lat", "lon"),
                        coords={"lat": region.lat, "lon": region.lon})
    monthly_target = ("/v1/reduce/daily/t2m?op=mean&over=lat,lon&weights=area&resample=time:1M&format=npy&within="
                      + urllib.parse.quote(wkt))

    def xr_monthly(source=da):
        part = source.sel(lat=slice(62, 34), lon=slice(8, 42))
        return part.where(mask).weighted(weights).mean(("lat", "lon")).resample(time="MS").mean().values

    got, want = warm.npy(monthly_target), xr_monthly()
    worst = float(np.max(np.abs(got - want) / np.abs(want)))
    assert got.shape == want.shape and worst < 1e-5, (got.shape, want.shape, worst)
    for lat, lon in hot:
        warm.npy(series_target(lat, lon))
    rows = {k: [] for k in ("series_warm", "series_warm_dask", "series_cold", "series_cold_open", "polygon_warm",
                            "polygon_cold")}
    # xarray as opened by default (dask arrays), the way most scripts read.
    dask_da = xr.open_zarr(STORE).t2m
    detail = {k: [] for k in rows}
    for r in range(ROUNDS):
        t_x = sum(timed(lambda p=p: xr_series(da, *p))[0] for p in hot)
        t_z = sum(timed(lambda p=p: warm.npy(series_target(*p)))[0] for p in hot)
        rows["series_warm"].append(t_x / t_z)
        detail["series_warm"].append((t_x / len(hot), t_z / len(hot)))
        t_d = sum(timed(lambda p=p: xr_series(dask_da, *p))[0] for p in hot)
        rows["series_warm_dask"].append(t_d / t_z)
        detail["series_warm_dask"].append((t_d / len(hot), t_z / len(hot)))
        fresh = points(rng, 24)
        t_open = sum(timed(lambda p=p: xr_series(da, *p))[0] for p in fresh)
        t_x = sum(timed(lambda p=p: xr_series(xr.open_zarr(STORE, chunks=None).t2m, *p))[0] for p in fresh)
        fresh = points(rng, 24)
        t_z = sum(timed(lambda p=p: cold.npy(series_target(*p)))[0] for p in fresh)
        rows["series_cold"].append(t_x / t_z)
        detail["series_cold"].append((t_x / len(fresh), t_z / len(fresh)))
        rows["series_cold_open"].append(t_open / t_z)
        detail["series_cold_open"].append((t_open / len(fresh), t_z / len(fresh)))
        # Warm: the chunks cached, but each request another text (a vertex moved by 1e-9
        # degree, the same cells), so no kept response is replayed.
        warm.npy(monthly_target)
        t_x = min(timed(xr_monthly)[0] for _ in range(2))
        t_z = min(timed(lambda k=k: warm.npy(monthly_target.replace("12.0%2036.0", f"12.0000000{k:02d}%2036.0")))[0] for k in (2 * r + 1, 2 * r + 2))
        rows["polygon_warm"].append(t_x / t_z)
        detail["polygon_warm"].append((t_x, t_z))
        t_x = min(timed(lambda: xr_monthly(xr.open_zarr(STORE, chunks=None).t2m))[0] for _ in range(2))
        t_z = min(timed(lambda: cold.npy(monthly_target))[0] for _ in range(2))
        rows["polygon_cold"].append(t_x / t_z)
        detail["polygon_cold"].append((t_x, t_z))
    print(f"{'what':<18} {'xarray ms':>10} {'zarrd ms':>10} {'ratio (median of rounds)':>26}")
    for k, ratios in rows.items():
        xs = statistics.median(d[0] for d in detail[k]) * 1e3
        zs = statistics.median(d[1] for d in detail[k]) * 1e3
        print(f"ROW {k:<14} {xs:>10.2f} {zs:>10.2f} {statistics.median(ratios):>14.1f}x  rounds {[round(x, 1) for x in ratios]}")
    print(f"monthly polygon mean: xarray and zarrd agree to {worst:.1e} relative")


def memory(pid):
    """Peak resident memory of zarrd (cold port) after whole-grid reductions over 1 and 3 years."""
    cold = Client(COLD)
    base = vm(pid, "VmHWM")
    out = [("start", base)]
    for years, sel in ((1, "time:2020-01-01..2020-12-31"), (3, "time:2020-01-01..")):
        cold.npy(f"/v1/reduce/daily/t2m?op=mean&over=time&sel={sel}&format=npy")
        out.append((f"{years} year(s), whole grid, op=mean over time", vm(pid, "VmHWM")))
    for what, hwm in out:
        print(f"ROW memory {what:<40} VmHWM {hwm / 2**20:8.1f} MiB")


if __name__ == "__main__":
    main()
    if len(sys.argv) > 5:
        memory(int(sys.argv[5]))
