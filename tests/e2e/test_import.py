"""`dbarena import` through the real CLI: every corpus sample of the supported tools,
a study-A style appended file, CSV summaries, re-import, broken files; imported points
then behave like measured ones in results, report and compare."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import cli_env, with_raw
# Every command here only reads and writes files and stores: run in this process
# (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each to start.
from inprocess import dbarena as dbarena_here

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).parent.parent / "fixtures"
ENV = cli_env(Path("/tmp"))


def _points(store, label=None):
    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    sql = "SELECT p.*, r.label FROM points p JOIN runs r ON r.id = p.run_id"
    return with_raw(store, db.execute(sql + (" WHERE r.label = ?" if label else "") + " ORDER BY p.id",
                                      (label,) if label else ()).fetchall())


@pytest.mark.parametrize("tool", ["pgbench", "sysbench", "mysqlslap"])
def test_every_corpus_sample_imports(tool, tmp_path):
    store = tmp_path / "r.db"
    files = sorted((FIXTURES / tool / "corpus").glob("*.txt"))
    assert files
    # One command an engine, each file said on a line of its own (FILE: what came of it):
    # the same imports, a run each, as a command a file, without starting Python and
    # dbarena some 50 times (a minute or more of the suite's CPU under load).
    by_engine: dict[str, list[Path]] = {}
    for f in files:
        by_engine.setdefault("postgres" if "pgsql" in f.name or tool == "pgbench" else "mysql", []).append(f)
    for engine, some in by_engine.items():
        done = dbarena_here("import", *map(str, some), "--label", "corpus", "--engine", engine, "--store", str(store),
                       env=ENV)
        assert done.returncode == 0, done.stderr
        said = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in done.stdout.splitlines() if ": " in line}
        for f in some:
            assert said[str(f)].startswith(("imported", "no benchmark run found")), done.stdout
    points = _points(store)
    assert len(points) >= len(files) - 1  # pgbench -i output holds no run
    for p in points:
        source = json.loads(p["source"])
        assert source["file"].endswith(".txt") and len(source["sha256"]) == 64 and source["lines"][0] >= 1
        assert p["status"] == "failed" or (p["tps"] or p["qps"]) > 0
        assert p["stdout"]  # the run's own text, kept verbatim


def test_study_a_appended_file_with_command_lines(tmp_path):
    store = tmp_path / "r.db"
    path = FIXTURES / "import" / "study-a-appended-pg15.txt"
    done = dbarena_here("import", str(path), "--label", "box", "--store", str(store), env=ENV)
    assert done.returncode == 0, done.stderr
    assert "imported 3 point(s) (3 ok, 0 failed)" in done.stdout
    points = _points(store)
    assert [(p["workload"], p["threads"], p["clients"], p["duration_s"]) for p in points] == [
        ("pgbench-tpcb", 1, 2, 2), ("pgbench-select-only", 2, 4, 2), ("pgbench-simple-update", 2, 4, 2)]
    assert [p["tps"] for p in points] == [2082.239139, 41215.971308, 4681.928452]
    assert [json.loads(p["source"])["lines"] for p in points] == [[1, 18], [19, 36], [37, 51]]
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 4  # -P 1 twice x 2 s; none for -N
    # Re-import: nothing added.
    again = dbarena_here("import", str(path), "--label", "other", "--store", str(store), env=ENV)
    assert again.returncode == 0 and "already imported" in again.stdout
    assert len(_points(store)) == 3


def test_appended_runs_without_command_lines(tmp_path):
    corpus = FIXTURES / "pgbench" / "corpus"
    appended = tmp_path / "appended.txt"
    appended.write_text((corpus / "pg13-tpcb-progress-P60-incl-excl.txt").read_text()
                        + (corpus / "pg11-tpcb-progress-P60-incl-excl.txt").read_text())
    store = tmp_path / "r.db"
    done = dbarena_here("import", str(appended), "--label", "old", "--store", str(store), env=ENV)
    assert done.returncode == 0, done.stderr
    points = _points(store)
    assert [(p["threads"], p["clients"], p["tps"]) for p in points] == [(1, 1, 532.055085), (1, 8, 1608.348409)]
    assert [json.loads(p["source"])["lines"][0] for p in points] == [1, 23]  # the first file has 22 lines


def test_csv_with_transactions_and_time_gives_the_same_tps(tmp_path):
    store = tmp_path / "r.db"
    direct = tmp_path / "direct.csv"
    direct.write_text("label,engine,workload,threads,tps,latency_avg_ms,latency_p95_ms,price_per_hour\n"
                      "rds-m6g,mysql,sysbench-read-write,16,500.25,31.9,47.5,0.34\n"
                      "rds-m6g,mysql,sysbench-read-write,32,700.5,45.6,68.1,0.34\n")
    derived = tmp_path / "derived.csv"
    derived.write_text("engine,workload,threads,transactions,time_s,queries\n"
                       "mysql,sysbench-read-write,16,150075,300,3001500\n"
                       "mysql,sysbench-read-write,32,210150,300,4203000\n")
    assert dbarena_here("import", str(direct), "--label", "ignored", "--store", str(store), env=ENV).returncode == 0
    done = dbarena_here("import", str(derived), "--label", "rds-m6g-study-e", "--store", str(store), env=ENV)
    assert done.returncode == 0, done.stderr
    a, b = _points(store, "rds-m6g"), _points(store, "rds-m6g-study-e")
    assert [p["tps"] for p in a] == pytest.approx([p["tps"] for p in b]) == [500.25, 700.5]
    assert [p["qps"] for p in b] == pytest.approx([10005.0, 14010.0])
    assert a[0]["latency_p95_ms"] == 47.5 and a[0]["clients"] == 16
    run = sqlite3.connect(store).execute("SELECT price_per_hour FROM runs WHERE label = 'rds-m6g'").fetchone()
    assert run == (0.34,)
    # Imported points behave like measured ones.
    compared = dbarena_here("compare", "rds-m6g", "rds-m6g-study-e", "--store", str(store), "--json", env=ENV)
    assert compared.returncode == 0 and json.loads(compared.stdout)[0]["ratio"] == pytest.approx(1.0)
    report = tmp_path / "r.json"
    made = dbarena_here("report", "--store", str(store), "--at-threads", "16", "-o", str(report), env=ENV)
    assert made.returncode == 0, made.stderr
    row = next(r for r in json.loads(report.read_text())["rows"] if r["label"] == "rds-m6g" and r["threads"] == 16)
    assert row["price_per_100_tps"] == pytest.approx(0.34 / 5.0025)
    listed = json.loads(dbarena_here("results", "--store", str(store), "--json", env=ENV).stdout)
    assert all(r["source"]["file"] in ("direct.csv", "derived.csv") for r in listed)


@pytest.mark.parametrize("name, text, where, message", [
    ("unknown.csv", "threads,tps,colour\n1,10,red\n", "unknown.csv:1:", "unknown column(s) 'colour'"),
    ("bad.csv", "workload,engine,threads,tps\nmysqlslap,mysql,4,12\nmysqlslap,mysql,8,fast\n", "bad.csv:3:",
     "column 'tps': 'fast' is not a number"),
    ("nothroughput.csv", "workload,engine,threads,transactions\nmysqlslap,mysql,4,100\n", "nothroughput.csv:2:",
     "no throughput"),
])
def test_broken_csv_names_the_line_and_stores_nothing(name, text, where, message, tmp_path):
    path = tmp_path / name
    path.write_text(text)
    store = tmp_path / "r.db"
    done = dbarena_here("import", str(path), "--label", "x", "--store", str(store), env=ENV)
    assert done.returncode == 2
    assert done.stderr.startswith(f"dbarena: error: {where}") and message in done.stderr
    assert done.stderr.count("\n") == 1
    assert _points(store) == []


def test_broken_run_in_an_appended_file_stores_nothing_from_that_file(tmp_path):
    text = (FIXTURES / "import" / "study-a-appended-pg15.txt").read_text()
    broken = tmp_path / "broken.txt"
    broken.write_text(text.replace("tps = 41215.971308 (without", "tps = 41215,971308 (without"))
    good = tmp_path / "good.csv"
    good.write_text("workload,engine,threads,tps\nmysqlslap,mysql,4,12\n")
    store = tmp_path / "r.db"
    done = dbarena_here("import", str(broken), str(good), "--label", "x", "--store", str(store), env=ENV)
    assert done.returncode == 2
    assert "broken.txt:36:" in done.stderr and "tps" in done.stderr
    assert [p["workload"] for p in _points(store)] == ["mysqlslap"]  # only the good file


def test_import_usage_errors(tmp_path):
    garbage = tmp_path / "notes.txt"
    garbage.write_text("we ran some benchmarks\nthey were fast\n")
    done = dbarena_here("import", str(garbage), "--label", "x", "--store", str(tmp_path / "r.db"), env=ENV)
    assert done.returncode == 2 and "cannot tell which tool wrote this" in done.stderr
    sb = FIXTURES / "sysbench" / "corpus" / "sysbench-1.0.20-oltp-read-only-pgsql.txt"
    done = dbarena_here("import", str(sb), "--label", "x", "--store", str(tmp_path / "r.db"), env=ENV)
    assert done.returncode == 2 and "pass --engine" in done.stderr
    missing = dbarena_here("import", str(tmp_path / "nope.txt"), "--label", "x", env=ENV)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
