"""A study file's archive_command runs only with the user's word (issue 46): refused in
one line without --allow-commands, and with it really given to a real PostgreSQL,
which runs it."""

from __future__ import annotations

import shutil
import re
import sqlite3
import tempfile
from pathlib import Path

import pytest

from conftest import LIGHT, cli_env, dbarena, error_line
# publish and import only read and write stores and files: run in this process
# (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each to start.
# The runs (and the runs refused before anything starts) stay processes.
from inprocess import dbarena as dbarena_here

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

    # At 50 TPS (conftest.LIGHT): what is looked at is whether the command ran, not how
    # fast; a transaction a second would still switch and archive a segment each second.
    allowed = dbarena(*args, "--allow-commands", *LIGHT, env=cli_env(public_tmp), timeout=300)
    assert allowed.returncode == 0, allowed.stderr[-3000:]
    assert marker.exists()  # the server ran the study's command
    ok = sqlite3.connect(store).execute("SELECT COUNT(*) FROM points WHERE status = 'ok'").fetchone()[0]
    assert ok >= 1


def test_a_bundles_or_a_stored_runs_archive_command_needs_allow_commands_too(public_tmp, tmp_path, drop_box):
    """The settings a run stored (its publisher's typed flags) come with its bundle:
    `run --like` of it, and `run --resume` of it imported, are refused without
    --allow-commands before anything starts, the setting named (issue 53)."""
    marker = drop_box / "archived"
    study = tmp_path / "plain.toml"
    study.write_text('schema = 1\nname = "plain"\n[sweep]\nlevels = [1]\n[engines.postgres]\n'
                     '[[workloads]]\nworkload = "pgbench-tpcb"\n')
    env = cli_env(public_tmp)
    theirs = tmp_path / "theirs.db"
    # The publisher typed the command (their own consent): it is stored with their run.
    done = dbarena("run", "--study", str(study), "--quick", "--no-probe", "--label", "theirs", "--store", str(theirs),
                   "--pg-setting", "archive_mode=on", "--pg-setting", "archive_timeout=1",
                   "--pg-setting", f"archive_command=touch {marker}", *LIGHT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert marker.exists()
    marker.unlink()
    bundle = tmp_path / "theirs.tar"
    done = dbarena_here("publish", "--store", str(theirs), "--label", "theirs", "--unsigned", "-o", str(bundle),
                        env=env)
    assert done.returncode == 0, done.stderr
    # (As published: publish writes the machine's temporary directory as $TMPDIR.)
    setting = re.escape("engines.postgres.settings.archive_command = 'touch ") + r"(\$TMPDIR)?[^']*" + \
        re.escape(f"{marker.name}' (runs a shell command)")

    mine = tmp_path / "mine.db"
    refused = dbarena("run", "--like", str(bundle), "--quick", "--no-probe", "--store", str(mine), env=env)
    assert refused.returncode == 2, refused.stderr[-3000:]
    line = error_line(refused.stderr)
    assert refused.stderr == line and re.match(re.escape(f"dbarena: error: --like {bundle}: ") + setting, line), line
    assert "--allow-commands" in line
    assert not marker.exists() and not mine.exists()

    # Imported, a point of its run left to do (as an interrupted run leaves one), resumed.
    done = dbarena_here("import", str(bundle), "--store", str(mine), env=env)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(mine) as db:
        db.execute("UPDATE points SET status = 'failed' WHERE id = (SELECT MAX(id) FROM points)")
    db.close()
    refused = dbarena("run", "--resume", "--no-probe", "--store", str(mine), env=env)
    assert refused.returncode == 2, refused.stderr[-3000:]
    line = error_line(refused.stderr)
    assert refused.stderr == line and re.match(re.escape("dbarena: error: --resume latest (the stored run's study and "
                                                         "flags): ") + setting, line), line
    assert not marker.exists()
