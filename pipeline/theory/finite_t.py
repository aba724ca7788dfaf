"""Finite-T bulk law and outliers of ``S / kappa`` (docs/theory.md §6.1).

**Model.** With ``E = Z + mu s^T`` (d x V, ``Z s = 0`` after class centring) and the token-weight
matrix ``A`` (V x N, ``A_{vn} = sum_t w_t 1[v_{n,t} = v]``), ``S / kappa = (1/V) E D E^T`` with
``D = V A A^T / (N kappa)``. ``Z`` is rotation invariant and independent of ``D``, so the bulk of
``S / kappa`` is the generalised Marchenko–Pastur law over the spectral law ``nu`` of ``D``: with
``m(z) = ∫ dmu(x) / (x - z)`` (``Im m > 0`` on ``C^+``),

    m(z) = 1 / (-z + E_nu[p / (1 + delta p m)]).

Sherman–Morrison on ``(1/V) sum_j p_j y_j y_j^T`` gives it directly; ``nu = delta_1`` gives MP_delta,
``nu = MP_{gamma/delta}`` the cubic of :mod:`rmtsweep.theory.bulk`. Moments: ``m_k = sum over
non-crossing partitions of delta^(k - #blocks) prod E_nu[p^|block|]`` (used as a check in the tests).

**nu** (:mod:`rmtsweep.theory.token_law`): exact ``(gamma/delta) Poisson(delta/gamma)`` at ``T = 1``,
sampled at large V for ``T >= 2``.

**Bulk** (:func:`stieltjes`, :func:`density`, :func:`histogram`). Newton on
``phi(m) = -1/m + E_nu[p/(1 + delta p m)] - z`` continued from large ``Im z`` down to ``Im z = eta``.
The solution in ``C^+`` is unique, so an iterate with ``Im m > 0`` and relative residual ``<= tol`` is
*the* solution; points where Newton (with step halving to stay in ``C^+`` and decrease ``|phi|``)
does not reach that are returned as NaN. Right edge and gaps (:func:`edge`): for real ``l`` outside the
support, ``G = -m(l) > 0`` and ``l(G) = 1/G + E_nu[p beta]``, ``beta = 1/(1 - delta p G)``; the support's
complement is the image of the decreasing branches of ``l(G)`` between the poles ``G = 1/(delta p)``,
and a gap lying between the poles of atoms ``p_k > p_{k+1}`` has mass ``nu(p >= p_k) / delta`` above
it (exact separation). The atom at 0 is ``max(0, 1 - nu(p > 0) / delta)`` (rank of ``S``).

**Outliers** (:func:`outlier`; derived here). Let ``e = s / sqrt(V)`` and ``nu_s`` its spectral measure
w.r.t. ``D`` (``nu_s = nu`` at ``T = 1`` and for i.i.d. signs; its mean is ``a_s = e^T D e -> alpha/kappa``).
Then ``S/kappa = B + mu r^T + r mu^T + a_s mu mu^T`` with ``B = Z D Z^T / V`` and ``r = Z D e / sqrt(V)``,
and the 2x2 determinant on ``span(mu, r)`` gives ``snr G (a_s + K) = 1`` with ``K(l) = r^T (l - B)^{-1} r``.
Push-through and ``Z e = 0`` (class centring: ``Z^T Z`` has ``e`` in its kernel) give
``K = -a_s + l x``, ``x = e^T (l D^{-1} - Z^T Z / V)^{-1} e``; the subordination of the rotation-invariant
``Z^T Z / V`` replaces it by the scalar ``omega = l delta G`` on ``e``'s complement, and a Schur complement on
``e`` gives ``x = q / (1 + omega q)``, ``q = E_nu_s[p / (l - omega p)]``. With ``c = 1/(delta G)`` and
``beta = 1/(1 - delta p G) = c/(c - p)`` everything collapses to

    E_nu_s[beta(G)] = snr / (snr - delta),   outlier l = l(G)   (l(G) and G from the bulk's nu),

``K = -a_s + (1 - 1/E_nu_s[beta]) / (delta G)``, and the alignment (residue of ``u^T (l - S)^{-1} u``)
``G^2 / (-G' - snr G^2 dK/dl) = -G^2 l'(G) / (1 + snr G^2 dK/dG)``. With ``nu_s = nu`` (so ``a_s = 1`` and
``snr = rho``) this is the i.i.d. form; with ``nu = nu_s = delta_1`` it is Section 3.2.
"""

from __future__ import annotations

import hashlib

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import ArgumentError
from ._common import bin_average, bisect
from .token_law import DiscreteLaw, empirical_law, mp_law, poisson_law, sample_laws, sample_token_law, token_law

__all__ = [
    "DiscreteLaw", "atom", "density", "edge", "edge_point", "empirical_law", "histogram", "location", "moments_g",
    "mp_law", "outlier", "poisson_law",
    "sample_laws", "sample_token_law", "stieltjes", "threshold", "token_law",
]

Float = NDArray[np.float64]


# ----------------------------------------------------------------------------- bulk: complex plane
def _over_t(m: NDArray, nu: DiscreteLaw, delta: float) -> tuple[Float, Float]:
    """``(Re, -Im)`` of ``p / t``, ``t = 1 + delta m p``, for every ``m`` (rows) and atom ``p`` (columns).

    In real arithmetic: numpy's complex division guards every element against overflow, at several times the
    cost, and ``t`` has no zero to guard against here (``Im t > 0`` where ``p > 0``, ``t = 1`` where ``p = 0``)."""
    dp = delta * nu.points
    tr = 1.0 + np.multiply.outer(m.real, dp)
    ti = np.multiply.outer(m.imag, dp)
    q = nu.points / (tr * tr + ti * ti)
    return q * tr, q * ti


def _phi(m: NDArray, z: NDArray, nu: DiscreteLaw, delta: float) -> tuple[NDArray, NDArray]:
    ur, ui = _over_t(m, nu, delta)
    e1 = ur @ nu.weights - 1j * (ui @ nu.weights)
    e2 = (ur * ur - ui * ui) @ nu.weights - 2j * ((ur * ui) @ nu.weights)
    return -1.0 / m + e1 - z, 1.0 / m**2 - delta * e2


def stieltjes(z: ArrayLike, nu: DiscreteLaw, delta: float, *, tol: float = 1e-11, ratio: float = 0.3,
              max_newton: int = 60) -> NDArray[np.complex128]:
    """``m(z) = ∫ dmu(x)/(x - z)`` of the bulk law over ``nu``, for ``Im z > 0`` (vectorised).

    Continuation: for each point, ``eta_0 = 4 (1 + |z|)`` then ``eta_{j+1} = ratio eta_j`` down to
    ``Im z``; at each level damped Newton from the previous solution (a step is halved until it stays
    in ``C^+`` and lowers ``|phi|``). Converged: ``|phi| <= tol (|z| + 1/|m|)`` with ``Im m > 0``, which
    certifies the unique solution. Points that fail at any level are NaN (no silent fallback).
    """
    z = np.atleast_1d(np.asarray(z, np.complex128)).ravel()
    eta_t = z.imag
    if np.any(eta_t <= 0):
        raise ArgumentError("stieltjes needs Im z > 0")
    eta = np.maximum(4.0 * (1.0 + np.abs(z)), eta_t)
    zz = z.real + 1j * eta
    m = -1.0 / zz
    ok = np.ones(z.size, bool)
    f_m, fp_m = np.empty(z.size, np.complex128), np.empty(z.size, np.complex128)   # phi and phi' at m
    while True:
        active = ok.copy()
        known = np.zeros(z.size, bool)           # phi depends on z: evaluated afresh at each level
        for _ in range(max_newton):
            idx = np.flatnonzero(active)
            if idx.size == 0:
                break
            if (stale := idx[~known[idx]]).size:
                f_m[stale], fp_m[stale] = _phi(m[stale], zz[stale], nu, delta)
                known[stale] = True
            f, fp = f_m[idx], fp_m[idx]
            done = np.abs(f) <= tol * (np.abs(zz[idx]) + 1.0 / np.abs(m[idx]))
            active[idx[done]] = False
            idx, f, fp = idx[~done], f[~done], fp[~done]
            step = f / fp
            s = np.ones(idx.size)
            moved = np.zeros(idx.size, bool)
            for _ in range(40):  # halve until in C^+ and |phi| decreases
                trial = m[idx] - s * step
                test = ~moved & (trial.imag > 0)
                ft, fpt = np.full(idx.size, np.inf + 0j), np.empty(idx.size, np.complex128)
                if np.any(test):                 # phi' too: an accepted trial's next Newton step needs it
                    ft[test], fpt[test] = _phi(trial[test], zz[idx[test]], nu, delta)
                acc = test & (np.abs(ft) < np.abs(f))
                m[idx[acc]], f_m[idx[acc]], fp_m[idx[acc]] = trial[acc], ft[acc], fpt[acc]
                moved |= acc
                if moved.all():
                    break
                s = np.where(moved, s, s / 2)
            ok[idx[~moved]] = False
            active[idx[~moved]] = False
        ok &= ~active  # not converged within max_newton
        if np.all(eta <= eta_t):
            break
        eta = np.maximum(eta * ratio, eta_t)
        zz = z.real + 1j * eta
    m[~ok] = np.nan
    return m


def atom(nu: DiscreteLaw, delta: float) -> float:
    """Mass at 0 of the bulk law: ``max(0, 1 - nu(p > 0) / delta)`` (``rank S = min(d, rank D)``)."""
    return max(0.0, 1.0 - float(nu.weights[nu.points > 0].sum()) / delta)


def density(x: ArrayLike, nu: DiscreteLaw, delta: float, *, eta: float = 1e-10) -> Float:
    """Absolutely continuous density ``Im m(x + i eta) / pi`` (atom at 0 removed exactly), 0 for ``x <= 0``.

    ``eta`` is relative (``eta (1 + |x|)``); its bias is O(eta) in the bulk, O(sqrt(eta)) at an edge.
    NaN where the solver does not converge.
    """
    x = np.asarray(x, float)
    out = np.zeros(x.shape)
    pos = x > 0
    xs = x[pos]
    e = eta * (1.0 + xs)
    m = stieltjes(xs + 1j * e, nu, delta)
    out[pos] = (m.imag - atom(nu, delta) * e / (xs**2 + e**2)) / np.pi
    return np.where(np.isnan(out), np.nan, np.maximum(out, 0.0))


def histogram(edges: ArrayLike, nu: DiscreteLaw, delta: float, *, nodes: int = 16) -> Float:
    """Predicted histogram density of ``S / kappa`` on bins ``edges`` (the ``spectrum`` observable).

    :func:`rmtsweep.theory._common.bin_average` of :func:`density` with the atom :func:`atom` at 0.
    """
    return bin_average(edges, lambda x: density(x, nu, delta), atom(nu, delta), nodes)


# ------------------------------------------------------------------------------- real axis: edges
def _beta(G: Float, nu: DiscreteLaw, delta: float) -> Float:
    """``beta = 1 / (1 - delta p G)`` at every atom ``p`` of ``nu`` (a last axis over the atoms)."""
    return 1.0 / (1.0 - delta * nu.points * G[..., None])


def _dl(G: Float, nu: DiscreteLaw, delta: float, beta: Float | None = None) -> Float:
    """``l'(G)`` (from ``beta`` when the caller has it): alone, what a bisection on its sign needs."""
    beta = _beta(G, nu, delta) if beta is None else beta
    return -1.0 / G**2 + delta * (nu.points**2 * beta**2) @ nu.weights


def _eb(G: Float, nu: DiscreteLaw, delta: float) -> Float:
    """``E beta(G)`` alone: what the outlier's bisection compares."""
    return _beta(G, nu, delta) @ nu.weights


def moments_g(G: Float, nu: DiscreteLaw, delta: float) -> dict[str, Float]:
    """``E beta``, ``l(G)``, ``l'(G)``, ``d E beta / dG`` for real ``G`` (any shape)."""
    p, wt = nu.points, nu.weights
    beta = _beta(G, nu, delta)
    return {"eb": beta @ wt, "l": 1.0 / G + (p * beta) @ wt, "dl": _dl(G, nu, delta, beta),
            "deb": delta * (p * beta**2) @ wt}


_GAPS: dict[tuple, tuple] = {}     # _intervals' answers by law (a digest of its atoms) and arguments: edge, threshold
_GAPS_KEPT = 4096                  # and outlier of a cell ask for the same gaps (a pure function; cleared past this)


def _intervals(nu: DiscreteLaw, delta: float, tail: float, grid: int = 48) -> tuple[tuple, ...]:
    """:func:`_gaps`, computed once per law, ``delta``, ``tail`` and ``grid`` in a process."""
    law = hashlib.blake2b(np.asarray(nu.points, float).tobytes(), digest_size=16)
    law.update(np.asarray(nu.weights, float).tobytes())
    key = (law.digest(), float(delta), float(tail), int(grid))
    gaps = _GAPS.get(key)
    if gaps is None:
        if len(_GAPS) >= _GAPS_KEPT:
            _GAPS.clear()
        gaps = _GAPS[key] = tuple(_gaps(nu, delta, tail, grid))
    return gaps


def _gaps(nu: DiscreteLaw, delta: float, tail: float, grid: int = 48) -> list[tuple]:
    """Gaps of the support above mass ``tail``, top first: ``(G_lo, G_hi, G_edge, l_edge, mass_above)``.

    Interval ``k`` lies between the poles of the k-th and (k+1)-th largest positive atoms; ``G_edge`` is
    the local minimum of ``l(G)`` (the right end of the component below the gap), ``G_lo`` the local
    maximum (0 for the top interval).
    """
    pos = nu.points > 0
    wpos, which = np.unique(nu.points[pos], return_inverse=True)    # ascending, and each atom's place among them
    wpos, mass = wpos[::-1], np.bincount(which, weights=nu.weights[pos], minlength=wpos.size)[::-1]
    cum = np.concatenate([[0.0], np.cumsum(mass)]) / delta
    poles = np.concatenate([[0.0], 1.0 / (delta * wpos), [np.inf]])
    out = []
    n = min(int(np.searchsorted(cum, tail, side="right")), len(wpos))  # intervals with mass above <= tail
    t = (1 - np.cos(np.pi * np.arange(1, grid) / grid)) / 2
    a, b = poles[:n, None], poles[1 : n + 1, None]
    G = a + (b - a) * t
    dl = np.full(G.shape, np.inf)
    full = np.flatnonzero(_may_dip(G, wpos, mass, delta))
    for i in range(0, full.size, 64):
        dl[full[i : i + 64]] = _dl(G[full[i : i + 64]], nu, delta)

    found = np.flatnonzero((dl < 0).any(axis=1))
    ends, starts = [], []                     # brackets of the local minimum and (from the second interval) maximum
    for k in found:
        neg = np.flatnonzero(dl[k] < 0)
        ends.append((G[k, neg.max()], G[k, neg.max() + 1] if neg.max() + 1 < t.size else poles[k + 1]))
        if k > 0:
            starts.append((G[k, neg.min()], G[k, neg.min() - 1] if neg.min() > 0 else poles[k]))
    roots = _sign_changes(np.array([*ends, *starts]).reshape(-1, 2), nu, delta)
    g_edges, g_los = roots[:len(ends)], iter(roots[len(ends):])
    for k, g_edge in zip(found, g_edges, strict=True):
        g_lo = float(next(g_los)) if k > 0 else 0.0
        out.append((g_lo, float(poles[k + 1]), float(g_edge), float(moments_g(np.array(g_edge), nu, delta)["l"]),
                    cum[k]))
    return out


def _may_dip(G: Float, wpos: Float, mass: NDArray, delta: float) -> NDArray[np.bool_]:
    """Which rows of ``G`` (interval ``k`` between the poles of atoms ``k - 1`` and ``k``) may hold ``l'(G) < 0``.

    Every term of ``l'``'s sum is at least 0, so the two atoms whose poles bound an interval give a lower bound.
    Inside a bulk they exceed ``1 / G^2`` many times over at every grid point, and the full sum is not needed
    there. The margin of ``1e-9`` covers the sum's rounding; the top interval (``G`` down to 0) always may dip.
    """
    n = G.shape[0]
    may = np.ones(n, bool)
    if n > 1:                                 # interval k >= 1 lies between the poles of atoms k - 1 and k
        two = sum(m[:, None] * (p[:, None] ** 2 * (1.0 / (1.0 - delta * p[:, None] * G[1:])) ** 2)
                  for p, m in ((wpos[:n - 1], mass[:n - 1]), (wpos[1:n], mass[1:n])))
        may[1:] = (delta * two * (1.0 - 1e-9) <= 1.0 / G[1:] ** 2).any(axis=1)
    return may


def _sign_changes(brackets: Float, nu: DiscreteLaw, delta: float, steps: int = 200) -> Float:
    """Where ``l'(G)`` changes sign between each row's ``(u, v)`` of ``brackets``, by bisection, all rows at once.

    Each row halves its bracket until its midpoint is no longer strictly inside (or after ``steps``): what a
    scalar bisection per row gives, at the cost of one evaluation of ``l'`` over every atom per step.
    """
    u, v = brackets[:, 0].copy(), brackets[:, 1].copy()
    su = np.sign(_dl(u, nu, delta)) if u.size else u
    active = np.ones(u.size, bool)
    for _ in range(steps):
        mid = 0.5 * (u + v)
        active &= (np.minimum(u, v) < mid) & (mid < np.maximum(u, v))
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        same = np.sign(_dl(mid[idx], nu, delta)) == su[idx]
        u[idx[same]], v[idx[~same]] = mid[idx[same]], mid[idx[~same]]
    return 0.5 * (u + v)


def _main(nu: DiscreteLaw, delta: float, tail: float) -> tuple:
    gaps = _intervals(nu, delta, tail)
    return min(gaps, key=lambda g: g[3])


def edge_point(nu: DiscreteLaw, delta: float, *, tail: float = 0.5) -> tuple[float, float]:
    """``(G_e, l_e)`` of the main edge (:func:`edge`): ``l_e = l(G_e)``, the right end of the main bulk."""
    g = _main(nu, delta, tail)
    return float(g[2]), float(g[3])


def location(G: ArrayLike, nu: DiscreteLaw, delta: float) -> Float:
    """``l(G) = 1/G + E_nu[p / (1 - delta p G)]``: the point outside the support where ``-m(l) = G``."""
    return np.asarray(moments_g(np.asarray(G, float), nu, delta)["l"])


def edge(nu: DiscreteLaw, delta: float, *, tail: float = 0.5) -> float:
    """Right edge of the main bulk: the lowest gap of the support with mass ``<= tail`` above it.

    With the default ``tail = 0.5`` this is the right end of the component holding the median. For
    ``nu = (gamma/delta) Poisson`` the support is unbounded: tiny separated components (a token seen
    ``k`` times gives mass ``~ P(k)/delta`` near ``delta k gamma/delta + O(1)``) lie above; pass e.g.
    ``tail = 1/d`` to place the edge below the components expected to hold no eigenvalue at size ``d``.
    """
    return _main(nu, delta, tail)[3]


def threshold(nu: DiscreteLaw, delta: float, *, tail: float = 0.5, signal: DiscreteLaw | None = None) -> float:
    """Sample threshold ``delta E beta_e / (E beta_e - 1)`` at the main edge's ``G``, ``E`` over ``signal``.

    Without ``signal`` (``nu_s = nu``) it is the threshold on ``rho``; with it, on the raw ``snr``.
    """
    eb = float(moments_g(np.array(_main(nu, delta, tail)[2]), signal or nu, delta)["eb"])
    return delta * eb / (eb - 1.0)


def outlier(rho: ArrayLike, nu: DiscreteLaw, delta: float, *, tail: float = 0.5, signal: DiscreteLaw | None = None
            ) -> tuple[Float, Float]:
    """Top outlier of ``S / kappa`` and its alignment ``|u_hat^T u|^2`` for effective SNR ``rho``.

    ``signal`` is the spectral measure ``nu_s`` of the signal direction (default ``nu``, exact at
    ``T = 1`` and for i.i.d. signs, and then ``rho = alpha snr / kappa``); when given, ``rho`` is the raw
    ``snr`` (the signal law's mean carries ``alpha/kappa``).
    Solves ``E_nu_s[beta(G)] = rho / (rho - delta)`` (module docstring) by bisection on each interval
    between poles where ``E beta`` is increasing, from the top interval down to the main gap, and keeps
    the largest ``l(G)`` on a decreasing branch of ``l`` (outside the support) above the main edge.
    Below the threshold the location is the main edge and the alignment 0.
    """
    sig = signal or nu
    rho = np.asarray(rho, float)
    r = rho.ravel()
    gaps = _intervals(nu, delta, tail)
    main = min(gaps, key=lambda g: g[3])
    with np.errstate(divide="ignore", invalid="ignore"):
        target = np.where(r > delta, r / (r - delta), np.inf)
    loc, ov = np.full(r.size, main[3]), np.zeros(r.size)
    found = np.zeros(r.size, bool)
    for g_lo, _g_hi, g_edge, _l_edge, _ in sorted(gaps, key=lambda g: -g[3]):
        lo, hi = bisect(lambda mid: _eb(mid, sig, delta) < target,          # E beta increases in G on the interval
                        np.full(r.size, g_lo), np.full(r.size, g_edge), 200)
        G = 0.5 * (lo + hi)
        q = {**moments_g(G, sig, delta), **{k: v for k, v in moments_g(G, nu, delta).items() if k in ("l", "dl")}}
        take = ~found & (q["dl"] < 0) & (hi < g_edge) & (lo > g_lo) & np.isfinite(target) & (q["l"] >= main[3])
        K_G = -(1 - 1 / q["eb"]) / (delta * G**2) + q["deb"] / (delta * G * q["eb"] ** 2)
        align = -(G**2) * q["dl"] / (1 + r * G**2 * K_G)
        loc, ov = np.where(take, q["l"], loc), np.where(take, align, ov)
        found |= take
        if g_edge == main[2]:
            break
    return loc.reshape(rho.shape), ov.reshape(rho.shape)


