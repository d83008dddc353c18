"""Finding the machine's PostgreSQL binaries, and --keep."""

from __future__ import annotations

import os
import re
import shutil
import signal
import time

import pytest

from conftest import cli_env, dbarena, processes_mentioning
from dbarena import execute
from dbarena.engines import postgres_binaries
from dbarena.errors import ToolMissing

pytestmark = pytest.mark.e2e


def test_finds_the_newest_installed_server():
    found = postgres_binaries.find_server_binaries()
    assert (found.bindir / "initdb").exists() and (found.bindir / "postgres").exists()
    # No other installation on the search path is newer.
    for d in postgres_binaries.candidate_bindirs():
        if (d / "postgres").is_file() and (d / "initdb").is_file():
            assert postgres_binaries.parse_version(execute.version_line(d / "postgres")) <= found.version
    assert postgres_binaries.find_client("pgbench").exists()


def test_a_directory_without_binaries_is_refused(tmp_path):
    with pytest.raises(ToolMissing, match="apt-get install postgresql"):
        postgres_binaries.find_server_binaries(tmp_path)


@pytest.mark.parametrize("line, version", [
    ("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)", (15, 18)),
    ("postgres (PostgreSQL) 9.6.24", (9, 6)),
    ("postgres (PostgreSQL) 18beta1", (18, 0)),
    ("something else", None),
])
def test_parse_version(line, version):
    assert postgres_binaries.parse_version(line) == version


def test_keep_leaves_a_usable_instance(public_tmp, tmp_path):
    done = dbarena("run", "--keep", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "1",
                   "--scale", "1", "--store", str(tmp_path / "r.db"),
                   env=cli_env(public_tmp, DBARENA_STATE_DIR=str(tmp_path / "state")))
    try:
        assert done.returncode == 0, done.stderr
        note = re.search(r"kept the throwaway PostgreSQL: (\S+) \(pid (\d+)\)", done.stderr)
        assert note, done.stderr
        pid = int(note[2])
        assert any(line.startswith(f"{pid}:") for line in processes_mentioning(str(public_tmp)))
    finally:
        for line in processes_mentioning(str(public_tmp)):
            if " -D " in line:
                os.kill(int(line.split(":")[0]), signal.SIGINT)
        deadline = time.monotonic() + 30
        while processes_mentioning(str(public_tmp)) and time.monotonic() < deadline:
            time.sleep(0.2)
        for child in public_tmp.iterdir():
            shutil.rmtree(child, ignore_errors=True)
