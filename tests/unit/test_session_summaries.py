"""The summaries a store keeps of each configuration's points by session (schema 23,
session_summaries): kept as points are stored (analysis.derive, what a run and an import
call) and as runs are forgotten or merged, they must equal a full recomputation from the
points; and what a report lends from them must give the estimates the points give."""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inprocess import dbarena

from dbarena.report.shown import Shown
from dbarena.serve import app as serve_app
from dbarena.model import Measurement, PointResult, PointSpec, RunInfo, Sample
from dbarena import records
from dbarena.errors import UsageError
from dbarena.stats import analysis, configkey
from dbarena.stats import gate as gating
from dbarena.store import merge as merging
from dbarena.store.database import Store

T0 = datetime(2026, 11, 1, tzinfo=timezone.utc)
HOST = {"cpu_model": "test cpu", "hardware_threads": 2, "memory_bytes": 8 * 2 ** 30, "kernel": "6.1.0"}
LABELS = ("a", "b", "c")

# A point: its level (the configuration), whether it failed, its throughput, its
# series' wobble (which moves its steady-state mean off the printed figure).
points_ = st.tuples(st.sampled_from((1, 2, 4)), st.booleans(), st.floats(100.0, 50_000.0),
                    st.floats(0.0, 0.2))
# A run: its label, a warm-up or not, its points.
runs_ = st.tuples(st.sampled_from(LABELS), st.booleans(), st.lists(points_, min_size=1, max_size=5))


def _result(level: int, failed: bool, tps: float, wobble: float, *, phase: str = "measured") -> PointResult:
    spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=level, clients=level, duration_s=6,
                     params=(("scale", 1),))
    if failed:
        return PointResult(spec=spec, status="failed", started_at=T0, ended_at=T0, command=("pgbench",),
                           exit_code=1, stdout="", stderr="boom", error="pgbench: error: boom", phase=phase)
    samples = tuple(Sample(second=float(s), tps=tps * (1 + wobble * ((s * 7) % 5 - 2) / 2), latency_ms=1.0, failed=0)
                    for s in range(1, 7))
    return PointResult(spec=spec, status="ok", started_at=T0, ended_at=T0 + timedelta(seconds=6),
                       command=("pgbench",), exit_code=0, stdout="", stderr="",
                       measurement=Measurement(tps=tps, transactions=int(tps * 6), latency_avg_ms=1.0),
                       samples=samples, phase=phase)


def _config(level: int) -> dict[str, object]:
    return configkey.build(engine="postgres", workload="pgbench-tpcb", threads=level, clients=level, duration_s=6,
                           warmup_s=0, params={"scale": 1}, options={}, settings={}, variant="",
                           server_version="17.2", flavour="postgresql", host=configkey.host_identity(HOST))


def _store_run(db: Store, day: int, label: str, warmup: bool, points: list[tuple[int, bool, float, float]]) -> int:
    """A run stored as `dbarena run` stores it: each point, then its derived figures
    (analysis.derive, which folds it into the run's summaries)."""
    run_id = db.begin_run(RunInfo(label=label, host="box", engine="postgres", target="postgresql://x@127.0.0.1:1/x",
                                  started_at=T0 + timedelta(days=day), server_version="17.2",
                                  tool_versions={}, options={}, host_facts=HOST, target_facts={}))
    if warmup:
        level = points[0][0]
        point_id = db.add_point(run_id, _result(level, False, 1000.0, 0.0, phase="warmup"), config=_config(level))
        analysis.derive(db, run_id, [point_id])
    for level, failed, tps, wobble in points:
        point_id = db.add_point(run_id, _result(level, failed, tps, wobble), config=_config(level))
        analysis.derive(db, run_id, [point_id])
    db.finish_run(run_id, "finished")
    return run_id


def _kept(db: Store) -> list[tuple[object, ...]]:
    found = db.session_summaries([r.id for r in db.runs()], analysis.ESTIMATOR_VERSION)
    return sorted((s.run_id, s.label, s.config_key, s.members) for s in found)


def _recomputed(db: Store) -> list[tuple[object, ...]]:
    return sorted((s.run_id, s.label, s.config_key, s.members) for s in analysis.session_summaries(analysis.load(db)))


def _estimates(rows: list[object]) -> list[tuple[object, ...]]:
    return [(s.label, s.config_key, s.estimate, s.between_sessions, s.sessions) for s in rows]  # type: ignore[attr-defined]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(runs=st.lists(runs_, min_size=1, max_size=6), forget=st.sets(st.integers(0, 5), max_size=2))
def test_kept_summaries_are_a_full_recomputation_and_lend_what_the_points_lend(
        tmp_path_factory: pytest.TempPathFactory, runs: list[tuple[str, bool, list[tuple[int, bool, float, float]]]],
        forget: set[int]) -> None:
    path = tmp_path_factory.mktemp("summaries") / "s.db"
    with Store(path) as db:
        ids = [_store_run(db, day, label, warmup, points) for day, (label, warmup, points) in enumerate(runs)]
        gone = [ids[i] for i in sorted(forget) if i < len(ids)]
        if gone and len(gone) < len(ids):
            db.forget_runs(gone)
        # Kept as the points were stored and the runs forgotten: what a full read makes.
        assert _kept(db) == _recomputed(db)
        # A summary of the configurations made from those rows (their points' figures as
        # the rows keep them) is the one made from the points, to the last bit; of a label too.
        assert analysis.stored_summaries(db) == analysis.summaries(analysis.load(db), histograms=db.latency_histograms)
        first = db.runs()[0].label if db.runs() else "a"
        assert analysis.stored_summaries(db, labels=(first,)) == analysis.summaries(
            analysis.load(db, labels=(first,)), histograms=db.latency_histograms)
        if gone and len(gone) < len(ids):
            assert db.session_summaries(gone, analysis.ESTIMATOR_VERSION) == []
        # What the other labels lend a view of one: the estimates their points give.
        stored = list(dict.fromkeys(r.label for r in db.runs()))
        shown, others = stored[0], tuple(stored[1:])
        rows = analysis.load(db, labels=(shown,))
        kept, stale = db.lent_sessions(others, analysis.ESTIMATOR_VERSION)
        assert stale == []
        lent = analysis.lent_sessions(db, others)
        assert lent == kept
        by_points = [s for s in analysis.summaries([*rows, *analysis.load(db, labels=others)]) if s.label == shown]
        assert _estimates(analysis.summaries(rows, lent=lent)) == _estimates(by_points)
        # `compare A B` of two labels: their points and the others' summaries, or every point.
        if len(stored) >= 2:
            a, b = stored[:2]
            rest = tuple(stored[2:])
            assert analysis.compare(analysis.load(db, labels=(a, b)), a, b, lent=analysis.lent_sessions(db, rest)) \
                == analysis.compare(analysis.load(db), a, b)
        # The gate of two runs: their labels' other runs lend from their summaries.
        kept_runs = [r.id for r in db.runs()]
        if len(kept_runs) >= 2:
            sides = gating.side(db, str(kept_runs[0])), gating.side(db, str(kept_runs[-1]))
            lending = gating.lenders(db, *sides)
            assert lending.history == [] and {s.run_id for s in lending.lent}.isdisjoint(kept_runs[:1] + kept_runs[-1:])
            assert _gated(*sides, lent=lending.lent) == _gated(*sides, history=gating.history(db, *sides))
            # serve's /diff of the two runs: every other run of the store lends, as its points did.
            before, after = kept_runs[0], kept_runs[-1]
            every = analysis.load(db)
            pair = [p for p in every if p.run_id == before], [p for p in every if p.run_id == after]
            names = f"run {before}", f"run {after}"
            by_points = analysis.compare(gating.as_labels(*zip(names, pair)), *names, about=gating.ABOUT,
                                         history=[p for p in every if p.run_id not in (before, after)]) \
                if all(pair) else []
            assert serve_app.diff_levels(db, before, after)[0] == by_points


def _gated(*sides: gating.Side, **lenders: object) -> object:
    """The gate's result, or the one line it refuses with."""
    try:
        return gating.gate(*sides, 0.05, **lenders)  # type: ignore[arg-type]
    except UsageError as exc:
        return str(exc)


def test_a_run_without_summaries_is_summarised_by_the_read_that_lends_it(tmp_path: Path) -> None:
    """A store migrated to schema 23 (its table empty), a point stored by an older
    dbarena (no summary of it), a row of another estimator version: each run short of
    its points is summarised again from them, and saved for the next read."""
    path = tmp_path / "s.db"
    with Store(path) as db:
        for day, label in enumerate(("a", "b", "b", "c")):
            _store_run(db, day, label, False, [(1, False, 1000.0 + day, 0.1), (1, False, 990.0, 0.05), (2, True, 0, 0)])
        want = _kept(db)
    con = sqlite3.connect(path)
    with con:
        con.execute("DELETE FROM session_summaries WHERE run_id = 2")
        con.execute("UPDATE session_summaries SET estimator = estimator - 1 WHERE run_id = 3")
        # (A run whose second point came after its summary was written: one short.)
        con.execute("UPDATE session_summaries SET points = 1, runs = 1 WHERE run_id = 4 AND points = 2")
    con.close()
    with Store(path) as db:
        before, stale = db.lent_sessions(("b", "c"), analysis.ESTIMATOR_VERSION)
        assert stale == [2, 3, 4] and before == []
        lent = analysis.lent_sessions(db, ("b", "c"))
        assert [s.run_id for s in lent] == [2, 2, 3, 3, 4, 4]
        assert _kept(db) == want
        assert db.lent_sessions(("b", "c"), analysis.ESTIMATOR_VERSION) == (lent, [])


def test_a_merge_summarises_the_runs_it_brings(tmp_path: Path) -> None:
    source, into = tmp_path / "source.db", tmp_path / "into.db"
    with Store(source) as db:
        _store_run(db, 0, "a", False, [(1, False, 1000.0, 0.1), (2, False, 2000.0, 0.1)])
        _store_run(db, 1, "b", True, [(1, False, 900.0, 0.1), (1, True, 0, 0)])
    with Store(into) as db:
        _store_run(db, 0, "z", False, [(4, False, 3000.0, 0.0)])
        assert merging.merge(db, source, say=lambda _: None, tell=lambda _: None) == (2, 5)
        assert _kept(db) == _recomputed(db) and len(_kept(db)) == 4
        # The merged runs' rows hold what theirs did in the store they came from.
        with Store(source, readonly=True) as other:
            theirs = [dataclasses.replace(s, run_id=s.run_id + 1,
                                          members=tuple(m._replace(point_id=m.point_id + 1, run_id=m.run_id + 1)
                                                        for m in s.members))
                      for s in other.session_summaries([1, 2], analysis.ESTIMATOR_VERSION)]
        assert db.session_summaries([2, 3], analysis.ESTIMATOR_VERSION) == theirs


def test_summaries_from_rows_without_figures_are_made_from_the_points_and_kept(tmp_path: Path) -> None:
    """Rows written before schema 25 (no figures), a row whose figures do not read: the
    read summarises those runs from their points, saves their rows, and the next read
    makes the same summaries from the rows alone."""
    path = tmp_path / "s.db"
    with Store(path) as db:
        for day, label in enumerate(("a", "b", "a")):
            _store_run(db, day, label, False, [(1, False, 1000.0 + day, 0.1), (2, False, 990.0, 0.05), (2, True, 0, 0)])
        want = analysis.summaries(analysis.load(db), histograms=db.latency_histograms)
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE session_summaries SET figures = NULL WHERE run_id = 1")
        con.execute("UPDATE session_summaries SET figures = '{\"shared\": 3}' WHERE run_id = 3")
        # (A figure edited into text, a dip into text: each column's types are checked.)
        for column, value in (("value", "fast"), ("dips_s", ["x"])):
            key, found = con.execute("SELECT config_key, figures FROM session_summaries WHERE run_id = 2"
                                     f" ORDER BY config_key LIMIT 1 OFFSET {column == 'dips_s'}").fetchone()
            figures = json.loads(found)
            figures["columns"][records.SummaryPoint._fields.index(column)][0] = value
            con.execute("UPDATE session_summaries SET figures = ? WHERE run_id = 2 AND config_key = ?",
                        (json.dumps(figures), key))
    con.close()
    with Store(path) as db:
        assert db.summarised([1, 2, 3], analysis.ESTIMATOR_VERSION)[1] == [1, 2, 3]
        assert analysis.stored_summaries(db) == want
        assert db.summarised([1, 2, 3], analysis.ESTIMATOR_VERSION)[1] == []
        assert analysis.stored_summaries(db) == want
        assert analysis.stored_summaries(db, run_id=2) == analysis.summaries(
            analysis.load(db, run_id=2), histograms=db.latency_histograms)


@pytest.mark.parametrize("name", ["demo-seed-a-quick.db", "capacity-two-labels.db", "profiled-sync-async.db"])
def test_summaries_of_real_runs_from_their_rows_are_the_points_summaries(tmp_path: Path, name: str) -> None:
    """Stores of real runs (tests/fixtures/stores: pgbench, sysbench and mysqlslap with
    their histograms, warnings, bounds and profiles; a capacity search): the summaries
    made from the session rows equal those made from every point."""
    path = tmp_path / name
    path.write_bytes((Path(__file__).parents[1] / "fixtures" / "stores" / name).read_bytes())
    with Store(path) as db:
        want = analysis.summaries(analysis.load(db), histograms=db.latency_histograms)
        assert analysis.stored_summaries(db) == want  # (rows made from the points by this read)
        assert db.summarised([r.id for r in db.runs()], analysis.ESTIMATOR_VERSION)[1] == []
        assert analysis.stored_summaries(db) == want  # (from the rows alone)


@pytest.mark.parametrize("edit", [
    "UPDATE points SET status = 'failed' WHERE id = 2",
    "UPDATE points SET tps = tps * 3",
    "DELETE FROM samples WHERE point_id = 2; DELETE FROM point_derived WHERE point_id = 2;"
    " DELETE FROM raw_outputs WHERE point_id = 2; DELETE FROM points WHERE id = 2",
    "UPDATE runs SET host = 'other' WHERE id = 1",
    "UPDATE hosts SET facts = '{\"hardware_threads\": 64}'",
])
def test_a_row_edited_by_hand_reaches_the_next_summary(tmp_path: Path, edit: str) -> None:
    """An edit by hand of a row a session summary was made from (a point, its run, its
    host) drops the run's summaries (schema 25's triggers): the next summary is made
    from the points again and shows the edit, as one made from every point does."""
    path = tmp_path / "s.db"
    with Store(path) as db:
        for day, label in enumerate(("a", "a")):
            _store_run(db, day, label, False, [(1, False, 1000.0 + day, 0.1), (1, False, 990.0, 0.05), (2, False, 5.0, 0)])
        before = analysis.stored_summaries(db)
    con = sqlite3.connect(path)
    with con:
        con.executescript(edit)
    con.close()
    with Store(path) as db:
        assert db.summarised([1, 2], analysis.ESTIMATOR_VERSION)[1] != []
        after = analysis.stored_summaries(db)
        assert after == analysis.summaries(analysis.load(db), histograms=db.latency_histograms)
        # (A failed or deleted point changes what is shown; the others may not: the value
        # is the steady-state mean, not the printed tps, and no figure here is of the host.)
        assert after != before or "points SET status" not in edit and "DELETE" not in edit


@pytest.mark.parametrize("name", ["demo-seed-a-quick.db", "capacity-two-labels.db", "profiled-sync-async.db",
                                  "report-two-labels.db", "report-mysql-two-labels.db", "agree-two-cpu-one-cpu.db"])
def test_a_report_made_from_the_session_rows_is_the_one_made_from_every_point(tmp_path: Path, name: str) -> None:
    """`report` and serve's Decide build their model from what the session rows hold of
    the points (analysis.stored_points) and read the whole records only of the points a
    decision's "why" names: the model, decisions and their reasons included, is the one
    made from every point's record (analysis.load), of every label and of each pair."""
    from dbarena.report import assemble, data, export

    path = tmp_path / name
    path.write_bytes((Path(__file__).parents[1] / "fixtures" / "stores" / name).read_bytes())
    with Store(path) as db:
        labels = list(dict.fromkeys(r.label for r in db.runs()))
        choices = [(), *((a, b) for a in labels for b in labels if a != b)]
        for chosen in choices:
            selection = assemble.Selection(labels=chosen)
            from_rows, shown = assemble.build_shown(db, selection)
            rows = analysis.load(db, labels=chosen, named=data.series_names)
            others = tuple(label for label in labels if label not in chosen)
            lent = analysis.lent_sessions(db, others) if chosen and others else []
            from_points, points = data.build_named(rows, db.runs(), labels=list(chosen) or None,
                                                   histograms=db.latency_histograms, named=True, lent=lent)
            assert export.to_json(from_rows) == export.to_json(from_points), chosen
            assert from_rows == from_points, chosen
            assert shown == Shown.of_points(points), chosen


@pytest.mark.parametrize("name", ["capacity-two-labels.db", "profiled-sync-async.db", "report-two-labels.db",
                                  "report-mysql-two-labels.db", "agree-two-cpu-one-cpu.db", "v11.db"])
def test_compare_made_from_the_session_rows_is_the_one_made_from_every_point(tmp_path: Path, name: str) -> None:
    """`dbarena compare A B` of two labels reads what the session rows hold of their
    points (analysis.stored_points) and the whole records of the points a "why" names:
    every pair's level rows, decisions and reasons are those made from every point's
    record, and what the command prints is that decision."""
    from dbarena.report import decision as decision_text
    from dbarena.stats import decision

    path = tmp_path / name
    path.write_bytes((Path(__file__).parents[1] / "fixtures" / "stores" / name).read_bytes())
    with Store(path) as db:
        labels = list(dict.fromkeys(r.label for r in db.runs()))
        pairs = [(a, b) for a in labels for b in labels if a != b]
        assert pairs
        for a, b in pairs:
            lent = analysis.lent_sessions(db, tuple(x for x in labels if x not in (a, b)))
            points = analysis.load(db, labels=(a, b))
            want = analysis.compare(points, a, b, profile_store=db, lent=lent)
            rows = analysis.stored_points(db, labels=(a, b))
            got = analysis.compare(rows, a, b, profile_store=db, lent=lent)
            assert got == want, (a, b)
            decided = decision.decide(got, rows, records=lambda ids: analysis.load(db, point_ids=tuple(ids)))
            assert decided == decision.decide(want, points), (a, b)
            done = dbarena("compare", a, b, "--store", str(path), env={**os.environ, "COLUMNS": "100"})
            if not want:  # (the one line that says why)
                assert done.returncode == 2 and done.stderr == f"dbarena: error: {a!r} and {b!r} have no point " \
                                                               f"(engine, workload, threads) in common\n"
                continue
            printed = "\n".join(decision_text.lines(decided, [], width=100))
            assert done.returncode == 0 and printed in done.stdout, (a, b, done.stdout, done.stderr)


@pytest.mark.parametrize("name", ["capacity-two-labels.db", "profiled-sync-async.db", "report-two-labels.db",
                                  "demo-seed-a-quick.db", "v11.db"])
def test_history_made_from_the_session_rows_is_the_one_made_from_every_point(tmp_path: Path, name: str) -> None:
    """`dbarena history` (and serve's History, the report's section) reads what the
    session rows hold of the points: every series, its runs' figures, intervals,
    environments and change points are those made from every point's record."""
    from dbarena.stats import history

    path = tmp_path / name
    path.write_bytes((Path(__file__).parents[1] / "fixtures" / "stores" / name).read_bytes())
    with Store(path) as db:
        points = analysis.load(db)
        want = history.History(tuple(history.build(points, db.runs_by_id({p.run_id for p in points}).values())))
        got = history.of_store(db)
        assert got.series and got == want
        labels = list(dict.fromkeys(r.label for r in db.runs()))
        assert history.of_store(db, history.Filter(labels=(labels[-1],))).series == tuple(
            s for s in want.series if s.label == labels[-1])
