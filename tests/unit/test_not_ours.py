"""What is not dbarena's is neither replaced nor written through nor deleted (issue 53):
an output file (`publish -o`, `report -o`, `cloud prices -o`) that exists and is not a
regular file, or is a symbolic link, is refused in one line and left as it was; a store
path that is not a regular file is refused before SQLite opens it (SQLite would make
`NAME-journal` beside it: /dev/null-journal, as root)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from conftest import cli_env, error_line
from inprocess import dbarena

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "demo-seed-a-quick.db"
ROOT = os.geteuid() == 0


@pytest.fixture
def store(tmp_path: Path) -> Path:
    shutil.copyfile(DEMO, tmp_path / "s.db")
    return tmp_path / "s.db"


def _device(path: Path) -> Path:
    """A character device of this test's own: /dev/null's numbers (1, 3), so that a
    dbarena that replaced it would not break the machine's."""
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return path


def _destinations(tmp_path: Path) -> list[tuple[Path, str]]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "real.tar").write_bytes(b"mine")
    out = [(fifo, "it is a FIFO, not a regular file"),
           (tmp_path / "to-stdout", "it is a symbolic link"),
           (tmp_path / "to-file", "it is a symbolic link")]
    (tmp_path / "to-stdout").symlink_to("/proc/self/fd/1")
    (tmp_path / "to-file").symlink_to(tmp_path / "real.tar")
    if ROOT:
        out.append((_device(tmp_path / "null"), "it is a character device, not a regular file"))
    return out


def _unchanged(tmp_path: Path) -> None:
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)
    assert os.readlink(tmp_path / "to-stdout") == "/proc/self/fd/1"
    assert os.readlink(tmp_path / "to-file") == str(tmp_path / "real.tar")
    assert (tmp_path / "real.tar").read_bytes() == b"mine"
    if ROOT:
        assert stat.S_ISCHR(os.lstat(tmp_path / "null").st_mode)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("command", [
    ("publish", "--run", "1", "--unsigned"),
    ("report", "--label", "seed-a"),
    ("report", "--format", "md"),
])
def test_an_output_that_is_not_a_regular_file_is_refused_and_left_alone(command, store, tmp_path):
    for destination, why in _destinations(tmp_path):
        done = dbarena(*command, "--store", str(store), "-o", str(destination), env=cli_env(tmp_path))
        assert done.returncode == 2, (destination, done.stderr)
        assert error_line(done.stderr).strip() == f"dbarena: error: cannot write {destination}: {why}" + (
            " (dbarena neither replaces one nor writes through it): give the file it names, or another path"
            if "symbolic" in why else " (dbarena replaces only those): give another path")
    _unchanged(tmp_path)


def test_a_regular_file_is_replaced_as_before(store, tmp_path):
    (tmp_path / "b.tar").write_bytes(b"old")
    done = dbarena("publish", "--run", "1", "--unsigned", "--store", str(store), "-o", str(tmp_path / "b.tar"),
                   env=cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "b.tar").read_bytes()[:13] == b"manifest.json"


def test_the_charts_folder_of_a_markdown_report_is_not_written_through_a_link(store, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "r_files").symlink_to(elsewhere)
    done = dbarena("report", "--store", str(store), "-o", str(tmp_path / "r.md"), env=cli_env(tmp_path))
    assert done.returncode == 2, done.stderr
    assert error_line(done.stderr).strip() == (f"dbarena: error: cannot write charts into {tmp_path / 'r_files'}: it is a "
                                       f"symbolic link, not a directory")
    assert not any(elsewhere.iterdir())


@pytest.mark.skipif(not ROOT, reason="the device is made with mknod, as root")
def test_dev_null_stays_a_character_device(store, tmp_path):
    for command in (("publish", "--run", "1", "--unsigned"), ("report",)):
        done = dbarena(*command, "--store", str(store), "-o", "/dev/null", env=cli_env(tmp_path))
        assert done.returncode == 2, done.stderr
        assert "it is a character device, not a regular file" in error_line(done.stderr)
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_a_store_that_is_not_a_regular_file_is_refused_and_nothing_made_beside_it(tmp_path):
    bundle = tmp_path / "b.tar"
    shutil.copyfile(DEMO, tmp_path / "s.db")
    done = dbarena("publish", "--run", "1", "--unsigned", "--store", str(tmp_path / "s.db"), "-o", str(bundle),
                   env=cli_env(tmp_path))
    assert done.returncode == 0, done.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    stores = [(fifo, "a FIFO")]
    if ROOT:
        stores.append((_device(tmp_path / "null"), "a character device"))
    before = sorted(p.name for p in tmp_path.iterdir())
    for path, kind in stores:
        done = dbarena("import", str(bundle), "--store", str(path), env=cli_env(tmp_path))
        assert done.returncode != 0, done.stderr
        assert error_line(done.stderr).strip() == f"dbarena: error: store {path}: it is {kind}, not a regular file"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no NAME-journal


@pytest.mark.parametrize("text", ["file:///etc/passwd: cannot read it", "cannot read /etc/passwd: Permission denied",
                                  r"C:\secrets\db-password: not found", "/srv/my-passwd: no such file"])
def test_a_file_named_like_a_password_is_no_password_and_its_message_stays_whole(text):
    from dbarena.masking import masked

    assert masked(text) == text


@pytest.mark.parametrize("text, shown", [
    ("password: hunter2", "password: ***"), ("spring.datasource.password: hunter2", "spring.datasource.password: ***"),
    ("host=h password = hunter2", "host=h password = ***"), ("x;PGPASSWORD=hunter2", "x;PGPASSWORD=***"),
    ("postgresql://u:hunter2@h/db: refused", "postgresql://u:***@h/db: refused"),
    ("--pgsql-password=hunter2", "--pgsql-password=***")])
def test_real_passwords_are_still_masked(text, shown):
    from dbarena.masking import masked

    assert masked(text) == shown


def test_an_error_naming_such_a_file_is_said_whole(store, tmp_path):
    done = dbarena("report", "--store", str(store), "-o", str(tmp_path / "nowhere" / "passwd"), env=cli_env(tmp_path))
    assert error_line(done.stderr).strip() == (f"dbarena: error: cannot write {tmp_path}/nowhere/passwd: directory "
                                               f"{tmp_path}/nowhere does not exist")
