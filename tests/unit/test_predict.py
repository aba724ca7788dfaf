"""The store's theory arrays (:func:`rmtsweep.theory.on_grid.theory_dataset`) against independent references.

Nothing here re-evaluates the expressions the package uses. The references are:

- weight scalars computed by hand: closed forms (mean and optimal weights, the Markov chain's
  geometric sums), the literal attention matrices of ``harmonic`` and ``causal(tau)``, and ``alpha``
  from the label model's ``(q . w)^2 + sum_t (1 - q_t^2) w_t^2`` or the top eigenvalue of a
  literally built ``R``;
- the bulk edge as a brute-force minimum of ``z(g)``, ``27/4`` at ``delta = gamma = 1`` and
  ``(1 + sqrt(gamma))^2`` as ``delta -> 0``;
- the spikes from their *defining equations* solved by a root finder: ``G_W(ell) = 1/rho`` for the
  population outlier, with ``G_W`` and every other integral over ``MP_delta`` taken by quadrature of
  its density, then Bai–Yao's ``psi(ell) = ell (1 + gamma ∫ t/(ell - t) dH)``, visible iff
  ``psi'(ell) > 0`` (:class:`Reference`);
- the classic spiked-covariance (BBP) formulas as ``delta -> 0``;
- a Monte Carlo of the two-level spiked matrix built literally.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq, minimize_scalar
from threadpoolctl import threadpool_limits

from rmtsweep.spec import Sweep, parse_sweep
from rmtsweep.testing import assert_mc_close
from rmtsweep.theory.on_grid import theory_dataset

L, T = 4, 16
SCHEMES = ["mean", "optimal", "harmonic", {"scheme": "causal", "tau": 1.0}]
LABELS = ["mean", "optimal", "harmonic", "causal(tau=1)"]


# --- hand-computed weights and their scalars --------------------------------------------------------


def attention_weights(T: int, tau: float) -> np.ndarray:
    """Mean-pooled causal attention built literally: row ``t`` gives ``e^tau`` to itself, 1 to each earlier token.

    Parameters
    ----------
    T
        Sequence length.
    tau
        Self-score; ``tau = 0`` is uniform causal attention (the ``harmonic`` scheme).

    Returns
    -------
    ndarray
        ``w_s = (1/T) sum_t a_{t,s}`` from the explicit ``T x T`` attention matrix.
    """
    A = np.zeros((T, T))
    for t in range(T):
        scores = [1.0] * t + [np.exp(tau)]              # the t earlier tokens, then the token itself
        A[t, : t + 1] = np.array(scores) / sum(scores)
    return A.mean(axis=0)


def harmonic_exact(T: int) -> list[Fraction]:
    """``w_s = (1/T) sum_{t >= s} 1/t`` in exact rational arithmetic."""
    return [sum((Fraction(1, t) for t in range(s, T + 1)), Fraction(0)) / T for s in range(1, T + 1)]


def literal_R(model: str, T: int, **p: float | list[float]) -> np.ndarray:
    """``R_ts = E[xi_t xi_s]`` entry by entry from the model's definition (docs/theory.md §1)."""
    R = np.empty((T, T))
    for t in range(T):
        for s in range(T):
            if model == "markov":
                R[t, s] = p["r"] ** abs(t - s)
            else:                       # label models: both positions copy the label, or the product averages to 0
                R[t, s] = 1.0 if t == s else p["q"][t] * p["q"][s]
    return R


def prefix_alpha(w: np.ndarray, L: int) -> float:
    """``alpha`` for ``prefix(L)``: the copied block acts as one sign, ``(sum_{t<=L} w_t)^2 + sum_{t>L} w_t^2``."""
    return float(w[:L].sum() ** 2 + (w[L:] ** 2).sum())


def markov_mean_alpha(r: float, T: int) -> float:
    """``alpha`` of mean weights under ``markov(r)``: ``(T + 2 sum_{k=1}^{T-1} (T-k) r^k) / T^2`` in closed form."""
    geometric = r * (T * (1 - r) - (1 - r**T)) / (1 - r) ** 2
    return (T + 2 * geometric) / T**2


def hand_scalars(model: str, T: int, **p: float | list[float]) -> dict[str, dict[str, float]]:
    """``alpha``, ``kappa``, ``W1`` and ``T_eff`` of every scheme of :data:`SCHEMES`, computed by hand."""
    weights = {"mean": np.full(T, 1 / T), "harmonic": np.array([float(x) for x in harmonic_exact(T)]),
               "causal(tau=1)": attention_weights(T, 1.0)}
    if model == "prefix":
        weights["optimal"] = np.r_[np.full(p["L"], 1 / np.sqrt(p["L"])), np.zeros(T - p["L"])]
    out = {}
    for label, w in weights.items():
        if model == "prefix":
            a = prefix_alpha(w, p["L"])
        elif model == "markov" and label == "mean":
            a = markov_mean_alpha(p["r"], T)
        else:
            q = np.asarray(p.get("q", np.zeros(T)))
            if model == "label":                                      # R = q q^T + diag(1 - q^2), expanded
                a = float((q @ w) ** 2 + ((1 - q**2) * w**2).sum())
            else:
                a = float(w @ literal_R(model, T, **p) @ w)
        out[label] = {"alpha": a, "kappa": float(np.sum(w**2)), "w1": float(np.sum(w)),
                      "t_eff": float(np.sum(w**2) ** 2 / np.sum(w**4))}
    return out


def _sweep(sweep_data: dict, centering: str = "class", correlation: dict | None = None, **grid) -> Sweep:
    """A theory-only sweep (``d = 400``); ``grid`` overrides the default axes (3 x 3 ratios, four SNRs, four schemes)."""
    sweep_data.update(table_centering=centering, d=400, correlation=correlation or {"model": "prefix", "L": L})
    sweep_data["grid"] = {"delta": [0.25, 0.5, 1.0], "gamma": [0.25, 0.5, 1.0], "snr": [0.0, 0.5, 1.5, 4.0],
                          "T": [T], "weights": SCHEMES, **grid}
    return parse_sweep(sweep_data)


CORRELATIONS = {
    "prefix": ({"model": "prefix", "L": L}, {"L": L}),
    "markov": ({"model": "markov", "r": 0.6}, {"r": 0.6}),
    "label": ({"model": "label", "q": [0.9 ** t for t in range(T)]}, {"q": [0.9 ** t for t in range(T)]}),
}


@pytest.mark.parametrize("model", list(CORRELATIONS))
def test_weight_scalars_equal_hand_computed_values(sweep_data, model):
    spec, params = CORRELATIONS[model]
    ds = theory_dataset(_sweep(sweep_data, correlation=spec))
    hand = hand_scalars(model, T, **params)
    for label, values in hand.items():
        got = ds.sel(T=T, weights=label)
        for name, var in (("alpha", "theory_alpha"), ("kappa", "theory_kappa"), ("w1", "theory_weight_sum"),
                          ("t_eff", "theory_T_eff")):
            assert float(got[var]) == pytest.approx(values[name], rel=1e-12), (label, name)
    # optimal weights reach the top of the Rayleigh quotient: lambda_max of the literally built R, unit norm
    literal = {"q": (np.arange(T) < L).astype(float)} if model == "prefix" else params
    lam_max = np.linalg.eigvalsh(literal_R(model, T, **literal))[-1]
    opt = ds.sel(T=T, weights="optimal")
    assert float(opt["theory_alpha"] / opt["theory_kappa"]) == pytest.approx(lam_max, rel=1e-12)
    assert float(opt["theory_kappa"]) == pytest.approx(1.0, rel=1e-12)


def test_prefix_weight_scalars_match_the_documented_values(sweep_data):
    """docs/theory.md §1 quotes alpha/kappa and T_eff for prefix(L=4), T=16 (to the digits it prints)."""
    ds = theory_dataset(_sweep(sweep_data)).sel(T=T)
    ratio = ds["theory_alpha"] / ds["theory_kappa"]
    np.testing.assert_allclose(ratio.sel(weights=LABELS).values, [1.75, 4.00, 3.15, 3.07], atol=0.005)
    np.testing.assert_allclose(ds["theory_T_eff"].sel(weights=LABELS).values, [16, 4, 4.39, 5.86], atol=0.005)
    assert [float(x) for x in harmonic_exact(T)] == pytest.approx(attention_weights(T, 0.0), rel=1e-14)


def test_rho_is_hand_alpha_times_snr_over_hand_kappa(sweep_data):
    ds = theory_dataset(_sweep(sweep_data))
    hand = hand_scalars("prefix", T, L=L)
    for label in LABELS:
        expected = hand[label]["alpha"] / hand[label]["kappa"] * ds.snr.values
        np.testing.assert_allclose(ds["theory_rho"].sel(T=T, weights=label).values, expected, rtol=1e-12)


# --- the bulk edge ----------------------------------------------------------------------------------


def edge_by_minimisation(delta: float, gamma: float) -> float:
    """``min_{g > 1} z(g)``, ``z(g) = g (1 - delta + delta g)(1 - gamma + gamma g) / (g - 1)``, by bounded Brent."""
    def z(log_t: float) -> float:
        g = 1.0 + np.exp(log_t)
        return g * (1 - delta + delta * g) * (1 - gamma + gamma * g) / (g - 1)
    return float(minimize_scalar(z, bounds=(-20, 20), method="bounded", options={"xatol": 1e-10}).fun)


def test_edge_is_the_minimum_of_z_and_27_over_4_at_delta_gamma_one(sweep_data):
    ds = theory_dataset(_sweep(sweep_data, gamma=[0.25, 0.5, 1.0, 2.0]))
    kappa = hand_scalars("prefix", T, L=L)
    for label in LABELS:
        edge = ds["theory_edge"].sel(T=T, weights=label) / kappa[label]["kappa"]
        for delta in ds.delta.values:
            for gamma in ds.gamma.values:
                assert float(edge.sel(delta=delta, gamma=gamma)) == pytest.approx(edge_by_minimisation(delta, gamma),
                                                                                  rel=1e-9)
        assert float(edge.sel(delta=1.0, gamma=1.0)) == pytest.approx(27 / 4, rel=1e-12)   # Fuss–Catalan of order 2


@pytest.mark.parametrize("c", [0.25, 1.0, 2.0])
def test_edge_tends_to_marchenko_pastur_as_one_ratio_vanishes(sweep_data, c):
    tiny = 1e-8
    ds = theory_dataset(_sweep(sweep_data, delta=[tiny, c], gamma=[tiny, c], weights=["mean"]))
    edge = ds["theory_edge"].sel(T=T, weights="mean") * T                     # kappa = 1/T
    mp = (1 + np.sqrt(c)) ** 2
    assert float(edge.sel(delta=tiny, gamma=c)) == pytest.approx(mp, abs=1e-6)   # the edge moves by O(delta)
    assert float(edge.sel(delta=c, gamma=tiny)) == pytest.approx(mp, abs=1e-6)


# --- spikes from their defining equations -------------------------------------------------------------


class Reference:
    """The two-level spike solved numerically from its definitions (docs/theory.md §3.2-3.3).

    ``W ~ MP_delta``: density ``sqrt((b - t)(t - a)) / (2 pi delta t)`` on ``[a, b] = [(1 -+ sqrt(delta))^2]``
    plus an atom ``1 - 1/delta`` at 0 when ``delta > 1``. Every integral over it is taken by adaptive
    quadrature in ``t = (a + b)/2 - (b - a)/2 cos(theta)`` (which removes the square-root edges).

    Parameters
    ----------
    delta, gamma
        The table's and the samples' aspect ratios.
    """

    def __init__(self, delta: float, gamma: float) -> None:
        self.delta, self.gamma = delta, gamma
        self.a, self.b = (1 - np.sqrt(delta)) ** 2, (1 + np.sqrt(delta)) ** 2
        self.atom = max(0.0, 1 - 1 / delta)

    def integral(self, ell: float, j: int, k: int) -> float:
        """``∫ t^j / (ell - t)^k dH(t)`` over ``MP_delta`` (atom included), for ``ell >= b``.

        With ``s = sin^2(theta/2)``, ``t = a + (b - a) s`` and ``ell - t = (ell - b) + (b - a)(1 - s)``: no
        cancellation at either end, even at ``ell = b`` or at the hard edge ``a = 0`` of ``delta = 1``.
        """
        a, b, c = self.a, self.b, self.delta
        w = b - a

        def integrand(theta: float) -> float:
            s, cc = np.sin(theta / 2) ** 2, np.cos(theta / 2) ** 2
            t = a + w * s
            return t ** (j - 1) * w**2 * s * cc / (2 * np.pi * c * ((ell - b) + w * cc) ** k)
        value, _ = quad(integrand, 0.0, np.pi, epsabs=1e-14, epsrel=1e-12, limit=400)
        return value + (self.atom / ell**k if self.atom and j == 0 else 0.0)

    def G(self, ell: float) -> float:
        """Stieltjes transform ``∫ dH(t) / (ell - t)`` of ``MP_delta`` for ``ell >= b``."""
        return self.integral(ell, 0, 1)

    @functools.cached_property
    def rho_population(self) -> float:
        """The population threshold: ``G_W(ell) = 1/rho`` has a root iff ``rho > 1 / G_W(b)``."""
        return 1.0 / self.G(self.b)

    @functools.lru_cache(maxsize=None)
    def population(self, rho: float) -> tuple[float, float]:
        """``(ell, zeta_pop)``: ``G_W(ell) = 1/rho`` by Brent, ``zeta_pop = 1 / (rho^2 ∫ dH/(ell - t)^2)``.

        NaN below the population threshold. The bracket: ``G_W(b) > 1/rho`` there, and
        ``G_W(l) <= 1/(l - b) < 1/rho`` at ``l = b + 4 rho + 4``.
        """
        if rho <= self.rho_population:
            return np.nan, np.nan
        ell = brentq(lambda x: self.G(x) - 1.0 / rho, self.b * (1 + 1e-12), self.b + 4 * rho + 4,
                     xtol=1e-14, rtol=1e-15)
        return ell, 1.0 / (rho**2 * self.integral(ell, 0, 2))

    def psi(self, rho: float) -> tuple[float, float]:
        """Bai–Yao's sample spike ``psi(ell) = ell (1 + gamma ∫ t/(ell - t) dH)`` and ``psi'(ell)``."""
        ell, _ = self.population(rho)
        m1, m2 = self.integral(ell, 1, 1), self.integral(ell, 1, 2)
        return ell * (1 + self.gamma * m1), 1 + self.gamma * m1 - self.gamma * ell * m2

    @functools.cached_property
    def rho_sample(self) -> float:
        """The sample threshold: the root of ``psi'(ell(rho)) = 0`` above the population threshold (Brent)."""
        lo = self.rho_population * (1 + 1e-3)
        hi = 2 * lo + 10
        assert self.psi(lo)[1] < 0 < self.psi(hi)[1]
        return brentq(lambda r: self.psi(r)[1], lo, hi, xtol=1e-13, rtol=1e-14)

    def spike(self, rho: float) -> tuple[float, float, int]:
        """``(lambda_1 / kappa, alignment, phase)``: the outlier ``psi`` with alignment ``zeta_pop ell psi'/psi``
        where ``psi' > 0``, else the bulk edge (:func:`edge_by_minimisation`) with alignment 0."""
        ell, zeta = self.population(rho)
        if np.isnan(ell):
            return edge_by_minimisation(self.delta, self.gamma), 0.0, 0
        psi, dpsi = self.psi(rho)
        if dpsi <= 0:
            return edge_by_minimisation(self.delta, self.gamma), 0.0, 1
        return psi, zeta * ell * dpsi / psi, 2


@functools.cache
def reference(delta: float, gamma: float) -> Reference:
    """One cached :class:`Reference` per ``(delta, gamma)``."""
    return Reference(float(delta), float(gamma))


def test_reference_reproduces_the_documented_thresholds():
    """docs/theory.md §3.3 quotes rho_c; the root finder must land on them (and on rho_c(1, 1) = 3)."""
    got = [reference(d, g).rho_sample for d, g in [(0.5, 0.5), (1.0, 0.25), (0.25, 1.0), (1.0, 1.0)]]
    np.testing.assert_allclose(got, [1.781, 2.366, 1.616, 3.0], atol=5e-4)
    assert reference(0.5, 0.5).rho_population == pytest.approx(0.5 + np.sqrt(0.5), rel=1e-10)


def test_thresholds_solve_their_defining_equations(sweep_data):
    ds = theory_dataset(_sweep(sweep_data, gamma=[0.25, 0.5, 1.0, 2.0]))
    hand = hand_scalars("prefix", T, L=L)
    for delta in ds.delta.values:
        assert float(ds["theory_rho_population"].sel(delta=delta)) == pytest.approx(
            reference(delta, 1.0).rho_population, rel=1e-10)
        for gamma in ds.gamma.values:
            ref = reference(delta, gamma)
            rho_c = float(ds["theory_rho_sample"].sel(delta=delta, gamma=gamma))
            assert rho_c == pytest.approx(ref.rho_sample, rel=1e-9)
            for label in LABELS:
                ratio = hand[label]["alpha"] / hand[label]["kappa"]
                cell = ds.sel(delta=delta, gamma=gamma, T=T, weights=label)
                assert float(cell["theory_snr_sample"]) == pytest.approx(ref.rho_sample / ratio, rel=1e-9)
                assert float(cell["theory_snr_population"]) == pytest.approx(ref.rho_population / ratio, rel=1e-9)


@pytest.mark.parametrize("prefix", ["theory", "paper"])
def test_class_centred_outlier_and_alignment_solve_the_defining_equations(sweep_data, prefix):
    """On a class-centred table both the store's theory and the paper's arrays are the two-level spike."""
    snr = [0.0, 0.3, 0.45, 1.0, 1.5, 4.0]
    ds = theory_dataset(_sweep(sweep_data, snr=snr, gamma=[0.25, 0.5, 1.0, 2.0]))
    hand = hand_scalars("prefix", T, L=L)
    phases = set()
    for label in LABELS:
        kappa, ratio = hand[label]["kappa"], hand[label]["alpha"] / hand[label]["kappa"]
        for delta in ds.delta.values:
            for gamma in ds.gamma.values:
                ref = reference(delta, gamma)
                for s in snr:
                    rho = ratio * s
                    # a cell within 1e-6 of a threshold could fall either side of it in floating point
                    assert min(abs(rho / ref.rho_sample - 1), abs(rho / ref.rho_population - 1)) > 1e-6
                    loc, ov, ph = ref.spike(rho)
                    cell = ds.sel(delta=delta, gamma=gamma, snr=s, T=T, weights=label)
                    where = (label, delta, gamma, s)
                    assert int(cell[f"{prefix}_phase"]) == ph, where
                    assert float(cell[f"{prefix}_outlier"]) / kappa == pytest.approx(loc, rel=1e-8), where
                    assert float(cell[f"{prefix}_overlap"]) == pytest.approx(ov, abs=1e-8), where
                    phases.add(ph)
    assert phases == {0, 1, 2}                                     # the grid crosses both transitions


@pytest.mark.parametrize("gamma", [0.25, 1.0, 2.0])
def test_spike_reduces_to_classic_bbp_as_delta_vanishes(sweep_data, gamma):
    """Baik–Ben Arous–Péché / Paul: threshold sqrt(gamma), outlier (1 + rho)(1 + gamma/rho),
    alignment (1 - gamma/rho^2) / (1 + gamma/rho)."""
    tiny = 1e-7
    ratio = 4.0                                                    # optimal weights on prefix(L=4)
    rhos = np.sqrt(gamma) * np.array([0.5, 0.9, 1.1, 2.0, 5.0])
    ds = theory_dataset(_sweep(sweep_data, delta=[tiny], gamma=[gamma], snr=list(rhos / ratio), weights=["optimal"]))
    cell = ds.sel(delta=tiny, gamma=gamma, T=T, weights="optimal")
    assert float(cell["theory_rho_sample"]) == pytest.approx(np.sqrt(gamma), abs=1e-5)
    above = rhos > np.sqrt(gamma)
    bbp_outlier = np.where(above, (1 + rhos) * (1 + gamma / rhos), (1 + np.sqrt(gamma)) ** 2)
    bbp_overlap = np.where(above, (1 - gamma / rhos**2) / (1 + gamma / rhos), 0.0)
    np.testing.assert_allclose(cell["theory_outlier"].values, bbp_outlier, rtol=1e-5)   # kappa = 1
    np.testing.assert_allclose(cell["theory_overlap"].values, bbp_overlap, atol=1e-5)
    np.testing.assert_array_equal(cell["theory_phase"].values == 2, above)


def test_spike_reduces_to_the_population_spike_as_gamma_vanishes(sweep_data):
    """gamma -> 0: no sampling noise, so S shows the population outlier G_W(ell) = 1/rho and its alignment."""
    tiny = 1e-9
    snr = [0.3, 1.0, 2.0, 4.0]
    ds = theory_dataset(_sweep(sweep_data, delta=[0.25, 1.0], gamma=[tiny], snr=snr, weights=["optimal"]))
    for delta in (0.25, 1.0):
        ref = reference(delta, tiny)
        cell = ds.sel(delta=delta, gamma=tiny, T=T, weights="optimal")
        assert float(cell["theory_rho_sample"]) == pytest.approx(ref.rho_population, abs=1e-6)
        for s in snr:
            ell, zeta = ref.population(4.0 * s)
            if np.isnan(ell):
                assert int(cell["theory_phase"].sel(snr=s)) == 0
                continue
            assert float(cell["theory_outlier"].sel(snr=s)) == pytest.approx(ell, rel=1e-6)
            assert float(cell["theory_overlap"].sel(snr=s)) == pytest.approx(zeta, abs=1e-6)


def spiked_two_level_top(d: int, delta: float, gamma: float, rho: float, rng: np.random.Generator
                         ) -> tuple[float, float]:
    """Top eigenvalue and alignment of ``S = C C^T / N`` for a literally built two-level spiked matrix.

    The table: ``W = Z Z^T / V`` (``Z`` d x V Gaussian, ``V = d / delta``) plus the signal ``rho u u^T``.
    The samples: ``N = d / gamma`` Gaussian vectors of covariance ``W + rho u u^T``, written as
    ``c_n = Z g_n / sqrt(V) + sqrt(rho) eta_n u`` with ``g_n ~ N(0, I_V)``, ``eta_n ~ N(0, 1)``.
    """
    V, N = round(d / delta), round(d / gamma)
    u = np.zeros(d)
    u[0] = 1.0                                                     # the law is rotation invariant
    Z = rng.standard_normal((d, V))
    C = Z @ rng.standard_normal((V, N)) / np.sqrt(V) + np.sqrt(rho) * np.outer(u, rng.standard_normal(N))
    vals, vecs = np.linalg.eigh(C @ C.T / N)
    return float(vals[-1]), float(vecs[0, -1] ** 2)


def test_outlier_matches_monte_carlo_of_a_literally_built_spiked_matrix(sweep_data):
    """delta = gamma = 0.5, optimal weights, snr 1.5 (rho = 6, 3.4 rho_c) at d = 300, 12 replicates.

    Allowances for the O(1/d) finite-size bias on top of 4 SE: 1 % on the location, 0.01 on the alignment
    (the same as the full model's, tests/unit/test_statistical.py).
    """
    ds = theory_dataset(_sweep(sweep_data, snr=[1.5])).sel(delta=0.5, gamma=0.5, snr=1.5, T=T, weights="optimal")
    rng = np.random.default_rng(20261201)
    with threadpool_limits(limits=1):          # threaded BLAS only contends on a shared machine
        top = np.array([spiked_two_level_top(300, 0.5, 0.5, 6.0, rng) for _ in range(12)])
    expected = float(ds["theory_outlier"])                        # kappa = 1
    assert_mc_close(top[:, 0], expected, allowance=0.01 * expected, what="lambda_1 of the spiked matrix")
    assert_mc_close(top[:, 1], float(ds["theory_overlap"]), allowance=0.01, what="alignment")


# --- the uncentred table --------------------------------------------------------------------------------


def test_uncentred_theory_is_two_spikes_solved_separately(sweep_data):
    """docs/theory.md §3.5: a signal spike at rho_s = (alpha/kappa)(snr + delta) aligned with u by
    snr/(snr + delta), and a common-mean spike at rho_b = W1^2 delta / kappa orthogonal to u."""
    snr = [0.0, 0.5, 1.5, 4.0]
    ds = theory_dataset(_sweep(sweep_data, "none", snr=snr))
    hand = hand_scalars("prefix", T, L=L)
    for label in LABELS:
        h = hand[label]
        ratio, rho_b = h["alpha"] / h["kappa"], h["w1"] ** 2 / h["kappa"]
        for delta in ds.delta.values:
            for gamma in ds.gamma.values:
                ref = reference(delta, gamma)
                cell = ds.sel(delta=delta, gamma=gamma, T=T, weights=label)
                mean_loc, mean_ov, mean_ph = ref.spike(rho_b * delta)
                assert float(cell["theory_rho_mean"]) == pytest.approx(rho_b * delta, rel=1e-12)
                assert float(cell["theory_mean_outlier"]) / h["kappa"] == pytest.approx(mean_loc, rel=1e-8)
                assert float(cell["theory_mean_overlap"]) == pytest.approx(mean_ov, abs=1e-8)
                assert int(cell["theory_mean_phase"]) == mean_ph
                for s in snr:
                    at = cell.sel(snr=s)
                    loc, ov, ph = ref.spike(ratio * (s + delta))
                    paper = ref.spike(ratio * s)
                    assert float(at["theory_signal_outlier"]) / h["kappa"] == pytest.approx(loc, rel=1e-8)
                    assert float(at["theory_overlap"]) == pytest.approx(ov * s / (s + delta), abs=1e-8)
                    assert int(at["theory_phase"]) == ph
                    top = max(loc, mean_loc)
                    assert float(at["theory_outlier"]) / h["kappa"] == pytest.approx(top, rel=1e-8)
                    assert float(at["paper_outlier"]) / h["kappa"] == pytest.approx(paper[0], rel=1e-8)
                    assert float(at["paper_overlap"]) == pytest.approx(paper[1], abs=1e-8)
                # the signal transition: rho_s(snr) reaches the root of psi' = 0, or 0 if delta alone is past it
                snr_c = ref.rho_sample / ratio - delta
                assert float(cell["theory_snr_sample"]) == pytest.approx(max(snr_c, 0.0), abs=1e-9)


def test_uncentred_mean_weights_common_mean_outlier_value(sweep_data):
    """docs/theory.md §3.5: mean weights, delta = gamma = 0.5, T = 16: rho_b = 8, lambda_1/kappa = 2176/225."""
    ds = theory_dataset(_sweep(sweep_data, "none", snr=[0.0]))
    cell = ds.sel(delta=0.5, gamma=0.5, snr=0.0, T=T, weights="mean")
    assert float(cell["theory_rho_mean"]) == pytest.approx(8.0, rel=1e-12)
    assert float(cell["theory_outlier"]) * T == pytest.approx(2176 / 225, rel=1e-10)
    assert float(cell["theory_overlap"]) == 0.0                   # the eigenvector lies along b, not u
    assert int(cell["paper_phase"]) == 0                          # the paper predicts nothing at snr 0
