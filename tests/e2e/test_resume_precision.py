"""Adaptive repeats and --resume on a real throwaway PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import sqlite3

import pytest

from conftest import LIGHT, cli_env, dbarena
# `results` only reads the store: run in this process (tests/inprocess.py), not as
# `python -m dbarena`, half a second of CPU each to start. The runs stay processes.
from inprocess import dbarena as dbarena_here
from dbarena.stats import estimators as stats
from test_run import _assert_nothing_left, _start, _wait_for_line

pytestmark = pytest.mark.e2e


def test_precision_runs_rounds_until_each_point_reaches_it_or_max_repeats(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    # (3 s points: at least one whole second of the server's commit counter each, so that
    # every run's figure is its steady-state mean, as the rule takes it)
    done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1,2", "--duration", "3", "--scale", "1",
                   "--precision", "3%", "--max-repeats", "4", "--store", str(store), env=cli_env(public_tmp),
                   timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    _assert_nothing_left(public_tmp)
    assert "precision +-3.0%" in done.stdout and "summary over repeats" in done.stdout
    rows = json.loads(dbarena_here("results", "--store", str(store), "--json", env=cli_env(public_tmp)).stdout)
    by_threads: dict[int, list] = {}
    for row in sorted(rows, key=lambda r: r["repeat"]):
        assert row["status"] == "ok"
        by_threads.setdefault(row["threads"], []).append(row)
    # The repeats interleave (round by round), are numbered 1.. (as every output counts
    # them), and each point stopped exactly where the rule says: at the first run count
    # whose interval is within 3 %, or at 4 runs.
    order = [(r["threads"], r["repeat"]) for r in sorted(rows, key=lambda r: r["point_id"])]
    assert order[:6] == [(1, 1), (2, 1), (1, 2), (2, 2), (1, 3), (2, 3)]
    for threads, points in by_threads.items():
        values = [r["steady_tps"] for r in points]
        assert [r["repeat"] for r in points] == list(range(1, len(values) + 1))
        assert 3 <= len(values) <= 4
        reached = [n for n in range(3, len(values) + 1) if stats.precision(values[:n], 0.03).reached]
        if len(values) == 3:
            assert reached == [3]
        else:
            assert 3 not in reached  # went on only because 3 runs were not enough
        line = next(l for l in done.stdout.splitlines() if "pgbench-select-only" in l and f" {threads} " in l
                    and ("reached" in l))
        assert ("not reached (max repeats)" in line) == (not reached)
    summary = json.loads(dbarena_here("results", "--store", str(store), "--summary", "--json",
                                      env=cli_env(public_tmp)).stdout)
    assert {(g["threads"], g["n"]) for g in summary} == {(t, len(p)) for t, p in by_threads.items()}
    assert all(g["interval"] == "between runs, conservative (adaptive repeats)" for g in summary)


def test_resume_after_ctrl_c_runs_only_what_is_missing_and_refuses_a_changed_plan(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    env = cli_env(public_tmp)
    args = ["run", "--workload", "pgbench-select-only", "--threads", "1,2", "--duration", "2", "--scale", "1",
            "--repeat", "2", "--store", str(store), *LIGHT]
    proc = _start(args, env)
    _wait_for_line(proc, "ok     postgres pgbench-select-only threads=1")
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "dbarena run --resume" in err
    db = sqlite3.connect(store)
    before = db.execute("SELECT threads, repeat FROM points WHERE status = 'ok'").fetchall()
    assert 1 <= len(before) < 4

    changed = dbarena(*args[:6], "3", *args[7:], "--resume", env=env)  # --duration 3
    assert changed.returncode == 2
    assert changed.stderr.strip().splitlines() == [
        "dbarena: error: --resume: the study differs from what run 1 ran: flags.duration_s: 2 -> 3"]

    resumed = dbarena("run", "--resume", "--store", str(store), env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed: {len(before)} point(s) were stored already" in resumed.stderr
    # The estimate said first counts only what is left.
    assert f"run: {4 - len(before)} point{'s' if 4 - len(before) > 1 else ''} left ({len(before)} stored already), " \
        "about" in resumed.stderr, resumed.stderr[:500]
    _assert_nothing_left(public_tmp)
    after = db.execute("SELECT run_id, threads, repeat, status FROM points ORDER BY id").fetchall()
    # Every point of the plan once, in the same run; nothing measured twice.
    assert sorted((t, r) for _, t, r, s in after if s == "ok") == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert {run for run, *_ in after} == {1} and len(after) == 4
    assert db.execute("SELECT status FROM runs").fetchall() == [("finished",)]

    again = dbarena("run", "--resume", "--store", str(store), env=env)
    assert again.returncode == 2 and "no interrupted or partly failed run" in again.stderr


def test_a_resume_says_which_stored_points_another_dbarena_measured_with_other_instruments(public_tmp, tmp_path):
    """A run an earlier dbarena stored ran pgbench with -P 1 and its log (schema 18 puts
    them in the points' keys): resumed now, such a point is another configuration,
    measured again bare, and the resume says so instead of re-running it silently."""
    from dbarena.stats import configkey

    store = tmp_path / "r.db"
    done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1,2", "--duration", "2",
                   "--scale", "1", "--store", str(store), *LIGHT, env=cli_env(public_tmp))
    assert done.returncode == 0, done.stderr
    db = sqlite3.connect(store)
    (first, config), (second, _) = db.execute("SELECT id, config FROM points WHERE phase = 'measured' "
                                              "ORDER BY id").fetchall()
    older = {**json.loads(config), "instruments": ["-P 1", "-l"]}  # as schema 18's step rekeys an older point
    db.execute("UPDATE points SET config = ?, config_key = ? WHERE id = ?",
               (json.dumps(older), configkey.digest(older), first))
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        if any(column[1] == "point_id" for column in db.execute(f"PRAGMA table_info({table})")):
            db.execute(f"DELETE FROM {table} WHERE point_id = ?", (second,))  # the point, whole
    db.execute("DELETE FROM points WHERE id = ?", (second,))
    db.execute("DELETE FROM point_derived")
    db.execute("UPDATE runs SET status = 'interrupted'")
    db.commit()
    db.close()
    resumed = dbarena("run", "--resume", "--store", str(store), env=cli_env(public_tmp))
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed: 1 point(s) stored with other instruments" in resumed.stdout + resumed.stderr
    db = sqlite3.connect(store)
    measured = db.execute("SELECT threads, config_key FROM points WHERE phase = 'measured' AND status = 'ok'").fetchall()
    assert sorted(t for t, _ in measured) == [1, 1, 2]  # both planned points measured again beside the older one
