"""The live page under many readers: pages served by ``rmtsweep serve`` to 1, 8 and 20 clients at once.

Run from the repository root::

    python benchmarks/live_clients.py                      # a tiny store built here; 1, 8, 20 clients, 30 s each
    python benchmarks/live_clients.py --store S.zarr --clients 1 8 --seconds 20

Each client is a thread that fetches the page (the URL the server prints, its token included) again and again,
over loopback only, until the time is up or ``--max-pages`` pages were served in all. A page fetched is a new
session of the page, as a browser's reload would make. After the clients stop, one more page is fetched alone:
how long a reader waits once the crowd is gone. Prints a Markdown table and a JSON line; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def fetch(url: str, timeout: float) -> float:
    """Seconds to fetch ``url`` whole."""
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=timeout) as page:
        page.read()
    return time.perf_counter() - t0


def crowd(store: Path, clients: int, seconds: float, max_pages: int, interval: float) -> dict:
    """Serve ``store`` and let ``clients`` threads fetch its page for ``seconds``; the counts and latencies."""
    server = subprocess.Popen([sys.executable, "-m", "rmtsweep.cli", "serve", str(store), "--port", "0",
                               "--interval", str(interval)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        found = re.search(r"http://\S+", line)
        if not found:
            raise SystemExit(f"the server printed no URL: {line}{server.stderr.read()}")
        url = found.group(0)
        fetch(url, 300)                                  # warm-up: imports and the first reading are not counted
        times: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()
        deadline = time.monotonic() + seconds

        def client() -> None:
            while time.monotonic() < deadline:
                with lock:
                    if len(times) >= max_pages:
                        return
                try:
                    took = fetch(url, max(1.0, deadline - time.monotonic() + 60))
                except OSError as exc:
                    with lock:
                        errors.append(type(exc).__name__)
                    continue
                with lock:
                    times.append(took)

        t0 = time.monotonic()
        threads = [threading.Thread(target=client) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        after = fetch(url, 300)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.communicate()
    return {"clients": clients, "pages": len(times), "errors": len(errors), "wall_s": round(wall, 1),
            "pages_per_s": round(len(times) / wall, 2),
            "median_s": round(statistics.median(times), 3) if times else None,
            "max_s": round(max(times), 3) if times else None, "alone_after_s": round(after, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="a store to serve (default: a tiny one built here)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 8, 20])
    parser.add_argument("--seconds", type=float, default=30.0, help="how long each crowd fetches")
    parser.add_argument("--max-pages", type=int, default=500, help="pages in all per crowd, at most")
    parser.add_argument("--interval", type=float, default=5.0, help="the server's --interval")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store
        if store is None:
            from tests.helpers import build_store
            store = build_store(Path(tmp) / "tiny.zarr")
        rows = [crowd(store, n, args.seconds, args.max_pages, args.interval) for n in args.clients]
    print(f"command: python benchmarks/live_clients.py {' '.join(sys.argv[1:])}".rstrip())
    print("| clients | pages | errors | wall (s) | pages/s | median (s) | max (s) | one page after (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['clients']} | {r['pages']} | {r['errors']} | {r['wall_s']} | {r['pages_per_s']} | "
              f"{r['median_s']} | {r['max_s']} | {r['alone_after_s']} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
