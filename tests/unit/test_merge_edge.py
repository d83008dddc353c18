"""`dbarena merge` copies only what fits (issue 46): a store edited by hand holds values
that do not fit their columns in every table a merge copies; merged into a clean store,
each is said in one line naming the other store, the table, the row and the column, and
left out (a run's points with it, a host or study leaving its runs merged without it),
every row that fits is there, and every read command reads the merged store without a
word about it. SQLite into SQLite (the per-second series copied in SQL) and row by row
(the path a PostgreSQL store on either side takes; tests/e2e/test_pg_store.py merges the
same store into a real PostgreSQL) give the same store and the same lines."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbarena.store import edge
from dbarena.store.database import Store
from dbarena.store.merge import _merge_from, merge
from dbarena.store.schema import TYPES

from storebuild import HOSTILE, assert_merged, assert_said, build
from test_store_edge import READERS, VALUES, edited, invoke, run_all


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("merge-edge") / "base.db")


def test_a_hostile_store_merges_what_fits_and_every_reader_reads_the_result(built: Path) -> None:
    with edited(built, *((sql, args) for sql, args, _ in HOSTILE)) as source:
        merged = source.parent / "clean.db"
        code, out, err = invoke(["merge", str(source), "--store", str(merged)], source.parent)
        assert code == 0, err
        assert out.strip() == f"{source}: 2 run(s), 11 point(s) merged into {merged}"
        assert_said(err, source)
        assert_merged(source, merged)
        for argv, code, err in run_all(merged, READERS):
            # (gate may answer that two repeats of a level are too few: one line, exit 2)
            assert argv[0] == "gate" or code == 0, (argv, code, err)
            assert "store " not in err, (argv, err)  # the merged store is clean: nothing to say
        # Merging again adds nothing, and says the same lines (what was left out still is).
        code, out, err = invoke(["merge", str(source), "--store", str(merged)], source.parent)
        assert code == 0 and out.strip().endswith("(all its runs were here already)"), (out, err)


def test_row_by_row_merges_the_same_rows_and_says_the_same(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The path a PostgreSQL store on either side takes, here between two SQLite files."""
    with edited(built, *((sql, args) for sql, args, _ in HOSTILE)) as source:
        merged = source.parent / "rows.db"
        with Store(source, readonly=True) as other, Store(merged) as into:
            assert _merge_from(into, other, str(source), None) == (2, 11)
        assert_said(capsys.readouterr().err, source)
        assert_merged(source, merged)


def test_a_run_without_uuid_and_a_host_that_is_not_there(built: Path) -> None:
    """A run with no UUID cannot be merged once only: left out. A run naming a host the
    store does not hold (foreign keys off in a hand edit) is merged without it."""
    with edited(built, ("UPDATE runs SET uuid = NULL WHERE id = 1", ()),
                ("PRAGMA foreign_keys = OFF", ()),
                ("UPDATE runs SET host_fingerprint = 'ff' WHERE id = 2", ())) as source:
        said: list[str] = []
        with Store(source.parent / "m.db") as into:
            assert merge(into, source, said.append) == (2, 14)
            runs = {r.label: r for r in into.runs()}
        assert said == [f"store {source}: runs row 1, column uuid: NULL where a value must be (a run is merged "
                        "once, by its UUID); that run and its points are not merged",
                        f"store {source}: hosts row ff, column fingerprint: 'ff' is named by runs but not in that "
                        "store; that host is not merged; its runs are, without their host facts"]
        assert runs["b"].host_facts == {} and runs["a"].host_facts["hardware_threads"] == 2


NUMERIC = [(t, c.name) for t in ("samples", "system_samples") for c in edge.COLUMNS[t].values()
           if c.name != "point_id"]


@settings(max_examples=300, deadline=None)
@given(cell=st.sampled_from(NUMERIC), value=VALUES)
def test_sql_is_never_sure_of_a_value_the_edge_refuses(cell: tuple[str, str], value: Any) -> None:
    """edge.sure_fit_sql, what SQLite vouches for in a merge, holds no value that
    edge.fault finds does not fit (it may doubt more: those the edge then decides)."""
    table, name = cell
    column = edge.COLUMNS[table][name]
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE TABLE {table} "
               f"({', '.join(f'{c.name} {TYPES[c.type][0]}' for c in edge.COLUMNS[table].values())})")
    good = {c.name: (1 if c.not_null else None) for c in edge.COLUMNS[table].values()}  # a row that fits
    db.execute(f"INSERT INTO {table} ({', '.join(good)}) VALUES ({', '.join('?' * len(good))})",
               [value if c == name else v for c, v in good.items()])
    (stored,), = db.execute(f"SELECT {name} FROM {table}")
    sure = db.execute(f"SELECT ({edge.sure_fit_sql(table, 't')}) FROM {table} t").fetchone()[0]
    assert sure in (0, 1)  # never NULL: NOT(...) is its exact complement
    if edge.fault(column, stored) is not None:
        assert sure == 0, (cell, value, stored)
    elif stored is None or abs(stored) <= 1e308:
        assert sure == 1, (cell, value, stored)  # what a dbarena run writes is vouched for: no Python for it


def test_a_run_left_unmigrated_with_facts_that_do_not_read(built: Path) -> None:
    """A run without a host (as before schema 11) whose own facts do not read: opening
    the store migrates it without them (it raised, a traceback on every command), and
    a merge brings it in."""
    with edited(built, ("PRAGMA foreign_keys = OFF", ()),
                ("UPDATE runs SET host_fingerprint = NULL, host_facts = '{' WHERE id = 1", ()),
                ("UPDATE points SET stdout = x'00' WHERE id = 1", ()),
                ("DELETE FROM raw_outputs WHERE point_id = 1", ())) as source:
        code, out, err = invoke(["merge", str(source), "--store", str(source.parent / "m.db")], source.parent)
        assert code == 0 and out.strip().endswith("3 run(s), 21 point(s) merged into " + str(source.parent / "m.db")), \
            (out, err)
        for argv, code, err in run_all(source, (("results",), ("results", "--raw", "1"))):
            assert code == 0, (argv, err)
