"""The rank-one spike in its critical window: the top eigenvalue and its eigenvector's overlap (docs/theory.md §6.7).

**The universal law.** A rank-one spike of a real ensemble with a square-root edge has, near its threshold, one
law for the top eigenvalue (the deformed Tracy-Widom ``F_1(x; w)``, Bloemendal & Virág 2013) and one for the top
eigenvector's squared overlap with the spike. The GOE gives both: with ``H`` the GOE over ``sqrt(n)`` (edge 2) and
``theta = 1 + w n^(-1/3)``, ``X = n^(2/3) (lambda_1(H + theta e_1 e_1^T) - 2)`` and ``Y = n^(1/3) v_1[0]^2`` have
limits in law at fixed ``w``. :mod:`._window_table` tabulates them on ``w`` in [-8, 8]
(docs/window_law_table.py: the Dumitriu-Edelman tridiagonal model, ``n = 1e7``). ``w -> -inf`` gives
``TW_1`` and ``Y ~ 1 / w^2``; ``w -> +inf`` the Gaussian outlier ``w^2 + 2 sqrt(w) N(0, 1)`` with ``Y ~ 2 w``.

**The map onto a model (derived here).** Where the spike enters through ``u^T (z - S)^(-1) u = G / (1 - Phi(G))``
(:func:`.finite_d.bulk_overlap_factor`), near the edge ``G ≈ G_e - c_e sqrt(z - lambda_+)`` and
``1 - Phi ≈ (1 - Phi_e) + Phi'_e c_e sqrt(z - lambda_+)``; with ``sigma = (c_e d)^(-2/3)`` this is the GOE's
``n^(-1/3) (sqrt(s) - w)`` in the edge unit ``s = (z - lambda_+) / sigma`` at

    w = (Phi_e - 1) sigma d / Phi'_e,      (the outlier exits the edge by ``w^2 sigma``)

and the spike's spectral weight is the GOE's times ``K = (1 - Phi_e + G_e Phi'_e) sigma^2 d / Phi'_e^2``.
For the classical spiked covariance this ``w`` is ``(rho - rho_c) / sqrt(2 sigma / psi_rr)`` of
:mod:`.finite_d` and ``K`` is half the slope of the alignment at ``rho_c`` times that width (tested). So
``E lambda_1 ≈ lambda_+ + sigma E X(w)`` and ``E |u_hat^T u|^2 ≈ K E Y(w)``.

**As a correction.** The store's finite-size predictions (:mod:`.pooled_spikes`) are a maximum of two candidates:
the edge at ``lambda_+ + sigma TW_1`` and the outlier's exact location, with the outlier's alignment when it is on
top and the bulk's lean ``K / (w^2 + 1.2065)`` when not. Its GOE image at the same ``n`` is subtracted from the
window law draw by draw (:func:`lift`, :func:`lean`), so each correction is what the maximum misses and vanishes
at both ends; the model keeps its own exact outlier and alignment. Beyond ``w = -8`` the lift follows its
asymptote ``1 / |w|`` (the subcritical spike's first-order shift, ``E n v_1[0]^2 = 1`` over ``1 - theta``),
matched at the table's end; the lean, within its Monte Carlo error of 0 there, is 0. Above the threshold both fade
linearly from ``w = 1`` to 0 at :data:`W_SEPARATED` = 2. There the outlier is on top and what is left of the
GOE's difference (0.17 scales at ``w = 3``) is its outlier's second-order bias. That bias is not universal at
these sizes: given the pooling matrix, :mod:`.pooled_spikes`' outlier alone is exact to 0.1 % at ``w`` of 2.5-3
(d = 160), and adding the GOE's bias broke that (tests/unit/test_pooled_spikes.py).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _window_table as table

__all__ = ["W_MAX", "W_MIN", "W_SEPARATED", "lean", "lift", "overlap_unit", "window_coordinate", "window_mean",
           "window_overlap", "window_sd"]

Float = NDArray[np.float64]

W_MIN, W_MAX = float(table.GRID[0]), float(table.GRID[-1])

W_SEPARATED = 2.0
"""Above this ``w`` the corrections are 0: the outlier is on top (``F_1(4) > 0.999``) and the window law's remaining
difference, its second-order bias, is not universal at the store's sizes (module docstring)."""


@functools.cache
def _columns() -> dict[str, Float]:
    return {name: np.asarray(getattr(table, name), float)
            for name in ("GRID", "MEAN", "SD", "OVERLAP", "LIFT", "LEAN")}


def _interp(w: ArrayLike, name: str) -> Float:
    """The column ``name`` at ``w`` (linear between the grid's points, NaN outside it)."""
    col = _columns()
    return np.asarray(np.interp(np.asarray(w, float), col["GRID"], col[name], left=np.nan, right=np.nan))


def _separated(w: Float) -> Float:
    """1 up to ``w = W_SEPARATED - 1``, falling linearly to 0 at :data:`W_SEPARATED` (module docstring)."""
    return np.asarray(np.clip(W_SEPARATED - w, 0.0, 1.0))


def _two_sided(w: Float, name: str) -> Float:
    """A correction column at ``w``, linear between grid points on each side of ``w = 0``, where the maximum of two
    candidates jumps (the outlier appears at the edge): ``w <= 0`` meets the value at ``0``, ``w > 0`` the ``*_RIGHT``
    one."""
    col = _columns()
    grid, values = col["GRID"], col[name]
    left = np.interp(w, grid[grid <= 0], values[grid <= 0])
    right = np.interp(w, np.append(0.0, grid[grid > 0]), np.append(getattr(table, f"{name}_RIGHT"), values[grid > 0]))
    return np.asarray(np.where(w > 0, right, left))


def window_mean(w: ArrayLike) -> Float:
    """``E X(w)``: the mean top eigenvalue in edge units (Tracy-Widom scales above the edge); NaN off the table."""
    return _interp(w, "MEAN")


def window_sd(w: ArrayLike) -> Float:
    """The standard deviation of ``X(w)``; NaN off the table."""
    return _interp(w, "SD")


def window_overlap(w: ArrayLike) -> Float:
    """``E Y(w)``: the top eigenvector's mean squared overlap with the spike in units of ``n^(-1/3)``; NaN off the
    table."""
    return _interp(w, "OVERLAP")


def lift(w: ArrayLike) -> Float:
    """``E X(w) - E max(x_out(w), TW_1)``: what the maximum of two candidates misses of the top eigenvalue (edge units).

    0 above :data:`W_SEPARATED` and at ``w = -inf``; below :data:`W_MIN` the asymptote ``1 / |w|`` met at the table.

    Examples
    --------
    >>> bool(lift(-1e9) < 1e-7 and lift(100.0) == 0.0 and lift(0.0) > 1.0)
    True
    """
    w = np.asarray(w, float)
    col = _columns()
    with np.errstate(divide="ignore"):
        tail = col["LIFT"][0] * W_MIN / w
    return np.asarray(np.where(w < W_MIN, tail, _two_sided(w, "LIFT") * _separated(w)))


def lean(w: ArrayLike) -> Float:
    """``E Y(w)`` minus the maximum-of-two model's overlap, in units of ``n^(-1/3)``; 0 below :data:`W_MIN` and above
    :data:`W_SEPARATED`."""
    w = np.asarray(w, float)
    return np.asarray(np.where(w < W_MIN, 0.0, _two_sided(w, "LEAN") * _separated(w)))


def window_coordinate(phi: ArrayLike, slope: ArrayLike, sigma: ArrayLike, d: ArrayLike) -> Float:
    """``w = (Phi_e - 1) sigma d / Phi'_e`` (module docstring): ``-inf`` without signal (``Phi'_e = 0``)."""
    phi, slope, sigma, d = (np.asarray(x, float) for x in (phi, slope, sigma, d))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(slope > 0, (phi - 1.0) * sigma * d / slope, -np.inf))


def overlap_unit(slope: ArrayLike, numerator: ArrayLike, sigma: ArrayLike, d: ArrayLike) -> Float:
    """``K = (1 - Phi_e + G_e Phi'_e) sigma^2 d / Phi'_e^2`` (``numerator`` is ``1 - Phi_e + G_e Phi'_e``); 0 without
    signal."""
    slope, numerator, sigma, d = (np.asarray(x, float) for x in (slope, numerator, sigma, d))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(slope > 0, numerator * sigma**2 * d / slope**2, 0.0))
