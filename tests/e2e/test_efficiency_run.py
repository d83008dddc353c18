"""Cost per transaction (issue 55), end to end on real throwaway PostgreSQL servers,
without a profiler: every point's `efficiency` in `results --json`, and `compare` of two
labels that differ in a setting that changes the server's work per transaction
(synchronous_commit) says what one transaction of B cost against A's, where the
sessions' spread shows it (three a side)."""

from __future__ import annotations

import json

import pytest

from conftest import cli_env, dbarena
# results and compare only read the store: run in this process (tests/inprocess.py), not
# as `python -m dbarena`, half a second of CPU each to start. The runs stay processes.
from inprocess import dbarena as dbarena_here

# Alone (make test's last phase): whether a cost per transaction differs beyond the
# spread of three 4 s sessions a side depends on an otherwise idle machine; beside the
# rest of make test (load 9) none did (cost_difference absent), seen twice.
pytestmark = [pytest.mark.e2e, pytest.mark.alone]

RUN = ("run", "--engine", "postgres", "--workload", "pgbench-tpcb", "--threads", "2", "--clients-per-thread", "8",
       "--duration", "4", "--scale", "1", "--no-probe", "--yes", "--sessions", "3")


def test_every_point_has_its_cost_per_transaction_and_compare_names_the_largest_difference(public_tmp, tmp_path):
    store = tmp_path / "cost.db"
    env = cli_env(public_tmp)
    for label, sync in (("sync", "on"), ("async", "off")):
        done = dbarena(*RUN, "--label", label, "--pg-setting", f"synchronous_commit={sync}", "--store", str(store),
                       env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
    points = json.loads(dbarena_here("results", "--store", str(store), "--json", env=env).stdout)
    assert len(points) == 6
    for p in points:
        cost = p["efficiency"]
        for name in ("server_cpu_us_per_tx", "loadgen_cpu_us_per_tx", "context_switches_per_tx", "write_kb_per_tx",
                     "wal_bytes_per_tx"):
            assert isinstance(cost.get(name), float) and cost[name] >= 0, (name, cost)
        # A pgbench-tpcb transaction writes WAL (its UPDATEs and INSERT): some hundreds of bytes.
        assert cost["wal_bytes_per_tx"] > 100 and cost["server_cpu_us_per_tx"] > 1
    rows = json.loads(dbarena_here("compare", "sync", "async", "--about", "settings", "--store", str(store), "--json",
                                   env=env).stdout)
    (row,) = rows
    assert row["a_efficiency"]["wal_bytes_per_tx"] > 0 and row["b_efficiency"]["wal_bytes_per_tx"] > 0
    assert row["cost_difference"]["p_value"] < 0.05, row
    said = " ".join(dbarena_here("compare", "sync", "async", "--about", "settings", "--store", str(store),
                                 env=env).stdout.split())
    assert "cost per transaction, pgbench-tpcb at 2 threads: async uses" in said, said
    shown = dbarena_here("results", "--store", str(store), "--wide", env=env)
    assert "us/tx" in shown.stdout and "KB/tx" in shown.stdout
