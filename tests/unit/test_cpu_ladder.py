"""One CPU ladder (stats/cpuladder.py): a point's stored bound (stats/bound.py) and a
side's "why" in the decision (stats/decision.py) stop at the same step, in the same
words, for the same machine figures; they once had the thresholds in two orders (the
decision took the load generator only where its warning flagged it, the bound took
iowait as a wait) and two sets of words."""

from __future__ import annotations

import itertools

import pytest

from dbarena.stats import bound, cpuladder, decision, thresholds
from points import point

BUSY = (30.0, thresholds.SATURATED_PCT, 99.0)
IOWAIT = (None, 5.0, thresholds.IOWAIT_PCT, 35.0)
SERVER = (None, 0.4, thresholds.SATURATED * 2, 1.9)
LOADGEN = (None, 0.1, thresholds.SATURATED * 2, 1.8)


@pytest.mark.parametrize("busy, iowait, server, loadgen", list(itertools.product(BUSY, IOWAIT, SERVER, LOADGEN)))
def test_the_stored_bound_and_the_decision_climb_one_ladder(busy: float, iowait: float | None,
                                                             server: float | None, loadgen: float | None) -> None:
    # 2 hardware threads for the server, 2 load-generator threads on a 2-thread machine.
    sample = {"cpu_idle_pct": 100 - busy, "cpu_iowait_pct": iowait, "server_cpu": server, "loadgen_cpu": loadgen}
    stored = bound.classify(None, [sample] * 10, hardware_threads=2, loadgen_threads=2, clients=2)
    side = point(cpu_busy_pct=busy, cpu_iowait_pct=iowait, server_cpu=server, loadgen_cpu=loadgen, threads=2,
                 clients=2, samples=60)
    assert decision.bound([side]) == cpuladder.Step(stored.kind, stored.evidence).words()


def test_each_step_in_its_order_and_words() -> None:
    def said(**figures: float | None) -> str:
        given: dict[str, float | None] = {"busy_pct": None, "iowait_pct": None, "server_cpu": None,
                                          "loadgen_cpu": None, **figures}
        return cpuladder.step(cpuladder.Figures(**given, server_threads=2, loadgen_threads=4,
                                                loadgen_cores=2)).words()

    # iowait first, whatever the CPU says; the load generator's cores are capped by the machine's.
    assert said(iowait_pct=25.0, busy_pct=99.0, server_cpu=1.9) == "I/O (iowait 25 %)"
    assert said(loadgen_cpu=1.7, server_cpu=1.9, busy_pct=99.0) == "load generator saturated (1.7 cores for 4 thread(s))"
    assert said(loadgen_cpu=1.5, server_cpu=1.9, busy_pct=99.0) == "server CPU saturated (1.9 of 2 hardware threads)"
    assert said(busy_pct=95.0, server_cpu=1.0, loadgen_cpu=0.5) == \
        "machine CPU saturated (CPU 95 % busy, server 1.0 cores, load generator 0.5 cores)"
    assert said(busy_pct=30.0, server_cpu=0.4) == "no single bound (CPU 30 % busy, server 0.4 cores)"
    assert said() == cpuladder.TOO_FEW
