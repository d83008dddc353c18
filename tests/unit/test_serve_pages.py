"""`dbarena serve`'s Workload, History, diff and Hosts pages, and the charts of Decide and
a point, through Starlette's TestClient over stores built with the library: each chart's
data is the report's own derivation (report.data's level rows, stats/history's series,
fleet/outliers' findings), each level links to its own points, a change point to the
diff of the runs on either side; hostile labels stay text inside the charts' data."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

import storebuild
from dbarena.model import RunInfo
from dbarena.report import assemble
from dbarena.report.charts import label_class
from dbarena.store.database import Store
from test_history_and_gate import add_run
from test_serve import BIDI, EVIL, client


def charts(page: str) -> list[dict[str, Any]]:
    """The charts' specs a page holds (what /static/charts.js draws)."""
    return [json.loads(html.unescape(text)) for text in re.findall(r'<div class="chart" data-chart="([^"]*)"', page)]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = storebuild.build(tmp_path_factory.mktemp("pages") / "built.db")
    with Store(path) as db:
        run_id = db.begin_run(RunInfo(label=EVIL, host="box", engine="postgres", target="postgresql://x@h/d",
                                      started_at=storebuild.T0 + timedelta(days=5), server_version="17.2",
                                      tool_versions={}, options={}, host_facts=storebuild.HOST))
        db.add_point(run_id, storebuild._point(800.0, 1, 0, day=5))
        db.finish_run(run_id, "finished")
    return path


def test_a_workload_shows_each_labels_sweep_with_its_band_and_each_level_opens_its_points(built: Path) -> None:
    with client(built) as c:
        page = c.get("/workload", params=[("engine", "postgres"), ("workload", "pgbench-tpcb"), ("baseline", "a"),
                                          ("label", "a"), ("label", "b")])
    assert page.status_code == 200
    with Store(built, readonly=True) as db:
        report = assemble.build(db, assemble.Selection(labels=("a", "b"), baseline="a"))
        points = {p.point_id: p for p in db.points()}
    (section,) = report.sections
    sweep, percentiles = charts(page.text)
    # The report's series (a label's configurations apart: the failed level of 4 threads
    # was stored without one), each with the figures it has.
    drawn = [label for label in section.labels if any(r.label == label and r.value is not None for r in section.rows)]
    assert [s["name"] for s in sweep["series"]] == drawn and len(drawn) == 2
    for series in sweep["series"]:
        rows = sorted((r for r in section.rows if r.label == series["name"]), key=lambda r: r.threads)
        # The report's own figures: each level's value, its interval as the band.
        assert [(p[0], p[1]) for p in series["points"]] == [(r.threads, r.value) for r in rows]
        assert [b[1:] for b in series["band"]] == [[max(r.tps_ci_low or 0, 0.0), r.tps_ci_high] for r in rows]
        assert series["cls"] == label_class(series["name"])
        for threads, _, tip, href in series["points"]:
            opened = points[int(href.removeprefix("/point/"))]
            assert (opened.threads, opened.status) == (threads, "ok")
            assert series["name"] in (opened.label, f"{opened.label} [config {'4c3c47'}]")
            assert f"{threads} threads" in tip
    assert sweep["xticks"] == [1, 2]
    assert {s["name"] for s in percentiles["series"]} >= {f"{drawn[0]} median (p50)", f"{drawn[1]} p99"}
    # The level table: each level's bound and its points (every measured point of a and b), linked.
    levels = page.text[page.text.index('<table class="levels">'):]
    levels = levels[:levels.index("</table>")]
    # (Derived from storebuild's series and samples: 2 active-backend samples, too few to
    # tell; the CPU 40 % busy, the server 0.8 of 2 hardware threads.)
    assert "no single bound" in levels
    linked = sorted(int(n) for n in re.findall(r'<a href="/point/(\d+)">', levels))
    assert linked == sorted(n for n, p in points.items() if p.label in ("a", "b") and p.phase == "measured")
    assert 'href="/decide?baseline=a&amp;label=a&amp;label=b"' in page.text
    assert '<input type="hidden" name="engine" value="postgres">' in page.text


def test_a_workload_the_choice_does_not_hold_is_404_and_without_one_lists_them(built: Path) -> None:
    with client(built) as c:
        missing = c.get("/workload", params=[("engine", "postgres"), ("workload", "nope")])
        listed = c.get("/workload")
    assert missing.status_code == 404
    assert re.findall(r'<p class="error">(.*?)</p>', missing.text) == [
        "no points of postgres nope under the labels chosen (workloads: postgres pgbench-tpcb)"]
    assert listed.status_code == 200 and 'href="/workload?engine=postgres&amp;workload=pgbench-tpcb' in listed.text


def test_decide_draws_each_sections_sweep_and_links_its_workload_page(built: Path) -> None:
    with client(built) as c:
        page = c.get("/decide", params=[("baseline", "a"), ("label", "a"), ("label", "b")])
        classes = re.findall(r'href="/toggles.css\?([^"]+)"', page.text)
        sheet = c.get("/toggles.css?" + html.unescape(classes[0]) + "&c=nope%7Bbody%7D")
    (sweep,) = charts(page.text)
    assert [s["name"].split()[0] for s in sweep["series"]] == ["a", "b"]
    # The decision stays the first section, the chart in its workload's section.
    assert page.text.index('<section id="decision">') < page.text.index('data-chart=')
    assert page.text.index('<section id="postgres-pgbench-tpcb">') < page.text.index('data-chart=')
    assert 'href="/workload?engine=postgres&amp;workload=pgbench-tpcb&amp;baseline=a&amp;label=a&amp;label=b"' \
        in page.text
    # The label toggles' rules: the classes asked, nothing else.
    assert sheet.status_code == 200 and sheet.headers["content-type"].startswith("text/css")
    for series in sweep["series"]:
        assert series["cls"] == label_class(series["name"])
        assert f"#show-{series['cls']}:not(:checked)" in sheet.text and f'id="show-{series["cls"]}"' in page.text
    assert "nope" not in sheet.text


def test_a_points_charts_are_its_stored_series_the_servers_waits_and_the_machine(built: Path) -> None:
    with Store(built, readonly=True) as db:
        samples, system = db.samples(1), db.system_samples(1)
    with client(built) as c:
        page = c.get("/point/1")
    specs = {spec["title"].split(" (")[0]: spec for spec in charts(page.text)}
    assert set(specs) == {"Throughput per second", "Latency per second", "The server's waits per second",
                          "The machine's CPU per second", "The machine's disk I/O per second"}
    assert all(spec["zoom"] and spec["group"] == "point" for spec in specs.values())
    (tps,) = specs["Throughput per second"]["series"]
    assert [(p[0], p[1]) for p in tps["points"]] == [(s.second, s.tps) for s in samples]
    cpu = {s["name"]: [p[1] for p in s["points"]] for s in specs["The machine's CPU per second"]["series"]}
    assert cpu["user"] == [s.cpu_user_pct for s in system] and cpu["iowait"] == [1.0] * 4
    waits = {s["name"]: [(p[0], p[1]) for p in s["points"]] for s in specs["The server's waits per second"]["series"]}
    assert waits["CPU"] == [(1.0, 1.0), (2.0, 0.5)]  # the stored wait event, second by second


@pytest.fixture(scope="module")
def stepped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """test_history_and_gate's store: 'nightly' at 1000 TPS for 5 runs with synchronous_commit
    off on 17.2, then 5 at 800 with it on and 17.4 (run 6 the first after the step)."""
    path = tmp_path_factory.mktemp("history") / "history.db"
    with Store(path) as db:
        for day in range(10):
            after = day >= 5
            level = (800.0 if after else 1000.0) * (1 + 0.01 * ((day * 7) % 3 - 1))
            add_run(db, "nightly", day, level, sync="on" if after else "off", server="17.4" if after else "17.2")
    return path


def test_history_marks_the_change_point_with_its_causes_and_links_the_diff_of_the_runs_around_it(
        stepped: Path) -> None:
    with client(stepped) as c:
        page = c.get("/history")
        (spec,) = charts(page.text)
        (mark,) = spec["marks"]
        diff = c.get(mark["href"])
    assert page.status_code == 200
    assert mark["href"] == "/diff?before=5&after=6" and mark["x"] == 5.5  # between the 5th and 6th run
    assert "setting synchronous_commit off -&gt; on" in page.text and 'href="/diff?before=5&amp;after=6"' in page.text
    (series,) = spec["series"]
    assert [p[3] for p in series["points"]] == [f"/run/{n}" for n in range(1, 11)]
    assert diff.status_code == 200
    changed = diff.text[diff.text.index("<h2>What changed</h2>"):diff.text.index("<h2>Levels both measured</h2>")]
    assert "<td>setting synchronous_commit</td><td>off</td><td>on</td>" in changed
    assert "<td>server version</td><td>17.2</td><td>17.4</td>" in changed and "kernel" not in changed
    level = re.search(r"<td>postgres</td><td>pgbench-tpcb</td><td></td><td>1</td><td>tps</td><td>([\d,.]+)</td><td>([\d,.]+)</td>"
                      r"<td>([-+\d.]+) %</td>", diff.text)
    assert level is not None and -22 < float(level.group(3)) < -18


def test_a_diff_of_runs_not_there_or_not_numbers_is_one_line(stepped: Path) -> None:
    with client(stepped) as c:
        missing = c.get("/diff?before=1&after=99")
        bad = c.get("/diff?before=1&after=x")
    assert missing.status_code == 404 and "no run 99 in" in missing.text
    assert bad.status_code == 400 and "before and after: two run ids" in bad.text


def _probe(cpu: float) -> dict[str, float]:
    return {"cpu_events_per_s": cpu, "cpu_best_events_per_s": cpu, "memory_mib_per_s": 10000.0,
            "memory_best_mib_per_s": 10000.0, "fsync_p99_ms": 2.0}


def test_hosts_shows_each_hosts_probe_and_flags_the_one_far_from_its_kind(tmp_path: Path) -> None:
    path = tmp_path / "hosts.db"
    with Store(path) as db:
        for day, (host, cpu) in enumerate((("a", 1000.0), ("b", 1040.0), ("c", 980.0), ("slow", 520.0))):
            run_id = db.begin_run(RunInfo(label=host, host=host, engine="postgres", target="postgresql://x@h/d",
                                          started_at=storebuild.T0 + timedelta(days=day), server_version="17.2",
                                          tool_versions={}, options={"probe": _probe(cpu)},
                                          host_facts=storebuild.HOST))
            db.add_point(run_id, storebuild._point(800.0, 1, 0, day=day))
            db.finish_run(run_id, "finished")
        run_id = db.begin_run(RunInfo(label="unprobed", host=BIDI, engine="postgres", target="postgresql://x@h/d",
                                      started_at=storebuild.T0, server_version="17.2", tool_versions={},
                                      options={}, host_facts=storebuild.HOST))
        db.finish_run(run_id, "finished")
    with client(path) as c:
        page = c.get("/hosts")
    assert page.status_code == 200
    rows = re.findall(r"<tr( class=\"flagged\")?><td>([^<]*)</td>.*?</tr>", page.text)
    flagged = {host for css, host in rows if css}
    assert flagged == {"slow"} and {host for _, host in rows} == {"a", "b", "c", "slow", BIDI}
    assert "probe CPU (best second) 47 % below its group&#x27;s median (4 hosts of test cpu" in page.text
    assert "not probed" in page.text


def test_hostile_labels_stay_text_in_the_charts_data(built: Path) -> None:
    with client(built) as c:
        page = c.get("/workload", params=[("engine", "postgres"), ("workload", "pgbench-tpcb"), ("baseline", EVIL)])
    assert page.status_code == 200
    assert EVIL not in page.text and "<script>alert" not in page.text
    assert EVIL in [s["name"] for spec in charts(page.text) for s in spec["series"]]


def test_a_view_is_kept_while_the_store_holds_the_same_data_and_made_again_when_it_changes(tmp_path: Path) -> None:
    """Decide's page is made once per choice and data version (Store.data_version): the
    same page while nothing changes, a new one as soon as a run or point is stored."""
    from dbarena.serve.app import Views

    path = storebuild.build(tmp_path / "kept.db")
    made: list[tuple[str, ...]] = []

    def page(store: Store, chosen: list[str]) -> str:
        made.append(tuple(chosen))
        return f"page {len(made)}"

    views = Views(size=2)
    kept = views.of("page", page)
    with Store(path, readonly=True) as reader:
        assert kept(reader, ["a"]) == kept(reader, ["a"]) == "page 1"
        assert kept(reader, ["b"]) == "page 2" and made == [("a",), ("b",)]
        with Store(path) as writer:  # another connection stores a point
            run_id = writer.begin_run(RunInfo(label="c", host="box", engine="postgres", target="postgresql://x@h/d",
                                              started_at=storebuild.T0, server_version="17.2", tool_versions={},
                                              options={}, host_facts=storebuild.HOST))
        assert kept(reader, ["a"]) == "page 3"
        with Store(path) as writer:
            writer.add_point(run_id, storebuild._point(800.0, 1, 0, day=1))
        assert kept(reader, ["a"]) == "page 4"
        with Store(path) as writer:
            writer.finish_run(run_id, "finished")
        assert kept(reader, ["a"]) == "page 5" and kept(reader, ["a"]) == "page 5"
    # Bounded: the least recently used view went first.
    assert len(views._kept) == 2
    # A run's options changed (a fleet flags a host after its runs ended): Hosts anew.
    with client(path) as c:
        first = c.get("/hosts")
        with Store(path) as writer:
            writer.update_options(run_id, {"probe_outlier": "probe CPU far below its kind"})
        second = c.get("/hosts")
    assert "probe CPU far below its kind" not in first.text and 'class="flagged"' not in first.text
    assert "probe CPU far below its kind" in second.text and 'class="flagged"' in second.text


def test_decide_and_its_workloads_share_one_report_model(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report model of a choice is derived once (seconds for 100 k points) for Decide
    and each workload page of that choice."""
    calls: list[tuple[str, ...]] = []
    real = assemble.build_shown

    def counted(store: Any, selection: assemble.Selection) -> Any:
        calls.append(selection.labels)
        return real(store, selection)

    monkeypatch.setattr(assemble, "build_shown", counted)
    choice = [("baseline", "a"), ("label", "a"), ("label", "b")]
    with client(built) as c:
        assert c.get("/decide", params=choice).status_code == 200
        assert c.get("/workload", params=[("engine", "postgres"), ("workload", "pgbench-tpcb"), *choice]).status_code \
            == 200
        assert c.get("/workload", params=choice).status_code == 200
        assert c.get("/decide", params=[("baseline", "b"), ("label", "a"), ("label", "b")]).status_code == 200
    assert calls == [("a", "b"), ("a", "b")]  # once per choice (baseline b: another choice)


def test_decide_per_core_and_per_price_show_the_report_s_own_figures_and_keep_the_choice(built: Path) -> None:
    """per=core and per=price: the report's per-core and price tables of each workload
    (report/tables.py over report/levels.py's figures, not derived again), the decision's
    price line, a label without a price said so (never a 0), and links
    between the views that keep the baseline and labels; a view that is not one is 400."""
    from test_serve import _text

    choice = [("baseline", "a"), ("label", "a"), ("label", "b"), ("label", EVIL)]
    with Store(built, readonly=True) as db:
        report = assemble.build(db, assemble.Selection(labels=("a", "b", EVIL), baseline="a"))
    with client(built) as c:
        plain = c.get("/decide", params=choice)
        core = c.get("/decide", params=[*choice, ("per", "core")])
        price = c.get("/decide", params=[*choice, ("per", "price")])
        wrong = c.get("/decide", params=[*choice, ("per", "cores")])
    assert plain.status_code == core.status_code == price.status_code == 200
    assert 'id="per-core"' not in plain.text and 'id="per-price"' not in plain.text
    # The answer first in every view: the decision above the per-core or per-price tables.
    assert 0 < core.text.index('id="decision"') < core.text.index('id="per-core"')
    assert 0 < price.text.index('id="decision"') < price.text.index('id="per-price"')
    # Each view links to the others with the same choice; the form keeps the view.
    links = {per: parse_qsl(urlsplit(html.unescape(href)).query)
             for href, per in re.findall(r'<a href="([^"]+)" data-per="(\w*)"', core.text)}
    assert links == {"": choice, "price": [*choice, ("per", "price")]}
    assert '<input type="hidden" name="per" value="core">' in core.text
    # Per core: the report's figure per hardware thread at each level (the store gives no physical cores).
    section = core.text[core.text.index('id="per-core"'):core.text.index("</section>", core.text.index('id="per-core"'))]
    for row in report.rows:
        if row.tps is not None:
            assert row.tps_per_thread is not None
            assert f"{row.tps_per_thread:,.1f}" in section
    assert "No core count stored" not in section  # every label's server: the machine's threads
    # Per price: the decision's own price line, the report's price per 100 TPS, and the unpriced label said so.
    text = _text(price.text)
    priced = next(d for d in report.decisions if d.label == "b")
    assert priced.price is not None and priced.price in text
    for row in report.rows:
        if row.price_per_100_tps is not None:
            assert f"{row.price_per_100_tps:.3g} USD" in text
    said = " ".join(text.split())
    assert f"No price stored for {EVIL} :" in said and f"against a , postgres pgbench-tpcb: no price for {EVIL}" in said
    assert " 0 USD" not in text
    assert wrong.status_code == 400 and "per='cores': no such view" in _text(wrong.text)
