"""`dbarena import` reads a file as a stream, one run at a time (issue 46): whatever the
parts its text comes in, the points, the pieces not stored, the problems and their line
numbers are those of the whole text read at once; what it holds is bounded by one run
(`max_run_chars`), not by the file; and a file that fails or is killed half-way stores
nothing. The parts are made small here (a line, or 7 bytes) so that every run, line and
line break crosses a boundary somewhere; the bound is shown by importing a file of many
runs with a bound just above its largest run."""

from __future__ import annotations

import dataclasses
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import cast

import pytest

from conftest import invoke
from dbarena.importers import reading
from dbarena.importers import storing
from dbarena.importers.common import ImportProblem, one_line_break
from dbarena.importers.pieces import Pieces
from dbarena.importers.storing import ImportOptions, import_file
from dbarena.store.database import Store

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
OUTPUTS = sorted(p for tool in ("pgbench", "sysbench", "mysqlslap") for kind in ("corpus", "captured")
                 for p in (FIXTURES / tool / kind).glob("*") if p.suffix in (".txt", ".stdout"))
IMPORTS = sorted((FIXTURES / "import").glob("*.txt"))
STUDY_A = FIXTURES / "import" / "study-a-appended-pg15.txt"
PERCONA = FIXTURES / "import" / "percona-thp2019-tpcc-aborted-then-run.txt"
SYSBENCH = FIXTURES / "sysbench" / "corpus" / "sysbench-1.0.20-oltp-rw-mysql-ri3-systemluajit.txt"
MYSQLSLAP = FIXTURES / "mysqlslap" / "corpus" / "mysqlslap-5.7plus-warning-prefix-tabs.txt"
WHOLE = {"pgbench": lambda name, text: reading.read_pgbench(name, text, "x", None),
         "sysbench": lambda name, text: reading.read_sysbench(name, text, "x", "mysql", None),
         "mysqlslap": lambda name, text: reading.read_mysqlslap(name, text, "x", None)}


def _engine(tool: str | None) -> str | None:
    """--engine for a tool's output (pgbench's refuses mysql; sysbench's may need one)."""
    return "mysql" if tool in ("sysbench", "mysqlslap") else None


def _outcome(read) -> tuple[str, object]:
    try:
        return "points", read()
    except ImportProblem as exc:
        return "problem", str(exc)


def _texts() -> list[tuple[str, str]]:
    """Every captured output alone, and appended: all of one tool's in one file (runs
    with and without command lines, banners, perf stat reports, cut-off pieces)."""
    alone = [(p.name, p.read_text(errors="replace")) for p in (*OUTPUTS, *IMPORTS)]
    appended = [(f"all-{tool}.txt", "\n".join(t for n, t in alone if reading.detect_tool(one_line_break(t)) == tool))
                for tool in WHOLE]
    return alone + appended


@pytest.mark.parametrize("name, text", _texts(), ids=lambda v: v if isinstance(v, str) and len(v) < 80 else "")
def test_runs_read_a_line_at_a_time_are_those_the_whole_text_reader_finds(name, text):
    """The splitter fed line by line (runs.stream_runs, mysqlslap.segments) against the
    readers of the whole text (split_runs): the same points, or the same problem."""
    text = one_line_break(text)
    survey = reading.Survey()
    for line in text.splitlines(keepends=True):
        survey.feed(line)
    tool = survey.tool()
    if tool not in WHOLE:
        pytest.skip(f"{name}: {tool or 'no one tool'}'s")
    streamed = _outcome(lambda: list(reading._runs(name, tool, text.splitlines(keepends=True), survey, label="x",
                                                    engine="mysql", workload=None, max_run_chars=len(text) + 1,
                                                    left=Pieces(tool))))
    assert _reader_own(streamed) == _outcome(lambda: WHOLE[tool](name, text))


def _reader_own(outcome: tuple[str, object]) -> tuple[str, object]:
    """The points as the tool's reader makes them: the MySQL-family server the text names
    around a run (serverversion.py) is what reading._runs adds over the readers."""
    if outcome[0] != "points":
        return outcome
    points = cast(list[reading.ImportedPoint], outcome[1])
    return "points", [dataclasses.replace(p, server_version=None, flavour=None) if p.flavour else p for p in points]


@pytest.mark.parametrize("name, text", _texts(), ids=lambda v: v if isinstance(v, str) and len(v) < 80 else "")
def test_a_file_read_in_parts_of_a_line_reads_as_the_whole_text(name, text):
    """Points, pieces not stored, problems and their lines: the same in parts as whole."""
    engine = _engine(reading.detect_tool(one_line_break(text)))
    whole_skipped: list[reading.Skipped] = []
    whole = _outcome(lambda: reading.read(name, text, label="x", engine=engine, skipped=whole_skipped))
    parts = list(reading.texts(text.splitlines(keepends=True)))
    survey = reading.Survey()
    for part in parts:
        survey.feed(part)
    skipped: list[reading.Skipped] = []
    streamed = _outcome(lambda: list(reading.stream(name, parts, survey, label="x", engine=engine, skipped=skipped)))
    assert streamed == whole and skipped == whole_skipped


def _stored(store: Path) -> list[tuple]:
    db = sqlite3.connect(store)
    rows = db.execute("SELECT p.engine, p.workload, p.threads, p.clients, p.duration_s, p.status, p.error, p.tps,"
                      " p.latency_avg_ms, p.source, p.config_key, r.label, r.server_version, r.tool_versions,"
                      " (SELECT group_concat(s.second || ':' || s.tps) FROM samples s WHERE s.point_id = p.id),"
                      " (SELECT d.fields FROM point_derived d WHERE d.point_id = p.id)"
                      " FROM points p JOIN runs r ON r.id = p.run_id ORDER BY p.id").fetchall()
    db.close()
    return rows


def _files(tmp_path: Path) -> list[Path]:
    """Files whose line breaks and characters a part boundary could cut: \\r\\n, lone \\r
    (an old Mac's), a byte-order mark, characters of two to four bytes."""
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(STUDY_A.read_bytes().replace(b"\n", b"\r\n"))
    mac = tmp_path / "mac.txt"
    mac.write_bytes(STUDY_A.read_bytes().replace(b"\n", b"\r"))
    bom = tmp_path / "bom.csv"
    bom.write_bytes("\ufeffthreads,tps,engine,workload,label\r\n".encode()
                    + "".join(f"{t},{t * 100.5},postgres,pgbench-tpcb,héllo 😀 ü{t}\r\n" for t in range(1, 40)).encode())
    return [crlf, mac, bom, STUDY_A, PERCONA, SYSBENCH, MYSQLSLAP]


def test_a_file_read_7_bytes_at_a_time_stores_what_it_stores_read_at_once(tmp_path, monkeypatch):
    for path in _files(tmp_path):
        options = ImportOptions(label="x", engine=_engine(reading.detect_tool(path.read_text())))
        with Store(tmp_path / f"{path.name}-whole.db") as db:
            whole = import_file(db, path, options)
        monkeypatch.setattr(storing, "CHUNK_BYTES", 7)
        with Store(tmp_path / f"{path.name}-parts.db") as db:
            parts = import_file(db, path, options)
        monkeypatch.undo()
        assert whole.error is None and whole.points > 0, (path.name, whole)
        assert (parts.points, parts.ok, parts.labels, parts.notes, parts.skipped) == \
               (whole.points, whole.ok, whole.labels, whole.notes, whole.skipped), path.name
        assert _stored(tmp_path / f"{path.name}-parts.db") == _stored(tmp_path / f"{path.name}-whole.db"), path.name


def test_a_problem_far_into_a_file_read_in_small_parts_names_its_line(tmp_path, monkeypatch, capsys):
    runs = STUDY_A.read_text()
    bad = "threads,tps,engine,workload\n" + "".join(f"{t},{t}.5,postgres,pgbench-tpcb\n" for t in range(1, 3000)) \
        + "7,8.5\n"
    cut = "a note\nlatency average = 1.000 ms\ntps = 1.0 (without initial connection time)\n"
    for name, text, where, what in (("rows.csv", bad, 3001, "2 fields where the header has 4 columns"),
                                    ("runs.txt", runs * 40 + cut, runs.count("\n") * 40 + 2,
                                     "'latency average = 1.000 ms' not stored")):
        path = tmp_path / name
        path.write_text(text)
        monkeypatch.setattr(storing, "CHUNK_BYTES", 100)
        code, out, err = invoke(["import", str(path), "--label", "x", "--store", str(tmp_path / "s.db")], capsys)
        assert err.startswith(f"dbarena: error: {name}:{where}: {what}") if name == "rows.csv" \
            else f"{name}:{where}: {what}" in err, err
    db = sqlite3.connect(tmp_path / "s.db")
    # The CSV failed at its end, after 2,999 rows written: none is stored, nor its import.
    assert db.execute("SELECT count(*) FROM runs r JOIN points p ON p.run_id = r.id WHERE r.target LIKE '%rows.csv'"
                      ).fetchone() == (0,)
    assert db.execute("SELECT file FROM imports").fetchall() == [(str(tmp_path / "runs.txt"),)]


def test_memory_is_bounded_by_the_largest_run_not_by_the_file(tmp_path):
    """400 runs appended, read with a bound just above the largest run: every run is
    stored (what is held is one run, never the file); a run over the bound is refused
    at its first line, in one line, and nothing of the file is stored."""
    runs = [STUDY_A.read_text(), (FIXTURES / "pgbench" / "corpus" / "pg14.0-tpcb-progress-P10.txt").read_text()]
    path = tmp_path / "many.txt"
    path.write_text("".join(runs[k % 2] for k in range(400)))
    expected = reading.read(path.name, path.read_text(), label="x", skipped=[])
    largest = max(len("\n".join(path.read_text().splitlines()[p.first_line - 1:p.last_line])) for p in expected)
    assert largest * 100 < path.stat().st_size
    with Store(tmp_path / "s.db") as db:
        done = import_file(db, path, ImportOptions(label="x"), max_run_chars=3 * largest)
        assert done.error is None and done.points == len(expected) > 400, done
        long_run = tmp_path / "long.txt"
        progress = "".join(f"progress: {s}.0 s, 1000.0 tps, lat 1.000 ms stddev 0.100\n" for s in range(1, 200))
        long_run.write_text(runs[0] * 3 + "pgbench -c 1 -T 200 db\n" + progress + runs[0])
        refused = import_file(db, long_run, ImportOptions(label="y"), max_run_chars=len(progress))
        first = runs[0].count("\n") * 3 + 1
        assert refused.error is not None and refused.error.startswith(
            f"long.txt:{first}: a run of more than {len(progress):,} characters"), refused.error
        assert db.db.execute("SELECT count(*) FROM runs WHERE label = 'y'").fetchone() == (0,)


def test_an_import_killed_half_way_stores_nothing_and_imports_again(tmp_path):
    """SIGKILL after 50 points were written (uncommitted): the store holds none of
    them, nor the file's import; the same file then imports whole."""
    path = tmp_path / "many.txt"
    path.write_text(STUDY_A.read_text() * 100)
    store = tmp_path / "s.db"
    script = ("import os, signal, runpy, sys\n"
              "from dbarena.store import database\n"
              "insert = database.Store._insert_point\n"
              "def killing(self, *args, **kwargs):\n"
              "    point_id = insert(self, *args, **kwargs)\n"
              "    if point_id == 50:\n"
              "        os.kill(os.getpid(), signal.SIGKILL)\n"
              "    return point_id\n"
              "database.Store._insert_point = killing\n"
              "sys.argv = ['dbarena', 'import', sys.argv[1], '--label', 'x', '--store', sys.argv[2]]\n"
              "runpy.run_module('dbarena', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", script, str(path), str(store)], capture_output=True, text=True,
                          timeout=120, env={**os.environ})
    assert done.returncode == -signal.SIGKILL, done.stderr
    with Store(store) as db:
        assert db.db.execute("SELECT (SELECT count(*) FROM points), (SELECT count(*) FROM runs),"
                             " (SELECT count(*) FROM imports)").fetchone() == (0, 0, 0)
        again = import_file(db, path, ImportOptions(label="x"))
        assert again.error is None and again.points == 100 * len(reading.read("a", STUDY_A.read_text(), label="x"))


def test_a_file_changed_between_its_two_readings_stores_nothing(tmp_path, monkeypatch):
    path = tmp_path / "runs.txt"
    path.write_text(STUDY_A.read_text())
    survey = storing._survey

    def then_appended(*args):
        found = survey(*args)
        with path.open("a") as f:
            f.write(STUDY_A.read_text())
        return found

    monkeypatch.setattr(storing, "_survey", then_appended)
    with Store(tmp_path / "s.db") as db:
        done = import_file(db, path, ImportOptions(label="x"))
        assert done.error == "runs.txt: changed while it was imported; nothing stored (import it again)"
        assert db.db.execute("SELECT count(*) FROM points").fetchone() == (0,)
