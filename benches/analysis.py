"""Questions near the data, zarrd over HTTP against xarray in-process, in one run on the same
store (docs/performance.md "Questions near the data against xarray in-process"). Run by
benches/analysis.sh with a Python that has xarray (the trixie chroot's venv); never part of CI.

    python analysis.py STORE WARM_URL COLD_URL [ROUNDS] [DATA_URL]

STORE is the EDR peers' daily.zarr: t2m, 1096 daily steps on a 2 deg grid, time-major inner
chunks (274, 15, 15) in shards; t2m_map, the same values map-major, one chunk (1, 90, 180) a
day. WARM_URL is zarrd with its default caches, COLD_URL zarrd with the decoded-data caches
off, DATA_URL (optional) zarrd with only its response cache off (every answer read from
the decoded-chunk cache, none replayed); all serve the store as dataset `daily`.

Measured, each round pairing the two back to back (the ratio reported is the median of
the rounds' ratios, xarray time / zarrd time), for each of the two layouts:
- point series, warm: the whole time axis at random points, each asked before (zarrd's
  caches hot; xarray's dataset open, the files in the page cache), through `http.client`
  as `.npy` (what a script with the standard library does) and through a lean client (one
  keep-alive socket, `format=bin` read into `np.frombuffer`: the HTTP client's own cost
  out of the way, which is most of a warm answer's time), to the default server and to
  DATA_URL's, the two passes taking turns going first; the default server's replays from
  its response cache in those passes are counted from its `/metrics` and printed (none
  after the first round: a point asked again ten seconds later is read, not kept);
- point series, cold: new points each round, nothing reused from an earlier answer —
  zarrd with its data caches off (its metadata cached, as a running server's is), xarray
  opening the store for each point as a script does (also reported: xarray with the
  dataset kept open, "open");
- monthly area-weighted mean over a polygon (time-major): 36 months, the polygon's cells
  together (xarray: .where(mask).weighted(area).mean(lat, lon).resample(time="MS").mean()),
  warm (zarrd's caches hot, xarray's dataset open) and cold (caches off; xarray opening
  the store), one at a time and four at once (four threads each side).
Answers are compared first (series exactly, means to 1e-5 relative: xarray keeps float32).
Peak memory is measured by benches/analysis.sh on fresh servers.
"""
import concurrent.futures
import gzip
import http.client
import io
import socket
import statistics
import sys
import time
import urllib.parse
import urllib.request
import zlib

import numpy as np
import xarray as xr

STORE, WARM, COLD = sys.argv[1], sys.argv[2], sys.argv[3]
ROUNDS = int(sys.argv[4]) if len(sys.argv) > 4 else 3
DATA = sys.argv[5] if len(sys.argv) > 5 else None
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


class Lean:
    """One keep-alive socket: the request written in one call, the response read by its
    Content-Length, the values taken as they are (`format=bin`, `Zarr-Data-Type`)."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.host = f"{u.hostname}:{u.port}"
        self.sock = socket.create_connection((u.hostname, u.port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rest = b""

    def values(self, target):
        self.sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {self.host}\r\nAccept-Encoding: gzip, deflate\r\n\r\n"
                          .encode())
        buf = self.rest
        while (end := buf.find(b"\r\n\r\n")) < 0:
            buf += self.recv()
        lines = buf[:end].decode("latin-1").split("\r\n")
        fields = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
        n = int(fields["content-length"])
        body = buf[end + 4:]
        while len(body) < n:
            body += self.recv()
        self.rest, body = body[n:], body[:n]
        if not lines[0].startswith("HTTP/1.1 200"):
            raise SystemExit(f"{target}: {lines[0]} {body[:300]!r}")
        if fields.get("content-encoding", "identity") != "identity":
            raise SystemExit(f"unexpected Content-Encoding {fields['content-encoding']}")
        return np.frombuffer(body, dtype=fields["zarr-data-type"])

    def recv(self):
        got = self.sock.recv(1 << 20)
        if not got:
            raise SystemExit("the server closed the connection")
        return got


def points(rng, n):
    return [(float(rng.uniform(-80, 80)), float(rng.uniform(-180, 180))) for _ in range(n)]


def series_target(lat, lon, var="t2m", fmt="npy"):
    return f"/v1/slice/daily/{var}?sel=lat:~{lat:.4f},lon:~{lon:.4f}&format={fmt}"


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


def add(rows, detail, row, t_x, t_z):
    """One round's xarray and zarrd times (per answer) for `row`."""
    rows.setdefault(row, []).append(t_x / t_z)
    detail.setdefault(row, []).append((t_x, t_z))


def response_replays(url):
    """Answers zarrd at `url` has replayed from its response cache so far (`/metrics`)."""
    with urllib.request.urlopen(f"{url}/metrics") as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith('zarrd_cache_hits_total{cache="response"} '):
                return int(float(line.split()[-1]))
    return 0


def series_rows(ds, clients, hot_points, rng, rows, detail, replays, client_cpu, r):
    """The point-series rows of one round, for each layout (fewer points where xarray
    takes a third of a second per point). The lean client's two passes (the default
    server, the one with only its response cache off) take turns going first, round by
    round, so neither always follows the other; how many of the default server's
    answers were replays is kept in `replays`, the lean client's CPU per answer in
    `client_cpu`."""
    warm, cold, lean, data = clients
    for var, n in (("t2m", 24), ("t2m_map", 6)):
        da, tag, hot = ds[var], "time" if var == "t2m" else "map", hot_points[var]
        t_x = sum(timed(lambda p=p: xr_series(da, *p))[0] for p in hot) / len(hot)
        t_z = sum(timed(lambda p=p: warm.npy(series_target(*p, var)))[0] for p in hot) / len(hot)
        add(rows, detail, f"series_warm_{tag}", t_x, t_z)

        def lean_pass():
            before = response_replays(WARM)
            cpu = time.thread_time()
            t_l = sum(timed(lambda p=p: lean.values(series_target(*p, var, "bin")))[0] for p in hot) / len(hot)
            # The client's own share of each answer's time (its CPU: writing the request,
            # parsing the head, taking the values), counted in t_l and reported apart.
            client_cpu.setdefault(tag, []).append((time.thread_time() - cpu) / len(hot))
            replays.setdefault(tag, []).append(response_replays(WARM) - before)
            add(rows, detail, f"series_warm_lean_{tag}", t_x, t_l)

        def data_pass():
            # Asked once untimed first, as the lean client's default server has just
            # answered the `http.client` pass: a server idle a while starts with cold CPU
            # caches. Its response cache is off, so the timed pass is read, not replayed.
            for p in hot:
                data.values(series_target(*p, var, "bin"))
            t_d = sum(timed(lambda p=p: data.values(series_target(*p, var, "bin")))[0] for p in hot) / len(hot)
            add(rows, detail, f"series_warm_data_{tag}", t_x, t_d)

        passes = [lean_pass] + ([data_pass] if data is not None else [])
        for one in passes if r % 2 == 0 else passes[::-1]:
            one()
        fresh = points(rng, n)
        t_open = sum(timed(lambda p=p: xr_series(da, *p))[0] for p in fresh) / n
        t_x = sum(timed(lambda p=p: xr_series(xr.open_zarr(STORE, chunks=None)[var], *p))[0] for p in fresh) / n
        fresh = points(rng, n)
        t_z = sum(timed(lambda p=p: cold.npy(series_target(*p, var)))[0] for p in fresh) / n
        add(rows, detail, f"series_cold_{tag}", t_x, t_z)
        add(rows, detail, f"series_cold_open_{tag}", t_open, t_z)


def main():
    ds = xr.open_zarr(STORE, chunks=None)
    da = ds.t2m
    warm, cold, lean = Client(WARM), Client(COLD), Lean(WARM)
    data = Lean(DATA) if DATA else None
    rng = np.random.default_rng(2026)
    hot_points = {"t2m": points(rng, 24), "t2m_map": points(rng, 6)}
    # Correctness first: the same series from both, the same grid point, both layouts.
    for var, hot in hot_points.items():
        for lat, lon in hot[:4]:
            want = xr_series(ds[var], lat, lon)
            for got in (warm.npy(series_target(lat, lon, var)), lean.values(series_target(lat, lon, var, "bin")),
                        cold.npy(series_target(lat, lon, var))):
                assert np.array_equal(got, want.astype(got.dtype)), (var, lat, lon)
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

    def moved(k):
        """The polygon with a vertex moved by k e-9 degree: the same cells, another text,
        so no kept response is replayed."""
        return monthly_target.replace("12.0%2036.0", f"12.0000000{k:02d}%2036.0")

    got, want = warm.npy(monthly_target), xr_monthly()
    worst = float(np.max(np.abs(got - want) / np.abs(want)))
    assert got.shape == want.shape and worst < 1e-5, (got.shape, want.shape, worst)
    for var, hot in hot_points.items():
        for lat, lon in hot:
            warm.npy(series_target(lat, lon, var))
            lean.values(series_target(lat, lon, var, "bin"))
            if data is not None:
                assert np.array_equal(data.values(series_target(lat, lon, var, "bin")),
                                      lean.values(series_target(lat, lon, var, "bin")))
    rows, detail, replays, client_cpu = {}, {}, {}, {}
    four = concurrent.futures.ThreadPoolExecutor(4)

    def at_once(fn, args):
        """Wall time of fn(arg) for the four args, in four threads at once."""
        t = time.perf_counter()
        list(four.map(fn, args))
        return time.perf_counter() - t

    for r in range(ROUNDS):
        series_rows(ds, (warm, cold, lean, data), hot_points, rng, rows, detail, replays, client_cpu, r)
        warm.npy(monthly_target)
        t_x = min(timed(xr_monthly)[0] for _ in range(2))
        t_z = min(timed(lambda k=k: warm.npy(moved(k)))[0] for k in (8 * r + 1, 8 * r + 2))
        add(rows, detail, "polygon_warm", t_x, t_z)
        t_x = min(timed(lambda: xr_monthly(xr.open_zarr(STORE, chunks=None).t2m))[0] for _ in range(2))
        t_z = min(timed(lambda: cold.npy(monthly_target))[0] for _ in range(2))
        add(rows, detail, "polygon_cold", t_x, t_z)
        # Four at once: four threads each side, one connection each.
        clients = [Client(WARM) for _ in range(4)]
        t_x = at_once(lambda _: xr_monthly(), range(4))
        t_z = at_once(lambda i: clients[i].npy(moved(8 * r + 3 + i)), range(4))
        add(rows, detail, "polygon_warm_x4", t_x, t_z)
        clients = [Client(COLD) for _ in range(4)]
        t_x = at_once(lambda _: xr_monthly(xr.open_zarr(STORE, chunks=None).t2m), range(4))
        t_z = at_once(lambda i: clients[i].npy(monthly_target), range(4))
        add(rows, detail, "polygon_cold_x4", t_x, t_z)
    print(f"{'what':<22} {'xarray ms':>10} {'zarrd ms':>10} {'ratio (median of rounds)':>26}")
    for k, ratios in rows.items():
        xs = statistics.median(d[0] for d in detail[k]) * 1e3
        zs = statistics.median(d[1] for d in detail[k]) * 1e3
        print(f"ROW {k:<22} {xs:>10.2f} {zs:>10.3f} {statistics.median(ratios):>10.1f}x  rounds {[round(x, 1) for x in ratios]}")
    for tag, cpu in client_cpu.items():
        print(f"the lean client's own CPU per answer, {tag}-major (counted in its rows): "
              f"median {statistics.median(cpu) * 1e6:.0f} us, rounds {[round(c * 1e6) for c in cpu]}")
    for tag, counts in replays.items():
        print(f"response-cache replays in the lean passes of the default server, {tag}-major, by round: {counts}")
    print(f"monthly polygon mean: xarray and zarrd agree to {worst:.1e} relative")


if __name__ == "__main__":
    main()
