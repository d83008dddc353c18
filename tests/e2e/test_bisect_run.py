"""`dbarena bisect` (issue 56), end to end on real throwaway PostgreSQL servers: two labels
of pgbench-tpcb that differ in five settings, one of them the cause (synchronous_commit
on against off) and four harmless (work_mem, random_page_cost, effective_cache_size,
log_min_duration_statement); the bisect reproduces the difference here, names
synchronous_commit and only it within its stated budget, stores its steps as labels of
their own, and --resume reads them back without measuring. Kept small for a shared
2-CPU machine: scale 1, one level, 2 s points, 2 sessions a step.

Both sides run with commit_delay = 10 ms and commit_siblings = 0 (as
test_history_gate.py's history: every synchronous commit waits), the same on both, so
no difference of theirs: synchronous_commit alone then divides TPC-B's throughput by
about 20 instead of 1.5, so that a step's verdict over 2 s sessions is clear on the
first sessions rather than measuring a configuration again while it is inconclusive
(3 s points made the step 1.5 x against run-to-run swings of tens of percent)."""

from __future__ import annotations

import json

import pytest

from conftest import cli_env, dbarena
# results and history only read the store: run in this process (tests/inprocess.py), not
# as `python -m dbarena`, half a second of CPU each to start. The runs and bisects stay
# processes.
from inprocess import dbarena as dbarena_here

# alone: each step's verdict is over sessions of a few seconds, which the other workers'
# servers beside it (make test runs three, and the fleet's tests) make too noisy to
# decide within the budget; run last, alone on the machine (Makefile).
pytestmark = [pytest.mark.e2e, pytest.mark.alone]

RUN = ("run", "--engine", "postgres", "--workload", "pgbench-tpcb", "--threads", "1", "--duration", "2",
       "--scale", "1", "--sessions", "2", "--no-probe", "--yes")
BOTH = ("commit_delay=10000", "commit_siblings=0")
A = ("synchronous_commit=on", "work_mem=4MB", "random_page_cost=4")
B = ("synchronous_commit=off", "work_mem=64MB", "random_page_cost=1.1", "effective_cache_size=2GB",
     "log_min_duration_statement=1000")
BUDGET = "6m"


def test_bisect_names_the_one_setting_that_makes_the_difference(public_tmp, tmp_path):
    store = tmp_path / "bisect.db"
    env = cli_env(public_tmp)
    for label, settings in (("a", A), ("b", B)):
        args = [word for s in (*settings, *BOTH) for word in ("--pg-setting", s)]
        done = dbarena(*RUN, "--label", label, *args, "--store", str(store), env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]

    found = dbarena("bisect", "a", "b", "--budget", BUDGET, "--json", "--yes", "--store", str(store), env=env,
                    timeout=600)
    assert found.returncode == 0, found.stderr[-4000:]
    answer = json.loads(found.stdout)
    print("\n".join(answer["lines"]))
    assert answer["status"] == "found", answer["lines"]
    assert [d["name"] for d in answer["cause"]] == ["setting synchronous_commit"], answer["lines"]
    assert answer["cause"][0]["a"] == "on" and answer["cause"][0]["b"] == "off"
    # Reproduced here first, and faster with it off: the cause's change against A is
    # significant and most of the difference.
    assert answer["reproduced"]["verdict"] == "faster" and answer["effect"]["verdict"] == "faster"
    assert answer["share"] > 0.3
    assert answer["unsettable"] == [] and len(answer["differences"]) == 5
    assert answer["seconds"] <= 6 * 60 and answer["estimate"]["budget_s"] == 360
    # Said before it started: the differences and the estimate.
    assert "dbarena: bisect: settable: setting synchronous_commit on -> off" in found.stderr
    assert "bisect 1: 5 settable difference(s)" in found.stderr
    # Its configurations are runs of their own labels, visible like any other.
    labels = answer["labels"]
    assert labels[:2] == ["bisect-1-a", "bisect-1-b"] and all(x.startswith("bisect-1-step") for x in labels[2:])
    stored = {p["label"] for p in json.loads(dbarena_here("results", "--store", str(store), "--json", env=env).stdout)}
    assert set(labels) <= stored
    history = json.loads(dbarena_here("history", "--label", "bisect-1-a", "--store", str(store), "--json",
                                      env=env).stdout)
    assert history["series"], history

    # --resume: every session read back, nothing measured, the same answer in words.
    again = dbarena("bisect", "a", "b", "--resume", "--store", str(store), env=env, timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    said = again.stdout
    assert "setting synchronous_commit on -> off: +" in said and "the other 4 changes together:" in said
    assert "0 session(s) measured" in said
