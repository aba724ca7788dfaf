"""Export a store or its comparison group as a tidy CSV table or a netCDF file.

CSV is *tidy*: one row per point of the union of the chosen variables' dimensions, one column per
dimension and per variable (variables with fewer dimensions are repeated along the others). By
default every variable without the ``bin`` dimension or a detection null's dimensions is written (the
spectrum histogram would multiply the row count by its bins, ``finite_size_null_*`` and ``pooled_null_*``
by their draws and candidates; ask for them with ``variables=["spectrum"]``). netCDF keeps the
dataset as it is (netCDF3 through scipy, so no extra library is needed): booleans become int8,
string coordinates fixed-width characters, and it reads back with ``xr.open_dataset``.

A store whose theory at its size is not written yet (``theory_pending``) exports its Monte Carlo variables
alone, and says so (netCDF: the attribute ``theory``; both: a line in ``notes``); asked for a theory variable or
the comparison group, or for the phase diagram, it refuses (:func:`rmtsweep.store.pending.require_theory`).

Both show a per-replicate value only where its ``done`` flag is set (:func:`rmtsweep.analysis.mask.only_done`):
a replicate not done (an interrupted run, a chunk written but not marked done) is left empty (NaN;
``run`` -1), and ``done`` and ``run`` are written beside any per-replicate variable, so a table
says which rows were computed. ``notes`` gets one line saying how many replicates were left empty.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, cast, get_args

import numpy as np
import xarray as xr

from ..dims import NULL_DIMS, TIDY_ORDER
from ..errors import SelectionError
from ..store import locate
from ..store.pending import PENDING_MARK, pending_note, require_theory, theory_pending
from ..types import ExportFormat
from .compare import open_source
from .mask import mask_not_done, not_done, not_done_note, per_replicate
from .source import FLAGS, monte_carlo, store_name

if TYPE_CHECKING:
    import pandas

__all__ = ["FORMATS", "export", "export_phase_diagram", "output_file", "read_tidy", "select", "to_tidy"]

FORMATS = get_args(ExportFormat)


def select(ds: xr.Dataset, variables: list[str] | None, fmt: ExportFormat) -> xr.Dataset:
    """The variables to export (validated), with plain-string coordinates; ``done`` and ``run`` come with
    any per-replicate variable."""
    if variables:
        bad = [v for v in variables if v not in ds.data_vars]
        if bad:
            raise SelectionError(f"--var {bad[0]!r}: not a variable of the store (valid: "
                                 f"{', '.join(sorted(map(str, ds.data_vars)))})")
        flags = [v for v in ("done", "run") if v in ds.data_vars and v not in variables]
        ds = ds[list(variables) + (flags if any("replicate" in ds[v].dims for v in variables) else [])]
    elif fmt == "csv":
        ds = ds[[v for v in ds.data_vars if not {"bin", *NULL_DIMS} & set(ds[v].dims)]]
    ds = ds.copy()
    for name in list(ds.coords):
        if ds[name].dtype.kind in "OT":
            ds = ds.assign_coords({name: (ds[name].dims, np.array([str(x) for x in ds[name].values.ravel()])
                                          .reshape(ds[name].shape), ds[name].attrs)})
    return ds


def to_tidy(ds: xr.Dataset) -> pandas.DataFrame:
    """A tidy table: dimension columns first, then one column per variable."""
    dims: list[Hashable] = [d for d in TIDY_ORDER if d in ds.dims]
    dims += [d for d in ds.dims if d not in dims]
    return ds.to_dataframe(dim_order=dims).reset_index()


def export(path: str | Path, out: str | Path, fmt: str = "csv", group: str | None = None,
           variables: list[str] | None = None, notes: Callable[[str], None] | None = None,
           storage_options: dict | None = None) -> Path:
    """Write the store at ``path`` (or its ``group``, e.g. ``"comparison"``) to ``out``.

    Parameters
    ----------
    path
        The zarr store.
    out
        Output file (``.csv`` or ``.nc``).
    fmt
        ``"csv"`` (tidy table) or ``"netcdf"``.
    group
        ``None`` for the store's data and theory, ``"comparison"`` for what ``rmtsweep compare`` wrote.
    variables
        Variables to write (default: see the module docstring).
    notes
        Called with one line when per-replicate values of replicates not done were left empty.
    storage_options
        For a store at a URL (``s3://bucket/run.zarr``): the options of its filesystem (``endpoint_url``,
        credentials, ...); credentials and endpoint also come from the environment.

    Returns
    -------
    Path
        ``out``.
    """
    if fmt not in FORMATS:
        raise SelectionError(f"--format {fmt!r}: unknown format (valid: {', '.join(FORMATS)})")
    where = locate(path, storage_options)
    store = open_source(where)                              # validates the path first, then the group
    pending = theory_pending(store.attrs)
    if pending and group is not None:
        require_theory(store.attrs, where, "compare and export its comparison")
    ds = select(store if group is None else open_source(where, group), variables, cast("ExportFormat", fmt))
    if pending:
        if theory := [str(v) for v in ds.data_vars if v not in FLAGS and "replicate" not in ds[v].dims]:
            mc = " ".join(f"--var {v}" for v in monte_carlo(store))
            require_theory(store.attrs, where, f"export the Monte Carlo alone now ({mc}), {theory[0]} and the "
                                               "other theory variables")
        ds.attrs["theory"] = PENDING_MARK
    ds = mask_not_done(ds).load()                           # one read: the mask and `done` agree
    nd = not_done(ds) if per_replicate(ds) else None
    out = output_file(out)
    if fmt == "csv":
        to_tidy(ds).to_csv(out, index=False)
    else:
        for v in ds.variables.values():
            v.encoding = {}
            v.attrs.pop("_FillValue", None)   # kept as an attr by the unmasked open: -1 in `run` must stay -1
            if v.dtype == bool:
                v.attrs["flag_values"], v.attrs["flag_meanings"] = [0, 1], "false true"
        ds.attrs = {k: _netcdf_attr(v) for k, v in ds.attrs.items()}
        _write_atomically(out, lambda tmp: ds.to_netcdf(tmp, engine="scipy", format="NETCDF3_64BIT"))
    if nd and notes:
        notes(not_done_note(path, nd, "their values are left empty"))
    if pending and notes:
        notes(pending_note(where, f"{out} is written"))
    return out


def export_phase_diagram(path: str | Path, out: str | Path, n_boot: int = 1000, level: float = 0.95,
                         seed: int = 0, notes: Callable[[str], None] | None = None, *,
                         false_alarm: float | None = None, margin_factor: float | None = None,
                         reference: str = "best") -> tuple[Path, str]:
    """Write :func:`rmtsweep.analysis.phase.phase_diagram` of the store at ``path`` as a CSV; returns (out, method).

    ``notes`` is called with one line when replicates not done were left out of the table. ``false_alarm`` or
    ``margin_factor`` choose the detection rule (:func:`rmtsweep.analysis.detection.detection_rule`); ``reference``
    the prediction of ``theory_snr_best`` (``best``: the finite-d one where derived; ``limit``).
    """
    from .phase import phase_diagram
    ds = open_source(path)
    require_theory(ds.attrs, store_name(path), "export its phase diagram")
    out = output_file(out)
    ds = ds.assign(done=ds["done"].load())                   # one read: the table and the count agree
    table = phase_diagram(ds, n_boot=n_boot, level=level, seed=seed, false_alarm=false_alarm,
                          margin_factor=margin_factor, reference=reference)
    _write_atomically(out, lambda tmp: table.to_csv(tmp, index=False))
    if (nd := not_done(ds)) and notes:
        notes(not_done_note(path, nd, "the table counts only the done ones (n_replicates)"))
    rule = (f"detection at false-alarm level {table.attrs['false_alarm']:g}" if "false_alarm" in table.attrs
            else f"detection by the margin rule, factor {table.attrs['margin_factor']:g}")
    best = ("theory_snr_best: the finite-d detection model where derived, else the limit theory_snr_sample"
            if reference == "best" else "theory_snr_best: the limit theory_snr_sample")
    return out, f"{table.attrs['method']}; {rule}; {best}"


def _write_atomically(out: Path, write) -> None:
    """``write(tmp)`` beside ``out``, then rename: never a half-written file under the requested name."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def output_file(out: str | Path) -> Path:
    """``out`` as a file to write, its missing parents created (``mkdir -p``); one-line errors otherwise.

    Raises
    ------
    SelectionError
        When ``out`` is a directory, or one of its parents is a file.
    """
    out = Path(out)
    if out.is_dir():
        raise SelectionError(f"--out {out}: is a directory; give a file name, e.g. {out / 'table.csv'}")
    blocking = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise SelectionError(f"--out {out}: {blocking} is a file, not a directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def _netcdf_attr(value):
    """A netCDF-3 attribute: numbers and strings as they are, anything else (lists of runs, dicts) as JSON."""
    if isinstance(value, (bool, np.bool_, np.integer)):
        return int(value)
    if isinstance(value, (str, float, int, np.floating)):
        return value
    return json.dumps(value, default=str)


def read_tidy(path: str | Path) -> xr.Dataset:
    """Read a tidy CSV written by :func:`export` back into an ``xarray.Dataset``."""
    import pandas as pd
    df = pd.read_csv(path)
    dims = [c for c in TIDY_ORDER if c in df.columns]
    return df.set_index(dims).to_xarray()
