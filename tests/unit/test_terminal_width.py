"""Result tables in a 100-column terminal, in process on real stores: no line wider than
100 characters or ending in a space, no figure or name broken across lines, warnings as
letters with one legend line, and each distinct warning of a summary once with a count."""

from __future__ import annotations

import io
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbarena.cli import main
from dbarena.report import listings, terminal

STORES = Path(__file__).parent.parent / "fixtures" / "stores"
DEMO = STORES / "demo-seed-a-quick.db"  # `make demo`: seed-a --quick, postgres and mysql, 1 repeat
REPEATS = STORES / "v11.db"  # 2 repeats: intervals, high-variation, an imported label


def invoke(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as ended:
        main(argv)
    out, err = capsys.readouterr()
    assert ended.value.code in (0, None), err
    return out


@pytest.fixture
def columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")


@pytest.fixture
def demo(tmp_path) -> str:
    store = tmp_path / "demo.db"
    shutil.copy(DEMO, store)
    return str(store)


@pytest.fixture
def repeats(tmp_path) -> str:
    store = tmp_path / "repeats.db"
    shutil.copy(REPEATS, store)
    return str(store)


@pytest.fixture
def two_labels(tmp_path, capsys) -> str:
    """The demo store, and a copy of its runs labelled vm-b merged into it."""
    store, other = tmp_path / "a.db", tmp_path / "b.db"
    shutil.copy(DEMO, store)
    shutil.copy(DEMO, other)
    with sqlite3.connect(other) as db:
        db.execute("UPDATE runs SET uuid = uuid || '-b', label = 'vm-b'")
    invoke(["merge", str(other), "--store", str(store)], capsys)
    return str(store)


def assert_fits(text: str, width: int = 100) -> None:
    lines = text.splitlines()
    assert lines
    for line in lines:
        assert len(line) <= width, line
        assert not line.endswith(" "), repr(line)


def figures(value: float | None, *digits: int) -> list[str]:
    """How a figure of the JSON can be printed (the tables round to 1, 2 or 3 digits)."""
    return [] if value is None else [f"{value:,.{d}f}" for d in digits]


def judged(r: dict, value: float | None, *digits: int) -> list[str]:
    """A row's figure as the tables print it: mysqlslap's seconds with 3 digits."""
    return figures(value, 3) if r["metric"] == "seconds" else figures(value, *digits)


def assert_whole(text: str, shown: list[str]) -> None:
    words = set(re.findall(r"[\w.,+\-%\u2020\u00b1*]+", text))
    for figure in shown:
        assert any(w.strip("\u2020\u00b1*%") == figure for w in words), figure


@pytest.mark.parametrize("which", ["demo", "repeats"])
def test_results_and_the_summary_fit_100_columns_with_every_figure_whole(which, columns, request, capsys):
    store = request.getfixturevalue(which)
    points = json.loads(invoke(["results", "--json", "--store", store], capsys))
    text = invoke(["results", "--store", store], capsys)
    assert_fits(text)
    for r in points:
        assert_whole(text, [r["label"], r["workload"], *figures(r["tps"], 2), *figures(r["steady_tps"], 1),
                            *figures(r.get("latency_p99_ms"), 3), *judged(r, r["run_avg_s"])])
    assert "left out" not in text  # the default columns fit

    groups = json.loads(invoke(["results", "--summary", "--json", "--store", store], capsys))
    text = invoke(["results", "--summary", "--store", store], capsys)
    assert_fits(text)
    for g in groups:
        assert_whole(text, [g["label"], g["workload"], *judged(g, g["median"], 1),
                            *figures(g["latency_p99_ms"], 3)])
        if g["cv"] is not None:
            assert f"{g['cv']:.1%}" in text
    assert "left out" not in text


def test_compare_fits_100_columns(two_labels, columns, capsys):
    rows = json.loads(invoke(["compare", "vm", "vm-b", "--json", "--store", two_labels], capsys))
    assert len(rows) == 20 and all(r["ratio"] == pytest.approx(1.0) for r in rows)
    text = invoke(["compare", "vm", "vm-b", "--store", two_labels], capsys)
    # The level table (the decision lines above it are not a table).
    text = text[text.index("vm-b against vm ("):]
    assert_fits(text)
    for r in rows:
        assert_whole(text, [r["workload"], *judged(r, r["a_mean"], 1), f"{r['ratio']:.3f}"])
    assert "inconclusive: 1 session a side" in text
    wide = invoke(["compare", "vm", "vm-b", "--wide", "--store", two_labels], capsys)
    assert re.search(r"^engine .* metric .* n .* verdict$", wide, re.M)


def test_warnings_are_letters_with_one_legend_and_one_line_per_distinct_warning(demo, columns, capsys):
    groups = json.loads(invoke(["results", "--summary", "--json", "--store", demo], capsys))
    text = invoke(["results", "--summary", "--store", demo], capsys)
    codes = {w["code"] for g in groups for w in g["warnings"]}
    # The demo ran while other work took most of the 2-CPU machine: neighbours, not the load generator.
    assert codes == {"few-repeats", "short-series", "neighbours", "dips"}
    (legend,) = [line for line in text.splitlines() if line.startswith("warnings: ")]
    assert legend == "warnings: S short-series, N neighbours, R few-repeats, D dips"
    assert "high-variation" not in text
    # Each distinct warning once, with the rows it applies to and its advice.
    for code in codes:
        rows = sum(code in {w["code"] for w in g["warnings"]} for g in groups)
        (line,) = [line for line in text.splitlines() if f" {code} (" in line]
        assert line.startswith(f"{listings.WARNING_LETTERS[code]} {code} ({rows} row{'s' if rows > 1 else ''}): ")
    assert "few-repeats (20 rows): only 1 repeat(s): use --repeat 3 or more" in text
    assert "use a --duration of 30 s or more" in text.replace("\n", " ")
    # The figures that differ between rows as their range, the advice kept.
    said = r"neighbours \(18 rows\): neighbours took 1\.\d\.\.1\.\d of 2 CPUs while the server used 0\.\d\.\.0\.\d of 2"
    assert re.search(said.replace(" ", r"\s+") + r".*not\s+the\s+load\s+generator.*quiet\s+machine", text, re.S)
    # Points: the letters of each row, the same legend once.
    text = invoke(["results", "--store", demo], capsys)
    assert text.count("warnings: ") == 1 and "warnings: S short-series, N neighbours, D dips" in text
    assert re.search(r"pgbench-tpcb .* SN\s+ok$", text, re.M)
    # JSON keeps the full codes and messages.
    assert all(w["message"] and "-" in w["code"] for g in groups for w in g["warnings"]
               if w["code"] not in ("dips", "neighbours"))


def test_wide_shows_every_column(demo, columns, capsys):
    text = invoke(["results", "--wide", "--store", demo], capsys)
    header = "\n".join(text.splitlines()[:3])
    for name in ("clients", "rep", "qps", "95 % CI within", "lat avg", "p95 ms", "p99 ms", "failed", "errors",
                 "printed", "steady", "warn", "status"):
        assert name in header, name
    assert max(len(line) for line in text.splitlines()) > 100  # the user asked for it
    assert not any(line.endswith(" ") for line in text.splitlines())
    text = invoke(["results", "--summary", "--wide", "--store", demo], capsys)
    header = "\n".join(text.splitlines()[:4])
    for name in ("config", "metric", "printed", "mean", "stdev", "95 % CI", "95 % interval", "CV", "p99 ms"):
        assert name in header, name


def test_columns_are_left_out_rather_than_cells_broken_and_the_caption_says_which(demo, monkeypatch, capsys):
    with sqlite3.connect(demo) as db:
        db.execute("UPDATE runs SET label = 'hetzner-ax41-nvme-postgres-16-tuned'")
    monkeypatch.setenv("COLUMNS", "100")
    text = invoke(["results", "--store", demo], capsys)
    assert_fits(text)
    assert "hetzner-ax41-nvme-postgres-16-tuned" in text and "pgbench-simple-update" in text
    (caption,) = [line for line in text.splitlines() if line.startswith("left out for the width: ")]
    assert caption.endswith("(--wide shows every column)") and "printed figure" in caption
    # A wider terminal shows them again.
    monkeypatch.setenv("COLUMNS", "140")
    text = invoke(["results", "--store", demo], capsys)
    assert "left out" not in text and "printed" in text


def test_a_pipe_gets_100_columns_without_columns_set(demo, monkeypatch, capsys):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal.console().width == terminal.PIPE_WIDTH == 100
    text = invoke(["results", "--summary", "--store", demo], capsys)
    assert_fits(text)


def test_mysqlslap_is_judged_by_its_seconds_in_every_table(two_labels, columns, capsys):
    # vm-b's mysqlslap took 0.9 of vm's seconds at every level.
    with sqlite3.connect(two_labels) as db:
        db.execute("UPDATE points SET run_avg_s = run_avg_s * 0.9, qps = qps / 0.9 WHERE workload = 'mysqlslap' "
                   "AND run_id IN (SELECT id FROM runs WHERE label = 'vm-b')")
    points = [r for r in json.loads(invoke(["results", "--json", "--label", "vm", "--store", two_labels], capsys))
              if r["workload"] == "mysqlslap"]
    assert len(points) == 2 and all(r["metric"] == "seconds" and r["lower_is_better"] for r in points)
    text = invoke(["results", "--label", "vm", "--store", two_labels], capsys)
    for r in points:
        assert re.search(rf"mysqlslap +{r['threads']} +{r['run_avg_s']:.3f} s ", text)
    assert "(lower is better)" in text
    wide = invoke(["results", "--wide", "--label", "vm", "--store", two_labels], capsys)
    for r in points:  # QPS beside the seconds
        assert re.search(rf"mysqlslap +{r['threads']} .* {r['run_avg_s']:.3f} s +{r['qps']:,.2f} ", wide)

    groups = [g for g in json.loads(invoke(["results", "--summary", "--json", "--store", two_labels], capsys))
              if g["workload"] == "mysqlslap"]
    assert all(g["metric"] == "seconds" and g["median"] < 1 for g in groups)
    text = invoke(["results", "--summary", "--store", two_labels], capsys)
    assert all(f"{g['median']:.3f} s" in text for g in groups) and "(lower is better)" in text

    rows = [r for r in json.loads(invoke(["compare", "vm", "vm-b", "--json", "--store", two_labels], capsys))
            if r["workload"] == "mysqlslap"]
    assert all(r["metric"] == "seconds" and r["ratio"] == pytest.approx(0.9) for r in rows)
    text = invoke(["compare", "vm", "vm-b", "--store", two_labels], capsys)
    # The decision in speed (+ is faster), the level table in seconds (a ratio below 1 is faster).
    assert re.search(r"mysql mysqlslap: \+11\.1 % .*by threads 1:1\.11 · 2:1\.11", text)
    assert re.search(r"mysqlslap +1 +[\d.]+ s +[\d.]+ s +0\.900 ", text) and "a ratio below 1 is faster" in text
    md = invoke(["compare", "vm", "vm-b", "--format", "md", "--store", two_labels], capsys)
    assert "| mysql | mysqlslap | +11.1 % |" in md and "of 1 / seconds" in md


@pytest.mark.parametrize("env", ["FORCE_COLOR", "TTY_COMPATIBLE"])
def test_a_pipe_taken_for_a_terminal_gets_colours_but_not_its_width_or_padding(env, demo, two_labels, monkeypatch,
                                                                              capsys):
    # FORCE_COLOR (set by many CI systems) made rich pad every line to a terminal's width.
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setenv(env, "1")
    for argv in (["results", "--store", demo], ["results", "--summary", "--store", demo],
                 ["compare", "vm", "vm-b", "--store", two_labels], ["hostinfo"]):
        text = invoke(argv, capsys)
        assert "\x1b[" in text or argv == ["hostinfo"]  # the colours asked for (headers in bold)
        assert_fits(re.sub(r"\x1b\[[0-9;]*m", "", text))


# ------------------------------------------------------------------ padding, in linear time

# What _Unpadded did with one regular expression, which took time in the square of a
# row's width: the reference its walk must agree with.
_END_PADDING = re.compile(r"(?: |\x1b\[[0-9;]*m)*(?=\n)")
_CODE = re.compile(r"\x1b\[[0-9;]*m")


def _by_expression(writes: list[str]) -> str:
    held, out = "", []
    for text in writes:
        text = held + text
        kept = text.rstrip(" ")
        held = text[len(kept):]
        out.append(_END_PADDING.sub(lambda m: "".join(_CODE.findall(m[0])), kept))
    return "".join(out)


_PIECES = st.lists(st.sampled_from([" ", "  ", "\n", "a", "m", "\x1b[", "\x1b[0m", "\x1b[1;31m", "\x1b[m", "0", ";",
                                    "x \x1b[2m "]), max_size=30)


@given(st.lists(_PIECES.map("".join), max_size=5))
@settings(max_examples=400, deadline=None)
def test_the_padding_goes_as_the_expression_took_it(writes):
    out = io.StringIO()
    stream = terminal._Unpadded(out)
    for text in writes:
        stream.write(text)
    assert out.getvalue() == _by_expression(writes)


def test_a_row_padded_by_a_wide_label_keeps_its_codes_and_loses_its_spaces():
    out = io.StringIO()
    terminal._Unpadded(out).write("x" + " " * 50_000 + "\x1b[0m  \x1b[1m" + " " * 3 + "\nlast  ")
    assert out.getvalue() == "x\x1b[0m\x1b[1m\nlast"
