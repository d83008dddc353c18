"""One level comparison (stats/levelcompare.py): for one store, the report's level table
(its "against the baseline" columns), serve's /diff and `compare --json` give the same
ratio, interval and verdict for each pair, and refuse the same pairs for the same reason.
They once derived it three ways: the report from plain values with its own comparability
rule (clients ignored), /diff from plain means with no key check and no interval."""

from __future__ import annotations

import html
import itertools
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from dbarena.report import data, listings, tables
from dbarena.serve import app as serve_app
from dbarena.stats import analysis, gate
from dbarena.store.database import Store
from test_history_and_gate import add_run
from test_serve import client
from points import point

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "stores"
# What /diff compares two runs about, as `compare` spells it.
ABOUT = [arg for field in gate.ABOUT for arg in ("--about", field)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """main: 3 sessions of TPC-B (1 and 2 threads) and of mysqlslap, 1 % apart; pr: one
    run of each 10 % slower; aa and aa2: one TPC-B run each of main's configuration at
    its throughput (an A/A pair); clients: one at 4 clients a thread instead of 2. The
    single-run labels' TPC-B runs, by label."""
    path = tmp_path_factory.mktemp("one") / "one.db"
    runs: dict[str, int] = {}
    with Store(path) as db:
        for day in range(3):
            add_run(db, "main", day, 1000.0 * (1 + 0.01 * (day - 1)), threads=(1, 2))
            add_run(db, "main", day, seconds=2.0 * (1 + 0.01 * (day - 1)), threads=(1, 2))
        runs["pr"] = add_run(db, "pr", 3, 900.0, threads=(1, 2), wobbles=(0.98, 1.0, 1.03))
        add_run(db, "pr", 3, seconds=2.2, threads=(1, 2))
        runs["aa"] = add_run(db, "aa", 4, 1000.0, threads=(1, 2))
        runs["aa2"] = add_run(db, "aa2", 5, 1000.0, threads=(1, 2), wobbles=(1.002, 0.998, 1.0))
        runs["clients"] = add_run(db, "clients", 6, 1000.0, threads=(1, 2), clients_per_thread=4)
    return path, runs


@pytest.fixture(params=["capacity-two-labels", "profiled-sync-async"])
def fixture_store(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    copy = tmp_path / f"{request.param}.db"
    shutil.copy(FIXTURES / f"{request.param}.db", copy)
    return copy


def _compare(store: Path, a: str, b: str, capsys: pytest.CaptureFixture[str], *about: str) -> list[dict[str, Any]]:
    status, out, err = invoke(["compare", a, b, "--json", "--store", str(store), *about], capsys)
    assert status == 0, err
    rows: list[dict[str, Any]] = json.loads(out)
    return rows


def _same(got: float | None, printed: float | None) -> bool:
    """A figure as a view holds it against `compare --json`'s (12 significant digits)."""
    return got is None and printed is None or got is not None and printed is not None and \
        got == pytest.approx(printed, rel=1e-9)


def _check_report(store: Path, baseline: str, capsys: pytest.CaptureFixture[str], labels: list[str] | None = None
                  ) -> list[tuple[str | None, str]]:
    """Every label's level rows (of `labels`, default all) against compare BASELINE
    LABEL's; the verdicts seen, each with its words."""
    with Store(store, readonly=True) as db:
        report = data.build(analysis.load(db), db.runs(), baseline=baseline, labels=labels)
    verdicts = []
    for label in report.labels:
        if label == baseline:
            continue
        rows = {(r.engine, r.workload, r.threads): r for r in report.rows if r.label == label}
        printed = _compare(store, baseline, label, capsys)
        assert printed, label
        for c in printed:
            row = rows[(c["engine"], c["workload"], c["threads"])]
            assert _same(row.ratio_to_baseline, c["ratio"]), (label, c)
            assert _same(row.ratio_ci_low, c["ratio_ci_low"]) and _same(row.ratio_ci_high, c["ratio_ci_high"])
            assert (row.verdict, row.reason, row.verdict_text) == (c["verdict"], c["reason"], c["verdict_text"])
            verdicts.append((c["verdict"], c["verdict_text"]))
    return verdicts


def _check_diff(store: Path, before: int, after: int, a: str, b: str, capsys: pytest.CaptureFixture[str]) -> None:
    """/diff of two runs (each its label's only run) against compare A B --about server
    --about settings: the rows and the page."""
    printed = _compare(store, a, b, capsys, *ABOUT)
    with Store(store, readonly=True) as db:
        levels, _ = serve_app.diff_levels(db, before, after)
    assert len(levels) == len(printed)
    for got, c in zip(levels, printed):
        assert (got.engine, got.workload, got.threads, got.differs) == \
            (c["engine"], c["workload"], c["threads"], c["differs"])
        assert _same(got.ratio, c["ratio"]) and _same(got.ratio_ci_low, c["ratio_ci_low"]) and \
            _same(got.ratio_ci_high, c["ratio_ci_high"]), (got, c)
        assert got.verdict == c["verdict"]
        # The words name the sides: "run N" here, the label there.
        named = got.verdict_text.replace(f"run {before}", a).replace(f"run {after}", b)
        assert named == c["verdict_text"]
    with client(store) as browser:
        page = browser.get(f"/diff?before={before}&after={after}")
    assert page.status_code == 200
    levels = page.text[page.text.index("<h2>Levels both measured</h2>"):page.text.index("<details>")]
    rows = [re.findall(r"<td>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", levels)]
    rows = [row for row in rows if row]  # (the header's cells are <th>)
    assert len(rows) == len(printed)
    for row, c in zip(rows, printed):
        change, within, verdict = row[-3], row[-2], re.sub(r"</?strong>", "", row[-1])
        assert change == ("-" if c["ratio"] is None else f"{(c['ratio'] - 1) * 100:+.1f} %")
        assert within == ("-" if c["ratio_ci_low"] is None else
                          f"{(c['ratio_ci_low'] - 1) * 100:+.1f} % .. {(c['ratio_ci_high'] - 1) * 100:+.1f} %")
        assert html.unescape(verdict).replace(f"run {before}", a).replace(f"run {after}", b) == c["verdict_text"]


def test_the_report_s_level_table_is_compare_s_row_for_each_pair(built: tuple[Path, dict[str, int]],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    store, _ = built
    verdicts = _check_report(store, "main", capsys)
    # pr is slower with an interval; a different number of clients is not compared, and
    # the report's table says why rather than dropping the level.
    assert (None, "not comparable: clients 4 vs 8") in verdicts
    assert any(verdict == "slower" for verdict, _ in verdicts)
    with Store(store, readonly=True) as db:
        report = data.build(analysis.load(db), db.runs(), baseline="main")
    (section,) = [s for s in report.sections if s.workload == "pgbench-tpcb"]
    table = tables.against_baseline(section, report)
    assert table is not None
    assert ["clients", "2", "-", "-", "-", "not comparable: clients 4 vs 8"] in table.rows


def test_diff_is_compare_s_row_for_each_pair_of_runs(built: tuple[Path, dict[str, int]],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    store, runs = built
    for a, b in itertools.permutations(runs, 2):
        _check_diff(store, runs[a], runs[b], a, b, capsys)


def test_an_a_a_pair_is_never_faster_or_slower_where_compare_says_it_is_not(
        built: tuple[Path, dict[str, int]], capsys: pytest.CaptureFixture[str]) -> None:
    store, runs = built
    printed = _compare(store, "aa", "aa2", capsys)
    assert printed and all(c["verdict"] not in ("faster", "slower") for c in printed)
    assert not any(verdict in ("faster", "slower") for verdict, _ in _check_report(store, "aa", capsys, ["aa", "aa2"]))
    with client(store) as browser:
        page = browser.get(f"/diff?before={runs['aa']}&after={runs['aa2']}").text
    levels = page[page.index("<h2>Levels both measured</h2>"):page.index("<details>")]
    assert "faster" not in levels and "slower" not in levels


def test_the_fixture_stores_agree_in_all_three_views(fixture_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """capacity-two-labels: an A/A pair of one session a side (capacities under --slo);
    profiled-sync-async: two settings, not comparable by label, comparable by /diff's
    --about settings."""
    with Store(fixture_store, readonly=True) as db:
        labels = [run.label for run in db.runs()]
        ids = [run.id for run in db.runs()]
    verdicts = _check_report(fixture_store, labels[0], capsys)
    assert verdicts and not any(verdict in ("faster", "slower") for verdict, _ in verdicts)
    _check_diff(fixture_store, ids[0], ids[1], labels[0], labels[1], capsys)


def test_two_labels_that_hold_variants_have_a_named_row_per_variant() -> None:
    ids = itertools.count(1)
    rows = [point(label=label, variant=variant, run_id=run, point_id=next(ids), tps=tps * (1 + 0.01 * run),
                  config={"variant": variant, "threads": 1}, config_key=variant)
            for label, base in (("a", 100.0), ("b", 120.0)) for run in (1, 2, 3)
            for variant, tps in (("v1", base), ("v2", 2 * base))]
    compared = analysis.compare(rows, "a", "b")
    assert [(c.variant, c.threads) for c in compared] == [("v1", 1), ("v2", 1)]
    assert [c.as_json()["variant"] for c in compared] == ["v1", "v2"]
    assert [round(c.ratio or 0, 6) for c in compared] == [1.2, 1.2]
    table = listings.comparison_table(compared, wide=True)
    assert "variant" in [c.header for c in table.columns]
    # Variants compared as the sides: no variant column, nor the field.
    (by_variant,) = analysis.compare([r for r in rows if r.label == "a"], "v1", "v2")
    assert by_variant.variant is None and "variant" not in by_variant.as_json()
