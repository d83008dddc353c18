"""The sweep without a server: a fake executor (every argv recorded, real tool outputs
from tests/fixtures returned) and a fake target drive runner.Sweep into a real store.

Checked: the warm-up round (a stored warm-up run, a checkpoint, the measured run), a
refused CHECKPOINT, fail_fast, a killed tool, the dataset lifecycles (run, workload,
point) on throwaway and existing servers, a failed preparation, the configuration key
of every stored point; and the pure dataset_lifecycle.dataset_steps.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import pytest

from dbarena.run import dataset_lifecycle, measure, runner
from dbarena.errors import DatabaseError
from dbarena.execute import Completed
from dbarena.interfaces import Client, Executor, Reporter, Target, Tool
from dbarena.lifecycle.state import MARKER
from dbarena.model import Connection, PointResult, PointSpec, RunInfo, Sample
from dbarena.store import live
from dbarena.store.database import Store
from dbarena.workloads import WORKLOADS, mysqlslap, pgbench, sysbench

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PG_OUT = FIXTURES / "pgbench" / "captured" / "pg15.18-select-only-S-P1"
SB_OUT = {
    "sysbench-read-only": FIXTURES / "sysbench" / "captured" / "sysbench-1.0.20-oltp-read-only-pgsql-histogram",
    "sysbench-write-only": FIXTURES / "sysbench" / "captured" / "sysbench-1.0.20-oltp-write-only-pgsql-histogram",
    "sysbench-read-write": FIXTURES / "sysbench" / "captured" / "sysbench-1.0.20-oltp-read-write-pgsql-histogram",
}
SLAP_OUT = FIXTURES / "mysqlslap" / "captured" / "mysqlslap-10.11.19-MariaDB-c2-i2"
T0 = datetime(2026, 11, 22, 9, 0, tzinfo=timezone.utc)


def _read(base: Path) -> tuple[str, str]:
    return Path(f"{base}.stdout").read_text(), Path(f"{base}.stderr").read_text()


# ------------------------------------------------------------------ the fakes


def kind(argv: Sequence[str]) -> str:
    """What a recorded command does: prepare, cleanup or a point's run."""
    if argv[0] == "pgbench":
        return "prepare" if "-i" in argv else "run"
    if argv[0] == "sysbench":
        return argv[-1]  # prepare | run | cleanup
    return "run"  # mysqlslap


def script_of(argv: Sequence[str]) -> str | None:
    if argv[0] == "sysbench":
        return argv[1]
    if argv[0] == "pgbench":
        return next((a for a in ("-S", "-N") if a in argv), "tpcb")
    return None


class FakeExecutor:
    """An interfaces.Executor that starts nothing: it records every call in the shared
    log and answers with real tool outputs (or what a rule says)."""

    def __init__(self, log: list):
        self.log = log
        self.calls: list[dict] = []
        # (predicate over argv, Completed-maker), the first that matches answers.
        self.rules: list[tuple[Callable[[tuple], bool], Callable[[tuple], Completed]]] = []

    def on(self, predicate: Callable[[tuple], bool], answer: Callable[[tuple], Completed]) -> None:
        self.rules.append((predicate, answer))

    def run(self, argv, *, env=None, timeout=None, user=None, cwd=None, on_stdout_line=None,
            on_stderr_line=None, on_start=None, cpus=None, stdin=None, session=False) -> Completed:
        argv = tuple(str(a) for a in argv)
        # The files in its working directory as the command starts (a point's work directory),
        # but dbarena's own marker (lifecycle/state.py: a reaper removes what holds it).
        files = {f.name: f.read_bytes() for f in sorted(Path(cwd).iterdir()) if f.is_file() and f.name != MARKER} \
            if cwd else None
        self.calls.append({"argv": argv, "env": env, "timeout": timeout, "user": user, "cpus": cpus, "cwd": cwd,
                           "stdin": stdin, "files": files})
        self.log.append(("exec", argv))
        done = next((answer(argv) for predicate, answer in self.rules if predicate(argv)), None) \
            or self.default(argv)
        if on_start is not None:
            on_start(424242)
        for text, callback in ((done.stdout, on_stdout_line), (done.stderr, on_stderr_line)):
            if callback is not None:
                for line in text.splitlines(keepends=True):
                    callback(line)
        return done

    def default(self, argv: tuple) -> Completed:
        if kind(argv) != "run":
            return Completed(argv=argv, returncode=0, stdout="", stderr="", elapsed_s=0.5)
        if argv[0] == "pgbench":
            out, err = _read(PG_OUT)
        elif argv[0] == "sysbench":
            out, err = _read(SB_OUT[{"oltp_read_only": "sysbench-read-only", "oltp_write_only": "sysbench-write-only",
                                     "oltp_read_write": "sysbench-read-write"}[argv[1]]])
        else:
            out, err = _read(SLAP_OUT)
        return Completed(argv=argv, returncode=0, stdout=out, stderr=err, elapsed_s=2.0)

    def spawn(self, argv, *, log_path, env=None, user=None, cpus=None):
        raise AssertionError("the sweep never starts a server")

    def runs(self) -> list[tuple]:
        return [c["argv"] for c in self.calls if kind(c["argv"]) == "run"]


@dataclass
class FakeTarget:
    """An interfaces.Target that reaches no server; it records checkpoints in the log."""

    log: list
    throwaway: bool = True
    engine: str = "postgres"
    flavour: str = "postgresql"
    description: str = "a fake server"
    server_version: str = "15.18"
    conn: Connection = field(default_factory=lambda: Connection(
        protocol="postgresql", host="127.0.0.1", port=5999, user="bench", dbname="bench",
        url="postgresql://bench@127.0.0.1:5999/bench"))
    checkpoint_errors: list = field(default_factory=list)  # raised in turn by checkpoint()
    tls_cert: str | None = None
    tls_problem: str | None = None

    @property
    def url(self) -> str:
        return self.conn.url

    def client(self, tool: Tool) -> Client:
        return Client(binary=tool.binary, conn=self.conn)

    def client_env(self) -> dict:
        return {"PGPASSFILE": "/private/pgpass"}

    def problem(self) -> str | None:
        return None

    def server_pid(self) -> int | None:
        return None

    def connect(self):
        raise AssertionError("no verifying tool in these plans")

    def server_reader(self, connection):
        raise AssertionError("these sweeps sample no server")

    def facts(self) -> dict:
        return {}

    def checkpoint(self) -> None:
        self.log.append(("checkpoint",))
        if self.checkpoint_errors:
            raise self.checkpoint_errors.pop(0)

    def remember_shared_memory(self) -> None:
        pass

    def snapshot_data(self) -> None:
        self.log.append(("snapshot",))

    def restore_data(self) -> None:
        self.log.append(("restore",))

    def dataset_facts(self) -> dict:
        return {"database_bytes": 12345}

    def keep_note(self) -> str:
        return ""


class RecordingReporter:
    def __init__(self):
        self.stages: list[str] = []
        self.started: list[int] = []
        self.finished: list[tuple[int, str]] = []
        self.samples: list[Sample] = []
        self.replans: list[tuple[int, int]] = []

    def begin(self, plan, estimate_s) -> None:
        pass

    def replan(self, first_index, remaining) -> None:
        self.replans.append((first_index, len(remaining)))

    def stage(self, text: str) -> None:
        self.stages.append(text)

    def point_started(self, index: int, spec: PointSpec) -> None:
        self.started.append(index)

    def sample(self, spec: PointSpec, sample: Sample) -> None:
        self.samples.append(sample)

    def point_finished(self, index: int, result: PointResult) -> None:
        self.finished.append((index, result.status))

    def end(self) -> None:
        pass


# The fakes stand in for the real seams: none of the interfaces' members is missing.
@pytest.mark.parametrize("fake, protocol", [(FakeExecutor, Executor), (FakeTarget, Target),
                                            (RecordingReporter, Reporter)])
def test_the_fakes_implement_the_interfaces(fake, protocol):
    wanted = {n for n in dir(protocol) if not n.startswith("_")} | set(getattr(protocol, "__annotations__", {}))
    assert wanted <= set(dir(fake)) | set(getattr(fake, "__dataclass_fields__", {}))


@dataclass
class Rig:
    log: list
    executor: FakeExecutor
    target: FakeTarget
    reporter: RecordingReporter
    store: Store
    run_id: int

    def sweep(self, **kwargs) -> runner.Sweep:
        context = {"settings": {"max_connections": "100"}, "server_version": self.target.server_version,
                   "flavour": self.target.flavour, "host": {"hostname": "box"}}
        kwargs = {"fail_fast": False, "init": True, **kwargs}
        return runner.Sweep(targets={"": runner.Bound(target=self.target, run_id=self.run_id, context=context)},
                            store=self.store, reporter=self.reporter, executor=self.executor, sample_system=False,
                            **kwargs)

    def stored(self) -> list[sqlite3.Row]:
        db = sqlite3.connect(self.store.path)
        db.row_factory = sqlite3.Row
        try:
            return db.execute("SELECT * FROM points ORDER BY id").fetchall()
        finally:
            db.close()

    def steps(self) -> list[str]:
        """The log as words: sysbench's prepare/cleanup, pgbench -i, checkpoint, and each
        point's run as script@threads."""
        out = []
        for entry in self.log:
            if entry[0] in ("checkpoint", "snapshot", "restore"):
                out.append(entry[0])
                continue
            argv = entry[1]
            k = kind(argv)
            if k == "run":
                threads = next(a.split("=")[1] for a in argv if a.startswith(("--threads=", "--concurrency="))) \
                    if argv[0] != "pgbench" else argv[argv.index("-j") + 1]
                out.append(f"{script_of(argv) or argv[0]}@{threads}")
            else:
                out.append("pgbench -i" if argv[0] == "pgbench" else k)
        return out


@pytest.fixture
def rig(tmp_path):
    log: list = []
    store = Store(tmp_path / "r.db")
    run_id = store.begin_run(RunInfo(label="box", host="box", engine="postgres",
                                     target="postgresql://bench@127.0.0.1:5999/bench", started_at=T0,
                                     server_version="15.18", tool_versions={}, options={}, host_facts={}))
    yield Rig(log=log, executor=FakeExecutor(log), target=FakeTarget(log), reporter=RecordingReporter(), store=store,
              run_id=run_id)
    store.close()


def spec(workload: str, threads: int, *, duration_s: int = 10, warmup_s: int = 0, datasets: str = "run",
         repeat: int = 0, variant: str = "", restore: str | None = None, **params) -> PointSpec:
    tool = WORKLOADS[workload].tool
    defaults = {"scale": 2, "tables": 2, "table_size": 1000, "iterations": 2, "queries": 2000, "warehouses": 1}
    chosen = {k: params.get(k, defaults[k]) for k in (p.name for p in tool.params)}
    clients = threads * 2 if WORKLOADS[workload].multiplies_clients else threads
    return PointSpec(engine="postgres", workload=workload, threads=threads, clients=clients, duration_s=duration_s,
                     params=tuple(sorted(chosen.items())), warmup_s=warmup_s, datasets=datasets, repeat=repeat,
                     variant=variant, restore=restore)


def assert_every_point_has_a_config_key(rig: Rig) -> None:
    rows = rig.stored()
    assert rows
    for row in rows:
        assert row["config_key"] and row["config"], dict(row)
    measured = [r for r in rows if r["phase"] == "measured"]
    # Points of another workload or level never share a key.
    keys = {(r["workload"], r["threads"], r["repeat"]): r["config_key"] for r in measured}
    assert len(set(keys.values())) == len(keys)


# ------------------------------------------------------------------ warm-up and checkpoints


def test_warm_up_runs_stores_apart_checkpoints_then_measures(rig):
    point = spec("pgbench-select-only", 2, duration_s=10, warmup_s=3)
    (result,) = rig.sweep().run([point])
    assert rig.steps() == ["pgbench -i", "-S@2", "checkpoint", "-S@2"]
    warm, measured = rig.executor.runs()
    assert warm[warm.index("-T") + 1] == "3" and measured[measured.index("-T") + 1] == "10"
    assert warm[warm.index("-c") + 1] == measured[measured.index("-c") + 1] == "4"
    # The warm-up is stored, apart; the result is the measured run's.
    rows = rig.stored()
    assert [(r["phase"], r["duration_s"], r["status"]) for r in rows] == [("warmup", 3, "ok"), ("measured", 10, "ok")]
    expected = pgbench.parse(*_read(PG_OUT))
    assert result.ok and result.phase == "measured" and result.spec == point
    assert result.measurement.tps == expected.tps == rows[1]["tps"]
    assert rows[1]["transactions"] == expected.transactions
    assert rig.store.points(run_id=rig.run_id)[0].phase == "measured"  # warm-ups are not results
    assert len(rig.store.points(run_id=rig.run_id, warmups=True)) == 2
    assert rows[0]["config_key"] != rows[1]["config_key"]
    assert any("warming up pgbench-select-only at 2 threads for 3 s" in s for s in rig.reporter.stages)
    # The measured run's progress lines reached the reporter (the warm-up's did not).
    assert len(rig.reporter.samples) == len(expected.samples) > 0
    assert_every_point_has_a_config_key(rig)


class SpyPublisher(live.Publisher):
    """The real publisher (its sidecar beside the rig's store), its calls recorded: at a
    flush, how many points the run had stored and what the sidecar held."""

    def __init__(self, store: Store):
        super().__init__(store.path)
        self.store = store
        self.calls: list[tuple] = []

    def begin(self, run_id, spec, phase, stored_before, duration_s):
        self.calls.append(("begin", phase, stored_before, duration_s))
        return super().begin(run_id, spec, phase, stored_before, duration_s)

    def second(self, token, second, tps):
        self.calls.append(("second", second, tps))
        super().second(token, second, tps)

    def flush(self):
        super().flush()
        (progress,) = self.store.run_progress().values()
        held = live.read_sidecar(live.sidecar(self.store.path), [progress.run_id])
        self.calls.append(("flush", progress.stored, [s for s, _ in held[progress.run_id].seconds]))

    def clear(self, run_id):
        self.calls.append(("clear", self.store.run_progress()[run_id].stored))
        super().clear(run_id)


def test_the_point_being_measured_is_published_second_by_second_and_cleared_once_stored(rig):
    """The warm-up's seconds and the measured run's, as the tool reported them (the
    reporter's samples), written before the point is stored, cleared once it is."""
    publisher = SpyPublisher(rig.store)
    try:
        rig.sweep(live=publisher).run([spec("pgbench-select-only", 2, duration_s=10, warmup_s=3)])
    finally:
        publisher.close()
    calls = publisher.calls
    seconds = [(c[1], c[2]) for c in calls if c[0] == "second"]
    measured = [(s.second, s.tps) for s in rig.reporter.samples]
    assert measured and seconds == measured * 2  # the warm-up's (the same fixture output), then the point's
    kept = [float(s) for s, _ in measured][-live.LIVE_KEEP_S - 1:]
    assert [c for c in calls if c[0] != "second"] == [
        ("begin", "warmup", 0, 3), ("flush", 0, kept), ("clear", 1),
        ("begin", "measured", 1, 10), ("flush", 1, kept), ("clear", 2)]
    assert not live.sidecar(rig.store.path).exists()


def test_without_warm_up_there_is_no_checkpoint(rig):
    rig.sweep().run([spec("pgbench-select-only", 1), spec("pgbench-select-only", 2)])
    assert rig.steps() == ["pgbench -i", "-S@1", "-S@2"]
    assert [r["phase"] for r in rig.stored()] == ["measured", "measured"]


def test_a_refused_checkpoint_fails_that_point_and_the_sweep_goes_on(rig):
    rig.target.checkpoint_errors.append(DatabaseError("CHECKPOINT failed: must be superuser to do CHECKPOINT"))
    plan = [spec("pgbench-select-only", 1, warmup_s=2), spec("pgbench-select-only", 2, warmup_s=2)]
    first, second = rig.sweep().run(plan)
    assert not first.ok and "CHECKPOINT" in first.error and first.error.startswith("after the warm-up")
    assert first.measurement is None
    assert second.ok
    # The first point's measured run never started; the second point ran in full.
    assert rig.steps() == ["pgbench -i", "-S@1", "checkpoint", "-S@2", "checkpoint", "-S@2"]
    rows = rig.stored()
    assert [(r["phase"], r["threads"], r["status"]) for r in rows] == [
        ("warmup", 1, "ok"), ("measured", 1, "failed"), ("warmup", 2, "ok"), ("measured", 2, "ok")]
    assert "CHECKPOINT" in rows[1]["error"]
    assert rig.reporter.finished == [(0, "failed"), (1, "ok")]
    assert_every_point_has_a_config_key(rig)


# ------------------------------------------------------------------ failures


def _fails(argv: tuple) -> Completed:
    return Completed(argv=argv, returncode=1, stdout="",
                     stderr="pgbench: error: connection to server failed\nFATAL:  too many clients already\n",
                     elapsed_s=0.2)


def test_fail_fast_stops_after_the_first_failed_point(rig):
    rig.executor.on(lambda argv: kind(argv) == "run", _fails)
    plan = [spec("pgbench-select-only", t) for t in (1, 2, 4)]
    results = rig.sweep(fail_fast=True).run(plan)
    assert [r.status for r in results] == ["failed"]
    # The server's own message, of the two lines pgbench printed (workloads/failure.py).
    assert results[0].error == "exit status 1: FATAL: too many clients already"
    assert rig.steps() == ["pgbench -i", "-S@1"]
    assert [(r["threads"], r["status"]) for r in rig.stored()] == [(1, "failed")]
    assert_every_point_has_a_config_key(rig)


def test_without_fail_fast_every_point_is_tried(rig):
    rig.executor.on(lambda argv: kind(argv) == "run" and argv[argv.index("-j") + 1] == "1", _fails)
    results = rig.sweep(fail_fast=False).run([spec("pgbench-select-only", t) for t in (1, 2, 4)])
    assert [r.status for r in results] == ["failed", "ok", "ok"]
    assert rig.steps() == ["pgbench -i", "-S@1", "-S@2", "-S@4"]


def test_a_tool_killed_on_timeout_fails_its_point(rig):
    out, err = _read(SB_OUT["sysbench-read-only"])
    # Killed part-way: its output ends before the summary.
    partial = "\n".join(out.splitlines()[:14]) + "\n"
    assert partial.count("thds: 2 ") == 2 and "transactions:" not in partial
    rig.executor.on(lambda argv: kind(argv) == "run" and "--threads=2" in argv,
                    lambda argv: Completed(argv=argv, returncode=None, stdout=partial, stderr="", elapsed_s=331.4,
                                           timed_out=True))
    point = spec("sysbench-read-only", 2, duration_s=10)
    results = rig.sweep().run([point, spec("sysbench-read-only", 4, duration_s=10)])
    killed = results[0]
    assert killed.status == "failed" and killed.exit_code is None and killed.measurement is None
    assert "did not finish within 331 s and was killed" in killed.error and killed.error.startswith("sysbench")
    # Its interval reports up to the kill are kept.
    assert [s.second for s in killed.samples] == [1.0, 2.0] and {s.threads for s in killed.samples} == {2}
    assert results[1].ok
    # The executor was told how long to wait: the point's expected time, generously.
    run_call = next(c for c in rig.executor.calls if kind(c["argv"]) == "run")
    assert run_call["timeout"] == measure.point_timeout_s(10)
    assert run_call["env"] == rig.target.client_env()
    rows = rig.stored()
    assert (rows[0]["status"], rows[0]["exit_code"]) == ("failed", None) and "was killed" in rows[0]["error"]
    assert_every_point_has_a_config_key(rig)


def test_unreadable_output_fails_the_point_with_the_parse_error(rig):
    rig.executor.on(lambda argv: kind(argv) == "run",
                    lambda argv: Completed(argv=argv, returncode=0, stdout="number of transactions actually "
                                           "processed: many\n", stderr="", elapsed_s=1.0))
    (result,) = rig.sweep().run([spec("pgbench-select-only", 1)])
    assert result.status == "failed" and "pgbench output" in result.error and "line 1" in result.error


# ------------------------------------------------------------------ dataset lifecycles

SB_PLAN = [("sysbench-read-only", 1), ("sysbench-read-only", 2), ("sysbench-write-only", 1),
           ("sysbench-write-only", 2)]


def _sb_plan(datasets: str) -> list[PointSpec]:
    return [spec(w, t, datasets=datasets) for w, t in SB_PLAN]


@pytest.mark.parametrize("throwaway, expected", [
    # A throwaway instance goes away whole: nothing to clean up.
    (True, ["prepare", "oltp_read_only@1", "oltp_read_only@2", "oltp_write_only@1", "oltp_write_only@2"]),
    # Somebody else's server: the tables are dropped at the end.
    (False, ["prepare", "oltp_read_only@1", "oltp_read_only@2", "oltp_write_only@1", "oltp_write_only@2",
             "cleanup"]),
])
def test_datasets_per_run(rig, throwaway, expected):
    rig.target.throwaway = throwaway
    results = rig.sweep().run(_sb_plan("run"))
    assert all(r.ok for r in results)
    assert rig.steps() == expected
    (prepare,) = [c["argv"] for c in rig.executor.calls if kind(c["argv"]) == "prepare"]
    assert prepare == tuple(sysbench.TOOL_IMPL.prepare_argv(rig.target.client(sysbench.TOOL_IMPL),
                                                            _sb_plan("run")[0])[0])
    # What was prepared is recorded with the run.
    facts = rig.store.db.execute("SELECT target_facts FROM runs").fetchone()[0]
    assert '"sysbench": {"table_size": 1000, "tables": 2}' in facts and '"database_bytes": 12345' in facts
    assert_every_point_has_a_config_key(rig)


def test_datasets_per_run_prepare_again_when_the_parameters_change(rig):
    rig.target.throwaway = False
    plan = [spec("sysbench-read-only", 1), spec("sysbench-write-only", 1, table_size=5000),
            spec("sysbench-read-write", 1, table_size=5000)]
    rig.sweep().run(plan)
    assert rig.steps() == ["prepare", "oltp_read_only@1", "cleanup", "prepare", "oltp_write_only@1",
                           "oltp_read_write@1", "cleanup"]
    sizes = [next(a for a in argv if a.startswith("--table-size=")) for argv in
             (c["argv"] for c in rig.executor.calls) if kind(argv) != "run"]
    assert sizes == ["--table-size=1000", "--table-size=1000", "--table-size=5000", "--table-size=5000"]


@pytest.mark.parametrize("throwaway", [True, False])
def test_datasets_per_workload(rig, throwaway):
    rig.target.throwaway = throwaway
    rig.sweep().run(_sb_plan("workload"))
    assert rig.steps() == ["prepare", "oltp_read_only@1", "oltp_read_only@2", "cleanup",
                           "prepare", "oltp_write_only@1", "oltp_write_only@2", "cleanup"]
    assert_every_point_has_a_config_key(rig)


@pytest.mark.parametrize("throwaway", [True, False])
def test_datasets_per_point(rig, throwaway):
    rig.target.throwaway = throwaway
    rig.sweep().run(_sb_plan("point"))
    assert rig.steps() == [step for w, t in SB_PLAN
                           for step in ("prepare", f"{WORKLOADS[w].mode_args[0]}@{t}", "cleanup")]
    assert_every_point_has_a_config_key(rig)


def test_pgbench_prepares_once_per_run_and_has_nothing_to_clean_up(rig):
    rig.target.throwaway = False
    plan = [spec(w, t) for w in ("pgbench-tpcb", "pgbench-select-only", "pgbench-simple-update") for t in (1, 2)]
    rig.sweep().run(plan)
    assert rig.steps() == ["pgbench -i", "tpcb@1", "tpcb@2", "-S@1", "-S@2", "-N@1", "-N@2"]
    (prepare,) = [c["argv"] for c in rig.executor.calls if kind(c["argv"]) == "prepare"]
    assert prepare == ("pgbench", "-i", "-q", "-s", "2", rig.target.url)


def test_no_init_neither_prepares_nor_cleans_up(rig):
    rig.target.throwaway = False
    results = rig.sweep(init=False).run(_sb_plan("point"))
    assert all(r.ok for r in results)
    assert rig.steps() == ["oltp_read_only@1", "oltp_read_only@2", "oltp_write_only@1", "oltp_write_only@2"]


# sysbench 1.0.20's `prepare` against a PostgreSQL that is not there, verbatim: sysbench
# writes its FATAL lines to stdout, and nothing to stderr.
SB_PREPARE_REFUSED = """sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

FATAL: Connection to database failed: connection to server at "127.0.0.1", port 1 failed: Connection refused
\tIs the server running on that host and accepting TCP/IP connections?

FATAL: `sysbench.cmdline.call_command' function failed: /usr/share/sysbench/oltp_common.lua:83: connection creation failed
"""


def test_a_failed_prepare_fails_its_points_and_the_sweep_goes_on(rig):
    rig.executor.on(lambda argv: argv[0] == "sysbench" and argv[-1] == "prepare",
                    lambda argv: Completed(argv=argv, returncode=1, stdout=SB_PREPARE_REFUSED, stderr="",
                                           elapsed_s=0.1))
    plan = [spec("sysbench-read-only", 1), spec("sysbench-read-only", 2), spec("pgbench-select-only", 1),
            spec("sysbench-write-only", 1)]
    results = rig.sweep().run(plan)
    assert [r.status for r in results] == ["failed", "failed", "ok", "failed"]
    # The first FATAL line, which says why, not the last (workloads/failure.py).
    reason = "sysbench could not prepare its dataset: FATAL: Connection to database failed: connection to server " \
             "at \"127.0.0.1\", port 1 failed: Connection refused"
    for r in (results[0], results[1], results[3]):
        assert r.error == reason and r.command == () and r.measurement is None
    # No sysbench point ran on the missing tables; nothing to clean up that was never there.
    assert rig.steps() == ["prepare", "pgbench -i", "-S@1"]
    assert reason in rig.reporter.stages
    rows = rig.stored()
    assert [(r["workload"], r["status"]) for r in rows] == [
        ("sysbench-read-only", "failed"), ("sysbench-read-only", "failed"), ("pgbench-select-only", "ok"),
        ("sysbench-write-only", "failed")]
    assert rows[0]["error"] == reason
    assert_every_point_has_a_config_key(rig)


def test_a_failed_prepare_per_point_is_retried_for_the_next_point(rig):
    failures = iter([True, False])
    rig.executor.on(lambda argv: argv[-1] == "prepare" and next(failures, False),
                    lambda argv: Completed(argv=argv, returncode=1, stdout="", stderr="FATAL: out of memory\n",
                                           elapsed_s=1.0))
    results = rig.sweep().run([spec("sysbench-read-only", 1, datasets="point"),
                               spec("sysbench-read-only", 2, datasets="point")])
    assert [r.status for r in results] == ["failed", "ok"]
    assert "out of memory" in results[0].error
    # The failed dataset is not cleaned up; the next point's is prepared afresh.
    assert rig.steps() == ["prepare", "prepare", "oltp_read_only@2", "cleanup"]


def test_mysqlslap_has_no_dataset_and_is_read_at_its_concurrency(rig):
    rig.target.engine, rig.target.flavour = "mysql", "mariadb"
    (result,) = rig.sweep().run([spec("mysqlslap", 2)])
    assert result.ok and result.measurement.queries == 2000
    (argv,) = rig.executor.runs()
    assert argv == tuple(mysqlslap.TOOL_IMPL.point_argv(rig.target.client(mysqlslap.TOOL_IMPL), spec("mysqlslap", 2),
                                                        ()))
    assert rig.steps() == ["mysqlslap@2"]
    (row,) = rig.stored()
    assert row["config_key"] and '"duration_s": null' in row["config"]  # bounded by queries, not seconds


def test_every_stored_point_has_a_configuration_key(rig):
    plan = [spec("pgbench-select-only", t, warmup_s=1, repeat=r) for r in (0, 1) for t in (1, 2)]
    plan += [spec("sysbench-read-write", 2, datasets="point"), spec("mysqlslap", 2)]
    rig.sweep().run(plan)
    rows = rig.stored()
    assert len(rows) == 4 * 2 + 2
    assert all(r["config_key"] for r in rows)
    measured = [r for r in rows if r["phase"] == "measured"]
    by_key: dict[str, list] = {}
    for r in measured:
        by_key.setdefault(r["config_key"], []).append((r["workload"], r["threads"], r["repeat"]))
    # Repeats of one point share a key (they may be pooled); nothing else does.
    assert sorted(by_key.values()) == sorted([
        [("pgbench-select-only", 1, 0), ("pgbench-select-only", 1, 1)],
        [("pgbench-select-only", 2, 0), ("pgbench-select-only", 2, 1)],
        [("sysbench-read-write", 2, 0)], [("mysqlslap", 2, 0)]])


# ------------------------------------------------------------------ dataset_steps, pure


def _steps(plan: list[PointSpec]) -> list[tuple[list, list]]:
    """dataset_steps with specs replaced by their index in the plan."""
    index = {id(p): i for i, p in enumerate(plan)}
    return [([(a, index[id(s)]) for a, s in before], [(a, index[id(s)]) for a, s in after])
            for before, after in dataset_lifecycle.dataset_steps(plan)]


def test_dataset_steps_per_run():
    plan = _sb_plan("run")
    assert _steps(plan) == [([("prepare", 0)], []), ([], []), ([], []), ([], [])]


def test_dataset_steps_per_run_change_of_parameters_cleans_up_first():
    plan = [spec("sysbench-read-only", 1), spec("sysbench-read-only", 2, table_size=9),
            spec("sysbench-write-only", 1, table_size=9), spec("sysbench-write-only", 2)]
    assert _steps(plan) == [
        ([("prepare", 0)], []),
        ([("cleanup", 0), ("prepare", 1)], []),
        ([], []),
        ([("cleanup", 1), ("prepare", 3)], []),
    ]


def test_dataset_steps_per_run_keeps_each_tools_dataset():
    plan = [spec("pgbench-tpcb", 1), spec("sysbench-read-only", 1), spec("pgbench-select-only", 1),
            spec("sysbench-write-only", 1)]
    assert _steps(plan) == [([("prepare", 0)], []), ([("prepare", 1)], []), ([], []), ([], [])]


def test_dataset_steps_per_workload():
    plan = _sb_plan("workload")
    assert _steps(plan) == [
        ([("prepare", 0)], []), ([], [("cleanup", 1)]),
        ([("prepare", 2)], []), ([], [("cleanup", 3)]),
    ]


def test_dataset_steps_per_workload_repeats_and_variants_are_blocks_of_their_own():
    plan = [spec("sysbench-read-only", t, datasets="workload", repeat=r, variant=v)
            for r in (0, 1) for v in ("a", "b") for t in (1, 2)]
    steps = _steps(plan)
    for block in range(4):
        first, last = 2 * block, 2 * block + 1
        assert steps[first] == ([("prepare", first)], [])
        assert steps[last] == ([], [("cleanup", last)])


def test_dataset_steps_per_point():
    plan = _sb_plan("point")
    assert _steps(plan) == [([("prepare", i)], [("cleanup", i)]) for i in range(len(plan))]


def test_dataset_steps_variants_have_datasets_of_their_own():
    plan = [spec("sysbench-read-only", 1, variant="a"), spec("sysbench-read-only", 1, variant="b"),
            spec("sysbench-read-only", 2, variant="a"), spec("sysbench-read-only", 2, variant="b")]
    assert _steps(plan) == [([("prepare", 0)], []), ([("prepare", 1)], []), ([], []), ([], [])]


def test_dataset_steps_of_an_empty_plan():
    assert dataset_lifecycle.dataset_steps([]) == []


def test_dataset_steps_mixed_lifecycles():
    plan = [spec("pgbench-tpcb", 1), spec("sysbench-read-only", 1, datasets="point"),
            spec("sysbench-read-only", 2, datasets="point"), spec("pgbench-tpcb", 2)]
    assert _steps(plan) == [
        ([("prepare", 0)], []),
        ([("prepare", 1)], [("cleanup", 1)]),
        ([("prepare", 2)], [("cleanup", 2)]),
        ([], []),
    ]


def test_a_store_that_cannot_be_written_stops_the_sweep_and_the_point_is_saved_importable(rig, tmp_path):
    from dbarena.importers import reading
    from dbarena.errors import StoreError

    def full(*args, **kwargs):
        raise StoreError(f"store {rig.store.path} cannot be written: database or disk is full")

    rig.store.add_point = full  # the disk filled up after the run began
    with pytest.raises(StoreError) as caught:
        rig.sweep().run([spec("pgbench-select-only", 1), spec("pgbench-select-only", 2)])
    message = str(caught.value)
    assert "\n" not in message and "database or disk is full" in message
    (saved,) = list(tmp_path.glob("dbarena-unsaved-*-postgres-pgbench-select-only-t1-r0.txt"))
    assert f"saved in {saved} (dbarena import {saved} --label LABEL" in message
    assert len(rig.executor.runs()) == 1  # stopped: the second point never ran
    (point,) = reading.read(saved.name, saved.read_text(), label="x", engine="postgres", tool="auto", workload=None)
    out, _ = _read(PG_OUT)
    assert point.result.spec.threads == 1 and point.result.spec.workload == "pgbench-select-only"
    assert f"{point.result.measurement.tps:.6f}" in out  # the figure pgbench printed


def test_dataset_steps_with_restore_save_after_prepare_and_put_back_before_each_point_or_level():
    plan = [spec("pgbench-tpcb", t, restore="point", repeat=r) for r in (0, 1) for t in (1, 2)]
    assert _steps(plan) == [([("prepare", 0), ("snapshot", 0)], []), ([("restore", 1)], []),
                            ([("restore", 2)], []), ([("restore", 3)], [])]
    # "level": once per level; two points of one level in a row share the restore.
    plan = [spec("pgbench-tpcb", t, restore="level") for t in (1, 1, 2, 2)]
    assert _steps(plan) == [([("prepare", 0), ("snapshot", 0)], []), ([], []), ([("restore", 2)], []), ([], [])]


def test_the_sweep_restores_the_dataset_and_stores_the_time_apart(rig):
    plan = [spec("pgbench-tpcb", t, restore="point") for t in (1, 2)]
    results = rig.sweep().run(plan)
    assert all(r.ok for r in results)
    assert rig.steps() == ["pgbench -i", "snapshot", "tpcb@1", "restore", "tpcb@2"]
    details = [json.loads(d) for (d,) in rig.store.db.execute("SELECT details FROM points ORDER BY id")]
    # The restore's seconds go with the point it preceded, apart from its measurement.
    assert "restore_s" not in details[0] and details[1]["restore_s"] >= 0
    assert any("restored the prepared data directory in" in s for s in rig.reporter.stages)
