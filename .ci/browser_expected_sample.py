"""Expected gray levels for .ci/browser.cjs, from the sample store itself (zarr-python + NumPy,
never zarrd): data/sample.zarr's terrain/elevation, its valid range (fill value 0 left out,
as the viewer shows it) and the gray level (0..255 over that range) at a few known spots.

    python .ci/browser_expected_sample.py        (from the repository root)

prints one JSON object ({"lo", "hi", "spots": [{"x", "y", "level"}]}), which .ci/browser.sh
passes to browser.cjs as EXPECTED. Run with the client venv's Python (zarr, NumPy).
"""

import json, math
import numpy as np, zarr
a = zarr.open_array("data/sample.zarr/terrain/elevation", mode="r")[:].astype("f8")
valid = a[a != 0]  # fill_value 0 is "no value", as the viewer shows it
lo, hi = float(valid.min()), float(valid.max())
spots = [(700, 300), (701, 300), (700, 303), (512, 512), (100, 900)]
print(json.dumps({"lo": lo, "hi": hi, "spots": [{"x": x, "y": y, "level": math.floor((a[y, x] - lo) * 255 / (hi - lo) + 0.5)} for y, x in spots]}))
