"""Schemathesis hooks and checks for .ci/schemathesis.sh (the module SCHEMATHESIS_HOOKS names).

The hooks steer generated requests (positive cases of the fuzzing and examples phases only;
negative cases and the coverage phase are left as generated) towards the data actually
served, so most requests get past the 404/400 of a mismatched dataset, an out-of-range
selection or a chunk outside the grid, and the encoders and listings are exercised on every
fixture: a (ds, path|key) pair moves to the dataset that has it; `s` is usually a random
valid selection for the array's shape; `c` usually a chunk of the read grid (taken from the
server's own listing); options that only combine with others (vmin/vmax without png, format
without decoded, a foreign cursor, If-Match with a random tag) are usually dropped; `Range`
is usually a random byte range; an EDR query usually takes points, polygons, boxes, steps,
levels and parameters of the collection asked (from its collection document), with a format
or an `Accept`. The module also registers the zarrd_* checks of the API's semantics
(docs/api.md) that a schema cannot express (see its end).

Not run directly: .ci/schemathesis.sh copies it into its work directory as zarrd_hooks.py,
beside the served.json of .ci/schemathesis_narrow_spec.py (read from this module's own
directory), and runs schemathesis with PYTHONPATH=WORK, SCHEMATHESIS_HOOKS=zarrd_hooks and
ZARRD_BASE (the server's base URL, which the hooks query for chunk listings and EDR
collection documents).
"""

import ast
import json
import os
import re
import struct
import threading
import urllib.parse
import urllib.request

import schemathesis
from hypothesis import strategies as st

# CPython before 3.11.8 fails `ast.parse` run by two threads at once (cpython#106905), and
# hypothesis parses the source of lambdas from every worker thread: one parse at a time.
_ast_parse, _ast_lock = ast.parse, threading.Lock()


def _serial_ast_parse(*args, **kwargs):
    with _ast_lock:
        return _ast_parse(*args, **kwargs)


ast.parse = _serial_ast_parse

HERE = os.path.dirname(os.path.abspath(__file__))
SERVED = json.load(open(os.path.join(HERE, "served.json")))
BASE = os.environ["ZARRD_BASE"]
_READ_GRID = {}


def read_grid(ds, path):
    """Coordinates of every chunk of the read grid, from the server's listing."""
    if (ds, path) not in _READ_GRID:
        coords = []
        url = f"{BASE}/v1/chunks/{ds}" + (f"/{urllib.parse.quote(path)}" if path else "") + "?inner=true&limit=10000"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                for chunk in json.load(r)["chunks"]:
                    inner = chunk.get("inner")
                    coords.extend(i["coords"] for i in inner) if inner else coords.append(chunk["coords"])
        except Exception:
            pass
        _READ_GRID[(ds, path)] = coords
    return _READ_GRID[(ds, path)]


def next_cursor(ds, path, query):
    """The `next` cursor of the first page of a listing, or None."""
    params = {k: str(v).lower() if isinstance(v, bool) else v for k, v in query.items() if v is not None}
    params.pop("cursor", None)
    url = f"{BASE}/v1/chunks/{ds}" + (f"/{urllib.parse.quote(path)}" if path else "")
    try:
        with urllib.request.urlopen(f"{url}?{urllib.parse.urlencode(params)}", timeout=30) as r:
            return json.load(r).get("next")
    except Exception:
        return None


@schemathesis.hook
def map_path_parameters(context, path_parameters):
    if not isinstance(path_parameters, dict):
        return path_parameters
    ds = path_parameters.get("ds")
    for name, table in (("path", SERVED["nodes"]), ("key", SERVED["keys"])):
        value = path_parameters.get(name)
        # Path parameters arrive percent-encoded (`climate%2Ft2m`).
        value = urllib.parse.unquote(value) if isinstance(value, str) else value
        if ds in table and isinstance(value, str) and value not in table[ds]:
            owners = sorted(d for d, values in table.items() if value in values)
            if owners:
                path_parameters["ds"] = owners[0]
    return path_parameters


def bound(n):
    return st.one_of(st.integers(-n - 3, n + 3).map(str), st.just(""))


def dim_item(n):
    items = [st.builds(lambda a, b: f"{a}:{b}", bound(n), bound(n)),
             st.builds(lambda a, b, c: f"{a}:{b}:{c}", bound(n), bound(n), st.integers(1, n + 2).map(str)),
             st.just(":")]
    if n > 0:
        items.append(st.integers(-n, n - 1).map(str))
    return st.one_of(items)


def selection(shape):
    rank = len(shape)

    @st.composite
    def draw(draw):
        items = [draw(dim_item(n)) for n in shape]
        if items and draw(st.integers(0, 5).map(lambda x: x == 5)):
            # An empty result (a zero in the shape) is allowed and easy to get wrong.
            k = draw(st.integers(0, len(items) - 1))
            items[k] = f"{shape[k] // 2}:{shape[k] // 2}"
        items = items[: rank - draw(st.integers(0, rank))]
        if draw(st.booleans()) and items:
            a = draw(st.integers(0, len(items)))
            b = draw(st.integers(a, len(items)))
            items = items[:a] + ["..."] + items[b:]
        return ",".join(items)

    return draw()


ACCEPTS = [
    "*/*", "application/x-npy", "application/octet-stream", "application/json", "image/png",
    "image/*", "application/*", "text/html", "text/html;q=0.9, image/png;q=0.8",
    "application/json;q=0.5, application/octet-stream", "image/png;q=0", "", "*/*;q=0.1, text/csv",
]


def byte_range():
    offset = st.one_of(st.integers(0, 400), st.just(2**64 - 1), st.integers(0, 2**64 - 1))
    return st.one_of(
        st.builds(lambda a, b: f"bytes={a}-{min(a + b, 2**64 - 1)}", st.integers(0, 400), offset),
        offset.map(lambda a: f"bytes={a}-"),
        offset.map(lambda n: f"bytes=-{n}"),
    )


EDR_QUERIES = ("position", "area", "cube", "radius")
EDR_ACCEPTS = [
    "application/prs.coverage+json", "application/vnd.cov+json", "application/geo+json", "text/csv", "*/*",
    "application/json", "", "text/csv;q=0.5, application/geo+json",
]
_EDR = {}


def edr_collection(cid, instance):
    """The collection document of `cid` (at version `instance`), from the server, or None."""
    if (cid, instance) not in _EDR:
        url = f"{BASE}/edr/collections/{urllib.parse.quote(cid, safe=':@')}"
        if instance is not None:
            url += f"/instances/{urllib.parse.quote(instance, safe='')}"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                _EDR[(cid, instance)] = json.load(r)
        except Exception:
            _EDR[(cid, instance)] = None
    return _EDR[(cid, instance)]


@st.composite
def edr_query(draw, kind, doc):
    """Parameters of an EDR query `kind` that mostly take cells, steps and levels of `doc`."""
    west, south, east, north = doc["extent"]["spatial"]["bbox"][0]
    east += 360 if west > east else 0
    south, north = max(south, -89.0), min(north, 89.0)

    def point():
        x = draw(st.floats(west, east, allow_nan=False))
        y = draw(st.floats(south, north, allow_nan=False))
        return round((x + 180) % 360 - 180, 2), round(y, 2)

    def square(x, y, d):
        s, n = max(y - d, -90), min(y + d, 90)
        return [(x - d, s), (x + d, s), (x + d, n), (x - d, n)]

    query = {"parameter_names": None}
    names = sorted(doc["parameter_names"])
    query["parameter-name"] = ",".join(draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True)))
    d = draw(st.sampled_from([0.5, 3, 8, 20]))
    if kind == "position":
        points = [point() for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3])))]
        text = ",".join(f"({x} {y})" for x, y in points)
        query["coords"] = f"POINT({points[0][0]} {points[0][1]})" if len(points) == 1 else f"MULTIPOINT({text})"
    elif kind == "area":
        ring = square(*point(), d)
        query["coords"] = "POLYGON((" + ",".join(f"{x} {y}" for x, y in ring + ring[:1]) + "))"
    elif kind == "cube":
        (w, s), _, (e, n), _ = square(*point(), d)
        query["bbox"] = f"{w},{s},{e},{n}"
    else:
        query["coords"] = "POINT({} {})".format(*point())
        unit, factor = draw(st.sampled_from([(None, 1), ("km", 1), ("m", 1000), ("mi", 0.621371)]))
        query["within"] = round(draw(st.sampled_from([0, 100, 600, 1500])) * factor, 1)
        query["within-units"] = unit
    times = doc["extent"].get("temporal", {}).get("values", [])
    if not times or draw(st.booleans()):
        query["datetime"] = None
    else:
        i = draw(st.integers(0, len(times) - 1))
        j = draw(st.integers(i, min(i + 3, len(times) - 1)))
        forms = [times[i], times[i][:10], f"{times[i]}/{times[j]}", f"{times[j]}/..", f"../{times[i]}"]
        query["datetime"] = draw(st.sampled_from(forms))
    levels = doc["extent"].get("vertical", {}).get("values", [])
    if not levels or draw(st.booleans()):
        query["z"] = None
    else:
        a, b = draw(st.sampled_from(levels)), draw(st.sampled_from(levels))
        query["z"] = draw(st.sampled_from([a, f"{a}/{b}", f"{a},{b}"]))
    return query


def _merged(original, changes):
    merged = original.copy()
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


@schemathesis.hook
def flatmap_case(context, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return st.just(case)
    route = case.operation.path
    original_query, original_headers = dict(case.query), case.headers.copy()
    original_path = dict(case.path_parameters)
    # Hypothesis favours small values, so the usual branch is the one 0 takes.
    usually = st.integers(0, 3).map(lambda x: x < 3)
    sometimes = st.integers(0, 3).map(lambda x: x == 3)
    rarely = st.integers(0, 7).map(lambda x: x == 7)
    root_arrays = sorted(d for d, arrays in SERVED["shapes"].items() if "" in arrays)

    @st.composite
    def steer(draw):
        query, headers, path_parameters = {}, {}, {}
        ds = original_path.get("ds")
        path = urllib.parse.unquote(original_path.get("path", ""))
        if route.startswith("/v1/") and route.endswith("/{ds}") and root_arrays and draw(usually):
            # The root operations: usually a dataset whose root is an array.
            ds = path_parameters["ds"] = draw(st.sampled_from(root_arrays))
        shape = SERVED["shapes"].get(ds, {}).get(path)
        if draw(rarely):
            # Revalidation of whatever is current: 304 (or 412-free for /zarr).
            headers["If-None-Match"] = "*"
        if route.startswith("/edr/collections/{collectionId}/") and route.rsplit("/", 1)[1] in EDR_QUERIES:
            cid = urllib.parse.unquote(original_path.get("collectionId", ""))
            instance = original_path.get("instanceId")
            doc = edr_collection(cid, None if instance is None else urllib.parse.unquote(instance))
            if doc is not None and draw(usually):
                query.update(draw(edr_query(route.rsplit("/", 1)[1], doc)))
            if draw(sometimes):
                # Content negotiation instead of `f`.
                query["f"] = None
                headers["Accept"] = draw(st.sampled_from(EDR_ACCEPTS))
            return query, headers, path_parameters
        if route.startswith("/zarr/"):
            if draw(usually):
                headers.update({"If-Match": None, "If-Unmodified-Since": None})
            if draw(usually):
                headers["Range"] = draw(st.one_of(byte_range(), st.none()))
            return query, headers, path_parameters
        if shape is None:
            return query, headers, path_parameters
        if route.startswith(("/v1/slice/", "/v1/chunks/")) and draw(usually):
            query["s"] = draw(selection(shape))
        if route.startswith("/v1/slice/") and draw(sometimes):
            query["format"] = "png"
        elif route.startswith(("/v1/slice/", "/v1/chunk/")) and draw(sometimes):
            # Content negotiation instead of `format`.
            query["format"] = None
            headers["Accept"] = draw(st.sampled_from(ACCEPTS))
        if route.startswith("/v1/chunks/"):
            query["cursor"] = None if draw(usually) else original_query.get("cursor")
            if draw(sometimes):
                # A later page: the cursor of a real first page of the same listing.
                limit = draw(st.integers(1, 3))
                listing = {**original_query, **query, "limit": limit}
                cursor = next_cursor(ds, path, listing)
                if cursor is not None:
                    query.update({"limit": limit, "cursor": cursor})
        if route.startswith("/v1/chunk/"):
            grid = read_grid(ds, path)
            if grid and draw(usually):
                query["c"] = ",".join(map(str, draw(st.sampled_from(grid))))
            if original_query.get("decoded") in (None, False, "false") and draw(usually):
                query.update({"format": None, "vmin": None, "vmax": None})
        if original_query.get("format") != "png" and draw(usually):
            query.update({"vmin": None, "vmax": None})
        return query, headers, path_parameters

    def apply(changes):
        query, headers, path_parameters = changes
        if path_parameters:
            case.path_parameters = {**original_path, **path_parameters}
        if query:
            case.query = _merged(original_query, query)
        if headers:
            case.headers = _merged(original_headers, headers)
        return case

    return steer().map(apply)


# --- checks of the API's semantics (docs/api.md) that a schema cannot express ------------
NPY_DESCR = {
    "bool": "|b1", "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
    "uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
    "float16": "<f2", "float32": "<f4", "float64": "<f8", "complex64": "<c8", "complex128": "<c16",
}


def _header(response, name):
    values = response.headers.get(name.lower())
    return values[0] if values else None


def _decoded(case):
    route = case.operation.path
    return route.startswith("/v1/slice/") or (
        route.startswith("/v1/chunk/") and str(case.query.get("decoded")).lower() in ("true", "1")
    )


def _nested_shape(data, shape):
    for i, n in enumerate(shape):
        if not isinstance(data, list) or len(data) != n:
            return False
        if n == 0:
            return True
        data = data[0]
    return not isinstance(data, list) or len(data) == 2  # a scalar, or [re, im]


@schemathesis.check
def zarrd_body_matches_zarr_headers(ctx, response, case):
    """A decoded data body has the shape and type its Zarr-Shape and Zarr-Data-Type announce."""
    if response.request.method != "GET" or response.status_code != 200 or not _decoded(case):
        return None
    shape_text, data_type = _header(response, "zarr-shape"), _header(response, "zarr-data-type")
    if shape_text is None or data_type not in NPY_DESCR or response.content_size != len(response.content):
        return None  # missing headers are response_headers_conformance's to report
    shape = [int(d) for d in shape_text.split(",")] if shape_text else []
    count = 1
    for d in shape:
        count *= d
    item = int(NPY_DESCR[data_type][2:])
    body = response.content
    media = (_header(response, "content-type") or "").split(";")[0].strip()
    if media == "application/octet-stream":
        assert len(body) == count * item, f"{len(body)} bytes for shape {shape} of {data_type}"
    elif media == "application/x-npy":
        assert body[:8] == b"\x93NUMPY\x01\x00", "not an .npy v1.0 file"
        length = struct.unpack("<H", body[8:10])[0]
        assert (10 + length) % 64 == 0, "the .npy header is not padded to a multiple of 64"
        header = ast.literal_eval(body[10 : 10 + length].decode("latin1"))
        assert header["descr"] == NPY_DESCR[data_type], f"descr {header['descr']} for {data_type}"
        assert header["fortran_order"] is False
        assert list(header["shape"]) == shape, f".npy shape {header['shape']}, Zarr-Shape {shape}"
        assert len(body) - 10 - length == count * item, "the .npy data has the wrong length"
    elif media == "application/json":
        doc = json.loads(body)
        assert doc["shape"] == shape and doc["data_type"] == data_type, "JSON shape/data_type differ from headers"
        assert _nested_shape(doc["data"], shape), f"JSON data is not nested as shape {shape}"
    elif media == "image/png":
        assert body[:8] == b"\x89PNG\r\n\x1a\n" and body[12:16] == b"IHDR", "not a PNG"
        width, height = struct.unpack(">II", body[16:24])
        assert [height, width] == shape, f"PNG {width}x{height} for shape {shape}"
    return None


def _parse_range(value):
    """The server's reading of a Range header (docs/api.md: one byte range; anything else ignored)."""
    value = value.strip()
    if not value.startswith("bytes="):
        return None
    spec = value[len("bytes="):].strip()
    if "," in spec or "-" not in spec:
        return None
    a, b = (s.strip() for s in spec.split("-", 1))

    def num(s):
        return int(s) if re.fullmatch(r"\+?[0-9]+", s) and int(s) < 2**64 else None

    if not a and b:
        return ("suffix", num(b)) if num(b) is not None else None
    if a and not b:
        return ("from", num(a)) if num(a) is not None else None
    if a and b and num(a) is not None and num(b) is not None and num(a) <= num(b):
        return ("bounded", num(a), num(b))
    return None


def _resolve(rng, size):
    if rng[0] == "bounded":
        start, end = rng[1], min(rng[2] + 1, size)
    elif rng[0] == "from":
        start, end = rng[1], size
    else:
        start, end = max(size - rng[1], 0), size
    return (start, end) if start < end else None


@schemathesis.check
def zarrd_byte_ranges(ctx, response, case):
    """/zarr answers a single byte range with exactly that range (206), or 416 when it is
    unsatisfiable; with an If-Range that is not current, the whole object (200)."""
    if not case.operation.path.startswith("/zarr/") or response.request.method not in ("GET", "HEAD"):
        return None
    raw = case.headers.get("Range") if case.headers else None
    rng = _parse_range(raw) if isinstance(raw, str) else None
    if rng is None or response.status_code not in (200, 206, 416):
        return None
    content_range = _header(response, "content-range") or ""
    if response.status_code == 200:
        # RFC 9110 §13.1.5: an If-Range that does not name the current strong ETag (or its
        # Last-Modified date) means "send it all" — the whole object is the right answer.
        if_range = case.headers.get("If-Range") if case.headers else None
        current = (_header(response, "etag"), _header(response, "last-modified"))
        if if_range is not None and if_range.strip() not in current:
            return None
        raise AssertionError(f"`Range: {raw}` was answered 200 with the whole object")
    if response.status_code == 416:
        m = re.fullmatch(r"bytes \*/([0-9]+)", content_range)
        assert m, f"416 with Content-Range `{content_range}`"
        size = int(m.group(1))
        assert _resolve(rng, size) is None, f"`Range: {raw}` is satisfiable for {size} bytes, but got 416"
        return None
    m = re.fullmatch(r"bytes ([0-9]+)-([0-9]+)/([0-9]+)", content_range)
    assert m, f"206 with Content-Range `{content_range}`"
    first, last, size = map(int, m.groups())
    expected = _resolve(rng, size)
    assert expected == (first, last + 1), f"`Range: {raw}` of {size} bytes is {expected}, got `{content_range}`"
    if response.request.method == "GET":
        assert response.content_size == last + 1 - first, f"{response.content_size} bytes for `{content_range}`"
    return None


@schemathesis.check
class zarrd_every_operation_succeeds:
    """Every operation answered 2xx/3xx at least once, so the run did not degrade into 404s
    (a 3xx counts: some routes, like the IIIF base URI, only ever redirect)."""

    def __init__(self):
        self.tested, self.reached = set(), set()

    def after_response(self, ctx, response, case):
        # Reads only (minting needs a credential this server does not have); and a capability
        # URL with a generated token is rightly a 401: only a minted one works.
        read = case.operation.method.upper() in ("GET", "HEAD")
        if read and response.request.method in ("GET", "HEAD") and not case.operation.path.startswith("/t/"):
            self.tested.add(case.operation.label)
            if 200 <= response.status_code < 400:
                self.reached.add(case.operation.label)

    def after_run(self, ctx):
        missing = sorted(self.tested - self.reached)
        if missing:
            raise AssertionError("never answered 2xx or 3xx: " + ", ".join(missing))
