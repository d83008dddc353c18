"""The one vocabulary of verdicts, for every view that states one (a level of `compare`,
a workload and a label of the decision, the report's headline, `gate`).

A significant difference (p < 0.05) is "faster" or "slower". Where there is none, the
interval decides what may be said: "no difference" when the whole 95 % interval lies
within +-MARGIN of no change (the data rule out a difference that matters), and
"inconclusive" when it reaches past it (the data can tell neither a difference nor its
absence: -2.2 % with an interval of -41.6 % .. +63.7 % is not "no difference"). "no
verdict" is said where no interval can be had (too few runs), "not comparable" where
the configurations differ.
"""

from __future__ import annotations

from dbarena.stats.estimate import CONFIDENCE

FASTER, SLOWER, SAME, INCONCLUSIVE, NO_VERDICT, NOT_COMPARABLE = \
    "faster", "slower", "no difference", "inconclusive", "no verdict", "not comparable"
# A change smaller than this either way is taken as no difference that matters to a
# reader choosing a machine: the run-to-run spread of a quiet machine's repeats is a few
# percent, and the published studies dbarena reproduces report differences of 10 % and
# more as findings. `gate` has a threshold of its own (--max-regression).
MARGIN = 0.05


def significant(p_value: float) -> bool:
    return p_value < 1 - CONFIDENCE


def within(low: float, high: float, margin: float = MARGIN) -> bool:
    """Whether an interval of a ratio lies within +-margin of 1 (no change)."""
    return low >= 1 - margin and high <= 1 + margin


def of_interval(faster: bool, low: float, high: float, p_value: float, margin: float = MARGIN) -> str:
    """The verdict of a ratio with its interval and p-value; `faster`: whether the
    estimate's direction is faster (for seconds, a ratio below 1)."""
    if significant(p_value):
        return FASTER if faster else SLOWER
    return SAME if within(low, high, margin) else INCONCLUSIVE


def interval_words(low: float, high: float, margin: float = MARGIN) -> str:
    """Why a verdict that is not significant is what it is, in words."""
    bounds = f"{(low - 1) * 100:+.1f} % to {(high - 1) * 100:+.1f} %"
    if within(low, high, margin):
        return f"95 % CI {bounds}, within ±{margin:.0%}"
    return f"95 % CI {bounds} reaches past ±{margin:.0%}: more sessions narrow it"
