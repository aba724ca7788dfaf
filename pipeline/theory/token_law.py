"""The spectral law ``nu`` of ``D = V A A^T / (N kappa)``, and of the signal direction w.r.t. ``D`` (docs/theory.md
§6.1).

``T = 1`` (or one-hot ``w``): ``D = (V/N) diag(counts)``, counts ``~ Poisson(delta/gamma)``, so
``nu = (gamma/delta) Poisson(delta/gamma)`` exactly (:func:`poisson_law`). For ``T >= 2`` the
off-diagonal entries of ``D`` are O(1) (each token shares sequences with ``~T(T-1) delta/gamma``
others), so ``nu`` is the spectral law of a sparse random weighted hypergraph (locally a Galton–Watson
tree), with no closed form: :func:`sample_token_law` and :func:`sample_laws` compute it by a seeded
Monte Carlo of ``D`` at large V (exact eigenvalues, replicates pooled), with a Kolmogorov standard
error from the spread over replicates; bias O(1/V). :func:`sample_laws` also gives the spectral
measure ``nu_s`` of the signal direction ``e = s/sqrt(V)`` w.r.t. ``D`` (``sum_i (q_i^T e)^2
delta_{p_i}``), which differs from ``nu`` when the positions' signs are correlated: its mean is
``e^T D e -> alpha/kappa``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln, xlogy

from ..model.replicate import token_weight_matrix

__all__ = ["DiscreteLaw", "SampleOptions", "empirical_law", "mp_law", "poisson_law", "sample_laws", "sample_token_law",
           "token_law"]

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
    pmf = np.exp(xlogy(k, lam) - gammaln(k + 1) - lam)       # scipy.stats.poisson.pmf's own formula
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


def _compress(values: Float, resolution: float, masses: Float | None = None) -> tuple[Float, ...]:
    """Pool eigenvalues into atoms: exact zeros stay one atom (last), the rest are averaged in cells
    of width ``resolution`` in ``log(1 + p)`` (keeps the mean; moves each value by < ``resolution (1 + p)``).

    Returns the atoms and their equal-weight masses; with ``masses`` (one per value) also those
    masses summed over each atom's values.
    """
    scale = max(values.max(), 1e-300)
    zero = values <= 1e-9 * scale
    cell = np.floor(np.log1p(values[~zero]) / resolution).astype(np.int64)
    _, inv = np.unique(cell, return_inverse=True)
    sums = np.bincount(inv, weights=values[~zero])
    counts = np.bincount(inv).astype(float)
    out = (np.append(sums / counts, 0.0), np.append(counts, zero.sum()) / values.size)
    if masses is None:
        return out
    return out + (np.append(np.bincount(inv, weights=masses[~zero]), masses[zero].sum()),)


class SampleOptions(TypedDict, total=False):
    """The keyword arguments of :func:`sample_token_law`: how large a sample, how many, which seed, how fine."""

    size: int
    replicates: int
    seed: int
    resolution: float


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
        A = token_weight_matrix(rng.integers(V, size=(N, T)), w, V)
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




def sample_laws(w: ArrayLike, delta: float, gamma: float, correlation, *, size: int = 1000, replicates: int = 4,
                seed: int = 0, resolution: float = 1e-2) -> tuple[DiscreteLaw, DiscreteLaw]:
    """``(nu, nu_s)``: the spectral law of ``D`` and that of the signal direction ``e = s/sqrt(V)`` w.r.t. ``D``.

    As :func:`sample_token_law`, but the sequences' signs are drawn from ``correlation`` (anything with
    ``draw(T, N, rng) -> (xi, y)``, e.g. a sweep's correlation model) and each token uniformly within
    the class its sign names (``s_v = +1`` for the first ``V/2`` tokens), so ``D`` and ``s`` are drawn
    jointly. The Gram matrix is diagonalised with eigenvectors; ``nu_s`` puts mass ``(q_i^T e)^2`` on
    eigenvalue ``p_i`` (the rest at 0), on the same atoms as ``nu`` (:func:`_compress`'s cells). Its
    mean is ``e^T D e``, which tends to ``alpha/kappa``; ``nu_s = nu`` in law for i.i.d. signs.
    """
    w = np.asarray(w, float)
    T, kap, lam = w.size, float(w @ w), delta / gamma
    V = size if lam >= 1 else int(round(size / lam))
    V += V % 2
    N = max(1, int(round(lam * V)))
    half = V // 2
    rng = np.random.default_rng(seed)
    vals, sig, rest = [], [], 0.0
    s = np.where(np.arange(V) < half, 1.0, -1.0) / np.sqrt(V)
    for _ in range(replicates):
        xi, _ = correlation.draw(T, N, rng)
        A = token_weight_matrix(np.where(xi > 0, 0, half) + rng.integers(half, size=(N, T)), w, V)
        if N <= V:                                   # q_i = A^T u_i / sigma_i from the N x N Gram
            ev, U = np.linalg.eigh((A @ A.T).toarray())
            with np.errstate(divide="ignore", invalid="ignore"):
                proj = np.where(ev > 1e-9 * ev.max(), (U.T @ (A @ s)) ** 2 / ev, 0.0)
        else:
            ev, U = np.linalg.eigh((A.T @ A).toarray())
            proj = (U.T @ s) ** 2
        pad = max(V - N, 0)
        vals.append(np.concatenate([np.clip(ev, 0, None) * V / (N * kap), np.zeros(pad)]))
        sig.append(np.concatenate([proj, np.zeros(pad)]))
        rest += max(0.0, 1.0 - proj.sum())           # e's mass in the null space of A sits at p = 0
    pts, wts, mass = _compress(np.concatenate(vals), resolution, np.concatenate(sig) / replicates)
    mass[-1] += rest / replicates
    nu = _law(pts, wts, method="sample")
    nu_s = _law(pts, mass, method="sample-signal")
    return nu, nu_s
