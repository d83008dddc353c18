"""`gate --confirm N` (run/confirm.py) over a real store, with the measuring of a study
faked: each confirming "run" is stored as a run of the study it was given, with the
figures the test chooses. What is checked: which study each side gets (its own, narrowed
to the regressed workloads, under its label), that the sides interleave, that the
verdict is taken on all runs, and where the baseline is not measured again."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from dbarena.errors import DbarenaError
from dbarena.model import Measurement, PointResult, PointSpec, RunInfo, Sample, StudyRecord
from dbarena.records import JSONObject
from dbarena.run import confirm, plan
from dbarena.stats import configkey
from dbarena.stats import gate as gating
from dbarena.store.database import Store
from dbarena.study import Study, arguments

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
HOST: JSONObject = {"cpu_model": "test cpu", "hardware_threads": 2, "memory_bytes": 8 * 2 ** 30,
                    "hostname": "box"}
ELSEWHERE: JSONObject = {**HOST, "cpu_model": "another cpu", "hostname": "far"}


def _study(label: str, *workloads: str) -> Study:
    return arguments.study_from_args(["--threads", "1,2", "--duration", "4", "--scale", "1", "--repeat", "3",
                                      "--label", label, "--workload", ",".join(workloads)])


def _store_run(db: Store, study: Study, figures: dict[str, list[float]], facts: JSONObject = HOST,
               day: int = 0, version: str = "17.2", scale: float = 1.0) -> int:
    """A finished run (one session) of `study` whose points at each level have these TPS
    (per repeat, times the level and `scale`), as session.run would store them."""
    label = study.label or "x"
    run_id = db.begin_run(RunInfo(
        label=label, host=str(facts["hostname"]), engine="postgres",
        target="postgresql://dbarena@127.0.0.1:1/dbarena", started_at=T0 + timedelta(hours=day),
        server_version=version, tool_versions={"pgbench": "pgbench 17.2"},
        options={"targets": {}, "flags": dict(study.flags), "source": study.source}, host_facts=facts,
        target_facts={"settings": {}},
        study=StudyRecord(name=study.name, source=study.source, text=study.text, sha256=study.sha256)))
    (engine_plan,) = plan.expand(study, lambda engine: 2)
    for spec in engine_plan.points:
        tps = figures[spec.workload][spec.repeat % len(figures[spec.workload])] * spec.threads * scale
        config = configkey.build(engine="postgres", workload=spec.workload, threads=spec.threads,
                                 clients=spec.clients, duration_s=spec.duration_s, warmup_s=0,
                                 params=dict(spec.params), options=dict(spec.options), settings={}, variant="",
                                 server_version=version, flavour="postgresql", host=configkey.host_identity(facts))
        started = T0 + timedelta(hours=day, seconds=spec.repeat)
        db.add_point(run_id, PointResult(
            spec=spec, status="ok", started_at=started, ended_at=started + timedelta(seconds=4),
            command=("pgbench",), exit_code=0, stdout="", stderr="",
            measurement=Measurement(tps=tps, transactions=int(tps * 4), latency_avg_ms=1000 / tps),
            samples=tuple(Sample(second=float(s), tps=tps, latency_ms=1000 / tps, failed=0) for s in range(1, 5))),
            config=config)
    db.finish_run(run_id, "finished")
    return run_id


class FakeMeasure:
    """Stores a run of each study it is given, with the figures of its label."""

    def __init__(self, db: Store, figures: dict[str, dict[str, list[float]]], versions: dict[str, str] | None = None):
        self.db, self.figures, self.versions = db, figures, versions or {}
        self.studies: list[Study] = []

    def __call__(self, study: Study) -> tuple[list[int], str | None]:
        self.studies.append(study)
        label = (study.label or "").rsplit(confirm.CONFIRMING, 1)[0]  # the side's figures
        return [_store_run(self.db, study, self.figures[label], day=len(self.studies) + 10,
                           version=self.versions.get(label, "17.2"))], None


TIGHT = [1000.0, 1004.0, 996.0]
WIDE = [880.0, 1120.0, 1000.0]
SLOW = [800.0, 803.0, 797.0]


def _gate(db: Store, baseline: str = "a", candidate: str = "b") -> gating.Gate:
    """The gate as `dbarena gate` makes it: with the sides' labels' other runs (history)."""
    sides = gating.side(db, baseline), gating.side(db, candidate)
    return gating.gate(*sides, 0.05, history=gating.history(db, *sides))


def test_noise_that_leaves_the_gate_inconclusive_passes_once_confirmed(tmp_path: Path) -> None:
    """Two sessions a side; b's two sessions of pgbench-tpcb 10 % apart (its select-only
    as tight as a's): tpcb is inconclusive, select-only passes, and tpcb alone is measured
    again."""
    with Store(tmp_path / "s.db") as db:
        for scale in (1.0, 1.004):
            _store_run(db, _study("a", "pgbench-tpcb", "pgbench-select-only"),
                       {"pgbench-tpcb": TIGHT, "pgbench-select-only": TIGHT}, scale=scale)
        for scale, tpcb in ((1.0, 0.95), (1.004, 1.05)):
            _store_run(db, _study("b", "pgbench-tpcb", "pgbench-select-only"),
                       {"pgbench-tpcb": [v * tpcb / scale for v in TIGHT], "pgbench-select-only": TIGHT}, day=1,
                       scale=scale)
        first = _gate(db)
        assert first.status == gating.INCONCLUSIVE
        assert confirm.regressed(first) == {("postgres", "pgbench-tpcb")}, [i.text for i in first.items]
        fake = FakeMeasure(db, {"a": {"pgbench-tpcb": TIGHT}, "b": {"pgbench-tpcb": TIGHT}})
        again, done = confirm.confirm(db, first, "a", "b", 3, fake, here=HOST)
    # Each side's own study, narrowed to the regressed workload, under a label of its
    # own (not the side's), interleaved baseline first.
    assert [s.label for s in fake.studies] == ["a-confirm-1", "b-confirm-1"] * 3
    assert all([w.workload for w in s.workloads] == ["pgbench-tpcb"] for s in fake.studies)
    assert done is not None and done.first is first and done.baseline_not_here is None
    assert len(done.baseline_runs) == len(done.candidate_runs) == 3
    # Judged on every run: 12 points a side at each level of the regressed workload.
    assert again.status == gating.PASS, [(i.text, i.levels) for i in again.items]
    assert done.line().startswith("confirmed: the first gate was inconclusive; 3 more run(s) of the candidate and "
                                  "3 of the baseline, interleaved, measured here (stored as 'a-confirm-1' and "
                                  "'b-confirm-1'), then judged on all runs")
    assert again.baseline.what == "label 'a' (runs 1, 2) and its confirming run(s) 5, 7, 9"


def test_a_real_regression_still_fails_after_confirming(tmp_path: Path) -> None:
    """Two runs, each one session: the spread between sessions comes from each label's
    two earlier runs of the same configuration (gate.history)."""
    with Store(tmp_path / "s.db") as db:
        base = [_store_run(db, _study("a", "pgbench-tpcb"), {"pgbench-tpcb": TIGHT}, scale=scale)
                for scale in (1.0, 1.004, 0.998)][-1]
        cand = [_store_run(db, _study("b", "pgbench-tpcb"), {"pgbench-tpcb": SLOW}, day=1, scale=scale)
                for scale in (1.0, 1.004, 0.998)][-1]
        first = _gate(db, str(base), str(cand))
        assert first.status == gating.FAIL, [i.text for i in first.items]
        fake = FakeMeasure(db, {"a": {"pgbench-tpcb": TIGHT}, "b": {"pgbench-tpcb": SLOW}})
        again, done = confirm.confirm(db, first, str(base), str(cand), 1, fake, here=HOST)
    assert again.status == gating.FAIL and again.exit_status == gating.EXIT_FAIL
    assert done is not None and done.baseline_runs == (7,) and done.candidate_runs == (8,)
    # A side given as a run grows by the runs measured again for it.
    assert again.candidate.what == "run 6 (label 'b') and its confirming run(s) 8"
    assert {p.run_id for p in again.candidate.points} == {6, 8}


def test_a_baseline_measured_on_another_machine_is_not_measured_again(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        _store_run(db, _study("a", "pgbench-tpcb"), {"pgbench-tpcb": TIGHT}, facts=ELSEWHERE)
        _store_run(db, _study("b", "pgbench-tpcb"), {"pgbench-tpcb": WIDE}, day=1)
        first = _gate(db)
        fake = FakeMeasure(db, {"b": {"pgbench-tpcb": TIGHT}})
        again, done = confirm.confirm(db, first, "a", "b", 2, fake, here=HOST)
    assert [s.label for s in fake.studies] == ["b-confirm-1", "b-confirm-1"]
    assert done is not None and done.baseline_runs == () and len(done.candidate_runs) == 2
    assert done.baseline_not_here == "run 1 was measured on another machine (far)"
    assert "(the baseline was not measured again: run 1 was measured on another machine (far))" in done.line()


def test_a_gate_that_passes_measures_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        for scale in (1.0, 1.004):
            _store_run(db, _study("a", "pgbench-tpcb"), {"pgbench-tpcb": TIGHT}, scale=scale)
            _store_run(db, _study("b", "pgbench-tpcb"), {"pgbench-tpcb": TIGHT}, day=1, scale=scale)
        first = _gate(db)
        fake = FakeMeasure(db, {})
        again, done = confirm.confirm(db, first, "a", "b", 3, fake, here=HOST)
    assert first.status == gating.PASS and again is first and done is None and fake.studies == []


def test_a_run_without_its_study_cannot_be_confirmed_in_one_line(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        _store_run(db, _study("a", "pgbench-tpcb"), {"pgbench-tpcb": TIGHT})
        _store_run(db, _study("b", "pgbench-tpcb"), {"pgbench-tpcb": SLOW}, day=1)
    with sqlite3.connect(tmp_path / "s.db") as raw:  # as a run imported, or stored before runs kept it
        raw.execute("UPDATE runs SET study_sha256 = NULL WHERE id = 2")
    with Store(tmp_path / "s.db") as db:
        first = _gate(db)
        with pytest.raises(DbarenaError) as caught:
            confirm.confirm(db, first, "a", "b", 1, FakeMeasure(db, {}), here=HOST)
    assert str(caught.value) == ("--confirm: label 'b' (run 2): run 2 has no stored study (imported, or stored "
                                 "before runs kept theirs)")


def test_a_run_measured_again_on_another_server_version_is_not_counted(tmp_path: Path) -> None:
    """The baseline's study measured here now runs another server (the machine's binaries
    changed since): that run is stored, but not pooled with the baseline's own points."""
    with Store(tmp_path / "s.db") as db:
        _store_run(db, _study("a", "pgbench-tpcb"), {"pgbench-tpcb": TIGHT})
        _store_run(db, _study("b", "pgbench-tpcb"), {"pgbench-tpcb": SLOW}, day=1)
        first = _gate(db)
        fake = FakeMeasure(db, {"a": {"pgbench-tpcb": TIGHT}, "b": {"pgbench-tpcb": SLOW}}, versions={"a": "18.0"})
        again, done = confirm.confirm(db, first, "a", "b", 1, fake, here=HOST)
    assert done is not None and done.baseline_runs == () and done.candidate_runs == (4,)
    assert done.failed == ("baseline: run 3 measured another configuration than label 'a' (run 1) (threads 1); "
                           "not counted",)
    assert "not counted: baseline: run 3 measured another configuration" in done.line()
    assert {p.run_id for p in again.baseline.points} == {1} and {p.run_id for p in again.candidate.points} == {2, 4}


def test_the_confirming_runs_are_not_in_the_baseline_labels_history(tmp_path: Path) -> None:
    """Issue 52: the runs a gate measured again were stored under the baseline's label
    and became its newest run (the next gate's baseline, history's latest point). They
    are stored under labels of their own, a new number for each gate that confirms; the
    sides' own labels hold what they held, and the next gate judges on those alone."""
    from dbarena.stats import history

    with Store(tmp_path / "s.db") as db:
        _store_run(db, _study("a", "pgbench-tpcb"), {"pgbench-tpcb": TIGHT})
        _store_run(db, _study("b", "pgbench-tpcb"), {"pgbench-tpcb": WIDE}, day=1)
        first = _gate(db)
        fake = FakeMeasure(db, {"a": {"pgbench-tpcb": TIGHT}, "b": {"pgbench-tpcb": WIDE}})
        again, done = confirm.confirm(db, first, "a", "b", 2, fake, here=HOST)
        assert done is not None and done.labels == ("a-confirm-1", "b-confirm-1")
        by_label = {r.id: r.label for r in db.runs()}
        assert by_label == {1: "a", 2: "b", 3: "a-confirm-1", 4: "b-confirm-1", 5: "a-confirm-1", 6: "b-confirm-1"}
        # The verdict was taken on every run, the sides' and those measured again.
        assert {p.run_id for p in again.baseline.points} == {1, 3, 5}
        assert {p.run_id for p in again.candidate.points} == {2, 4, 6}
        # History of the baseline's label: its own run alone.
        found = history.of_store(db, history.Filter(labels=("a",)))
        assert {r.run_id for s in found.series for r in s.runs} == {1}, found.as_dict()
        # A second gate of the same sides: its own number, and judged as the first was.
        second = _gate(db)
        assert {p.run_id for p in second.baseline.points} == {1}
        fake = FakeMeasure(db, {"a": {"pgbench-tpcb": TIGHT}, "b": {"pgbench-tpcb": WIDE}})
        _, done = confirm.confirm(db, second, "a", "b", 1, fake, here=HOST)
        assert done is not None and done.labels == ("a-confirm-2", "b-confirm-2")
