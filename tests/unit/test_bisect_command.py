"""run/bisect.py and `dbarena bisect` over a real store, with the measuring faked: each
configuration's "session" is stored as a run of the study it was given, its throughput
four times higher where that study turns synchronous_commit off. What is checked: the
differences (settable from the two studies, the rest from the runs' facts), the study
each configuration becomes (a study file's text, rebuilt as it ran), the labels, the
answer, --resume reading every session back, --from-gate and the command line."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from dbarena.errors import ExitStatus, UsageError
from dbarena.model import Measurement, PointResult, RunInfo, Sample, StudyRecord
from dbarena.records import JSONObject
from dbarena.run import bisect as bisecting
from dbarena.run import plan as planning
from dbarena.run import resume
from dbarena.stats import bisection, configkey
from dbarena.stats.bisection import Configuration
from dbarena.store.database import Store
from dbarena.study import Study, arguments
import inprocess

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
HOST: JSONObject = {"cpu_model": "test cpu", "hardware_threads": 2, "memory_bytes": 8 * 2 ** 30,
                    "hostname": "box", "kernel": "6.1.0"}
A_SETTINGS = ["synchronous_commit=on", "work_mem=4MB", "random_page_cost=4"]
B_SETTINGS = ["synchronous_commit=off", "work_mem=64MB", "random_page_cost=1.1", "effective_cache_size=2GB",
              "log_min_duration_statement=1000"]


def _study(label: str, settings: list[str]) -> Study:
    args = ["--workload", "pgbench-tpcb", "--threads", "1", "--duration", "3", "--scale", "1", "--label", label]
    for s in settings:
        args += ["--pg-setting", s]
    return arguments.study_from_args(args)


def _store_run(db: Store, study: Study, tps: float, facts: JSONObject = HOST, day: int = 0) -> int:
    """A finished run (one session) of `study`, its point at `tps`, as session.run stores it."""
    settings = dict(study.engines[0].settings)
    run_id = db.begin_run(RunInfo(
        label=study.label or "x", host=str(facts["hostname"]), engine="postgres",
        target="postgresql://dbarena@127.0.0.1:1/dbarena", started_at=T0 + timedelta(hours=day),
        server_version="17.2", tool_versions={"pgbench": "pgbench 17.2"},
        options={"targets": {}, "flags": dict(study.flags), "source": study.source, "settings": settings},
        host_facts=facts, target_facts={"non_default_settings": settings},
        study=StudyRecord(name=study.name, source=study.source, text=study.text, sha256=study.sha256)))
    (engine_plan,) = planning.expand(study, lambda engine: 2)
    for spec in engine_plan.points:
        config = configkey.build(engine="postgres", workload=spec.workload, threads=spec.threads,
                                 clients=spec.clients, duration_s=spec.duration_s, warmup_s=0,
                                 params=dict(spec.params), options=dict(spec.options), settings=settings, variant="",
                                 server_version="17.2", flavour="postgresql", host=configkey.host_identity(facts))
        started = T0 + timedelta(hours=day, seconds=spec.repeat)
        db.add_point(run_id, PointResult(
            spec=spec, status="ok", started_at=started, ended_at=started + timedelta(seconds=3),
            command=("pgbench",), exit_code=0, stdout="", stderr="",
            measurement=Measurement(tps=tps, transactions=int(tps * 3), latency_avg_ms=1000 / tps),
            samples=tuple(Sample(second=float(s), tps=tps, latency_ms=1000 / tps, failed=0) for s in range(1, 4))),
            config=config)
    db.finish_run(run_id, "finished")
    return run_id


def _tps(study: Study, rng: random.Random) -> float:
    fast = dict(study.engines[0].settings).get("synchronous_commit") == "off"
    return 1000 * (4 if fast else 1) * math.exp(rng.gauss(0, 0.03))


@dataclass
class _Outcome:
    run_ids: list[int]
    exit_status: ExitStatus = ExitStatus.OK
    results: list[Any] = field(default_factory=list)
    failed: int = 0


class FakeRun:
    """session.run's stand-in: a run of each session of the study, stored."""

    def __init__(self, db: Store, seed: int = 5):
        self.db, self.rng = db, random.Random(seed)
        self.studies: list[Study] = []

    def __call__(self, study: Study, *, store: Any, quiet: bool = True, reporter: Any = None) -> _Outcome:
        self.studies.append(study)
        return _Outcome([_store_run(self.db, study, _tps(study, self.rng), day=len(self.studies) + 10)
                         for _ in range(study.sessions)])


def _two_labels(db: Store, b_facts: JSONObject = HOST) -> None:
    rng = random.Random(1)
    for day in (0, 1):
        _store_run(db, _study("a", A_SETTINGS), _tps(_study("a", A_SETTINGS), rng), day=day)
        _store_run(db, _study("b", B_SETTINGS), _tps(_study("b", B_SETTINGS), rng), facts=b_facts, day=day + 2)


def test_the_differences_are_the_studies_settable_ones_then_the_runs_facts(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        _two_labels(db, b_facts={**HOST, "kernel": "6.8.0"})
        plan, runs = bisecting.make_plan(db, "a", "b")
    assert runs == {} and plan.number == 1 and plan.levels == (1,) and plan.workload == "pgbench-tpcb"
    settable = [d.words() for d in plan.differences if d.settable]
    assert settable == ["setting effective_cache_size default -> 2GB",
                        "setting log_min_duration_statement default -> 1000", "setting random_page_cost 4 -> 1.1",
                        "setting synchronous_commit on -> off", "setting work_mem 4MB -> 64MB"]
    (kernel,) = [d for d in plan.differences if not d.settable]
    assert kernel.words() == "kernel 6.1.0 -> 6.8.0" and kernel.why == "the kernel is the machine's"


def test_a_configuration_is_a_study_file_that_rebuilds_as_it_ran(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        _two_labels(db)
        plan, _ = bisecting.make_plan(db, "a", "b")
    configuration = Configuration.of({"setting synchronous_commit": "off", "setting effective_cache_size": "2GB"})
    study = plan.study(configuration, plan.label("step3"), 2)
    assert study.label == "bisect-1-step3" and study.sessions == 2 and study.repeats == 1
    assert dict(study.engines[0].settings) == {"synchronous_commit": "off", "work_mem": "4MB",
                                               "random_page_cost": "4", "effective_cache_size": "2GB"}
    (w,) = study.workloads
    assert (w.workload, w.levels, w.duration_s, dict(w.params)["scale"]) == ("pgbench-tpcb", (1,), 3, 1)
    assert json.loads(study.description)["changes"] == dict(configuration.changes)
    # What a stored run of it rebuilds (`dbarena run --resume`, serve): the same study.
    from dbarena import study as study_mod

    again = study_mod.rebuild(study.text, study.source, dict(study.flags))
    assert again.engines == study.engines and again.workloads == study.workloads


def test_the_bisect_names_the_cause_stores_its_steps_and_resumes_without_measuring(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        _two_labels(db)
        plan, _ = bisecting.make_plan(db, "a", "b")
        fake = FakeRun(db)
        measurer = bisecting.StoreMeasurer(db, plan, fake)
        result = bisecting.bisect(db, plan, measurer, sessions=2, max_sessions=4, budget_s=None, session_s=5.0)
        assert result.answer.status == bisection.FOUND and result.exit_status == 0
        assert [d.name for d in result.answer.cause] == ["setting synchronous_commit"]
        assert result.labels[:2] == ("bisect-1-a", "bisect-1-b")
        assert all(label.startswith("bisect-1-step") for label in result.labels[2:])
        assert {s.label for s in fake.studies} == set(result.labels)
        lines = result.lines()
        assert lines[0] == ("bisect 1: label 'b' (runs 2, 4) (B) against label 'a' (runs 1, 3) (A), pgbench-tpcb "
                            "on postgres at 1 thread(s)")
        assert any(line.startswith("setting synchronous_commit on -> off: +") for line in lines)
        assert result.as_json()["cause"][0]["name"] == "setting synchronous_commit"
        # A step's stored run rebuilds to the configuration it measured.
        step = next(r for r in db.runs() if r.label == "bisect-1-step1")
        assert resume.stored_study(db, step).label == "bisect-1-step1"
        # --resume: the same bisect's number, every session read back, nothing measured.
        again, runs = bisecting.make_plan(db, "a", "b", resuming=True)
        assert again.number == 1 and set(runs) == set(result.labels)
        known, labels = bisecting.known(db, again, runs)
        refake = FakeRun(db, seed=9)
        resumed = bisecting.bisect(db, again, bisecting.StoreMeasurer(db, again, refake, labels=labels), sessions=2,
                                   max_sessions=4, budget_s=None, session_s=5.0, known_values=known)
        assert refake.studies == [] and resumed.answer.cause == result.answer.cause
        # A new bisect of the same ends gets the next number.
        assert bisecting.make_plan(db, "a", "b")[0].number == 2


def test_resume_without_a_bisect_of_these_ends_is_refused(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        _two_labels(db)
        with pytest.raises(UsageError, match="no bisect of 'a' against 'b'"):
            bisecting.make_plan(db, "a", "b", resuming=True)


def test_from_gate_reads_the_gates_sides_and_failed_workload(tmp_path: Path) -> None:
    gate = tmp_path / "gate.json"
    gate.write_text(json.dumps({"baseline": "label 'a' (runs 1, 2)", "candidate": "run 7 (label 'b')",
                                "baseline_spec": "a", "candidate_spec": "7", "status": "fail",
                                "items": [{"workload": "pgbench-select-only", "status": "pass"},
                                          {"workload": "pgbench-tpcb", "status": "fail"}]}))
    assert bisecting.from_gate(gate) == ("a", "7", "pgbench-tpcb")
    gate.write_text(json.dumps({"baseline": "x"}))
    with pytest.raises(UsageError, match="not a gate's JSON result"):
        bisecting.from_gate(gate)


def test_the_command_says_the_differences_and_the_estimate_and_checks_its_sides(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with Store(store) as db:
        _two_labels(db)
    done = inprocess.dbarena(*["bisect", "a", "b", "--store", str(store), "--dry-run", "--json"])
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["bisect"] == 1 and len(found["differences"]) == 5
    assert found["estimate"]["settable"] == 5 and found["estimate"]["reproduce_sessions"] == 4
    assert "dbarena: bisect: settable: setting synchronous_commit on -> off" in done.stderr
    assert "bisect 1: 5 settable difference(s)" in done.stderr
    for argv, said in ((["a"], "give B"), (["--run-a", "1", "--run-b", "3", "a"], "A and B are given already"),
                       (["a", "b", "--sessions", "3", "--max-sessions", "2"], "--max-sessions 2 is fewer"),
                       (["a", "nope"], "neither a run nor a label")):
        bad = inprocess.dbarena(*["bisect", *argv, "--store", str(store), "--dry-run"])
        assert bad.returncode == 2 and said in bad.stderr, bad.stderr
    runs = inprocess.dbarena(*["bisect", "--run-a", "3", "--run-b", "4", "--store", str(store), "--dry-run"])
    assert runs.returncode == 0, runs.stderr


def test_a_failed_gate_says_the_bisect_command_that_would_explain_it() -> None:
    from dbarena.stats import gate as gating

    def item(workload: str, status: str) -> gating.Item:
        return gating.Item("postgres", workload, "tps", "1: 1,000.0 (2) -> 500.0 (2)", -50.0, -60.0, -40.0, 0.001,
                           status, "slower")

    found = gating.Gate(gating.Side("run 4", "run 4 (label 'main')", [], "4"),
                        gating.Side("pr 1", "label 'pr 1' (run 5)", [], "pr 1"), 0.05,
                        (item("pgbench-tpcb", gating.FAIL), item("pgbench-select-only", gating.PASS)))
    assert bisecting.commands(found, "postgresql://u@h:5432/d") == [
        "dbarena bisect 4 'pr 1' --workload pgbench-tpcb --budget 1h --store postgresql://u@h:5432/d"]
    assert found.as_dict()["baseline_spec"] == "4" and found.as_dict()["candidate_spec"] == "pr 1"
    passed = gating.Gate(found.baseline, found.candidate, 0.05, (item("pgbench-tpcb", gating.PASS),))
    assert bisecting.commands(passed, "s.db") == []
