"""Interference named (issue 52): each point's neighbours' CPU from its stored system
samples, the `neighbours` warning in place of `load-generator-bound` where other
processes took the CPU, the decision's "why" naming them, and a comparison whose sides
ran under different interference left undecided with the reason."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

import storebuild
from points import point

from dbarena.stats import analysis, decision, interference, thresholds
from dbarena.store.database import Store

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stores"


def _copy(name: str, tmp_path: Path) -> Path:
    path = tmp_path / name
    shutil.copy(FIXTURES / name, path)
    return path


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """`make demo`'s store, measured on the 2-CPU machine while other work took most of it."""
    return _copy("demo-seed-a-quick.db", tmp_path)


def test_a_point_s_neighbours_are_the_busy_cpu_the_server_and_load_generator_did_not_take(demo: Path) -> None:
    with Store(demo) as db:
        points = analysis.load(db)
    raw = sqlite3.connect(demo)
    try:
        for p in points:
            rows = raw.execute("SELECT second, cpu_idle_pct, cpu_iowait_pct, cpu_steal_pct, server_cpu, loadgen_cpu "
                               "FROM system_samples WHERE point_id = ?", (p.point_id,)).fetchall()
            if not rows:
                assert p.neighbour_cpu is None and p.steal_cpu is None
                continue
            steady = [r for r in rows if p.steady_start_s is None or r[0] >= p.steady_start_s] or rows

            def mean(k: int) -> float:
                values = [r[k] for r in steady if r[k] is not None]
                return sum(values) / len(values)
            busy = (100 - mean(1) - mean(2) - mean(3)) / 100 * 2
            expected = busy - mean(4) - mean(5) - thresholds.HARNESS_CPU
            assert p.machine_threads == 2
            assert p.neighbour_cpu == pytest.approx(max(0.0, expected), abs=1e-9)
            assert p.steal_cpu == pytest.approx(mean(3) / 100 * 2, abs=1e-9)
    finally:
        raw.close()


def test_neighbours_not_the_load_generator_are_warned_of_where_they_took_the_cpu(demo: Path) -> None:
    """The demo's points had 0 % idle CPU, the server 0.1-0.6 of 2 CPUs, the load
    generator 0.0-0.3 and other processes 1.1-1.8: before, every one was called
    load-generator-bound with the advice to move the load generator."""
    with Store(demo) as db:
        points = [p for p in analysis.load(db) if p.status == "ok" and p.samples >= 3]
    assert len(points) == 18
    for p in points:
        codes = {w["code"] for w in p.warnings}
        assert "neighbours" in codes and "load-generator-bound" not in codes, (p.point_id, p.warnings)
        assert p.neighbour_cpu is not None and 1.0 < p.neighbour_cpu < 1.9
        (said,) = [w["message"] for w in p.warnings if w["code"] == "neighbours"]
        assert said.startswith(f"neighbours took {p.neighbour_cpu:.1f} of 2 CPUs while the server used")
        assert "not the load generator" in said
    # The decision's "why" names them too, with their range over the repeats.
    one_level = [p for p in points if p.workload == "pgbench-select-only"]
    assert decision.bound(one_level).startswith("neighbours took 1.1-1.3 of 2 CPUs (machine CPU 100 % busy")


def test_a_load_generator_that_takes_the_cpu_itself_is_still_load_generator_bound() -> None:
    from dbarena.stats import steadystate

    # 1 % idle, the server at 1.4 of 2, the load generator 0.5, nothing else: it competes.
    (flag,) = steadystate.loadgen_verdict({"loadgen_cpu": 0.5, "cpu_idle_pct": 1.0, "server_cpu": 1.4}, 2, 2)
    assert flag.code == steadystate.Warning_.LOADGEN_BOUND and "other processes 0.1" in flag.message
    # The same machine, the server at 0.5, the load generator 0.2, other processes 1.2.
    (flag,) = steadystate.loadgen_verdict({"loadgen_cpu": 0.2, "cpu_idle_pct": 1.0, "server_cpu": 0.5}, 2, 2)
    assert flag.code == steadystate.Warning_.NEIGHBOURS
    # Saturated itself (its threads' capacity), whatever the neighbours took: both said.
    codes = [f.code for f in steadystate.loadgen_verdict(
        {"loadgen_cpu": 1.7, "cpu_idle_pct": 0.0, "server_cpu": 0.0}, 2, 8)]
    assert codes == [steadystate.Warning_.LOADGEN_BOUND, steadystate.Warning_.NEIGHBOURS]
    # A large machine: a quarter of a CPU of others is not worth a warning there.
    assert steadystate.loadgen_verdict({"loadgen_cpu": 0.5, "cpu_idle_pct": 95.5, "server_cpu": 2.0}, 2, 8, 64) == ()


def test_sides_that_ran_under_different_interference_differ_with_the_reason(demo: Path, tmp_path: Path) -> None:
    """Real stored samples: the demo's select-only points at 1 thread (neighbours 1.3)
    against schema 6's (0.6 and 0.7, measured on another day)."""
    older = _copy("v6.db", tmp_path)
    with Store(demo) as db:
        busy = [p for p in analysis.load(db) if p.workload == "pgbench-select-only" and p.threads == 1]
    with Store(older) as db:
        calmer = [p for p in analysis.load(db) if p.workload == "pgbench-select-only" and p.threads == 1
                  and p.label == "pg-run"]
    said = interference.differs(busy, calmer, "vm", "pg-run")
    assert said == ("the sides ran under different interference: neighbours took 1.3 of 2 CPUs during vm, 0.6-0.7 "
                    "during pg-run (means 1.3 and 0.7); beyond the 0.25-CPU threshold (measure both under the same "
                    "load)")
    assert interference.differs(busy, busy) is None
    # Points without system samples (an import) say nothing either way.
    assert interference.differs(busy, [point(neighbour_cpu=None)]) is None


def test_the_threshold_is_a_quarter_of_a_cpu_or_a_tenth_of_the_machine() -> None:
    a = [point(neighbour_cpu=1.0, machine_threads=2)]
    assert interference.differs(a, [point(neighbour_cpu=0.8, machine_threads=2)]) is None
    assert interference.differs(a, [point(neighbour_cpu=0.7, machine_threads=2)]) is not None
    big = [point(neighbour_cpu=4.0, machine_threads=64)]
    assert interference.differs(big, [point(neighbour_cpu=0.0, machine_threads=64)]) is None  # under 6.4
    assert "6.4-CPU threshold" in (interference.differs(big, [point(neighbour_cpu=12.0, machine_threads=64)]) or "")
    # Steal is interference too: the hypervisor's other guests.
    stolen = interference.differs([point(neighbour_cpu=0.1, steal_cpu=0.6)], [point(neighbour_cpu=0.1, steal_cpu=0.0)])
    assert stolen is not None and "the hypervisor took (steal) 0.6 of 2 CPUs during A, 0.0 during B" in stolen


def test_a_comparison_of_sides_under_different_interference_is_not_decided(tmp_path: Path) -> None:
    """Labels a and b, 10 % apart with a tight spread (a verdict), their samples the
    same but for b's idle CPU: the machine 94 % busy while b ran, 39 % while a did."""
    path = storebuild.build(tmp_path / "s.db", derive=False)
    with Store(path) as db:
        before = analysis.compare(analysis.load(db), "a", "b")
    assert all(r.verdict == "slower" for r in before)
    raw = sqlite3.connect(path)
    raw.execute("UPDATE system_samples SET cpu_idle_pct = 5 WHERE point_id IN "
                "(SELECT p.id FROM points p JOIN runs r ON r.id = p.run_id WHERE r.label = 'b')")
    raw.execute("DELETE FROM point_derived")  # (the figures the first read cached, of the samples before)
    raw.commit()
    raw.close()
    with Store(path) as db:
        raw_points = analysis.load(db)
    rows = analysis.compare(raw_points, "a", "b")
    assert rows and all(r.verdict is None and not r.significant and r.log_se is None for r in rows)
    for r in rows:
        assert r.reason is not None and r.reason.startswith(
            "inconclusive: the sides ran under different interference: neighbours took 0.0 of 2 CPUs during a, 0.8 "
            "during b")
        assert r.ratio == pytest.approx(0.9, rel=0.01)  # the figure is still shown
    # Nor does the decision combine the levels into a verdict.
    (d,) = decision.decide(rows, raw_points)
    assert d.verdict == decision.NO_VERDICT
    assert d.text.startswith("inconclusive at 2 of 2 level(s)") and "different interference" in d.text
