"""A study file's archive_command runs only with the user's word (issue 46): refused in
one line without --allow-commands, and with it really given to a real PostgreSQL,
which runs it."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest

from conftest import cli_env, dbarena, error_line

pytestmark = pytest.mark.e2e


@pytest.fixture
def drop_box():
    """A directory the throwaway server's unprivileged user may write its marker to."""
    path = Path(tempfile.mkdtemp(prefix="dbarena-consent-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_a_studys_archive_command_runs_only_with_allow_commands(public_tmp, tmp_path, drop_box):
    marker = drop_box / "archived"
    study = tmp_path / "archiving.toml"
    # archive_timeout = 1: a WAL segment is switched, and so archived, every second of
    # activity: the 5 s point of --quick is enough to see the command run.
    study.write_text(f'schema = 1\nname = "archiving"\n[sweep]\nlevels = [1]\n'
                     f'[engines.postgres]\nsettings = {{ archive_mode = "on", archive_timeout = "1", '
                     f'archive_command = "touch {marker}" }}\n'
                     f'[[workloads]]\nworkload = "pgbench-tpcb"\n')
    store = tmp_path / "r.db"
    args = ("run", "--study", str(study), "--quick", "--no-probe", "--store", str(store))

    refused = dbarena(*args, env=cli_env(public_tmp))
    assert refused.returncode == 2, refused.stderr
    line = error_line(refused.stderr)
    assert refused.stderr == line  # one line, before anything is said of the plan
    assert f"engines.postgres.settings.archive_command = 'touch {marker}' (runs a shell command)" in line
    assert "--allow-commands" in line
    assert not marker.exists() and not store.exists() and list(public_tmp.iterdir()) == []

    allowed = dbarena(*args, "--allow-commands", env=cli_env(public_tmp), timeout=300)
    assert allowed.returncode == 0, allowed.stderr[-3000:]
    assert marker.exists()  # the server ran the study's command
    ok = sqlite3.connect(store).execute("SELECT COUNT(*) FROM points WHERE status = 'ok'").fetchone()[0]
    assert ok >= 1
