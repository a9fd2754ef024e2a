"""Builds the fleet test's request mix and the known-correct bodies it is checked against.

Usage: fleet_mix.py BASE_URL OUT_DIR
BASE_URL is one replica, asked directly (not through the load balancer) before the run.
Writes OUT_DIR/mix.tsv (id, path, Range header or "-", expected body file or "-"),
OUT_DIR/schedule.txt (request ids in the order the load generator cycles through them:
a Zipf-like popularity, as map viewers produce) and OUT_DIR/bodies/*.

The mix: 256x256 tiles as raw bytes (45%), unaligned slices as .npy (15%), PNG tiles
(5%), byte ranges of stored shards through /zarr, as Zarr clients read them (20%),
listings of chunks, arrays and node trees (15%). Every listing, array document and a
sample of the data requests (the 150 most popular plus 100 at random) carry an expected
body; the load generator compares each such response byte for byte.
"""

import json
import os
import pathlib
import random
import sys
import urllib.request

base, out = sys.argv[1], pathlib.Path(sys.argv[2])
(out / "bodies").mkdir(parents=True, exist_ok=True)
rng = random.Random(20261123)
N, T = 8192, 256


def get(path, range_header=None):
    request = urllib.request.Request(base + path)
    if range_header:
        request.add_header("Range", range_header)
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status in (200, 206), (path, response.status)
        return response.read()


requests = []  # (path, range or None, category)
tiles = [(r, c) for r in range(0, N, T) for c in range(0, N, T)]
rng.shuffle(tiles)
for r, c in tiles[:900]:
    requests.append((f"/v1/slice/bench/tiles?s={r}:{r + T},{c}:{c + T}&format=bin", None, "tile"))
for _ in range(300):
    r, c = rng.randrange(0, N - 400), rng.randrange(0, N - 400)
    h, w = rng.randrange(50, 400), rng.randrange(50, 400)
    requests.append((f"/v1/slice/bench/tiles?s={r}:{r + h},{c}:{c + w}", None, "slice"))
for r, c in tiles[900:1000]:
    requests.append((f"/v1/slice/bench/tiles?s={r}:{r + T},{c}:{c + T}&format=png&vmin=-400&vmax=400", None, "png"))
# Byte ranges of inner chunks, from the shard indexes as zarrd lists them.
listing = json.loads(get(f"/v1/chunks/bench/tiles?inner=true&limit=1000"))
inner = [(ch["key"], i) for ch in listing["chunks"] for i in ch["inner"] if i["state"] == "present"]
for key, i in rng.sample(inner, 400):
    requests.append((f"/zarr/bench/{key}", f"bytes={i['offset']}-{i['offset'] + i['nbytes'] - 1}", "range"))
for _ in range(60):
    r, c = rng.randrange(0, N - 3000), rng.randrange(0, N - 3000)
    requests.append((f"/v1/chunks/bench/tiles?s={r}:{r + 3000},{c}:{c + 3000}&inner=true", None, "listing"))
for path in ["/v1/datasets/bench", "/v1/arrays/bench/tiles", "/zarr/bench/tiles/zarr.json", "/v1/datasets/sample",
             "/v1/arrays/sample/climate/t2m", "/v1/chunks/sample/climate/t2m"]:
    requests.append((path, None, "listing"))
for day in range(0, 365, 7):
    requests.append((f"/v1/slice/sample/climate/t2m?s={day},:,:&format=json", None, "slice"))

# Popularity: Zipf-like over a random order of the requests, so hot and cold items of
# every kind are mixed, with the kinds weighted as above.
weights = {"tile": 0.45, "slice": 0.15, "png": 0.05, "range": 0.20, "listing": 0.15}
# FLEET_KINDS=tile,slice,png keeps only those kinds (benchmarks of the caches: /zarr ranges
# and chunk listings read storage on every request whichever replica serves them).
if os.environ.get("FLEET_KINDS"):
    keep = os.environ["FLEET_KINDS"].split(",")
    weights = {k: (w if k in keep else 0.0) for k, w in weights.items()}
order = list(range(len(requests)))
rng.shuffle(order)
by_kind = {}
for rank, i in enumerate(order):
    by_kind.setdefault(requests[i][2], []).append(i)
schedule = []
for kind, ids in by_kind.items():
    zipf = [1.0 / (k + 1) ** 0.8 for k in range(len(ids))]
    schedule += rng.choices(ids, weights=zipf, k=int(40000 * weights[kind]))
rng.shuffle(schedule)
popularity = {}
for i in schedule:
    popularity[i] = popularity.get(i, 0) + 1
sampled = set(sorted(popularity, key=popularity.get, reverse=True)[:150])
sampled |= set(rng.sample(range(len(requests)), 100))
sampled |= {i for i, (_, _, kind) in enumerate(requests) if kind == "listing"}

with open(out / "mix.tsv", "w") as mix:
    for i, (path, range_header, kind) in enumerate(requests):
        body_file = "-"
        if i in sampled:
            body_file = str(out / "bodies" / f"{i}.bin")
            pathlib.Path(body_file).write_bytes(get(path, range_header))
        mix.write(f"{i}\t{path}\t{range_header or '-'}\t{body_file}\n")
(out / "schedule.txt").write_text(" ".join(map(str, schedule)) + "\n")
print(f"fleet mix: {len(requests)} distinct requests, {len(sampled)} with known bodies, schedule of {len(schedule)}")
