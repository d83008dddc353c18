"""`dbarena merge` and `store info`: stores from other hosts come together once, whole,
through a migrated copy; a damaged or newer file adds nothing."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from dbarena.errors import StoreError
from dbarena.store.database import Store
from dbarena.store.merge import merge
from dbarena.store.migrations import MIGRATIONS, SCHEMA_VERSION

import inprocess

STORES = Path(__file__).resolve().parent.parent / "fixtures" / "stores"


def cli(*args: str) -> subprocess.CompletedProcess:
    """The command, in process (tests/inprocess.py)."""
    return inprocess.dbarena(*args)


def counts(path: Path) -> tuple[int, ...]:
    db = sqlite3.connect(path)
    try:
        return tuple(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                     for t in ("runs", "points", "samples", "system_samples", "raw_outputs"))
    finally:
        db.close()


def as_host(source: Path, folder: Path, host: str, label: str) -> Path:
    """A copy of a historic store as if measured on another machine, under another label."""
    path = folder / f"{host}.db"
    shutil.copy(source, path)
    with Store(path) as db:
        facts = {**db.runs()[0].host_facts, "hostname": host}
        with db.db:
            fingerprint = db._host(facts)
            db.db.execute("UPDATE runs SET label = ?, host = ?, host_fingerprint = ?", (label, host, fingerprint))
    return path


@pytest.mark.slow  # several seconds: `make test` runs it, `make check` does not
def test_two_hosts_merge_into_one_store_once_and_report_side_by_side(tmp_path):
    arm = as_host(STORES / "v9.db", tmp_path, "arm-box", "arm")
    x86 = as_host(STORES / "v9.db", tmp_path, "x86-box", "x86")
    merged = tmp_path / "all.db"
    done = cli("merge", str(arm), str(x86), "--store", str(merged))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{arm}: 3 run(s), 13 point(s) merged into {merged}",
                                        f"{x86}: 0 run(s), 0 point(s) merged into {merged} "
                                        "(all its runs were here already)"]
    # The copies share their runs' identities (one measurement, relabelled): once only.
    # Two real hosts have their own runs:
    with Store(x86) as db, db.db:
        db.db.execute("UPDATE runs SET uuid = 'x86-' || uuid")
    again = cli("merge", str(x86), str(arm), "--store", str(merged))
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[1].endswith("(all its runs were here already)")
    assert counts(merged) == tuple(a + b for a, b in zip(counts(arm), counts(x86)))
    info = json.loads(cli("store", "info", "--json", "--store", str(merged)).stdout)
    assert (info["schema_version"], info["runs"], info["hosts"]) == (SCHEMA_VERSION, 6, 2)
    assert info["labels"] == ["arm", "x86"]
    report = cli("report", "-o", str(tmp_path / "r.md"), "--store", str(merged))
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "r.md").read_text()
    assert "arm" in text and "x86" in text
    with Store(merged) as db:  # raw outputs came along, readable
        point = db.points()[-1]
        out, _ = db.raw_output(point.point_id)
        assert out


def test_an_older_store_merges_through_a_migrated_copy_and_stays_as_it_was(tmp_path):
    old = tmp_path / "v1.db"
    shutil.copy(STORES / "v1.db", old)
    with Store(tmp_path / "all.db") as db:
        assert merge(db, old) == (1, 2)
        assert merge(db, old) == (0, 0)  # derived identities: the same runs again
        assert db.points()[0].config_key
    assert sqlite3.connect(old).execute("PRAGMA user_version").fetchone()[0] == 1


def test_a_damaged_or_newer_store_adds_nothing(tmp_path):
    target = tmp_path / "all.db"
    with Store(target) as db:
        merge(db, STORES / "v5.db")
    before = counts(target)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    damaged = tmp_path / "damaged.db"
    data = bytearray((STORES / "v9.db").read_bytes())
    data[len(data) // 2: len(data) // 2 + 8192] = b"\xff" * 8192  # pages in the middle overwritten
    damaged.write_bytes(bytes(data))
    newer = tmp_path / "newer.db"
    shutil.copy(STORES / "v9.db", newer)
    con = sqlite3.connect(newer)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    for bad, words in ((garbage, "not a database"), (damaged, "malformed"), (newer, "newer than this dbarena")):
        with Store(target) as db, pytest.raises(StoreError) as caught:
            merge(db, bad)
        assert str(bad) in str(caught.value) and words in str(caught.value), str(caught.value)
        assert counts(target) == before
    done = cli("merge", str(newer), "--store", str(target))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "newer" in done.stderr


def test_the_same_file_imported_into_two_stores_merges_once(tmp_path):
    sample = Path(__file__).resolve().parent.parent / "fixtures" / "pgbench" / "captured" / \
        "pg15.18-select-only-S-P1.stdout"
    for name in ("one.db", "two.db"):
        done = cli("import", str(sample), "--label", "imported", "--engine", "postgres",
                   "--store", str(tmp_path / name))
        assert done.returncode == 0, done.stderr
    with Store(tmp_path / "one.db") as db:
        assert merge(db, tmp_path / "two.db") == (0, 0)


def test_a_migration_stopped_before_its_data_step_is_finished_on_the_next_open(tmp_path):
    path = tmp_path / "half.db"
    shutil.copy(STORES / "v9.db", path)
    con = sqlite3.connect(path)  # schema 10 and 11 applied, the data step of 11 never ran
    con.executescript("BEGIN;" + MIGRATIONS[9] + MIGRATIONS[10] + "PRAGMA user_version = 11; COMMIT;")
    con.close()
    with Store(path) as db:
        assert db.db.execute("SELECT COUNT(*) FROM runs WHERE uuid IS NULL OR host_fingerprint IS NULL"
                             ).fetchone()[0] == 0
        point = db.points()[0].point_id
        assert db.raw_output(point)[0]


def test_two_hosts_under_one_label_are_pooled_only_with_a_warning(tmp_path):
    from dbarena.stats import analysis

    one = as_host(STORES / "v9.db", tmp_path, "box-1", "same")
    two = as_host(STORES / "v9.db", tmp_path, "box-2", "same")
    with Store(two) as db, db.db:
        db.db.execute("UPDATE runs SET uuid = 'two-' || uuid")
    with Store(tmp_path / "all.db") as db:
        merge(db, one)
        merge(db, two)
        groups = [g for g in analysis.summaries(analysis.load(db)) if g.n]
    assert groups
    for g in groups:
        codes = [w["code"] for w in g.warnings]
        assert "several-hosts" in codes, g.warnings
        message = next(w["message"] for w in g.warnings if w["code"] == "several-hosts")
        assert "box-1, box-2" in message
