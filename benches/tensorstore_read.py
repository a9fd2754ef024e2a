"""The second in-process reference for zarrd's large-slice benchmark: reads a region of
an array with TensorStore (its own thread pools on every core, no cache), once to warm up
and then N timed repetitions, and prints what `zarrs-read` prints:

    tensorstore-read STORE_DIR ARRAY_PATH R0:R1,C0:C1 N [--out FILE] [--quiet]

one `rep I SECONDS` line per repetition and a summary line
`tensorstore-read: median_s=… best_s=… median_MBps=… cpu_per_read_s=… bytes=… version=…`
(CPU = this process's user + system time over the timed reads, divided by N)."""
import os
import resource
import statistics
import sys
import time

import tensorstore as ts

try:
    from importlib.metadata import version

    VERSION = version("tensorstore")
except Exception:  # noqa: BLE001 - only a label in the report
    VERSION = "unknown"


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    args = sys.argv[1:]
    if len(args) < 4:
        sys.exit(__doc__)
    store, path, region, reps = args[0], args[1].strip("/"), args[2], int(args[3])
    out = args[args.index("--out") + 1] if "--out" in args else None
    quiet = "--quiet" in args
    ranges = [tuple(int(v) for v in item.split(":")) for item in region.split(",")]
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": os.path.join(os.path.abspath(store), path)},
        "recheck_cached_data": False,
    }
    # No chunk cache: every read fetches and decodes, as zarrd with its caches off does.
    ctx = ts.Context({"cache_pool": {"total_bytes_limit": 0}})
    array = ts.open(spec, read=True, context=ctx).result()
    region_index = tuple(slice(a, b) for a, b in ranges)
    first = array[region_index].read().result()
    if out:
        with open(out, "wb") as f:
            f.write(first.astype(first.dtype.newbyteorder("<"), copy=False).tobytes())
    nbytes = first.nbytes
    del first
    times = []
    cpu0 = cpu_seconds()
    for i in range(reps):
        t0 = time.perf_counter()
        array[region_index].read().result()
        times.append(time.perf_counter() - t0)
        if not quiet:
            print(f"rep {i} {times[-1]:.6f}")
    if reps:
        cpu = (cpu_seconds() - cpu0) / reps
        med = statistics.median(times)
        print(
            f"tensorstore-read: median_s={med:.6f} best_s={min(times):.6f} "
            f"median_MBps={nbytes / med / 1e6:.1f} cpu_per_read_s={cpu:.6f} bytes={nbytes} "
            f"version={VERSION}"
        )


if __name__ == "__main__":
    main()
