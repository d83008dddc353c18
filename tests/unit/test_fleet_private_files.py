"""fleet/playbooks/private_files.py, the one task of together.yml that writes a step's
passwords and request into the host's working directory: each file its user's alone
(0600, whatever was there), whole or absent, under a plain name only."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import dbarena.fleet

SCRIPT = Path(dbarena.fleet.__file__).parent / "playbooks" / "private_files.py"


def _run(directory: Path, files: dict) -> subprocess.CompletedProcess:
    # As the play runs it: its text as `python3 -I -S -c`, the directory its one argument.
    return subprocess.run([sys.executable, "-I", "-S", "-c", SCRIPT.read_text(), str(directory)],
                          input=json.dumps(files), capture_output=True, text=True, timeout=60)


def test_each_file_is_written_whole_for_its_user_only(tmp_path):
    (tmp_path / "request.json").write_text("the last step's, longer than this one's")
    (tmp_path / "request.json").chmod(0o644)
    (tmp_path / ".secrets.json.writing").write_text("an interrupted write's")
    (tmp_path / ".secrets.json.writing").chmod(0o666)
    done = _run(tmp_path, {"secrets.json": '{"PGPASSWORD": "p"}', "request.json": "{}", "absent.json": None})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "secrets.json").read_text() == '{"PGPASSWORD": "p"}'
    assert (tmp_path / "request.json").read_text() == "{}"
    assert not (tmp_path / "absent.json").exists()
    for name in ("secrets.json", "request.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o600, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["request.json", "secrets.json"]


def test_a_link_planted_at_its_temporary_name_is_not_followed(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("untouched")
    work = tmp_path / "work"
    work.mkdir()
    os.symlink(elsewhere, work / ".request.json.writing")
    done = _run(work, {"request.json": "{}"})
    assert done.returncode != 0 and elsewhere.read_text() == "untouched"


@pytest.mark.parametrize("name", ["../x", "a/b", "..", ""])
def test_only_a_plain_file_name_is_written(tmp_path, name):
    done = _run(tmp_path, {name: "x"})
    assert done.returncode != 0 and "not a file name" in done.stderr
    assert list(tmp_path.iterdir()) == []
