"""An estimate of a mean (its standard error and degrees of freedom, for a t interval)
and what computing intervals needs: the sample standard deviation, and the t and
chi-square distributions' quantiles and tail areas (from scipy.special only)."""

from __future__ import annotations

import functools
import math
import operator
import statistics
from dataclasses import dataclass
from fractions import Fraction
from itertools import repeat
from typing import Callable, Sequence

CONFIDENCE = 0.95


class _T:
    """Student's t: quantiles and upper tail areas (scipy.special's, which scipy.stats
    uses too, at half the import time of scipy.stats: every command pays it)."""

    def __init__(self) -> None:
        from scipy.special import stdtr, stdtrit

        self._cdf, self._quantile = stdtr, stdtrit

    def ppf(self, q: float, df: float) -> float:
        return self._ppf(q, df)

    # Cached: a quantile costs about 0.2 ms, and a first read of 10 k points asks for the
    # same few (95 %, two dozen batches) 10 k times.
    @functools.lru_cache(maxsize=4096)
    def _ppf(self, q: float, df: float) -> float:
        return float(self._quantile(df, q))

    def sf(self, x: float, df: float) -> float:
        return float(self._cdf(df, -x))


class _Chi2:
    def __init__(self) -> None:
        from scipy.special import chdtri

        self._upper_quantile = chdtri

    def ppf(self, q: float, df: float) -> float:
        return float(self._upper_quantile(df, 1 - q))


def sample_stdev(values: Sequence[float]) -> float:
    """The sample standard deviation, two-pass with exact sums (math.fsum): as accurate
    as statistics.stdev for benchmark figures, which computes in exact fractions and is
    a hundred times slower on the hundreds of repeats a large store pools."""
    n = len(values)
    if n < 2:
        raise ValueError("stdev needs at least two values")
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


# statistics' own correctly rounded square root of a fraction (Python 3.11 on), which
# exact_stdev ends with as statistics.stdev does; without it, statistics.stdev itself.
_sqrt_of_fraction: Callable[[int, int], float] | None = getattr(statistics, "_float_sqrt_of_frac", None)


def exact_stdev(values: Sequence[float]) -> float:
    """statistics.stdev of finite floats, the same float: the correctly rounded square
    root of the exact sample variance. Each float is an integer over a power of two;
    brought to the largest denominator, the sums are of integers, made by map and sum in
    C, where statistics adds fractions a value at a time (a sixth of a report's figures
    over repeats of 100 k points). Anything else (ints, NaN, infinity, fewer than two):
    statistics.stdev, which says what is wrong."""
    n = len(values)
    if n < 2 or _sqrt_of_fraction is None or set(map(type, values)) != {float} or not all(map(math.isfinite, values)):
        return statistics.stdev(values)
    numerators, denominators = zip(*map(float.as_integer_ratio, values))
    common = max(denominators)
    scaled = list(map(operator.mul, numerators, map(operator.floordiv, repeat(common), denominators)))
    total = sum(scaled)
    # (n * sum of squares - sum squared) / n is the sum of squared deviations, exactly.
    variance = Fraction(n * sum(map(operator.mul, scaled, scaled)) - total * total, n * (n - 1) * common * common)
    return _sqrt_of_fraction(variance.numerator, variance.denominator)


@functools.cache
def t_dist() -> _T:
    # Imported only when an interval is actually computed, not at every start of the CLI.
    return _T()


@functools.cache
def chi2_dist() -> _Chi2:
    return _Chi2()


@dataclass(frozen=True)
class Estimate:
    """A mean with its standard error and degrees of freedom (for a t interval)."""

    mean: float
    se: float | None
    df: int | None
    n: int  # observations behind it (repeats, or batches)

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
        if self.se is None or self.df is None or self.df < 1:
            return None
        half = float(t_dist().ppf(0.5 + confidence / 2, self.df)) * self.se
        return self.mean - half, self.mean + half
