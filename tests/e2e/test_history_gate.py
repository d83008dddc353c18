"""`dbarena history` and `dbarena gate` on a real store: short pgbench runs of one
configuration, then the same with synchronous_commit turned on. The change point is found
at the first run with the new setting and the setting is named; gate fails the slower
run against the faster one and passes the other way round.

The step is made large on purpose: on this shared 2-CPU machine short pgbench runs vary by
tens of percent from run to run, and synchronous_commit alone changed TPC-B by about
1.5 x here (a fast disk). commit_delay = 10 ms with commit_siblings = 0 on both sides
makes every synchronous commit wait, so that turning synchronous_commit on divides the
throughput by about 20, and only that setting differs between the two halves. A step
that size is found from 5 runs a side of 1 s each (Otava's t test on the log scale:
p = 3e-5 here for 647, 622, 926 TPS before and 76, 80, 74 after, from 2 s runs; 1 s
ones, some seventy transactions a run after the step, found it at run 6 as well, twice
at a load of 10 to 15 on the 2 CPUs), which keeps this test short: most of a run is
its server's start and its dataset, not its point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import cli_env, dbarena
# history, results and gate without --confirm only read the store: run in this process
# (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each to start.
# The runs, and gate --confirm (which measures each side again), stay processes; the CI
# job's steps run in a shell as written.
from inprocess import dbarena as dbarena_here

pytestmark = pytest.mark.e2e

RUN = ("run", "--workload", "pgbench-tpcb", "--threads", "1", "--duration", "1", "--scale", "1", "--label", "h",
       "--pg-setting", "commit_delay=10000", "--pg-setting", "commit_siblings=0", "--yes")


# alone: the step between the halves is found from their runs' spread, and under the
# load of a whole `make test` beside it (other workers' servers, the fleet's Ansible) the
# synchronous_commit=off runs drifted from 2,053 down to 597 TPS: no change point found.
@pytest.mark.alone
def test_history_names_the_setting_at_the_right_run_and_gate_judges_both_ways(public_tmp, tmp_path):
    store = str(tmp_path / "h.db")
    env = cli_env(public_tmp)
    # Runs 1-5 with synchronous_commit off, 6-10 with it on; the last of each with 3
    # repeats. Each run is one session: gate's verdict between runs 5 and 10 takes the
    # spread between sessions from the label's four earlier runs of each configuration
    # (on this shared machine 2 s runs of one configuration differ by up to 3x).
    for i, sync in enumerate(["off"] * 5 + ["on"] * 5):
        repeats = "3" if i in (4, 9) else "1"
        done = dbarena(*RUN, "--pg-setting", f"synchronous_commit={sync}", "--repeat", repeats, "--store", store,
                       env=env)
        assert done.returncode == 0, done.stderr

    shown = dbarena_here("history", "--store", store, "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    (series,) = json.loads(shown.stdout)["series"]
    assert [r["run"] for r in series["runs"]] == list(range(1, 11))
    values = [r["mean"] for r in series["runs"]]
    steps = {cp["run"]: cp for cp in series["change_points"]}
    assert 6 in steps, (values, series["change_points"])
    cp = steps[6]
    assert cp["change_pct"] < -50 and "slower" in cp["text"]
    assert {"fact": "setting synchronous_commit", "before": "off", "after": "on", "run": 6} in cp["causes"]

    text = dbarena_here("history", "--store", store, env=env)
    assert "at run 6: setting synchronous_commit off -> on" in text.stdout

    slower = dbarena_here("gate", "--store", store, "--baseline", "5", "--candidate", "10", "--format", "md", env=env)
    assert slower.returncode == 1, slower.stdout + slower.stderr
    assert "❌ dbarena gate FAILED" in slower.stdout and "| **fail** | postgres | pgbench-tpcb |" in slower.stdout
    faster = dbarena_here("gate", "--store", store, "--baseline", "10", "--candidate", "5", env=env)
    assert faster.returncode == 0, faster.stdout + faster.stderr
    assert faster.stdout.startswith("passed: none of 1 judged workload(s)")

    # --confirm measures each side's own study again here, interleaved, and judges on all
    # runs: the regression stands (runs 11, the baseline's study, and 12, the candidate's).
    confirmed = dbarena("gate", "--store", store, "--baseline", "5", "--candidate", "10", "--confirm", "1",
                        "--json", env=env)
    assert confirmed.returncode == 1, confirmed.stdout + confirmed.stderr
    said = json.loads(confirmed.stdout)
    assert said["status"] == "fail" and said["confirmation"]["first_status"] == "fail"
    assert said["confirmation"]["baseline_runs"] == [11] and said["confirmation"]["candidate_runs"] == [12]
    assert said["candidate"] == "run 10 (label 'h') and its confirming run(s) 12"
    assert said["confirmation"]["labels"] == ["h-confirm-1", "h-confirm-1"]
    (item,) = said["items"]
    assert item["levels"].startswith("1: ") and "(6) -> " in item["levels"] and item["levels"].endswith("(6)"), item
    assert "confirming with 1 more run(s) of each side" in confirmed.stderr
    stored = json.loads(dbarena_here("results", "--store", store, "--json", env=env).stdout)
    # Each side's own study: the baseline's settings for run 11, the candidate's for 12.
    sync = {p["run_id"]: (p["label"], p["config"]["settings"].get("synchronous_commit")) for p in stored}
    assert sync[11] == ("h-confirm-1", "off") and sync[12] == ("h-confirm-1", "on"), sync
    # Under a label of their own: the history of `h` is its ten runs still.
    shown = dbarena_here("history", "--store", store, "--label", "h", "--json", env=env)
    (series,) = json.loads(shown.stdout)["series"]
    assert [r["run"] for r in series["runs"]] == list(range(1, 11))


DOCS = Path(__file__).resolve().parent.parent.parent / "docs" / "history.md"


def ci_steps() -> dict[str, str]:
    """The CI job of docs/history.md: step name -> its shell commands, as written."""
    text = DOCS.read_text()
    block = text[text.index("```yaml\n# .github/workflows/benchmark.yml") + len("```yaml\n"):]
    job = yaml.safe_load(block[:block.index("```")])
    return {s["name"]: s["run"] for s in job["jobs"]["benchmark"]["steps"] if "name" in s and "run" in s}


@pytest.fixture
def store_server():
    from dbarena.engines import postgres

    with postgres.throwaway() as target:
        password = target.passfile.read_text().strip().rsplit(":", 1)[1]
        yield target.url, password


@pytest.mark.timeout(600)
def test_the_ci_job_of_docs_history(store_server, public_tmp, tmp_path):
    url, password = store_server
    steps = ci_steps()
    summary = tmp_path / "summary.md"
    bin_dir = str(Path(sys.executable).parent)  # dbarena's entry point, as the install step puts it on PATH

    def step(name: str, label: str) -> subprocess.CompletedProcess:
        env = cli_env(public_tmp, DBARENA_STORE=url, PGPASSWORD=password, LABEL=label,
                      GITHUB_STEP_SUMMARY=str(summary), PATH=f"{bin_dir}:{os.environ['PATH']}")
        return subprocess.run(["bash", "-eo", "pipefail", "-c", steps[name]], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)

    for label in ("main", "pr-1"):  # the nightly run, then a pull request's
        done = step("Benchmark", label)
        assert done.returncode == 0, done.stderr
    done = step("History of main", "main")
    assert done.returncode == 0, done.stderr
    assert summary.read_text().startswith("## History\n\n### main postgres pgbench-tpcb at 1 thread(s)")
    gated = step("Gate", "pr-1")
    # An A/A pair on a noisy machine may fail the gate by chance, or leave it
    # inconclusive (3); bad input (2) never.
    assert gated.returncode in (0, 1, 3), gated.stderr
    verdict = (tmp_path / "gate.md").read_text()
    assert verdict.startswith("### ") and "dbarena gate" in verdict and "pgbench-tpcb" in verdict
    # --confirm 1: where the first gate was not a pass, each side measured once more.
    if "confirmed: the first gate was" in verdict:
        assert "than in run 1 (label 'main') and its confirming run(s) 3" in verdict, verdict
        assert "label 'pr-1' (run 2) and its confirming run(s) 4" in verdict, verdict
        assert "(stored as 'main-confirm-1' and 'pr-1-confirm-1')" in verdict, verdict
    else:
        assert gated.returncode == 0 and "than in run 1 (label 'main')" in verdict
    # Still failing once confirmed: the next step adds the bisect that would explain it.
    explained = step("What made it slower", "pr-1")
    assert explained.returncode == 0, explained.stderr
    if gated.returncode == 1 and "confirmed: the first gate was" in verdict:
        assert "find which difference made it slower with: dbarena bisect 1 pr-1 --workload pgbench-tpcb" in \
            (tmp_path / "gate.md").read_text()


def test_real_runs_on_the_whole_machine_and_confined_to_one_cpu_differ_in_their_usable_cpus(public_tmp, tmp_path):
    """What history names for a step that CPU confinement caused, from what real runs
    record: a run under `taskset -c 0` (the server it starts and the tool inherit the
    affinity) against one on the whole machine, and settings the second run sets where
    the first left them at their defaults. The difference is derived once
    (stats/environment.py) and reaches `history --json` as the runs' environments."""
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs two CPUs to confine a run to one of them")
    store = str(tmp_path / "cpus.db")
    env = cli_env(public_tmp)
    quick = ("run", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "1", "--scale", "1",
             "--label", "c", "--yes", "--store", store)
    whole = dbarena(*quick, env=env)
    assert whole.returncode == 0, whole.stderr
    confined = subprocess.run(["taskset", "-c", "0", sys.executable, "-m", "dbarena", *quick,
                               "--pg-setting", "commit_delay=10", "--pg-setting", "commit_siblings=0"],
                              env=env, capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    assert confined.returncode == 0, confined.stderr

    from dbarena.stats import environment, history
    from dbarena.store.database import Store

    with Store(store) as db:
        (series,) = history.of_store(db).series
    first, second = series.runs
    changed = [c.text() for c in environment.changes(first.environment, second.environment)]
    assert changed == ["setting commit_delay default -> 10", "setting commit_siblings default -> 0",
                       "usable CPUs all -> 0"], changed
    shown = dbarena_here("history", "--store", store, "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    (runs,) = [s["runs"] for s in json.loads(shown.stdout)["series"]]
    assert "usable CPUs" not in runs[0]["environment"] and runs[1]["environment"]["usable CPUs"] == "0"
