"""Report figures checked on a small hand-computed store, the USL fit on synthetic data,
and the renderers (escaping, Markdown files, CSV/JSON fields)."""

from __future__ import annotations

import base64
import dataclasses
from dataclasses import replace
import csv
import hashlib
import io
import json
import re
from datetime import datetime, timezone
from html import escape

import numpy as np
import pytest

from dbarena.stats import analysis
from dbarena.model import Measurement, PointResult, PointSpec, RunInfo
from dbarena.report import charts, data, export, html, markdown
from dbarena.store.database import Store
from points import level_row, run

T0 = datetime(2026, 11, 21, tzinfo=timezone.utc)

# label -> (price per hour, physical cores, hardware threads, {threads: tps})
MACHINES = {
    "arm": (1.4464, 32, 32, {1: 1000.0, 2: 1900.0, 4: 3400.0, 8: 3500.0}),
    "x86": (1.808, 16, 32, {1: 1100.0, 2: 2000.0, 4: 3000.0, 8: 3200.0}),
}


@pytest.fixture
def store(tmp_path):
    db = Store(tmp_path / "r.db")
    for label, (price, cores, threads, levels) in MACHINES.items():
        run_id = db.begin_run(RunInfo(
            label=label, host=label, engine="postgres", target="postgresql://dbarena@127.0.0.1:1/dbarena",
            started_at=T0, server_version="15.18", tool_versions={"pgbench": "pgbench (PostgreSQL) 15.18"},
            options={"targets": {}}, host_facts={"physical_cores": cores, "hardware_threads": threads,
                                                 "cpu_model": f"{label} cpu"},
            target_facts={"non_default_settings": {"max_connections": "300"}}, price_per_hour=price))
        for n, tps in levels.items():
            spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=n, clients=2 * n, duration_s=60,
                             params=(("scale", 10),))
            db.add_point(run_id, PointResult(
                spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",), exit_code=0, stdout="",
                stderr="", measurement=Measurement(tps=tps, transactions=int(tps * 60), latency_avg_ms=2 * n / tps * 1000)))
        db.finish_run(run_id, "finished")
    yield db
    db.close()


def _report(store, **kw):
    return data.build(analysis.load(store), store.runs(), **kw)


def test_level_figures_by_hand(store):
    report = _report(store, baseline="x86", at_threads=4)
    rows = {(r.label, r.threads): r for r in report.rows}
    arm4, x864 = rows[("arm", 4)], rows[("x86", 4)]
    assert arm4.tps == 3400.0
    # Study E: price per 100 TPS = hourly price / (TPS / 100).
    assert arm4.price_per_100_tps == pytest.approx(1.4464 / 34)
    assert x864.price_per_100_tps == pytest.approx(1.808 / 30)
    assert arm4.tps_per_dollar_hour == pytest.approx(3400 / 1.4464)
    # Per core: 32 cores on arm, 16 cores x 2 threads on x86 (study B's quarrel).
    assert arm4.tps_per_core == pytest.approx(3400 / 32) and arm4.tps_per_thread == pytest.approx(3400 / 32)
    assert x864.tps_per_core == pytest.approx(3000 / 16) and x864.tps_per_thread == pytest.approx(3000 / 32)
    # Scaling efficiency = TPS(N) / (N x TPS(1)).
    assert arm4.scaling_efficiency == pytest.approx(3400 / (4 * 1000))
    assert rows[("x86", 1)].scaling_efficiency == pytest.approx(1.0)
    assert arm4.ratio_to_baseline == pytest.approx(3400 / 3000)
    assert rows[("x86", 2)].ratio_to_baseline == pytest.approx(1.0)
    assert arm4.verdict is None and arm4.reason == "inconclusive: 1 session a side"
    assert arm4.time_s == 60 and arm4.transactions == 3400 * 60


def test_points_ranking_geomean_saturation_and_cheapest(store):
    report = _report(store, baseline="x86", at_threads=4)
    (section,) = report.sections
    ranking = {r.label: r for r in section.ranking}
    assert ranking["arm"].sum == pytest.approx(1000 + 1900 + 3400 + 3500)
    assert ranking["x86"].sum == pytest.approx(1100 + 2000 + 3000 + 3200)
    assert [r.label for r in section.ranking] == ["arm", "x86"] and ranking["arm"].rank == 1
    want = np.exp(np.mean(np.log([1000 / 1100, 1900 / 2000, 3400 / 3000, 3500 / 3200])))
    assert ranking["arm"].geomean_ratio_to_baseline == pytest.approx(want)
    assert ranking["x86"].geomean_ratio_to_baseline == pytest.approx(1.0)
    # arm: 3400 -> 3500 adds < 5 %; x86: 3000 -> 3200 adds 6.7 %, still growing at 8.
    assert ranking["arm"].saturation_threads == 4 and ranking["x86"].saturation_threads is None
    assert ranking["arm"].peak_threads == 8 and ranking["arm"].peak_tps_per_core == pytest.approx(3500 / 32)
    cheapest = section.cheapest
    assert cheapest.label == "arm" and cheapest.threads == 4
    assert cheapest.others["x86"] == pytest.approx((1.808 / 30) / (1.4464 / 34) - 1)


def test_price_override_and_labels_order(store):
    from dbarena.stats.price import Price

    report = _report(store, prices={"x86": Price(per_hour=0.9)}, labels=["x86", "arm"])
    rows = {(r.label, r.threads): r for r in report.rows}
    assert rows[("x86", 1)].price_per_100_tps == pytest.approx(0.9 / 11)
    assert report.baseline == "x86" and report.labels == ["x86", "arm"]


@pytest.mark.parametrize("sigma, kappa", [(0.05, 0.001), (0.02, 0.0002), (0.1, 0.0)])
def test_usl_fit_recovers_known_parameters(sigma, kappa):
    levels = [1, 2, 4, 8, 16, 32, 64]
    x = list(data.usl(np.array(levels), 1000.0, sigma, kappa))
    fit = data.usl_fit(levels, x)
    assert fit.lambda_ == pytest.approx(1000.0, rel=1e-3)
    assert fit.sigma == pytest.approx(sigma, abs=1e-4)
    assert fit.kappa == pytest.approx(kappa, abs=1e-6)
    if kappa:
        assert fit.peak_threads == pytest.approx(np.sqrt((1 - sigma) / kappa), rel=1e-2)
    else:
        assert fit.peak_threads is None
    assert fit.r2 == pytest.approx(1.0)


def test_usl_fit_with_noise_stays_close():
    rng = np.random.default_rng(1)
    levels = [1, 2, 4, 8, 16, 24, 32, 48, 64]
    x = data.usl(np.array(levels), 5000.0, 0.03, 0.0005) * rng.normal(1, 0.01, len(levels))
    fit = data.usl_fit(levels, list(x))
    assert fit.sigma == pytest.approx(0.03, abs=0.01) and fit.kappa == pytest.approx(0.0005, abs=0.0002)


def test_usl_needs_five_levels_since_three_parameters_fit_three_or_four_exactly_or_nearly():
    assert data.usl_fit([1, 2], [100.0, 190.0]) is None
    assert data.usl_fit([1, 2, 4], [100.0, 190.0, 300.0]) is None  # R² 1.000 on any three points
    assert data.usl_fit([1, 2, 4, 8], [100.0, 190.0, 300.0, 310.0]) is None
    assert data.usl_fit([1, 2, 4, 8, 16], [100.0, 190.0, 300.0, 310.0, 290.0]) is not None


# ------------------------------------------------------------------ renderers


def _scripts(text: str) -> list[str]:
    return re.findall(r"<script[^>]*>(.*?)</script>", text, re.S)


def test_html_escapes_store_text_and_runs_only_its_own_script(store):
    store.db.execute("UPDATE runs SET label = '<script>alert(1)</script>' WHERE label = 'arm'")
    store.db.commit()
    report = _report(store)
    drawn = {(s.engine, s.workload): charts.charts(s, {}) for s in report.sections}
    text = html.render(report, drawn)
    assert _scripts(text) == [html.SAVE] and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    # The CSP allows that one script by its hash, and nothing else.
    digest = base64.b64encode(hashlib.sha256(html.SAVE.encode()).digest()).decode()
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    assert f"script-src 'sha256-{digest}'" in html.CSP and "unsafe-inline'" not in html.CSP.split("script-src")[1]
    assert "data:image/svg+xml" not in text  # the charts are in the page once
    assert text.count("<svg") == 3  # throughput, bars and latency (no per-second series in this store)
    assert not re.search(r'(src|href)="(https?:)?//', text)  # no external resource
    assert "<metadata>" not in text


def test_each_label_is_toggled_in_every_chart_by_a_css_rule_on_its_class(store):
    evil = '"><script>alert(1)</script>'
    store.db.execute("UPDATE runs SET label = ? WHERE label = 'arm'", (evil,))
    store.db.commit()
    report = _report(store)
    drawn = {(s.engine, s.workload): charts.charts(s, {}) for s in report.sections}
    text = html.render(report, drawn)
    assert _scripts(text) == [html.SAVE] and "default-src 'none'" in html.CSP
    classes = {label: charts.label_class(label) for label in report.labels}
    assert all(re.fullmatch(r"lbl-[0-9a-f]{12}", c) for c in classes.values()) and len(set(classes.values())) == 2
    style = text[text.index("<style>"):text.index("</style>")]
    for label, cls in classes.items():
        assert f'<input type="checkbox" id="show-{cls}" checked> {escape(label)}</label>' in text
        assert f"body:has(#show-{cls}:not(:checked)) .{cls}:not(.key) {{ display: none; }}" in style
        assert f"body:has(#show-{cls}:not(:checked)) .{cls}.key {{ opacity: 0.3; }}" in style
        for svg in drawn[("postgres", "pgbench-tpcb")].values():
            # its series and hover points, and its legend entry, in each chart
            assert f'class="{cls}"' in svg and f'<circle class="{cls}"' in svg and f'class="{cls} key"' in svg
    # No class in the page that no toggle names; no label text in the CSS.
    assert set(re.findall(r'class="(lbl-[0-9a-f]+)', text)) == set(classes.values())
    assert "alert" not in style
    # One label: nothing to toggle. Beyond MAX_TOGGLED series: the charts merge their
    # lines per style (untagged) and the page offers no toggles.
    assert html.toggles(["one"]) == ("", "")
    many = [f"m{i}" for i in range(charts.MAX_TOGGLED + 1)]
    assert html.toggles(many) == ("", "") and html.toggles(many[:-1])[0].count('type="checkbox"') == charts.MAX_TOGGLED
    assert "lbl-" not in charts.throughput(_many_series(charts.MAX_TOGGLED + 1))
    tagged = charts.throughput(_many_series(charts.MAX_TOGGLED))
    assert len(set(re.findall(r'<g id="line2d-[^"]+" class="(lbl-[0-9a-f]+)"', tagged))) == charts.MAX_TOGGLED


def test_markdown_writes_charts_next_to_it(store, tmp_path):
    report = _report(store, at_threads=4)
    drawn = {(s.engine, s.workload): charts.charts(s, {}) for s in report.sections}
    out = tmp_path / "article.md"
    text = markdown.render(report, drawn, out)
    images = sorted(p.name for p in (tmp_path / "article_files").iterdir())
    assert images == ["postgres-pgbench-tpcb-bars.svg", "postgres-pgbench-tpcb-latency.svg",
                      "postgres-pgbench-tpcb-throughput.svg"]
    assert "](article_files/postgres-pgbench-tpcb-throughput.svg)" in text
    assert "| arm | 4 |" in text and "### Price / performance" in text


def test_each_explanation_is_said_once_and_the_sections_keep_what_is_their_own(store, tmp_path):
    from dbarena.report import reading, tables

    store.db.execute("UPDATE points SET workload = 'other' WHERE threads > 2")  # two sections alike
    store.db.commit()
    report = _report(store, at_threads=4)
    assert len(report.sections) == 2
    drawn = {(s.engine, s.workload): charts.charts(s, {}) for s in report.sections}
    page = html.render(report, drawn)
    text = markdown.render(report, drawn, tmp_path / "r.md")
    explained = tables.how_to_read(report)
    assert explained[0] == reading.CHARTS and reading.RESULTS in explained and reading.PROVENANCE in explained
    for what, said in explained:
        assert page.count(escape(said)) == 1, what
        assert text.count(said.replace("|", "\\|").replace("<", "&lt;")) == 1, what
    # Under each table only what is particular to it (the cheapest label at 4 threads ...).
    for spec in (t for s in report.sections for t in tables.section_tables(s, report)):
        assert spec.explain is not None and (spec.note is None or spec.explain[1] not in spec.note)
    # "How to read this" comes after the decision and What differs, before the sections.
    assert page.index('id="differs"') < page.index('id="reading"') < page.index('<section id="postgres-')
    assert text.index("## What differs") < text.index("## How to read this") < text.index("## postgres ")
    assert "<h3>How to read" not in page and "### How to read" not in text  # no table there


def test_the_first_screen_is_the_decision_and_how_to_read_it_is_folded_below(store):
    """The decision (or, for one label, the line saying there is none) before anything
    else of the report; "How to read this" after it, in a <details> closed by default."""
    report = _report(store, baseline="x86", at_threads=4)
    page = html.render(report, {})
    assert report.decisions
    assert page.index('<section id="decision">') < page.index('<details id="reading"><summary><h2>How to read this')
    assert page.index("</header>") < page.index('<section id="decision">')  # nothing between header and answer
    assert page.index("</header>") + len("</header>\n") == page.index('<section id="decision">')
    one = _report(store, labels=["x86"])
    alone = html.render(one, {})
    assert not one.decisions
    decided = alone.index('<section id="decision"><h2>Decision</h2><p class="none">One label: nothing to decide.')
    assert alone.index("</header>") < decided < alone.index('<details id="reading">')


def test_a_section_shows_its_charts_in_a_grid_and_folds_all_but_its_results_table(store):
    from dbarena.report import tables

    report = _report(store, at_threads=4)
    drawn = {(s.engine, s.workload): charts.charts(s, {}) for s in report.sections}
    page = html.render(report, drawn)
    assert "max-width: 1400px" in page and "grid-template-columns: repeat(2, minmax(0, 1fr))" in page
    assert "@media (max-width: 1000px) { .charts { grid-template-columns: minmax(0, 1fr); } }" in page
    section = page.split('<section id="postgres-pgbench-tpcb">')[1].split("</section>")[0]
    grid = section.split('<div class="charts">')[1].split("</div>")[0]
    assert grid.count("<figure") == len(drawn[("postgres", "pgbench-tpcb")]) == 3
    titles = [t.title for t in tables.section_tables(report.sections[0], report)]
    assert "<h3>Results</h3><table" in section
    for title in titles:
        if title != "Results":
            assert f'<details class="table"><summary><h3>{escape(title)}</h3></summary><table' in section
    assert section.count("<details") == len(titles) - 1
    assert _scripts(page) == [html.SAVE] and html.CSP in page


def test_png_copies_of_the_charts_for_sites_that_take_no_svg(store, tmp_path):

    report = _report(store, at_threads=4)
    pngs: dict = {}
    drawn = {(s.engine, s.workload): charts.charts(s, {}, png=pngs.setdefault((s.engine, s.workload), {}))
             for s in report.sections}
    # Every chart drawn has its PNG, the same chart (a PNG's own signature and size).
    assert {k: sorted(v) for k, v in pngs.items()} == {k: sorted(v) for k, v in drawn.items()}
    throughput = pngs[("postgres", "pgbench-tpcb")]["throughput"]
    assert throughput[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(throughput[16:20], "big"), int.from_bytes(throughput[20:24], "big")
    assert width > 1000 and height > 400  # 200 dpi
    text = markdown.render(report, drawn, tmp_path / "article.md", pngs)
    assert "](article_files/postgres-pgbench-tpcb-throughput.png)" in text
    assert (tmp_path / "article_files" / "postgres-pgbench-tpcb-throughput.png").read_bytes() == throughput
    assert (tmp_path / "article_files" / "postgres-pgbench-tpcb-throughput.svg").exists()
    page = html.render(report, drawn, pngs)
    assert f'href="data:image/png;base64,{base64.b64encode(throughput).decode()}">save as PNG</a>' in page
    # Without asking, no PNG is drawn (a charts call costs its SVG only).
    assert "save as PNG" not in html.render(report, drawn)


def test_csv_and_json_rows_carry_every_figure(store):
    report = _report(store, baseline="x86", at_threads=4)
    rows = list(csv.DictReader(io.StringIO(export.to_csv(report))))
    required = {"label", "engine", "workload", "threads", "tps", "qps", "latency_avg_ms", "latency_p95_ms",
                "price_per_hour", "price_per_100_tps", "tps_per_core", "scaling_efficiency", "ratio_to_baseline"}
    assert required <= set(rows[0]) and len(rows) == 8
    arm4 = next(r for r in rows if r["label"] == "arm" and r["threads"] == "4")
    assert float(arm4["price_per_100_tps"]) == pytest.approx(1.4464 / 34)
    parsed = json.loads(export.to_json(report))
    assert required <= set(parsed["rows"][0]) and parsed["baseline"] == "x86"
    assert parsed["sections"][0]["cheapest"]["label"] == "arm"


def test_per_core_of_a_remote_server_comes_from_what_the_run_was_told(store):
    # study E's case: a managed 4 vCPU instance on 2 cores x 2 threads.
    store.db.execute("UPDATE runs SET options = ?, target_facts = ? WHERE label = 'x86'",
                     (json.dumps({"targets": {"postgres": "postgresql://u@rds.example/db"}}),
                      json.dumps({"server_physical_cores": 2, "server_hardware_threads": 4})))
    store.db.commit()
    rows = {(r.label, r.threads): r for r in _report(store).rows}
    assert rows[("x86", 4)].tps_per_core == pytest.approx(3000 / 2)
    assert rows[("x86", 4)].tps_per_thread == pytest.approx(3000 / 4)
    store.db.execute("UPDATE runs SET target_facts = '{}' WHERE label = 'x86'")
    store.db.commit()
    assert {r.tps_per_core for r in _report(store).rows if r.label == "x86"} == {None}


# ------------------------------------------------------------------ charts


def _many_series(n: int) -> data.Section:
    labels = [f"m{i}" for i in range(n)]
    rows = [level_row(label=label, threads=t, tps=100.0 * t * (1 + i), latency_avg_ms=1.0 + t,
                      latency_p95_ms=2.0 + t)
            for i, label in enumerate(labels) for t in (1, 2, 4)]
    return data.Section(engine="postgres", workload="pgbench-tpcb", metric="tps", labels=labels, rows=rows,
                        ranking=[], usl={}, series={label: data.ShownSeries(point_id=1, threads=4, steady_start_s=2.0,
                                                                            dips_s=[]) for label in labels})


def test_svg_ids_are_unique_across_the_charts_of_a_page(store):
    store.db.execute("UPDATE points SET workload = 'other' WHERE threads > 2")  # two sections, six charts
    store.db.commit()
    report = _report(store)
    drawn = {(s.engine, s.workload): charts.charts(s, {}) for s in report.sections}
    text = html.render(report, drawn)
    assert text.count("<svg") == 6  # throughput, bars and latency, twice
    ids = re.findall(r'\bid="([^"]+)"', text)
    assert len(ids) == len(set(ids))
    # Every reference points at an id of the page (renamed together with it).
    refs = set(re.findall(r'(?:url\(#|href="#)([^")]+)', text))
    assert refs and refs <= set(ids)
    # The same chart gives the same text.
    assert drawn == {(s.engine, s.workload): charts.charts(s, {}) for s in report.sections}


def test_a_legend_names_every_series_below_the_axes_and_every_line_is_drawn():
    section = _many_series(25)
    svg = charts.throughput(section)
    assert svg is not None
    assert "more series" not in svg
    assert all(f"m{i}<" in svg for i in range(25))  # every series named
    # Every point of every series is drawn: 25 x 3 markers in the axes, 25 in the legend
    # (tick marks are black markers too).
    points = [u for u in re.findall(r"<use [^>]*>", svg) if "stroke: #000000" not in u]
    assert len(points) == 25 * 3 + 25
    # Beyond the ten colours a series has another marker: m0 and m10 share a colour only.
    styles = {m: re.findall(rf'<g id="line2d-{charts.label_class(m)}-s\d+[^"]*"[^>]*>\s*<path[^>]*style="([^"]*)"', svg)
              for m in ("m0", "m10")}
    assert styles["m0"] and styles["m0"] == styles["m10"]  # the same colour and width ...
    assert charts._marker(0) != charts._marker(10)  # ... another marker
    # The legend is below the axes: its texts lie under the x axis label.
    latency = charts.latency(section)
    assert latency is not None and "m24<" in latency and "more series" not in latency
    few = charts.throughput(_many_series(10))
    assert few is not None and "m9<" in few and "more series" not in few


def _with_intervals(n: int) -> data.Section:
    """n labels whose 95 % intervals reach below zero (two noisy repeats)."""
    section = _many_series(n)
    return replace(section, rows=[replace(row, tps_ci_low=-0.5 * row.tps, tps_ci_high=2 * row.tps)
                                  for row in section.rows])


def _drawn_below_zero(svg: str) -> bool:
    """Whether an interval (band or error bar) reaches under the x axis: a vertex of a
    label's band or bars below the axes' bottom edge (y = 0), in SVG coordinates (y
    down; a band's path is offset by its <use>)."""
    frame = re.search(r'<g id="patch_2[^"]*">\s*<path d="M [\d.]+ ([\d.]+)', svg)
    assert frame is not None
    bottom = float(frame[1])
    ys = []
    for start in re.finditer(r'\n   <g id="(?:fillbetweenpolycollection|polycollection|linecollection)-lbl-', svg):
        end = svg.find('\n   <g id="', start.end())
        group = svg[start.start():end]
        use = re.search(r'<use [^>]*y="([-\d.]+)"', group)
        ys += [float(y) + (float(use[1]) if use else 0.0) for y in re.findall(r"[ML] [-\d.]+ ([-\d.]+)", group)]
    assert ys
    return max(ys) > bottom + 0.01


def test_intervals_are_drawn_from_zero_as_bands_for_few_labels_and_error_bars_for_many():
    few = charts.throughput(_with_intervals(3))
    assert few is not None and "polycollection-lbl-" in few
    assert "linecollection-lbl-" not in few
    many = charts.throughput(_with_intervals(15))
    assert many is not None and "linecollection-lbl-" in many and "polycollection-lbl-" not in many
    assert "more series" not in many and all(f"m{i}<" in many for i in range(15))
    assert not _drawn_below_zero(few) and not _drawn_below_zero(many)


def test_the_latency_percentiles_are_one_figure_of_four_small_axes():
    section = _many_series(15)
    section = replace(section, rows=[replace(row, latency_p50_ms=1.0 + row.threads, latency_p99_ms=5.0 + row.threads,
                                             latency_p999_ms=9.0 + row.threads, value=row.tps)
                                     for row in section.rows])
    svg = charts.percentiles(section)
    assert svg is not None and svg.count("<svg") == 1
    assert len(re.findall(r'<g id="axes_\d+', svg)) == 4
    for what in ("median (p50) latency", "p95 latency", "p99 latency", "p99.9 latency"):
        assert what in svg
    # One legend naming every label once, below the four axes.
    assert sum(svg.count(f"m{i}<") for i in range(15)) == 15 and "more series" not in svg
    # Hover texts say which percentile a point is.
    assert "m3, 2 threads: 7.000 ms (p99)" in svg
    drawn = charts.charts(section, {})
    assert "latency_percentiles" in drawn and not any(name.startswith("latency_p9") for name in drawn)
    assert charts.percentiles(_many_series(2)) is not None  # p95 only: the others say so
    few = _many_series(2)
    none = replace(few, rows=[replace(row, latency_p95_ms=None) for row in few.rows])
    assert charts.percentiles(none) is None


def test_per_second_series_is_the_point_at_the_asked_level_else_the_highest(store):
    for at, want in ((4, 4), (None, 8)):
        (section,) = _report(store, at_threads=at).sections
        assert {info.threads for info in section.series.values() if info} == {want}


def test_csv_cells_carry_no_binary_noise():
    assert export._cell(2885.7799999999997) == "2885.78"
    assert export._cell(14431.0) == "14431"
    assert export._cell(532.052542) == "532.052542"
    assert export._cell(0.0) == "0"
    assert export._cell(3e-06) == "3e-06"
    assert export._cell(7) == 7 and export._cell("arm") == "arm" and export._cell(None) is None
    assert export._cell(123456789.123) == "123456789.123"


def test_json_numbers_carry_no_binary_noise_at_any_depth():
    assert export._plain({"a": [2885.7799999999997, {"b": 376.59999999999997}], "c": 14431.0, "d": None}) == \
        {"a": [2885.78, {"b": 376.6}], "c": 14431.0, "d": None}
    assert export._plain(float("nan")) != export._plain(float("nan"))  # left as it is


def test_a_price_is_shown_with_every_digit_given():
    from dbarena.stats import price

    assert price.with_currency(price.parse("1.4464"), None).shown() == "1.4464 USD/h"
    assert price.parse("420 EUR/month").shown() == "420 EUR/month (0.575 EUR/h)"
    assert price.with_currency(price.parse("70/month"), None).shown() == "70 USD/month (0.0959 USD/h)"
    assert price.parse("0.00043 USD").shown() == "0.00043 USD/h"


def test_the_level_of_the_price_verdict_is_said_and_a_level_without_data_gets_no_silent_verdict(store):
    from dbarena.report import tables

    every = _report(store)
    assert data.at_text(every) == "Price/performance at every level; the cheapest label is named at --at-threads N."
    (section,) = every.sections
    # What every price table says (said once, in "How to read this"): the level is given with --at-threads.
    table = tables.price(section, every)
    assert table.note is None and table.explain is not None and "give the level with --at-threads N" in table.explain[1]
    at16 = _report(store, at_threads=16)  # nobody measured 16 threads (the CLI refuses it: below)
    (section,) = at16.sections
    assert section.cheapest is None
    assert tables.price(section, at16).note == (
        "No price at 16 threads (--at-threads) in postgres pgbench-tpcb: no priced label measured that level here "
        "(levels: 1, 2, 4, 8); every level is shown.")
    assert data.at_text(at16) == "Price/performance at 16 threads (--at-threads), the cheapest label named."


def test_price_per_100_tps_at_every_level_and_at_a_chosen_level_by_hand(store):
    from dbarena.report import tables

    # Every level, label by label: price per 100 TPS = hourly price / (TPS / 100).
    every = _report(store)
    table = tables.price(every.sections[0], every)
    assert table.title == "Price / performance" and len(table.rows) == 8
    assert table.rows[0] == ["arm", "1", "1.4464 USD/h", "1.45 USD", "0.145 USD", "691"]  # 1.4464 / 10; 1000 / 1.4464
    assert table.rows[7] == ["x86", "8", "1.808 USD/h", "1.81 USD", "0.0565 USD", "1,770"]  # 1.808 / 32; 3200 / 1.808
    # At 4 threads: that level only, cheapest first. arm 1.4464 / 34 = 0.04254, x86 1.808 / 30 = 0.06027:
    # (1.808 x 34) / (30 x 1.4464) = 1.41667, x86 costs 41.7 % more.
    at4 = _report(store, at_threads=4)
    table = tables.price(at4.sections[0], at4)
    assert table.title == "Price / performance at 4 threads"
    assert table.headers[-1] == "against the cheapest"
    assert table.rows == [["arm", "4", "1.4464 USD/h", "1.45 USD", "0.0425 USD", "2,351", "cheapest"],
                          ["x86", "4", "1.808 USD/h", "1.81 USD", "0.0603 USD", "1,659", "+41.7 %"]]
    assert table.note == ("At 4 threads (--at-threads), cheapest first. arm is cheapest for the same "
                          "throughput: x86 costs 42% more. Every level: the report without --at-threads, or the CSV/JSON.")
    assert table.explain is not None and table.explain[1].startswith("Price per 100 TPS")
    # At 8: arm 1.4464 / 35 = 0.04133, x86 1.808 / 32 = 0.0565, 36.7 % more.
    at8 = _report(store, at_threads=8)
    assert [row[-3:] for row in tables.price(at8.sections[0], at8).rows] == [
        ["0.0413 USD", "2,420", "cheapest"], ["0.0565 USD", "1,770", "+36.7 %"]]


def test_a_section_without_the_chosen_level_says_so_in_one_line(store):
    from dbarena.report import tables

    store.db.execute("UPDATE points SET workload = 'other' WHERE threads <= 2")  # 'other': 1, 2; tpcb: 4, 8
    gone = "SELECT id FROM points WHERE threads = 8 AND run_id = (SELECT id FROM runs WHERE label = 'x86')"
    for table in ("raw_outputs", "point_derived", "samples", "system_samples", "latency_histograms"):
        store.db.execute(f"DELETE FROM {table} WHERE point_id IN ({gone})")
    store.db.execute(f"DELETE FROM points WHERE id IN ({gone})")
    store.db.commit()
    report = _report(store, at_threads=4)
    tpcb, other = (next(s for s in report.sections if s.workload == w) for w in ("pgbench-tpcb", "other"))
    assert tables.price(tpcb, report).rows[0][-1] == "cheapest"
    table = tables.price(other, report)
    assert table.title == "Price / performance" and len(table.rows) == 4  # every level, after one clear line
    assert table.note == ("No price at 4 threads (--at-threads) in postgres other: no priced label "
                          "measured that level here (levels: 1, 2); every level is shown.")
    text = html.render(report, {})
    assert text.count("No price at 4 threads") == 1
    # One label measured 8 threads: no comparison, and the other is named.
    at8 = _report(store, at_threads=8)
    table = tables.price(next(s for s in at8.sections if s.workload == "pgbench-tpcb"), at8)
    assert [row[0] for row in table.rows] == ["arm"] and table.rows[0][-1] == "-"
    assert "Only arm has a price and a throughput there: nothing to compare. Not at this level (no point or no " \
           "price): x86." in table.note


def test_at_threads_without_a_point_at_that_level_is_one_line_exit_2(store, tmp_path):
    from inprocess import dbarena

    done = dbarena("report", "--store", str(store.path), "--at-threads", "128", "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2
    assert done.stderr.strip() == "dbarena: error: --at-threads 128: no point was measured at 128 threads " \
                                  "(levels: 1, 2, 4, 8)"


def test_the_per_second_chart_shows_one_level_for_every_label(store):
    # x86 did not measure 8 threads: the chart shows both labels at 4, not arm at 8 and x86 at 4
    gone = "SELECT id FROM points WHERE threads = 8 AND run_id = (SELECT id FROM runs WHERE label = 'x86')"
    for table in ("raw_outputs", "point_derived", "samples", "system_samples", "latency_histograms"):
        store.db.execute(f"DELETE FROM {table} WHERE point_id IN ({gone})")
    store.db.execute(f"DELETE FROM points WHERE id IN ({gone})")
    store.db.commit()
    (section,) = _report(store).sections
    assert {label: info.threads for label, info in section.series.items() if info} == {"arm": 4, "x86": 4}
    # asked for a level only arm has: x86 is left out of that chart rather than drawn at another level
    (section,) = _report(store, at_threads=8).sections
    arm = section.series["arm"]
    assert arm is not None and arm.threads == 8 and section.series["x86"] is None


def _slap_store(tmp_path) -> Store:
    """mysqlslap on two machines: seconds to run the queries (fewer is better), by hand."""
    db = Store(tmp_path / "slap.db")
    for label, price, levels in (("fast", 2.0, {1: 0.5, 4: 0.2}), ("slow", 1.0, {1: 0.8, 4: 0.5})):
        run_id = db.begin_run(RunInfo(label=label, host=label, engine="mysql", target="mysql://b@127.0.0.1:1/b",
                                      started_at=T0, server_version="10.11.6-MariaDB", tool_versions={},
                                      options={"targets": {}}, host_facts={}, target_facts={}, price_per_hour=price))
        for n, seconds in levels.items():
            for repeat in range(3):
                spec = PointSpec(engine="mysql", workload="mysqlslap", threads=n, clients=n, duration_s=0,
                                 params=(("iterations", 1), ("queries", 1000)), repeat=repeat)
                took = seconds * (1 + 0.01 * (repeat - 1))
                db.add_point(run_id, PointResult(
                    spec=spec, status="ok", started_at=T0, ended_at=T0, command=("mysqlslap",), exit_code=0,
                    stdout="", stderr="", measurement=Measurement(qps=1000 / took, queries=1000, run_avg_s=took,
                                                                  run_min_s=took, run_max_s=took)))
        db.finish_run(run_id, "finished")
    return db


def test_mysqlslap_is_seconds_lower_is_better_ranked_and_priced_per_run(tmp_path):
    db = _slap_store(tmp_path)
    report = data.build(analysis.load(db), db.runs(), baseline="slow", at_threads=4)
    (section,) = report.sections
    assert section.metric == "seconds"
    rows = {(r.label, r.threads): r for r in section.rows}
    assert rows[("fast", 4)].seconds == pytest.approx(0.2) and rows[("fast", 4)].value == pytest.approx(0.2)
    # Study A ranks mysqlslap by the fewest seconds over the levels.
    assert [(r.label, round(r.sum, 6)) for r in section.ranking] == [("fast", 0.7), ("slow", 1.3)]
    assert section.ranking[0].peak_threads == 4 and section.ranking[0].saturation_threads is None
    assert section.usl == {}
    # Below 1: faster than the baseline.
    assert rows[("fast", 4)].ratio_to_baseline == pytest.approx(0.2 / 0.5)
    # The price of one run of the queries = hourly price x seconds / 3600.
    assert rows[("fast", 4)].price_per_run == pytest.approx(2.0 * 0.2 / 3600)
    # N clients share the same queries: 4 threads at 100 % would take a quarter of one's time.
    assert rows[("fast", 4)].scaling_efficiency == pytest.approx(0.5 / (4 * 0.2))
    assert rows[("slow", 1)].scaling_efficiency == pytest.approx(1.0)
    assert rows[("slow", 4)].price_per_run == pytest.approx(1.0 * 0.5 / 3600)
    assert section.cheapest.label == "fast"  # 0.000111 against 0.000139 per run
    from dbarena.report import tables

    (ranking,) = [t for t in tables.section_tables(section, report) if t.title == "Points and best"]
    assert ranking.headers[2] == "sum of seconds over levels" and ranking.rows[0][:3] == ["1", "fast", "0.700"]
    (price,) = [t for t in tables.section_tables(section, report) if t.title == "Price / performance at 4 threads"]
    assert price.headers[-2:] == ["per run", "against the cheapest"] and "fast is cheapest per run" in price.note
    # fast: 2.0 x 0.2 / 3600 = 0.000111; slow: 1.0 x 0.5 / 3600 = 0.000139, 25 % more
    assert price.rows == [["fast", "4", "2 USD/h", "0.200", "0.000111 USD", "cheapest"],
                          ["slow", "4", "1 USD/h", "0.500", "0.000139 USD", "+25.0 %"]]
    svg = charts.throughput(section)
    assert "seconds (lower is better)" in svg
    assert "a bar per label" in charts.bars(section)
    db.close()


def test_intervals_never_go_below_zero_and_printed_tps_stands_beside_the_steady_mean(store):
    from dbarena.report import tables

    assert tables.interval(-12.5, 40.0) == "0.0 .. 40.0"
    report = _report(store)
    row = report.rows[0]
    # No per-second series here: the steady-state mean is the printed figure.
    assert row.printed_tps == row.tps
    results = tables.results(report.sections[0])
    assert results.explain is not None
    assert "printed TPS" in results.headers and "printed TPS' is the figure the tool printed" in results.explain[1]


def test_prices_per_month_and_in_currencies_are_shown_as_given_and_never_compared_across(store):
    from dbarena.stats import price
    from dbarena.report import tables

    assert price.parse("420 EUR/month") == price.Price(per_hour=420 / 730, currency="EUR", per_month=420)
    assert price.parse("0.58/h") == price.Price(per_hour=0.58, currency="")
    assert price.parse("rub1200/mo").currency == "RUB"
    for bad in ("free", "-3/h", "0/h", "3 EUR USD/h", "3/week"):
        with pytest.raises(ValueError):
            price.parse(bad)
    # Study A: monthly rents in one currency. Price per 100 TPS per hour = (rent / 730) / (TPS / 100).
    report = _report(store, prices={"arm": price.parse("420 EUR/month"), "x86": price.parse("500EUR/month")},
                     at_threads=4)
    rows = {(r.label, r.threads): r for r in report.rows}
    assert rows[("arm", 4)].price_per_100_tps == pytest.approx(420 / 730 / 34)
    assert rows[("arm", 4)].currency == "EUR" and rows[("arm", 4)].price == "420 EUR/month (0.575 EUR/h)"
    (section,) = report.sections
    assert section.cheapest.label == "arm"
    table = tables.price(section, report)
    assert table.rows[0][2] == "420 EUR/month (0.575 EUR/h)" and table.rows[0][4].endswith(" EUR")
    ranking = tables.ranking(section, report)
    assert ranking.headers[-1] == "price" and {row[-1] for row in ranking.rows} == {"420 EUR/month (0.575 EUR/h)",
                                                                         "500 EUR/month (0.685 EUR/h)"}
    # Two currencies: both shown, no cheapest named (no exchange rate is a measurement).
    mixed = _report(store, prices={"arm": price.parse("420 EUR/month"), "x86": price.parse("1.808/h")},
                    at_threads=4)
    (section,) = mixed.sections
    assert section.cheapest == data.Cheapest(label=None, threads=4, others={}, currencies=["EUR", "USD"])
    assert "dbarena converts no currency" in tables.price(section, mixed).note


def test_the_parameters_a_reader_needs_to_run_it_again(store):
    from dbarena.report import tables

    report = _report(store)
    table = tables.parameters(report.sections[0], report)
    rows = {row[0]: dict(zip(table.headers, row)) for row in table.rows}
    assert rows["arm"]["dataset"] == "scale=10" and rows["arm"]["duration per point"] == "60 s"
    assert rows["arm"]["clients per thread"] == "2" and rows["arm"]["warm-up"] == "0 s"
    assert rows["arm"]["tool"] == "pgbench (PostgreSQL) 15.18" and rows["arm"]["thread levels"] == "1, 2, 4, 8"
    assert rows["x86"]["repeats"] == "1"
    assert "scale=10" in html.render(report, {})


def test_results_fit_a_100_column_terminal_without_cutting_names(store):
    from rich.console import Console

    from dbarena.report import listings

    rows = [dataclasses.replace(r, label="hetzner-ax41-nvme-" + r.label)  # a realistic, long label
            for r in analysis.load(store)]
    for table, wide_table in ((listings.points_table(rows), listings.points_table(rows, wide=True)),
                              (listings.summary_table(analysis.summaries(rows)),
                               listings.summary_table(analysis.summaries(rows), wide=True))):
        out = Console(width=100, record=True, file=io.StringIO())
        out.print(table)
        text = out.export_text()
        assert max(len(line) for line in text.splitlines()) <= 100
        assert "hetzner-ax41-nvme-arm" in text and "pgbench-tpcb" in text and "…" not in text
        assert len(wide_table.columns) > len(table.columns)


def test_provenance_says_whose_cpu_it_shows_for_a_remote_target(store):
    import json as json_

    from dbarena.report import tables

    store.db.execute("UPDATE runs SET options = ? WHERE label = 'x86'",
                     (json_.dumps({"targets": {"postgres": "postgresql://bench@10.0.0.5/db"}}),))
    store.db.commit()
    report = _report(store)
    rows = {row[0]: row[1:] for row in tables.provenance(report).rows}
    assert report.labels == ["arm", "x86"]
    assert rows["machine described below"] == ["server and load generator (throwaway instance)",
                                               "the load generator only: the server is a remote target"]
    assert rows["server cores / threads"] == ["as below", "unknown (run --server-cores/--server-threads say it)"]


def test_the_tpcc_like_table_shows_the_new_order_rate_the_mix_and_latency_per_type(tmp_path):
    from pathlib import Path

    from dbarena.report import tables
    from dbarena.workloads import tpcc

    db = Store(tmp_path / "tpcc.db")
    run_id = db.begin_run(RunInfo(label="pg", host="pg", engine="postgres", target="postgresql://b@127.0.0.1:1/b",
                                  started_at=T0, server_version="15.18", tool_versions={}, options={"targets": {}},
                                  host_facts={}, target_facts={}))
    fixtures = Path(__file__).parent.parent / "fixtures" / "tpcc"
    expected = {}
    for n in (1, 2):
        measurement, samples = tpcc.read((fixtures / f"sysbench-1.0.20-tpcc-like-postgres-{n}threads.stdout")
                                         .read_text(), "")
        expected[n] = measurement.details
        spec = PointSpec(engine="postgres", workload="tpcc-like", threads=n, clients=n, duration_s=5,
                         params=(("warehouses", 1),))
        db.add_point(run_id, PointResult(spec=spec, status="ok", started_at=T0, ended_at=T0, command=("sysbench",),
                                         exit_code=0, stdout="", stderr="", measurement=measurement,
                                         samples=samples))
    db.finish_run(run_id, "finished")
    report = data.build(analysis.load(db), db.runs())
    (section,) = report.sections
    table = tables.tpcc(section)
    assert table is not None and table.headers[3] == "New-Order per minute (tpmC-like)"
    for row, n in zip(table.rows, (1, 2)):
        assert row[1] == str(n) and row[2] == "warehouses=1"
        assert row[3] == tables.num(expected[n]["tpm_new_order"])
        assert row[6] == " / ".join(f"{expected[n]['per_type'][k]['share_pct']:.1f}" for k in tpcc.KINDS)
        assert row[7] == tables.num(expected[n]["per_type"]["new_order"]["latency_avg_ms"], 2)
    exported = export.to_csv(report)
    assert "tpm_new_order" in exported.splitlines()[0]
    db.close()


def test_the_system_view_and_the_level_the_cpu_saturated_from(tmp_path):
    from dbarena.report import tables
    from dbarena.host.sysmetrics import SystemSample

    db = Store(tmp_path / "sys.db")
    run_id = db.begin_run(RunInfo(label="box", host="box", engine="postgres", target="postgresql://b@127.0.0.1:1/b",
                                  started_at=T0, server_version="15.18", tool_versions={}, options={"targets": {}},
                                  host_facts={"hardware_threads": 4}, target_facts={}))
    # idle % and server cores per level: busy 40 % at 1 thread, 92 % from 4 threads.
    for n, idle, server in ((1, 60.0, 1.0), (4, 8.0, 3.0), (8, 2.0, 3.2)):
        spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=n, clients=n, duration_s=3)
        system = tuple(SystemSample(second=s, cpu_user_pct=30, cpu_system_pct=10, cpu_iowait_pct=2.0 * s,
                                    cpu_steal_pct=0, cpu_idle_pct=idle, context_switches_per_s=0,
                                    disk_read_bytes_per_s=None, disk_write_bytes_per_s=None, memory_used_bytes=None,
                                    server_cpu=server, loadgen_cpu=0.5) for s in (1.0, 2.0, 3.0))
        db.add_point(run_id, PointResult(spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",),
                                         exit_code=0, stdout="", stderr="", measurement=Measurement(tps=100.0 * n),
                                         system=system))
    db.finish_run(run_id, "finished")
    report = data.build(analysis.load(db), db.runs())
    (section,) = report.sections
    rows = {r.threads: r for r in section.rows}
    assert rows[1].cpu_busy_pct == pytest.approx(40.0) and rows[4].cpu_busy_pct == pytest.approx(92.0)
    assert rows[1].cpu_iowait_pct == pytest.approx(4.0)  # the mean of 2, 4, 6
    assert rows[8].server_cpu == pytest.approx(3.2) and rows[8].loadgen_cpu == pytest.approx(0.5)
    assert section.ranking[0].cpu_saturated_from == 4
    table = tables.system(section)
    assert table.rows[1][:6] == ["box", "4", "92", "4.0", "3.00", "0.50"]
    assert "box: CPU saturated from 4 threads" in table.note
    # Only the steady state counts when a series says where it starts.
    assert analysis.system_view([{"second": 1.0, "cpu_idle_pct": 0.0}, {"second": 5.0, "cpu_idle_pct": 50.0}],
                                steady_start_s=2.0)["cpu_busy_pct"] == 50.0
    db.close()


def test_study_c_cores_and_smt_table_by_hand():
    from dbarena.report import tables

    def rank(label, peak, at, cores, threads):
        return data.Ranking(label=label, sum=peak, levels=[at], geomean_ratio_to_baseline=None,
                            saturation_threads=None, peak_threads=at, peak_value=peak,
                            peak_tps_per_core=peak / cores, peak_tps_per_thread=peak / threads,
                            hardware_threads=threads, price_at=None, cpu_saturated_from=None, rank=1, price=None)

    section = data.Section(engine="postgres", workload="pgbench-select-only", metric="tps", labels=[], rows=[],
                           ranking=[rank("p9 [1core_smt-off]", 20000.0, 4, 1, 1), rank("p9 [1core_smt-on]", 45000.0, 16, 1, 4),
                                    rank("p9 [4cores_smt-off]", 70000.0, 16, 4, 4),
                                    rank("p9 [4cores_smt-on]", 180000.0, 64, 4, 16)],
                           usl={}, series={})
    table = tables.cores_and_smt(section)
    rows = {r[0]: r for r in table.rows}
    assert rows["p9 [4cores_smt-on]"][1:] == ["4", "on", "180,000.0 at 64", "45,000.0", "11,250.0", "100%",
                                              "+157.1 %"]  # 180000 / (4 x 45000); 180000 / 70000 - 1
    assert rows["p9 [4cores_smt-off]"][6:] == ["88%", "-"]  # 70000 / (4 x 20000)
    assert tables.cores_and_smt(data.Section(engine="postgres", workload="w", metric="tps", labels=[], rows=[],
                                             ranking=[rank("box", 1.0, 1, 1, 1)], usl={}, series={})) is None
    # Cores without SMT siblings (this VM): "on" ran on the same CPUs as "off", no gain is claimed.
    vm = data.Section(engine="postgres", workload="w", metric="tps", labels=[], rows=[],
                      ranking=[rank("vm [1core_smt-off]", 16922.3, 8, 1, 1), rank("vm [1core_smt-on]", 15744.8, 16, 1, 1)],
                      usl={}, series={})
    assert {r[0]: r[7] for r in tables.cores_and_smt(vm).rows}["vm [1core_smt-on]"] == "same CPUs (no SMT siblings)"
    # POWER's modes, each step against the one below it: SMT2 / SMT1, SMT4 / SMT2.
    p9 = data.Section(engine="postgres", workload="w", metric="tps", labels=[], rows=[],
                      ranking=[rank("p9 [2cores_smt-4]", 90000.0, 32, 2, 8), rank("p9 [2cores_smt-1]", 40000.0, 8, 2, 2),
                               rank("p9 [2cores_smt-2]", 60000.0, 16, 2, 4)], usl={}, series={})
    assert [(r[0], r[7]) for r in tables.cores_and_smt(p9).rows] == [
        ("p9 [2cores_smt-1]", "-"), ("p9 [2cores_smt-2]", "+50.0 %"), ("p9 [2cores_smt-4]", "+50.0 %")]


def test_a_monthly_price_is_shown_as_given_with_its_hourly_figure():
    """A rented server priced per month shows "70 USD/month (0.0959 USD/h)", not the
    hourly figure's every digit: runs record the monthly amount (older runs: in their flags)."""
    from dbarena import study
    from dbarena.report import data

    s = study.apply(study.load("seed-a"), study.Overrides(price_per_month=70))
    assert s.price_per_month == 70 and s.price_per_hour == 70 / 730
    runs = [run(label="new", price_per_hour=70 / 730, currency="USD", options={"price_per_month": 70}),
            run(label="old", price_per_hour=70 / 730, currency="USD", options={"flags": {"price_per_month": 70}}),
            run(label="hourly", price_per_hour=0.2, currency="USD")]
    shown = {label: p.shown() for label, p in data.label_prices(runs, {}).items()}
    assert shown == {"new": "70 USD/month (0.0959 USD/h)", "old": "70 USD/month (0.0959 USD/h)",
                     "hourly": "0.2 USD/h"}


def test_what_differs_leaves_out_a_throwaway_instances_own_facts_and_names_only_differing_settings(tmp_path):
    """Two throwaway servers differ in their ports, socket and data directories: no row
    of What differs says so; of their settings only the one that differs is named, with
    "default" where a server left it there; the price is said once."""
    from dbarena.report.tables import what_differs

    db = Store(tmp_path / "w.db")
    for label, port, settings, price in (("a", 5001, {"shared_buffers": "1GB"}, 1.0),
                                         ("b", 5002, {"shared_buffers": "1GB", "commit_delay": "10"}, 2.0)):
        run_id = db.begin_run(RunInfo(
            label=label, host="box", engine="postgres", target=f"postgresql://dbarena@127.0.0.1:{port}/dbarena",
            started_at=T0, server_version="15.18", tool_versions={"pgbench": "pgbench (PostgreSQL) 15.18"},
            options={"targets": {}, "data_dir": {"path": f"/tmp/dbarena-{port}/data", "fs": "ext4",
                                                 "device": "/dev/sda1", "mount_options": "rw"}},
            host_facts={"physical_cores": 2, "hardware_threads": 2, "cpu_model": "cpu"},
            target_facts={"non_default_settings": {**settings, "port": str(port),
                                                   "unix_socket_directories": f"/tmp/dbarena-{port}"}},
            price_per_hour=price))
        spec = PointSpec(engine="postgres", workload="pgbench-tpcb", threads=1, clients=2, duration_s=60,
                         params=(("scale", 10),))
        db.add_point(run_id, PointResult(spec=spec, status="ok", started_at=T0, ended_at=T0, command=("pgbench",),
                                         exit_code=0, stdout="", stderr="",
                                         measurement=Measurement(tps=100.0, transactions=6000)))
        db.finish_run(run_id, "finished")
    split = what_differs(_report(db))
    db.close()
    assert split is not None
    differ, same = split
    titles = [r[0] for r in differ.rows]
    assert "postgres: target" not in titles and "postgres: data directory" not in titles
    assert ("postgres: settings", "commit_delay=default", "commit_delay=10") in [tuple(r) for r in differ.rows]
    assert titles.count("price") == 1 and not any(t.endswith("price per hour") for t in titles)
    assert "port=" not in str(differ.rows) + str(same.rows)


def test_the_cpu_saturates_only_at_a_level_its_points_bound_say_so():
    """A level 95 % busy whose points waited on locks is not where the CPU saturated: the
    system view's note and each point's bound (stats/bound.py) say one thing."""
    from dbarena.report.scaling import cpu_saturation
    from dbarena.stats import bound

    rows = [level_row(threads=4, cpu_busy_pct=60.0, bound_kind=None),
            level_row(threads=8, cpu_busy_pct=95.0, bound_kind=bound.LOCKS),
            level_row(threads=16, cpu_busy_pct=97.0, bound_kind=bound.SERVER_CPU)]
    assert cpu_saturation(rows) == 16
    assert cpu_saturation([replace(rows[1], bound_kind=None)]) == 8  # not known: the machine's figure alone
    assert cpu_saturation(rows[:2]) is None
    assert bound.most_frequent([bound.LOCKS, bound.MACHINE_CPU, bound.LOCKS, None]) == bound.LOCKS
    assert bound.most_frequent([None]) is None


def test_a_usl_fit_of_linear_growth_reports_no_peak_and_no_optimizer_noise():
    """Throughput that grows linearly fits sigma and kappa the optimizer leaves at ~1e-10
    (inside its bounds) and a "peak" at 354,045 threads whose digits moved from machine
    to machine (issue 57): no peak, sigma and kappa 0, lambda the one thread's TPS."""
    levels = [1, 2, 4, 8, 16]
    fit = data.usl_fit(levels, [1000.0 * n for n in levels])
    assert fit is not None
    assert (fit.lambda_, fit.sigma, fit.kappa, fit.peak_threads, fit.peak_tps, fit.r2) == \
        (1000.0, 0.0, 0.0, None, None, 1.0)


def test_a_usl_peak_beyond_four_times_the_highest_level_is_no_peak():
    from dbarena.report.scaling import PEAK_REACH, usl_peak

    assert usl_peak(1000.0, 0.05, 0.001, highest=64) == (pytest.approx(30.8, abs=0.1), pytest.approx(9038, rel=1e-3))
    kappa = 0.95 / (PEAK_REACH * 16 + 1) ** 2  # its peak just past 4 x 16 threads
    assert usl_peak(1000.0, 0.05, kappa, highest=16) is None
    assert usl_peak(1000.0, 0.05, kappa, highest=17) is not None
