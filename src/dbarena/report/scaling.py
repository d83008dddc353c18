"""How throughput grows with threads: the Universal Scalability Law fit, the saturation
point, the level the CPU saturated from, and the geometric mean of ratios to a baseline.

The Universal Scalability Law (Gunther, "Guerrilla Capacity Planning", 2007):
X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1)), fitted by least squares;
sigma is contention, kappa coherency delay, and the throughput peaks at
N* = sqrt((1 - sigma) / kappa).
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dbarena.records import JSONObject
from dbarena.report.levels import LevelRow
from dbarena.stats import thresholds
from dbarena.stats.bound import CPU_KINDS

SATURATION_GAIN = 0.05


def usl(n: npt.ArrayLike, lam: float, sigma: float, kappa: float) -> npt.NDArray[np.float64]:
    x = np.asarray(n, dtype=float)
    return lam * x / (1 + sigma * (x - 1) + kappa * x * (x - 1))


@dataclass(frozen=True)
class UslFit:
    """A label's fit: lambda (the throughput of one thread), sigma (contention), kappa
    (coherency delay), the predicted peak (None: no retrograde within reach) and R²,
    each to the precision the fit determines it (rounded_fit)."""

    lambda_: float  # "lambda" in the JSON (a Python keyword here)
    sigma: float
    kappa: float
    peak_threads: float | None
    peak_tps: float | None
    r2: float | None

    def as_json(self) -> JSONObject:
        """The fit as the report's JSON exports it."""
        return {"lambda": self.lambda_, "sigma": self.sigma, "kappa": self.kappa, "peak_threads": self.peak_threads,
                "peak_tps": self.peak_tps, "r2": self.r2}


# The USL has 3 parameters: through 3 levels it passes exactly (R² 1 whatever the data),
# and 4 leave one degree of freedom. A fit is published from 5 distinct levels on.
USL_MIN_LEVELS = 5

# How far past the highest level measured a predicted peak is still a prediction. A
# peak at N* makes kappa's term at the highest level L about (1 - sigma) (L / N*)²: past
# 4 L under 1/16 of the denominator, within a few run-to-run spreads (1-3 %) of nothing.
# There the data cannot tell kappa from 0, and N* = sqrt((1 - sigma) / kappa) is the
# optimizer's rounding blown up: throughput that grows linearly fits kappa ~1e-11 and a
# "peak" at 354,045 threads whose digits moved from machine to machine (issue 57).
PEAK_REACH = 4

# Significant digits of a fit's figures. curve_fit stops once a step changes the
# parameters or the squares by less than 1e-8 (its ftol and xtol): digits past the 7th
# are the optimizer's path, which a machine's floating point and BLAS change, not the data's.
FIT_DIGITS = 6


def _significant(value: float, digits: int = FIT_DIGITS) -> float:
    return float(format(value, f".{digits}g"))


def _decimals(value: float, scale: float) -> float:
    """`value` rounded where its term value * scale (in the USL's denominator, against
    its 1) shows FIT_DIGITS decimals: sigma and kappa the optimizer leaves at 1e-10
    instead of 0 (it keeps inside its bounds) are 0, as the data have them."""
    return round(value, FIT_DIGITS + math.ceil(math.log10(scale)))


def usl_peak(lam: float, sigma: float, kappa: float, highest: int) -> tuple[float, float] | None:
    """The predicted peak (threads, throughput); None without retrograde (kappa 0, sigma
    1), below one thread (kappa tiny against sigma) or beyond PEAK_REACH times the
    highest level measured (a degenerate fit: kappa indistinguishable from 0)."""
    if kappa <= 0 or sigma >= 1:
        return None
    peak_n = math.sqrt((1 - sigma) / kappa)
    if peak_n < 1 or peak_n > PEAK_REACH * highest:
        return None
    return round(peak_n, 1), _significant(float(usl(peak_n, lam, sigma, kappa)))


def usl_fit(levels: list[int], values: list[float]) -> UslFit | None:
    """Least-squares USL fit; None with fewer than USL_MIN_LEVELS levels or when it does
    not converge. Its peak as usl_peak finds it (None where the fit is degenerate)."""
    if len(set(levels)) < USL_MIN_LEVELS or min(values) <= 0:
        return None
    # Imported here, not at the top: scipy.optimize takes about 0.4 s to import, a fifth
    # of a report's budget, and a report whose series have fewer than 3 levels fits nothing.
    from scipy.optimize import OptimizeWarning, curve_fit

    n, x = np.asarray(levels, dtype=float), np.asarray(values, dtype=float)
    lam0 = x[0] / n[0]
    try:
        with warnings.catch_warnings():
            # When the fit is exact scipy cannot estimate a covariance, which it warns
            # about; the parameters themselves are fine.
            warnings.simplefilter("ignore", OptimizeWarning)
            (lam, sigma, kappa), _ = curve_fit(usl, n, x, p0=(lam0, 0.05, 0.001),
                                              bounds=([0, 0, 0], [np.inf, 1, 1]), maxfev=20000)
    except (RuntimeError, ValueError):
        return None
    highest = max(levels)
    lam = _significant(float(lam))
    sigma = _decimals(float(sigma), highest - 1)
    kappa = _decimals(float(kappa), highest * (highest - 1))
    predicted = usl(n, lam, sigma, kappa)
    ss_res = float(np.sum((x - predicted) ** 2))
    ss_tot = float(np.sum((x - x.mean()) ** 2))
    peak = usl_peak(lam, sigma, kappa, highest)
    return UslFit(lambda_=lam, sigma=sigma, kappa=kappa, peak_threads=peak[0] if peak else None,
                  peak_tps=peak[1] if peak else None,
                  r2=round(1 - ss_res / ss_tot, FIT_DIGITS) if ss_tot > 0 else None)


def saturation(levels: list[int], values: list[float], gain: float = SATURATION_GAIN) -> int | None:
    """The first level whose next level adds less than `gain` (relative); None if
    throughput still grows at the last level measured."""
    for (n, x), x_next in zip(zip(levels, values), values[1:]):
        if x > 0 and x_next < x * (1 + gain):
            return n
    return None


# Saturated as every view calls it (stats/thresholds.py): a level this busy is the one
# the point's bound and the decision's "why" call machine CPU bound.
CPU_SATURATED_PCT = thresholds.SATURATED_PCT


def cpu_saturation(rows: Iterable[LevelRow]) -> int | None:
    """The first level at which the machine's CPU was at least CPU_SATURATED_PCT busy
    (study D: past it, more clients queue for CPU rather than add throughput) and its
    points' bound (stats/bound.py, the one answer of what bound a point) is the CPU, or
    not known; None if never. A level busy that much whose points waited on locks, WAL
    or I/O is not where the CPU saturated: its bound says what did."""
    for r in rows:
        if r.cpu_busy_pct is not None and r.cpu_busy_pct >= CPU_SATURATED_PCT \
                and r.bound_kind in (None, *CPU_KINDS):
            return r.threads
    return None


def geomean_ratio(values: dict[int, float], baseline: dict[int, float]) -> float | None:
    """Geometric mean of values[N] / baseline[N] over the levels both have."""
    common = [n for n in values if n in baseline and values[n] > 0 and baseline[n] > 0]
    if not common:
        return None
    return math.exp(statistics.fmean(math.log(values[n] / baseline[n]) for n in common))
