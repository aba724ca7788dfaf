"""Property: a store reads back exactly what its tasks wrote, and nothing where no task wrote.

Random small sweeps; every task is left unwritten, written (data only, as a worker does before the
driver marks it) or written and marked done, in a random order and with a random run number. The examples
are derandomized (Hypothesis draws them from the test itself): the same on every run and machine.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmtsweep import open_store
from rmtsweep.run.block import result_names
from rmtsweep.run.cost import Blocking, choose_blocking
from rmtsweep.run.work import compute_task
from rmtsweep.run.grid import tasks
from rmtsweep.run.runner import make_template
from rmtsweep.spec import SweepFile, parse_sweep
from rmtsweep.store import Store, Writer, blocking_of, tasks_done
from tests.property.strategies import sweeps

STATES = ("unwritten", "written", "done")


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=sweeps(), choices=st.data())
def test_store_reads_back_what_was_written_and_empty_elsewhere(data, choices):
    sweep = parse_sweep(data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.zarr"
        # the template without its theory at its size (``theory_pending``, as a run first writes it): what the tasks
        # write is read back the same either way, and that theory took two thirds of this test's time
        sweep_file = SweepFile(sweep, str(path.with_suffix(".yaml")), yaml.safe_dump(data))
        Store(path).create_if_missing(lambda b: make_template(sweep_file, b, defer=True),
                                      choose_blocking(sweep).chunking())
        all_tasks = list(tasks(sweep, Blocking(*blocking_of(path))))
        n = len(all_tasks)
        # each task's state, run number and place in the order from one drawn seed: three lists of n draws each
        # overran Hypothesis's buffer on the larger sweeps, which it then discarded (a health check fails when
        # most do), so that the sweeps with the most tasks were never tried
        rng = np.random.default_rng(choices.draw(st.integers(0, 2**32 - 1), label="seed of the states"))
        states = [STATES[i] for i in rng.integers(0, len(STATES), n)]
        runs = [int(r) for r in rng.integers(0, 6, n)]
        order = [int(i) for i in rng.permutation(n)]
        writer = Writer(path)
        written: dict[int, dict[str, np.ndarray]] = {}
        for i in order:
            if states[i] == "unwritten":
                continue
            written[i] = compute_task(all_tasks[i])
            writer.write_block(all_tasks[i].region, written[i], all_tasks[i].todo, run=runs[i])
            if states[i] == "done":
                writer.mark_done(all_tasks[i].region)
        ds = open_store(path).load()
        assert tasks_done(path) == (states.count("done"), n)      # what a run's last line says, from done alone

        g = sweep.grid
        assert np.array_equal(ds.delta.values, g.delta) and np.array_equal(ds.gamma.values, g.gamma)
        assert np.array_equal(ds.snr.values, g.snr) and np.array_equal(ds.T.values, g.T)
        assert list(ds.weights.values) == sweep.weight_labels()
        names = result_names(all_tasks[0])
        assert set(names) <= set(ds.data_vars)
        for i, task in enumerate(all_tasks):
            region, state = task.region, states[i]
            for name in names:
                got = ds[name].values[region]
                if state == "unwritten":
                    assert np.all(np.isnan(got)), (name, i)
                else:
                    expected = written[i][name]
                    assert got.shape == expected.shape and got.dtype == expected.dtype, name
                    assert np.array_equal(got, expected), (name, i)   # bit for bit (no NaN: every entry computed)
            assert np.all(ds["done"].values[region] == (state == "done")), i
            assert np.all(ds["run"].values[region] == (-1 if state == "unwritten" else runs[i])), i
