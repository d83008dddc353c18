"""`dbarena import --workload`: a name dbarena knows, or the tool's own name stored as
dbarena's; anything else is refused in one line listing the known names (exit 2). In
process through the real CLI, on real tool outputs from the corpus."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from conftest import error_line, invoke

from dbarena import workloads
from dbarena.importers import workloadnames

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SYSBENCH_PGSQL = FIXTURES / "sysbench" / "corpus" / "sysbench-1.1.0-oltp-rw-pgsql.txt"
PGBENCH = FIXTURES / "pgbench" / "corpus" / "pg16.6-select-only-S-r.txt"


def _workloads(store: Path) -> list[str]:
    with sqlite3.connect(store) as db:
        return [w for (w,) in db.execute("SELECT workload FROM points ORDER BY id")]


@pytest.mark.parametrize("given, stored", [
    ("oltp_read_write", "sysbench-read-write"), ("sysbench-read-write", "sysbench-read-write"),
    ("oltp_delete", "sysbench-delete"), ("select_random_ranges", "sysbench-select-random-ranges"),
    ("tpcc", "sysbench-tpcc"), ("sysbench-tpcc", "sysbench-tpcc"),
])
def test_the_tools_own_name_is_stored_as_dbarenas(given, stored, tmp_path, capsys):
    store = tmp_path / "r.db"
    code, out, err = invoke(["import", str(SYSBENCH_PGSQL), "--label", "x", "--engine", "postgres",
                             "--workload", given, "--store", str(store)], capsys)
    assert code == 0, err
    assert set(_workloads(store)) == {stored}


def test_pgbench_builtin_names_are_dbarenas():
    # pgbench -b's names, one for each of the registry's pgbench built-ins.
    assert {workloadnames.canonical(n) for n in ("tpcb-like", "simple-update", "select-only")} == \
        {w.name for w in workloads.WORKLOADS.values() if w.tool.name == "pgbench" and w.name != "pgbench-custom"}


@pytest.mark.parametrize("given", ["foo", "sysbench-oltp-read-write", "OLTP_READ_WRITE", "pgbench", "sysbench"])
def test_an_unknown_workload_is_refused_in_one_line_listing_the_known_ones(given, tmp_path, capsys):
    store = tmp_path / "r.db"
    code, _, err = invoke(["import", str(PGBENCH), "--label", "x", "--workload", given, "--store", str(store)],
                          capsys)
    assert code == 2
    line = error_line(err)
    assert line == err and f"unknown workload {given!r}" in line
    assert all(name in line for name in workloads.WORKLOADS) and "oltp_read_write" in line
    assert not store.exists() or _workloads(store) == []


def test_a_csv_workload_column_is_checked_and_mapped(tmp_path, capsys):
    store = tmp_path / "r.db"
    good = tmp_path / "good.csv"
    good.write_text("engine,workload,threads,tps\nmysql,oltp_read_only,4,12\nmysql,sysbench-read-only,8,20\n")
    code, _, err = invoke(["import", str(good), "--label", "x", "--store", str(store)], capsys)
    assert code == 0, err
    assert _workloads(store) == ["sysbench-read-only", "sysbench-read-only"]
    bad = tmp_path / "bad.csv"
    bad.write_text("engine,workload,threads,tps\nmysql,oltp_read_only,4,12\nmysql,read-only,8,20\n")
    code, _, err = invoke(["import", str(bad), "--label", "y", "--store", str(store)], capsys)
    assert code == 2 and error_line(err).startswith("dbarena: error: bad.csv:3: column 'workload': unknown workload")


def test_import_help_lists_the_workloads(capsys):
    code, out, _ = invoke(["import", "--help"], capsys)
    flat = " ".join(out.split())
    # click may break a name at its hyphens; the names are there once spaces are gone.
    assert code == 0 and all(n.replace("-", "") in flat.replace("- ", "").replace("-", "")
                             for n in workloadnames.known())
