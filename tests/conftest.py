"""Helpers for end-to-end tests: run the real CLI in a subprocess, with a private
TMPDIR so that leftovers (directories, server processes) can be checked for."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest


TERMINAL_SIZE = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist, in the controller: its COLUMNS and LINES, for each worker."""
    node.workerinput["terminal_size"] = {name: os.environ.get(name) for name in TERMINAL_SIZE}


def pytest_configure(config):
    """A pytest-xdist worker finds COLUMNS=80 and LINES=24 in its environment, whatever the
    controller had; the real CLI a test runs would take them for its width in a pipe
    (report/terminal.py): narrower tables and cut cells under `make test` (-n 2) than
    with pytest alone. A worker has the controller's values instead, or none.

    SIGINT as a terminal has it: a suite started in the background of a shell without
    job control (`make test &`, nohup under `sh -c`) inherits it ignored, and so would
    every dbarena a test starts (an ignored signal stays ignored across exec), so that
    the tests of what a Ctrl-C does would see none. Python's own handler here is reset
    to the default at each exec: the children get a SIGINT that works too."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    sent = getattr(config, "workerinput", {}).get("terminal_size")
    for name, value in (sent or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# The modules that take longest under `make test` (its --durations), collected first, in
# this order: pytest-xdist's --dist loadfile hands modules out in the order of collection
# (--no-loadscope-reorder), so that these start at once, each on a worker, and the many
# short modules even out the end, instead of one of these starting late (alphabetically,
# a module of four minutes came after twenty e2e modules) and the session waiting for it
# alone. test_exchange_seed.py after test_study_run.py: both need seed_a_quick, which the
# first makes while the other waits.
SLOWEST_FIRST = ("test_study_run.py", "test_documented_examples.py", "test_sessions_run.py", "test_pg_store.py",
                 "test_mysql_sysbench.py", "test_exchange.py", "test_provenance_stats.py", "test_efficiency_run.py",
                 "test_exchange_seed.py")

# Modules that are no fleet's but run in make test's second session, the fleet's (marker
# fleet_session, added below), so that both sessions end nearer together: in one make test
# the first session's modules took 4,105 s on its three workers (23:52 of wall time) and
# the fleet's 3,116 s (18:28). These two (the kill test's 20 kills, 262 s; the history CI
# job, 238 s) move 500 s from the one to the other. Measured once each way, the sessions
# took 1,398 s against 1,432 s, no more: both sessions are bound by the two CPUs, not by
# their workers (the first session's other modules took 12 % longer beside the moved ones).
BESIDE_THE_FLEET = ("test_kill_anywhere.py", "test_history_gate.py")

# The fleet session's modules (the fleet's and BESIDE_THE_FLEET's; --no-loadscope-reorder
# too), in the order that a simulation of xdist's hand-out (a worker takes the next module
# when it is free) over that make test's module times finished soonest in (1,208 s; the
# longest modules first: 1,288 s; the same with each module's time 30 % more or less at
# random: 1,258 s against 1,284 s on average). The longest module goes out first, the
# others as they fill the workers' ends best (test_sshd_harness.py's seconds, unlisted, last).
FLEET_ORDER = ("test_fleet_together_server.py", "test_cloud_local.py", "test_cloud_aws.py",
               "test_fleet_server_killed.py", "test_fleet.py", "test_fleet_kill_anywhere.py", "test_history_gate.py",
               "test_fleet_together.py", "test_kill_anywhere.py", "test_cloud_aws_rds.py")


def pytest_collection_modifyitems(config, items):
    """SLOWEST_FIRST's modules first, then FLEET_ORDER's (a stable sort: each module's
    tests, and the other modules, stay in their order); BESIDE_THE_FLEET's tests marked
    fleet_session."""
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST + FLEET_ORDER)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    for item in items:
        if item.path.name in BESIDE_THE_FLEET:
            item.add_marker(pytest.mark.fleet_session)
        # make test's sessions are by directory as well as by marker (Makefile): the unit
        # tests run beside the alone ones at idle priority, which a server or tool of
        # theirs would not keep (its backends are sessions of their own), and the other
        # sessions collect tests/e2e only (the unit modules' collection costs each of
        # their processes 4 s of CPU). A test so marked elsewhere would run in the wrong
        # session or in none.
        for marker in ("e2e", "fleet", "fleet_session", "alone"):
            if item.get_closest_marker(marker) and E2E not in item.path.parents:
                raise pytest.UsageError(f"{item.nodeid}: marked {marker} outside tests/e2e, where make test "
                                        f"runs its {marker} tests (Makefile)")


E2E = Path(__file__).parent / "e2e"
FIXTURE_STORES = Path(__file__).parent / "fixtures" / "stores"


@pytest.fixture(scope="session", autouse=True)
def fixture_stores_untouched():
    """The checked-in stores are what tests read (and copy before anything writes):
    a test that opened one to write would change every later test's input (a store
    migrated, a derived cache saved). Their bytes at the end of the session must be
    their bytes at its start; this names the file that changed."""
    import hashlib

    def digests() -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(FIXTURE_STORES.glob("*.db"))}

    before = digests()
    yield
    changed = [name for name, digest in digests().items() if before.get(name) != digest]
    assert not changed, f"a test wrote to the checked-in store(s) {', '.join(changed)} in {FIXTURE_STORES}"


@pytest.fixture(scope="session", autouse=True)
def private_state_dir(tmp_path_factory):
    """dbarena's state directory (the records of what its processes started, which the
    next command reaps when their owner died), private to this test session: tests
    must never reap, and so stop or migrate, what another dbarena on this machine runs
    (a user's run, a second test session, the fleet hosts' runs of another session)."""
    before = os.environ.get("DBARENA_STATE_DIR")
    os.environ["DBARENA_STATE_DIR"] = str(tmp_path_factory.mktemp("state"))
    yield
    if before is None:
        os.environ.pop("DBARENA_STATE_DIR", None)
    else:
        os.environ["DBARENA_STATE_DIR"] = before


@pytest.fixture(scope="session", autouse=True)
def fleet_deps_dir(tmp_path_factory):
    """The fleet hosts' shared dependencies (tests/sshd.py, DEPS_ENV), one directory for
    the session: the first fleet test installs them, the others reuse them. One set
    in the environment already is kept (a directory kept across sessions). Under
    pytest-xdist, one for all workers (their base directories' parent, the session's):
    the install takes a lock (fleet/playbooks/venv_install.py), so the second worker
    waits for the first's instead of making its own, most of a minute of both CPUs."""
    from sshd import DEPS_ENV

    if os.environ.get(DEPS_ENV):
        yield
        return
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    os.environ[DEPS_ENV] = str(base / "fleet-deps")
    yield
    os.environ.pop(DEPS_ENV, None)


def session_shared_dir(tmp_path_factory) -> Path:
    """A directory every pytest-xdist worker of this test session sees (their base
    directories' parent, the session's; the base directory itself without xdist), for
    what is made once a session and shared (`built_once`)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextlib.contextmanager
def built_once(tmp_path_factory, name: str):
    """The directory `name` of the session's shared directory, held under an exclusive
    lock (flock: released by the kernel if the worker dies): yields (directory, made),
    made True where an earlier holder finished making it (its file `made` exists).
    The caller makes what is missing and touches `made`; the next worker to come (on
    another xdist worker, or a later test) waits for the lock and finds it made. So a
    store of real runs that two modules need the same way is measured once a session,
    not once a module; each test copies what it will open."""
    import fcntl

    shared = session_shared_dir(tmp_path_factory) / name
    shared.mkdir(exist_ok=True)
    with open(shared.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield shared, (shared / "made").exists()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def public_tmp():
    """A TMPDIR that the unprivileged 'postgres' user can enter (pytest's own
    tmp_path lives under a 0700 directory when run as root)."""
    path = Path(tempfile.mkdtemp(prefix="dbarena-test-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that contain text (e.g. a data directory)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and str(os.getpid()) != pid:
            found.append(f"{pid}: {cmdline}")
    return found


# The rate (--rate, TPS) a test offers its points when what it checks (what is stored,
# resumed, killed, cleaned up) does not depend on how fast they run: the two CPUs bound
# the suite, and a closed-loop point's server and tool take every cycle they are given
# from the tests beside them: a `dbarena run` of one 10 s pgbench-select-only point (2
# clients) used 17.7 s of CPU in all on an idle machine, 2.5 s at 50 TPS.
LIGHT = ("--rate", "50")


def cli_env(tmpdir: Path, **extra) -> dict:
    env = dict(os.environ)
    env.pop("PGPASSWORD", None)
    env.pop("DBARENA_STORE", None)
    env["TMPDIR"] = str(tmpdir)
    env.update(extra)
    return env


def invoke(argv: list[str], capsys) -> tuple[int, str, str]:
    """A dbarena command run in process (dbarena.cli.main): its exit status, stdout and
    stderr as capsys caught them."""
    from dbarena.cli import main

    with pytest.raises(SystemExit) as ended:
        main(argv)
    out, err = capsys.readouterr()
    code = ended.value.code
    return (code if isinstance(code, int) else 0), out, err


def error_line(stderr: str) -> str:
    """The one error line a failed command ends with. A run says its plan before it
    starts anything ("run: 6 points, about 6 min ..."), so an error found when the server
    starts or the target is reached may follow that line; nothing else may come before
    it, and there is one error and no traceback."""
    lines = stderr.splitlines()
    assert lines and lines[-1].startswith("dbarena: error: "), stderr
    assert "Traceback" not in stderr and sum(line.startswith("dbarena: error") for line in lines) == 1, stderr
    assert all(line.startswith(("run: ", "study ", "probing this host", "host probe: ")) for line in lines[:-1]), \
        stderr
    return lines[-1] + "\n"


def dbarena(*args: str, env: dict, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dbarena", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def server_segments(text: str) -> set[Path]:
    """PostgreSQL's dynamic shared memory segments (/dev/shm/PostgreSQL.<n>) that the
    servers whose command line contains text (a test's own TMPDIR or data directory) map
    now, with every process of their process groups (a postmaster leads its backends').
    Taken while a test's server runs, they are what it may leave in RAM if killed; a
    check of them cannot be disturbed by other servers on the machine (another pytest
    worker's, another session's), as a look at every unmapped segment could: another
    test's server, killed on purpose, leaves its own unmapped for a moment."""
    from dbarena.lifecycle import state

    groups = set()
    for line in processes_mentioning(text):
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(int(line.split(":")[0])))
    found: set[Path] = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            in_group = os.getpgid(int(proc.name)) in groups
        except OSError:
            continue
        if in_group:
            found |= {seg for seg in state.shm_segments(int(proc.name)) if seg.name.startswith("PostgreSQL.")}
    return found


def left_in_ram(segments: set[Path]) -> set[Path]:
    """Those of segments that are still in /dev/shm."""
    return {seg for seg in segments if seg.exists()}


def store_holds(store: Path, secret: str) -> bool:
    """Whether a store holds secret anywhere: in its file, or inside its compressed raw outputs."""
    if not store.exists():
        return False
    if secret.encode() in store.read_bytes():
        return True
    from dbarena.store.database import Store

    with Store(store) as db:
        return any(secret in "".join(db.raw_output(r.point_id)) for r in db.points(warmups=True))


def with_raw(store: Path, rows) -> list[dict]:
    """Points rows (sqlite3.Row of `points p`) as dicts with their raw stdout and stderr,
    which the store keeps compressed in raw_outputs."""
    from dbarena.store.database import Store

    with Store(store) as db:
        out = []
        for row in rows:
            record = dict(row)
            record["stdout"], record["stderr"] = db.raw_output(record["id"])
            out.append(record)
        return out


def rows_of(store: Path, sql: str) -> list[tuple]:
    """The rows of a query on an SQLite store that a killed run may have left half made:
    none where the store or the table does not exist yet, or the column not (killed, or
    read, while the schema was being made: each migration is a transaction of its own,
    and a reader between two sees a table without the later one's columns)."""
    if not store.exists():
        return []
    import sqlite3

    with sqlite3.connect(store, timeout=30) as db:
        try:
            return db.execute(sql).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc) or "no such column" in str(exc):
                return []
            raise


# Study A's workloads, by engine (src/dbarena/studies/seed-a.toml).
SEED_A = {
    "postgres": {"pgbench-tpcb", "pgbench-select-only", "pgbench-simple-update", "sysbench-read-only",
                 "sysbench-write-only", "sysbench-read-write"},
    "mysql": {"sysbench-read-only", "sysbench-write-only", "sysbench-read-write", "mysqlslap"},
}


@dataclasses.dataclass(frozen=True)
class StudyRun:
    """A `dbarena run --study` made once a session (`seed_a_quick`): its store, its exit
    status and stderr, and what it left in its TMPDIR, looked at as soon as it ended
    (processes whose command line names it, files in it)."""

    store: Path
    returncode: int
    stderr: str
    left_processes: list[str]
    left_files: list[str]

    def copy_to(self, path: Path) -> Path:
        """The store copied to `path` (a test's own, to open): the shared one is never opened."""
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{self.store}{suffix}").exists():
                shutil.copy(f"{self.store}{suffix}", f"{path}{suffix}")
        return path


@pytest.fixture(scope="session")
def seed_a_quick(tmp_path_factory) -> StudyRun:
    """`dbarena run --study seed-a --quick` (both engines, label seed-a-quick) on real
    throwaway PostgreSQL and MariaDB, run once a session for the two modules that need
    it: tests/e2e/test_study_run.py (what the run stores, leaves and reports) and
    tests/e2e/test_exchange_seed.py (its bundle signed, verified, imported). It takes two
    minutes or more; made once under `built_once`, whichever module's worker comes
    first runs it and the other finds it made. A run that failed or timed out is kept
    as such (its status and stderr), for both modules to fail on, not run twice."""
    with built_once(tmp_path_factory, "seed-a-quick") as (shared, made):
        record = shared / "run.json"
        if not made:
            tmpdir = Path(tempfile.mkdtemp(prefix="dbarena-test-", dir="/tmp"))
            tmpdir.chmod(0o755)  # (the unprivileged postgres user enters it: public_tmp)
            try:
                try:
                    done = dbarena("run", "--study", "seed-a", "--quick", "--store", str(shared / "r.db"),
                                   "--label", "seed-a-quick", env=cli_env(tmpdir), timeout=900)
                    code, stderr = done.returncode, done.stderr
                except subprocess.TimeoutExpired as exc:
                    code, stderr = -1, f"timed out after {exc.timeout} s"
                left = processes_mentioning(str(tmpdir)), sorted(p.name for p in tmpdir.iterdir())
            finally:
                shutil.rmtree(tmpdir, ignore_errors=True)
            record.write_text(json.dumps({"returncode": code, "stderr": stderr, "left_processes": left[0],
                                          "left_files": left[1]}))
            (shared / "made").touch()
        said = json.loads(record.read_text())
    return StudyRun(store=shared / "r.db", **said)
