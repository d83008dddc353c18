"""report.assemble, the library side of `dbarena report`: the model of a selection built
from a real store, the one-line errors of a selection the store cannot answer, the
charts drawn from per-second series read in one go, and each format rendered."""

from __future__ import annotations

import dataclasses
import json

import pytest
from points import point
from test_report import MACHINES, T0, store  # noqa: F401  (the fixture: two priced labels, four levels)

from dbarena.errors import UsageError
from dbarena.records import AnalysedPoint, relabelled
from dbarena.model import Measurement, PointResult, PointSpec, RunInfo, Sample
from dbarena.report import assemble, charts, data, export
from dbarena.stats import analysis
from dbarena.stats.price import Price
from dbarena.store.database import Store


def test_the_model_is_the_one_data_build_makes_from_the_same_points(store):
    report = assemble.build(store, assemble.Selection(baseline="x86", at_threads=4))
    assert isinstance(report, data.Report)
    assert report.labels == ["arm", "x86"] and report.baseline == "x86" and report.at_threads == 4
    (section,) = report.sections
    assert (section.engine, section.workload) == ("postgres", "pgbench-tpcb")
    assert section.cheapest.label == "arm"
    assert {(r.label, r.threads): r.tps for r in report.rows} == {
        (label, n): tps for label, (_, _, _, levels) in MACHINES.items() for n, tps in levels.items()}
    direct = data.build(analysis.load(store), store.runs(), baseline="x86", at_threads=4, labels=["arm", "x86"],
                        histograms=store.latency_histograms)
    assert export.to_json(report) == export.to_json(direct)


def test_a_baseline_outside_the_labels_comes_first_and_prices_override_the_stored(store):
    report = assemble.build(store, assemble.Selection(labels=("arm",), baseline="x86",
                                                      prices={"x86": Price(per_hour=0.9)}))
    assert report.labels == ["x86", "arm"] and report.baseline == "x86"
    rows = {(r.label, r.threads): r for r in report.rows}
    assert rows[("x86", 1)].price_per_100_tps == pytest.approx(0.9 / 11)
    assert rows[("arm", 1)].price_per_100_tps == pytest.approx(1.4464 / 10)


@pytest.mark.parametrize("selection", [
    assemble.Selection(labels=("arm", "nope")),
    assemble.Selection(prices={"nope": Price(per_hour=1.0)}),
    assemble.Selection(baseline="nope"),
])
def test_a_label_the_store_does_not_hold_is_one_line(store, selection):
    with pytest.raises(UsageError) as caught:
        assemble.build(store, selection)
    assert str(caught.value) == f"no results labelled 'nope' in {store.location} (labels: arm, x86)"


def test_a_level_no_point_was_measured_at_is_one_line(store):
    with pytest.raises(UsageError) as caught:
        assemble.build(store, assemble.Selection(at_threads=128))
    assert str(caught.value) == "--at-threads 128: no point was measured at 128 threads (levels: 1, 2, 4, 8)"


def test_a_store_without_points_is_one_line(tmp_path):
    with Store(tmp_path / "empty.db") as empty:
        with pytest.raises(UsageError) as caught:
            assemble.build(empty, assemble.Selection())
        assert str(caught.value) == f"no points to report in {empty.location}"


def _with_samples(tmp_path) -> Store:
    """Two labels at one level, each point with a per-second series."""
    db = Store(tmp_path / "series.db")
    for label, tps in (("a", 100.0), ("b", 150.0)):
        run_id = db.begin_run(RunInfo(label=label, host=label, engine="postgres", target="postgresql://b@127.0.0.1:1/b",
                                      started_at=T0, server_version="15.18", tool_versions={}, options={"targets": {}},
                                      host_facts={}, target_facts={}))
        spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=2, clients=2, duration_s=10)
        samples = tuple(Sample(second=float(s), tps=tps + s) for s in range(1, 11))
        db.add_point(run_id, PointResult(spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",),
                                         exit_code=0, stdout="", stderr="", measurement=Measurement(tps=tps),
                                         samples=samples))
        db.finish_run(run_id, "finished")
    return db


def test_charts_show_the_per_second_series_read_in_one_go_as_read_point_by_point(tmp_path):
    db = _with_samples(tmp_path)
    report = assemble.build(db, assemble.Selection())
    (section,) = report.sections
    drawn = assemble.draw(db, report, "html", png=True)
    key = ("postgres", "pgbench-tpcb")
    one_by_one = {label: db.samples(info.point_id) for label, info in section.series.items() if info}
    assert all(one_by_one.values())
    assert drawn.svg[key] == charts.charts(section, one_by_one) and "per_second" in drawn.svg[key]
    assert drawn.png is not None and set(drawn.png[key]) == set(drawn.svg[key])
    assert drawn.png[key]["per_second"].startswith(b"\x89PNG")
    db.close()


def test_csv_and_json_have_no_charts_and_refuse_png(store):
    report = assemble.build(store, assemble.Selection())
    drawn = assemble.draw(store, report, "csv")
    assert drawn.svg == {} and drawn.png is None
    with pytest.raises(UsageError) as caught:
        assemble.draw(store, report, "json", png=True)
    assert str(caught.value) == "--png: json has no charts (give -o FILE.md or FILE.html)"


def test_each_format_renders_the_model(store, tmp_path):
    report = assemble.build(store, assemble.Selection(at_threads=4))
    assert assemble.render(report, "csv", tmp_path / "r.csv") == export.to_csv(report)
    assert json.loads(assemble.render(report, "json", tmp_path / "r.json"))["at_threads"] == 4
    drawn = assemble.draw(store, report, "md")
    text = assemble.render(report, "md", tmp_path / "r.md", drawn)
    assert text.startswith("# dbarena report") and "(r_files/postgres-pgbench-tpcb-throughput.svg)" in text
    assert (tmp_path / "r_files" / "postgres-pgbench-tpcb-throughput.svg").read_text() == \
        drawn.svg[("postgres", "pgbench-tpcb")]["throughput"]
    page = assemble.render(report, "html", tmp_path / "r.html", drawn)
    assert page.startswith("<!doctype html>") and "Price / performance at 4 threads" in page
    with pytest.raises(UsageError):
        assemble.render(report, "pdf", tmp_path / "r.pdf")


def test_series_of_one_label_split_by_clients_per_thread_not_by_their_levels():
    """A label's points at the same levels with 1 and 4 clients a thread are two series
    (never one level row hiding the other); its levels alone never split a series."""
    def row(threads: int, clients: int, key: str) -> AnalysedPoint:
        config = {"engine": "postgres", "workload": "pgbench-tpcb", "threads": threads, "clients": clients}
        return point(label="box", threads=threads, clients=clients, config=config, config_key=key)

    rows = [row(t, t * cpt, f"k{t}-{cpt}") for t in (1, 2, 4) for cpt in (1, 4)]
    named, order, baseline, _ = data.series_labels(rows, ["box"], "box", {})
    by_cpt = {cpt: {r.label for r in named if r.config["clients"] == r.config["threads"] * cpt}
              for cpt in (1, 4)}
    assert all(len(names) == 1 for names in by_cpt.values())  # one series across the levels ...
    assert by_cpt[1] != by_cpt[4] and len(order) == 2          # ... and one per clients a thread
    assert all(name.startswith("box [config ") for name in order) and baseline in order
    assert {r.series_label for r in named} == {"box"}


def test_the_per_second_chart_overlays_the_server_s_waits_and_checkpoints(tmp_path):
    # A series captured from a real run (tests/fixtures/serverside/): a CHECKPOINT forced
    # during a pgbench point, the backends waiting on WAL around it.
    from pathlib import Path

    from dbarena.serverside.series import ServerSeries
    from dbarena.stats import bound

    fixture = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "serverside" /
                          "pg15-simple-update-2clients-checkpoint.json").read_text())
    record = fixture["server"]
    db = Store(tmp_path / "server.db")
    run_id = db.begin_run(RunInfo(label="a", host="a", engine="postgres", target="postgresql://b@127.0.0.1:1/b",
                                  started_at=T0, server_version="15.18", tool_versions={}, options={"targets": {}},
                                  host_facts={}, target_facts={}))
    spec = PointSpec(engine="postgres", workload="pgbench-simple-update", threads=1, clients=2, duration_s=8)
    db.add_point(run_id, PointResult(
        spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",), exit_code=0, stdout="", stderr="",
        measurement=Measurement(tps=600.0), samples=tuple(Sample(second=float(s), tps=600.0) for s in range(1, 9)),
        server=ServerSeries.decode(json.dumps(record))))
    report = assemble.build(db, assemble.Selection())
    (section,) = report.sections
    svg = assemble.draw(db, report, "html").svg[("postgres", "pgbench-simple-update")]["per_second"]
    what, _ = bound.waiting(bound.readings(record))
    assert what in svg and "dashed: checkpoints" in svg
    (row,) = report.rows
    assert row.bound == fixture["stored_bound"]
    bare = charts.charts(section, {"a": db.samples(section.series["a"].point_id)})["per_second"]
    assert what not in bare and "checkpoints" not in bare  # nothing overlaid without the server's series
    db.close()


def test_a_point_relabelled_is_the_copy_dataclasses_replace_makes():
    """records.relabelled (series_labels' fast copy, slot by slot) gives the record
    dataclasses.replace gives: every field the same but the label, the original intact."""
    original = point(label="box", threads=4, clients=8, config={"threads": 4}, config_key="k")
    copy = relabelled(original, "box [config 1a2b3c]")
    assert copy == dataclasses.replace(original, label="box [config 1a2b3c]")
    assert copy.series_label == original.series_label == "box" and original.label == "box"
    assert all(getattr(copy, f.name) is getattr(original, f.name)
               for f in dataclasses.fields(original) if f.name != "label")


def test_a_decision_is_priced_where_the_report_shows_a_label_s_configurations_apart(tmp_path):
    """The decision compares the labels as stored ("a", "b"); the level rows carry the
    series names ("a [config 4c3c47]"): the price line reads each label's price from its
    series (it said nothing when the names differed)."""
    import storebuild

    path = storebuild.build(tmp_path / "built.db")
    with Store(path, readonly=True) as db:
        report = assemble.build(db, assemble.Selection(labels=("a", "b"), baseline="a"))
    assert all(" [config " in name for name in report.labels)  # the labels' configurations shown apart
    (decided,) = report.decisions
    assert decided.price is not None and decided.price.startswith("a is the cheaper for the same work")
    assert f"throughput b / a {decided.ratio:.3f}" in decided.price


def test_a_point_analysed_is_the_record_its_constructor_makes():
    """records.analysed (analysis.load's fast constructor, slot by slot) takes the
    record's own fields in their order and makes what AnalysedPoint(...) makes."""
    from dbarena.records import StoredPoint, analysed

    stored = {f.name for f in dataclasses.fields(StoredPoint)}
    own = [f.name for f in dataclasses.fields(AnalysedPoint) if f.name not in stored]
    code = analysed.__code__
    assert list(code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]) == own
    full = point(label="box", threads=4, clients=8, config={"threads": 4}, config_key="k", steady_tps=12.5,
                 dips_s=[3.0], warnings=[{"code": "short-series", "message": "m"}], bound="server CPU")
    base = StoredPoint(**{name: getattr(full, name) for name in stored})
    derived = {name: getattr(full, name) for name in own}
    assert analysed(base, **derived) == full == AnalysedPoint(**{f: getattr(full, f) for f in stored}, **derived)
