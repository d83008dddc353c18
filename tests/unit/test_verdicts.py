"""Calibration of verdicts and of adaptive repeats, on simulated runs: per-second
AR(1) series around a level that varies from run to run (noise.NoiseModel), each run
reduced to its steady-state mean by the same code as a stored point. Seeded."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from dbarena.stats import noise
from dbarena.stats import estimators as stats
from dbarena.stats import steadystate

SECONDS = 30


def run_mean(model: noise.NoiseModel, rng: np.random.Generator, mean: float) -> float:
    series = model.run(rng, mean, SECONDS)
    steady = steadystate.steady_state([float(i + 1) for i in range(SECONDS)], list(series), SECONDS)
    assert steady is not None
    return steady.mean


def significant_share(model: noise.NoiseModel, difference: float, pairs: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    found = 0
    for _ in range(pairs):
        a = [run_mean(model, rng, 1000.0) for _ in range(stats.MIN_REPEATS)]
        b = [run_mean(model, rng, 1000.0 * (1 + difference)) for _ in range(stats.MIN_REPEATS)]
        found += stats.compare(stats.repeats(a), stats.repeats(b)).significant
    return found / pairs


def test_a_a_pairs_are_called_significant_at_most_5_percent_of_the_time():
    # The same configuration twice, 3 runs a side, on a noisier machine than stated.
    model = noise.NoiseModel(between_cv=0.03, within_cv=0.05, ar1=0.5)
    assert significant_share(model, 0.0, pairs=1000, seed=20261122) <= 0.05


def test_a_true_5_percent_difference_is_found_80_percent_of_the_time_at_the_stated_noise():
    assert significant_share(noise.STATED, 0.05, pairs=1000, seed=7) >= 0.80


def test_one_run_a_side_is_never_a_verdict_however_far_apart():
    rng = np.random.default_rng(3)
    a = stats.summarize([run_mean(noise.STATED, rng, 1000.0)])
    b = stats.summarize([run_mean(noise.STATED, rng, 2000.0)])
    c = stats.compare(a.estimate, b.estimate)
    assert c.verdict is None and c.ratio == pytest.approx(2.0, rel=0.1)


@dataclass
class Stopped:
    """Where the stopping rule left a simulated point."""

    values: list[float]
    state: stats.Precision


def adaptive(model_cv: float, target: float, rng: np.random.Generator, max_repeats: int = 10) -> Stopped:
    values = [1000.0 * (1 + model_cv * rng.standard_normal()) for _ in range(stats.MIN_REPEATS)]
    while True:
        state = stats.precision(values, target)
        if state.reached or len(values) >= max_repeats:
            return Stopped(values, state)
        values.append(1000.0 * (1 + model_cv * rng.standard_normal()))


@pytest.mark.parametrize("noise_over_target", [0.25, 0.5, 1.0])
def test_intervals_reached_by_adaptive_repeats_cover_the_true_mean(noise_over_target):
    # Optional stopping: the rule stops when the interval looks narrow enough, which
    # favours runs that happened to agree. Its conservative interval must still cover.
    rng = np.random.default_rng(int(noise_over_target * 100))
    target = 0.02
    reached = covered = 0
    for _ in range(2000):
        state = adaptive(noise_over_target * target, target, rng).state
        if state.reached:
            assert state.half_width is not None and state.mean is not None and state.n >= 3
            reached += 1
            covered += abs(state.mean - 1000.0) <= state.half_width * state.mean
    assert reached >= 100
    assert covered / reached >= 0.93


def test_precision_needs_three_runs_and_forecasts_the_rest():
    assert not stats.precision([1000.0, 1000.5], 0.02).reached  # two agreeing runs are not enough
    assert stats.precision([1000.0, 1000.5, 999.8], 0.02).reached
    wide = [1000.0, 1040.0, 970.0]
    assert not stats.precision(wide, 0.01).reached
    assert 3 < stats.repeats_needed(wide, 0.01, max_repeats=10) <= 10
    assert stats.repeats_needed([1000.0], 0.02, max_repeats=10) == 3


def test_a_a_pairs_of_adaptively_repeated_points_are_called_significant_at_most_5_percent_of_the_time():
    # Both sides stopped by the rule, which favours runs that happen to agree: their
    # summaries use the rule's conservative spread, or 8 to 10 % of pairs would differ.
    rng = np.random.default_rng(99)
    found = 0
    for _ in range(1000):
        a = adaptive(0.01, 0.02, rng)
        b = adaptive(0.01, 0.02, rng)
        found += stats.compare(stats.repeats(a.values, adaptive=True), stats.repeats(b.values, adaptive=True)).significant
    assert found / 1000 <= 0.05


def test_fewer_seconds_is_faster_for_a_lower_is_better_metric():
    slow = stats.repeats([1.00, 1.02, 0.98, 1.01])
    quick = stats.repeats([0.80, 0.81, 0.79, 0.80])
    assert slow is not None and quick is not None
    c = stats.compare(slow, quick, of="seconds")
    assert c.ratio == pytest.approx(0.8 / 1.0025, rel=1e-3) and c.verdict == stats.Verdict.FASTER
    assert c.text.startswith("20.2 % fewer seconds: faster (significant")
    back = stats.compare(quick, slow, of="seconds")
    assert back.verdict == stats.Verdict.SLOWER and back.text.startswith("25.3 % more seconds: slower")
    # The same figures as throughput: more is faster.
    assert stats.compare(slow, quick).verdict == stats.Verdict.SLOWER
