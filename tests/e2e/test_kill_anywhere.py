"""Kill anything, anywhere, lose nothing (issue 45): a local study on two engines
(throwaway PostgreSQL and MariaDB, three workloads, 1 s points) killed at 20 moments with
SIGINT, SIGTERM and SIGKILL, sent to dbarena alone, to its process group (as a
terminal's Ctrl-C) or to it and its watchdog (a `kill -9` of everything). Each kill is
followed by `dbarena cleanup` and `dbarena run --study FILE --resume`; the resume itself
is the next one killed, until it runs to the end, and a new store starts the next
chain. After each cleanup: no process that mentions the instances' directory (servers,
initdb, mariadb-install-db, tools), no directory, no state record, no shared memory
segment of the killed servers, no run `running` in the store. At the end of each chain:
every planned point stored exactly once with status ok, the points stored before each
kill kept as they were (not measured again), and one finished run per engine.

The moments are a seeded random spread over the length of one uninterrupted run of
the same study, measured first (it is also the plan's reference), or over the share of
it that a chain has left; a run that ends before its moment came (no moment: it costs a
whole run) gives that length again, the shortest kept (the first run was longer than
most later ones: drawn over its length alone, 10 runs of one test under load ended
before their moment beside the 20 killed, whole runs of its 490 s); the seed is printed
(DBARENA_KILL_SEED=N reproduces a sequence), and so is what each moment hit: the last
line the run had said."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import rows_of, cli_env, dbarena, left_in_ram, processes_mentioning, server_segments
from test_kill import _within
from test_run import _default_sigint

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

# Its pgbench and sysbench points are offered 50 TPS (conftest.LIGHT's reason): what a
# kill may lose does not depend on how fast they run.
STUDY = """schema = 1
name = "kill-anywhere"
[sweep]
levels = [1, 2]
duration_s = 1
repeats = 1
[datasets]
scale = 1
tables = 1
table_size = 100
queries = 200
[engines.postgres]
[engines.mysql]
flavour = "mariadb"
[[workloads]]
workload = "pgbench-select-only"
options = { rate = 50 }
[[workloads]]
workload = "sysbench-read-write"
engines = ["postgres", "mysql"]
datasets = "point"
options = { rate = 50 }
[[workloads]]
workload = "mysqlslap"
engines = ["mysql"]
"""

MOMENTS = 20

# Who is sent what, in turn: the whole process group is what a terminal's Ctrl-C (and a
# `kill -- -PGID`) reaches, dbarena alone what `kill PID` and the OOM killer do; "all" is
# dbarena and its watchdog SIGKILLed at once, which leaves the reaping to `cleanup`.
HOW = [(signal.SIGINT, "group"), (signal.SIGTERM, "dbarena"), (signal.SIGKILL, "dbarena"),
       (signal.SIGINT, "dbarena"), (signal.SIGTERM, "group"), (signal.SIGKILL, "all")]

# A run ended by SIGINT or SIGTERM exits 130 or 143 once it has torn down, or dies of the
# signal itself when it came before dbarena handles it (while Python imports it).
EXITS = {signal.SIGINT: {130, -signal.SIGINT}, signal.SIGTERM: {143, -signal.SIGTERM},
         signal.SIGKILL: {-signal.SIGKILL}}


@pytest.fixture
def ram_tmp(public_tmp):
    """The runs' TMPDIR (their instances' directories) on a tmpfs the test mounts (the
    suite runs as root, as CI does): what is tested is what a kill leaves, not the disk,
    and 20 kills, cleanups and resumes neither wait on the disk I/O of the other tests
    nor add to it."""
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1g,mode=755", "tmpfs", str(public_tmp)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs (the e2e tests run as root): {done.stderr.strip()}")
    yield public_tmp
    subprocess.run(["umount", "-l", str(public_tmp)], check=False)


@pytest.fixture
def env(ram_tmp, tmp_path):
    # A state directory of the test's own, so that it sees only what it made.
    # Unbuffered: the last line a killed run said is what the moment hit.
    return cli_env(ram_tmp, DBARENA_STATE_DIR=str(tmp_path / "state"), PYTHONUNBUFFERED="1")


def _start(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    # Output to a file (nobody reads a pipe while the test waits), in a session of its
    # own so that the test can signal its whole process group as a terminal would.
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "dbarena", *args], env=env, stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_default_sigint)


def _watchdogs(pid: int) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if "dbarena.lifecycle.watchdog" in cmdline and str(pid) in cmdline:
            found.append(proc.pid)
    return found


def _kill(proc: subprocess.Popen, how: signal.Signals, whom: str) -> None:
    if whom == "all":  # its watchdog first, so that it has not begun to reap
        for pid in _watchdogs(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, how)
        os.killpg(proc.pid, how)
    elif whom == "group":
        os.killpg(proc.pid, how)
    else:
        os.kill(proc.pid, how)


def _ended(proc: subprocess.Popen, public_tmp: Path, log: Path) -> int:
    """The exit status of a run sent a signal; a run still there after 4 minutes (a
    MariaDB that does not stop is SIGKILLed after 2) fails the test with what it and
    its servers were doing."""
    try:
        return proc.wait(timeout=240)
    except subprocess.TimeoutExpired:
        tree = [f"{p.pid} {p.status()} {' '.join(p.cmdline())[:200]}"
                for p in [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]]
        logs = {str(f): f.read_text(errors="replace")[-2000:] for f in public_tmp.rglob("*")
                if f.is_file() and f.suffix in (".log", ".err")}
        proc.kill()
        raise AssertionError(f"still running 240 s after the signal: {tree}; {log.read_text()[-2000:]}; {logs}")


def _runs(store: Path) -> list[tuple[int, str, str]]:
    return rows_of(store, "SELECT id, engine, status FROM runs ORDER BY id")


def _ok_points(store: Path) -> dict[int, tuple]:
    """The points stored ok: id -> (engine, workload, threads, repeat, variant, phase)."""
    return {r[0]: r[1:] for r in rows_of(
        store, "SELECT id, engine, workload, threads, repeat, variant, phase FROM points WHERE status = 'ok'")}


def _said(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][:100] if lines else "(nothing yet)"


def _nothing_left(public_tmp: Path, state_dir: Path, segments: set[Path]) -> list[str]:
    """What is left of the instances after `cleanup`: empty when nothing is."""
    left = []
    if processes_mentioning(str(public_tmp)):
        left.append(f"processes: {processes_mentioning(str(public_tmp))}")
    if list(public_tmp.iterdir()):
        left.append(f"directories: {list(public_tmp.iterdir())}")
    records = list((state_dir / "records").glob("*"))  # (no folder yet: none)
    if records:
        left.append(f"records: {records}")
    if left_in_ram(segments):
        left.append(f"shared memory: {left_in_ram(segments)}")
    return left


def test_twenty_kills_at_random_moments_lose_nothing(ram_tmp, tmp_path, env):
    public_tmp = ram_tmp  # the runs' TMPDIR
    seed = int(os.environ.get("DBARENA_KILL_SEED") or random.randrange(1 << 30))
    print(f"DBARENA_KILL_SEED={seed}")
    rng = random.Random(seed)
    study = tmp_path / "study.toml"
    study.write_text(STUDY)
    state_dir = Path(env["DBARENA_STATE_DIR"])

    # The reference: one run undisturbed, its length and its points.
    reference = tmp_path / "reference.db"
    began = time.monotonic()
    done = dbarena("run", "--study", str(study), "--no-probe", "--store", str(reference), env=env, timeout=300)
    length = time.monotonic() - began
    assert done.returncode == 0, done.stderr[-3000:]
    plan = sorted(_ok_points(reference).values())
    assert len(plan) == 8 and {p[0] for p in plan} == {"postgres", "mysql"}, plan
    print(f"an undisturbed run: {length:.1f} s, {len(plan)} points")

    hit: list[str] = []
    chain, store = 0, None
    kept: dict[int, tuple] = {}
    while len(hit) < MOMENTS:
        if store is None:
            chain += 1
            store, kept = tmp_path / f"chain{chain}.db", {}
        elif _complete(store, plan):  # a kill after its last point: nothing left to resume
            _chain_complete(store, plan, kept)
            print(f"chain {chain} complete: {store.name}")
            store = None
            continue
        how, whom = HOW[len(hit) % len(HOW)]
        # Anywhere in what is left of the chain: its share of the undisturbed run's length,
        # and a third more (a resume starts its server and prepares its datasets again),
        # short of its very end (a run that ends first is no moment, and costs its length).
        left = 1 - len(_ok_points(store)) / len(plan)
        delay = 0.1 + rng.random() * 0.9 * length * min(1.0, left + 1 / 3)
        log = tmp_path / f"moment{len(hit) + 1}.log"
        resume = bool(_runs(store))  # killed before its run was stored: nothing to resume
        began = time.monotonic()
        proc = _start(["run", "--study", str(study), "--no-probe", "--store", str(store),
                       *(["--resume"] if resume else [])], env, log)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            pass
        if proc.poll() is not None:  # it ran to the end before this moment came
            assert proc.returncode == 0, log.read_text()[-3000:]
            # What is left of a run takes no longer than this one did: the next moments
            # are drawn within it.
            length = min(length, (time.monotonic() - began) / min(1.0, left + 1 / 3))
            print(f"ran to the end before its moment ({delay:.1f} s): a run is now taken as {length:.1f} s")
            _chain_complete(store, plan, kept)
            print(f"chain {chain} complete: {store.name}")
            store = None
            continue
        segments = server_segments(str(public_tmp))  # the servers' own, as they run now
        said = _said(log)
        _kill(proc, how, whom)
        killed = time.monotonic()
        code = _ended(proc, public_tmp, log)
        ended = time.monotonic()
        out = log.read_text(errors="replace")
        # (A signal as it exits, its run complete, may find nothing left to stop: 0.)
        assert code in EXITS[how] or (code == 0 and _complete(store, plan)), out[-3000:]
        assert "Traceback" not in out, out[-3000:]
        cleaned = dbarena("cleanup", env=env)
        assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
        assert "Traceback" not in cleaned.stdout + cleaned.stderr
        cleaned_at = time.monotonic()
        # A killed dbarena's watchdog may still be reaping as cleanup starts: both end
        # within seconds, and then nothing of the instances is left.
        # (One string, not a tuple: pytest cuts a tuple's repr, and what was left is the point.)
        assert _within(20, lambda: not _nothing_left(public_tmp, state_dir, segments)), "\n".join(
            [f"{how.name} to {whom} at {delay:.1f} s, after: {said}", *_nothing_left(public_tmp, state_dir, segments),
             "cleanup said:", cleaned.stdout[-2000:] + cleaned.stderr[-2000:], "the run said:", out[-2000:]])
        assert _within(20, lambda: not _watchdogs(proc.pid)), _watchdogs(proc.pid)
        assert [r for r in _runs(store) if r[2] == "running"] == [], (_runs(store), out[-3000:])
        points = _ok_points(store)
        assert {i: p for i, p in points.items() if i in kept} == kept, "a point stored before a kill is gone"
        assert len(set(points.values())) == len(points), f"a point measured twice: {sorted(points.values())}"
        kept = points
        hit.append(f"{len(hit) + 1:2} chain {chain} {'resume' if resume else 'fresh '} {how.name:7} to {whom:7} "
                   f"at {delay:5.1f} s: exit {code} {ended - killed:.1f} s later, cleanup {cleaned_at - ended:.1f} s,"
                   f" all gone {time.monotonic() - cleaned_at:.1f} s, {time.monotonic() - began:.0f} s in all;"
                   f" it had said: {said}; then {len(points)} points ok, runs {[s for _, _, s in _runs(store)]}")
        print(hit[-1])

    # The last chain's last resume, to the end.
    if store is not None and not _complete(store, plan):
        done = dbarena("run", "--study", str(study), "--no-probe", "--store", str(store),
                       *(["--resume"] if _runs(store) else []), env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        _chain_complete(store, plan, kept)
    assert processes_mentioning(str(public_tmp)) == [] and list(public_tmp.iterdir()) == []
    print("\n".join(["moments:", *hit]))


def _complete(store: Path, plan: list[tuple]) -> bool:
    return sorted(_ok_points(store).values()) == plan and [s for _, _, s in _runs(store)] == ["finished"] * 2


def _chain_complete(store: Path, plan: list[tuple], kept: dict[int, tuple]) -> None:
    points = _ok_points(store)
    assert sorted(points.values()) == plan, "a point lost or measured twice"
    assert {i: p for i, p in points.items() if i in kept} == kept
    assert [(e, s) for _, e, s in _runs(store)] == [("postgres", "finished"), ("mysql", "finished")], _runs(store)


def test_a_ctrl_c_while_mariadb_starts_does_not_wait_minutes_for_a_server_that_ignores_sigterm(public_tmp,
                                                                                              monkeypatch):
    """Found by the test above: MariaDB 10.11 sent SIGTERM while it starts can hang for
    good, and a Ctrl-C then waited the 2 minutes of a clean shutdown's grace before the
    SIGKILL. A real throwaway MariaDB, stopped (SIGSTOP: it acts on no SIGTERM, as the
    hung one) as it becomes ready, and the Ctrl-C then: the server is gone and its
    directory removed within seconds."""
    from dbarena.engines import mysql_family
    from dbarena.engines.mariadb import MariaDB

    real_wait = mysql_family._wait_ready
    servers: list[tuple[int, float]] = []

    def ready_then_ctrl_c(proc, *args):
        assert real_wait(proc, *args) is not None
        os.kill(proc.pid, signal.SIGSTOP)
        servers.append((proc.pid, time.monotonic()))
        raise KeyboardInterrupt

    monkeypatch.setattr(mysql_family, "_wait_ready", ready_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        with MariaDB().throwaway(data_parent=public_tmp):
            pass
    ((server, interrupted),) = servers
    took = time.monotonic() - interrupted
    assert not psutil.pid_exists(server) or psutil.Process(server).status() == psutil.STATUS_ZOMBIE
    assert list(public_tmp.iterdir()) == []
    assert took < mysql_family.NOT_OPEN_GRACE_S + 10, f"{took:.0f} s"


def test_a_kill_of_everything_while_initdb_runs_leaves_no_shared_memory(ram_tmp, env, tmp_path):
    """Found by the test above (CI: two segments of 26,976 bytes and 1 MiB left after a
    `kill -9` of dbarena's process group): initdb's standalone postgres makes dynamic
    shared memory as a server does. Run in dbarena's process group, it died with it and
    left that in RAM with nobody knowing its name; in a session of its own it lives on
    until `cleanup` stops it, reading first what it maps. The kill comes once initdb's
    processes map a segment."""
    log = tmp_path / "run.log"
    proc = _start(["run", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "1",
                   "--scale", "1", "--no-probe", "--store", str(tmp_path / "r.db")], env, log)
    segments: set[Path] = set()
    deadline = time.monotonic() + 120
    while not segments and proc.poll() is None and time.monotonic() < deadline:
        if any("/initdb " in line for line in processes_mentioning(str(ram_tmp))):
            segments = server_segments(str(ram_tmp))
        time.sleep(0.01)
    if not segments:
        pytest.skip(f"initdb's processes were never caught mapping a segment: {log.read_text()[-500:]}")
    _kill(proc, signal.SIGKILL, "all")
    proc.wait(timeout=30)
    cleaned = dbarena("cleanup", env=env)
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert _within(20, lambda: not left_in_ram(segments)), (left_in_ram(segments), cleaned.stdout)
    assert _within(20, lambda: processes_mentioning(str(ram_tmp)) == []), processes_mentioning(str(ram_tmp))
