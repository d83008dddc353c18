"""A store that stops taking writes between two points of a real run (a real throwaway
PostgreSQL, real pgbench, the real CLI): the sweep stops, the throwaway server goes, the
point it could not store is saved in a file `dbarena import` reads, one line says so and
the exit status is not 0, and the run ends `interrupted`: marked at once when the store
takes that write again, else by the next command once it does, then resumed.

What makes the store unwritable is real, and deterministic as root (which chmod does not
stop): the store's directory made immutable (`chattr +i`), so that SQLite cannot create
the journal every write needs; the store file replaced by a copy (`mv`). A full disk is
test_kill.py's; a PostgreSQL store whose connection drops is test_pg_store.py's."""

from __future__ import annotations

import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import LIGHT, cli_env, dbarena
# The commands after a run (results, import) only read and write the store and files:
# run in this process (tests/inprocess.py), not as `python -m dbarena`, half a second of
# CPU each to start; what they do to the run left behind (marked interrupted, its records
# reaped) is done here as in a process of their own. The runs stay processes.
from inprocess import dbarena as dbarena_here
from test_kill import _servers, _within
from test_run import _start, _wait_for_line

pytestmark = pytest.mark.e2e

POINTS = ["--workload", "pgbench-select-only", "--threads", "1,2,3", "--duration", "3", "--scale", "1", *LIGHT]


@pytest.fixture
def env(public_tmp, tmp_path):
    # A state directory of the test's own, so that it sees only what it made.
    return cli_env(public_tmp, DBARENA_STATE_DIR=str(tmp_path / "state"))


@pytest.fixture
def sealable(tmp_path):
    """A directory for the store that the test can make immutable (chattr +i: nobody,
    root included, can create a file in it), made mutable again whatever happens."""
    folder = tmp_path / "store"
    folder.mkdir()
    yield folder
    subprocess.run(["chattr", "-i", str(folder)], check=False)


def _chattr(flag: str, folder: Path) -> None:
    done = subprocess.run(["chattr", flag, str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"chattr {flag} {folder}: {done.stderr.strip()} (the e2e tests run as root on ext4 or tmpfs)")


def _rows(store: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return db.execute(sql).fetchall()


def _the_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("dbarena: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _saved_point(line: str, stored: list[tuple]) -> Path:
    """The file the line names, checked to hold the point after the last one stored."""
    found = re.search(r"the point just measured is saved in (\S+) \(dbarena import (\S+) --label LABEL", line)
    assert found and found[1] == found[2], line
    saved = Path(found[1])
    assert [t for t, _ in stored] == list(range(1, len(stored) + 1)) and all(s == "ok" for _, s in stored), stored
    assert saved.name.endswith(f"-postgres-pgbench-select-only-t{len(stored) + 1}-r0.txt"), saved
    return saved


def test_a_store_whose_directory_turns_unwritable_between_points_loses_nothing(public_tmp, tmp_path, env,
                                                                                sealable):
    store = sealable / "r.db"
    proc = _start(["run", *POINTS, "--store", str(store)], env)
    _wait_for_line(proc, "ok     postgres pgbench-select-only threads=1")
    # Between points: the next point's commit needs a journal SQLite can no longer create.
    # (A test slowed past the second point's 3 s makes the third the one refused.)
    _chattr("+i", sealable)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    line = _the_error(err)
    assert line.startswith(f"dbarena: error: store {store} cannot be written: unable to open database file; "), line
    stored = _rows(store, "SELECT threads, status FROM points ORDER BY id")
    assert 1 <= len(stored) <= 2
    saved = _saved_point(line, stored)
    assert saved.parent == public_tmp  # not beside the store: nothing can be made there
    # The store still cannot be written at the end: said, and the run left to be marked.
    assert line.endswith("; run 1 could not be marked interrupted (the store still cannot be written): "
                         "the next dbarena command marks it once it can"), line
    assert _rows(store, "SELECT status FROM runs") == [("running",)]
    # The sweep stopped cleanly: no server, nothing left but the saved point.
    assert _within(10, lambda: not _servers(public_tmp)), _servers(public_tmp)
    assert list(public_tmp.iterdir()) == [saved]

    # Writable again: the next command, whatever it is, marks the run (the watchdog may
    # have done it first: it tries when dbarena exits), and never shows it running.
    _chattr("-i", sealable)
    shown = dbarena_here("results", "--store", str(store), env=env)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    assert _rows(store, "SELECT status, status_reason FROM runs") == [("interrupted", "store unwritable")]
    assert not list((tmp_path / "state" / "records").glob("*.json"))

    # The saved point reads back whole, into the same store once it takes writes.
    imported = dbarena_here("import", str(saved), "--label", "rescued", "--store", str(store), env=env)
    assert imported.returncode == 0, imported.stderr
    ((threads, status, tps),) = _rows(store, "SELECT p.threads, p.status, p.tps FROM points p JOIN runs r "
                                             "ON r.id = p.run_id WHERE r.label = 'rescued'")
    assert (threads, status) == (len(stored) + 1, "ok") and f"{tps:.6f}" in saved.read_text()

    # And the run continues where it stopped.
    resumed = dbarena("run", "--resume", "1", "--store", str(store), env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert _rows(store, "SELECT status FROM runs WHERE id = 1") == [("finished",)]
    assert _rows(store, "SELECT threads FROM points WHERE run_id = 1 AND status = 'ok' ORDER BY threads") == [
        (1,), (2,), (3,)]
    saved.unlink()
    assert list(public_tmp.iterdir()) == []


def test_a_store_file_replaced_during_a_run_is_not_written_into_the_void(public_tmp, tmp_path, env):
    """`mv copy.db r.db` while a run writes r.db: SQLite would go on writing into the file
    it holds open, which nobody reads any more. The run stops at its next write instead,
    and is marked interrupted in the file now at that path, which holds it (a copy)."""
    store = tmp_path / "r.db"
    proc = _start(["run", *POINTS, "--store", str(store)], env)
    _wait_for_line(proc, "ok     postgres pgbench-select-only threads=1")
    copy = tmp_path / "copy.db"
    with sqlite3.connect(store) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # consistent, while the run may write
    copy.replace(store)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, err
    line = _the_error(err)
    assert line.startswith(f"dbarena: error: store {store} cannot be written: {store} was replaced by another file "
                           f"since dbarena opened it; "), line
    saved = _saved_point(line, _rows(store, "SELECT threads, status FROM points ORDER BY id"))
    assert saved.parent == tmp_path  # beside the store
    assert line.endswith(f"; run 1 is marked interrupted (`dbarena run --resume 1 --store {store}` continues it)"), line
    assert _rows(store, "SELECT status, status_reason FROM runs") == [("interrupted", "store unwritable")]
    assert _within(10, lambda: not _servers(public_tmp)) and list(public_tmp.iterdir()) == []
    assert not list((tmp_path / "state" / "records").glob("*.json"))
    imported = dbarena_here("import", str(saved), "--label", "rescued", "--store", str(tmp_path / "other.db"), env=env)
    assert imported.returncode == 0, imported.stderr
