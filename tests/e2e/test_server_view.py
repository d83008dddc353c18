"""The server's own view of each point (serverside/, stats/bound.py) with real servers:
a contended pgbench is lock-bound with its wait events named, select-only is not, a
CHECKPOINT forced during a point is found at its second, a --target run stores the
series too (and a target the point's clients fill is measured without it), and
MariaDB's update_index on a one-row table is lock-bound on its row lock waits."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest

from conftest import LIGHT, cli_env, dbarena, store_holds
# `results` only reads the store: run in this process (tests/inprocess.py), not as
# `python -m dbarena`, half a second of CPU each to start. The runs stay processes.
from inprocess import dbarena as dbarena_here
from dbarena.engines import postgres
from dbarena.stats import analysis, bound
from dbarena.store.database import Store

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def server():
    with postgres.throwaway(settings={"max_connections": "40"}) as target:
        password = target.passfile.read_text().strip().rsplit(":", 1)[1]
        yield target, password


def _series(store) -> list[dict]:
    """Each measured point's stored server series, and the bound derived from it (the
    store keeps the series, not the verdict: stats/analysis derives it)."""
    with Store(store) as analysed:
        derived = {p.point_id: (p.bound, p.bound_evidence) for p in analysis.load(analysed)}
    db = sqlite3.connect(store)
    rows = db.execute("SELECT p.id, p.status, p.error, p.started_at, s.record FROM points p"
                      " LEFT JOIN server_series s ON s.point_id = p.id WHERE p.phase = 'measured' ORDER BY p.id")
    out = []
    for pid, status, error, started, record in rows.fetchall():
        assert status == "ok", error
        kind, evidence = derived[pid]
        out.append({"point_id": pid, "started_at": started, "bound": kind, "evidence": evidence,
                    "record": json.loads(record) if record is not None else None})
    db.close()
    return out


def _share(record: dict, prefix: str) -> float:
    waits = {k: sum(v) for k, v in record["series"].items() if k.startswith("wait.")}
    return sum(c for k, c in waits.items() if k.startswith(prefix)) / (sum(waits.values()) or 1)


def test_contended_tpcb_on_a_target_is_lock_bound_with_its_wait_events_named(server, public_tmp, tmp_path):
    # Scale 1: one branch row that every transaction updates, 16 clients queueing on it.
    target, password = server
    store = tmp_path / "r.db"
    done = dbarena("run", "--target", target.url, "--workload", "pgbench-tpcb", "--threads", "2",
                   "--clients-per-thread", "8", "--duration", "6", "--scale", "1", "--store", str(store),
                   env=cli_env(public_tmp, PGPASSWORD=password))
    assert done.returncode == 0, done.stderr
    (point,) = _series(store)
    record = point["record"]
    assert record["engine"] == "postgres" and record["stopped"] is None
    assert len(record["seconds"]) >= 4  # once a second through the point
    commits = [v for v in record["series"]["xact_commit"] if v is not None]
    assert commits and max(commits) > 0
    assert point["bound"] == bound.LOCKS, point["evidence"]
    assert "Lock:transactionid" in point["evidence"] and " active-backend samples" in point["evidence"]
    assert _share(record, "wait.Lock:") >= bound.WAIT_SHARE
    assert not store_holds(store, password)
    listed = json.loads(dbarena_here("results", "--json", "--store", str(store), env=cli_env(public_tmp)).stdout)
    assert listed[0]["bound"] == bound.LOCKS and listed[0]["bound_evidence"] == point["evidence"]


def test_a_checkpoint_forced_during_a_point_is_found_at_its_second(server, public_tmp, tmp_path):
    target, password = server
    store = tmp_path / "r.db"
    env = cli_env(public_tmp, PGPASSWORD=password)
    proc = subprocess.Popen([sys.executable, "-m", "dbarena", "run", "--target", target.url, "--workload",
                             "pgbench-simple-update", "--threads", "1", "--duration", "8", "--scale", "1",
                             "--store", str(store)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        # Once pgbench's clients are in, let the point run a few seconds, then force a checkpoint.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            busy = subprocess.run(["psql", target.url, "-Atc", "SELECT count(*) FROM pg_stat_activity"
                                   " WHERE application_name = 'pgbench' AND state = 'active'"],
                                  env=env, capture_output=True, text=True).stdout.strip()
            if busy not in ("", "0"):
                break
            time.sleep(0.2)
        time.sleep(3)
        forced = subprocess.run(["psql", target.url, "-Atc", "CHECKPOINT"], env=env, capture_output=True, text=True)
        done_at = datetime.now(timezone.utc)
        assert forced.returncode == 0, forced.stderr
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    (point,) = _series(store)
    record = point["record"]
    expected = (done_at - datetime.fromisoformat(point["started_at"])).total_seconds()
    found = bound.checkpoint_seconds(record["series"], record["seconds"])
    # The counter moves when the checkpoint ends; the reading after it is at most a second later.
    assert any(expected - 1.5 <= s <= expected + 1.5 for s in found), (found, expected)
    assert "checkpoint at" in point["evidence"]


def test_select_only_on_a_cached_dataset_is_not_lock_bound(public_tmp, tmp_path):
    # A throwaway instance: 100,000 rows in shared buffers, read-only. On 2 CPUs shared
    # with pgbench the machine (or pgbench) runs out of CPU first; what is honest to
    # assert: no lock, WAL or I/O wait decides it, and what its backends did is said
    # (on CPU, or too few looks caught one busy: its transactions are that short).
    store = tmp_path / "r.db"
    done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "2", "--duration", "6",
                   "--scale", "1", "--store", str(store), env=cli_env(public_tmp))
    assert done.returncode == 0, done.stderr
    (point,) = _series(store)
    assert point["bound"] in (bound.SERVER_CPU, bound.MACHINE_CPU, bound.LOADGEN, bound.NONE), point["evidence"]
    looks = sum(sum(v) for k, v in point["record"]["series"].items() if k.startswith("wait."))
    if looks >= bound.MIN_WAIT_SAMPLES:  # (fewer: a share of them says nothing, and decides nothing)
        assert _share(point["record"], "wait.Lock") + _share(point["record"], "wait.LWLock") < bound.WAIT_SHARE
    # (No backend caught active in any second, which happens on a busy machine: the
    # waits then say nothing, and the evidence is the CPU's alone.)
    assert "on CPU in" in point["evidence"] or "too few to tell from the waits" in point["evidence"] \
        or looks == 0, point["evidence"]


def test_no_server_metrics_reads_nothing_of_the_server(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "2",
                   "--scale", "1", "--no-server-metrics", *LIGHT, "--store", str(store), env=cli_env(public_tmp))
    assert done.returncode == 0, done.stderr
    (point,) = _series(store)
    assert point["record"] is None and point["bound"] is None


@pytest.mark.alone  # 29 % of the clients waiting (threshold 30 %) with the other worker's servers beside it
def test_mariadb_update_index_on_one_small_table_is_lock_bound_with_its_row_lock_waits(public_tmp, tmp_path):
    # One row that 32 clients update: about two thirds of them wait on its lock (36-38 %
    # with 16 clients, 22 % with 16 on ten rows: then the machine's CPU bounds it).
    store = tmp_path / "r.db"
    done = dbarena("run", "--engine", "mysql", "--workload", "sysbench-update-index", "--threads", "32",
                   "--duration", "6", "--tables", "1", "--table-size", "1", "--store", str(store),
                   env=cli_env(public_tmp))
    assert done.returncode == 0, done.stderr
    (point,) = _series(store)
    record = point["record"]
    assert record["engine"] == "mysql" and record["stopped"] is None
    waits = [v for v in record["series"]["status.Innodb_row_lock_waits"] if v is not None]
    assert waits and sum(waits) > 0
    assert point["bound"] == bound.LOCKS, point["evidence"]
    assert point["evidence"].startswith("row lock waits ") and " clients waiting on row locks " in point["evidence"]
    # MariaDB starts with performance_schema off: said, not an error.
    pfs = [k for k in record["series"] if k.startswith("pfs.")]
    assert pfs or any("performance_schema is OFF" in n for n in record["notes"])


def test_a_target_whose_connections_the_point_fills_is_measured_without_its_server_view(public_tmp, tmp_path):
    """max_connections 8 and a point of 8 clients: the sampler's connection would take
    the eighth client's slot and fail the point; it lets go of it before the point and
    the series says why."""
    with postgres.throwaway(settings={"max_connections": "8"}) as target:
        password = target.passfile.read_text().strip().rsplit(":", 1)[1]
        store = tmp_path / "full.db"
        done = dbarena("run", "--target", target.url, "--workload", "pgbench-select-only", "--threads", "2",
                       "--clients-per-thread", "4", "--duration", "3", "--scale", "1", *LIGHT, "--store", str(store),
                       env=cli_env(public_tmp, PGPASSWORD=password))
        assert done.returncode == 0, done.stdout + done.stderr
        (point,) = _series(store)  # status ok
        stopped = point["record"]["stopped"]
        assert stopped.startswith("not sampled: the server takes 7 more connection(s) beside the sampler's, and "
                                  "the point opens 8"), stopped
        assert point["record"]["seconds"] == []
        # With a slot to spare, the same point is sampled.
        spare = tmp_path / "spare.db"
        done = dbarena("run", "--target", target.url, "--workload", "pgbench-select-only", "--threads", "1",
                       "--clients-per-thread", "7", "--duration", "3", "--scale", "1", *LIGHT, "--store", str(spare),
                       env=cli_env(public_tmp, PGPASSWORD=password))
        assert done.returncode == 0, done.stdout + done.stderr
        (sampled,) = _series(spare)
        assert sampled["record"]["stopped"] is None and len(sampled["record"]["seconds"]) >= 2


def test_a_role_that_is_no_superuser_leaves_the_superusers_slots_alone(public_tmp, tmp_path):
    """A target's role without superuser rights cannot use superuser_reserved_connections
    (3 by default): of max_connections 10, 7 are its own, the sampler takes one, 6 are
    left; a point of 7 clients is measured without the server view, one of 6 with it."""
    import psycopg

    with postgres.throwaway(settings={"max_connections": "10"}) as target:
        password = target.passfile.read_text().strip().rsplit(":", 1)[1]
        with psycopg.connect(target.url, password=password, autocommit=True) as admin:
            admin.execute("CREATE ROLE plain LOGIN PASSWORD 'plain-pw'")
            admin.execute("CREATE DATABASE plain OWNER plain")
        url = target.url.replace("dbarena@", "plain@").rsplit("/", 1)[0] + "/plain"
        env = cli_env(public_tmp, PGPASSWORD="plain-pw")
        for clients, sampled in ((7, False), (6, True)):
            store = tmp_path / f"plain-{clients}.db"
            done = dbarena("run", "--target", url, "--workload", "pgbench-select-only", "--threads", "1",
                           "--clients-per-thread", str(clients), "--duration", "3", "--scale", "1", *LIGHT, "--store",
                           str(store), env=env)
            assert done.returncode == 0, done.stdout + done.stderr
            (point,) = _series(store)
            stopped = point["record"]["stopped"]
            if sampled:
                assert stopped is None, stopped
            else:
                assert stopped.startswith("not sampled: the server takes 6 more connection(s) beside the "
                                          "sampler's, and the point opens 7"), stopped
