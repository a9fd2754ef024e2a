"""Expected values for the viewer's map in .ci/browser_viewer.cjs, as zarr-python + NumPy read
the map fixture (never zarrd): its coordinates, a point inside one cell off its centre, that
cell's value and its values along time, the CF dates decoded by NumPy, the sample's time
units, and the dates the viewer must print for CF times of every calendar it supports.

    python .ci/browser_expected_map.py STORE     (from the repository root; STORE is
                                                  tests/fixtures/maps/global_0360.zarr)

prints one JSON object, which .ci/browser.sh passes to browser_viewer.cjs as EXPECTED_MAP.
Run with the client venv's Python (zarr, NumPy).
"""

import json, sys
import numpy as np, zarr
g = zarr.open_group(sys.argv[1], mode="r")
lat, lon, t = g["lat"][:], g["lon"][:], g["time"]
t2m = g["t2m"]
units = t.attrs["units"]
assert units.startswith("days since ") and t.attrs.get("calendar", "standard") in ("standard", "gregorian", "proleptic_gregorian")
dates = [str(np.datetime64(units[len("days since "):], "D") + np.timedelta64(int(v), "D")) for v in t[:]]
iy, ix, k = 30, 100, 1  # lat[30] = 30 N, lon[100] = 200 E = 160 W
# A point inside the cell, 0.3 of the way to the next coordinate (cell edges are midway).
plat = float(lat[iy] + 0.3 * (lat[iy + 1] - lat[iy]))
plon = float(lon[ix] + 0.3 * (lon[ix + 1] - lon[ix]))
plon = (plon + 180) % 360 - 180
series = [None if np.isnan(v) else float(v) for v in t2m[:, iy, ix]]
def calendars():
    """CF dates the viewer must print: the standard calendar by NumPy's datetime64, the
    fixed-year calendars from their definition (months of 31/28/.. days, or of 30)."""
    cases = []
    def std(units, values, calendar="standard"):
        unit, since = units.split(" since ")
        step = {"days": "D", "hours": "h", "minutes": "m", "seconds": "s"}[unit]
        ref = np.datetime64(since.replace(" ", "T"), "s")
        dates = [ref + np.timedelta64(int(v), step) for v in values]
        timed = any(str(d)[11:] != "00:00:00" for d in dates)
        text = [str(d)[:16].replace("T", " ") if timed else str(d)[:10] for d in dates]
        cases.append({"units": units, "calendar": calendar, "values": values, "dates": text})
    std("days since 1850-01-01", [0, 59, 60, 365, 45000, 73048])
    std("hours since 1999-12-31 18:00:00", [0, 6, 30, 8790])
    std("seconds since 1970-01-01 00:00:00", [0, 86400, 951782400])
    # NumPy's calendar is the proleptic Gregorian (CF's standard is Julian before 1582-10-15).
    std("days since 0001-01-01", [0, 577737], "proleptic_gregorian")
    def fixed(calendar, months, values):
        out = []
        for v in values:
            y, d = 2001 + v // sum(months), v % sum(months)
            m = 0
            while d >= months[m]:
                d -= months[m]; m += 1
            out.append(f"{y:04d}-{m + 1:02d}-{d + 1:02d}")
        cases.append({"units": "days since 2001-01-01", "calendar": calendar, "values": values, "dates": out})
    fixed("noleap", [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], [0, 58, 59, 364, 365, 1460])
    fixed("360_day", [30] * 12, [0, 29, 30, 359, 360, 725])
    fixed("all_leap", [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], [0, 59, 365, 366])
    return cases

print(json.dumps({"dataset": "climate", "path": "t2m", "lat": plat, "lon": plon, "cell": [iy, ix], "k": k,
                  "cell_coords": [float(lat[iy]), float(lon[ix])],
                  "value": float(t2m[k, iy, ix]), "dates": dates, "series": series,
                  "units": t2m.attrs["units"], "long_name": t2m.attrs["long_name"],
                  # The sample's days: its CF time coordinate (int days since the epoch).
                  "sample_day": str(np.datetime64("2025-01-01", "D") + np.timedelta64(200, "D")),
                  "sample_units": json.load(open("data/sample.zarr/climate/time/zarr.json"))["attributes"]["units"],
                  "calendars": calendars()}))
