"""Many trials of the stopped-writer sequence of ``test_fencing.py``, counted per backend and timing.

Each trial stops an old writer between its lock check and its first write, lets a replacement take the
store over, continues the old writer during or after the replacement's run, and compares the store with a
clean run bit for bit::

    python tests/integration/fencing_trials.py --trials 10      # about a minute per ten trials and row
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.integration.test_fencing import SWEEP, _env, _lock_host, trial  # noqa: E402


def _row(kind: str, when: str, root: Path, reference: Path, endpoint: str | None) -> str:
    """One trial: ``"held"`` (the store equals a clean run and the old writer stopped in one line) or why not."""
    from rmtsweep.run import ready_store
    from rmtsweep.spec import load_sweep
    from rmtsweep.testing import assert_stores_equal
    sweep = root / "fenced.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP))
    store = root / "s.zarr"
    if kind == "array element, disk":
        ready_store(load_sweep(sweep), store, 1)
        args = ["work", str(store), "--share", "0/1"]
        host = _lock_host(store.with_name("s.zarr.share-0-of-1.lock"))
    elif kind == "run, disk":
        args = ["run", str(sweep), "--store", str(store)]
        host = _lock_host(store.with_name("s.zarr.lock"))
    else:
        import s3fs
        fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
        bucket = f"trial-{root.name}"[:60]
        fs.mkdir(bucket)
        store = f"s3://{bucket}/s.zarr"
        args = ["run", str(sweep), "--store", store, "--storage-option", f"endpoint_url={endpoint}"]

        def host() -> str | None:
            try:
                return yaml.safe_load(fs.cat_file(f"{bucket}/s.zarr.lock")).get("host")
            except (OSError, AttributeError, yaml.YAMLError):
                return None
    args += ["--workers", "1", "--in-process", "--no-progress"]
    replaced, stale = trial(root, args, _env(), when, host)
    if replaced.returncode != 0:
        return f"the replacement failed: {replaced.stderr.strip().splitlines()[-1]}"
    if stale.returncode != 1:
        return f"the old writer ended with status {stale.returncode}"
    try:
        if isinstance(store, str):
            import xarray as xr
            assert_stores_equal(xr.open_zarr(store, storage_options={"endpoint_url": endpoint}, chunks=None).load(),
                                reference)
        else:
            assert_stores_equal(store, reference)
    except AssertionError as exc:
        return f"the store differs from a clean run: {str(exc).splitlines()[0]}"
    return "held"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    args = parser.parse_args()
    import logging

    from moto.server import ThreadedMotoServer
    logging.getLogger("werkzeug").setLevel(logging.ERROR)         # the S3 server's request log

    from tests.helpers import build_store
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"})
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = "http://{}:{}".format(*server.get_host_and_port())
    try:
        with tempfile.TemporaryDirectory() as tmp:
            reference = build_store(Path(tmp) / "clean.zarr", SWEEP)
            print("| writer, store | continued | trials | take-overs | store equal to a clean run |")
            print("| --- | --- | --- | --- | --- |")
            for kind in ("array element, disk", "run, disk", "run, S3"):
                for when in ("during", "after"):
                    outcomes = []
                    for k in range(args.trials):
                        slug = "".join(c if c.isalnum() else "-" for c in kind.lower()).replace("--", "-")
                        root = Path(tmp) / f"{slug}-{when}-{k}"
                        root.mkdir()
                        outcomes.append(_row(kind, when, root, reference, endpoint))
                    held = outcomes.count("held")
                    print(f"| {kind} | {when} the replacement's run | {args.trials} | {args.trials} | {held} |",
                          flush=True)
                    for outcome in sorted(set(outcomes) - {"held"}):
                        print(f"|   | {outcome} | | | |")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
