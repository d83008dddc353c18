"""sysbench's other OLTP scripts end to end on a throwaway MariaDB: one on the shared
dataset (oltp_point_select), one that uses it up (oltp_delete: fresh tables at each
point) and one that makes its own tables through a script in the point's work
directory (bulk_insert); the real CLI, tiny dataset, 2 s points."""

from __future__ import annotations

import re
import sqlite3

import pytest

from conftest import cli_env, dbarena, processes_mentioning, with_raw

pytestmark = pytest.mark.e2e

WORKLOADS = ("sysbench-point-select", "sysbench-delete", "sysbench-bulk-insert")


def test_point_select_delete_and_bulk_insert_on_mariadb(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    done = dbarena("run", "--engine", "mysql", "--workload", ",".join(WORKLOADS), "--threads", "1,2",
                   "--duration", "2", "--tables", "1", "--table-size", "500", "--store", str(store),
                   env=cli_env(public_tmp), timeout=120)
    assert done.returncode == 0, done.stderr
    # The servers are gone, and so are the points' work directories (they were in TMPDIR).
    assert processes_mentioning(str(public_tmp)) == [] and list(public_tmp.iterdir()) == []
    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    points = with_raw(store, db.execute("SELECT * FROM points ORDER BY id").fetchall())
    assert sorted((p["workload"], p["threads"]) for p in points) == sorted(
        (w, t) for w in WORKLOADS for t in (1, 2))
    for p in points:
        assert p["status"] == "ok", p["error"]
        assert p["tps"] > 0 and p["transactions"] > 0
        assert p["tps"] == float(re.search(r"^\s+transactions:\s+\d+\s+\(([\d.]+) per sec\.\)", p["stdout"], re.M)[1])
        if p["workload"] == "sysbench-bulk-insert":
            # Its own tables, one per thread, made before the threads start, dropped after.
            made = re.findall(r"^Creating table '(sbbulk\d+)'\.\.\.$", p["stdout"], re.M)
            assert made == [f"sbbulk{i}" for i in range(1, p["threads"] + 1)]
            assert p["stdout"].rstrip().endswith(f"Dropping table 'sbbulk{p['threads']}'...")
            assert "dbarena_bulk_insert.lua" in p["command"] and "--tables=" not in p["command"]
    # The shared dataset is prepared when a point needs it and it is not there; each
    # delete point gets it afresh (and it is cleaned up after), bulk_insert needs none.
    expected, prepared = 0, False
    for p in points:
        if p["workload"] == "sysbench-delete":
            expected, prepared = expected + 1, False
        elif p["workload"] == "sysbench-point-select":
            expected, prepared = expected + (not prepared), True
    said = done.stdout + done.stderr
    assert said.count("preparing the sysbench dataset") == expected >= 3
