"""The tpcc-like workload end to end on real throwaway PostgreSQL and MariaDB, and
its consistency check on data a test deliberately breaks."""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3

import pytest

from conftest import cli_env, dbarena
# `report` only reads the store and writes its file: run in this process
# (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each to start.
# The runs stay processes.
from inprocess import dbarena as dbarena_here
from dbarena import execute
from dbarena.run import runner, session
from dbarena.engines import postgres
from dbarena.model import PointSpec, RunInfo
from dbarena.store.database import Store, now_utc
from dbarena.workloads import tpcc

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_tpcc_like_on_a_real_server(engine, public_tmp, tmp_path):
    store = tmp_path / "r.db"
    done = dbarena("run", "--engine", engine, "--workload", "tpcc-like", "--warehouses", "1", "--threads", "1,2",
                   "--duration", "3", "--store", str(store), env=cli_env(public_tmp))
    assert done.returncode == 0, done.stderr
    rows = sqlite3.connect(store).execute("SELECT status, transactions, details FROM points").fetchall()
    assert len(rows) == 2
    counts = {k: 0 for k in tpcc.KINDS}
    for status, transactions, details in rows:
        assert status == "ok"
        d = json.loads(details)
        assert all(c["ok"] for c in d["consistency"].values()) and set(d["consistency"]) == {"1", "2", "3", "4"}
        assert d["tpm_new_order"] > 0 and d["new_orders_committed"] > 0
        assert sum(t["count"] for t in d["per_type"].values()) == transactions
        for kind, t in d["per_type"].items():
            counts[kind] += t["count"]
    total = sum(counts.values())
    for kind, share in tpcc.MIX.items():
        # Each transaction's kind is drawn at random: the observed share of a kind is
        # binomial around its mix share. Five standard deviations (at least 4 points):
        # a wrong mix fails, a busy machine's few hundred transactions do not.
        sd = 100 * math.sqrt(share / 100 * (1 - share / 100) / total)
        assert abs(100 * counts[kind] / total - share) < max(4.0, 5 * sd), (kind, counts)
    # The report's own table for it, with the stored New-Order rate and the warehouses,
    # in Markdown and in the JSON export.
    md, js = tmp_path / "r.md", tmp_path / "r.json"
    for out in (md, js):
        made = dbarena_here("report", "--store", str(store), "-o", str(out), env=cli_env(public_tmp))
        assert made.returncode == 0, made.stderr
    text = md.read_text()
    assert "TPC-C-like: New-Order rate, mix and latency per transaction type" in text
    for (details,) in sqlite3.connect(store).execute("SELECT details FROM points"):
        assert f"{json.loads(details)['tpm_new_order']:,.1f}" in text
    table = text.split("TPC-C-like: New-Order rate")[1].split("\n\n")[1]
    assert "warehouses=1" in table and "New-Order" in table
    rows = json.loads(js.read_text())["rows"]
    assert sorted(r["tpm_new_order"] for r in rows) == pytest.approx(sorted(
        json.loads(d)["tpm_new_order"] for (d,) in sqlite3.connect(store).execute("SELECT details FROM points")))


def test_consistency_check_fails_on_broken_data(tmp_path):
    spec = PointSpec(engine="postgres", workload="tpcc-like", threads=1, clients=1, duration_s=2,
                     params=(("warehouses", 1),))
    with postgres.throwaway() as target:
        client = target.client(tpcc.TOOL_IMPL)
        for argv in tpcc.TOOL_IMPL.prepare_argv(client, spec):
            assert execute.run(argv, env=target.client_env(), timeout=600).returncode == 0

        def check() -> dict:
            with contextlib.closing(target.connect()) as conn:
                return {n: c["violations"] for n, c in tpcc.verify(conn).items()}

        assert check() == {"1": 0, "2": 0, "3": 0, "4": 0}
        breakages = {
            "1": "UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 3",
            "2": "UPDATE district SET d_next_o_id = d_next_o_id + 5 WHERE d_w_id = 1 AND d_id = 4",
            "3": "DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = 5 AND no_o_id = 2500",
            "4": "UPDATE orders SET o_ol_cnt = o_ol_cnt + 1 WHERE o_w_id = 1 AND o_d_id = 6 AND o_id = 17",
        }
        with target.connect() as conn:
            for number, statement in breakages.items():
                conn.execute(statement)
                assert check()[number] == 1, number
        # A benchmark run over corrupt data is not a result: the point is failed.
        with Store(tmp_path / "r.db") as store:
            run_id = store.begin_run(RunInfo(
                label="t", host="h", engine="postgres", target=target.url, started_at=now_utc(),
                server_version=target.server_version, tool_versions={}, options={}, host_facts={}))
            sweep = runner.Sweep(targets={"": runner.Bound(target=target, run_id=run_id)}, store=store,
                                 reporter=session.SilentReporter(), executor=execute.LOCAL, init=False,
                                 sample_system=False)
            (result,) = sweep.run([spec])
            stored = store.db.execute("SELECT status, error FROM points").fetchall()
        assert result.status == "failed" and "consistency condition(s) failed: 1 (" in result.error
        assert result.measurement.details["consistency"]["4"]["violations"] == 1
        assert stored == [("failed", result.error)]
