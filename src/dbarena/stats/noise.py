"""How much a point's throughput varies: within one run (per second) and between runs.

The model behind the calibration tests and `bench/precision`: a session's level is the
point's true mean times (1 + session_cv * Z), a run's level that times (1 + between_cv
* Z), independent per session and per run; its per-second
series is an AR(1) process around that level with lag-one autocorrelation `ar1` and
a stationary spread of `within_cv` of the level. `measure` estimates the three from
stored repeats, so the simulations use the noise of a real machine.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np


@dataclass(frozen=True)
class NoiseModel:
    between_cv: float  # run-to-run standard deviation of a run's mean, relative to the mean
    within_cv: float  # per-second standard deviation within a run, relative to its level
    ar1: float  # lag-one autocorrelation of the per-second series
    source: str = "stated"
    # Session-to-session standard deviation of a session's level, relative to the mean:
    # what a new server start and another hour of the machine add (stats/sessions.py).
    session_cv: float = 0.0

    def session(self, rng: np.random.Generator, mean: float) -> float:
        """One session's level, around which its runs vary by between_cv."""
        return mean * (1 + self.session_cv * rng.standard_normal())

    def run(self, rng: np.random.Generator, mean: float, seconds: int) -> np.ndarray:
        """One run's per-second series."""
        level = mean * (1 + self.between_cv * rng.standard_normal())
        sd = self.within_cv * level
        innovations = rng.standard_normal(seconds) * sd * math.sqrt(1 - self.ar1 ** 2)
        out = np.empty(seconds)
        x = rng.standard_normal() * sd
        for i in range(seconds):
            x = self.ar1 * x + innovations[i]
            out[i] = level + x
        return out

    def describe(self) -> str:
        return (f"run-to-run CV {self.between_cv:.1%}, per-second CV {self.within_cv:.1%}, "
                f"lag-1 autocorrelation {self.ar1:.2f} ({self.source})")


def lag1(values: Sequence[float]) -> float:
    n = len(values)
    if n < 3:
        return 0.0
    mean = statistics.fmean(values)
    var = sum((v - mean) ** 2 for v in values)
    if var == 0:
        return 0.0
    return sum((values[i] - mean) * (values[i + 1] - mean) for i in range(n - 1)) / var


@dataclass(frozen=True)
class Group:
    """The repeats of one point: each run's steady-state mean and steady per-second series."""

    name: str
    means: Sequence[float]
    series: Sequence[Sequence[float]]


def measure(groups: Iterable[Group], source: str) -> NoiseModel | None:
    """A noise model from points measured at least 3 times: the median over points of
    their run-to-run CV, per-second CV and lag-one autocorrelation (medians, so one
    disturbed point does not set the model)."""
    between, within, ar = [], [], []
    for g in groups:
        if len(g.means) < 3 or statistics.fmean(g.means) <= 0:
            continue
        between.append(statistics.stdev(g.means) / statistics.fmean(g.means))
        for s in g.series:
            if len(s) >= 10 and statistics.fmean(s) > 0:
                within.append(statistics.stdev(s) / statistics.fmean(s))
                ar.append(lag1(s))
    if not between or not within:
        return None
    return NoiseModel(between_cv=statistics.median(between), within_cv=statistics.median(within),
                      ar1=max(0.0, min(0.95, statistics.median(ar))), source=source)


# The noise at which docs/statistics.md states the power of a default comparison (3 repeats a
# side): a quiet dedicated server, as in the published studies. A busier machine
# needs more repeats (--precision finds how many).
STATED = NoiseModel(between_cv=0.01, within_cv=0.03, ar1=0.3, source="stated: a quiet dedicated server")
