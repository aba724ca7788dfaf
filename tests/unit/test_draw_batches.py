"""A cell's draws cut into batches (rmtsweep.theory.pooling.draw_batches), each computed apart: the draws of one
pass of the cell's generator, bit for bit, and pooled_spikes of them is pooled_spikes itself."""

from __future__ import annotations

import pickle
from functools import partial

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from rmtsweep.model.correlation import make_correlation
from rmtsweep.theory.null_law import pooled_model, pooled_seed
from rmtsweep.theory.pooled_spikes import pooled_spikes, pooled_stream, spike_record
from rmtsweep.theory.pooling import batch_records, draw_batches, pooled_spectra

W, CORR, DELTA, GAMMA, D, DRAWS = np.array([0.4, 0.3, 0.2, 0.1]), make_correlation("prefix", L=2), 0.5, 0.5, 60, 16
SNR = [0.0, 2.0, 4.0]


@pytest.fixture(scope="module")
def one_pass() -> list[dict[str, np.ndarray]]:
    """The records of one pass over a single generator, in order (what the serial functions do)."""
    model, rng = pooled_model(W, CORR, DELTA, GAMMA, D), pooled_seed(W, DELTA, GAMMA, D)
    with threadpool_limits(limits=1):
        return [spike_record(draw, p, model) for draw, p in pooled_spectra(model, rng, DRAWS)]


@pytest.mark.parametrize("size, sizes", [(1, [1] * 16), (3, [3] * 4 + [2] * 2), (5, [4] * 4), (16, [16]), (40, [16])])
def test_batches_computed_apart_are_the_draws_of_one_pass(size, sizes, one_pass):
    model, rng, _ = pooled_stream(W, CORR, DELTA, GAMMA, D, draws=DRAWS)
    batches = draw_batches(model, rng, DRAWS, size)
    assert [b.count for b in batches] == sizes
    assert [b.first for b in batches] == list(np.cumsum([0, *sizes[:-1]]))
    after = pooled_seed(W, DELTA, GAMMA, D)
    list(pooled_spectra(model, after, DRAWS))
    assert rng.bit_generator.state == after.bit_generator.state           # advanced past the draws, like a pass
    record = partial(spike_record, model=model)
    # each batch as a worker sees it (pickled), the last one twice (a task run again gives the same)
    got = [rec for b in batches for rec in batch_records(pickle.loads(pickle.dumps(b)), record)]
    again = batch_records(batches[-1], record)
    assert len(got) == DRAWS
    for mine, theirs in zip(got, one_pass, strict=True):
        assert mine.keys() == theirs.keys()
        for name in mine:
            np.testing.assert_array_equal(mine[name], theirs[name])
    for mine, theirs in zip(again, one_pass[-len(again):], strict=True):
        np.testing.assert_array_equal(mine["p"], theirs["p"])


def test_pooled_spikes_of_records_computed_apart_is_pooled_spikes():
    model, rng, _ = pooled_stream(W, CORR, DELTA, GAMMA, D, draws=DRAWS)
    records = [rec for b in draw_batches(model, rng, DRAWS, 5)
               for rec in batch_records(b, partial(spike_record, model=model))]
    apart = pooled_spikes(SNR, W, CORR, DELTA, GAMMA, D, records=records)
    whole = pooled_spikes(SNR, W, CORR, DELTA, GAMMA, D)
    for name in ("lambda1", "lambda1_se", "overlap", "overlap_se", "location", "scale"):
        np.testing.assert_array_equal(getattr(apart, name), getattr(whole, name))
