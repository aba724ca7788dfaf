"""A mistake in what a caller gives rmtsweep's Python functions is a UserError (a ValueError too), one line."""

from __future__ import annotations

import pytest

from rmtsweep.errors import ArgumentError, SweepDefinitionError, UserError
from rmtsweep.spec import parse_sweep
from tests.helpers import BASE


def _d_axis_sweep():
    return parse_sweep({**{k: v for k, v in BASE.items() if k != "d"}, "grid": {**BASE["grid"], "d": [20, 40]}})


def _sizes_without_d():
    _d_axis_sweep().sizes(0.5, 0.5)


def _context_without_d():
    from rmtsweep.run.grid import Context
    Context.from_sweep(_d_axis_sweep())


def _phase_diagram_with_no_draws():
    from rmtsweep.analysis.phase import phase_diagram
    phase_diagram("no-such-store.zarr", n_boot=0)


def _quantile_above_one():
    from rmtsweep.theory.tracy_widom import tw_quantile
    tw_quantile(1.5)


def _cdf_of_beta_3():
    from rmtsweep.theory.tracy_widom import tw_cdf
    tw_cdf(0.0, beta=3)


def _unknown_scale():
    from rmtsweep.model.attention import score_scale
    score_scale(1.0, 100, "d2")


def _exact_law_of_an_uncentred_table():
    from rmtsweep.theory.cell_law import transition_snr
    transition_snr("sample", 1.0, 1.0, 0.5, 0.5, "none", law=1)


def _stieltjes_on_the_real_line():
    from rmtsweep.theory.finite_t import stieltjes
    from rmtsweep.theory.token_law import poisson_law
    stieltjes(1.0 + 0j, poisson_law(0.5, 0.5), 0.5)


def _a_missing_plugin():
    from rmtsweep.model.plugins import load_function
    load_function("no_such_package.module:f")


@pytest.mark.parametrize(("call", "kind", "message"), [
    (_sizes_without_d, ArgumentError, r"sweeps d \(grid\.d = \[20, 40\]\); pass d"),
    (_context_without_d, ArgumentError, r"sweeps d \(grid\.d = \[20, 40\]\); pass d"),
    (_phase_diagram_with_no_draws, ArgumentError, r"n_boot must be >= 1"),
    (_quantile_above_one, ArgumentError, r"p must lie in \[0, 1\]"),
    (_cdf_of_beta_3, ArgumentError, r"beta must be 1 \(GOE\) or 2 \(GUE\)"),
    (_unknown_scale, ArgumentError, r"unknown attention scale 'd2'"),
    (_exact_law_of_an_uncentred_table, ArgumentError, r"for a class-centred table, not table_centering='none'"),
    (_stieltjes_on_the_real_line, ArgumentError, r"Im z > 0"),
    (_a_missing_plugin, SweepDefinitionError, r"cannot import 'no_such_package\.module'"),
], ids=lambda x: getattr(x, "__name__", "").strip("_") or None)
def test_a_callers_mistake_is_a_user_error(call, kind, message):
    with pytest.raises(kind, match=message) as err:
        call()
    assert isinstance(err.value, UserError) and isinstance(err.value, ValueError)
    assert "\n" not in str(err.value)
