"""The theory cache (rmtsweep.theory.cache): entries checked on reading, whole under concurrent writers, the same
results and stores with it, warm or cold, as without it, and ``rmtsweep cache``."""

from __future__ import annotations

import copy
import multiprocessing
import os
from pathlib import Path

import dask.config
import numpy as np
import pytest
import xarray as xr
import yaml

from rmtsweep.model.correlation import make_correlation
from rmtsweep.run.theory_cache import MAGIC, SUFFIX, FolderCache
from rmtsweep.theory.null_law import pooled_null
from rmtsweep.theory.pooled_spikes import PooledSpikes, pooled_spikes
from tests.helpers import BASE, run_main

SNR = [0.0, 2.0, 4.0]
CELL = (np.array([0.4, 0.3, 0.2, 0.1]), 0.5, 0.5, 60)         # w, delta, gamma, d (V = N = 120)
FIELDS = ("lambda1", "lambda1_se", "overlap", "overlap_se", "location", "scale")


def _spikes(cache: FolderCache | None, cell=CELL) -> PooledSpikes:
    w, delta, gamma, d = cell
    return pooled_spikes(SNR, w, make_correlation("prefix", L=2), delta, gamma, d, cache=cache)


def _same(a: PooledSpikes, b: PooledSpikes) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True) for f in FIELDS)


@pytest.fixture(scope="module")
def uncached() -> PooledSpikes:
    return _spikes(None)


def test_an_entry_holds_the_draws_and_gives_the_uncached_result(tmp_path, uncached):
    cache = FolderCache(tmp_path / "c")
    assert not (tmp_path / "c").exists()                  # created on the first write
    cold = _spikes(cache)
    [entry] = cache.files()
    warm = _spikes(cache)
    assert _same(cold, uncached) and _same(warm, uncached)
    assert entry.name.endswith(SUFFIX) and entry.read_bytes().startswith(MAGIC)
    arrays = cache.load(entry.name.removesuffix(SUFFIX))
    assert arrays is not None and {n.rsplit("_", 1)[0] for n in arrays} == {"p", "nodes", "weights", "a2var"}
    assert arrays["p_0"].shape == (120,)                  # D's V eigenvalues of the first draw
    # pooled_null keeps its own entry, of the same draws' eigenvalues: its null is pooled_spikes'
    null = pooled_null(CELL[0], make_correlation("prefix", L=2), *CELL[1:], cache=cache)
    assert len(cache.files()) == 2
    np.testing.assert_array_equal(null.location, uncached.location)


def test_signs_from_a_users_sampler_are_not_cached(tmp_path):
    """The sampler's code, which no key holds, decides the draws: a changed sampler must not meet old entries."""
    from rmtsweep.model.correlation import PythonCorrelation
    corr = PythonCorrelation(function="tests.unit.test_plugins:full", sampler="tests.unit.test_plugins:copy_label")
    cache = FolderCache(tmp_path)
    cached = pooled_spikes(SNR, CELL[0], corr, *CELL[1:], cache=cache)
    assert cache.files() == []
    np.testing.assert_array_equal(cached.lambda1, pooled_spikes(SNR, CELL[0], corr, *CELL[1:]).lambda1)


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


DAMAGES = {
    "a byte of the payload flipped": lambda data, other: _flip(data, len(data) - 100),
    "a byte of the checksum flipped": lambda data, other: _flip(data, len(MAGIC) + 64 + 3),
    "truncated": lambda data, other: data[:len(data) // 2],
    "empty": lambda data, other: b"",
    "another key's whole entry": lambda data, other: other,
    "not an entry": lambda data, other: b"PK\x03\x04" + os.urandom(200),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_or_foreign_entry_is_ignored_and_rewritten(tmp_path, uncached, damage):
    cache = FolderCache(tmp_path)
    _spikes(cache)
    [entry] = cache.files()
    good = entry.read_bytes()
    _spikes(cache, (CELL[0], 0.5, 1.0, 60))                # another cell's entry, valid in itself
    other = next(p for p in cache.files() if p != entry).read_bytes()
    entry.write_bytes(DAMAGES[damage](good, other))
    assert cache.load(entry.name.removesuffix(SUFFIX)) is None
    assert _same(_spikes(cache), uncached)
    assert entry.read_bytes() == good                       # computed again and rewritten


def test_an_entry_is_read_not_recomputed(tmp_path, uncached):
    """A valid entry of other values is used as it is: the warm result comes from the cache (the checks above are
    what keeps a wrong one out)."""
    cache = FolderCache(tmp_path)
    _spikes(cache)
    [entry] = cache.files()
    key = entry.name.removesuffix(SUFFIX)
    arrays = cache.load(key)
    assert arrays is not None
    cache.save(key, {k: v * 1.5 if k.startswith("p_") else v for k, v in arrays.items()})
    assert not np.array_equal(_spikes(cache).location, uncached.location)


def _compete(folder: str, start, results, rounds: int) -> None:
    """In a process of its own: wait for the others, then compute the cells and write and read one key over and
    over; what it got, on ``results``."""
    cache = FolderCache(Path(folder))
    start.wait(timeout=300)
    out = []
    for delta in (0.5, 1.0):
        ps = _spikes(cache, (CELL[0], delta, 0.5, 60))
        out += [ps.lambda1, ps.location]
    arrays = {"x": np.arange(50_000, dtype=float)}
    whole = True
    for _ in range(rounds):
        cache.save("ab" * 32, arrays)
        got = cache.load("ab" * 32)
        whole &= got is not None and np.array_equal(got["x"], arrays["x"])     # never a partial or missing entry
    results.put((out, whole))


def test_concurrent_writers_leave_whole_entries_and_equal_results(tmp_path):
    expected = []
    for delta in (0.5, 1.0):
        ps = _spikes(None, (CELL[0], delta, 0.5, 60))
        expected += [ps.lambda1, ps.location]
    context = multiprocessing.get_context("fork")           # no import per process: they start at once
    start, queue = context.Barrier(4), context.Queue()
    workers = [context.Process(target=_compete, args=(str(tmp_path), start, queue, 30)) for _ in range(4)]
    for w in workers:
        w.start()
    results = [queue.get(timeout=600) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    for got, whole in results:
        assert whole
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got, expected, strict=True))
    cache = FolderCache(tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert not [n for n in names if n.endswith(".tmp")]          # no temporary file left behind
    assert len(names) == 3 and all(cache.load(n.removesuffix(SUFFIX)) is not None for n in names)


STORE_SWEEP = {**copy.deepcopy(BASE), "name": "cached", "d": 40}       # class-centred, T = 4: pooled nulls


def _store(tmp_path: Path, name: str, cache: str, capsys) -> xr.Dataset:
    from rmtsweep import open_store
    sweep = tmp_path / "cached.yaml"
    sweep.write_text(yaml.safe_dump(STORE_SWEEP))
    with dask.config.set({"rmtsweep.theory.cache": cache}):
        code, _, err = run_main(["run", str(sweep), "--store", str(tmp_path / name), "--workers", "1",
                                 "--in-process", "--no-progress"], capsys)
    assert code == 0, err
    return open_store(tmp_path / name)


def _theory(ds: xr.Dataset) -> xr.Dataset:
    """The theory arrays, with their own attributes (not the store's: its runs' times differ)."""
    out = ds[[v for v in ds.data_vars if v.startswith(("theory_", "paper_", "finite_size_", "pooled_"))]].load()
    out.attrs = {}
    return out


@pytest.mark.slow
def test_a_store_is_the_same_cold_warm_and_without_the_cache(tmp_path, capsys):
    folder = tmp_path / "cache"
    cold = _store(tmp_path, "cold.zarr", str(folder), capsys)
    entries = FolderCache(folder).files()
    assert entries                                              # the pooled draws of its T = 4 cells
    stamps = {p: p.stat().st_mtime_ns for p in entries}
    warm = _store(tmp_path, "warm.zarr", str(folder), capsys)
    assert {p: p.stat().st_mtime_ns for p in FolderCache(folder).files()} == stamps      # read, not rewritten
    off = _store(tmp_path, "off.zarr", "none", capsys)
    assert "pooled_null_location" in cold and bool(np.isfinite(cold["pooled_null_location"]).any())
    for other in (warm, off):
        xr.testing.assert_identical(_theory(other), _theory(cold))
        for name in _theory(cold).data_vars:
            assert cold[name].values.tobytes() == other[name].values.tobytes(), name
        assert other.attrs["config"] == cold.attrs["config"]
    assert "cache" not in cold.attrs["config"]["theory"]


def test_the_cache_command_shows_and_clears(tmp_path, capsys):
    folder = tmp_path / "cache"
    with dask.config.set({"rmtsweep.theory.cache": str(folder)}):
        assert run_main(["cache"], capsys) == (0, f"theory cache {folder}: 0 entries, 0 B\n", "")   # missing: empty
        cache = FolderCache(folder)
        for key in ("0" * 64, "1" * 64):
            cache.save(key, {"x": np.zeros(1000)})
        (folder / "unrelated.txt").write_text("kept")
        size = sum(p.stat().st_size for p in cache.files())
        code, out, _ = run_main(["cache"], capsys)
        assert code == 0 and out == f"theory cache {folder}: 2 entries, {size / 1024:.1f} KiB\n"
        assert run_main(["cache", "--clear"], capsys) == (0, f"theory cache {folder}: removed 2 entries\n", "")
        assert run_main(["cache"], capsys)[1] == f"theory cache {folder}: 0 entries, 0 B\n"
        assert (folder / "unrelated.txt").exists()
    with dask.config.set({"rmtsweep.theory.cache": "none"}):
        assert run_main(["cache"], capsys) == (0, "theory cache: off (rmtsweep.theory.cache = none)\n", "")


def test_the_default_folder_is_the_users_cache(monkeypatch, tmp_path):
    from rmtsweep.run.theory_cache import folder
    with dask.config.set({"rmtsweep.theory.cache": "default"}):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        assert folder() == tmp_path / "rmtsweep" / "theory"
        monkeypatch.setenv("XDG_CACHE_HOME", "relative")          # not absolute: ignored, as the spec says
        assert folder() == Path.home() / ".cache" / "rmtsweep" / "theory"
    with dask.config.set({"rmtsweep.theory.cache": None}):        # the environment's `none` reaches dask as None
        assert folder() is None


def test_the_test_suite_keeps_its_cache_out_of_the_users():
    from rmtsweep.run.theory_cache import folder
    assert folder() == Path(os.environ["DASK_RMTSWEEP__THEORY__CACHE"]).absolute()
    assert not str(folder()).startswith(str(Path.home() / ".cache"))


def test_the_key_changes_with_everything_that_decides_an_entry(monkeypatch):
    from rmtsweep.theory import pooling
    from rmtsweep.theory.null_law import pooled_model, pooled_seed_words

    def key(w=CELL[0], corr=make_correlation("prefix", L=2), delta=0.5, gamma=0.5, d=60, seed=0, draws=16, steps=24):
        model = pooled_model(np.asarray(w, float), corr, delta, gamma, d)
        return pooling.entry_key("pooled-draws", model, pooled_seed_words(np.asarray(w, float), delta, gamma, d, seed),
                                 draws, lanczos_steps=steps)

    base = key()
    assert base == key() and len(base) == 64
    variants = [key(w=[0.4, 0.3, 0.1, 0.2]), key(corr=make_correlation("prefix", L=3)),
                key(corr=make_correlation("decay", r=0.5)), key(delta=1.0), key(gamma=1.0), key(d=61), key(seed=1),
                key(draws=8), key(steps=12), key(w=[0.4, 0.3, 0.2, 0.1 + 1e-16])]
    monkeypatch.setattr(pooling, "CACHE_VERSION", pooling.CACHE_VERSION + 1)
    variants.append(key())
    assert len({base, *variants}) == len(variants) + 1
