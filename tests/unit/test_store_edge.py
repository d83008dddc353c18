"""Nothing a store holds can break a read command (issue 45, first point): every value
read is checked at the store's edge (store/edge.py) against what its column holds, and
a row that does not fit is said in one line naming the store, table, row and column,
then left out; a read command ends with exit status 0 or 2 (1 and 3 are gate's
verdicts), never a traceback.

The property test writes values of every SQLite type (NULL, integers, reals with NaN and
infinity, text with 'nan' and broken JSON, blobs) into one cell of every column of every
table of a small real store (tests/storebuild.py), and runs every read command in
process. Examples: DBARENA_FUZZ_EXAMPLES (default 50, for the fast tier: 15 to 40 s on
one CPU); the slow variant tries ten kinds of garbage in every column with every reader."""

from __future__ import annotations

import contextlib
import io
import math
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbarena.cli import main
from dbarena.stats import analysis
from dbarena.store import edge
from dbarena.store.database import Store
from dbarena.store.schema import TABLES

from points import point
from storebuild import build

EXAMPLES = int(os.environ.get("DBARENA_FUZZ_EXAMPLES", "50"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize="DBARENA_FUZZ_EXAMPLES" not in os.environ,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.data_too_large])

# Every command that reads a store, as a user would type it (the store has labels a and b).
READERS: tuple[tuple[str, ...], ...] = (
    ("results",), ("results", "--summary"), ("results", "--wide"), ("results", "--json"),
    ("results", "--summary", "--figures"), ("results", "--csv"), ("results", "--raw", "1"),
    ("compare", "a", "b"), ("compare", "a", "b", "--json"), ("history",), ("history", "--json"),
    ("gate", "--baseline", "a", "--candidate", "b"), ("store", "info"),
    ("report", "-o", "r.html"), ("report", "-o", "r.md"), ("report", "-o", "r.json"), ("report", "-o", "r.csv"),
)
# The issue's eleven.
ISSUE_READERS = READERS[:4] + (READERS[7], READERS[9], READERS[11]) + READERS[13:]
# Every column of every table the store reads back (the migrations' own record aside).
CELLS = [(t.name, c.name) for t in TABLES if t.name != "schema_migrations" for c in t.columns]

# Values of every type SQLite keeps, those that break a naive reader first.
VALUES = st.one_of(
    st.none(),
    st.sampled_from([0, -1, -(2 ** 63), 2 ** 63 - 1, 1, 3]),
    st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.5, 0.0, 1e308, 2.5]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["nan", "inf", "", "{\"a\": ", "[]", "{}", "null", "1", "\"x\"", "[1, \"a\"]", "{\"a\": 1}",
                     "not a date", "2026-13-45T99:00:00", "2026-11-01T00:00:00+00:00", "\x1b[2J", "é"]),
    st.text(max_size=12),
    st.sampled_from([b"", b"\x00\xff", b"{}", b"x\x9c\x03\x00\x00\x00\x00\x01"]),
    st.binary(max_size=8),
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("edge") / "base.db")


def invoke(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """main(argv) in `cwd`: (exit status, stdout, stderr); any exception but SystemExit
    propagates (a traceback on a user's terminal)."""
    out, err = io.StringIO(), io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
                code: Any = 0
            except SystemExit as ended:
                code = ended.code
    finally:
        os.chdir(before)
    return (code if isinstance(code, int) else 0), out.getvalue(), err.getvalue()


@contextlib.contextmanager
def edited(base: Path, *statements: tuple[str, tuple[Any, ...]]) -> Iterator[Path]:
    """A copy of the store with these statements applied, by sqlite3 directly."""
    with contextlib.ExitStack() as stack:
        work = base.parent / f"edited-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        stack.callback(shutil.rmtree, work, True)
        path = work / "x.db"
        shutil.copy(base, path)
        db = sqlite3.connect(path)
        for sql, args in statements:
            db.execute(sql, args)
        db.commit()
        db.close()
        yield path


def run_all(path: Path, readers: tuple[tuple[str, ...], ...] = READERS) -> list[tuple[tuple[str, ...], int, str]]:
    """Each reader on the store: (argv, status, stderr); asserts no traceback and a
    status a read may end with."""
    ran = []
    for argv in readers:
        code, _, err = invoke([*argv, "--store", str(path)], path.parent)
        assert code in (0, 1, 2, 3), (argv, code, err)
        assert code in (0, 2) or argv[0] == "gate", (argv, code, err)
        assert "Traceback" not in err, (argv, err)
        if code == 2:
            assert err.splitlines()[-1].startswith("dbarena: error: "), (argv, err)
        ran.append((argv, code, err))
    return ran


def _cell_edit(table: str, column: str, value: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """One cell of `table`.`column` set to `value` (its first row; for a series, a
    row in the middle of a point's), and the cache of derived figures dropped where the
    edit is in what they are computed from, so that the read computes them again."""
    key = {"samples": "point_id = 2 AND second = 2", "system_samples": "point_id = 2 AND second = 2"}.get(table)
    where = key or f"rowid = (SELECT min(rowid) FROM {table})"
    edits = [(f"UPDATE {table} SET {column} = ? WHERE {where}", (value,))]
    if table in ("samples", "system_samples", "points", "runs", "hosts"):
        edits.append(("DELETE FROM point_derived WHERE point_id <= 3", ()))
    return edits


# The readers without charts (a few hundredths of a second each); the charts (2 s a
# report) only where an edit reaches what they alone read: the per-second series and
# the server's series of the points they show.
CHEAP = tuple(r for r in READERS if r[-1] not in ("r.html", "r.md"))
CHARTED = ("samples", "system_samples", "server_series", "latency_histograms")


# The fast tier's: one of each command, each read path (points, summaries and their
# histograms, comparisons, history, gate, the report's model).
QUICK = (("results", "--json"), ("results", "--summary"), ("compare", "a", "b", "--json"), ("history", "--json"),
         ("gate", "--baseline", "a", "--candidate", "b"), ("store", "info"), ("report", "-o", "r.json"))


def _readers(table: str, readers: tuple[tuple[str, ...], ...] = CHEAP) -> tuple[tuple[str, ...], ...]:
    return readers + ((("report", "-o", "r.md"),) if table in CHARTED else ())


@FUZZ
@given(cell=st.sampled_from(CELLS), value=VALUES)
def test_no_value_in_any_cell_breaks_a_read_command(built: Path, cell: tuple[str, str], value: Any) -> None:
    table, column = cell
    try:
        with edited(built, *_cell_edit(table, column, value)) as path:
            run_all(path, _readers(table, QUICK))
    except sqlite3.IntegrityError:  # a constraint SQLite enforces: no store can hold it
        pass


GARBAGE = (None, -1, math.nan, math.inf, "nan", "{\"a\": ", "[1, \"a\"]", b"\x00\xff", "not a date", "{}")


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("DBARENA_EXHAUSTIVE"),
                    reason="the exhaustive sweep (15-25 min) runs on demand: DBARENA_EXHAUSTIVE=1")
@pytest.mark.parametrize("table, column", CELLS)
def test_each_cell_each_kind_of_garbage_every_reader(built: Path, table: str, column: str) -> None:
    """Every column, each kind of garbage, the readers (some 20 000 commands, about
    15 minutes on one CPU): on demand (DBARENA_EXHAUSTIVE=1), since it alone would take
    `make test` past its 20 minutes; the property test above samples the same space on
    every run."""
    for value in GARBAGE:
        try:
            with edited(built, *_cell_edit(table, column, value)) as path:
                run_all(path, _readers(table))
        except sqlite3.IntegrityError:
            pass


def test_the_issues_hand_edited_store(built: Path) -> None:
    """tps 'nan', options broken JSON, host facts a blob (the run's column and the
    host's): all eleven commands of the issue end without a traceback, and each says
    which row it left out, once."""
    with edited(built, ("UPDATE points SET tps = 'nan' WHERE id = 2", ()),
                ("UPDATE points SET options = '{\"a\": ' WHERE id = 3", ()),
                ("UPDATE runs SET host_facts = x'00ff' WHERE id = 1", ()),
                ("UPDATE hosts SET facts = x'00ff'", ())) as path:
        for argv, code, err in run_all(path, ISSUE_READERS):
            assert code in (0, 1, 3) if argv[0] == "gate" else code == 0, (argv, code, err)
            lines = err.splitlines()
            store = f"dbarena: store {path}: "
            assert f"{store}points row 2, column tps: 'nan' is not a number; that point is left out" in lines, err
            assert f"{store}points row 3, column options: '{{\"a\": ' is not valid JSON; that point is left out" \
                in lines, err
            assert any(line.startswith(f"{store}hosts row ") and "column facts: a blob of 2 bytes is not JSON text; "
                       "its runs are shown without their host facts" in line for line in lines), err
            assert len(lines) == len(set(lines)), err  # each said once
        # And what is shown leaves those points out, nothing else.
        code, out, _ = invoke(["results", "--json", "--store", str(path)], path.parent)
        import json
        shown = {p["point_id"] for p in json.loads(out)}
        assert 2 not in shown and 3 not in shown and 1 in shown and 4 in shown


def test_cached_derived_figures_that_do_not_read_are_computed_again(built: Path) -> None:
    with edited(built, ("UPDATE point_derived SET fields = ? WHERE point_id = 1", ('{"steady_tps": "fast"}',)),
                ("UPDATE point_derived SET fields = ? WHERE point_id = 2", ("{",))) as path:
        with Store(path, readonly=True) as db:
            said: list[str] = []
            db.edge.say = said.append
            rows = {r.point_id: r for r in analysis.load(db)}
        assert isinstance(rows[1].steady_tps, float) and isinstance(rows[2].steady_tps, float)
        assert any("point_derived row 1, column fields: it holds steady_tps 'fast', not a number; computed again"
                   in line for line in said), said
        assert any("point_derived row 2, column fields: '{' is not valid JSON; computed again" in line
                   for line in said), said


def test_a_misfit_series_second_histogram_and_server_series_are_left_out(built: Path) -> None:
    with edited(built, ("UPDATE samples SET tps = 'x' WHERE point_id = 1 AND second = 2", ()),
                ("UPDATE system_samples SET server_cpu = -3 WHERE point_id = 1 AND second = 3", ()),
                ("DELETE FROM point_derived WHERE point_id = 1", ()),
                ("UPDATE latency_histograms SET record = '{\"count\": -4}' WHERE point_id = 1", ()),
                ("UPDATE server_series SET figures = '{\"wait.CPU\": \"a lot\"}' WHERE point_id = 1", ())) as path:
        with Store(path, readonly=True) as db:
            said: list[str] = []
            db.edge.say = said.append
            analysis.load(db)
            series = db.tps_series([1])
            assert len(series[1][1]) == 3  # 4 seconds, one left out
            assert 1 not in db.latency_histograms([1, 2]) and 2 in db.latency_histograms([1, 2])
            assert 1 not in db.server_series([1, 2]) and 2 in db.server_series([1, 2])
        assert any("samples row of point 1 at second 2.0, column tps: 'x' is not a number; that second is left out"
                   in line for line in said), said
        assert any("system_samples row of point 1 at second 3.0, column server_cpu: -3.0 is negative" in line
                   for line in said), said
        assert any("latency_histograms row 1, column record: it holds count -4, not a count" in line
                   for line in said), said
        assert any("server_series row 1, column figures" in line for line in said), said


def test_a_raw_output_that_does_not_read_is_refused_in_one_line(built: Path) -> None:
    with edited(built, ("UPDATE raw_outputs SET stdout = x'00ff' WHERE point_id = 1", ())) as path:
        code, _, err = invoke(["results", "--raw", "1", "--store", str(path)], path.parent)
    assert code == 2 and err.startswith(f"dbarena: error: store {path}: raw_outputs row 1, column stdout: "), err


def test_the_derived_figures_checked_are_those_analyse_point_makes() -> None:
    """edge.DERIVED_NUMBERS and derived_fault hold to what analysis caches: a fresh
    point's figures fit, and every numeric field is declared."""
    row = point(status="ok", threads=1, workload="pgbench-tpcb", tps=1.0, engine="postgres")
    fields = analysis.analyse_point(row, 0, None, None, 2)
    assert edge.derived_fault(fields) is None
    numeric = {k for k, v in fields.items() if v is None or isinstance(v, float)}
    assert numeric == set(edge.DERIVED_NUMBERS)


def test_every_column_declares_what_it_holds() -> None:
    """A figure or count column says so (what the edge checks beyond the type)."""
    for table in TABLES:
        for column in table.columns:
            assert column.holds in (None, "json", "json-list", "timestamp", "count", "figure"), column
    assert edge.COLUMNS["points"]["tps"].holds == "figure"
    assert edge.COLUMNS["points"]["transactions"].holds == "count"
    assert edge.COLUMNS["runs"]["options"].holds == "json"


@pytest.mark.parametrize("table, column, text, said", [
    ("runs", "options", '{"cpus": {"server_threads": "x"}}', "holds cpus.server_threads 'x', not a count"),
    ("hosts", "facts", '{"hardware_threads": -2}', "holds hardware_threads -2, not a count"),
    ("points", "details", '{"together": 5}', "holds together 5, not a JSON object"),
])
def test_json_a_reader_computes_with_is_checked_key_by_key(built: Path, table: str, column: str, text: str,
                                                           said: str) -> None:
    """A JSON object whose keys readers compute with (edge.SHAPES) holds them as declared,
    or is said and left out as any misfit."""
    with edited(built, (f"UPDATE {table} SET {column} = ?", (text,))) as path:
        code, _, err = invoke(["results", "--summary", "--store", str(path)], path.parent)
    assert code == 0 and said in err, err
