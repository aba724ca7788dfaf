"""The transition's interval (rmtsweep.analysis.transition.bootstrap_interval) holds the grid step it is resolved in."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.analysis.transition import bootstrap_interval, crossing, crossing_step

WIDTH = 0.1          # logistic width of the synthetic detection curves: sharp against every grid step below
REPLICATES = 48
LEVEL = 0.9


def logistic_line(step: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float]:
    """A line with a known transition ``t ~ U(2, 6)``: rate ``1 / (1 + exp(-(snr - t) / WIDTH))`` on the grid
    ``0, step, ..., 8`` (``t`` falls anywhere inside a step), and ``REPLICATES`` seeded Bernoulli replicates."""
    snr = np.arange(0.0, 8.0 + step / 2, step)
    t = rng.uniform(2.0, 6.0)
    p = 1 / (1 + np.exp(-(snr - t) / WIDTH))
    return (rng.random((REPLICATES, snr.size)) < p).astype(float), snr, t


@pytest.mark.parametrize("step", [0.5, 1.0, 2.0])
def test_the_interval_covers_the_true_transition_on_coarse_grids(step):
    """Over 200 seeded lines, the 90 % interval holds the true transition (where the detection
    probability is 1/2, not the crossing of its linear interpolation) at least 90 % - 3 binomial s.e.
    of the time. The bootstrap alone covers it 59 %, 14 % and 7.5 % of the time at steps 0.5, 1, 2:
    every resample crosses in the same step, at nearly the same interpolated point."""
    lines = 200
    covered = 0
    for child in np.random.SeedSequence([7, int(step * 10)]).spawn(lines):
        data, boot = (np.random.default_rng(c) for c in child.spawn(2))
        hits, snr, t = logistic_line(step, data)
        point, lo, hi, censored = bootstrap_interval(hits, snr, 200, LEVEL, boot)
        assert np.isfinite(point) and censored == 0.0
        covered += lo <= t <= hi
    se = np.sqrt(LEVEL * (1 - LEVEL) / lines)
    assert covered / lines >= LEVEL - 3 * se, f"coverage {covered / lines:.3f} at step {step}"


@pytest.mark.parametrize("step, first", [(0.5, 1.0), (1.0, 3.0), (2.0, 4.0)])
def test_a_jump_from_0_to_1_within_one_step_gives_that_step(step, first):
    """Every replicate misses below ``first`` and detects from it on: all resamples cross at the same
    interpolated point, so the bootstrap interval has zero width; the interval is the step."""
    snr = np.arange(0.0, 8.0 + step / 2, step)
    hits = np.tile((snr >= first).astype(float), (30, 1))
    point, lo, hi, censored = bootstrap_interval(hits, snr, 100, 0.95, np.random.default_rng(0))
    assert point == pytest.approx(first - step / 2) and censored == 0.0
    assert (lo, hi) == (first - step, first)
    # with a NaN rate just below the jump, the step is between the neighbouring finite points
    rate = (snr >= first).astype(float)
    rate[snr == first - step] = np.nan
    assert tuple(map(float, crossing_step(rate, snr))) == (first - 2 * step, first)


def test_the_step_only_widens_a_narrower_interval_and_censored_bounds_stay_open():
    """A guard on the rule, not on the old bug: on a fine grid the bootstrap interval already spans the
    crossing's step and is returned unchanged; a censored transition is not widened; a bound that falls
    on censored resamples stays NaN."""
    snr = np.linspace(0.0, 4.0, 81)                                    # step 0.05, curve width 0.35
    rng = np.random.default_rng(3)
    hits = (rng.random((40, snr.size)) < 1 / (1 + np.exp(-(snr - 2.0) / 0.35))).astype(float)
    widened = bootstrap_interval(hits, snr, 300, 0.95, np.random.default_rng(1))
    plain = bootstrap_interval(hits, snr, 300, 0.95, np.random.default_rng(1), include_step=False)
    left, right = crossing_step(hits.mean(axis=0), snr)
    assert widened == plain and plain[1] < left and plain[2] > right
    never = np.zeros((20, 5))
    assert np.isnan(bootstrap_interval(never, np.arange(5.0), 50, 0.9, rng)[:3]).all()
    # 4 of 10 replicates detect at snr 0: about a third of the resamples start at or above 1/2
    # (censored below the grid), so the lower bound is open; the upper one is widened to the step
    edge = np.array([[1, 1, 1]] * 4 + [[0, 1, 1]] * 6, dtype=float)
    point, lo, hi, censored = bootstrap_interval(edge, np.array([0.0, 1.0, 2.0]), 400, 0.9, rng)
    assert point == pytest.approx(1 / 6) and 0.1 < censored < 0.5
    assert np.isnan(lo) and hi == 1.0 and float(crossing(edge.mean(axis=0), np.array([0.0, 1.0, 2.0]))) == point


def test_lines_whose_replicates_agree_need_no_draws():
    """Every resample of such a line is the line: the interval is its step (or NaN, fully censored), with no
    draw from the generator."""
    from rmtsweep.analysis.transition import bootstrap_intervals
    snr = np.array([0.0, 1.0, 2.0, 3.0])
    agree = np.array([np.tile([0, 0, 1, 1], (5, 1)), np.tile([1, 1, 1, 1], (5, 1)), np.tile([0, 0, 0, 0], (5, 1))],
                     float)
    point, lo, hi, censored = bootstrap_intervals(agree, snr, 100, 0.9, rng := np.random.default_rng(1))
    assert np.allclose(point[:1], [1.5]) and np.isnan(point[1:]).all()
    assert (lo[0], hi[0]) == (1.0, 2.0) and np.isnan(lo[1:]).all() and np.isnan(hi[1:]).all()
    assert censored.tolist() == [0.0, 1.0, 1.0]
    assert rng.bit_generator.state == np.random.default_rng(1).bit_generator.state
