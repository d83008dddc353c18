"""Every view of one real store says one thing about each point: a store of two labels
on throwaway PostgreSQL servers (tests/fixtures/stores/agree-two-cpu-one-cpu.db), one run under `taskset -c 0` (server and pgbench on
one CPU), pgbench select-only at two levels, three repeats. The bound of each point and the reason of each difference are derived
once (analysis.load, decision.decide); `results --json`, `results --wide`, the report
and `compare` must show exactly those, never one of their own."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import cli_env
# results, report and compare only read the store: run in this process
# (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each to start.
from inprocess import dbarena as dbarena_here
from dbarena.stats import bound

pytestmark = pytest.mark.e2e

LEVELS = (1, 2)


# The real store: two labels of pgbench-select-only at LEVELS, three repeats, on throwaway
# PostgreSQL servers with server metrics on, the label one-cpu run with the CLI itself
# under `taskset -c 0` (the server and pgbench it starts inherit the CPU); read from a copy
# of the committed store (tests/fixtures/stores/README.md says how it was made): what is
# tested is that the views of one store agree. Such runs are made live by
# tests/e2e/test_server_view.py (the bound from the server's view) and
# tests/e2e/test_history_gate.py (a run confined to one CPU recorded so).
STORE = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "agree-two-cpu-one-cpu.db"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("agree") / "r.db"
    shutil.copy(STORE, path)
    return path


def _points(store) -> list[dict]:
    done = dbarena_here("results", "--store", str(store), "--json", env=cli_env("/tmp"))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_points_carry_a_bound_from_the_server_s_own_view(store):
    points = _points(store)
    assert len(points) == 2 * len(LEVELS) * 3
    assert all(p["status"] == "ok" for p in points)
    # Every point was sampled by the server's view (a throwaway server, server metrics on).
    assert all(p["bound"] in bound.KINDS for p in points), [p["bound"] for p in points]
    one = {p["hardware_threads_usable"] for p in points if p["label"] == "one-cpu"}
    assert one == {1}  # what "saturated" is measured against: the one CPU it had


def test_results_wide_shows_each_point_s_bound_as_results_json_has_it(store):
    points = {p["point_id"]: p for p in _points(store)}
    done = dbarena_here("results", "--store", str(store), "--wide", env=cli_env("/tmp", COLUMNS="400"))
    assert done.returncode == 0, done.stderr
    seen = set()
    lines = done.stdout.splitlines()
    for point in points.values():
        # Its row: its label, level and repeat, then (last) its bound, status and evidence.
        row = re.compile(rf"\s{re.escape(point['label'])}\s.*\s{point['threads']}\s+\d+\s+{point['repeat']}\s.*"
                         rf"\s{re.escape(point['bound'])}\s+ok\s+{re.escape(point['bound_evidence'])}$")
        if any(row.search(line) for line in lines):
            seen.add(point["point_id"])
    assert seen == set(points)


def test_the_report_s_levels_and_decision_say_the_points_bounds(store, tmp_path):
    points = _points(store)
    target = tmp_path / "report.json"
    done = dbarena_here("report", "--store", str(store), "--baseline", "two-cpu", "--format", "json", "-o", str(target),
                        env=cli_env("/tmp"))
    assert done.returncode == 0, done.stderr
    report = json.loads(target.read_text())
    # A level's bound is its repeats' bounds, as stored: one answer per point.
    levels = [r for r in report["rows"] if r["label"] in ("one-cpu", "two-cpu")]
    assert len(levels) == 2 * len(LEVELS)
    for row in levels:
        of_level = [p["bound"] for p in points if (p["label"], p["threads"]) == (row["label"], row["threads"])]
        assert row["bound"] == bound.of_group(of_level), row
    # The decision's reason names, for each side at its level, that side's points' bound
    # (a reason is given for a significant difference only: one CPU against two usually
    # is one, either way, but a noisy machine may leave it inconclusive).
    for d in report["decisions"]:
        if not d["why"]:
            continue
        at = int(re.match(r"at (\d+) thread", d["why"]).group(1))
        for side in (d["label"], d["baseline"]):
            said = re.search(re.escape(side) + r": [^;]*?; per point: ([^;]+?)(;|$)", d["why"])
            if said is None:  # this side's points carry no bound: nothing said per point
                continue
            of_side = [p["bound"] for p in points if (p["label"], p["threads"]) == (side, at)]
            assert said.group(1) == bound.of_group(of_side), (side, d["why"])


def test_compare_gives_the_report_s_reasons_for_the_same_differences(store, tmp_path):
    target = tmp_path / "report.json"
    done = dbarena_here("report", "--store", str(store), "--baseline", "two-cpu", "--format", "json", "-o", str(target),
                        env=cli_env("/tmp"))
    assert done.returncode == 0, done.stderr
    reasons = [d["why"] for d in json.loads(target.read_text())["decisions"] if d["why"]]
    done = dbarena_here("compare", "two-cpu", "one-cpu", "--store", str(store), env=cli_env("/tmp", COLUMNS="1000"))
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.split())
    for why in reasons:
        assert " ".join(why.split()) in flat, why
