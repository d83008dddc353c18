"""What a store keeps of each label's configuration over all its sessions (schema 26,
group_summaries): made by the first read that finds one missing, read by the next
instead of every session's points, dropped when a session of it (or its label) changes;
the summaries made from them must equal a full recomputation from the points."""

from __future__ import annotations

import dataclasses
import math
import os
import sqlite3
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbarena import records
from dbarena.report import assemble, data
from dbarena.report.shown import Shown
from dbarena.stats import analysis
from dbarena.store import groups as group_rows
from dbarena.store.database import Store

from test_session_summaries import _store_run, runs_

FIXTURES = Path(__file__).parents[1] / "fixtures" / "stores"


def _full(db: Store, **filters: object) -> list[records.LevelSummary]:
    return analysis.summaries(analysis.load(db, **filters), histograms=db.latency_histograms)  # type: ignore[arg-type]


def _kept(path: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(path) as con:
        return con.execute("SELECT label, config_key FROM group_summaries ORDER BY 1, 2").fetchall()


def _three_runs(path: Path) -> None:
    with Store(path) as db:
        for day, label in enumerate(("a", "b", "a")):
            _store_run(db, day, label, False, [(1, False, 1000.0 + day, 0.1), (2, False, 990.0, 0.05),
                                               (2, False, 1010.0 - day, 0.02), (4, True, 0, 0)])


def test_the_first_read_keeps_each_group_and_the_next_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _three_runs(path)
    assert _kept(path) == []  # (made by a read, not as points are stored)
    with Store(path) as db:
        want = _full(db)
        assert analysis.stored_summaries(db) == want
    kept = _kept(path)
    assert {label for label, _ in kept} == {"a", "b"} and len(kept) == len(want)
    # The next read makes its summaries from those rows alone: the points' and the
    # sessions' rows are not read (the sessions' figures emptied here would say otherwise).
    with sqlite3.connect(path) as con:
        con.execute("DROP TRIGGER groups_session_updated")
        con.execute("UPDATE session_summaries SET figures = '{}'")
    with Store(path) as db:
        assert analysis.stored_summaries(db) == want
        assert analysis.stored_summaries(db, labels=("a",)) == _full(db, labels=("a",))


@pytest.mark.parametrize("name", ["demo-seed-a-quick.db", "profiled-sync-async.db", "report-two-labels.db",
                                  "report-mysql-two-labels.db", "agree-two-cpu-one-cpu.db"])
def test_summaries_of_real_runs_from_their_groups_are_the_points_summaries(tmp_path: Path, name: str) -> None:
    """Stores of real runs (pgbench, sysbench and mysqlslap with their histograms,
    warnings, bounds, costs and profiles): each label's and every label's summaries made
    from the kept groups equal those made from every point, to the last bit, with the
    spread between sessions the groups of a configuration lend each other."""
    path = tmp_path / name
    path.write_bytes((FIXTURES / name).read_bytes())
    with Store(path) as db:
        want = _full(db)
        for _ in range(2):  # (the groups made and kept, then read)
            assert analysis.stored_summaries(db) == want
        assert _kept(path)
        for label in dict.fromkeys(r.label for r in db.runs()):
            assert analysis.stored_summaries(db, labels=(label,)) == _full(db, labels=(label,))
        variants = {s.variant for s in want}
        for variant in variants:
            assert analysis.stored_summaries(db, variants=(variant,)) == _full(db, variants=(variant,))


def test_a_search_is_summarised_from_its_points(tmp_path: Path) -> None:
    """An offered rate's group (--slo) gives its label's closed-loop group a capacity made
    from the search's points: such a store's summaries are made from the sessions' rows."""
    path = tmp_path / "c.db"
    path.write_bytes((FIXTURES / "capacity-two-labels.db").read_bytes())
    with Store(path) as db:
        want = _full(db)
        assert any(s.capacity for s in want)
        assert analysis.stored_groups(db) is None
        assert analysis.stored_summaries(db) == want


@pytest.mark.parametrize("edit", [
    "UPDATE points SET status = 'failed' WHERE id = 2",
    "UPDATE runs SET label = 'b' WHERE id = 3",
    "UPDATE runs SET label = 'c' WHERE id = 2",
    "UPDATE runs SET host = 'other' WHERE id = 1",
    "DELETE FROM session_summaries WHERE run_id = 2",
    "UPDATE session_summaries SET points = 1 WHERE run_id = 1 AND points = 2",
])
def test_a_change_to_a_session_or_a_label_drops_its_groups(tmp_path: Path, edit: str) -> None:
    """A point, a run's label or host, a session's row edited (by dbarena or by hand):
    the groups that session was part of go, and the next read makes them again, as a
    read of every point would."""
    path = tmp_path / "s.db"
    _three_runs(path)
    with Store(path) as db:
        analysis.stored_summaries(db)
    before = len(_kept(path))
    with sqlite3.connect(path) as con:
        con.executescript(edit)
    assert len(_kept(path)) < before
    with Store(path) as db:
        assert analysis.stored_summaries(db) == _full(db)


def test_a_run_stored_after_drops_its_configurations_groups(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _three_runs(path)
    with Store(path) as db:
        analysis.stored_summaries(db)
        _store_run(db, 5, "b", False, [(1, False, 1200.0, 0.1)])
        kept = _kept(path)
        # (The groups at 2 and 4 threads stay; level 1's go, every label's.)
        assert kept and all(key != _key(db, 1) for _, key in kept)
        assert analysis.stored_summaries(db) == _full(db)
        forgotten = [r.id for r in db.runs() if r.label == "b"]
        db.forget_runs(forgotten)
        assert all(label == "a" for label, _ in _kept(path))
        assert analysis.stored_summaries(db) == _full(db)


def _key(db: Store, threads: int) -> str:
    return next(p.config_key for p in analysis.load(db) if p.threads == threads and p.config_key)


@pytest.mark.parametrize("summary", ["not json", '{"label": "a"}', "[1, 2]"])
def test_a_group_row_that_does_not_read_is_made_again(tmp_path: Path, summary: str) -> None:
    path = tmp_path / "s.db"
    _three_runs(path)
    with Store(path) as db:
        want = analysis.stored_summaries(db)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE group_summaries SET summary = ? WHERE label = 'a'", (summary,))
    with Store(path) as db:
        assert analysis.stored_summaries(db) == want
    with sqlite3.connect(path) as con:
        assert all(orjson.loads(text)["label"] == "a"
                   for (text,) in con.execute("SELECT summary FROM group_summaries WHERE label = 'a'"))


def test_a_field_of_the_wrong_type_is_not_read() -> None:
    """Each field is checked for what LevelSummary holds there: a row edited into text
    where a figure was, a list where an object was, does not become a summary."""
    with Store(":memory:") as db:
        _store_run(db, 0, "a", False, [(1, False, 1000.0, 0.1), (1, False, 1010.0, 0.1)])
        group = analysis.own_summaries(analysis.load(db), db.latency_histograms)[0]
    row = group_rows.encoded(group, 8)
    assert row is not None
    assert group_rows.decoded(row[3], row[4]) == group
    found = orjson.loads(row[4])
    for name, value in (("mean", "fast"), ("threads", 1.5), ("warnings", [1]), ("config", [1]),
                        ("interference", {"points": 1}), ("session_means", [1]), ("lower_is_better", 0)):
        assert group_rows.decoded(row[3], orjson.dumps({**found, name: value}).decode()) is None, name


def test_a_figure_json_cannot_give_back_is_not_kept() -> None:
    """NaN and the infinities have no JSON: a group holding one is summarised at each
    read rather than kept as a null that would read back as another figure."""
    with Store(":memory:") as db:
        _store_run(db, 0, "a", False, [(1, False, 1000.0, 0.1)])
        group = analysis.own_summaries(analysis.load(db), db.latency_histograms)[0]
    assert group_rows.encoded(group, 8) is not None
    odd = dataclasses.replace(group, summary=dataclasses.replace(group.summary, cv=math.inf))
    assert group_rows.encoded(odd, 8) is None


def test_an_older_store_read_through_a_copy_in_memory_is_summarised_all_the_same(tmp_path: Path) -> None:
    """A store of an older schema opened to read (migrated in a copy in memory, which keeps
    no summaries): its groups are made from the sessions made from its points, each read."""
    path = tmp_path / "old.db"
    path.write_bytes((FIXTURES / "demo-seed-a-quick.db").read_bytes())
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] < 26
    with Store(path, readonly=True) as db:
        assert db.migrated_from is not None
        want = _full(db)
        assert want and analysis.stored_summaries(db) == want
        assert analysis.stored_summaries(db) == want


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(runs=st.lists(runs_, min_size=1, max_size=5), shown=st.sampled_from([(), ("a",), ("a", "b"), ("b", "c")]),
       relabel=st.booleans())
def test_a_report_made_from_the_groups_is_the_one_made_from_every_point(
        tmp_path_factory: pytest.TempPathFactory, runs: list[tuple[str, bool, list[tuple[int, bool, float, float]]]],
        shown: tuple[str, ...], relabel: bool) -> None:
    """Stores of runs of several labels, levels, sessions and failures (one of them
    another configuration under its label: its series named apart), each report of some
    of their labels made from the groups the store keeps (analysis.stored_groups, then
    from those alone) is the report made from every point, to the last bit, with the
    points each level links to and the profiled ones."""
    path = tmp_path_factory.mktemp("groups") / "s.db"
    with Store(path) as db:
        for day, (label, warmup, points) in enumerate(runs):
            _store_run(db, day, label, warmup, points)
        if relabel and len(runs) > 1:
            db.db.execute("UPDATE points SET config = json_set(config, '$.params.scale', 2),"
                          " config_key = 'other' || config_key WHERE run_id = 1")
            db.db.commit()
        stored = {r.label for r in db.runs()}
        chosen = tuple(label for label in shown if label in stored)
        for _ in range(2):  # (groups made, then read)
            made, links = assemble.build_shown(db, assemble.Selection(labels=chosen))
            rows = analysis.load(db, labels=chosen, named=data.series_names)
            others = tuple(label for label in stored if label not in chosen)
            lent = analysis.lent_sessions(db, others) if chosen and others else []
            want, points = data.build_named(rows, db.runs(), labels=list(chosen) or None,
                                            histograms=db.latency_histograms, named=True, lent=lent)
            assert made == want
            assert links == Shown.of_points(points)


@pytest.mark.parametrize("name", ["profiled-sync-async.db", "report-two-labels.db", "report-mysql-two-labels.db",
                                  "agree-two-cpu-one-cpu.db", "demo-seed-a-quick.db"])
def test_compare_made_from_the_groups_is_the_one_made_from_every_point(tmp_path: Path, name: str) -> None:
    """`dbarena compare A B` of two labels reads the groups the store keeps (their
    profiled points' stacks, and the whole records of those a "why" names): its JSON
    rows, profile changes included, and its decision are those made from every point."""
    from dbarena.report import decision as decision_text, export
    from dbarena.stats import decision

    from inprocess import dbarena

    path = tmp_path / name
    path.write_bytes((FIXTURES / name).read_bytes())
    with Store(path) as db:
        labels = list(dict.fromkeys(r.label for r in db.runs()))
        pairs = [(a, b) for a in labels for b in labels if a != b][:4]
        want = {pair: analysis.compare(analysis.load(db), *pair, profile_store=db) for pair in pairs}
        decided = {pair: decision.decide(found, analysis.load(db)) for pair, found in want.items()}
    for pair in pairs:
        for _ in range(2):  # (groups made, then read)
            done = dbarena("compare", *pair, "--json", "--store", str(path))
            if not want[pair]:
                assert done.returncode == 2, done.stderr
                continue
            assert done.returncode == 0, done.stderr
            assert done.stdout == export.dumps([c.as_json() for c in want[pair]], indent=2) + "\n"
            done = dbarena("compare", *pair, "--store", str(path), env={**os.environ, "COLUMNS": "100"})
            assert done.returncode == 0, done.stderr
            assert "\n".join(decision_text.lines(decided[pair], [], width=100)) in done.stdout


def test_an_import_ends_with_its_labels_groups_kept(tmp_path: Path) -> None:
    """`dbarena import` summarises the labels it imported into over their sessions, as a
    run does at its end: the first view reads them."""
    from inprocess import dbarena

    output = Path(__file__).parents[1] / "fixtures" / "pgbench" / "corpus" / "pg14.0-tpcb-progress-P10.txt"
    store = tmp_path / "i.db"
    done = dbarena("import", str(output), "--label", "imported", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert _kept(store) and {label for label, _ in _kept(store)} == {"imported"}
    with Store(store) as db:
        assert analysis.stored_summaries(db) == _full(db)


def test_groups_made_from_sessions_a_writer_changed_meanwhile_are_not_kept(tmp_path: Path) -> None:
    """A reader (serve, during a run) reads the count of session writes, then the sessions,
    and makes their groups; a run stores a point meanwhile (its sessions' rows written,
    the groups of their configurations dropped): the reader's groups, which say what the
    sessions said before, are not kept; made again after the write, they are."""
    path = tmp_path / "s.db"
    _three_runs(path)
    with Store(path) as db:
        before = db.group_generation()
        made = analysis.own_summaries(analysis.stored_points(db), db.latency_histograms)
        _store_run(db, 7, "a", False, [(1, False, 1200.0, 0.1)])  # (the writer, meanwhile)
        assert db.group_generation() != before
        db.save_group_summaries(made, analysis.ESTIMATOR_VERSION, before)
        assert _kept(path) == []
        now = db.group_generation()
        made = analysis.own_summaries(analysis.stored_points(db), db.latency_histograms)
        db.save_group_summaries(made, analysis.ESTIMATOR_VERSION, now)
        assert len(_kept(path)) == len(made)
        assert analysis.stored_summaries(db) == _full(db)
