"""Interference named end to end (issue 52): a real pgbench point on a throwaway
PostgreSQL while this test keeps two CPU-burning processes running beside it. Its
stored system samples give the neighbours' CPU, and the point is warned of its
neighbours, not called load-generator-bound (which told the user to move pgbench)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import cli_env, dbarena
# `results` only reads the store: run in this process (tests/inprocess.py), not as
# `python -m dbarena`, half a second of CPU each to start. The runs stay processes.
from inprocess import dbarena as dbarena_here

pytestmark = pytest.mark.e2e

BURN = "while 1: pass"


def test_a_point_under_a_neighbour_s_load_gets_the_neighbour_warning(tmp_path: Path) -> None:
    public = Path(tempfile.mkdtemp(prefix="dbarena-test-", dir="/tmp"))
    public.chmod(0o755)
    store = tmp_path / "r.db"
    # As many burners as the machine has CPUs (2 here): whatever else runs, they take a
    # share of every CPU for the whole point.
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    try:
        done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "10",
                       "--scale", "1", "--label", "burnt", "--store", str(store), env=cli_env(public))
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
        shutil.rmtree(public, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(dbarena_here("results", "--json", "--store", str(store), env=cli_env(tmp_path)).stdout)
    codes = {w["code"] for w in row["warnings"]}
    # The burners alone take most of a CPU of the point's; the server and pgbench are not counted.
    assert row["neighbour_cpu"] is not None and row["neighbour_cpu"] >= 0.5, row
    assert row["server_cpu"] > 0.05 and row["loadgen_cpu"] > 0.01, row
    assert "neighbours" in codes and "load-generator-bound" not in codes, row["warnings"]
    (said,) = [w["message"] for w in row["warnings"] if w["code"] == "neighbours"]
    assert said.startswith(f"neighbours took {row['neighbour_cpu']:.1f} of {row['machine_threads']} CPUs")
    # The wide table shows the figure.
    wide = dbarena_here("results", "--wide", "--store", str(store), env=cli_env(tmp_path, COLUMNS="250")).stdout
    assert "neighbours" in wide and f"{row['neighbour_cpu']:.2f}" in wide
