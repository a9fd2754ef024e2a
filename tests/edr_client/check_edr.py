"""Real OGC API - EDR clients against zarrd's /edr.

Usage: python check_edr.py BASE_URL        (run by .ci/edr_clients.sh)

zarrd serves (see .ci/fixture_zarrd.sh and .ci/edr_clients.sh) the datasets `analysis`
(tests/fixtures/analysis/analysis.zarr), `edr` (tests/fixtures/edr/edr.zarr) and `ic` (the
versioned Icechunk repository tests/fixtures/virtual/icechunk/virtual.icechunk). Checked:

- OWSLib (`owslib.ogcapi.edr.EnvironmentalDataRetrieval(BASE + "/edr")`, the requests it
  sends: `/edr/` with a slash, no `f`, `Accept: */*`, `parameter_names`, `datetime`, WKT
  `coords` with spaces as `+`): the landing page, `api()`, `conformance()`, `collections()`,
  `collection(id)`, and `query_data(cid, "position" | "area" | "cube" | "radius", ...)` on
  `analysis:daily`, whose answers must be CoverageJSON of the documented shape (domain type,
  axes, axisNames, shape) holding the values that zarr-python reads from the fixture store
  itself (CF-decoded here: `_FillValue`, `scale_factor`/`add_offset`), in the cells the
  documented rules take (nearest label; centres inside a polygon, a bbox, a great circle).
- edr-pydantic: the landing page, conformance, the collections list, every collection
  document, and the instances (list and each instance) of every versioned collection.
- covjson-pydantic: every CoverageJSON answer here (position Point, PointSeries,
  VerticalProfile where a collection has levels, Grids from area/cube/radius, a MULTIPOINT
  CoverageCollection, a position and a small cube in every collection).
- tests/fixtures/edr/cases.json (answers computed with xarray): every 200 CoverageJSON case
  through OWSLib's `query_data` when OWSLib can send its parameters (else plain requests),
  validated with covjson-pydantic and compared with the case (type, domainType, axes,
  axisNames, shape, values); the GeoJSON and CSV cases compared; the error cases' status and
  problem detail.

covjson-pydantic 0.8.0 (and edr-pydantic 0.7.0 for `extent.temporal.interval`) parses
time values as Gregorian date-times, so it rejects `2000-02-30T00:00:00Z` in a 360_day
calendar, which CoverageJSON allows (ISO 8601 is only the lexical form there). Such a body
is validated again with those values moved to a valid day, and counted as a validator
limitation, not a failure, when they were the only errors and the TemporalRS names a
non-Gregorian calendar.

Prints "edr-clients: N passed, N failed" (and the limitations) and exits 1 on any failure.
"""

from __future__ import annotations

import base64
import calendar
import copy
import json
import math
import re
import struct
import sys
import traceback
from importlib.metadata import version
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import requests
import zarr
from covjson_pydantic.coverage import Coverage, CoverageCollection
from edr_pydantic.capabilities import ConformanceModel, LandingPageModel
from edr_pydantic.collections import Collection, Collections, Instances
from owslib.ogcapi.edr import EnvironmentalDataRetrieval
from pydantic import ValidationError

ROOT = Path(__file__).resolve().parent.parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
ANALYSIS = FIXTURES / "analysis" / "analysis.zarr"
EDR_CASES = FIXTURES / "edr" / "cases.json"
DAILY = "analysis:daily"
C360 = "analysis:calendars:c360"
VERSIONED = "ic"  # .ci/edr_clients.sh's Icechunk dataset
R_EARTH_KM = 6371.0088
COVJSON_TYPES = ("application/prs.coverage+json", "application/vnd.cov+json")
TIMEOUT = 120

BASE = ""
EDR = ""


# --- tally -------------------------------------------------------------------------------


class Tally:
    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []
        self.limits: list[str] = []
        self.skipped: list[str] = []

    def run(self, name: str, fn, *args, **kwargs):
        try:
            out = fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure is reported, then the run goes on
            msg = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, (AssertionError, ValidationError, RuntimeError)):
                msg += "\n" + "".join(traceback.format_exception(exc)[-4:])
            self.failed.append(f"{name}: {msg}")
            print(f"FAIL {name}: {msg}", flush=True)
            return None
        self.passed += 1
        print(f"ok   {name}", flush=True)
        return out


T = Tally()


# --- HTTP ----------------------------------------------------------------------------------


def get(path: str, params=None, headers=None, status: int = 200) -> requests.Response:
    url = path if path.startswith("http") else EDR + path
    r = requests.get(url, params=params, headers=headers or {}, timeout=TIMEOUT)
    if r.status_code != status:
        raise AssertionError(f"GET {r.url} -> {r.status_code} (want {status}): {r.text[:600]}")
    return r


def get_json(path: str, params=None, headers=None) -> tuple[requests.Response, dict]:
    r = get(path, params, headers)
    try:
        return r, r.json()
    except ValueError as exc:
        raise AssertionError(f"GET {r.url}: not JSON ({r.headers.get('content-type')}): {r.text[:300]}") from exc


def covjson_get(path: str, params=None, headers=None) -> tuple[requests.Response, dict]:
    r, doc = get_json(path, params, headers)
    ctype = r.headers.get("content-type", "").split(";")[0].strip()
    assert ctype in COVJSON_TYPES, f"GET {r.url}: Content-Type {ctype!r}, want one of {COVJSON_TYPES}"
    validate_covjson(r.text, r.url)
    return r, doc


# --- validators ------------------------------------------------------------------------------

_ISO = re.compile(r"^(-?\d{4,})-(\d{2})-(\d{2})(T.*)$")


def _valid_gregorian(value: str) -> str:
    """`value` with an impossible Gregorian day (Feb 29 of a common year, Feb 30, ...) moved
    to the last day of its month: a stand-in only used to validate the rest of a body."""
    m = _ISO.match(value) if isinstance(value, str) else None
    if not m:
        return value
    year, month, day = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if not (1 <= month <= 12) or not (1 <= year <= 9999):
        return value
    last = calendar.monthrange(year, month)[1]
    if day <= last:
        return value
    return f"{m.group(1)}-{m.group(2)}-{last:02d}{m.group(4)}"


def _calendars(doc: dict) -> list[str]:
    out = []

    def walk(refs):
        for ref in refs or []:
            system = ref.get("system", {}) if isinstance(ref, dict) else {}
            if system.get("type") == "TemporalRS":
                out.append(system.get("calendar"))

    walk(doc.get("referencing"))
    if isinstance(doc.get("domain"), dict):
        walk(doc["domain"].get("referencing"))
    for cov in doc.get("coverages", []) or []:
        if isinstance(cov.get("domain"), dict):
            walk(cov["domain"].get("referencing"))
    return out


def _fix_t(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    domains = [doc.get("domain")] + [c.get("domain") for c in doc.get("coverages", []) or []]
    for dom in domains:
        if isinstance(dom, dict) and isinstance(dom.get("axes", {}).get("t"), dict):
            t = dom["axes"]["t"]
            for key in ("values", "bounds"):
                if isinstance(t.get(key), list):
                    t[key] = [_valid_gregorian(v) for v in t[key]]
    return doc


def validate_covjson(text: str, where: str) -> None:
    """covjson-pydantic 0.8.0 on a CoverageJSON body (Coverage or CoverageCollection)."""
    doc = json.loads(text)
    model = CoverageCollection if doc.get("type") == "CoverageCollection" else Coverage
    try:
        model.model_validate_json(text)
        return
    except ValidationError as exc:
        errors = exc.errors()
        t_only = all(
            e["type"] in ("datetime_from_date_parsing", "datetime_parsing")
            and "t" in e["loc"]
            and "axes" in e["loc"]
            for e in errors
        )
        cals = _calendars(doc)
        if not (t_only and cals and all(c not in (None, "Gregorian") for c in cals)):
            raise AssertionError(f"{where}: covjson-pydantic {model.__name__} rejects the body: {exc}") from None
        try:
            model.model_validate_json(json.dumps(_fix_t(doc)))
        except ValidationError as again:
            raise AssertionError(f"{where}: covjson-pydantic {model.__name__}: {again}") from None
        bad = sorted({str(e["input"]) for e in errors})
        T.limits.append(
            f"{where}: covjson-pydantic rejects {len(errors)} t values of calendar {cals[0]} "
            f"that are not Gregorian dates (e.g. {bad[0]}); the rest of the body validates"
        )


def validate_edr(model, text: str, where: str) -> None:
    """edr-pydantic 0.7.0 on a JSON document (strict: validated from the JSON text)."""
    try:
        model.model_validate_json(text)
        return
    except ValidationError as exc:
        errors = exc.errors()
        if not all(e["type"] == "datetime_parsing" and "interval" in e["loc"] for e in errors):
            raise AssertionError(f"{where}: edr-pydantic {model.__name__} rejects the document: {exc}") from None
        doc = json.loads(text)

        def fix(node):
            if isinstance(node, dict):
                return {k: ([[_valid_gregorian(v) for v in pair] for pair in val] if k == "interval" else fix(val))
                        for k, val in node.items()}
            if isinstance(node, list):
                return [fix(v) for v in node]
            return node

        try:
            model.model_validate_json(json.dumps(fix(doc)))
        except ValidationError as again:
            raise AssertionError(f"{where}: edr-pydantic {model.__name__}: {again}") from None
        T.limits.append(
            f"{where}: edr-pydantic rejects temporal intervals that are not Gregorian dates "
            f"({sorted({str(e['input']) for e in errors})}); the rest validates"
        )


# --- expected values: zarr-python on the fixture store, CF-decoded here ----------------------


def _attr_number(value):
    if isinstance(value, str):  # xarray writes float fills as base64 of a little-endian float64
        return struct.unpack("<d", base64.b64decode(value))[0]
    return value


def decode(array, selection) -> np.ndarray:
    raw = np.asarray(array[selection])
    out = raw.astype(np.float64)
    attrs = dict(array.attrs)
    missing = np.zeros(raw.shape, dtype=bool)
    for key in ("_FillValue", "missing_value"):
        if key in attrs:
            for fill in np.atleast_1d(attrs[key]):
                fill = _attr_number(fill)
                missing |= np.isnan(out) if isinstance(fill, float) and math.isnan(fill) else out == fill
    out = out * float(attrs.get("scale_factor", 1.0)) + float(attrs.get("add_offset", 0.0))
    out[missing | np.isnan(out)] = np.nan
    return out


class Grid:
    """One group of the analysis store: its coordinates and CF-decoded arrays."""

    def __init__(self, group: str) -> None:
        self.group = zarr.open_group(str(ANALYSIS), mode="r", path=group)
        self.lat = np.asarray(self.group["lat"][:], dtype=np.float64)
        self.lon = np.asarray(self.group["lon"][:], dtype=np.float64)

    def values(self, name: str, selection) -> np.ndarray:
        return decode(self.group[name], selection)

    def nearest_lat(self, lat: float) -> int:
        return int(np.argmin(np.abs(self.lat - lat)))  # first minimum: ties to the lower index

    def nearest_lon(self, lon: float) -> int:
        d = np.abs((self.lon - lon + 180.0) % 360.0 - 180.0)
        return int(np.argmin(d))

    def centres(self):
        """(i, j, lon in -180..180, lat) of every cell."""
        for i, la in enumerate(self.lat):
            for j, lo in enumerate(self.lon):
                yield i, j, ((lo + 180.0) % 360.0) - 180.0, la


NOLEAP_MONTHS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def noleap(day: int, year0: int = 2001) -> str:
    """`days since {year0}-01-01` in the noleap calendar, as CoverageJSON writes it."""
    year = year0 + day // 365
    day %= 365
    month = 0
    while day >= NOLEAP_MONTHS[month]:
        day -= NOLEAP_MONTHS[month]
        month += 1
    return f"{year:04d}-{month + 1:02d}-{day + 1:02d}T00:00:00Z"


def c360(day: int, year0: int = 2000) -> str:
    return f"{year0 + day // 360:04d}-{(day % 360) // 30 + 1:02d}-{day % 30 + 1:02d}T00:00:00Z"


def point_in_polygon(x: float, y: float, ring: list[tuple[float, float]]) -> bool:
    inside = False
    n = len(ring)
    for k in range(n - 1):
        (x1, y1), (x2, y2) = ring[k], ring[k + 1]
        if (y1 > y) != (y2 > y) and x < (x2 - x1) * (y - y1) / (y2 - y1) + x1:
            inside = not inside
    return inside


def edge_distance(x: float, y: float, ring) -> float:
    best = math.inf
    for (x1, y1), (x2, y2) in zip(ring, ring[1:]):
        dx, dy = x2 - x1, y2 - y1
        u = max(0.0, min(1.0, ((x - x1) * dx + (y - y1) * dy) / (dx * dx + dy * dy)))
        best = min(best, math.hypot(x - (x1 + u * dx), y - (y1 + u * dy)))
    return best


def great_circle_km(lon1, lat1, lon2, lat2) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * R_EARTH_KM * math.asin(min(1.0, math.sqrt(h)))


# --- CoverageJSON shape checks ---------------------------------------------------------------


def axis_values(cov: dict, name: str) -> list:
    axis = cov["domain"]["axes"].get(name)
    assert axis is not None, f"no {name!r} axis: {list(cov['domain']['axes'])}"
    if "values" in axis:
        return axis["values"]
    start, stop, num = axis["start"], axis["stop"], axis["num"]
    return [start + k * (stop - start) / (num - 1) for k in range(num)] if num > 1 else [start]


def same_lon(got: float, want: float) -> bool:
    return abs(((got - want + 180.0) % 360.0) - 180.0) < 1e-9


def close(got, want) -> bool:
    if want is None or (isinstance(want, float) and math.isnan(want)):
        return got is None
    if got is None:
        return False
    return abs(got - want) <= 1e-9 * max(1.0, abs(want))


def assert_values(where: str, got: list, want: np.ndarray) -> None:
    want = [None if math.isnan(v) else float(v) for v in np.ravel(want)]
    assert len(got) == len(want), f"{where}: {len(got)} values, want {len(want)}"
    bad = [(k, g, w) for k, (g, w) in enumerate(zip(got, want)) if not close(g, w)]
    assert not bad, f"{where}: {len(bad)} values differ, first (index, got, want): {bad[:5]}"


def check_referencing(cov_or_collection: dict, domain: dict, calendar_want: str | None) -> None:
    refs = domain.get("referencing") or cov_or_collection.get("referencing") or []
    assert refs, "no referencing"
    by_coord = {tuple(r["coordinates"]): r["system"] for r in refs}
    xy = by_coord.get(("x", "y"))
    assert xy and xy["type"] == "GeographicCRS", f"x/y referencing: {refs}"
    assert "CRS84" in xy.get("id", ""), f"x/y system is not CRS84: {xy}"
    if calendar_want is not None:
        trs = by_coord.get(("t",))
        assert trs and trs["type"] == "TemporalRS", f"t referencing: {refs}"
        assert trs["calendar"] == calendar_want, f"calendar {trs['calendar']!r}, want {calendar_want!r}"


def check_point_series(doc, grid: Grid, lon, lat, times: list[str], values: dict[str, np.ndarray], calendar_want):
    """A position answer for one point: Point (one step) or PointSeries (several)."""
    assert doc["type"] == "Coverage", doc["type"]
    dom = doc["domain"]
    want_type = "Point" if len(times) == 1 else "PointSeries"
    assert dom.get("domainType") == want_type, f"domainType {dom.get('domainType')}, want {want_type}"
    i, j = grid.nearest_lat(lat), grid.nearest_lon(lon)
    x, y = axis_values(doc, "x"), axis_values(doc, "y")
    assert len(x) == 1 and same_lon(x[0], grid.lon[j]), f"x {x}, want the cell centre {grid.lon[j]} (mod 360)"
    assert -180.0 <= x[0] <= 180.0, f"x {x} is not a CRS84 longitude"
    assert y == [grid.lat[i]], f"y {y}, want the cell centre {grid.lat[i]}"
    assert axis_values(doc, "t") == times, f"t {axis_values(doc, 't')[:5]}..., want {times[:5]}..."
    check_referencing(doc, dom, calendar_want)
    assert set(doc["ranges"]) == set(values), f"ranges {list(doc['ranges'])}, want {list(values)}"
    assert set(doc["parameters"]) == set(values), f"parameters {list(doc['parameters'])}"
    for name, want in values.items():
        rng = doc["ranges"][name]
        assert rng["type"] == "NdArray", rng["type"]
        if want_type == "PointSeries":
            assert rng.get("axisNames") == ["t"] and rng.get("shape") == [len(times)], (
                f"{name}: axisNames {rng.get('axisNames')} shape {rng.get('shape')}, want ['t'] [{len(times)}]")
        assert_values(name, rng["values"], want)
    return i, j


def check_grid(doc, grid: Grid, taken: np.ndarray, times: list[str] | None, values: dict[str, np.ndarray], calendar_want):
    """An area/cube/radius answer: a Grid over the bounding box of the taken cells (`taken`:
    lat x lon booleans over the whole grid, no seam crossing), cells not taken null.
    `values[name]`: (time, lat, lon) decoded values of the whole grid at the selected steps."""
    assert doc["type"] == "Coverage", doc["type"]
    dom = doc["domain"]
    assert dom.get("domainType") == "Grid", f"domainType {dom.get('domainType')}"
    rows, cols = np.nonzero(taken)
    i0, i1, j0, j1 = rows.min(), rows.max(), cols.min(), cols.max()
    x, y = axis_values(doc, "x"), axis_values(doc, "y")
    assert y == [float(v) for v in grid.lat[i0 : i1 + 1]], f"y {y}, want {grid.lat[i0 : i1 + 1].tolist()}"
    want_x = grid.lon[j0 : j1 + 1]
    assert len(x) == len(want_x) and all(same_lon(g, w) for g, w in zip(x, want_x)), f"x {x}, want {want_x} (mod 360)"
    assert all(b > a for a, b in zip(x, x[1:])), f"x not increasing: {x}"
    names = ["y", "x"]
    if times is not None:
        assert axis_values(doc, "t") == times, f"t {axis_values(doc, 't')}, want {times}"
        names = ["t", "y", "x"]
    check_referencing(doc, dom, calendar_want)
    assert set(doc["ranges"]) == set(values), f"ranges {list(doc['ranges'])}, want {list(values)}"
    box = taken[i0 : i1 + 1, j0 : j1 + 1]
    for name, full in values.items():
        rng = doc["ranges"][name]
        shape = ([len(times)] if times is not None else []) + [len(y), len(x)]
        assert rng.get("axisNames") == names and rng.get("shape") == shape, (
            f"{name}: axisNames {rng.get('axisNames')} shape {rng.get('shape')}, want {names} {shape}")
        want = np.array(full[..., i0 : i1 + 1, j0 : j1 + 1], dtype=np.float64)
        want[..., ~box] = np.nan
        assert_values(name, rng["values"], want)
    return int(box.sum())


# --- the checks --------------------------------------------------------------------------------

CONFORMANCE_WORDS = ["core", "collections", "json", "covjson", "geojson", "queries"]


def check_landing(client: EnvironmentalDataRetrieval):
    for path in ("", "/"):
        r, doc = get_json(path)
        validate_edr(LandingPageModel, r.text, r.url)
        rels = {link["rel"]: link for link in doc["links"]}
        for rel in ("self", "conformance", "data", "service-desc"):
            assert rel in rels, f"{r.url}: no {rel!r} link: {list(rels)}"
        assert rels["service-desc"].get("type") == "application/vnd.oai.openapi+json;version=3.0", rels["service-desc"]
    # OWSLib's own reading: the landing links it kept, and the OpenAPI document it follows.
    assert any(link.get("rel") == "service-desc" for link in client.links), client.links
    api = client.api()
    assert str(api.get("openapi", "")).startswith("3.0"), f"api(): openapi {api.get('openapi')!r}"
    paths = api.get("paths", {})
    assert any("position" in p for p in paths), f"api(): no position path in {list(paths)[:20]}"


def check_conformance(client: EnvironmentalDataRetrieval):
    r, doc = get_json("/conformance")
    validate_edr(ConformanceModel, r.text, r.url)
    assert client.conformance() == doc
    classes = doc["conformsTo"]
    for word in CONFORMANCE_WORDS:
        assert any(c.rstrip("/").endswith("/" + word) for c in classes), f"no conformance class .../{word}: {classes}"


def check_collections(client: EnvironmentalDataRetrieval) -> dict:
    r, doc = get_json("/collections")
    validate_edr(Collections, r.text, r.url)
    listed = client.collections()
    assert listed == doc, "OWSLib's collections() differs from GET /edr/collections"
    ids = [c["id"] for c in doc["collections"]]
    assert len(set(ids)) == len(ids), f"duplicate ids: {ids}"
    for want in (DAILY, C360, "analysis:calendars:julian", "analysis:calendars:all_leap",
                 "analysis:calendars:standard_hours", "analysis:irregular"):
        assert want in ids, f"collection {want!r} missing: {ids}"
    assert "analysis" not in ids, "the analysis root group holds no grid arrays, yet it is a collection"
    assert any(i == "edr" or i.startswith("edr:") for i in ids), f"no collection of the edr dataset: {ids}"
    return {c["id"]: c for c in doc["collections"]}


def check_collection(client: EnvironmentalDataRetrieval, cid: str, listed: dict) -> dict:
    r, doc = get_json(f"/collections/{cid}")
    validate_edr(Collection, r.text, r.url)
    assert client.collection(cid) == doc
    assert doc["id"] == cid, doc["id"]
    for key in ("extent", "parameter_names", "data_queries", "crs", "output_formats"):
        assert doc.get(key) == listed.get(key), f"{cid}: {key} differs from its entry in /edr/collections"
    # CRS84, and on a projected grid with an EPSG code that code's URI (API.md).
    code = PROJECTED.get(cid, (None, None))[1]
    want = ["CRS84"] + ([f"http://www.opengis.net/def/crs/EPSG/0/{code}"] if code else [])
    assert doc.get("crs") == want, doc.get("crs")
    # EDR 1.1 A.13: a collection with a radius query names its distance units.
    assert doc.get("distanceunits") == ["km", "m", "mi"], doc.get("distanceunits")
    fmts = doc.get("output_formats") or []
    for f in ("CoverageJSON", "GeoJSON", "CSV"):
        assert f in fmts, f"output_formats {fmts}"
    queries = doc.get("data_queries") or {}
    for q in ("position", "area", "cube", "radius"):
        assert q in queries, f"data_queries {list(queries)}"
        href = queries[q]["link"]["href"]
        assert href.rstrip("/").endswith(f"/collections/{cid}/{q}"), f"{q}: href {href}"
    bbox = doc["extent"]["spatial"]["bbox"][0]
    assert -180 <= bbox[0] <= 180 and -180 <= bbox[2] <= 180 and bbox[1] < bbox[3], f"bbox {bbox}"
    return doc


def check_daily_document(doc: dict):
    assert doc["extent"]["spatial"]["bbox"] == [[-180, -90, 180, 90]], doc["extent"]["spatial"]["bbox"]
    temporal = doc["extent"]["temporal"]
    assert temporal["interval"] == [["2001-01-01T00:00:00Z", "2003-12-31T00:00:00Z"]], temporal["interval"]
    assert len(temporal["values"]) == 1095, len(temporal["values"])
    assert temporal["values"][:2] == ["2001-01-01T00:00:00Z", "2001-01-02T00:00:00Z"], temporal["values"][:2]
    assert temporal["values"][58:60] == ["2001-02-28T00:00:00Z", "2001-03-01T00:00:00Z"], "noleap steps"
    params = doc["parameter_names"]
    assert set(params) == {"tas", "pr"}, f"parameter_names {list(params)} (nino34 has no lat/lon)"
    assert params["tas"]["observedProperty"]["label"] == "near-surface air temperature", params["tas"]
    assert params["pr"]["observedProperty"]["label"] == "precipitation", params["pr"]
    assert "vertical" not in doc["extent"], "daily has no levels"


def check_c360_document(doc: dict):
    temporal = doc["extent"]["temporal"]
    assert temporal["interval"] == [["2000-01-01T00:00:00Z", "2001-12-30T00:00:00Z"]], temporal["interval"]
    assert len(temporal["values"]) == 720 and temporal["values"][59] == "2000-02-30T00:00:00Z", temporal["values"][55:62]
    assert "360_day" in temporal["trs"], f"trs {temporal['trs']!r} does not name the 360_day calendar"


def check_advertises_instances(doc: dict | None):
    assert doc, f"no collection document for {VERSIONED}"
    queries = doc.get("data_queries") or {}
    assert "instances" in queries, (
        f"{VERSIONED} is a versioned (Icechunk) dataset, yet its data_queries are {sorted(queries)}: no instances")
    href = queries["instances"]["link"]["href"]
    assert href.rstrip("/").endswith(f"/collections/{VERSIONED}/instances"), href


def check_instances(cid: str):
    r, doc = get_json(f"/collections/{cid}/instances")
    validate_edr(Instances, r.text, r.url)
    ids = [i["id"] for i in doc["instances"]]
    assert "main" in ids, f"instances {ids}: no branch main"
    for iid in ids:
        r2, inst = get_json(f"/collections/{cid}/instances/{iid}")
        validate_edr(Collection, r2.text, r2.url)
        assert inst["id"] == iid, inst["id"]
    # A position query on the main instance: a valid coverage of the collection's first parameter.
    bbox = inst["extent"]["spatial"]["bbox"][0]
    lon, lat = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    param = next(iter(doc["instances"][0]["parameter_names"]))
    _, cov = covjson_get(f"/collections/{cid}/instances/main/position",
                         {"coords": f"POINT({lon} {lat})", "parameter-name": param})
    assert cov["type"] == "Coverage" and param in cov["ranges"], list(cov.get("ranges", {}))
    return len(ids)


def owslib_position(client, daily: Grid):
    """OWSLib: one point, 11 days with missing values (2001-02-10.. at that cell)."""
    cov = client.query_data(DAILY, "position", coords="POINT(-75.2 45.3)", datetime_="2001-02-05/2001-02-15",
                            parameter_names=["tas"])
    assert "parameter_names=tas" in client.request and "POINT%28-75.2+45.3%29" in client.request, client.request
    validate_covjson(json.dumps(cov), client.request)
    i, j = daily.nearest_lat(45.3), daily.nearest_lon(-75.2)
    assert (i, j) == (17, 114), (i, j)
    check_point_series(cov, daily, -75.2, 45.3, [noleap(d) for d in range(35, 46)],
                       {"tas": daily.values("tas", (slice(35, 46), i, j))}, "https://cfconventions.org/calendars/noleap")
    assert cov["ranges"]["tas"]["values"][5] is None, "2001-02-10 is missing at that cell"


def owslib_point(client, daily: Grid):
    """OWSLib: an instant takes the nearest step (13:00 is nearer the next day); two parameters."""
    cov = client.query_data(DAILY, "position", coords="POINT(-75.2 45.3)", datetime_="2001-03-01T13:00:00Z",
                            parameter_names=["tas", "pr"])
    validate_covjson(json.dumps(cov), client.request)
    check_point_series(cov, daily, -75.2, 45.3, [noleap(60)],
                       {n: daily.values(n, (slice(60, 61), 17, 114)) for n in ("tas", "pr")},
                       "https://cfconventions.org/calendars/noleap")


TRIANGLE = [(-80.1, 40.1), (-69.9, 40.1), (-80.1, 49.9), (-80.1, 40.1)]


def owslib_area(client, daily: Grid):
    """OWSLib: a triangle, one day: a Grid over the cells whose centre is inside, the others null."""
    wkt = "POLYGON((" + ",".join(f"{x} {y}" for x, y in TRIANGLE) + "))"
    cov = client.query_data(DAILY, "area", coords=wkt, datetime_="2001-01-01", parameter_names=["tas"])
    validate_covjson(json.dumps(cov), client.request)
    taken = np.zeros((daily.lat.size, daily.lon.size), dtype=bool)
    for i, j, lo, la in daily.centres():
        if point_in_polygon(lo, la, TRIANGLE):
            assert edge_distance(lo, la, TRIANGLE) > 1e-6, "the oracle: a centre on an edge"
            taken[i, j] = True
    n = check_grid(cov, daily, taken, [noleap(0)], {"tas": daily.values("tas", (slice(0, 1), slice(None), slice(None)))},
                   "https://cfconventions.org/calendars/noleap")
    nulls = sum(v is None for v in cov["ranges"]["tas"]["values"])
    assert n >= 5 and nulls >= 3, f"{n} cells taken, {nulls} nulls: the triangle should leave some out"


def owslib_cube(client, daily: Grid):
    """OWSLib: a bbox, three days, tas and the packed pr (scale_factor, add_offset, _FillValue)."""
    cov = client.query_data(DAILY, "cube", bbox=[-80.1, 40.1, -69.9, 49.9], datetime_="2001-01-10/2001-01-12",
                            parameter_names=["tas", "pr"])
    assert "bbox=-80.1%2C40.1%2C-69.9%2C49.9" in client.request, client.request
    validate_covjson(json.dumps(cov), client.request)
    taken = np.zeros((daily.lat.size, daily.lon.size), dtype=bool)
    for i, j, lo, la in daily.centres():
        taken[i, j] = -80.1 <= lo <= -69.9 and 40.1 <= la <= 49.9
    full = {n: daily.values(n, (slice(9, 12), slice(None), slice(None))) for n in ("tas", "pr")}
    n = check_grid(cov, daily, taken, [noleap(d) for d in range(9, 12)], full, "https://cfconventions.org/calendars/noleap")
    assert n == 4 * 5, f"{n} cells, want 4 x 5"


def owslib_radius(client, daily: Grid):
    """OWSLib (no within-units: km by default): cells within 300 km along a great circle; the
    same with within=300000&within-units=m."""
    cov = client.query_data(DAILY, "radius", coords="POINT(-75.2 45.3)", within=300, datetime_="2001-01-01",
                            parameter_names=["tas"])
    validate_covjson(json.dumps(cov), client.request)
    taken = np.zeros((daily.lat.size, daily.lon.size), dtype=bool)
    for i, j, lo, la in daily.centres():
        d = great_circle_km(-75.2, 45.3, lo, la)
        assert abs(d - 300) > 1e-6, "the oracle: a centre at the distance"
        taken[i, j] = d <= 300
    n = check_grid(cov, daily, taken, [noleap(0)], {"tas": daily.values("tas", (slice(0, 1), slice(None), slice(None)))},
                   "https://cfconventions.org/calendars/noleap")
    assert n >= 5, n
    _, in_m = covjson_get(f"/collections/{DAILY}/radius", {"coords": "POINT(-75.2 45.3)", "within": "300000",
                                                          "within-units": "m", "datetime": "2001-01-01",
                                                          "parameter-name": "tas"})
    assert in_m == cov, "within=300000&within-units=m differs from within=300 (km)"


def multipoint(daily: Grid):
    """MULTIPOINT: a CoverageCollection of one Point per point, in order."""
    pts = [(-75.2, 45.3), (10.3, -5.4)]
    wkt = "MULTIPOINT(" + ",".join(f"({x} {y})" for x, y in pts) + ")"
    _, doc = covjson_get(f"/collections/{DAILY}/position", {"coords": wkt, "datetime": "2001-01-01",
                                                           "parameter-name": "tas"})
    assert doc["type"] == "CoverageCollection", doc["type"]
    assert len(doc["coverages"]) == 2, len(doc["coverages"])
    for (lon, lat), cov in zip(pts, doc["coverages"]):
        cov = dict(cov)
        cov.setdefault("parameters", doc.get("parameters"))
        i, j = daily.nearest_lat(lat), daily.nearest_lon(lon)
        dom = cov["domain"]
        assert dom.get("domainType", doc.get("domainType")) == "Point", dom.get("domainType")
        x, y = axis_values(cov, "x"), axis_values(cov, "y")
        assert same_lon(x[0], daily.lon[j]) and y == [daily.lat[i]], f"({lon} {lat}): x {x} y {y}"
        assert_values(f"({lon} {lat})", cov["ranges"]["tas"]["values"], daily.values("tas", (slice(0, 1), i, j)))


def seam_cube(daily: Grid):
    """A bbox across the antimeridian (minlon > maxlon) on the 0..360 grid: x continues past 180."""
    _, cov = covjson_get(f"/collections/{DAILY}/cube", {"bbox": "175.1,-4.9,-175.1,4.9", "datetime": "2001-01-01",
                                                       "parameter-name": "tas"})
    x, y = axis_values(cov, "x"), axis_values(cov, "y")
    assert len(x) == 3 and all(same_lon(g, w) for g, w in zip(x, [177.5, 180.0, 182.5])), f"x {x}"
    assert x[0] < x[1] < x[2], f"x must increase eastwards across the antimeridian: {x}"
    assert y == [3.75, 1.25, -1.25, -3.75], f"y {y}"
    want = daily.values("tas", (slice(0, 1), slice(34, 38), slice(71, 74)))
    assert_values("tas", cov["ranges"]["tas"]["values"], want)


def c360_series():
    """360_day: a whole series at a cell with missing values; Feb 30 exists."""
    grid = Grid("calendars/c360")
    _, cov = covjson_get(f"/collections/{C360}/position", {"coords": "POINT(0 0)"})
    check_point_series(cov, grid, 0.0, 0.0, [c360(d) for d in range(720)], {"v": grid.values("v", (slice(None), 2, 2))},
                       "https://cfconventions.org/calendars/360_day")
    assert cov["ranges"]["v"]["values"][30:35] == [None] * 5
    _, one = covjson_get(f"/collections/{C360}/position", {"coords": "POINT(0 0)", "datetime": "2000-02-30"})
    check_point_series(one, grid, 0.0, 0.0, ["2000-02-30T00:00:00Z"], {"v": grid.values("v", (slice(59, 60), 2, 2))},
                       "https://cfconventions.org/calendars/360_day")


def formats_and_errors(client):
    """The same point as GeoJSON and CSV; vnd.cov+json by Accept; a problem for an unknown parameter."""
    q = {"coords": "POINT(-75.2 45.3)", "datetime": "2001-02-05/2001-02-15", "parameter-name": "tas"}
    r, geo = get_json(f"/collections/{DAILY}/position", dict(q, f="GeoJSON"))
    assert r.headers["content-type"].startswith("application/geo+json"), r.headers["content-type"]
    assert geo["type"] == "FeatureCollection" and len(geo["features"]) == 11, (geo.get("type"), len(geo.get("features", [])))
    props = geo["features"][0]["properties"]
    assert props["datetime"] == "2001-02-05T00:00:00Z" and "tas" in props, props
    assert geo["features"][5]["properties"]["tas"] is None, geo["features"][5]
    r = get(f"/collections/{DAILY}/position", dict(q, f="CSV"))
    assert r.headers["content-type"].startswith("text/csv"), r.headers["content-type"]
    lines = r.text.strip().splitlines()
    assert lines[0].split(",") == ["datetime", "lat", "lon", "tas"], lines[0]
    assert len(lines) == 12, len(lines)
    r, _ = covjson_get(f"/collections/{DAILY}/position", q, {"Accept": "application/vnd.cov+json"})
    assert r.headers["content-type"].startswith("application/vnd.cov+json"), r.headers["content-type"]
    bad = get(f"/collections/{DAILY}/position", dict(q, **{"parameter-name": "nope"}), status=400)
    assert bad.headers["content-type"].startswith("application/problem+json"), bad.headers["content-type"]
    assert "nope" in bad.text, bad.text
    try:
        client.query_data(DAILY, "position", coords="POINT(-75.2 45.3)", parameter_names=["nope"])
    except RuntimeError as exc:
        assert "nope" in str(exc), exc
    else:
        raise AssertionError("OWSLib got no error for an unknown parameter")


def sweep_collection(doc: dict) -> str:
    """Every collection: a position at its bbox centre (the first step, and every level), and a
    small cube there; each answer validated with covjson-pydantic."""
    cid = doc["id"]
    bbox = doc["extent"]["spatial"]["bbox"][0]
    lon, lat = (bbox[0] + bbox[2]) / 2, (bbox[1] + bbox[3]) / 2
    params = list(doc["parameter_names"])
    assert params, f"{cid}: no parameters"
    base = {"parameter-name": params[0]}
    temporal = doc["extent"].get("temporal")
    if temporal and temporal.get("values"):
        base["datetime"] = temporal["values"][0] if "/" not in temporal["values"][0] else temporal["interval"][0][0]
    _, cov = covjson_get(f"/collections/{cid}/position", dict(base, coords=f"POINT({lon} {lat})"))
    assert cov["type"] == "Coverage", cov["type"]
    vertical = doc["extent"].get("vertical")
    kind = cov["domain"].get("domainType")
    if vertical and len(vertical["values"]) > 1:
        assert kind == "VerticalProfile", f"{cid}: one step at every level is a VerticalProfile, not {kind}"
        assert len(axis_values(cov, "z")) == len(vertical["values"]), axis_values(cov, "z")
        rng = cov["ranges"][params[0]]
        assert rng.get("axisNames") == ["z"] and rng.get("shape") == [len(vertical["values"])], rng.get("axisNames")
        _, one = covjson_get(f"/collections/{cid}/position",
                             dict(base, coords=f"POINT({lon} {lat})", z=vertical["values"][0]))
        assert one["domain"].get("domainType") == "Point", one["domain"].get("domainType")
        _, series = covjson_get(f"/collections/{cid}/position",
                                {"coords": f"POINT({lon} {lat})", "parameter-name": params[0],
                                 "z": vertical["values"][0]})
        if temporal and len(temporal["values"]) > 1:
            assert series["domain"].get("domainType") == "PointSeries", series["domain"].get("domainType")
    else:
        assert kind == "Point", f"{cid}: one step, no levels: Point, not {kind}"
    d = 5.0
    cube = f"{max(bbox[0], lon - d)},{max(bbox[1], lat - d)},{min(bbox[2], lon + d)},{min(bbox[3], lat + d)}"
    _, grid = covjson_get(f"/collections/{cid}/cube", dict(base, bbox=cube))
    assert grid["domain"].get("domainType") == "Grid", grid["domain"].get("domainType")
    return kind


#: Collections on projected grids (tests/fixtures/grids, served by .ci/edr_clients.sh): a point
#: inside each one's grid, and its EPSG code when it has one.
PROJECTED = {"hrrr_lcc": ((-97.5, 38.5), None), "seaice_3413": ((-45.0, 75.0), 3413)}


def projected_answers(cid: str) -> None:
    """A collection on a projected grid: the document validates (edr-pydantic) and offers its
    EPSG code as a `crs`; a position and a cube validate (covjson-pydantic); the cube is a Grid
    on the native axes whose referencing is a ProjectedCRS (that EPSG code's URI, or its WKT)
    beside CRS84 for the cells' longitudes and latitudes; CSV rows carry x, y, lat, lon."""
    (lon, lat), code = PROJECTED[cid]
    r, doc = get_json(f"/collections/{cid}")
    validate_edr(Collection, r.text, r.url)
    crs = doc.get("crs", [])
    if code:
        assert any(str(code) in c for c in crs), f"{cid}: crs {crs} does not offer EPSG:{code}"
    _, point = covjson_get(f"/collections/{cid}/position", {"coords": f"POINT({lon} {lat})"})
    assert point["type"] == "Coverage", point["type"]
    bbox = f"{lon - 2},{lat - 1},{lon + 2},{lat + 1}"
    _, grid = covjson_get(f"/collections/{cid}/cube", {"bbox": bbox})
    assert grid["domain"]["domainType"] == "Grid", grid["domain"]["domainType"]
    systems = [ref["system"] for ref in grid["domain"]["referencing"]]
    projected = [s for s in systems if s.get("type") == "ProjectedCRS"]
    assert projected, f"{cid}: cube referencing {systems} has no ProjectedCRS"
    if code:
        assert projected[0].get("id") == f"http://www.opengis.net/def/crs/EPSG/0/{code}", projected[0]
    else:
        assert "wkt" in projected[0] or "id" in projected[0], projected[0]
    xs, ys = axis_values(grid, "x"), axis_values(grid, "y")
    assert xs and ys and max(abs(v) for v in xs + ys) > 360, f"{cid}: x {xs[:4]}, y {ys[:4]} are not native metres"
    text = get(f"/collections/{cid}/cube", {"bbox": bbox, "f": "CSV"}).text
    head = text.splitlines()[0].split(",")
    assert head[:5] == ["datetime", "x", "y", "lat", "lon"] or head[:4] == ["x", "y", "lat", "lon"], head


OWSLIB_ARGS = {"coords": "coords", "bbox": "bbox", "datetime": "datetime_", "parameter-name": "parameter_names",
               "parameter_names": "parameter_names", "within": "within", "z": "z", "crs": "crs"}


def edr_cases(client: EnvironmentalDataRetrieval) -> tuple[int, int]:
    """Every case of tests/fixtures/edr/cases.json (answers computed with xarray): a 200
    CoverageJSON case through OWSLib's query_data when OWSLib can send its parameters (else
    requests), validated with covjson-pydantic and compared with the case; GeoJSON and CSV
    cases compared; error cases: the status and a problem whose detail names the cause."""
    cases = json.loads(EDR_CASES.read_text())
    n_owslib = 0
    for case in cases:
        name = f"edr case {case['name']}"
        if case.get("status") != 200:
            T.run(name, error_case, case)
        elif "covjson" in case:
            if T.run(name, covjson_case, client, case):
                n_owslib += 1
        else:
            T.run(name, format_case, case)
    return len(cases), n_owslib


def covjson_case(client: EnvironmentalDataRetrieval, case: dict) -> bool:
    parts = urlsplit(case["url"])
    query = parse_qsl(parts.query, keep_blank_values=True)
    m = re.fullmatch(r"/edr/collections/([^/]+)/(position|area|cube|radius)", parts.path)
    if m and all(k in OWSLIB_ARGS for k, _ in query):
        kwargs = {}
        for k, v in query:
            key = OWSLIB_ARGS[k]
            kwargs[key] = v.split(",") if key in ("bbox", "parameter_names") else v
        doc = client.query_data(m.group(1), m.group(2), **kwargs)
        validate_covjson(json.dumps(doc), f"OWSLib {client.request}")
        via_owslib = True
    else:
        _, doc = covjson_get(BASE + case["url"])
        via_owslib = False
    same_coverage(doc, case["covjson"], "")
    return via_owslib


def same_coverage(got: dict, want: dict, where: str) -> None:
    assert got.get("type") == want["type"], f"{where}type {got.get('type')}, want {want['type']}"
    if want["type"] == "CoverageCollection":
        covs = got.get("coverages", [])
        assert len(covs) == len(want["coverages"]), f"{where}{len(covs)} coverages, want {len(want['coverages'])}"
        for k, (g, w) in enumerate(zip(covs, want["coverages"])):
            g = dict(g, domainType=g["domain"].get("domainType") or got.get("domainType"))
            same_coverage(dict(g, type="Coverage"), dict(w, type="Coverage"), f"{where}coverages[{k}] ")
        return
    dom = got["domain"]
    assert dom.get("domainType") == want["domainType"], f"{where}domainType {dom.get('domainType')}, want {want['domainType']}"
    axes = dom["axes"]
    assert set(axes) == set(want["axes"]), f"{where}axes {sorted(axes)}, want {sorted(want['axes'])}"
    for name, values in want["axes"].items():
        got_values = axis_values(got, name)
        assert len(got_values) == len(values), f"{where}axis {name}: {len(got_values)} values, want {len(values)}"
        for g, w in zip(got_values, values):
            ok = g == w if isinstance(w, str) else (isinstance(g, (int, float)) and close(float(g), float(w)))
            assert ok, f"{where}axis {name}: {got_values[:8]}, want {values[:8]}"
    assert set(got["ranges"]) == set(want["ranges"]), f"{where}ranges {sorted(got['ranges'])}, want {sorted(want['ranges'])}"
    for name, w in want["ranges"].items():
        g = got["ranges"][name]
        if w["axisNames"] is None:  # a Point: none, or an empty list
            assert not g.get("axisNames") and not g.get("shape"), f"{where}{name}: axisNames {g.get('axisNames')} shape {g.get('shape')}"
        else:
            assert g.get("axisNames") == w["axisNames"] and g.get("shape") == w["shape"], (
                f"{where}{name}: axisNames {g.get('axisNames')} shape {g.get('shape')}, want {w['axisNames']} {w['shape']}")
        assert_values(f"{where}{name}", g["values"], np.array([np.nan if v is None else v for v in w["values"]], dtype=float))


def format_case(case: dict) -> None:
    if "features" in case:
        r, doc = get_json(BASE + case["url"])
        assert r.headers.get("content-type", "").startswith("application/geo+json"), r.headers.get("content-type")
        assert doc.get("type") == "FeatureCollection", doc.get("type")
        feats = doc.get("features", [])
        assert len(feats) == len(case["features"]), f"{len(feats)} features, want {len(case['features'])}"
        for k, (g, w) in enumerate(zip(feats, case["features"])):
            assert g["geometry"]["type"] == "Point", g["geometry"]
            xy = g["geometry"]["coordinates"]
            assert all(close(float(a), float(b)) for a, b in zip(xy, w["coordinates"])), f"feature {k}: {xy}, want {w['coordinates']}"
            assert set(g["properties"]) == set(w["properties"]), f"feature {k}: properties {sorted(g['properties'])}"
            for key, wv in w["properties"].items():
                gv = g["properties"][key]
                ok = gv == wv if wv is None or isinstance(wv, str) else close(gv, float(wv))
                assert ok, f"feature {k}: {key} {gv!r}, want {wv!r}"
    else:
        r = get(BASE + case["url"])
        assert r.headers.get("content-type", "").startswith("text/csv"), r.headers.get("content-type")
        rows = [line.split(",") for line in r.text.splitlines() if line]
        want = case["csv"]
        assert rows[0] == want[0], f"header {rows[0]}, want {want[0]}"
        assert len(rows) == len(want), f"{len(rows) - 1} rows, want {len(want) - 1}"
        for k, (g, w) in enumerate(zip(rows, want)):
            assert len(g) == len(w), f"row {k}: {g}, want {w}"
            for a, b in zip(g, w):
                try:
                    ok = a == b or (a != "" and b != "" and close(float(a), float(b)))
                except ValueError:
                    ok = False
                assert ok, f"row {k}: {g}, want {w}"


def error_case(case: dict) -> None:
    r = get(BASE + case["url"], status=case["status"])
    assert r.headers.get("content-type", "").startswith("application/problem+json"), r.headers.get("content-type")
    detail = str(r.json().get("detail", "")).lower()
    assert case["detail_contains"] in detail, f"detail {detail!r} does not name {case['detail_contains']!r}"


def main() -> int:
    global BASE, EDR
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    BASE = sys.argv[1].rstrip("/")
    EDR = BASE + "/edr"
    print(f"OWSLib {version('OWSLib')}, edr-pydantic {version('edr-pydantic')}, "
          f"covjson-pydantic {version('covjson-pydantic')}, pydantic {version('pydantic')}")
    client = T.run("OWSLib EnvironmentalDataRetrieval(BASE/edr)", EnvironmentalDataRetrieval, EDR)
    if client is None:
        print(f"edr-clients: {T.passed} passed, {len(T.failed)} failed")
        return 1
    T.run("landing page (/edr and /edr/; edr-pydantic LandingPageModel; OWSLib api())", check_landing, client)
    T.run("conformance (edr-pydantic ConformanceModel; OWSLib conformance())", check_conformance, client)
    listed = T.run("collections (edr-pydantic Collections; OWSLib collections())", check_collections, client) or {}
    docs = {}
    for cid in listed:
        docs[cid] = T.run(f"collection {cid} (edr-pydantic Collection; OWSLib collection())", check_collection,
                          client, cid, listed[cid])
    if docs.get(DAILY):
        T.run(f"collection {DAILY}: extent, values, parameter_names", check_daily_document, docs[DAILY])
    if docs.get(C360):
        T.run(f"collection {C360}: 360_day extent", check_c360_document, docs[C360])
    versioned = [cid for cid, d in docs.items() if d and "instances" in (d.get("data_queries") or {})]
    if VERSIONED in listed:
        T.run(f"collection {VERSIONED} (Icechunk): data_queries.instances", check_advertises_instances, docs.get(VERSIONED))
        if VERSIONED not in versioned:
            versioned.append(VERSIONED)  # its instances are checked all the same
    if not versioned:
        T.skipped.append("instances: no versioned collection is served")
    for cid in versioned:
        T.run(f"instances of {cid} (edr-pydantic Instances, Collection; a position on main)", check_instances, cid)

    daily = Grid("daily")
    T.run("OWSLib position POINT -> PointSeries with nulls (values from zarr-python)", owslib_position, client, daily)
    T.run("OWSLib position, an instant and two parameters -> Point", owslib_point, client, daily)
    T.run("OWSLib area POLYGON -> Grid, cells outside null", owslib_area, client, daily)
    T.run("OWSLib cube bbox, 3 steps, tas + packed pr -> Grid", owslib_cube, client, daily)
    T.run("OWSLib radius (km by default; = m) -> Grid", owslib_radius, client, daily)
    T.run("MULTIPOINT -> CoverageCollection of Points", multipoint, daily)
    T.run("cube across the antimeridian -> x past 180", seam_cube, daily)
    T.run("360_day PointSeries and the instant 2000-02-30", c360_series)
    T.run("GeoJSON, CSV, Accept vnd.cov+json, 400 problem (and OWSLib's RuntimeError)", formats_and_errors, client)
    for cid in PROJECTED:
        if cid in listed:
            T.run(f"projected {cid}: document, position, cube Grid with ProjectedCRS, CSV x/y (edr-pydantic, covjson-pydantic)",
                  projected_answers, cid)
        else:
            T.skipped.append(f"projected {cid}: not served")
    kinds = {}
    for cid, doc in docs.items():
        if cid in PROJECTED:
            continue
        if doc:
            kinds[cid] = T.run(f"sweep {cid}: position + cube validate (covjson-pydantic)", sweep_collection, doc)
    if "VerticalProfile" not in kinds.values():
        T.skipped.append("VerticalProfile: no collection with several levels is served")
    if EDR_CASES.exists():
        n, n_owslib = edr_cases(client)
        print(f"{n} cases of {EDR_CASES.relative_to(ROOT)}, {n_owslib} of them through OWSLib's query_data")
    else:
        T.skipped.append(f"{EDR_CASES.relative_to(ROOT)}: not there")

    for line in T.limits:
        print(f"LIMIT {line}")
    for line in T.skipped:
        print(f"SKIP {line}")
    print(f"edr-clients: {T.passed} passed, {len(T.failed)} failed, {len(T.limits)} validator limitations, "
          f"{len(T.skipped)} skipped")
    for line in T.failed:
        print(f"  FAILED {line.splitlines()[0][:400]}")
    return 1 if T.failed else 0


if __name__ == "__main__":
    sys.exit(main())
