"""The JSON every read command exports, byte for byte, from a store built with the
library: the outputs other tools parse (`results --json`, `results --summary --json`,
`compare --json`, `history --json`, the report's JSON). Taken before the read path
moves to typed records (issue 40), so that the move keeps them identical where nothing
was wrong, and any change to them shows here as a diff to review.

A deliberate change: DBARENA_UPDATE_GOLDEN=1 pytest tests/unit/test_golden_exports.py
rewrites the files, and the diff goes into the commit that changed them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import invoke
from dbarena.store.database import Store
from test_history_and_gate import add_run

GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "golden"
COMMANDS = {
    "results.json": ["results", "--json"],
    "results-summary.json": ["results", "--summary", "--json"],
    "compare.json": ["compare", "main", "pr", "--json"],
    "history.json": ["history", "--json"],
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Label main: 4 runs of TPC-B at 1 and 2 threads, 3 repeats each; label pr: one run
    10 % slower with a wider spread."""
    path = tmp_path_factory.mktemp("golden") / "g.db"
    with Store(path) as db:
        for day in range(4):
            add_run(db, "main", day, 1000.0 * (1 + 0.01 * (day % 3 - 1)), threads=(1, 2))
        add_run(db, "pr", 5, 900.0, threads=(1, 2), wobbles=(0.98, 1.0, 1.03))
    return path


@pytest.fixture(scope="module")
def wide_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Labels main and pr (three runs each), few (one run, of main's configuration) and
    lone (one run on another machine): TPC-B at five levels (a
    USL fit each) and mysqlslap at three (judged by its seconds, priced per run)."""
    path = tmp_path_factory.mktemp("golden") / "wide.db"
    with Store(path) as db:
        for day in range(3):
            add_run(db, "main", day, 1000.0 * (1 + 0.01 * (day - 1)), threads=(1, 2, 4, 8, 16))
            add_run(db, "main", day, seconds=2.0 * (1 + 0.01 * (day - 1)), threads=(1, 2, 4))
            add_run(db, "pr", 3 + day, 900.0, threads=(1, 2, 4, 8, 16), wobbles=(0.98, 1.0, 1.03))
            add_run(db, "pr", 3 + day, seconds=1.9, threads=(1, 2, 4))
        add_run(db, "few", 7, 950.0, threads=(1, 2, 4, 8, 16), repeats=1)
        # One run on another machine: its spread between sessions is nowhere in the store.
        add_run(db, "lone", 8, 950.0, threads=(1, 2), repeats=1, host={"cpu_model": "another cpu",
                                                                       "hardware_threads": 4})
    return path


def _check(name: str, text: str) -> None:
    golden = GOLDEN / name
    if os.environ.get("DBARENA_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.is_file(), f"{golden} missing: DBARENA_UPDATE_GOLDEN=1 writes it"
    assert text == golden.read_text(), f"{name} differs from {golden}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_read_commands_json_is_what_it_was(store: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = invoke([*COMMANDS[name], "--store", str(store)], capsys)
    assert status == 0, err
    _check(name, out)


def test_the_reports_json_is_what_it_was(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.json"
    status, _, err = invoke(["report", "--store", str(store), "--format", "json", "-o", str(target)], capsys)
    assert status == 0, err
    _check("report.json", target.read_text())


def test_the_reports_json_with_a_baseline_prices_and_fits_is_what_it_was(
        wide_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every part of the report's JSON: decisions with their verdicts, levels, bounds and
    costs, the lines across workloads, rankings with prices, USL fits, the cheapest label
    at --at-threads, mysqlslap's seconds."""
    target = tmp_path / "report.json"
    status, _, err = invoke(["report", "--store", str(wide_store), "-o", str(target), "--baseline", "pr",
                             "--price", "main=1", "--price", "pr=1.3", "--price", "few=2", "--at-threads", "4"],
                            capsys)
    assert status == 0, err
    _check("report-priced.json", target.read_text())


# Views of some labels, the others lending only their spread between sessions (issue
# 59: read from the store's session summaries, not their points): taken with the
# dbarena before that change (3a23477), which read every point of the labels not shown.
LENT = {
    "report-lent.json": ["report", "--baseline", "few", "--label", "few", "--label", "main", "--format", "json"],
    "compare-lent.json": ["compare", "few", "main", "--json"],
    "gate-lent.json": ["gate", "--baseline", "5", "--candidate", "pr", "--json"],
}


@pytest.mark.parametrize("name", sorted(LENT))
def test_views_whose_other_labels_lend_their_spread_are_what_they_were(
        wide_store: Path, name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / name
    argv = [*LENT[name], "--store", str(wide_store)]
    status, out, err = invoke([*argv, "-o", str(target)] if argv[0] == "report" else argv, capsys)
    assert status == (1 if argv[0] == "gate" else 0), err  # (the gate fails: pr is 10 % slower)
    _check(name, target.read_text() if argv[0] == "report" else out)
