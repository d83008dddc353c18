"""Cost per transaction (stats/efficiency.py) in the report and in `results --wide`: the
report's table of each level's figures (the mean over its ok repeats of the points'),
its JSON rows' `efficiency` and its CSV's columns where some level has one; every
figure a column of `results --wide`. Over tests/storebuild.py's store, whose points
carry system samples."""

from __future__ import annotations

import csv
import io
import json
import statistics
from pathlib import Path

import pytest

from conftest import invoke
from dbarena.report import tables
from dbarena.stats import efficiency
from storebuild import build


@pytest.fixture(scope="module")
def costed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("costs") / "edge.db")


def _points(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    status, out, err = invoke(["results", "--json", "--store", str(path)], capsys)
    assert status == 0, err
    return list(json.loads(out))


def test_every_figure_has_a_column_in_the_reports_table() -> None:
    assert list(tables._COSTS) == list(efficiency.FIGURES)


def test_the_reports_table_json_and_csv_carry_each_levels_costs(costed: Path, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    points = [p for p in _points(costed, capsys) if p["status"] == "ok" and p["efficiency"]]
    assert points, "the store's points have no costs: nothing to test"
    target = tmp_path / "r.json"
    status, _, err = invoke(["report", "--store", str(costed), "-o", str(target)], capsys)
    assert status == 0, err
    rows = [r for r in json.loads(target.read_text())["rows"] if "efficiency" in r]
    assert rows
    row = rows[0]
    # (This store measures each label's level in one configuration.)
    mine = [p for p in points if (p["label"], p["threads"]) == (str(row["label"]).split(" [", 1)[0], row["threads"])]
    assert len({p["config_key"] for p in mine}) == 1
    expected = statistics.fmean(float(p["efficiency"]["server_cpu_us_per_tx"]) for p in mine)  # type: ignore[index]
    assert row["efficiency"]["server_cpu_us_per_tx"] == pytest.approx(expected, rel=1e-9)

    target = tmp_path / "r.md"
    status, _, err = invoke(["report", "--store", str(costed), "-o", str(target)], capsys)
    assert status == 0, err
    text = target.read_text()
    assert "### Cost per transaction" in text and "**Cost per transaction.**" in text
    assert f"| {row['threads']} | {expected:,.1f} | " in text

    target = tmp_path / "r.csv"
    status, _, err = invoke(["report", "--store", str(costed), "-o", str(target)], capsys)
    assert status == 0, err
    read = list(csv.DictReader(io.StringIO(target.read_text())))
    assert set(efficiency.FIGURES) <= set(read[0])
    assert any(r["server_cpu_us_per_tx"] for r in read)


def test_results_wide_shows_every_cost(costed: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")
    status, out, err = invoke(["results", "--wide", "--store", str(costed)], capsys)
    assert status == 0, err
    head = " ".join(out.splitlines()[:2])
    for words in ("server", "loadgen", "ctx sw", "read", "write", "WAL or", "buffer", "reads/tx"):
        assert words in head, words
