"""`dbarena store forget` (issue 41): a run removed from a store with everything that
hangs off it, in one transaction, leaving a tombstone (its UUID) so that `merge` does
not bring it back and carries the forgetting into the store it merges into; a running
run refused; importing the same file again afterwards imports it again, as a new run.
On real SQLite stores built by the library (tests/storebuild.py) and on a copy of a
store of an older schema; tests/e2e/test_pg_store.py does the same on PostgreSQL."""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from dbarena.lifecycle import state
from dbarena.store.database import Store
from dbarena.store.merge import merge
from dbarena.store.migrations import SCHEMA_VERSION
from dbarena.store.schema import TABLES

import inprocess
from storebuild import build

STORES = Path(__file__).resolve().parent.parent / "fixtures" / "stores"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return inprocess.dbarena(*args)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`build`'s store: runs 1 (label a), 2 (b), 3 (a), 7 points each (the 7th failed)."""
    return build(tmp_path_factory.mktemp("forget") / "base.db")


@pytest.fixture
def store(base: Path, tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    shutil.copy(base, path)
    return path


def rows(path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def keyed_rows(path: Path) -> dict[str, dict[str, list[tuple[Any, ...]]]]:
    """table -> ("run", run id) or ("point", point id) -> its rows, for every table that
    has a run_id or point_id column (as schema.py describes them: a table added later
    is counted too), and the record of imported files by the runs it names."""
    out: dict[str, dict[str, list[tuple[Any, ...]]]] = {}
    point_run = dict(rows(path, "SELECT id, run_id FROM points"))
    for table in TABLES:
        if table.name in ("pending_rekey", "live_seconds"):
            continue  # (transient: rows only while a data step, or a point being measured, is in progress)
        names = [c.name for c in table.columns]
        key = "run_id" if "run_id" in names else "point_id" if "point_id" in names else None
        if key is None:
            continue
        found: dict[str, list[tuple[Any, ...]]] = {}
        for row in rows(path, f"SELECT * FROM {table.name}"):
            value = row[names.index(key)]
            run = value if key == "run_id" else point_run[value]
            found.setdefault(str(run), []).append(row)
        out[table.name] = {run: sorted(found_rows, key=repr) for run, found_rows in found.items()}
    out["runs"] = {str(r[0]): [r] for r in rows(path, "SELECT * FROM runs")}
    return out


def test_a_forgotten_run_goes_with_every_row_that_hangs_off_it_and_leaves_a_tombstone(store: Path) -> None:
    before = keyed_rows(store)
    assert all("2" in found for found in before.values()), {t: list(f) for t, f in before.items()}
    (identity, started), = rows(store, "SELECT uuid, started_at FROM runs WHERE id = 2")
    done = cli("store", "forget", "--run", "2", "--store", str(store))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines() == [
        f"forgot run 2 (label b, postgres, started {started}): 7 point(s)",
        f"{store}: 1 run(s), 7 point(s) forgotten; a merge will not bring them back"]
    after = keyed_rows(store)
    # Run 2 is gone from every table; the other runs' rows are as they were.
    assert after == {t: {run: r for run, r in found.items() if run != "2"} for t, found in before.items()}
    (tomb,) = rows(store, "SELECT uuid, label, engine, started_at, points, forgotten_at FROM forgotten_runs")
    assert tomb[:5] == (identity, "b", "postgres", started, 7) and tomb[5].endswith("+00:00")
    # What every reader shows: label b is no more.
    info = json.loads(cli("store", "info", "--json", "--store", str(store)).stdout)
    assert (info["runs"], info["points"], info["forgotten_runs"], info["labels"]) == (2, 14, 1, ["a"])
    gone = cli("results", "--label", "b", "--store", str(store))
    assert gone.returncode == 2 and gone.stderr == "dbarena: error: no label 'b' in the store; stored: a\n"


def test_several_runs_go_in_one_transaction_or_none_does(store: Path) -> None:
    before = keyed_rows(store)
    done = cli("store", "forget", "--run", "1", "--run", "9", "--store", str(store))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"dbarena: error: no run 9 in {store} (it holds 3 run(s), ids 1 to 3)\n"
    assert keyed_rows(store) == before and rows(store, "SELECT * FROM forgotten_runs") == []
    done = cli("store", "forget", "--run", "3", "--run", "1", "--run", "3", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert [line.split(" (")[0] for line in done.stdout.splitlines()[:2]] == ["forgot run 3", "forgot run 1"]
    assert done.stdout.splitlines()[-1] == f"{store}: 2 run(s), 14 point(s) forgotten; a merge will not bring them back"
    assert rows(store, "SELECT id FROM runs ORDER BY id") == [(2,)] and rows(store, "SELECT count(*) FROM forgotten_runs") == [(2,)]


@pytest.mark.parametrize("argv, said", [
    ((), "dbarena: error: store forget: name the runs: --run N (repeatable) or --label L"),
    (("--label", "nosuch"), "dbarena: error: no label 'nosuch' in the store; stored: a, b"),
    (("--run", "0"), "dbarena: error: Invalid value for '--run': 0 is not in the range 1<=x<="),
])
def test_what_names_no_run_is_one_line_and_exit_2(store: Path, argv: tuple[str, ...], said: str) -> None:
    before = keyed_rows(store)
    done = cli("store", "forget", *argv, "--store", str(store))
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(said), done.stderr
    assert keyed_rows(store) == before


def test_no_store_is_one_line(tmp_path: Path) -> None:
    done = cli("store", "forget", "--run", "1", "--store", str(tmp_path / "none.db"))
    assert done.returncode == 2 and done.stderr == f"dbarena: error: no results store at {tmp_path / 'none.db'}\n"
    assert not (tmp_path / "none.db").exists()


def test_a_label_of_several_runs_needs_yes_where_nobody_can_be_asked(store: Path) -> None:
    done = cli("store", "forget", "--label", "a", "--store", str(store))
    assert done.returncode == 2 and done.stderr == \
        "dbarena: error: --label would forget 2 runs of label 'a' (runs 1, 3): add --yes to forget them\n"
    assert len(rows(store, "SELECT id FROM runs ORDER BY id")) == 3
    one = cli("store", "forget", "--label", "b", "--store", str(store))  # one run: nothing to ask
    assert one.returncode == 0 and one.stdout.startswith("forgot run 2 (label b"), one.stderr
    both = cli("store", "forget", "--label", "a", "--yes", "--store", str(store))
    assert both.returncode == 0, both.stderr
    assert both.stdout.splitlines()[-1].endswith(": 2 run(s), 14 point(s) forgotten; a merge will not bring them back")
    assert rows(store, "SELECT count(*) FROM runs") == [(0,)] and rows(store, "SELECT count(*) FROM points") == [(0,)]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("answer, status, left", [("n\n", 130, 3), ("", 130, 3), ("y\n", 0, 1)])
def test_on_a_terminal_a_label_of_several_runs_is_asked_about(store: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch, answer: str,
                                                              status: int, left: int) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    code, out, err = invoke(["store", "forget", "--label", "a", "--store", str(store)], capsys)
    assert code == status, err
    assert "forget 2 runs of label 'a' (runs 1, 3), with their points, for good? (--yes: do not ask)" in err
    assert ("nothing forgotten" in err) == (status != 0)
    assert rows(store, "SELECT count(*) FROM runs") == [(left,)]


def test_a_run_its_live_dbarena_is_still_writing_is_refused(store: Path) -> None:
    owner = subprocess.Popen(["sleep", "60"])
    try:
        record = {"pid": owner.pid, "start": state.start_time(owner.pid), "host": socket.gethostname()}
        db = sqlite3.connect(store)
        with db:
            db.execute("UPDATE runs SET status = 'running', ended_at = NULL, options = ? WHERE id = 3",
                       (json.dumps({"owner": record}),))
        db.close()
        before = keyed_rows(store)
        done = cli("store", "forget", "--run", "1", "--run", "3", "--store", str(store))
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (f"dbarena: error: run 3 is still running (process {owner.pid}): "
                               "forget it once it has ended\n")
        assert keyed_rows(store) == before
    finally:
        owner.kill()
        owner.wait()
    # Its dbarena gone (killed: the run is left `running`), the run can go.
    done = cli("store", "forget", "--run", "3", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert rows(store, "SELECT id FROM runs ORDER BY id") == [(1,), (2,)]


def test_a_file_imported_again_after_its_runs_were_forgotten_is_imported_again_as_new_runs(tmp_path: Path) -> None:
    csv = tmp_path / "two.csv"
    csv.write_text("label,engine,workload,threads,transactions,queries,time_s,latency_avg_ms\n"
                   "x1,mysql,sysbench-read-write,16,150075,3001500,300,31.98\n"
                   "x2,mysql,sysbench-read-write,16,150000,3000000,300,32.0\n"
                   "x2,mysql,sysbench-read-write,32,160000,3200000,300,60.0\n")
    store = tmp_path / "i.db"
    first = cli("import", str(csv), "--label", "l", "--store", str(store))
    assert first.returncode == 0 and "as run 1, 2, label x1, x2" in first.stdout, first.stderr
    uuids = dict(rows(store, "SELECT label, uuid FROM runs ORDER BY id"))
    # One of the file's two runs forgotten: the file stays imported, with the other alone.
    assert cli("store", "forget", "--run", "1", "--store", str(store)).returncode == 0
    assert rows(store, "SELECT run_ids, points FROM imports") == [("[2]", 2)]
    again = cli("import", str(csv), "--label", "l", "--store", str(store))
    assert again.returncode == 0 and "already imported" in again.stdout
    # Both forgotten: the file is no longer imported; importing it again brings both back,
    # as new runs (the tombstones stay: a merge still keeps the forgotten ones out).
    assert cli("store", "forget", "--run", "2", "--store", str(store)).returncode == 0
    assert rows(store, "SELECT * FROM imports") == []
    again = cli("import", str(csv), "--label", "l", "--store", str(store))
    assert again.returncode == 0 and "imported 3 point(s)" in again.stdout, again.stderr
    new = dict(rows(store, "SELECT label, uuid FROM runs ORDER BY id"))
    assert set(new) == {"x1", "x2"} and not set(new.values()) & set(uuids.values())
    assert {u for (u,) in rows(store, "SELECT uuid FROM forgotten_runs")} == set(uuids.values())
    (ids,) = rows(store, "SELECT run_ids FROM imports")
    assert sorted(json.loads(ids[0])) == sorted(r for (r,) in rows(store, "SELECT id FROM runs ORDER BY id"))
    # The same file imported into another store (never forgotten there) merges in: its
    # runs are the forgotten ones, and stay out; the new ones here are kept.
    other = tmp_path / "other.db"
    assert cli("import", str(csv), "--label", "l", "--store", str(other)).returncode == 0
    merged = cli("merge", str(other), "--store", str(store))
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout.splitlines()[-1] == f"{other}: 0 run(s), 0 point(s) merged into {store}"
    assert sum(" was forgotten in " in line and line.endswith(": not merged")
               for line in merged.stdout.splitlines()) == 2, merged.stdout
    # Imported again after a second forget: newer runs still.
    assert cli("store", "forget", "--label", "x1", "--label", "x2", "--yes", "--store", str(store)).returncode == 0
    third = cli("import", str(csv), "--label", "l", "--store", str(store))
    assert third.returncode == 0, third.stderr
    assert len({u for (u,) in rows(store, "SELECT uuid FROM runs UNION SELECT uuid FROM forgotten_runs")}) == 6


def test_merge_carries_tombstones_both_ways(base: Path, store: Path, tmp_path: Path) -> None:
    """A run forgotten in one member's store (`store`, a copy of `base`: the same store):
    merged into a store that holds it from there, it is forgotten there too (said in one
    line); a store holding it merged into the one where it was forgotten does not bring
    it back (said too). A third store that holds it from elsewhere keeps it: a store's
    tombstone removes only what it gave."""
    holder = tmp_path / "holder.db"  # a central store that got run 2 from the member's
    assert cli("merge", str(base), "--store", str(holder)).returncode == 0
    (started,) = rows(store, "SELECT started_at FROM runs WHERE id = 2")[0]
    assert cli("store", "forget", "--run", "2", "--store", str(store)).returncode == 0
    (at,) = rows(store, "SELECT forgotten_at FROM forgotten_runs")[0]

    back = cli("merge", str(holder), "--store", str(store))
    assert back.returncode == 0 and back.stderr == "", back.stderr
    assert back.stdout.splitlines() == [
        f"{holder}: run 2 (label b) was forgotten in {store} on {at}: not merged",
        f"{holder}: 0 run(s), 0 point(s) merged into {store}"]
    assert rows(store, "SELECT id FROM runs ORDER BY id") == [(1,), (3,)]

    other = tmp_path / "other.db"
    shutil.copy(holder, other)
    into_other = cli("merge", str(store), "--store", str(other))
    assert into_other.returncode == 0 and into_other.stderr == "", into_other.stderr
    assert into_other.stdout.splitlines() == [
        f"{store}: run 2 (label b, postgres, started {started}) was forgotten there on {at}: "
        f"forgotten in {other} too (7 point(s) removed)",
        f"{store}: 0 run(s), 0 point(s) merged into {other}"]
    assert rows(other, "SELECT forgotten_at FROM forgotten_runs") == [(at,)]  # when, in whichever store
    assert keyed_rows(other) == keyed_rows(store)
    again = cli("merge", str(store), "--store", str(other))  # nothing more to say
    assert again.stdout == f"{store}: 0 run(s), 0 point(s) merged into {other} (all its runs were here already)\n"

    for order in ((holder, store), (store, holder)):
        third = tmp_path / f"third-{order[0].stem}.db"
        done = cli("merge", *map(str, order), "--store", str(third))
        assert done.returncode == 0, done.stderr
        # Run 2 came to it from the holder, whose tombstone it is not.
        said = [line for line in done.stdout.splitlines() if "run 2 " in line]
        assert said == ([f"{store}: run 2 was forgotten there on {at}, but did not come to {third} from there: "
                         "kept here"] if order[0] == holder else []), done.stdout
        assert [r for (r,) in rows(third, "SELECT label FROM runs ORDER BY started_at")] == ["a", "b", "a"]
        assert rows(third, "SELECT uuid FROM forgotten_runs") == []


def test_a_tombstone_for_a_run_the_other_store_never_held_removes_nothing(base: Path, store: Path,
                                                                          tmp_path: Path) -> None:
    """Run UUIDs are public (every bundle carries them): a store carrying a tombstone
    for another store's run (written by hand, or by a `store forget` of a copy of that
    run it got elsewhere) merged into the store that measured it removes nothing, nor
    keeps the run out later; one line says so."""
    victim_uuid, started = rows(store, "SELECT uuid, started_at FROM runs WHERE id = 2")[0]
    hostile = tmp_path / "hostile.db"
    with Store(hostile):
        pass
    db = sqlite3.connect(hostile)
    with db:
        db.execute("INSERT INTO forgotten_runs (uuid, forgotten_at, label, engine, started_at, points) VALUES "
                   "(?, '2026-01-01T00:00:00+00:00', 'b', 'postgres', ?, 7)", (victim_uuid, started))
    db.close()
    before = keyed_rows(store)
    done = cli("merge", str(hostile), "--store", str(store))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert done.stdout.splitlines() == [
        f"{hostile}: run 2 was forgotten there on 2026-01-01T00:00:00+00:00, but did not come to {store} from "
        "there: kept here",
        f"{hostile}: 0 run(s), 0 point(s) merged into {store}"]
    assert keyed_rows(store) == before and rows(store, "SELECT uuid FROM forgotten_runs") == []
    # A store that merges the hostile one first and the run's own store after ends with it.
    third = tmp_path / "third.db"
    assert cli("merge", str(hostile), str(store), "--store", str(third)).returncode == 0
    assert rows(third, "SELECT count(*) FROM runs WHERE uuid = ?", (victim_uuid,)) == [(1,)]
    assert rows(third, "SELECT count(*) FROM points") == rows(store, "SELECT count(*) FROM points")


def test_a_run_running_in_the_store_merged_into_is_not_forgotten_by_a_merge(base: Path, tmp_path: Path) -> None:
    forgot, running = tmp_path / "forgot.db", tmp_path / "running.db"
    shutil.copy(base, forgot)
    assert cli("merge", str(base), "--store", str(running)).returncode == 0  # its runs from there
    assert cli("store", "forget", "--run", "2", "--store", str(forgot)).returncode == 0
    db = sqlite3.connect(running)
    with db:
        db.execute("UPDATE runs SET status = 'running' WHERE id = 2")
    db.close()
    said: list[str] = []
    with Store(running) as into:
        assert merge(into, forgot, tell=said.append) == (0, 0)
    (at,) = rows(forgot, "SELECT forgotten_at FROM forgotten_runs")[0]
    assert said == [f"{forgot}: run 2 was forgotten there on {at}, but is running in {running}: kept here "
                    "(forget it once it has ended)"]
    assert rows(running, "SELECT id FROM runs ORDER BY id") == [(1,), (2,), (3,)]
    assert rows(running, "SELECT * FROM forgotten_runs") == []  # not carried: a later merge asks again


def test_a_store_of_an_older_schema_migrates_and_forgets(tmp_path: Path) -> None:
    """A copy of a schema-11 store (the checked-in file itself is never written): the
    forget migrates it to schema 17 first; the run's derived UUID (given to runs older
    than schema 11 alike in every copy) keeps it out of a merge of the original file."""
    old = tmp_path / "v11.db"
    shutil.copy(STORES / "v11.db", old)
    (run_id, points), *_ = rows(old, "SELECT run_id, count(*) FROM points GROUP BY run_id ORDER BY run_id")
    done = cli("store", "forget", "--run", str(run_id), "--store", str(old))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith(f": {points} point(s)")
    assert rows(old, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert rows(old, "SELECT count(*) FROM points WHERE run_id = ?", (run_id,)) == [(0,)]
    merged = cli("merge", str(STORES / "v11.db"), "--store", str(old))
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout.splitlines()[0].startswith(f"{STORES / 'v11.db'}: run {run_id} ")
    assert merged.stdout.splitlines()[-1] == f"{STORES / 'v11.db'}: 0 run(s), 0 point(s) merged into {old}"
    assert rows(old, "SELECT count(*) FROM points WHERE run_id = ?", (run_id,)) == [(0,)]


def test_what_an_import_replaced_stays_out_of_a_merge_of_a_store_that_still_holds_it(tmp_path: Path) -> None:
    csv = tmp_path / "one.csv"
    csv.write_text("label,engine,workload,threads,transactions,queries,time_s,latency_avg_ms\n"
                   "x1,mysql,sysbench-read-write,16,150075,3001500,300,31.98\n")
    store, copy = tmp_path / "i.db", tmp_path / "copy.db"
    assert cli("import", str(csv), "--label", "l", "--store", str(store)).returncode == 0
    shutil.copy(store, copy)  # a colleague's copy, taken before the fix below
    (old,) = rows(store, "SELECT uuid FROM runs")
    csv.write_text(csv.read_text().replace("150075", "150999"))  # the file corrected
    replaced = cli("import", str(csv), "--label", "l", "--replace", "--store", str(store))
    assert replaced.returncode == 0, replaced.stderr
    assert rows(store, "SELECT uuid FROM forgotten_runs") == [old]
    merged = cli("merge", str(copy), "--store", str(store))
    assert merged.returncode == 0, merged.stderr
    assert rows(store, "SELECT transactions FROM points") == [(150999,)]  # one run, the corrected one


def test_a_store_identity_is_never_in_a_bundle_and_imported_runs_have_no_origin(tmp_path: Path) -> None:
    """What a tombstone must match (the identity of the store a run was merged from) is
    not in what a store publishes, so a bundle cannot lend it; and runs imported from a
    bundle are recorded as from no store, so no store's tombstone removes them."""
    from dbarena.exchange import bundle
    from dbarena.exchange.importing import import_bundle
    from dbarena.exchange.publish import publish

    source = tmp_path / "demo.db"
    shutil.copyfile(STORES / "demo-seed-a-quick.db", source)
    with Store(source) as db:
        identity = db.identity()
        made = publish(db, run_ids=[1], signer=None, secrets={})
    assert identity is not None and identity.encode() not in made.data
    members, _ = bundle.read_tar("demo", made.data)
    assert not any(identity.encode() in data for data in members.values())
    path = tmp_path / "demo.tar"
    path.write_bytes(made.data)
    into = tmp_path / "into.db"
    with Store(into) as db:
        assert import_bundle(db, path).runs == 1
    assert rows(into, "SELECT count(*) FROM runs") == [(1,)]
    assert rows(into, "SELECT count(*) FROM run_origins") == [(0,)]
