"""Hypothesis strategies shared by the property tests: small valid sweep definitions and batchings."""

from __future__ import annotations

from hypothesis import strategies as st

CORRELATIONS = [{"model": "iid"}, {"model": "prefix", "L": 1}, {"model": "markov", "r": 0.5},
                {"model": "label", "q": 0.7}]


@st.composite
def sweeps(draw: st.DrawFn) -> dict:
    """A small valid sweep definition (``d <= 10``, at most 2 values per cell axis, a few SNR values).

    Every draw satisfies the spec's cross-field checks: ``V, N >= 2`` and ``top_k <= min(d, V, N)``.
    """
    d = draw(st.integers(4, 10))
    deltas = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=1, max_size=2, unique=True))
    gammas = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=1, max_size=2, unique=True))
    rank = min([d] + [round(d / x) for x in deltas + gammas])
    data = {
        "name": "prop",
        "d": d,
        "replicates": draw(st.integers(1, 3)),
        "seed": draw(st.integers(0, 2**31 - 1)),
        "top_k": draw(st.integers(1, min(3, rank))),
        "correlation": draw(st.sampled_from(CORRELATIONS)),
        "table_centering": draw(st.sampled_from(["class", "none"])),
        "grid": {"delta": deltas, "gamma": gammas,
                 "snr": draw(st.lists(st.sampled_from([0.0, 0.5, 2.0, 6.0]), min_size=1, max_size=3, unique=True)),
                 "T": draw(st.lists(st.integers(1, 4), min_size=1, max_size=2, unique=True)),
                 "weights": draw(st.lists(st.sampled_from(["mean", "optimal", "harmonic"]), min_size=1, max_size=3,
                                          unique=True))},
    }
    if draw(st.booleans()):
        data["observables"] = {"spectrum": {"bins": 4, "max": 6.0}}
    return data


def batchings(replicates: int) -> st.SearchStrategy[dict]:
    """``replicates_per_task`` (1 .. ``replicates``) and ``cells_per_task`` (1 .. 8), each possibly unset."""
    return st.fixed_dictionaries({}, optional={"replicates_per_task": st.integers(1, replicates),
                                               "cells_per_task": st.integers(1, 8)})
