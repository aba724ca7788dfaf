"""``ds.rmt``: analysis from a notebook, lazy until asked."""

from __future__ import annotations

import os
import subprocess
import sys

import dask
import numpy as np
import pytest

import rmtsweep
from rmtsweep.analysis.compare import compare


def _no_compute(dsk, keys, **kwargs):
    raise RuntimeError("something computed before it was asked for")


def test_compare_and_transition_stay_lazy(reference):
    _, store = reference
    ds = rmtsweep.open_store(store)
    with dask.config.set(scheduler=_no_compute):             # like xarray's raise_if_dask_computes
        cmp = ds.rmt.compare()
        t = ds.rmt.transition()
        with pytest.raises(RuntimeError, match="computed before"):
            cmp["lambda1_mean"].values  # noqa: B018 - the guard works: asking computes
    eager = compare(store)
    assert np.allclose(cmp["lambda1_mean"].compute(), eager["lambda1_mean"], equal_nan=True)
    assert np.allclose(t.compute(), eager["transition_snr_empirical"], equal_nan=True)


def test_plot_from_the_accessor_shows_in_a_notebook_and_saves_its_files(reference, tmp_path):
    import nbformat
    from nbclient import NotebookClient

    _, store = reference
    m = rmtsweep.open_store(store).rmt.plot(x="snr", y="delta", var="overlap")
    assert not list(tmp_path.iterdir())                              # nothing written until saved
    html, png = m.save(tmp_path)
    assert html.exists() and png.exists() and html.name == "tiny-overlap-snr-delta.html"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # shown by a real kernel as the last expression of a cell, as a notebook does
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"import rmtsweep\nrmtsweep.open_store({str(store)!r}).rmt.plot('snr', 'delta', 'overlap')")])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    shown = [o for o in nb.cells[0].outputs if o.output_type == "execute_result"]
    assert shown and "text/html" in shown[0].data, nb.cells[0].outputs
    assert "bokeh" in shown[0].data["text/html"].lower()             # the interactive map, not its repr


def test_map_from_the_accessor_is_an_object_a_notebook_shows(reference):
    import holoviews as hv
    _, store = reference
    ds = rmtsweep.open_store(store)
    m = ds.rmt.plot("snr", "delta", "overlap").hv
    assert isinstance(m, hv.HoloMap) and len(m) == ds.sizes["gamma"] * ds.sizes["T"] * ds.sizes["weights"]
    heat = next(iter(m.values()))
    image = heat.get(0) if isinstance(heat, hv.Overlay) else heat
    assert set(np.round(image.dimension_values("snr", expanded=False), 9)) == set(np.round(ds["snr"].values, 9))


_PROBE = """
import sys
import rmtsweep
assert "xarray" not in sys.modules, "import rmtsweep imported xarray"
import xarray as xr
print(type(xr.Dataset().rmt).__name__)
"""


@pytest.mark.parametrize("script_name", ["rmtsweep", "analysis.py"])
@pytest.mark.parametrize("worker", [False, True])
def test_the_accessor_is_there_however_the_process_started(script_name, worker, tmp_path):
    """``import rmtsweep`` does not import xarray, and every Dataset has ``ds.rmt`` once it is imported: in the
    command's own process, a task worker's and a user's script alike."""
    script = tmp_path / script_name
    script.write_text(_PROBE)
    env = {**os.environ, "PYTHONPATH": os.getcwd()} | ({"RMTSWEEP_TASK_WORKER": "1"} if worker else {})
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "RmtAccessor\n", proc.stderr


def test_the_accessor_is_there_when_xarray_came_first():
    code = "import xarray as xr, rmtsweep; print(type(xr.Dataset().rmt).__name__)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "RmtAccessor\n", proc.stderr


def test_the_old_names_of_a_map_warn_and_give_the_same_map(reference, tmp_path):
    """``ds.rmt.map``, ``rmtsweep.plot_map`` and ``make_map`` are deprecated for one release: each says which name
    replaces it, and gives what that name gives."""
    from rmtsweep.analysis.maps.plot import make_map
    _, store = reference
    ds = rmtsweep.open_store(store)
    with pytest.warns(DeprecationWarning, match=r"ds\.rmt\.plot\(\.\.\.\)\.hv"):
        old = ds.rmt.map("snr", "delta", "overlap")
    assert len(old) == len(ds.rmt.plot("snr", "delta", "overlap").hv)
    with pytest.warns(DeprecationWarning, match=r"use rmtsweep\.plot\(\.\.\.\)\.save\(out\)"):
        (html,) = rmtsweep.plot_map(store, "snr", "delta", "overlap", tmp_path / "old", formats="html")
    (new,) = rmtsweep.plot(store, "snr", "delta", "overlap").save(tmp_path / "new", formats="html")
    assert html.name == new.name and html.stat().st_size > 0
    with pytest.warns(DeprecationWarning, match=r"use rmtsweep\.plot$"):
        assert make_map(store, "snr", "delta", "overlap").figure.title == rmtsweep.plot(store, "snr", "delta",
                                                                                         "overlap").figure.title
    assert "plot_map" not in rmtsweep.__all__ and "plot" in rmtsweep.__all__
