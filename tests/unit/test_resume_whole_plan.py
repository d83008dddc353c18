"""--resume knows a study's whole plan (issue 46): an invocation interrupted between
engines, whose runs all finished, is still unfinished; and a throwaway instance's
directory is recorded before it is made. Real SQLite stores and real processes; no
server."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

from dbarena import study as study_mod
from dbarena.run import plan, resume
from dbarena.engines import instance
from dbarena.errors import UsageError
from dbarena import shield
from dbarena.lifecycle import cleanup, state
from dbarena.model import RunInfo, StudyRecord
from dbarena.store.database import Store
from dbarena.study import arguments


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    monkeypatch.setenv(state.ENV, str(tmp_path / "state"))


BOTH = ["--engine", "postgres,mysql", "--workload", "sysbench-point-select"]


def _run(db: Store, the_study: study_mod.Study, engine: str, invocation: str, status: str = "finished",
         variant: str = "") -> int:
    record = StudyRecord(name=the_study.name, source=the_study.source, text=the_study.text, sha256=the_study.sha256)
    run_id = db.begin_run(RunInfo(label="l", host="h", engine=engine, target="t",
                                  started_at=datetime.now(timezone.utc), server_version=None, tool_versions={},
                                  options={"flags": dict(the_study.flags), "source": the_study.source},
                                  host_facts={}, variant=variant, study=record, invocation=invocation))
    db.finish_run(run_id, status)
    return run_id


def test_planned_runs_are_every_engine_with_a_workload_times_every_variant(tmp_path):
    assert plan.planned_runs(arguments.study_from_args(BOTH)) == [("postgres", ""), ("mysql", "")]
    seed_b = study_mod.load("seed-b")
    variants = [v.name for v in seed_b.variants]
    assert len(variants) == 2
    engines = [e.name for e in seed_b.engines]
    assert plan.planned_runs(seed_b) == [(e, v) for e in engines for v in variants]
    # The same (engine, variant) pairs as the plan that runs them.
    expanded = plan.expand(seed_b, lambda engine: 4)
    assert {(p.engine.name, v) for p in expanded for v in p.variants} == set(plan.planned_runs(seed_b))


def test_a_study_interrupted_between_engines_is_resumed_and_a_whole_one_is_not(tmp_path):
    both = arguments.study_from_args(BOTH)
    with Store(tmp_path / "r.db") as db:
        whole = str(uuid.uuid4())
        _run(db, both, "postgres", whole)
        _run(db, both, "mysql", whole)
        with pytest.raises(UsageError, match="no interrupted or partly failed run"):
            resume.resumable(db, None)
        # The latest `dbarena run`: PostgreSQL's run finished, MariaDB's never begun.
        half = str(uuid.uuid4())
        first = _run(db, both, "postgres", half)
        assert resume.never_begun(db, db.invocation_runs(half)) == [("mysql", "", 0)]  # (engine, variant, session)
        assert resume.incomplete(db, db.run(first))  # as the fleet's hosts ask
        assert not resume.left_to_do(db, db.run(first))  # the run itself is whole
        invocation, runs = resume.resumable(db, None)
        assert invocation == half and [r.id for r in runs] == [first]
        resumed, again = resume.resumed_study(db, None, arguments.study_from_args(BOTH))
        assert again == half and plan.planned_runs(resumed) == [("postgres", ""), ("mysql", "")]
        _run(db, both, "mysql", half)
        with pytest.raises(UsageError, match="no interrupted or partly failed run"):
            resume.resumable(db, None)


def test_a_run_whose_study_cannot_be_rebuilt_lacks_nothing_it_can_tell(tmp_path):
    one = arguments.study_from_args(["--engine", "postgres", "--workload", "pgbench-select-only"])
    with Store(tmp_path / "r.db") as db:
        run_id = _run(db, one, "postgres", str(uuid.uuid4()))
        db.db.execute("UPDATE runs SET options = ? WHERE id = ?",
                      ('{"flags": {"engines": ["nosuch"]}, "source": "command-line flags"}', run_id))
        db.db.commit()
        assert resume.never_begun(db, db.invocation_runs(str(db.run(run_id).invocation))) == []


def test_an_instance_directory_is_recorded_before_it_is_made(tmp_path, monkeypatch):
    seen: list[list[str]] = []
    made = Path.mkdir

    def mkdir(self: Path, *args, **kwargs) -> None:
        if self.name.startswith("dbarena-pg-"):
            seen.append([data.get("top") for _, data in state.records()])
            assert not self.exists()
        made(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    top, record = instance.new_top("dbarena-pg-", "postgres", tmp_path)
    assert seen == [[str(top)]] and top.is_dir() and top.stat().st_mode & 0o777 == 0o700
    assert state.foreign(str(top)) is None and (top / state.MARKER).is_file()  # marked once made
    assert record.data["top"] == str(top)
    monkeypatch.undo()
    record.remove()


def test_a_directory_that_cannot_be_made_leaves_no_record(tmp_path):
    with pytest.raises(FileNotFoundError):
        instance.new_top("dbarena-pg-", "postgres", tmp_path / "missing")
    assert state.records() == []


def _dead_owner_record(top: Path, **fields) -> tuple[Path, dict]:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = state.start_time(child.pid)
    child.wait()
    record = state.instance("mysql", top)
    record.update(owner_pid=child.pid, owner_start=started, **fields)
    return record.path, record.data


def test_reaping_stops_an_initialisation_and_what_it_gave_the_data_directory(tmp_path):
    top = tmp_path / "dbarena-mysql-x"
    (top / "data").mkdir(parents=True)
    state.mark(top)
    # The initialisation (a shell with a child) and, apart from it, a process given the
    # data directory as mariadbd --bootstrap is once mariadb-install-db has died.
    init = subprocess.Popen(["sh", "-c", f"sleep 60 & echo $!; touch {top}/data/a; wait"], stdout=subprocess.PIPE,
                            text=True)
    assert init.stdout is not None
    sleeper = int(init.stdout.readline())
    apart = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", f"--datadir={top}/data"])
    path, data = _dead_owner_record(top, **state.process_fields("init_pid", init.pid))
    said: list[str] = []
    cleanup.reap(path, data, said.append)
    assert init.wait(timeout=10) == -9 and apart.wait(timeout=10) == -9
    assert not top.exists() and not path.exists()
    assert said == [f"stopped and removed the mysql instance in {top}, left by process {data['owner_pid']}"]
    assert state.start_time(sleeper) is None or "Z" in Path(f"/proc/{sleeper}/stat").read_text().rsplit(")", 1)[1][:3]



def test_reaping_an_initialisation_removes_the_shared_memory_it_held(tmp_path):
    """Issue 45: initdb's postgres (a standalone backend) makes dynamic shared memory as a
    server does (/dev/shm/PostgreSQL.<n>); SIGKILLed by reaping, it left it in RAM for
    good. Here a process given the data directory maps such a segment."""
    import uuid as uuid_mod

    top = tmp_path / "dbarena-pg-x"
    (top / "data").mkdir(parents=True)
    state.mark(top)
    segment = Path(f"/dev/shm/PostgreSQL.test-{uuid_mod.uuid4().hex}")
    backend = subprocess.Popen(
        [sys.executable, "-c", f"import mmap, time\nf = open({str(segment)!r}, 'w+b')\nf.truncate(4096)\n"
         "m = mmap.mmap(f.fileno(), 4096)\nprint('mapped', flush=True)\ntime.sleep(60)", "-D", f"{top}/data"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert backend.stdout is not None and backend.stdout.readline() == "mapped\n"
        path, data = _dead_owner_record(top)
        cleanup.reap(path, data, [].append)
        assert backend.wait(timeout=10) == -9
        assert not segment.exists() and not top.exists() and not path.exists()
    finally:
        backend.kill()
        segment.unlink(missing_ok=True)


def test_a_directory_still_there_after_reaping_keeps_its_record(tmp_path, monkeypatch):
    top = tmp_path / "dbarena-mysql-y"
    (top / "data").mkdir(parents=True)
    state.mark(top)
    path, data = _dead_owner_record(top, server_pgid=None)
    # Something wrote it back, after the marker went.
    monkeypatch.setattr(cleanup.shutil, "rmtree", lambda *a, **k: (top / state.MARKER).unlink())
    said: list[str] = []
    cleanup.reap(path, data, said.append)
    assert path.exists() and "could not remove the mysql instance" in said[0]
    monkeypatch.undo()
    cleanup.reap(path, data, said.append)
    assert not top.exists() and not path.exists()


def test_a_ctrl_c_during_teardown_is_held_until_it_is_done_then_delivered():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with shield.shielded():
            signal.raise_signal(signal.SIGINT)
            done.append("removed")  # not cut short
    assert done == ["removed"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_teardown_that_fails_says_its_own_error_not_the_held_ctrl_c():
    with pytest.raises(OSError, match="disk"):
        with shield.shielded():
            signal.raise_signal(signal.SIGINT)
            raise OSError("disk")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_resume_interrupted_before_its_server_opened_counts_the_points_kept(tmp_path, monkeypatch, capsys):
    """Issue 45: a resume Ctrl-C'd while its first server starts has no run of its own
    yet; its line counts the points the earlier attempt stored, not "0 kept" as if they
    were lost."""
    from conftest import invoke
    from dbarena.run import session
    from dbarena.errors import ExitStatus
    from dbarena.model import PointResult, PointSpec

    flags = ["--engine", "postgres", "--workload", "pgbench-select-only", "--threads", "1,2", "--duration", "1"]
    store = tmp_path / "r.db"
    invocation = str(uuid.uuid4())
    with Store(store) as db:
        run_id = _run(db, arguments.study_from_args(flags), "postgres", invocation, status="interrupted")
        now = datetime.now(timezone.utc)
        spec = PointSpec(engine="postgres", workload="pgbench-select-only", threads=1, clients=2, duration_s=1)
        db.add_point(run_id, PointResult(spec=spec, status="ok", started_at=now, ended_at=now,
                                         command=("pgbench",), exit_code=0, stdout="", stderr=""))

    def interrupted_at_once(study, *, store, **kwargs):  # as a Ctrl-C while the server starts
        return session.Outcome(invocation=kwargs["resume"], exit_status=ExitStatus.INTERRUPTED)

    monkeypatch.setattr(session, "run", interrupted_at_once)
    code, _, err = invoke(["run", "--resume", "--no-probe", "--store", str(store)], capsys)
    assert code == ExitStatus.INTERRUPTED
    assert f"interrupted: 1 finished point(s) kept in {store}" in err, err


def test_a_ctrl_c_during_a_lazy_import_is_held_until_the_module_is_whole(tmp_path, monkeypatch):
    """Issue 45: a lazily imported driver loads where it is first read, mid-run; a
    SIGTERM during psycopg's import left it half made, and `except
    psycopg.OperationalError` then raised AttributeError in place of the interrupt. The
    interrupt comes once the module is whole."""
    from dbarena.lazy import lazy_import

    name = f"half_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGINT)\n"
                                         "sum(range(100000))\nWHOLE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = lazy_import(name)
        with pytest.raises(KeyboardInterrupt):
            module.WHOLE
        assert module.WHOLE is True
    finally:
        sys.modules.pop(name, None)


class _Refuses:
    """An executor that lets the questions a run asks first through (pg_config,
    --version) and fails the test if a server or a tool is started."""

    STARTS = {"initdb", "postgres", "pg_ctl", "pgbench", "mariadbd", "mysqld", "sysbench"}

    def run(self, argv, *args, **kwargs):
        from dbarena import execute

        if Path(argv[0]).name in self.STARTS and "--version" not in argv and "-V" not in argv:
            raise AssertionError(f"started {argv}")
        return execute.LOCAL.run(argv, *args, **kwargs)

    def spawn(self, argv, *args, **kwargs):
        raise AssertionError(f"spawned {argv}")


def test_a_resume_of_a_run_stopped_after_its_last_point_starts_no_server(tmp_path):
    """A run killed after its last point was stored, before it could say it finished:
    its resume has nothing to measure, so it starts nothing and marks the run finished."""
    from dbarena.run import session
    from dbarena.errors import ExitStatus
    from dbarena.model import PointResult

    flags = ["--engine", "postgres", "--workload", "pgbench-select-only", "--threads", "1,2", "--duration", "1",
             "--repeat", "2"]
    the_study = arguments.study_from_args(flags)
    invocation = str(uuid.uuid4())
    (engine_plan,) = plan.expand(the_study, lambda engine: 2)
    with Store(tmp_path / "r.db") as db:
        run_id = _run(db, the_study, "postgres", invocation, status="running")
        now = datetime.now(timezone.utc)
        for spec in engine_plan.points:
            db.add_point(run_id, PointResult(spec=spec, status="ok", started_at=now, ended_at=now,
                                             command=("pgbench",), exit_code=0, stdout="", stderr=""))
        outcome = session.run(the_study, store=db, executor=_Refuses(), quiet=True, resume=invocation,
                              host_facts={"hardware_threads": 2})
        assert outcome.exit_status == ExitStatus.OK and outcome.skipped == len(engine_plan.points) == 4
        assert outcome.run_ids == [run_id] and db.run(run_id).status == "finished"


def test_a_fleet_host_finds_its_run_in_its_store_by_the_study_it_followed(tmp_path):
    """fleet/host.plan_state: the host's `dbarena run` arguments against the runs its
    store holds, rebuilt as --resume rebuilds them: new, to resume, or complete."""
    from dbarena.fleet import host

    flags = ["--engine", "postgres", "--workload", "pgbench-select-only", "--threads", "1", "--duration", "1"]
    store = tmp_path / "h.db"
    assert host.plan_state(str(store), flags) == ("new", None)
    invocation = str(uuid.uuid4())
    with Store(store) as db:
        run_id = _run(db, arguments.study_from_args(flags), "postgres", invocation, status="interrupted")
        # An imported run (no study) in the same store is passed over.
        db.begin_run(RunInfo(label="i", host="h", engine="postgres", target="t",
                             started_at=datetime.now(timezone.utc), server_version=None, tool_versions={},
                             options={}, host_facts={}, invocation=str(uuid.uuid4())))
    assert host.plan_state(str(store), flags) == ("resume", run_id)
    assert host.plan_state(str(store), [*flags[:-1], "2"]) == ("new", None)  # another plan
    with Store(store) as db:
        db.finish_run(run_id, "finished")
    assert host.plan_state(str(store), flags) == ("complete", run_id)
