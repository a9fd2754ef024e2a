"""Latency with real storage round trips (issue 25): zarrd reading a sharded array from an
HTTP object store that answers each request after a delay (a delaying storage server on
loopback, standing in for a distant bucket), against the floor those round trips set.

    python3 benches/latency.py [ZARRD_BINARY]        (default: target/release/zarrd)

For each RTT (20 and 50 ms) and each coalescing window (0 = off, the default 2 ms) it
reports, in milliseconds and storage requests (zarrd's own `zarrd_storage_requests_total`):
  - a cold first tile (floor: 2 sequential reads: the shard index, then the inner chunk);
  - a tile in an already-indexed shard (floor: 1 read);
  - a cold 64-tile viewport issued at once, 64 client connections (floor: 2 reads);
  - the same 64 inner-chunk reads done directly against the storage server with the same
    client concurrency (what a client reading the store itself would wait).
Not a test: nothing here decides whether CI passes. Standard library only.
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "tests" / "fixtures" / "conformance"
ARRAY = "sharded/i2_rect_shards"
# 64 tiles of 5x5 over 4 shards: rows 5..25, columns 10..90 (one inner chunk each).
TILES = [f"{r}:{r + 5},{c}:{c + 5}" for r in range(5, 25, 5) for c in range(10, 90, 5)]
DELAY = [0.0]


class Storage(BaseHTTPRequestHandler):
    """Files under STORE, with single and suffix byte ranges, each answer after DELAY."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        # Head and body go out in two writes: without this, Nagle's algorithm holds the body
        # for the client's delayed ACK (40 ms), which would swamp the delay measured.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def answer(self, body: bool):
        time.sleep(DELAY[0])
        path = (STORE / self.path.lstrip("/").split("?")[0]).resolve()
        if STORE not in path.parents or not path.is_file():
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = path.read_bytes()
        start, end, status = 0, len(data), 200
        spec = self.headers.get("Range", "")
        if spec.startswith("bytes="):
            a, _, b = spec[6:].partition("-")
            if a == "":
                start = max(0, len(data) - int(b))
            else:
                start, end = int(a), min(len(data), int(b) + 1 if b else len(data))
            status = 206
        self.send_response(status)
        self.send_header("Content-Length", str(end - start))
        self.send_header("ETag", f'"{path.stat().st_mtime_ns}-{len(data)}"')
        self.send_header("Last-Modified", self.date_time_string(path.stat().st_mtime))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.end_headers()
        if body:
            self.wfile.write(data[start:end])

    def do_GET(self):
        self.answer(True)

    def do_HEAD(self):
        self.answer(False)


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def get(port: int, path: str, headers=None, conn=None):
    c = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", path, headers=headers or {})
    r = c.getresponse()
    body = r.read()
    if conn is None:
        c.close()
    return r.status, body


def storage_requests(port: int) -> int:
    _, text = get(port, "/metrics")
    for line in text.decode().splitlines():
        if line.split(" ")[0] == "zarrd_storage_requests_total":
            return int(float(line.split(" ")[1]))
    return 0


def timed(fn):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def run_zarrd(binary: str, store_port: int, window_ms: int):
    port = free_port()
    work = tempfile.mkdtemp()
    cfg = Path(work) / "z.toml"
    cfg.write_text(
        f'listen = "127.0.0.1:{port}"\n[storage]\ncoalesce_window_ms = {window_ms}\n'
        f'[datasets.d]\nurl = "http://127.0.0.1:{store_port}/data.zarr"\n'
    )
    proc = subprocess.Popen([binary, "serve", "--config", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            if get(port, "/healthz")[0] == 200:
                return proc, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("zarrd did not start")


def measure(binary: str, store_port: int, rtt: float, window_ms: int) -> dict:
    DELAY[0] = rtt
    out = {}
    proc, port = run_zarrd(binary, store_port, window_ms)
    try:
        # Metadata first (not what is measured): the array's zarr.json.
        get(port, f"/v1/arrays/d/{ARRAY}")
        before = storage_requests(port)
        out["first_tile_ms"] = timed(lambda: get(port, f"/v1/slice/d/{ARRAY}?s={TILES[0]}&format=bin"))
        out["first_tile_requests"] = storage_requests(port) - before
        before = storage_requests(port)
        out["indexed_tile_ms"] = timed(lambda: get(port, f"/v1/slice/d/{ARRAY}?s={TILES[1]}&format=bin"))
        out["indexed_tile_requests"] = storage_requests(port) - before
    finally:
        proc.terminate()
        proc.wait()
    proc, port = run_zarrd(binary, store_port, window_ms)
    try:
        get(port, f"/v1/arrays/d/{ARRAY}")
        before = storage_requests(port)
        with ThreadPoolExecutor(len(TILES)) as pool:
            t = time.perf_counter()
            statuses = list(pool.map(lambda s: get(port, f"/v1/slice/d/{ARRAY}?s={s}&format=bin")[0], TILES))
            out["viewport_ms"] = (time.perf_counter() - t) * 1000
        assert set(statuses) == {200}, statuses
        out["viewport_requests"] = storage_requests(port) - before
        # The same 64 inner chunks read directly from storage, 64 connections at once.
        _, listing = get(port, f"/v1/chunks/d/{ARRAY}?s=5:25,10:90&inner=true&limit=1000")
    finally:
        proc.terminate()
        proc.wait()
    ranges = [
        (shard["key"], inner["offset"], inner["nbytes"])
        for shard in json.loads(listing)["chunks"]
        for inner in shard.get("inner") or []
        if inner.get("state") == "present"
    ]
    # The same inner chunks read directly from storage, one connection each, all at once.
    with ThreadPoolExecutor(max(len(ranges), 1)) as pool:
        t = time.perf_counter()
        list(pool.map(lambda r: get(store_port, f"/data.zarr/{ARRAY}/{r[0]}", {"Range": f"bytes={r[1]}-{r[1] + r[2] - 1}"}), ranges))
        out["direct_reads_ms"] = (time.perf_counter() - t) * 1000
    out["direct_reads"] = len(ranges)
    return out


def main() -> int:
    binary = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target" / "release" / "zarrd")
    # A listen backlog for 64 connections at once (the default 5 drops SYNs: 1 s retries).
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Storage)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    store_port = server.server_address[1]
    rows = []
    for rtt_ms in (20, 50):
        for window in (0, 2):
            m = measure(binary, store_port, rtt_ms / 1000, window)
            rows.append((rtt_ms, window, m))
            print(json.dumps({"rtt_ms": rtt_ms, "window_ms": window, **{k: round(v, 1) for k, v in m.items()}}))
    print()
    print("| RTT | window | first tile (floor 2 RTT) | indexed tile (floor 1) | 64-tile viewport (floor 2) | storage requests: first / indexed / viewport | the inner chunks read directly |")
    print("|---|---|---|---|---|---|---|")
    for rtt, window, m in rows:
        print(
            f"| {rtt} ms | {window} ms | {m['first_tile_ms']:.0f} ms ({m['first_tile_ms'] / (2 * rtt):.2f}x) "
            f"| {m['indexed_tile_ms']:.0f} ms ({m['indexed_tile_ms'] / rtt:.2f}x) "
            f"| {m['viewport_ms']:.0f} ms ({m['viewport_ms'] / (2 * rtt):.2f}x) "
            f"| {m['first_tile_requests']} / {m['indexed_tile_requests']} / {m['viewport_requests']} "
            f"| {m['direct_reads_ms']:.0f} ms ({m['direct_reads']} reads) |"
        )
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
