"""A chart draws no text longer than layout.CHART_TEXT_CHARS a line (issue 46, runaway
CPU): a label in a store can be of any length (one an older dbarena or another tool
wrote; limits.MAX_NAME_CHARS binds only what is typed or imported now), and matplotlib
laid a 100,000-character label out for over two minutes of `report`. The chart keeps its
start and end; the report's tables keep it whole."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from dbarena.report.layout import CHART_TEXT_CHARS, clipped

from conftest import invoke
from storebuild import build

LONG = "start-" + "x" * 100_000 + "-variant-b"


@pytest.mark.parametrize("text", ["", "a", "x" * CHART_TEXT_CHARS, "a|b\n<img>"])
def test_a_text_within_the_bound_is_unchanged(text: str) -> None:
    assert clipped(text) == text


def test_a_long_text_keeps_its_start_and_end_within_the_bound() -> None:
    shown = clipped(LONG)
    assert len(shown) == CHART_TEXT_CHARS
    assert shown.startswith("start-xxx") and shown.endswith("xxx-variant-b") and "\u2026" in shown
    # Two labels that differ only at the end stay apart.
    assert clipped(LONG.replace("-b", "-a")) != shown


def test_each_line_is_bounded_on_its_own() -> None:
    shown = clipped("short\n" + LONG + "\nend")
    lines = shown.split("\n")
    assert lines[0] == "short" and lines[2] == "end" and len(lines[1]) == CHART_TEXT_CHARS


def test_a_report_of_a_store_with_a_100000_character_label_draws_it_clipped(tmp_path: Path, capsys) -> None:
    store = build(tmp_path / "s.db")
    with sqlite3.connect(store) as db:
        db.execute("UPDATE runs SET label = ? WHERE label = 'b'", (LONG,))
    db.close()
    out = tmp_path / "r.html"
    code, _, err = invoke(["report", "-o", str(out), "--store", str(store)], capsys)
    assert code == 0, err
    html = out.read_text()
    texts = re.findall(r"<text\b[^>]*>([^<]*)</text>", html)
    assert texts and max(len(t) for t in texts) <= CHART_TEXT_CHARS, max(texts, key=len)[:200]
    # The legend names it (with its configuration, "[config ...]", at the end).
    assert any(t.startswith("start-xxx") and "\u2026" in t and t.endswith("]") for t in texts)
    assert LONG in html  # a table shows it whole


def test_control_characters_in_a_label_leave_every_chart_an_svg_a_browser_shows(tmp_path: Path, capsys) -> None:
    """ESC, BEL and a vertical tab in a store's label (issue 46's hostile labels): the
    Markdown report's chart files and the HTML report's charts are still XML (one such
    character made the file no image at all), and show the label without them."""
    from xml.etree import ElementTree

    store = build(tmp_path / "s.db")
    with sqlite3.connect(store) as db:
        db.execute("UPDATE runs SET label = ? WHERE label = 'b'", ("vm\x1b]0;owned\x07\x1b[2J\x0bz",))
    db.close()
    code, _, err = invoke(["report", "-o", str(tmp_path / "r.md"), "--store", str(store)], capsys)
    assert code == 0, err
    files = sorted((tmp_path / "r_files").glob("*.svg"))
    assert files
    for file in files:
        ElementTree.parse(file)  # raises on a character XML does not allow
    code, _, err = invoke(["report", "-o", str(tmp_path / "r.html"), "--store", str(store)], capsys)
    assert code == 0, err
    charts = re.findall(r"<svg\b.*?</svg>", (tmp_path / "r.html").read_text(), flags=re.S)
    assert charts
    for chart in charts:
        ElementTree.fromstring(chart)
    assert any("vm]0;owned[2Jz" in t for t in re.findall(r"<text\b[^>]*>([^<]*)</text>", charts[0] + charts[-1]))
