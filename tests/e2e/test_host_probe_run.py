"""The host probe end to end: `dbarena probe` with the installed sysbench, and the probe
`dbarena run` takes before its first point, stored with the run and shown by the report."""

from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import cli_env, dbarena
# `report` only reads the store and writes its file: run in this process
# (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each to start.
# The runs and probes stay processes.
from inprocess import dbarena as dbarena_here

pytestmark = pytest.mark.e2e


def test_probe_measures_this_machine(public_tmp):
    done = dbarena("probe", "--seconds", "3", "--json", env=cli_env(public_tmp))
    assert done.returncode == 0, done.stderr
    measured = json.loads(done.stdout)
    assert measured["cpu_events_per_s"] > 0 and measured["memory_mib_per_s"] > 0
    assert measured["fsync_per_s"] > 0 and measured["fsync_p99_ms"] >= 0
    assert measured["directory"] == str(public_tmp) and measured["problems"] == []
    assert measured["tool"].startswith("sysbench 1.")
    assert list(public_tmp.iterdir()) == []  # its file removed
    table = dbarena("probe", "--seconds", "3", env=cli_env(public_tmp))
    assert table.returncode == 0 and "fsync p99" in table.stdout and "events/s" in table.stdout


def test_probe_refuses_a_directory_that_is_not_there(public_tmp):
    done = dbarena("probe", "--data-dir", str(public_tmp / "nope"), env=cli_env(public_tmp))
    assert done.returncode == 2 and done.stderr.startswith("dbarena: error: --data-dir: ")
    assert len(done.stderr.splitlines()) == 1


def test_run_probes_first_stores_it_and_the_report_shows_it(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "2", "--scale", "1",
                   "--probe", "3", "--store", str(store), "--label", "probed", env=cli_env(public_tmp))
    assert done.returncode == 0, done.stderr
    assert "(a 3 s host probe first)" in done.stderr  # the estimate line counts it
    assert "host probe: CPU " in done.stderr
    db = sqlite3.connect(store)
    (options,) = db.execute("SELECT options FROM runs").fetchone()
    probe = json.loads(options)["probe"]
    assert probe["seconds"] == 3 and probe["cpu_events_per_s"] > 0 and probe["fsync_p99_ms"] is not None
    assert probe["directory"] == str(public_tmp)
    page = tmp_path / "r.md"
    report = dbarena_here("report", "--store", str(store), "-o", str(page), env=cli_env(public_tmp))
    assert report.returncode == 0, report.stderr
    text = page.read_text()
    assert f"probe: CPU events/s | {probe['cpu_events_per_s']:,.0f}" in text
    assert f"probe: fsync p99 ms | {probe['fsync_p99_ms']:.2f}" in text


def test_no_probe_takes_none(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "2", "--scale", "1",
                   "--no-probe", "--store", str(store), env=cli_env(public_tmp))
    assert done.returncode == 0, done.stderr
    assert "host probe" not in done.stderr
    (options,) = sqlite3.connect(store).execute("SELECT options FROM runs").fetchone()
    assert json.loads(options)["probe"] is None
