"""`dbarena run` end to end: a real throwaway PostgreSQL, real pgbench, the real CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import LIGHT, cli_env, dbarena, error_line, left_in_ram, processes_mentioning, server_segments, with_raw
# results and study check only read the store and the study: run in this process
# (tests/inprocess.py), not as `python -m dbarena`, half a second of CPU each to start.
# The runs stay processes: what they start and leave, their exit statuses and signals are
# what this module tests.
from inprocess import dbarena as dbarena_here

pytestmark = pytest.mark.e2e

REQUIRED_JSON_KEYS = {
    "run_id", "label", "host", "engine", "workload", "threads", "clients", "duration_s", "status", "error",
    "tps", "latency_avg_ms", "latency_stddev_ms", "transactions", "failed_transactions",
    # added with MySQL / sysbench / mysqlslap:
    "qps", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "errors", "reconnects",
    "run_avg_s", "run_min_s", "run_max_s", "params",
    # added with pgbench's per-transaction log:
    "latency_p90_ms", "latency_p999_ms",
}


def _assert_nothing_left(tmpdir):
    assert processes_mentioning(str(tmpdir)) == []
    assert list(tmpdir.iterdir()) == []


def test_run_two_workloads_two_levels(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    # 3 s points: in a 2 s one on a loaded machine (CI) the sampler's readings, a second
    # apart when it gets the CPU, bounded no whole second of pgbench's run (said so).
    done = dbarena("run", "--workload", "pgbench-tpcb,pgbench-select-only", "--threads", "1,2",
                   "--duration", "3", "--scale", "1", "--store", str(store), "--label", "e2e",
                   "--latency-sampling", "1", env=cli_env(public_tmp))
    assert done.returncode == 0, done.stderr
    assert f"Results stored in {store}" in done.stdout
    assert "pgbench-select-only" in done.stdout  # the final table
    _assert_nothing_left(public_tmp)

    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    run = db.execute("SELECT * FROM runs").fetchone()
    assert run["status"] == "finished" and run["label"] == "e2e" and run["ended_at"]
    assert run["server_version"].startswith(tuple("123456789"))
    assert "pgbench" in json.loads(run["tool_versions"])
    assert run["target"].startswith("postgresql://dbarena@127.0.0.1:")
    points = with_raw(store, db.execute("SELECT * FROM points ORDER BY id").fetchall())
    assert [(p["workload"], p["threads"], p["clients"]) for p in points] == [
        ("pgbench-tpcb", 1, 2), ("pgbench-tpcb", 2, 4),
        ("pgbench-select-only", 1, 2), ("pgbench-select-only", 2, 4),
    ]
    for p in points:
        assert p["status"] == "ok", p["error"]
        assert p["tps"] > 0 and p["transactions"] > 0 and p["latency_avg_ms"] > 0
        # Equal to what pgbench printed, read from the stored raw output independently.
        printed = re.search(r"^tps = ([\d.]+) \(without initial connection time\)$", p["stdout"], re.M)
        assert p["tps"] == float(printed[1])
        printed_tx = re.search(r"^number of transactions actually processed: (\d+)$", p["stdout"], re.M)
        assert p["transactions"] == int(printed_tx[1])
        # pgbench ran as the seeds ran it, without -P 1: the per-second series is the
        # server's commit counter over the whole seconds of its run, scaled to its count.
        assert "progress: " not in p["stderr"]
        command = json.loads(p["command"])
        assert command[command.index("-j") + 1] == str(p["threads"]) and "-P" not in command
        details = json.loads(p["details"])
        assert details["per_second"].startswith("per-second throughput from the server's xact_commit"), details
        samples = db.execute("SELECT second, tps FROM samples WHERE point_id = ? ORDER BY second",
                             (p["id"],)).fetchall()
        assert 1 <= len(samples) <= 3 and all(tps > 0 for _, tps in samples)
        assert sum(tps for _, tps in samples) <= p["transactions"] * 1.01  # whole seconds of its run
        assert json.loads(p["config"])["instruments"] == ["-l"]  # asked for: --latency-sampling 1
        # Percentiles from pgbench's per-transaction log (written to a directory of the
        # point's own under TMPDIR, gone afterwards: _assert_nothing_left above).
        assert "-l" in command and "--log-prefix" in command
        assert 0 < p["latency_p50_ms"] <= p["latency_p90_ms"] <= p["latency_p95_ms"] <= p["latency_p99_ms"] \
            <= p["latency_p999_ms"] <= p["latency_max_ms"]
        (record,) = db.execute("SELECT record FROM latency_histograms WHERE point_id = ?", (p["id"],)).fetchone()
        record = json.loads(record)
        assert record["encoding"] == "hdr-v2-base64" and record["sampling_rate"] == 1.0
        # every transaction logged; without -P pgbench measures no latency of its own and
        # prints the run's time per transaction and client, which holds the client's time
        # between transactions too: the log's mean, each transaction's own, is no more
        assert record["count"] + sum(record["outcomes"].values()) == p["transactions"]
        assert 0.5 * p["latency_avg_ms"] < record["sum_us"] / record["count"] / 1000 <= p["latency_avg_ms"] * 1.02

    listed = dbarena_here("results", "--store", str(store), "--json", env=cli_env(public_tmp))
    assert listed.returncode == 0
    rows = json.loads(listed.stdout)
    assert len(rows) == 4 and REQUIRED_JSON_KEYS <= set(rows[0])
    assert {r["label"] for r in rows} == {"e2e"} and {r["engine"] for r in rows} == {"postgres"}
    table = dbarena_here("results", "--store", str(store), env=cli_env(public_tmp))
    assert table.returncode == 0 and "pgbench-tpcb" in table.stdout


def test_client_progress_runs_pgbench_with_its_own_report_and_says_so_in_the_key(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "3", "--scale", "1",
                   "--store", str(store), "--client-progress", env=cli_env(public_tmp))
    assert done.returncode == 0, done.stderr
    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    (p,) = with_raw(store, db.execute("SELECT * FROM points").fetchall())
    command = json.loads(p["command"])
    assert command[command.index("-P") + 1] == "1" and "-l" not in command  # no log unless asked
    assert "per_second" not in json.loads(p["details"])
    n_samples = db.execute("SELECT COUNT(*) FROM samples WHERE point_id = ?", (p["id"],)).fetchone()[0]
    assert n_samples == p["stderr"].count("progress: ") >= 1
    assert json.loads(p["config"])["instruments"] == ["-P 1"]
    assert p["latency_p99_ms"] is None  # percentiles need the per-transaction log
    _assert_nothing_left(public_tmp)


@pytest.mark.parametrize(
    "args, message",
    [
        # Only what takes the server's own binaries to find; every other bad option is
        # checked in process (tests/unit/test_cli_options.py).
        (["--pg-setting", "no_such_setting=1"], "unknown PostgreSQL setting(s): no_such_setting"),
        (["--pg-setting", "shared_buffers=lots", "--threads", "1", "--duration", "1"], 'invalid value for parameter "shared_buffers"'),
        (["--engine", "mysql", "--mysql-setting", "no_such_variable=1", "--threads", "1"], "unknown variable"),
        (["--no-such-option"], "No such option"),
    ],
)
def test_bad_options_exit_2_with_one_line(args, message, public_tmp, tmp_path):
    done = dbarena("run", *args, "--store", str(tmp_path / "r.db"), env=cli_env(public_tmp))
    assert done.returncode == 2, done.stderr
    assert error_line(done.stderr)
    assert message in done.stderr
    assert "hunter2" not in done.stderr
    _assert_nothing_left(public_tmp)


def test_missing_binaries_exit_3(public_tmp, tmp_path):
    done = dbarena("run", "--pg-bindir", str(tmp_path), "--store", str(tmp_path / "r.db"), env=cli_env(public_tmp))
    assert done.returncode == 3
    assert "apt-get install postgresql" in error_line(done.stderr)


def test_unreachable_target_exit_3(public_tmp, tmp_path):
    done = dbarena("run", "--target", "postgresql://nobody@127.0.0.1:1/db", "--store", str(tmp_path / "r.db"),
                   env=cli_env(public_tmp))
    assert done.returncode == 3
    assert "cannot connect to postgresql://nobody@127.0.0.1:1/db" in error_line(done.stderr)
    assert not (tmp_path / "r.db").exists() or sqlite3.connect(tmp_path / "r.db").execute(
        "SELECT COUNT(*) FROM runs").fetchone()[0] == 0


def test_results_without_a_store_exit_2(public_tmp, tmp_path):
    done = dbarena_here("results", "--store", str(tmp_path / "none.db"), env=cli_env(public_tmp))
    assert done.returncode == 2 and "no results store" in done.stderr


def _wait_for_line(proc, needle: str, timeout: float = 120) -> list[str]:
    """Read proc's stderr until a line contains needle; return the lines read."""
    lines = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            return lines
    raise AssertionError(f"never saw {needle!r} in: {''.join(lines)}")


def _default_sigint() -> None:
    # As a terminal's foreground job has it: a test suite started in the background
    # (`cmd &` in a script) passes SIGINT on ignored, and the Ctrl-C tests would
    # send a signal the run was told to ignore.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args, env):
    # A session of its own, so the test can signal the whole group as a terminal would.
    return subprocess.Popen([sys.executable, "-m", "dbarena", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_default_sigint)


def test_ctrl_c_keeps_finished_points_and_removes_the_instance(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    proc = _start(["run", "--workload", "pgbench-tpcb,pgbench-select-only", "--threads", "1,2", "--duration", "2",
                   "--scale", "1", "--store", str(store), *LIGHT], cli_env(public_tmp))
    _wait_for_line(proc, "ok     postgres pgbench-tpcb threads=1")
    time.sleep(1.0)  # into the second point
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "finished point(s) kept" in err and "Traceback" not in err
    _assert_nothing_left(public_tmp)
    db = sqlite3.connect(store)
    assert db.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]
    statuses = [s for (s,) in db.execute("SELECT status FROM points")]
    assert 1 <= len(statuses) < 4 and set(statuses) == {"ok"}


def test_server_death_fails_the_point_and_the_sweep_goes_on(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    proc = _start(["run", "--workload", "pgbench-select-only", "--threads", "1,2", "--duration", "3",
                   "--scale", "1", "--store", str(store), *LIGHT], cli_env(public_tmp))
    _wait_for_line(proc, "ok     postgres pgbench-select-only threads=1")
    time.sleep(1.0)
    postmasters = [line.split(":")[0] for line in processes_mentioning(str(public_tmp)) if " -D " in line]
    assert postmasters, processes_mentioning(str(public_tmp))
    segments = server_segments(str(public_tmp))  # the server's own: what it could leave in RAM
    assert segments
    os.kill(int(postmasters[0]), signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    _assert_nothing_left(public_tmp)
    # The killed postmaster's shared memory, which it could not remove, is removed.
    assert left_in_ram(segments) == set()
    db = sqlite3.connect(store)
    rows = db.execute("SELECT threads, status, error FROM points ORDER BY id").fetchall()
    assert [(t, s) for t, s, _ in rows] == [(1, "ok"), (2, "failed")]
    assert "PostgreSQL server exited" in rows[1][2]
    assert db.execute("SELECT status FROM runs").fetchall() == [("finished",)]


# ------------------------------------------------------------------ before anything starts

HUGE = ["--workload", "pgbench-select-only", "--threads", "1", "--duration", "5", "--scale", "100000000"]


def test_a_study_that_cannot_fit_is_refused_before_anything_starts(public_tmp, tmp_path):
    # No data_dir given: the throwaway instance would live in the temporary directory.
    store = tmp_path / "r.db"
    done = dbarena("run", *HUGE, "--store", str(store), env=cli_env(public_tmp))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert re.fullmatch(rf"dbarena: error: run needs about [\d.]+ TB for pgbench scale 100000000 on postgres; "
                        rf"{public_tmp} has [\d.]+ [kMGT]?B free: set data_dir to a larger file system \(a study "
                        rf"file's \[engines.postgres\] data_dir\) or use --quick\n", done.stderr), done.stderr
    assert not store.exists()  # nothing stored, not even an empty store
    _assert_nothing_left(public_tmp)

    # A study file: named in the refusal; `study check` shows the plan and says the same.
    study = tmp_path / "huge.toml"
    study.write_text('schema = 1\nname = "huge"\n[datasets]\nscale = 100000000\n'
                     '[[workloads]]\nworkload = "pgbench-select-only"\nlevels = [1]\nduration_s = 5\n')
    done = dbarena("run", "--study", str(study), "--store", str(store), env=cli_env(public_tmp))
    assert done.returncode == 2 and done.stderr.startswith("dbarena: error: study huge needs about "), done.stderr
    assert not store.exists()
    _assert_nothing_left(public_tmp)
    checked = dbarena_here("study", "check", "--study", str(study), env=cli_env(public_tmp))
    assert checked.returncode == 2 and "refused here: study huge needs about" in checked.stdout


LONG = ["--workload", "pgbench-select-only", "--threads", "1", "--duration", "4000", "--scale", "1"]


def _on_a_terminal(args: list[str], env: dict) -> tuple[subprocess.Popen, int, int]:
    """dbarena with a pseudo-terminal for stdin, stdout and stderr; (process, the
    terminal's master end, its slave end). The test keeps the slave open until the end:
    once every slave is closed, Linux may drop what is still unread on the master."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "dbarena", *args], env=env, stdin=slave, stdout=slave,
                            stderr=slave, start_new_session=True, preexec_fn=_default_sigint)
    return proc, master, slave


def _read_until(master: int, needle: str, timeout: float = 60) -> str:
    import select

    seen = b""
    deadline = time.monotonic() + timeout
    while needle.encode() not in re.sub(rb"\x1b\[[0-9;]*m", b"", seen) and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the other end closed
                break
            seen += chunk
    text = re.sub(r"\x1b\[[0-9;]*m", "", seen.decode(errors="replace"))  # rich's colours on a terminal
    assert needle in text, text
    return text


@pytest.mark.parametrize("answer", ["n", "ctrl-c"])
def test_a_study_over_an_hour_is_confirmed_on_a_terminal(answer, public_tmp, tmp_path):
    store = tmp_path / "r.db"
    proc, master, slave = _on_a_terminal(["run", *LONG, "--store", str(store)], cli_env(public_tmp))
    try:
        text = _read_until(master, "start now?")
        assert "run: 1 point, about 1 h 7 min of machine time" in text
        if answer == "n":
            os.write(master, b"n\n")
        else:
            # As a person would, a moment after the prompt: a SIGINT between the prompt
            # and the read that waits for the answer is taken only when the read returns.
            time.sleep(1)
            os.killpg(proc.pid, signal.SIGINT)
        text = _read_until(master, "not started")
        assert proc.wait(timeout=30) == 130
    finally:
        os.close(master)
        os.close(slave)
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in text
    assert not store.exists()
    _assert_nothing_left(public_tmp)


def test_a_study_over_an_hour_starts_without_asking_when_not_on_a_terminal(public_tmp, tmp_path):
    store = tmp_path / "r.db"
    proc = _start(["run", *LONG, "--store", str(store)], cli_env(public_tmp))
    lines = _wait_for_line(proc, "not a terminal")
    assert lines[-1] == "estimated 1 h 7 min; not a terminal, so not asking: starting\n"
    _wait_for_line(proc, "preparing the pgbench dataset")
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in err
    _assert_nothing_left(public_tmp)


@pytest.mark.parametrize("planted", ["victim", "dangling"])
def test_a_planted_live_sidecar_link_is_not_followed_and_the_run_is_measured(public_tmp, tmp_path, planted):
    """STORE.live planted as a symbolic link (to another SQLite file, or to a name that
    does not exist yet) before a run, which may be root's: the run says in one line
    that it publishes no live seconds, is measured and stored, and the link's target
    is neither written nor made."""
    store = tmp_path / "r.db"
    target = tmp_path / ("victim.db" if planted == "victim" else "made-by-dbarena.db")
    if planted == "victim":
        victim = sqlite3.connect(target)
        with victim:
            victim.execute("CREATE TABLE accounts (name TEXT, balance INTEGER)")
            victim.execute("INSERT INTO accounts VALUES ('alice', 100)")
        victim.close()
    before = target.read_bytes() if target.exists() else None
    sidecar = tmp_path / "r.db.live"
    sidecar.symlink_to(target)
    done = dbarena("run", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "3", "--scale", "1",
                   "--store", str(store), *LIGHT, env=cli_env(public_tmp))
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in (done.stdout + done.stderr).splitlines() if "no live seconds for serve" in line]
    assert said == [f"no live seconds for serve: {sidecar} is a symbolic link; dbarena writes no file it did not "
                    f"make"], done.stdout + done.stderr
    (status, tps), = sqlite3.connect(store).execute("SELECT status, tps FROM points WHERE phase = 'measured'")
    assert status == "ok" and tps > 0
    assert sidecar.is_symlink() and os.readlink(sidecar) == str(target)
    assert (target.read_bytes() if target.exists() else None) == before
