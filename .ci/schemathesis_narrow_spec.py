"""The copy of openapi.yaml that .ci/schemathesis.sh tests, narrowed to what its zarrd serves.

openapi.yaml describes any deployment: `ds`, `path`, `key`, `collectionId` and `instanceId`
are free strings, and random strings would only ever reach 404s. This copy turns them into
enums of the datasets, node paths and store keys found by walking the given stores (so new
fixtures are picked up), the one versioned dataset, and a fixed list of EDR collections;
everything else, in particular every response, stays as written in openapi.yaml.

    python .ci/schemathesis_narrow_spec.py OPENAPI_YAML WORK NAME=STORE_DIR...

writes WORK/openapi.yaml (the narrowed spec) and WORK/served.json (each dataset's nodes,
store keys and array shapes, read by .ci/schemathesis_hooks.py), and prints a summary line.
Run with the schemathesis venv's Python (it needs PyYAML).
"""

import json, os, sys, yaml

src, work, *datasets = sys.argv[1:]
spec = yaml.safe_load(open(src))
nodes, keys, shapes = {}, {}, {}
for item in datasets:
    name, root = item.split("=", 1)
    nodes[name], keys[name], shapes[name] = [], [], {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        if "zarr.json" in filenames:
            if rel:
                nodes[name].append(rel)
            keys[name].append(f"{rel}/zarr.json" if rel else "zarr.json")
            meta = json.load(open(os.path.join(dirpath, "zarr.json")))
            if meta.get("node_type") == "array":
                shapes[name][rel] = meta["shape"]
        # A few stored chunk objects per directory (chunk directories hold no zarr.json).
        chunks = sorted(f for f in filenames if f != "zarr.json")
        keys[name].extend(f"{rel}/{f}" if rel else f for f in chunks[:2])
params = spec["components"]["parameters"]
params["ds"]["schema"] = {"type": "string", "enum": sorted(nodes)}
params["path"]["schema"] = {"type": "string", "enum": sorted({p for v in nodes.values() for p in v})}
params["key"]["schema"] = {"type": "string", "enum": sorted({k for v in keys.values() for k in v})}
# The versions of a versioned dataset: the one Icechunk repository served.
for param in spec["paths"]["/v1/datasets/{ds}/versions"]["get"]["parameters"]:
    if param["name"] == "ds":
        param["schema"] = {"type": "string", "enum": ["versioned"]}
# EDR: collections of every kind (levels; packed values; no time; a 360_day calendar and a
# grid that is not global; descending and irregular latitudes; a 0..360 grid; mixed axes;
# the sample), and on the instance routes the versioned dataset's collection at
# its one branch.
params["collectionId"]["schema"] = {"type": "string", "enum": [
    "edr", "edr:surface", "edr:static", "analysis:daily", "analysis:calendars:c360", "analysis:irregular", "ic",
    "sample:climate"]}
params["instanceId"]["schema"] = {"type": "string", "enum": ["main"]}
versioned = {k: v for k, v in params["collectionId"].items() if k != "example"}
versioned["schema"] = {"type": "string", "enum": ["ic"]}
for route, item in spec["paths"].items():
    if route.startswith("/edr/collections/{collectionId}/instances"):
        op = item["get"]
        op["parameters"] = [versioned if p.get("$ref") == "#/components/parameters/collectionId" else p
                            for p in op["parameters"]]
with open(os.path.join(work, "openapi.yaml"), "w") as f:
    yaml.safe_dump(spec, f, sort_keys=False)
with open(os.path.join(work, "served.json"), "w") as f:
    json.dump({"nodes": nodes, "keys": keys, "shapes": shapes}, f)
print(f"narrowed the spec to {len(nodes)} datasets, {len(params['path']['schema']['enum'])} node paths, "
      f"{len(params['key']['schema']['enum'])} store keys")
