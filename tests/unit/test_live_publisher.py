"""The live publisher of an SQLite store (store/live.py), against real SQLite files: the
point being measured written second by second to the sidecar STORE.live (never to the
store's file), its last LIVE_KEEP_S seconds kept, removed when the point is stored, when
the run ends, is interrupted, reaped or forgotten; a damaged sidecar made anew, a
missing one read as nothing live. (A PostgreSQL store's: tests/e2e/test_serve_pg.py.)"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

import storebuild
from dbarena.model import PointSpec, RunInfo
from dbarena.store import live
from dbarena.store.database import Store

SPEC = PointSpec(engine="postgres", workload="pgbench-select-only", threads=1, clients=2, duration_s=30, repeat=0)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    with Store(path) as db:
        for _ in range(2):
            db.begin_run(RunInfo(label="l", host="box", engine="postgres", target="t", started_at=storebuild.T0,
                                 server_version="17", tool_versions={}, options={}, host_facts={}))
    return path


def sidecar_rows(store: Path) -> list[tuple[int, str, float, float, int]]:
    db = sqlite3.connect(live.sidecar(store))
    try:
        return db.execute("SELECT run_id, phase, second, tps, stored_before FROM live_seconds"
                          " ORDER BY run_id, second").fetchall()
    finally:
        db.close()


def publish(publisher: live.Publisher, run_id: int, seconds: range, phase: str = "measured",
            stored_before: int = 0) -> int:
    token = publisher.begin(run_id, SPEC, phase, stored_before, SPEC.duration_s)
    for s in seconds:
        publisher.second(token, float(s), 1000.0 + s)
    assert publisher.flush(60)
    assert publisher.broken is None
    return token


def test_seconds_go_to_the_sidecar_never_to_the_store_file_the_last_ones_kept(store: Path) -> None:
    before = os.stat(store).st_mtime_ns, store.stat().st_size
    publisher = live.Publisher(store)
    try:
        publish(publisher, 1, range(1, 4))
        assert sidecar_rows(store) == [(1, "measured", s, 1000.0 + s, 0) for s in (1.0, 2.0, 3.0)]
        publish(publisher, 2, range(1, 31), phase="warmup", stored_before=3)
        seconds = [r[2] for r in sidecar_rows(store) if r[0] == 2]
        assert seconds == [float(s) for s in range(30 - live.LIVE_KEEP_S, 31)]  # its last seconds only
        with Store(store, readonly=True) as db:
            found = db.run_progress([1, 2])
            assert db.db.execute("SELECT count(*) FROM live_seconds").fetchone()[0] == 0
        point = live.read_sidecar(live.sidecar(store), [1, 2])[2]
        assert (point.phase, point.workload, point.clients, point.stored_before, point.seconds[-1]) == \
            ("warmup", "pgbench-select-only", 2, 3, (30.0, 1030.0))
        assert found[1].live is None  # (an SQLite store's own table stays empty)
    finally:
        publisher.close()
    assert (os.stat(store).st_mtime_ns, store.stat().st_size) == before  # the store's file untouched


def test_a_point_stored_takes_its_seconds_with_it_the_next_point_starts_afresh(store: Path) -> None:
    publisher = live.Publisher(store)
    try:
        token = publish(publisher, 1, range(1, 6))
        publish(publisher, 2, range(1, 3))
        with Store(store) as db:
            db.add_point(1, storebuild._point(500.0, 1, 0, day=1))
        publisher.clear(1)  # (what the sweep does once the point is stored)
        publisher.second(token, 6.0, 1.0)  # a late second of the point stored: dropped
        assert publisher.flush(60)
        assert [r[0] for r in sidecar_rows(store)] == [2, 2]  # the other run's point goes on
        publish(publisher, 1, range(1, 3), stored_before=1)
        assert [(r[0], r[4]) for r in sidecar_rows(store)] == [(1, 1), (1, 1), (2, 0), (2, 0)]
    finally:
        publisher.close()


@pytest.mark.parametrize("ending", ["interrupted", "reaped", "forgotten", "closed"])
def test_a_run_that_ends_however_leaves_no_live_seconds(store: Path, ending: str) -> None:
    """Interrupted (the session marks it: finish_run), reaped by `cleanup` (which marks
    it through finish_run too), forgotten, or its publisher closed with a point in
    flight: its rows go, and the sidecar with them once no run holds any."""
    publisher = live.Publisher(store)
    publish(publisher, 1, range(1, 4))
    if ending == "interrupted":
        with Store(store) as db:
            db.finish_run(1, "interrupted")
    elif ending == "reaped":
        from dbarena.lifecycle import cleanup

        assert cleanup.mark_interrupted(str(store), 1, None, "dbarena was killed") == (True, None)
    elif ending == "forgotten":
        with Store(store) as db:
            db.forget_runs([1])
    else:
        publisher.close()
    assert not live.sidecar(store).exists()
    assert live.read_sidecar(live.sidecar(store), [1]) == {}  # missing: nothing live
    publisher.close()


def test_a_run_ending_leaves_another_runs_point_and_a_publisher_follows_a_new_sidecar(store: Path) -> None:
    one, two = live.Publisher(store), live.Publisher(store)  # (two runs writing one store)
    try:
        publish(one, 1, range(1, 3))
        publish(two, 2, range(1, 3))
        with Store(store) as db:
            db.finish_run(1, "finished")
        assert [r[0] for r in sidecar_rows(store)] == [2, 2]
        with Store(store) as db:
            db.finish_run(2, "finished")
        assert not live.sidecar(store).exists()
        publish(one, 1, range(3, 5))  # its file removed under it: it writes the new one
        assert [r[2] for r in sidecar_rows(store)] == [3.0, 4.0]
    finally:
        one.close()
        two.close()


def test_a_damaged_sidecar_is_made_anew_and_read_as_nothing_live(store: Path) -> None:
    """A sidecar of dbarena's damaged mid-write (its pages after SQLite's header
    overwritten, as a crash with synchronous OFF may leave them)."""
    publisher = live.Publisher(store)
    publish(publisher, 1, range(1, 3))
    publisher._queue.put(("close",))  # (its thread ended, the sidecar left behind)
    assert publisher._thread is not None
    publisher._thread.join()
    publisher._thread = None
    with open(live.sidecar(store), "r+b") as damaged:
        damaged.seek(16)
        damaged.write(b"not a database at all, " * 300)
    assert live.foreign(live.sidecar(store)) is None
    assert live.read_sidecar(live.sidecar(store), [1]) == {}
    publisher = live.Publisher(store)
    try:
        publish(publisher, 1, range(1, 3))
        assert [r[2] for r in sidecar_rows(store)] == [1.0, 2.0]
    finally:
        publisher.close()


def _victim(path: Path) -> bytes:
    """Another application's SQLite database: what a planted link points at."""
    db = sqlite3.connect(path)
    with db:
        db.execute("CREATE TABLE accounts (name TEXT, balance INTEGER)")
        db.execute("INSERT INTO accounts VALUES ('alice', 100)")
    db.close()
    return path.read_bytes()


def _refused(publisher: live.Publisher, run_id: int) -> str:
    token = publisher.begin(run_id, SPEC, "measured", 0, SPEC.duration_s)
    publisher.second(token, 1.0, 1000.0)
    assert publisher.flush(60)
    assert publisher.refused is not None and publisher.broken == publisher.refused
    return publisher.refused


@pytest.mark.parametrize("victim_kind", ["another application's database", "another dbarena store"])
def test_a_planted_symlink_to_a_victim_database_is_never_written_through(store: Path, tmp_path: Path,
                                                                           victim_kind: str) -> None:
    """STORE.live planted as a symbolic link to another SQLite file (the run may be
    root's): neither the live table nor a row is written into that file, nor is it
    cleared or removed; the link stays as planted and the run is told in one line."""
    victim = tmp_path / "victim.db"
    if victim_kind == "another dbarena store":
        with Store(victim):
            pass  # (it has a live_seconds table of its own: schema 19)
        before = victim.read_bytes()
    else:
        before = _victim(victim)
    live.sidecar(store).symlink_to(victim)
    refusal = live.refusal(store)
    assert refusal == (f"no live seconds for serve: {live.sidecar(store)} is a symbolic link; dbarena writes no "
                       "file it did not make")
    publisher = live.Publisher(store)
    try:
        assert _refused(publisher, 1) == refusal
        publish_more = publisher.begin(2, SPEC, "measured", 0, SPEC.duration_s)
        publisher.second(publish_more, 2.0, 1.0)
        assert publisher.flush(60)
    finally:
        publisher.close()
    with Store(store) as db:
        db.finish_run(1, "finished")  # (clears the sidecar: not through the link)
        db.forget_runs([2])
    assert victim.read_bytes() == before
    assert live.sidecar(store).is_symlink() and os.readlink(live.sidecar(store)) == str(victim)
    assert live.read_sidecar(live.sidecar(store), [1, 2]) == {}


def test_a_dangling_symlink_makes_no_file_at_its_target(store: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "made.db"
    target.parent.mkdir()
    live.sidecar(store).symlink_to(target)
    publisher = live.Publisher(store)
    try:
        assert "is a symbolic link" in _refused(publisher, 1)
    finally:
        publisher.close()
    assert not target.exists() and list(target.parent.iterdir()) == []
    assert live.sidecar(store).is_symlink()


def test_a_link_planted_after_the_check_is_refused_before_anything_is_written(store: Path, tmp_path: Path,
                                                                                monkeypatch) -> None:
    """The name swapped for a link between the publisher's check and SQLite's open
    (which follows links): the file SQLite opened is not the one examined, so nothing
    is written and the victim stays as it was."""
    victim = tmp_path / "victim.db"
    before = _victim(victim)
    real = live.foreign
    calls = []

    def swapped_after_check(path: Path) -> str | None:
        found = real(path)
        calls.append(path)
        if len(calls) == 2:  # the check after making the file, just before the open
            path.unlink()
            path.symlink_to(victim)
        return found

    monkeypatch.setattr(live, "foreign", swapped_after_check)
    publisher = live.Publisher(store)
    try:
        assert "was replaced as it was opened" in _refused(publisher, 1)
    finally:
        publisher.close()
    assert victim.read_bytes() == before


@pytest.mark.parametrize("planted, why", [
    ("a text file", "is not an SQLite database"),
    ("another user's", "belongs to another user"),
    ("a hard link", "has 2 links"),
    ("a directory", "is not a regular file"),
    ("a FIFO", "is not a regular file"),
])
def test_a_file_dbarena_did_not_make_at_the_sidecars_name_is_left_alone(store: Path, tmp_path: Path,
                                                                         planted: str, why: str) -> None:
    path = live.sidecar(store)
    if planted == "a text file":
        path.write_text("someone's notes\n")
    elif planted == "another user's":
        if os.geteuid() != 0:
            pytest.skip("only root gives a file to another user")
        sqlite3.connect(path).close()  # (an empty file, as the publisher makes one)
        os.chown(path, 65534, 65534)
    elif planted == "a hard link":
        victim = tmp_path / "victim.db"
        sqlite3.connect(victim).close()
        os.link(victim, path)
    elif planted == "a directory":
        path.mkdir()
    else:
        os.mkfifo(path)
    before = os.lstat(path)
    assert why in (live.foreign(path) or "")
    publisher = live.Publisher(store)
    try:
        assert why in _refused(publisher, 1)
    finally:
        publisher.close()
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode, after.st_size, after.st_mtime_ns) == (
        before.st_ino, before.st_mode, before.st_size, before.st_mtime_ns)


def test_rows_that_do_not_read_are_nothing_live() -> None:
    good = ["measured", "w", 1, 2, "", 0, 10.0, 0, 1.0, 5.0]
    assert live.live_point(1, [good]) is not None
    for bad in ([*good[:8], "x", 5.0], [*good[:9], float("nan")], [*good[:2], -1, *good[3:]], good[:9]):
        assert live.live_point(1, [good, bad]) is None, bad
    assert live.from_json(1, "[[1, 2") is None and live.from_json(1, None) is None


def test_a_reader_holding_the_sidecar_costs_seconds_not_the_publishing(store: Path) -> None:
    """A write that finds the sidecar locked (a reader, or another writer, holding it past
    the publisher's wait) loses those seconds; the next ones are written."""
    publisher = live.Publisher(store)
    try:
        publish(publisher, 1, range(1, 2))
        holder = sqlite3.connect(live.sidecar(store), isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        token = publish(publisher, 2, range(1, 3))  # (waits its second, then gives up on these)
        holder.execute("COMMIT")
        holder.close()
        publisher.second(token, 3.0, 3.0)
        assert publisher.flush(60)
        assert publisher.broken is None
        assert (2, "measured", 3.0, 3.0, 0) in sidecar_rows(store)
    finally:
        publisher.close()


def test_live_seconds_are_never_merged(store: Path, tmp_path: Path) -> None:
    """A store whose own live_seconds holds rows (as a PostgreSQL store's does while a
    run measures), and whose sidecar holds some: a merge of it copies its runs, none of
    those rows."""
    from dbarena.store.merge import merge

    publisher = live.Publisher(store)
    try:
        publish(publisher, 1, range(1, 4))
        with Store(store) as db, db.db:
            db.db.execute("INSERT INTO live_seconds VALUES (1, 'measured', 'w', 1, 1, '', 0, 10, 0, 1, 5)")
        into = tmp_path / "into.db"
        with Store(into) as db:
            merge(db, store)
            assert db.db.execute("SELECT count(*) FROM runs").fetchone()[0] == 2
            assert db.db.execute("SELECT count(*) FROM live_seconds").fetchone()[0] == 0
        assert not live.sidecar(into).exists()
    finally:
        publisher.close()
