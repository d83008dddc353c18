"""The file a point the store could not take is saved in (lifecycle/unsaved.py) may land in
the shared temporary directory (issue 46: its name was predictable and its write
followed a symbolic link planted there): a random part in its name, created new (never
through a link, never over a file), readable by its owner alone, and `import` reads it."""

from __future__ import annotations

import os
import stat
from datetime import datetime, timezone
from pathlib import Path

import pytest

from dbarena.importers import reading
from dbarena.errors import StoreError
from dbarena.lifecycle import unsaved
from dbarena.model import PointResult, PointSpec

PG_OUT = Path(__file__).resolve().parent.parent / "fixtures" / "pgbench" / "corpus" / "pg16.6-select-only-S-r.txt"
ENDED = datetime(2026, 11, 26, 11, 40, 5, tzinfo=timezone.utc)
RESULT = PointResult(spec=PointSpec(engine="postgres", workload="pgbench-select-only", threads=4, clients=8,
                                    duration_s=60), status="ok", started_at=ENDED, ended_at=ENDED,
                     command=("/usr/bin/pgbench", "-S", "-c", "8", "-j", "4", "-T", "60", "bench"), exit_code=0,
                     stdout=PG_OUT.read_text(), stderr="")
# The name dbarena gave before: known to anyone who knows when a point ended.
PREDICTABLE = "dbarena-unsaved-20261126T114005-postgres-pgbench-select-only-t4-r0.txt"


def test_a_link_planted_at_the_old_name_is_not_followed_and_the_file_is_private(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("not dbarena's\n")
    (tmp_path / PREDICTABLE).symlink_to(victim)
    saved = unsaved.save(RESULT, tmp_path / "r.db")
    assert victim.read_text() == "not dbarena's\n"
    assert saved.parent == tmp_path and saved.name != PREDICTABLE and not saved.is_symlink()
    assert saved.name.startswith("dbarena-unsaved-20261126T114005-") and saved.name.endswith(
        "-postgres-pgbench-select-only-t4-r0.txt")
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert unsaved.save(RESULT, tmp_path / "r.db") != saved  # another name each time
    (point,) = reading.read(saved.name, saved.read_text(), label="x", engine="postgres", tool="auto", workload=None)
    assert point.result.spec.threads == 4 and point.result.measurement is not None


def test_a_file_already_at_the_name_is_left_and_the_next_folder_taken(tmp_path, monkeypatch):
    """Whoever guessed the random part made a file there first: it is not written over
    (O_EXCL) nor removed; the point goes to the temporary directory instead."""
    beside, elsewhere = tmp_path / "store", tmp_path / "tmp"
    beside.mkdir()
    elsewhere.mkdir()
    monkeypatch.setattr(unsaved.secrets, "token_hex", lambda n: "guessed0")
    planted = beside / "dbarena-unsaved-20261126T114005-guessed0-postgres-pgbench-select-only-t4-r0.txt"
    planted.write_text("theirs")
    monkeypatch.setattr(unsaved.tempfile, "gettempdir", lambda: str(elsewhere))
    saved = unsaved.save(RESULT, beside / "r.db")
    assert planted.read_text() == "theirs" and saved.parent == elsewhere


def test_nowhere_to_save_is_one_error_naming_each_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(unsaved.tempfile, "gettempdir", lambda: str(tmp_path / "gone"))
    monkeypatch.setattr(unsaved.Path, "home", lambda: tmp_path / "gone-too")
    with pytest.raises(StoreError) as caught:
        unsaved.save(RESULT, tmp_path / "missing" / "r.db")
    assert str(caught.value).count("No such file or directory") == 3
    assert os.listdir(tmp_path) == []
