"""A store in object storage against one on disk: the sweep written, then each reading command; times and S3 requests.

Run from the repository root (needs the test extras: s3fs and moto's server)::

    python benchmarks/object_storage.py            # the 20,000-point store of benchmarks/scale.py (about 2 min)
    python benchmarks/object_storage.py --quick    # a 2,000-point store

Runs the sweep twice in this process on a 2-worker LocalCluster, into a directory and into a bucket of a moto
S3 server on loopback (the workers writing their chunks there), then runs ``status``, ``verify``, ``compare
--no-write`` and ``export`` as fresh processes on the path and on the ``s3://`` URL. Prints one Markdown table
(seconds on disk, seconds on S3, their ratio, the requests the server answered) and a JSON line of the raw
numbers. Loopback has no latency: a real
bucket adds its round trip to every request, so the request count is the number to carry over.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import throughput, trivial_sweep


def into_bucket(sweep: dict, url: str, endpoint: str, workers: int) -> dict:
    """:func:`scale.throughput` with the store at ``url``: the sweep run end to end into the bucket."""
    from distributed import Client, LocalCluster

    from rmtsweep import SweepFile, parse_sweep, run_sweep
    sf = SweepFile(parse_sweep(sweep, "<benchmark>"), "<benchmark>", json.dumps(sweep))
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.run(lambda: None)
        t0 = time.perf_counter()
        report = run_sweep(sf, url, client, progress=False, storage_options={"endpoint_url": endpoint})
        wall = time.perf_counter() - t0
    return {"wall": wall, "cells": report.cells_computed, "tasks": report.tasks_computed}

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}


class Counting:
    """A moto S3 server on loopback that counts the requests it answers (its WSGI app wrapped)."""

    def __init__(self) -> None:
        import logging

        from moto.server import ThreadedMotoServer
        logging.getLogger("werkzeug").setLevel(logging.ERROR)       # one log line per request otherwise
        self.server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.requests = 0

    def __enter__(self) -> str:
        self.server.start()
        app = self.server._server.app                   # werkzeug's server: count each request it hands on

        def counting(environ, start_response):
            self.requests += 1
            return app(environ, start_response)

        self.server._server.app = counting
        host, port = self.server.get_host_and_port()
        return f"http://{host}:{port}"

    def __exit__(self, *exc) -> None:
        self.server.stop()


COMMANDS = {"status": ["status", "{where}"],
            "verify": ["verify", "{where}"],
            "compare": ["compare", "{where}", "--no-write", "--worst", "3"],
            "export": ["export", "{where}", "--format", "csv", "--out", "{out}"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    grid = (10, 10, 20) if args.quick else (20, 20, 50)
    os.environ.update(CREDENTIALS)
    import s3fs
    rows: dict[str, dict[str, tuple[float, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sweep = trivial_sweep("objects", *grid)
        made = throughput(sweep, tmp, 2, keep=True)
        store = tmp / "objects.zarr"
        server = Counting()
        with server as endpoint:
            fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
            fs.mkdir("bench")
            before = server.requests
            written = into_bucket(sweep, "s3://bench/objects.zarr", endpoint, 2)
            run_requests = server.requests - before
            objects = len(fs.find("bench/objects.zarr"))
            env = {**os.environ, "AWS_ENDPOINT_URL": endpoint}
            for name, template in COMMANDS.items():
                rows[name] = {}
                for tag, where in (("disk", str(store)), ("s3", "s3://bench/objects.zarr")):
                    cmd = [a.format(where=where, out=tmp / f"{name}-{tag}.csv") for a in template]
                    before = server.requests
                    t0 = time.perf_counter()
                    done = subprocess.run([sys.executable, "-m", "rmtsweep.cli", *cmd], env=env, capture_output=True,
                                          text=True, timeout=1200)
                    seconds = time.perf_counter() - t0
                    if done.returncode != 0:
                        print(f"{' '.join(cmd)}: {done.stderr.strip()}", file=sys.stderr)
                        return 1
                    rows[name][tag] = (seconds, server.requests - before)
    points = grid[0] * grid[1] * grid[2]
    print(f"store: {points:,} points, {made['tasks']} tasks, {made['files']} files on disk, {objects} objects in the "
          f"bucket\n")
    print("| command | disk (s) | S3 on loopback (s) | ratio | S3 requests |")
    print("|---|---|---|---|---|")
    print(f"| run (2 workers; cells/s) | {made['wall']:.2f} ({points / made['wall']:,.0f}) | {written['wall']:.2f} "
          f"({points / written['wall']:,.0f}) | {written['wall'] / made['wall']:.2f}x | {run_requests} "
          f"({run_requests / written['tasks']:.0f} per task) |")
    for name, t in rows.items():
        print(f"| {name} | {t['disk'][0]:.2f} | {t['s3'][0]:.2f} | {t['s3'][0] / t['disk'][0]:.2f}x | {t['s3'][1]} |")
    print(json.dumps({"points": points, "tasks": made["tasks"], "objects": objects, "run_disk_s": made["wall"],
                      "run_s3_s": written["wall"], "run_requests": run_requests,
                      "rows": {k: {"disk_s": v["disk"][0], "s3_s": v["s3"][0], "requests": v["s3"][1]}
                               for k, v in rows.items()}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
