"""`dbarena run --target URL` against an existing server (one the test starts with
dbarena's own throwaway instance), with passwords from PGPASSWORD and ~/.pgpass."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from conftest import LIGHT, cli_env, dbarena, error_line, processes_mentioning, store_holds
# `results` of a run's store runs in this process (tests/inprocess.py): it only reads the
# store, and a `python -m dbarena` costs half a second of CPU to start. The runs stay
# processes, and so does the command after a killed run (what the next process does of
# the killed one's leftovers is what that test tests).
from inprocess import dbarena as dbarena_here
from dbarena.engines import postgres

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server():
    with postgres.throwaway(settings={"max_connections": "20"}) as target:
        password = target.passfile.read_text().strip().rsplit(":", 1)[1]
        yield target, password


def test_target_with_password_from_pgpassword(server, public_tmp, tmp_path):
    target, password = server
    store = tmp_path / "r.db"
    done = dbarena("run", "--target", target.url, "--workload", "pgbench-simple-update", "--threads", "1",
                   "--duration", "1", "--scale", "1", "--server-cores", "2", "--server-threads", "4",
                   "--store", str(store), *LIGHT, env=cli_env(public_tmp, PGPASSWORD=password))
    assert done.returncode == 0, done.stderr
    assert password not in done.stdout + done.stderr
    assert not store_holds(store, password)
    row = sqlite3.connect(store).execute("SELECT target, options, target_facts FROM runs").fetchone()
    assert row[0] == target.url and json.loads(row[1])["targets"] == {"postgres": target.url}
    facts = json.loads(row[2])
    assert (facts["server_physical_cores"], facts["server_hardware_threads"]) == (2, 4)
    listed = dbarena_here("results", "--store", str(store), "--json", env=cli_env(public_tmp))
    assert json.loads(listed.stdout)[0]["status"] == "ok" and password not in listed.stdout


def test_target_with_password_from_pgpass_and_no_init(server, public_tmp, tmp_path):
    target, password = server
    home = tmp_path / "home"
    home.mkdir()
    (home / ".pgpass").write_text(f"127.0.0.1:*:*:dbarena:{password}\n")
    (home / ".pgpass").chmod(0o600)
    env = cli_env(public_tmp, HOME=str(home))
    env.pop("PGPASSFILE", None)
    # The dataset from the previous test (or a fresh one) is reused: init it once.
    first = dbarena("run", "--target", target.url, "--workload", "pgbench-select-only", "--threads", "1",
                    "--duration", "1", "--scale", "1", "--store", str(tmp_path / "a.db"), *LIGHT, env=env)
    assert first.returncode == 0, first.stderr
    again = dbarena("run", "--target", target.url, "--no-init", "--workload", "pgbench-select-only",
                    "--threads", "1", "--duration", "1", "--store", str(tmp_path / "b.db"), *LIGHT, env=env)
    assert again.returncode == 0, again.stderr
    assert "initialising" not in again.stderr


def test_refused_password_exit_3_and_never_shown(server, public_tmp, tmp_path):
    target, _ = server
    wrong = "not-the-password-3f9a"
    store = tmp_path / "r.db"
    done = dbarena("run", "--target", target.url, "--store", str(store), env=cli_env(public_tmp, PGPASSWORD=wrong))
    assert done.returncode == 3
    assert "password authentication failed" in error_line(done.stderr)
    assert "password authentication failed" in done.stderr and "PGPASSWORD" in done.stderr
    assert wrong not in done.stdout + done.stderr
    assert not store_holds(store, wrong)


def test_throwaway_postgres_requires_its_password(server, monkeypatch, tmp_path):
    import psycopg

    target, password = server
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
    for user in ("dbarena", "postgres"):
        url = target.url.replace("dbarena@", f"{user}@", 1)
        with pytest.raises(psycopg.OperationalError, match="password|does not exist"):
            psycopg.connect(url, connect_timeout=5)
    with psycopg.connect(target.url, password=password, connect_timeout=5) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_killed_run_on_a_target_reports_its_tables_and_leaves_them(server, public_tmp, tmp_path):
    import os
    import signal
    import time

    import psycopg

    from test_run import _start, _wait_for_line

    target, password = server
    store = tmp_path / "r.db"
    env = cli_env(public_tmp, PGPASSWORD=password, DBARENA_STATE_DIR=str(tmp_path / "state"))
    proc = _start(["run", "--target", target.url, "--workload", "sysbench-read-only", "--threads", "1",
                   "--duration", "30", "--tables", "2", "--table-size", "100", "--store", str(store), *LIGHT], env)
    _wait_for_line(proc, " on postgres: ")  # the plan line
    time.sleep(3)  # prepared, into the point
    load = f"--pgsql-port={target.conn.port}"
    assert processes_mentioning(load)  # sysbench is loading the server
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while processes_mentioning(load) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_mentioning(load)  # the watchdog stopped the load generator (30 s point)
    time.sleep(1)  # and marked the run
    shown = dbarena("results", "--store", str(store), env=env)
    assert shown.returncode == 0, shown.stderr
    line = next(l for l in shown.stderr.splitlines() if "sysbench tables may remain" in l)
    assert f"run 1 in {store} was killed on {target.url}: sysbench tables may remain; drop them with: " in line
    assert re.search(r"drop them with: \S*sysbench oltp_read_write .*--tables=2 .*cleanup$", line), line
    assert password not in line
    # dbarena dropped nothing: the tables are there until the user runs that command.
    with psycopg.connect(target.url, password=password) as conn:
        assert conn.execute("SELECT count(*) FROM sbtest1").fetchone()[0] == 100
        conn.execute("DROP TABLE sbtest1, sbtest2")
    run = sqlite3.connect(store).execute("SELECT status, status_reason FROM runs").fetchone()
    assert run == ("interrupted", "killed")
