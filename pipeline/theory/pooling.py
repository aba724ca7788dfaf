"""One draw of the realised pooling matrix, kept sparse, and the eigenvalues of its ``D`` (docs/theory.md §6.4).

A draw of the cell's signs and tokens gives the token-weight matrix ``A`` (``N x V``, ``T`` entries a row), which
the class-centred table sees centred within each class. :class:`PoolingDraw` keeps ``A`` sparse and applies the
centring as a low-rank correction; :func:`draw_eigenvalues` gives ``D = (V / (N kappa)) A^T A``'s eigenvalues from
the Gram matrix in single precision. :func:`.null_law.pooling_matrix` is the dense double-precision reference.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import scipy.linalg
import scipy.sparse
from numpy.typing import ArrayLike, NDArray
from threadpoolctl import threadpool_limits

from ..model.correlation import draw_signs
from ..model.replicate import CellModel, draw_tokens, token_weight_matrix

__all__ = ["CACHE_VERSION", "DrawBatch", "DrawCache", "PoolingDraw", "batch_records", "cached_draws",
           "cached_records", "draw_batches", "draw_eigenvalues", "entry_key", "padded_eigenvalues", "pooled_spectra",
           "pooling_draw", "save_records"]

Float = NDArray[np.float64]


def _classes(V: int, n_pos: int) -> Float:
    """``E``: the indicators of the two classes' tokens, dense ``V x 2``."""
    E = np.zeros((V, 2))
    E[:n_pos, 0] = E[n_pos:, 1] = 1.0
    return E


def padded_eigenvalues(ev: ArrayLike, model: CellModel) -> Float:
    """Eigenvalues of a Gram matrix as ``D``'s ``V``: clipped at 0, scaled, zeros for the rest."""
    p = np.clip(np.asarray(ev, float), 0.0, None) * model.V / (model.N * float(model.w @ model.w))
    return np.concatenate([p, np.zeros(model.V - p.size)])


@dataclass(frozen=True)
class PoolingDraw:
    """One draw of the cell's token-weight matrix, kept sparse, with its class centring as a low-rank correction.

    The centred matrix (:func:`.null_law.pooling_matrix`'s) is ``A - M E^T``: ``E`` (``V x 2``) the indicators of
    the two classes' tokens and ``M`` (``N x 2``) each sequence's mean weight over them. Since ``A E = M diag(n)``
    (``n`` the classes' sizes), ``(A - M E^T)(A - M E^T)^T = A A^T - M diag(n) M^T``.

    Attributes
    ----------
    A : scipy.sparse.csr_array (N, V)
        The token weights, uncentred (:func:`.token_weight_matrix`).
    means : ndarray (N, 2)
        ``M``.
    n_pos : int
        Tokens of class +1 (the first ``n_pos`` columns).
    a : ndarray (N,)
        The pooled signs ``xi w``.
    """

    A: scipy.sparse.csr_array
    means: Float
    n_pos: int
    a: Float

    def _sizes(self) -> Float:
        return np.array([self.n_pos, self.A.shape[1] - self.n_pos], float)

    def centred(self) -> Float:
        """The dense centred ``N x V`` matrix."""
        return self.A.toarray() - self.means @ _classes(self.A.shape[1], self.n_pos).T

    def gram(self) -> Float:
        """:func:`.null_law.gram` of the centred matrix (dense float64, ``min(N, V)`` square), from the sparse ``A``."""
        A, M = self.A, self.means
        if A.shape[0] <= A.shape[1]:
            K = (A @ A.T).toarray()
            K -= (M * self._sizes()) @ M.T
            return K
        # K - B E^T - E B^T + E (M^T M) E^T with E the class indicators, by blocks in place: the same operations
        # on every entry as the products with E, without three dense V x V temporaries
        B, C, n = np.asarray(A.T @ M), M.T @ M, self.n_pos
        K = (A.T @ A).toarray()
        K[:, :n] -= B[:, :1]
        K[:, n:] -= B[:, 1:]
        K[:n] -= B[:, 0]
        K[n:] -= B[:, 1]
        for rows, r in ((slice(None, n), 0), (slice(n, None), 1)):
            K[rows, :n] += C[r, 0]
            K[rows, n:] += C[r, 1]
        return K

    @functools.cached_property
    def _transposed(self) -> scipy.sparse.csc_array:
        """``A^T``, made once: scipy builds a new object at every ``.T``, and a quadrature makes dozens of matvecs."""
        return self.A.T

    def matvec(self, v: Float) -> Float:
        """``(A - M E^T)(A - M E^T)^T v`` (``N``-vectors) through the sparse ``A``."""
        return np.asarray(self.A @ (self._transposed @ v)) - self.means @ (self._sizes() * (self.means.T @ v))


def pooling_draw(model: CellModel, rng: np.random.Generator) -> PoolingDraw:
    """One draw of the cell's signs and tokens as a :class:`PoolingDraw` (the generator calls of
    :func:`.null_law.pooling_matrix`)."""
    xi, _ = draw_signs(model.correlation, model.T, model.N, rng)
    A = token_weight_matrix(draw_tokens(model, xi, rng), model.w, model.V)
    sizes = np.array([model.n_pos, model.V - model.n_pos], float)
    return PoolingDraw(A, np.asarray(A @ _classes(model.V, model.n_pos)) / sizes, model.n_pos, xi @ model.w)


def draw_eigenvalues(draw: PoolingDraw, model: CellModel) -> Float:
    """The ``V`` eigenvalues of ``D = (V / (N kappa)) A^T A`` for one :class:`PoolingDraw`.

    The Gram matrix's eigenvalues in single precision (LAPACK's divide and conquer, ``evd``): about half the
    time of double at ``min(N, V) = 2000``. The detection thresholds and ``lambda_1`` moved by at most 1e-5 of
    the null's Tracy-Widom scale from those of double precision (:func:`.null_law.gram_eigenvalues`) in the
    cells measured at d = 100-1000; the tests hold them to 0.01.
    """
    ev = scipy.linalg.eigvalsh(draw.gram().astype(np.float32), driver="evd", check_finite=False)
    return padded_eigenvalues(ev, model)


def pooled_spectra(model: CellModel, rng: np.random.Generator, draws: int) -> Iterator[tuple[PoolingDraw, Float]]:
    """``(draw, p)`` for ``draws`` successive draws: the :class:`PoolingDraw` and ``D``'s ``V`` eigenvalues
    (:func:`draw_eigenvalues`)."""
    for _ in range(draws):
        draw = pooling_draw(model, rng)
        yield draw, draw_eigenvalues(draw, model)


CACHE_VERSION = 1
"""The version of the numerics behind a :class:`DrawCache` entry, part of its key: bump it whenever a draw's
results would change (the generator calls, the eigenvalue solver, the quadrature), so that old entries go unused."""


class DrawCache(Protocol):
    """Where the results of a cell's seeded draws may be kept between stores (a run passes one in; this package
    knows nothing of files). A cache never changes a result: an entry is the exact arrays computed without it."""

    def load(self, key: str) -> dict[str, Float] | None:
        """The arrays saved under ``key``, or None (absent, damaged or foreign)."""

    def save(self, key: str, arrays: dict[str, Float]) -> None:
        """Keep ``arrays`` under ``key`` (best effort: a cache that cannot write says nothing)."""


def entry_key(what: str, model: CellModel, seed: Sequence[int], draws: int, **numerics: object) -> str | None:
    """The sha256 (hex) of everything that determines ``draws`` seeded draws' results of the cell ``model``.

    ``what`` names the results; ``seed`` is the generator's seed words; ``numerics`` any other setting of the
    computation; numpy's and scipy's versions too. The encoding is canonical JSON: floats and arrays by their
    float64 bytes. None (not cached) when a user's sampler draws the signs: its code, not only ``R``, decides them.
    """
    if getattr(model.correlation, "sampler", None) is not None:
        return None
    R = np.ascontiguousarray(model.correlation.matrix(model.T), dtype="<f8")
    record = {"version": CACHE_VERSION, "what": what, "d": model.d, "V": model.V, "N": model.N, "T": model.T,
              "n_pos": model.n_pos, "centering": model.centering,
              "w": np.ascontiguousarray(model.w, dtype="<f8").tobytes().hex(),
              "correlation": model.correlation.model_dump_json(), "R": R.tobytes().hex(),
              "seed": [int(s) for s in seed], "draws": int(draws), "gram_dtype": "float32", "solver": "evd",
              "libraries": [np.__version__, scipy.__version__],      # their generators and LAPACK calls
              "numerics": {k: repr(v) for k, v in sorted(numerics.items())}}
    text = json.dumps(record, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def cached_records(key: str | None, cache: DrawCache | None, draws: int) -> list[dict[str, Float]] | None:
    """The ``draws`` records :func:`cached_draws` keeps under ``key``, or None when ``cache`` lacks any of them."""
    if cache is None or key is None:
        return None
    found = cache.load(key)
    if found is None:
        return None
    names = {name.rsplit("_", 1)[0] for name in found}
    out = [{name: found.get(f"{name}_{i}") for name in names} for i in range(draws)]
    if all(v is not None for rec in out for v in rec.values()) and len(found) == len(names) * draws:
        return [{k: np.asarray(v) for k, v in rec.items() if v is not None} for rec in out]
    return None


def save_records(key: str | None, cache: DrawCache | None, records: list[dict[str, Float]]) -> None:
    """Keep ``records`` (one dict a draw) in ``cache`` under ``key``, as :func:`cached_draws` does."""
    if cache is not None and key is not None:
        cache.save(key, {f"{name}_{i}": np.asarray(v) for i, rec in enumerate(records) for name, v in rec.items()})


def cached_draws(model: CellModel, rng: np.random.Generator, draws: int,
                 record: Callable[[PoolingDraw, Float], dict[str, Float]], key: str | None,
                 cache: DrawCache | None) -> list[dict[str, Float]]:
    """``record(draw, p)`` for ``draws`` successive draws (:func:`pooled_spectra`), from ``cache`` when it holds
    them under ``key``, else computed (and saved there).

    ``record`` gives each draw's arrays (float64, deterministic given the draw); an entry holds them all, as
    ``"<name>_<draw>"``. An entry missing any of them is computed again.
    """
    if (found := cached_records(key, cache, draws)) is not None:
        return found
    computed = [record(draw, p) for draw, p in pooled_spectra(model, rng, draws)]
    save_records(key, cache, computed)
    return computed


@dataclass(frozen=True)
class DrawBatch:
    """Successive draws of a cell's stream, to compute apart from the others (on another worker, say).

    Attributes
    ----------
    model : CellModel
        The cell.
    rng : numpy.random.Generator
        A copy of the cell's generator as it stood before the batch's first draw.
    first, count : int
        The index of the batch's first draw in the stream, and its number of draws.
    """

    model: CellModel
    rng: np.random.Generator
    first: int
    count: int


def draw_batches(model: CellModel, rng: np.random.Generator, draws: int, size: int) -> list[DrawBatch]:
    """``draws`` successive draws of ``rng`` (:func:`pooled_spectra`'s) as batches of at most ``size``.

    The draws of the sparse matrices are cheap (milliseconds): they run here, in order, only to find each batch's
    starting state, so that :func:`batch_records` over the batches gives the draws of one pass, bit for bit.
    Balanced: the sizes differ by at most one. ``rng`` is advanced past the draws.
    """
    batches = -(-draws // max(1, size))
    out: list[DrawBatch] = []
    first = 0
    for count in (draws // batches + int(b < draws % batches) for b in range(batches)):
        out.append(DrawBatch(model, copy.deepcopy(rng), first, count))
        for _ in range(count):
            pooling_draw(model, rng)
        first += count
    return out


def batch_records(batch: DrawBatch, record: Callable[[PoolingDraw, Float], dict[str, Float]]
                  ) -> list[dict[str, Float]]:
    """``record(draw, p)`` for the draws of ``batch`` (with one BLAS thread, like the cell's own pass)."""
    with threadpool_limits(limits=1), np.errstate(divide="ignore", invalid="ignore"):
        return [record(draw, p) for draw, p in pooled_spectra(batch.model, copy.deepcopy(batch.rng), batch.count)]
