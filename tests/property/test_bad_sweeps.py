"""Generated bad sweeps through the real command line: one line and exit 2, or a plan; never a traceback or a store.

Each example damages a valid sweep (tests.property.strategies) at one or two of its fields: a value of another
type, a number out of any range, an empty list, a key with its colon's space lost, an unknown key. The run is
stopped where a cluster would start: anything that gets that far was judged runnable. The examples are
derandomized (Hypothesis draws them from the test itself): the same on every run and machine.
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmtsweep.cli import main
from tests.property.strategies import sweeps

FIELDS = ["d", "replicates", "seed", "top_k", "correlation", "table_centering", "grid.delta", "grid.gamma",
          "grid.snr", "grid.T", "grid.weights", "name", "replicates_per_task", "observables"]
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                 st.text(max_size=12), st.just([]), st.just({}), st.lists(st.integers(-3, 3), max_size=3),
                 st.dictionaries(st.sampled_from(["model:markov", "start:0", "num:5", "scheme:mean", "x"]),
                                 st.none(), min_size=1, max_size=2))


class ClusterReached(Exception):
    """The run got as far as starting a cluster: its input was judged runnable."""


def _put(data: dict, field: str, value) -> None:
    *parents, last = field.split(".")
    node = data
    for p in parents:
        node = node.setdefault(p, {}) if isinstance(node, dict) else {}
    if isinstance(node, dict):
        node[last] = value


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sweep=sweeps(), damage=st.lists(st.tuples(st.sampled_from(FIELDS), JUNK), min_size=1, max_size=2))
def test_a_damaged_sweep_is_one_line_or_a_plan_and_never_leaves_a_store(sweep, damage, tmp_path, capsys,
                                                                       monkeypatch):
    def reached(*args, **kwargs):
        raise ClusterReached
    monkeypatch.setattr("rmtsweep.cluster.engine.connect", reached)
    data = copy.deepcopy(sweep)
    for field, value in damage:
        _put(data, field, value)
    where = Path(tempfile.mkdtemp(dir=tmp_path))            # one folder per example: hypothesis reuses tmp_path
    path, store = where / "bad.yaml", where / "bad.zarr"
    path.write_text(yaml.safe_dump(data))
    for argv in (["run", str(path), "--store", str(store), "--dry-run"], ["run", str(path), "--store", str(store)]):
        runnable = False
        try:
            main(argv)
        except SystemExit as exc:
            err = capsys.readouterr().err
            assert exc.code in (0, 2), err
            if exc.code == 2:
                lines = err.strip().splitlines()
                assert len(lines) == 1 and lines[0].startswith("rmtsweep: error: "), err
        except ClusterReached:
            runnable = True                         # the store is made before the cluster: a run had begun
        else:
            capsys.readouterr()
        assert "Traceback" not in capsys.readouterr().err
        assert runnable or not store.exists(), argv
