"""What a read may add to a store: the cache of derived figures, through a connection of
its own, to a store already checked to be dbarena's at this schema; and what it does with
an older store too big to copy into memory."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import invoke
from dbarena.store import dialect
from dbarena.store.database import Store

DEMO = Path(__file__).parent.parent / "fixtures" / "stores" / "demo-seed-a-quick.db"
OLD = Path(__file__).parent.parent / "fixtures" / "stores" / "v11.db"


def tables_but_the_cache(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as db:
        names = [n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                 if n not in ("point_derived", "session_summaries", "group_summaries", "group_generation")]
        return [(n, sorted(db.execute(f"SELECT * FROM {n}").fetchall(), key=repr)) for n in names]


def test_a_read_keeps_the_derived_figures_it_computed_and_changes_nothing_else(tmp_path, capsys):
    store = tmp_path / "s.db"
    shutil.copy(DEMO, store)
    Store(store).close()  # today's schema: read as it is, not through a copy in memory
    with sqlite3.connect(store) as db:
        db.execute("DELETE FROM point_derived")  # as a merge or a bulk copy may leave a store
        db.execute("DELETE FROM session_summaries")
    before = tables_but_the_cache(store)
    code, first, err = invoke(["results", "--summary", "--json", "--store", str(store)], capsys)
    assert code == 0, err
    with sqlite3.connect(store) as db:
        cached = db.execute("SELECT COUNT(*) FROM point_derived").fetchone()[0]
        points = db.execute("SELECT COUNT(*) FROM points").fetchone()[0]
        # (And the summaries of every session, which the second read makes its summaries from.)
        summarised = db.execute("SELECT SUM(points) FROM session_summaries WHERE figures IS NOT NULL").fetchone()[0]
    assert cached == points and tables_but_the_cache(store) == before
    assert summarised == db_measured(store)
    code, second, err = invoke(["results", "--summary", "--json", "--store", str(store)], capsys)
    assert code == 0 and second == first  # the next read, from the cache, says the same


def test_an_older_store_too_big_to_copy_into_memory_asks_for_store_migrate(tmp_path, monkeypatch, capsys):
    store = tmp_path / "old.db"
    shutil.copy(OLD, store)
    monkeypatch.setattr(dialect, "MAX_MEMORY_COPY", 0)
    code, _, err = invoke(["results", "--store", str(store)], capsys)
    assert code != 0 and err.count("\n") == 1 and f"run `dbarena store migrate --store {store}`" in err


def db_measured(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("SELECT COUNT(*) FROM points WHERE phase = 'measured'").fetchone()[0])
