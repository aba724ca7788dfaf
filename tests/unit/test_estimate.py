"""The dry run's estimate: start-up, a new store's theory and the tasks, each part present when it applies."""

from __future__ import annotations

import copy
import json

import pytest

from rmtsweep.run.plan import CLOSE_SECONDS, TEMPLATE_SECONDS, plan
from rmtsweep.spec import parse_sweep
from rmtsweep.theory.estimate import LIMIT_SECONDS, theory_seconds
from rmtsweep.theory.grid import TheoryBudgets
from rmtsweep.theory.on_grid import theory_dataset
from tests.helpers import BASE, MEDIUM, run_main


def test_the_wall_estimate_adds_start_up_theory_and_waves_of_tasks():
    p = plan(parse_sweep(BASE), threads=2)
    per_task = p.core_seconds / p.tasks
    # the theory shares the worker threads with the tasks, but its one-task part cannot be shared
    waves = -(-p.tasks // 2) * per_task
    assert 0 < p.theory_serial_seconds <= p.theory_seconds
    assert p.wall_seconds(2, 3.0) == pytest.approx(3.0 + TEMPLATE_SECONDS + max(p.theory_seconds / 2 + waves,
                                                                                p.theory_serial_seconds) + CLOSE_SECONDS)
    assert p.wall_seconds(2, 3.0, new_store=False) == pytest.approx(3.0 + -(-p.tasks // 2) * per_task + CLOSE_SECONDS)
    assert p.compute_seconds(1000) == pytest.approx(per_task)        # one wave
    assert p.compute_seconds(2, left=0.0) == 0


@pytest.mark.parametrize("budgets", [TheoryBudgets(), TheoryBudgets(pooled_budget=0, finite_size_budget=0,
                                                                     one_token_budget=0)], ids=["default", "none"])
def test_the_theory_estimate_counts_what_the_theory_computes(budgets):
    """A part of the estimate is there exactly when the store's theory holds its arrays."""
    data = copy.deepcopy(BASE)
    data["grid"]["T"] = [1, 4]
    data["correlation"] = {"model": "iid"}
    sweep = parse_sweep(data)
    ds = theory_dataset(sweep, budgets=budgets)
    seconds = theory_seconds(sweep, budgets)
    sized = "pooled_null_location" in ds or "finite_size_null_location" in ds
    assert (seconds > LIMIT_SECONDS) == sized
    assert theory_seconds(parse_sweep(MEDIUM)) == LIMIT_SECONDS        # an uncentred table: limits only


def test_the_dry_run_prints_the_estimate_and_its_json(tmp_path, capsys):
    sweep = tmp_path / "tiny.yaml"
    sweep.write_text(json.dumps(BASE))
    code, out, err = run_main(["run", str(sweep), "--store", str(tmp_path / "s.zarr"), "--dry-run", "--workers", "2"],
                              capsys)
    assert code == 0 and "estimate: about" in out and "end to end on 2 worker threads" in out, out + err
    code, out, err = run_main(["run", str(sweep), "--store", str(tmp_path / "s.zarr"), "--dry-run", "--workers", "2",
                               "--json"], capsys)
    got = json.loads(out)
    parts = got["startup_seconds"] + TEMPLATE_SECONDS + max(got["theory_seconds"] / 2 + got["compute_seconds"],
                                                            got["theory_serial_seconds"]) + CLOSE_SECONDS
    assert code == 0 and got["estimated_wall_seconds"] == pytest.approx(parts)
    assert got["tasks"] >= 1 and got["worker_threads"] == 2 and not (tmp_path / "s.zarr").exists()
    code, out, err = run_main(["run", str(sweep), "--store", str(tmp_path / "s.zarr"), "--json"], capsys)
    assert code == 2 and "--json goes with --dry-run" in err


@pytest.mark.parametrize(("load", "line"), [
    (0.3, r"machine: 2 cores, load 0\.3: the estimate holds on an idle machine like this one"),
    (12.0, r"machine: 2 cores, busy: load 12\.0; expect at least 7\.0x the idle estimate, .* or more"),
])
def test_the_dry_run_says_what_it_assumed_of_the_machines_load(load, line, tmp_path, capsys, monkeypatch):
    """Two worker threads beside a run queue of 12 on 2 cores get 2/14 of the machine: 7x the idle time."""
    import re
    monkeypatch.setattr("rmtsweep.cli.dry_run._machine", lambda: (2, load))
    sweep = tmp_path / "tiny.yaml"
    sweep.write_text(json.dumps(BASE))
    argv = ["run", str(sweep), "--store", str(tmp_path / "s.zarr"), "--dry-run", "--workers", "2"]
    code, out, err = run_main(argv, capsys)
    assert code == 0 and re.search(line, out), out + err
    code, out, err = run_main([*argv, "--json"], capsys)
    got = json.loads(out)
    factor = max(1.0, (load + 2) / 2)
    assert got["load"] == load and got["cores"] == 2 and got["busy_factor"] == pytest.approx(factor)
    assert got["estimated_wall_seconds_at_load"] == pytest.approx(factor * got["estimated_wall_seconds"])
