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

**nu.** ``T = 1`` (or one-hot ``w``): ``D = (V/N) diag(counts)``, counts ``~ Poisson(delta/gamma)``, so
``nu = (gamma/delta) Poisson(delta/gamma)`` exactly (:func:`poisson_law`). For ``T >= 2`` the
off-diagonal entries of ``D`` are O(1) (each token shares sequences with ``~T(T-1) delta/gamma``
others), so ``nu`` is *not* the compound-Poisson law of the diagonal: it is the spectral law of a sparse
random weighted hypergraph (locally a Galton–Watson tree), which has no closed form. It is computed by
:func:`sample_token_law`: a seeded Monte Carlo of ``D`` at large V (exact eigenvalues, replicates
pooled), with a Kolmogorov standard error from the spread over replicates; bias O(1/V).

**Bulk** (:func:`stieltjes`, :func:`density`, :func:`histogram`). Newton on
``phi(m) = -1/m + E_nu[p/(1 + delta p m)] - z`` continued from large ``Im z`` down to ``Im z = eta``.
The solution in ``C^+`` is unique, so an iterate with ``Im m > 0`` and relative residual ``<= tol`` is
*the* solution; points where Newton (with step halving to stay in ``C^+`` and decrease ``|phi|``)
does not reach that are returned as NaN. Right edge and gaps (:func:`edge`): for real ``l`` outside the
support, ``G = -m(l) > 0`` and ``l(G) = 1/G + E_nu[p beta]``, ``beta = 1/(1 - delta p G)``; the support's
complement is the image of the decreasing branches of ``l(G)`` between the poles ``G = 1/(delta p)``,
and a gap lying between the poles of atoms ``p_k > p_{k+1}`` has mass ``nu(p >= p_k) / delta`` above
it (exact separation). The atom at 0 is ``max(0, 1 - nu(p > 0) / delta)`` (rank of ``S``).

**Outliers** (:func:`outlier`). With ``e = s / sqrt(V)`` (spectral law ``nu`` w.r.t. ``D``: exact at
``T = 1`` and for i.i.d. signs), ``r = Z D s / V`` and ``K(l) = r^T (l - B)^{-1} r``, a Schur complement
gives ``K = c - 1 - 1 / E_nu[1/(c - p)]``, ``c = 1/(delta G)``, and the 2x2 determinant gives
``snr G (1 + K) = 1``. This is the ``rho G (1 + h(G)) = 1`` (``h = K``) and simplifies to

    E_nu[beta(G)] = rho / (rho - delta),   outlier l = l(G),

alignment ``G^2 / (-G' - rho G^2 dK/dl) = -G^2 l'(G) / (1 + rho G^2 dK/dG)`` (``dK/dl = K_G / l'(G)``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse
from numpy.typing import ArrayLike, NDArray
from scipy.stats import poisson

from ._common import bin_average

__all__ = [
    "DiscreteLaw", "atom", "density", "edge", "empirical_law", "histogram", "mp_law", "outlier", "poisson_law",
    "sample_token_law", "stieltjes", "threshold", "token_law",
]

Float = NDArray[np.float64]


@dataclass(frozen=True)
class DiscreteLaw:
    """A discrete probability law ``sum_j weights_j delta_{points_j}`` on ``[0, inf)``.

    Attributes
    ----------
    points, weights : ndarray
        Sorted support points (>= 0) and their masses (sum 1).
    stderr : float
        Kolmogorov standard error of the law as an estimate of the limit (0 for an exact law).
    method : str
        How it was obtained (``"poisson"``, ``"mp-quadrature"``, ``"sample"``).
    """

    points: Float
    weights: Float
    stderr: float = 0.0
    method: str = "exact"

    def expect(self, f) -> Float:
        """``E[f(p)]``: ``f`` maps the points array (last axis) to values; summed against the weights."""
        return np.asarray(f(self.points) @ self.weights)

    @property
    def mean(self) -> float:
        return float(self.points @ self.weights)

    def moment(self, k: int) -> float:
        """``E[p^k]``."""
        return float(self.points**k @ self.weights)


def _law(points: ArrayLike, weights: ArrayLike, stderr: float = 0.0, method: str = "exact") -> DiscreteLaw:
    p, w = np.asarray(points, float), np.asarray(weights, float)
    keep = w > 0
    order = np.argsort(p[keep])
    return DiscreteLaw(p[keep][order], w[keep][order] / w[keep].sum(), stderr, method)


def empirical_law(values: ArrayLike) -> DiscreteLaw:
    """Equal-weight law of ``values`` (e.g. one replicate's ``V counts / N`` at ``T = 1``): the
    deterministic equivalent *given* the realised ``D``, a finite-V refinement of the limit."""
    v, c = np.unique(np.asarray(values, float), return_counts=True)
    return _law(v, c, method="empirical")


def poisson_law(delta: float, gamma: float, tol: float = 1e-17) -> DiscreteLaw:
    """``nu = (gamma/delta) Poisson(delta/gamma)``, the exact law at ``T = 1``; atoms of mass < ``tol`` dropped."""
    lam = delta / gamma
    k = np.arange(int(lam + 20 * np.sqrt(lam) + 40))
    pmf = poisson.pmf(k, lam)
    return _law(k / lam, np.where(pmf >= tol, pmf, 0.0), method="poisson")


def mp_law(c: float, n: int = 2000) -> DiscreteLaw:
    """Marchenko–Pastur law of ratio ``c`` (mean 1) discretised by the midpoint rule in ``theta``.

    ``x = a + (b - a)(1 - cos theta)/2`` makes ``f(x) dx ∝ sin^2(theta) / x d theta`` smooth and periodic,
    so the rule converges spectrally for smooth test functions; atom ``1 - 1/c`` at 0 when ``c > 1``.
    This is ``nu`` in the ``T -> inf`` limit (the cubic law).
    """
    a, b = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
    th = np.pi * (np.arange(n) + 0.5) / n
    x = a + (b - a) * (1 - np.cos(th)) / 2
    wt = np.sin(th) ** 2 / x
    cont = min(1.0, 1.0 / c)
    pts, wts = np.append(x, 0.0), np.append(wt / wt.sum() * cont, 1.0 - cont)
    return _law(pts, wts, method="mp-quadrature")


def _compress(values: Float, resolution: float) -> tuple[Float, Float]:
    """Pool sorted eigenvalues into atoms: exact zeros stay one atom, the rest are averaged in cells
    of width ``resolution`` in ``log(1 + p)`` (keeps the mean; moves each value by < ``resolution (1 + p)``)."""
    scale = max(values.max(), 1e-300)
    zero = values <= 1e-9 * scale
    cell = np.floor(np.log1p(values[~zero]) / resolution).astype(np.int64)
    _, inv = np.unique(cell, return_inverse=True)
    sums = np.bincount(inv, weights=values[~zero])
    counts = np.bincount(inv).astype(float)
    return np.append(sums / counts, 0.0), np.append(counts, zero.sum()) / values.size


def sample_token_law(w: ArrayLike, delta: float, gamma: float, *, size: int = 1500, replicates: int = 16,
                     seed: int = 0, resolution: float = 2e-3) -> DiscreteLaw:
    """Spectral law ``nu`` of ``D = V A A^T / (N kappa)`` by a seeded large-V Monte Carlo.

    Each replicate draws ``N = round(V delta/gamma)`` sequences of ``T = len(w)`` i.i.d. uniform tokens
    (class structure does not change the local limit), forms the smaller of the Gram matrices
    ``A A^T`` / ``A^T A`` (``size`` x ``size``; ``V`` follows), takes all its eigenvalues exactly and pads
    the ``|V - N|`` zeros. The pooled eigenvalues are compressed by :func:`_compress`.

    Error: the returned ``stderr`` is ``max_p std_r(F_r(p)) / sqrt(R)`` over the replicates' empirical
    CDFs (a Kolmogorov standard error); the finite-V bias is O(1/V) (short cycles), checked in the tests
    by comparing sizes. The law has mean 1 and ``E p^2 = 1 + gamma/delta`` up to these errors.
    """
    w = np.asarray(w, float)
    T, kap, lam = w.size, float(w @ w), delta / gamma
    V = size if lam >= 1 else int(round(size / lam))
    N = max(1, int(round(lam * V)))
    rng = np.random.default_rng(seed)
    grid = None
    cdfs, vals = [], []
    for _ in range(replicates):
        tokens = rng.integers(V, size=(N, T))
        A = scipy.sparse.csr_array((np.tile(w, N), tokens.ravel(), np.arange(0, N * T + 1, T)), shape=(N, V))
        gram = (A @ A.T if N <= V else A.T @ A).toarray()
        ev = np.linalg.eigvalsh(gram) * V / (N * kap)
        ev = np.concatenate([np.clip(ev, 0, None), np.zeros(max(V - N, 0))])  # N < V: N x N Gram
        vals.append(ev)
        if grid is None:
            grid = np.quantile(ev, np.linspace(0, 1, 401))
        cdfs.append(np.searchsorted(np.sort(ev), grid, side="right") / ev.size)
    se = float(np.std(cdfs, axis=0, ddof=1).max() / np.sqrt(replicates)) if replicates > 1 else np.nan
    pts, wts = _compress(np.concatenate(vals), resolution)
    return _law(pts, wts, stderr=se, method="sample")


def token_law(w: ArrayLike, delta: float, gamma: float, **sample_options) -> DiscreteLaw:
    """``nu`` for pooling weights ``w``: exact :func:`poisson_law` when ``w`` has one nonzero entry,
    else :func:`sample_token_law` (``sample_options`` passed on)."""
    w = np.asarray(w, float)
    if np.count_nonzero(w) == 1:
        return poisson_law(delta, gamma)
    return sample_token_law(w, delta, gamma, **sample_options)


# ----------------------------------------------------------------------------- bulk: complex plane
def _phi(m: NDArray, z: NDArray, nu: DiscreteLaw, delta: float) -> tuple[NDArray, NDArray]:
    t = 1.0 + delta * m[:, None] * nu.points
    e1 = (nu.points / t) @ nu.weights
    e2 = (nu.points**2 / t**2) @ nu.weights
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
        raise ValueError("stieltjes needs Im z > 0")
    eta = np.maximum(4.0 * (1.0 + np.abs(z)), eta_t)
    zz = z.real + 1j * eta
    m = -1.0 / zz
    ok = np.ones(z.size, bool)
    while True:
        active = ok.copy()
        for _ in range(max_newton):
            idx = np.flatnonzero(active)
            if idx.size == 0:
                break
            f, fp = _phi(m[idx], zz[idx], nu, delta)
            done = np.abs(f) <= tol * (np.abs(zz[idx]) + 1.0 / np.abs(m[idx]))
            active[idx[done]] = False
            idx, f, fp = idx[~done], f[~done], fp[~done]
            step = f / fp
            s = np.ones(idx.size)
            moved = np.zeros(idx.size, bool)
            for _ in range(40):  # halve until in C^+ and |phi| decreases
                trial = m[idx] - s * step
                good = trial.imag > 0
                ft = np.full(idx.size, np.inf)
                if np.any(good):
                    ft[good] = np.abs(_phi(trial[good], zz[idx][good], nu, delta)[0])
                acc = ~moved & good & (ft < np.abs(f))
                m[idx[acc]] = trial[acc]
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
def _moments_g(G: Float, nu: DiscreteLaw, delta: float) -> dict[str, Float]:
    """``E beta``, ``l(G)``, ``l'(G)``, ``d E beta / dG`` for real ``G`` (any shape)."""
    p, wt = nu.points, nu.weights
    beta = 1.0 / (1.0 - delta * p * G[..., None])
    eb = beta @ wt
    return {"eb": eb, "l": 1.0 / G + (p * beta) @ wt, "dl": -1.0 / G**2 + delta * (p**2 * beta**2) @ wt,
            "deb": delta * (p * beta**2) @ wt}


def _intervals(nu: DiscreteLaw, delta: float, tail: float, grid: int = 48) -> list[tuple]:
    """Gaps of the support above mass ``tail``, top first: ``(G_lo, G_hi, G_edge, l_edge, mass_above)``.

    Interval ``k`` lies between the poles of the k-th and (k+1)-th largest positive atoms; ``G_edge`` is
    the local minimum of ``l(G)`` (the right end of the component below the gap), ``G_lo`` the local
    maximum (0 for the top interval).
    """
    wpos = np.sort(np.unique(nu.points[nu.points > 0]))[::-1]
    cum = np.concatenate([[0.0], np.cumsum([nu.weights[nu.points == q].sum() for q in wpos])]) / delta
    poles = np.concatenate([[0.0], 1.0 / (delta * wpos), [np.inf]])
    out = []
    n = min(int(np.searchsorted(cum, tail, side="right")), len(wpos))  # intervals with mass above <= tail
    t = (1 - np.cos(np.pi * np.arange(1, grid) / grid)) / 2
    a, b = poles[:n, None], poles[1 : n + 1, None]
    G = a + (b - a) * t
    dl = np.concatenate([_moments_g(G[i : i + 64], nu, delta)["dl"] for i in range(0, n, 64)]) if n else G

    def cross(u, v):  # bisection on the sign change of l' between u and v
        su = np.sign(_moments_g(np.array(u), nu, delta)["dl"])
        for _ in range(200):
            mid = 0.5 * (u + v)
            if not (min(u, v) < mid < max(u, v)):
                break
            if np.sign(_moments_g(np.array(mid), nu, delta)["dl"]) == su:
                u = mid
            else:
                v = mid
        return 0.5 * (u + v)

    for k in np.flatnonzero((dl < 0).any(axis=1)):
        neg = np.flatnonzero(dl[k] < 0)
        lo_k, hi_k = float(poles[k]), float(poles[k + 1])
        g_edge = cross(G[k, neg.max()], G[k, neg.max() + 1] if neg.max() + 1 < t.size else hi_k)
        g_lo = cross(G[k, neg.min()], G[k, neg.min() - 1] if neg.min() > 0 else lo_k) if k > 0 else 0.0
        out.append((g_lo, hi_k, g_edge, float(_moments_g(np.array(g_edge), nu, delta)["l"]), cum[k]))
    return out


def _main(nu: DiscreteLaw, delta: float, tail: float) -> tuple:
    gaps = _intervals(nu, delta, tail)
    return min(gaps, key=lambda g: g[3])


def edge(nu: DiscreteLaw, delta: float, *, tail: float = 0.5) -> float:
    """Right edge of the main bulk: the lowest gap of the support with mass ``<= tail`` above it.

    With the default ``tail = 0.5`` this is the right end of the component holding the median. For
    ``nu = (gamma/delta) Poisson`` the support is unbounded: tiny separated components (a token seen
    ``k`` times gives mass ``~ P(k)/delta`` near ``delta k gamma/delta + O(1)``) lie above; pass e.g.
    ``tail = 1/d`` to place the edge below the components expected to hold no eigenvalue at size ``d``.
    """
    return _main(nu, delta, tail)[3]


def threshold(nu: DiscreteLaw, delta: float, *, tail: float = 0.5) -> float:
    """Sample threshold ``rho_c = delta E beta_e / (E beta_e - 1)`` at the main edge's ``G``."""
    eb = float(_moments_g(np.array(_main(nu, delta, tail)[2]), nu, delta)["eb"])
    return delta * eb / (eb - 1.0)


def outlier(rho: ArrayLike, nu: DiscreteLaw, delta: float, *, tail: float = 0.5) -> tuple[Float, Float]:
    """Top outlier of ``S / kappa`` and its alignment ``|u_hat^T u|^2`` for effective SNR ``rho``.

    Solves ``E_nu[beta(G)] = rho / (rho - delta)`` (module docstring) by bisection on each interval
    between poles where ``E beta`` is increasing, from the top interval down to the main gap, and keeps
    the largest ``l(G)`` on a decreasing branch of ``l`` (outside the support) above the main edge.
    Below ``rho_c`` the location is the main edge and the alignment 0. Assumes the signal direction
    ``s / sqrt(V)`` has spectral law ``nu`` w.r.t. ``D`` (exact for ``T = 1`` and i.i.d. signs).
    """
    rho = np.asarray(rho, float)
    r = rho.ravel()
    gaps = _intervals(nu, delta, tail)
    main = min(gaps, key=lambda g: g[3])
    with np.errstate(divide="ignore", invalid="ignore"):
        target = np.where(r > delta, r / (r - delta), np.inf)
    loc, ov = np.full(r.size, main[3]), np.zeros(r.size)
    found = np.zeros(r.size, bool)
    for g_lo, g_hi, g_edge, l_edge, _ in sorted(gaps, key=lambda g: -g[3]):
        lo, hi = np.full(r.size, g_lo), np.full(r.size, g_edge)
        for _ in range(200):  # E beta increasing in G on the interval
            mid = 0.5 * (lo + hi)
            up = _moments_g(mid, nu, delta)["eb"] < target
            lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
        G = 0.5 * (lo + hi)
        q = _moments_g(G, nu, delta)
        take = ~found & (q["dl"] < 0) & (hi < g_edge) & (lo > g_lo) & np.isfinite(target) & (q["l"] >= main[3])
        K_G = -(1 - 1 / q["eb"]) / (delta * G**2) + q["deb"] / (delta * G * q["eb"] ** 2)
        align = -(G**2) * q["dl"] / (1 + r * G**2 * K_G)
        loc, ov = np.where(take, q["l"], loc), np.where(take, align, ov)
        found |= take
        if g_edge == main[2]:
            break
    return loc.reshape(rho.shape), ov.reshape(rho.shape)
