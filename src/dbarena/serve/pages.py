"""The HTML of `dbarena serve`'s pages, from records in, text out (no I/O): Home, Decide
(the report's own HTML: report/html.py's body), a run and a point, and the page of an
error. Every value from the store goes through html_text; a label, which may hold
characters that turn the text around it (bidi), stands in a <bdi> of its own.

No inline script or style: the page loads /static/serve.js and the style sheets
(app.py's Content-Security-Policy allows nothing else)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from dbarena import __version__
from dbarena.masking import masked
from dbarena.model import Sample
from dbarena.records import AnalysedPoint, JSON, LevelComparison, StoredPoint, StoredProfile, StoredRun, \
    StoredSystemSample
from dbarena.report import html as report_html
from dbarena.report.decision import workload_of
from dbarena.report.charts import MAX_TOGGLED, label_class
from dbarena.report.data import Report, Section
from dbarena.report.escaping import html_text
from dbarena.report import reading, tables
from dbarena.report.tables import TableSpec, num, run_provenance, section_tables
from dbarena.stats import configkey, metric
from dbarena.stats.history import History
from dbarena.report import chartspecs as chart_specs
from dbarena.serve.live import Plan, progress_text, when as when

# The points a run page lists before it says how many more there are (an imported run
# can hold hundreds of thousands).
RUN_ROWS = 2000


def frame(title: str, body: str, store: str) -> str:
    """A whole page: its title, the header every page shares (where it is, the store),
    its body."""
    return "\n".join([
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html_text(title)} · dbarena</title>",
        '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'
        '<link rel="stylesheet" href="/static/report.css"><link rel="stylesheet" href="/static/serve.css">'
        '<link rel="stylesheet" href="/static/charts.css">',
        '<script src="/static/serve.js" defer></script><script src="/static/charts.js" defer></script></head><body>',
        '<nav class="top"><a href="/">Home</a> <a href="/decide">Decide</a> <a href="/workload">Workloads</a> <a href="/history">History</a> '
        '<a href="/hosts">Hosts</a> '
        f'<span class="meta">store {html_text(masked(store))} · dbarena {html_text(__version__)}</span></nav>',
        body, "</body></html>"])


def error(message: str) -> str:
    """The body of a page that could not be made: the one line that says why."""
    return f'<h1>dbarena serve</h1><p class="error">{html_text(message)}</p>'


def label(text: str) -> str:
    return f"<bdi>{html_text(text)}</bdi>"


def _table(headers: Sequence[str], rows: Sequence[str], css: str = "") -> str:
    """A table of rows already made (<tr>...</tr>)."""
    head = "".join(f"<th>{html_text(h)}</th>" for h in headers)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


@dataclass(frozen=True)
class RunLine:
    """A run as Home lists it: the run, its study's name, its progress."""

    run: StoredRun
    study: str | None
    points: int
    failed: int
    plan: Plan | None
    latest: str | None = None  # a running run's: the point it measures, else its last one's throughput


def home(lines: Sequence[RunLine], store: str) -> str:
    """Running runs first (their progress updated by the page itself), then the labels,
    studies and hosts of the store, then every run, newest first."""
    newest = sorted(lines, key=lambda line: line.run.id, reverse=True)
    running = [line for line in newest if line.run.status == "running"]
    out = ["<h1>dbarena serve</h1>",
           f'<p class="meta">{len(lines)} runs, {sum(line.points for line in lines)} points in '
           f"{html_text(masked(store))}.</p>"]
    # The page follows the runs running when it was drawn; one that starts later reloads it.
    out.append(f'<section id="running" data-live="{",".join(str(line.run.id) for line in running)}">'
               "<h2>Running now</h2>")
    out.append(_runs_table(running, current=True) if running else '<p class="note">No run is running.</p>')
    out.append("</section>")
    out.append(_labels(newest))
    out.append(_studies(newest))
    out.append(_hosts(newest))
    out.append(f'<section id="runs"><h2>Runs, newest first</h2>{_runs_table(newest)}</section>')
    return "\n".join(out)


def _runs_table(lines: Sequence[RunLine], current: bool = False) -> str:
    """The runs, a row each; with `current` (the runs running now), the per-second
    throughput of the point each is measuring (between points: of the one it stored
    last), which the page rewrites every second."""
    rows = []
    for line in lines:
        r = line.run
        variant = f" [{label(r.variant)}]" if r.variant else ""
        latest = f'<td class="current">{html_text(line.latest or "-")}</td>' if current else ""
        rows.append(
            f'<tr data-run="{r.id}"><td><a href="/run/{r.id}">{r.id}</a></td><td>{label(r.label)}{variant}</td>'
            f"<td>{html_text(r.host)}</td><td>{html_text(r.engine)}</td><td>{html_text(line.study or '-')}</td>"
            f'<td>{when(r.started_at)}</td><td class="ended">{when(r.ended_at)}</td>'
            f'<td class="status">{html_text(r.status)}</td><td class="points">'
            f"{html_text(progress_text(line.points, line.failed, line.plan, r.status == 'running'))}</td>"
            f"{latest}</tr>")
    return _table(["run", "label", "host", "engine", "study", "started (UTC)", "ended", "status", "points",
                   *(["the point being measured (else the last stored), per second"] if current else [])], rows, "runs")


def decide_link(baseline: str | None, labels: Sequence[str] = (), per: str = "", about: Sequence[str] = ()) -> str:
    """The address of a Decide view: every choice in the query, so that a link
    reproduces it and the back button returns to the one before."""
    query = ([("baseline", baseline)] if baseline else []) + [("label", item) for item in labels] + \
        ([("per", per)] if per else []) + [("about", item) for item in about]
    return "/decide" + (f"?{urlencode(query)}" if query else "")


# Decide's views (its `per` parameter): the throughput as measured, per core of each
# label's server, or per unit of its price. Each shows the report's own figures
# (report/levels.py derives them, report/tables.py lays them out as `dbarena report`
# shows them), gathered above the report: no second derivation.
VIEWS = {"": "throughput", "core": "per core", "price": "per price"}


def view_bar(baseline: str | None, chosen: Sequence[str], per: str, about: Sequence[str] = ()) -> str:
    """Links to Decide's other views, each keeping the baseline, labels and `about` chosen."""
    items = [f'<strong aria-current="page">{name}</strong>' if key == per else
             f'<a href="{html_text(decide_link(baseline, chosen, key, about))}" data-per="{key}">{name}</a>'
             for key, name in VIEWS.items()]
    return f'<nav class="views">View: {" · ".join(items)}</nav>'


def _titled(spec: TableSpec, section: Section) -> TableSpec:
    return replace(spec, title=f"{section.engine} {section.workload}")


def per_core_view(report: Report) -> str:
    """The throughput of every level divided by the cores and hardware threads of its
    label's server as its runs stored them; a label whose count is unknown said so."""
    parts = []
    for section in report.sections:
        spec = tables.per_core(section)
        if spec is not None:
            parts.append(report_html.table(_titled(spec, section)))
        elif section.metric == "seconds":
            parts.append(f'<h3>{html_text(section.engine)} {html_text(section.workload)}</h3><p class="note">Judged '
                         "by the seconds a run of its queries takes: no throughput to divide by the cores.</p>")
    known = {r.label for r in report.rows if r.physical_cores or r.hardware_threads}
    unknown = [name for name in report.labels if name not in known]
    if unknown:
        parts.append('<p class="none">No core count stored for ' + ", ".join(label(n) for n in unknown)
                     + ": a remote server whose runs were not given <code>--server-cores</code> / "
                       "<code>--server-threads</code>.</p>")
    said = reading.PER_CORE[1] + (f" {reading.CAPACITY_PER_CORE}" if any(r.slo for r in report.rows) else "")
    return (f'<section id="per-core"><h2>Per core</h2><p class="note">{html_text(said)}</p>'
            + "".join(parts) + "</section>")


def per_price_view(report: Report) -> str:
    """What the same work costs: each decision's price line (report.data's, from its
    throughput ratio and the two prices), then each workload's price table as the
    report has it; a label without a price said so, never shown as 0."""
    priced = {r.label for r in report.rows if r.price_per_hour is not None}
    unpriced = [name for name in report.labels if name not in priced]
    parts = []
    if unpriced:
        parts.append('<p class="none">No price stored for ' + ", ".join(label(n) for n in unpriced)
                     + ": give one with <code>dbarena run --price-per-hour</code> or the study's [price], or to the report "
                       "with <code>dbarena report --price LABEL=PRICE</code>.</p>")
    lines = []
    # (The decisions compare the labels as stored: a row's series_label.)
    priced_stored = {r.series_label for r in report.rows if r.price_per_hour is not None}
    for d in report.decisions:
        missing = [name for name in (d.label, d.baseline) if name not in priced_stored]
        said = (d.price if d.price is not None else
                f"no price for {', '.join(missing)}" if missing else "no throughput ratio to price")
        lines.append(f"<li>{label(d.label)} against {label(d.baseline)}, {html_text(d.engine or '')} "
                     f"{html_text(workload_of(d))}: {html_text(said)}</li>")
    if lines:
        parts.append(f'<h3>The decision, priced</h3><ul class="priced">{"".join(lines)}</ul>')
    for section in report.sections:
        spec = tables.price(section, report)
        if spec is not None:
            parts.append(report_html.table(_titled(spec, section)))
    said = reading.PRICE[1] + (f" {reading.PRICE_AT_OBJECTIVE}" if any(r.slo for r in report.rows) else "")
    return (f'<section id="per-price"><h2>Per price</h2><p class="note">{html_text(said)}</p>'
            + "".join(parts) + "</section>")


def _labels(newest: Sequence[RunLine]) -> str:
    seen: dict[str, list[RunLine]] = {}
    for line in newest:
        seen.setdefault(line.run.label, []).append(line)
    rows = [f'<tr><td><a href="{html_text(decide_link(name))}">{label(name)}</a></td><td>{len(mine)}</td>'
            f"<td>{sum(line.points for line in mine)}</td>"
            f"<td>{html_text(', '.join(sorted({line.run.host for line in mine})))}</td>"
            f"<td>{when(mine[0].run.started_at)}</td></tr>" for name, mine in seen.items()]
    return (f'<section id="labels"><h2>Labels</h2>'
            f'<p class="note">A label opens Decide with it as the baseline, every other label against it.</p>'
            f'{_table(["label", "runs", "points", "hosts", "newest run"], rows)}</section>')


def _studies(newest: Sequence[RunLine]) -> str:
    seen: dict[str, list[RunLine]] = {}
    for line in newest:
        if line.run.study_sha256:
            seen.setdefault(line.run.study_sha256, []).append(line)
    if not seen:
        return '<section id="studies"><h2>Studies</h2><p class="note">No run stored its study.</p></section>'
    rows = [f"<tr><td>{html_text(mine[0].study or '-')}</td><td><code>{html_text(sha[:12])}</code></td>"
            f"<td>{len(mine)}</td><td>{', '.join(label(n) for n in dict.fromkeys(l.run.label for l in mine))}</td>"
            f"<td>{when(mine[0].run.started_at)}</td></tr>" for sha, mine in seen.items()]
    return (f'<section id="studies"><h2>Studies</h2>'
            f'{_table(["study", "sha256", "runs", "labels", "newest run"], rows)}</section>')


def _hosts(newest: Sequence[RunLine]) -> str:
    seen: dict[str, list[RunLine]] = {}
    for line in newest:
        seen.setdefault(line.run.host, []).append(line)
    rows = []
    for host, mine in seen.items():
        facts = mine[0].run.host_facts
        rows.append(f"<tr><td>{html_text(host)}</td><td>{html_text(facts.get('cpu_model') or '-')}</td>"
                    f"<td>{html_text(facts.get('hardware_threads') or '-')}</td>"
                    f"<td>{_gib(facts.get('memory_bytes'))}</td><td>{len(mine)}</td>"
                    f"<td>{', '.join(label(n) for n in dict.fromkeys(l.run.label for l in mine))}</td></tr>")
    return (f'<section id="hosts"><h2>Hosts</h2>'
            f'{_table(["host", "CPU", "hardware threads", "memory GiB", "runs", "labels"], rows)}</section>')


def _gib(value: JSON) -> str:
    return f"{value / 2**30:.1f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def decide(report: Report | None, stored: Sequence[str], baseline: str | None, chosen: Sequence[str],
           problem: str | None = None, links: Mapping[tuple[str, str], chart_specs.Links] | None = None,
           per: str = "", profiles: str = "", about: Sequence[str] = ()) -> str:
    """The choice (a baseline, the labels against it, what else they are compared about,
    the view: a GET form, so that the address holds it), the view asked for (per core,
    per price), the command that writes the same report as a file, then the report
    itself as `dbarena report` renders it (its decision first), or the line that says
    why not."""
    out = [choice_form("/decide", stored, baseline, chosen, hidden=[("per", per)] if per else (), about=about)]
    out.append(view_bar(baseline, chosen, per, about))
    if problem is not None:
        out.append(f'<p class="error">{html_text(problem)}</p>')
        return "\n".join(out)
    assert report is not None
    # A per-core or per-price view goes right below the decision (report_html.body), the
    # answer first in every view.
    view = per_core_view(report) if per == "core" else per_price_view(report) if per == "price" else ""
    argv = ["dbarena", "report", *(["--baseline", baseline] if baseline else []),
            *(a for item in chosen for a in ("--label", item)), *(a for item in about for a in ("--about", item)),
            "-o", "decide.html"]
    # The report's own first section is the decision (or the line saying there is none):
    # the first screen answers; the command that writes the same file comes last.
    # Each section's sweep drawn in the browser (report/chartspecs.py), where the report file
    # has its matplotlib charts; its labels toggled by the report's own bar and rules.
    drawn = {(s.engine, s.workload): sweep_charts(s, (links or {}).get((s.engine, s.workload), {}), baseline,
                                                  chosen) for s in report.sections}
    out.append(toggles_sheet(report.labels))
    out.append(f'<div class="report">{report_html.body(report, drawn, after_decision=view, profiles=profiles)}</div>')
    out.append(f'<p class="note">The same view as a file, with its charts: <code>{html_text(shlex.join(argv))}'
               "</code></p>")
    return "\n".join(out)


def run_page(run: StoredRun, study: str | None, points: Sequence[StoredPoint], analysed: Mapping[int, AnalysedPoint],
             plan: Plan | None, total: int) -> str:
    """A run: its facts and provenance, and its points, each linked to its page."""
    rows = []
    for p in points[:RUN_ROWS]:
        a = analysed.get(p.point_id)
        warnings = ", ".join(w.get("code", "") for w in a.warnings) if a is not None else ""
        rows.append(
            f'<tr><td><a href="/point/{p.point_id}">{p.point_id}</a></td><td>{html_text(p.engine)}</td>'
            f"<td>{html_text(p.workload)}</td><td>{label(p.variant) if p.variant else ''}</td>"
            f"<td>{p.threads}</td><td>{p.repeat + 1}</td><td>{html_text(p.phase)}</td><td>{html_text(p.status)}</td>"
            f"<td>{num(p.tps)}</td><td>{num(a.steady_tps) if a is not None else '-'}</td>"
            f"<td>{html_text(a.bound or '-') if a is not None else '-'}</td><td>{html_text(warnings)}</td></tr>")
    more = (f'<p class="note">The first {RUN_ROWS} of {len(points)} points.</p>' if len(points) > RUN_ROWS else "")
    failed = sum(p.status == "failed" for p in points if p.phase == "measured")
    return "\n".join([
        f"<h1>Run {run.id}: {label(run.label)}</h1>",
        f'<p class="meta">{html_text(run.engine)} on {html_text(run.host)}, study {html_text(study or "-")}, '
        f"started {when(run.started_at)}, ended {when(run.ended_at)}, <span class=\"status\">"
        f"{html_text(run.status)}</span>"
        f"{': ' + html_text(run.status_reason) if run.status_reason else ''}; points: "
        f"{html_text(progress_text(total, failed, plan, run.status == 'running'))}.</p>",
        f'<p><a href="{html_text(decide_link(run.label))}">Decide with {label(run.label)} as the baseline</a></p>',
        "<h2>Points</h2>",
        _table(["point", "engine", "workload", "variant", "threads", "repeat", "phase", "status", "printed tps",
                "steady tps", "bound", "warnings"], rows, "points"), more,
        report_html.table(run_provenance(run), "provenance")])


def point_page(point: StoredPoint, run: StoredRun, analysed: AnalysedPoint | None, samples: Sequence[Sample],
               command: list[str] | None, stdout: str | None, stderr: str | None, raw_problem: str | None,
               system: Sequence[StoredSystemSample] = (), server: Mapping[str, Any] | None = None,
               profile: StoredProfile | None = None) -> str:
    """A point: its figures, its per-second series, its on-CPU profile's flame graph
    (`profile`: Store.profiles' with its folded stacks, where it was profiled), the command it ran, its
    configuration key and provenance, and its raw output (passwords masked), with a
    download of it."""
    steady = analysed.steady_start_s if analysed is not None else None
    figures: list[tuple[str, str]] = [
        ("status", point.status + (f": {point.error}" if point.error else "")),
        ("started (UTC)", when(point.started_at)), ("ended", when(point.ended_at)),
        ("threads / clients", f"{point.threads} / {point.clients}"), ("duration", f"{point.duration_s} s"),
        ("repeat", str(point.repeat + 1)), ("phase", point.phase),
        ("printed tps", num(point.tps)), ("printed qps", num(point.qps)),
        ("latency avg / p95 / p99 ms", f"{num(point.latency_avg_ms, 3)} / {num(point.latency_p95_ms, 3)} / "
                                       f"{num(point.latency_p99_ms, 3)}"),
        *_objective_figures(point, run),
    ]
    if analysed is not None:
        figures += [
            ("steady-state tps (95 % CI within the run)",
             f"{num(analysed.steady_tps)} ({num(analysed.tps_ci_low)} .. {num(analysed.tps_ci_high)})"),
            ("warm-up cut at", "-" if steady is None else f"{steady:g} s"),
            ("bound", (analysed.bound or "-") + (f" ({analysed.bound_evidence})" if analysed.bound_evidence else "")),
            ("warnings", "; ".join(f"{w.get('code', '')}: {w.get('message', '')}" for w in analysed.warnings) or "-"),
        ]
    rows = [f"<tr><th>{html_text(k)}</th><td>{html_text(v)}</td></tr>" for k, v in figures]
    variant = f" [{label(point.variant)}]" if point.variant else ""
    out = [
        f"<h1>Point {point.point_id}: {html_text(point.engine)} {html_text(point.workload)}{variant} at "
        f"{point.threads} threads</h1>",
        f'<p class="meta">Label {label(point.label)}, <a href="/run/{run.id}">run {run.id}</a> on '
        f"{html_text(run.host)}.</p>",
        f'<table class="facts">{"".join(rows)}</table>',
        "<h2>Per second</h2>", *point_charts(samples, system, server, steady),
        *profile_section(profile),
        "<h2>Command</h2>",
        f"<pre class=\"command\">{html_text(masked(shlex.join(command))) if command else '-'}</pre>",
        "<h2>Configuration</h2>",
        f"<p>Key <code>{html_text(point.config_key or '-')}</code>: points of one key are pooled and compared "
        "(stats/configkey.py).</p>",
        f'<pre class="config">{html_text(_pretty(point.config))}</pre>',
        report_html.table(run_provenance(run), "provenance"),
        "<h2>Raw output</h2>",
    ]
    if raw_problem is not None:
        out.append(f'<p class="error">{html_text(raw_problem)}</p>')
    else:
        out.append(f'<p><a href="/point/{point.point_id}/raw.txt" download>Download the raw output</a> '
                   "(passwords masked).</p>")
        out.append(f'<h3>stdout</h3><pre class="raw">{html_text(masked(stdout or ""))}</pre>')
        out.append(f'<h3>stderr</h3><pre class="raw">{html_text(masked(stderr or ""))}</pre>')
    return "\n".join(out)


def profile_section(profile: StoredProfile | None) -> list[str]:
    """A profiled point's flame graph (report/flamegraph.py), or nothing."""
    from dbarena.report import flamegraph
    from dbarena.stats import profiles

    if profile is None or profile.folded is None:
        return []
    stacks = profiles.parse_folded(profile.folded)
    caption = (f"on CPU: {profiles.samples(stacks):,} samples at {float(profile.frequency_hz or 0):g} Hz "
               "(hover a frame for its samples)")
    return ['<h2 id="profile">On CPU (flame graph)</h2>',
            "<p>The server's processes sampled on CPU while the point ran (--profile): each frame a function, "
            "below its caller, as wide as the samples it was on the stack of.</p>",
            f'<div class="flame">{flamegraph.flame_svg(stacks, caption)}</div>']


def _objective_figures(point: StoredPoint, run: StoredRun) -> list[tuple[str, str]]:
    """A point of a capacity search (--slo): an open-loop point's offered rate and whether
    it met the run's objective, judged as the search judged it (stats/capacity.py); the
    closed-loop point the search started from said so. Nothing for other points."""
    from dbarena.stats import capacity

    objective = capacity.Objective.from_json(run.options.get("slo"))
    rate = capacity.offered(point.options)
    if rate is None:
        return [] if objective is None else [
            ("objective (--slo)", f"{objective.text}: this closed-loop point (its clients as fast as the server "
                                  "answers) started the search of its capacity; Decide draws the curve")]
    out = [("offered rate (open loop)", f"{capacity.rate_text(rate)} TPS offered (its transactions scheduled at "
                                        "that rate; latency counted from each one's scheduled start), "
                                        f"{num(point.tps)} achieved")]
    if objective is None:
        out.append(("objective", "none recorded with its run: an offered rate, not a step of a search"))
    elif point.phase != "measured":
        out.append(("objective", f"{objective.text}: not judged (a warm-up)"))
    else:
        judged = capacity.judge(objective, rate, capacity.of_point(point))
        out.append(("objective (--slo)", f"{objective.text}: {'met' if judged.meets else 'missed'} ({judged.why})"))
    return out


def _pretty(value: JSON) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) if value is not None else "-"


def raw_text(point: StoredPoint, stdout: str, stderr: str) -> str:
    """The download: both streams, passwords masked, each under a line naming it."""
    return (f"# dbarena point {point.point_id}: {point.engine} {point.workload} threads={point.threads}\n"
            f"# stdout\n{masked(stdout)}\n# stderr\n{masked(stderr)}\n")


chart = chart_specs.html  # (the site draws its charts with it too: report/chartspecs.py)


def point_charts(samples: Sequence[Sample], system: Sequence[StoredSystemSample],
                 server: Mapping[str, Any] | None, steady: float | None) -> list[str]:
    """A point's series, one zoom for all: its throughput (and latency) per second, the
    server's waits, the machine's CPU and I/O."""
    specs = [chart_specs.per_second(samples, steady), chart_specs.latency(samples),
             chart_specs.waits(server) if server else None, *chart_specs.machine(system)]
    drawn = [chart(spec) for spec in specs if spec is not None]
    if not drawn:
        return ['<p class="note">No per-second series stored for this point.</p>']
    return ['<p class="note">Drag across a chart to zoom into those seconds (every chart below follows); '
            "double-click or “whole series” to go back. Hover a point for its value.</p>", *drawn]


def toggles_sheet(labels: Sequence[str]) -> str:
    """The style sheet of the report's label toggles (the CSP allows no inline style):
    served by /toggles.css from the labels' classes (digests, no label text)."""
    if not 2 <= len(labels) <= MAX_TOGGLED:
        return ""
    query = urlencode([("c", label_class(item)) for item in labels])
    return f'<link rel="stylesheet" href="/toggles.css?{html_text(query)}">'


def choice_form(action: str, stored: Sequence[str], baseline: str | None, chosen: Sequence[str],
                hidden: Sequence[tuple[str, str]] = (), about: Sequence[str] | None = None) -> str:
    """The choice of a baseline and labels (and, where `about` is given, what else the
    labels are compared about: `report --about`), a GET form: the address holds it."""
    options = "".join(f'<option value="{html_text(item)}"{" selected" if item == baseline else ""}>'
                      f"{html_text(item)}</option>" for item in stored)
    boxes = "".join(f'<label><input type="checkbox" name="label" value="{html_text(item)}"'
                    f'{" checked" if item in chosen else ""}> {label(item)}</label> ' for item in stored)
    kept = "".join(f'<input type="hidden" name="{html_text(k)}" value="{html_text(v)}">' for k, v in hidden)
    # (The host is what two labels differ in by default: the other fields of a key.)
    asked = "" if about is None else (
        '<fieldset><legend>Compared about (besides the host: labels may differ in these)</legend>'
        + "".join(f'<label><input type="checkbox" name="about" value="{name}"{" checked" if name in about else ""}>'
                  f' {name}</label> ' for name in sorted(configkey.ABOUT) if name != "host")
        + "</fieldset>")
    # autocomplete off: going back, the browser would restore the choice made since
    # rather than show the one the address (and the report below) holds.
    return (f'<form class="choose" method="get" action="{html_text(action)}" autocomplete="off">{kept}'
            f'<label>Baseline <select name="baseline">{options}</select></label>'
            f'<fieldset><legend>Labels (none ticked: every label)</legend>{boxes}</fieldset>{asked}'
            '<button type="submit">Show</button></form>')


def workload_link(engine: str, workload: str, baseline: str | None, labels: Sequence[str] = ()) -> str:
    """The address of a workload's sweep, with the choice of labels it was opened with."""
    query = [("engine", engine), ("workload", workload), *([("baseline", baseline)] if baseline else []),
             *(("label", item) for item in labels)]
    return f"/workload?{urlencode(query)}"


def sweep_charts(section: Section, links: chart_specs.Links, baseline: str | None,
                 chosen: Sequence[str]) -> dict[str, str]:
    """A section's charts on Decide: its sweep (throughput with its band), a link to the
    workload's page under it."""
    spec = chart_specs.sweep(section, links)
    if spec is None:
        return {}
    more = (f'<p class="note"><a href="{html_text(workload_link(section.engine, section.workload, baseline, chosen))}">'
            f"{html_text(section.engine)} {html_text(section.workload)}: the sweep level by level, latency "
            "percentiles and the bound at each level</a></p>")
    return {"throughput": chart(spec) + more, **capacity_charts(section)}


def capacity_charts(section: Section) -> dict[str, str]:
    """A section's latency-throughput curves (--slo), a pair of charts per level searched
    (report/chartspecs.capacity): name -> their HTML."""
    out = {}
    for threads in sorted({c.threads for c in section.curves}):
        specs = chart_specs.capacity(section, threads)
        if specs:
            out[f"capacity_{threads}"] = "".join(chart(spec) for spec in specs)
    return out


def workload(report: Report, section: Section, links: chart_specs.Links, stored: Sequence[str],
             baseline: str | None, chosen: Sequence[str]) -> str:
    """A workload: the sweep of the chosen labels (the figure with its interval band,
    latency percentiles), each level's bound and points (links), then the report's own
    tables of the section."""
    hidden = [("engine", section.engine), ("workload", section.workload)]
    out = [choice_form("/workload", stored, baseline, chosen, hidden),
           f"<h1>{html_text(section.engine)} {html_text(section.workload)}</h1>",
           f'<p class="meta">Labels: {", ".join(label(item) for item in section.labels)}; baseline '
           f'{label(report.baseline or "-")}. <a href="{html_text(decide_link(baseline, chosen))}">The decision '
           "for these labels</a>. A point of a chart opens the first point measured at that level.</p>",
           toggles_sheet(section.labels)]
    bar, _ = report_html.toggles(section.labels)
    out += [bar, chart(chart_specs.sweep(section, links)), chart(chart_specs.percentiles(section, links)),
            *capacity_charts(section).values()]
    rows = []
    for r in sorted(section.rows, key=lambda r: (section.labels.index(r.label) if r.label in section.labels
                                                 else len(section.labels), r.threads)):
        interval = (f" ({num(max(r.tps_ci_low, 0.0))} .. {num(r.tps_ci_high)})"
                    if r.tps_ci_low is not None and r.tps_ci_high is not None else "")
        points = " ".join(f'<a href="/point/{pid}">{pid}</a>' for pid in links.get((r.label, r.threads), ()))
        rows.append(f"<tr><td>{label(r.label)}</td><td>{r.threads}</td><td>{num(r.value)}{html_text(interval)}</td>"
                    f"<td>{num(r.latency_p50_ms, 3)}</td><td>{num(r.latency_p95_ms, 3)}</td>"
                    f"<td>{num(r.latency_p99_ms, 3)}</td><td>{html_text(r.bound or '-')}</td>"
                    f"<td>{r.n}{f' ({r.failed} failed)' if r.failed else ''}</td><td>{points or '-'}</td></tr>")
    out += ["<h2>Level by level</h2>",
            _table(["label", "threads", f"{section.metric} (95 % CI)", "p50 ms", "p95 ms", "p99 ms", "bound",
                    "repeats", "points"], rows, "levels"),
            '<p class="note">bound: what limited each level, from the server\'s view of its points '
            "(stats/bound.py; several: the points disagreed).</p>",
            "<h2>The report's tables</h2>",
            *(report_html.table(t, folded=t.title != report_html.KEY_TABLE) for t in section_tables(section, report))]
    return "\n".join(out)


def workloads(report: Report, baseline: str | None, chosen: Sequence[str]) -> str:
    """The workloads of a choice, each a link (a workload page asked without one)."""
    items = "".join(f'<li><a href="{html_text(workload_link(s.engine, s.workload, baseline, chosen))}">'
                    f"{html_text(s.engine)} {html_text(s.workload)}</a></li>" for s in report.sections)
    return f"<h1>Workloads</h1><ul>{items}</ul>"


@dataclass(frozen=True)
class HostLine:
    """A host as the Hosts page shows it: its kind, its runs, its latest probe, and what
    fleet/outliers.py finds of it among the hosts of its kind."""

    host: str
    group: str
    runs: Sequence[StoredRun]
    probe: Mapping[str, JSON]
    finding: str | None
    flagged: bool


def hosts_page(lines: Sequence[HostLine]) -> str:
    """Probes by host, grouped by kind; a host far from its kind flagged (fleet/outliers.py
    decides, as `dbarena fleet` flags it)."""
    from dbarena.stats.outliers import FIGURES

    heads = ["host", "kind", "runs", "labels", "latest probe"]
    for key, best, words, higher in FIGURES:
        heads.append(f"{words} ({'higher' if higher else 'lower'} is better)")
        if best:
            heads.append(f"{words}, best second")
    heads.append("far from its kind?")
    rows = []
    for line in sorted(lines, key=lambda line: (line.group, line.host)):
        cells = [html_text(line.host), html_text(line.group), str(len(line.runs)),
                 ", ".join(label(n) for n in dict.fromkeys(r.label for r in line.runs)),
                 html_text(when(line.runs[-1].started_at) if line.probe else "no probe")]
        for key, best, _, _ in FIGURES:
            cells.append(num(_float(line.probe.get(key)), 2))
            if best:
                cells.append(num(_float(line.probe.get(best)), 2))
        cells.append(html_text(line.finding or ("-" if line.probe else "not probed")))
        css = ' class="flagged"' if line.flagged else ""
        rows.append(f"<tr{css}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    flagged = sum(line.flagged for line in lines)
    return "\n".join([
        "<h1>Hosts</h1>",
        f'<p class="meta">{len(lines)} hosts, {flagged} far from their kind. Each host\'s latest probe '
        "(`dbarena probe`, run before a study): CPU events/s, memory MiB/s and fsync p99 ms. A kind is the "
        "cloud's instance type, else the CPU model and hardware threads; a host is flagged where its probe "
        "lies far from its kind's (fleet/outliers.py: three hosts or more, beyond 3 MADs of the median and 30 % "
        "of it; two hosts, beyond 3x apart).</p>",
        _table(heads, rows, "hosts")])


def _float(value: JSON) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def history_page(history: History, stored: Sequence[str], chosen: Sequence[str], problem: str | None = None) -> str:
    """Each series of runs with its change points and their causes; a change point
    links to the diff of the runs on either side."""
    boxes = "".join(f'<label><input type="checkbox" name="label" value="{html_text(item)}"'
                    f'{" checked" if item in chosen else ""}> {label(item)}</label> ' for item in stored)
    out = ['<form class="choose" method="get" action="/history" autocomplete="off">'
           f'<fieldset><legend>Labels (none ticked: every label)</legend>{boxes}</fieldset>'
           '<button type="submit">Show</button></form>', "<h1>History</h1>"]
    if problem is not None:
        out.append(f'<p class="error">{html_text(problem)}</p>')
        return "\n".join(out)
    shown = [s for s in history.series if len(s.runs) >= 2]
    out.append(f'<p class="meta">{len(shown)} series of two runs or more (of {len(history.series)}), each of one '
               "label, engine, workload, level and dataset over time; change points by Apache Otava (p &lt; "
               "0.001), each a dotted red line: click it for what differs between the runs on either side. "
               "`dbarena history` prints the same.</p>")
    for n, s in enumerate(shown[:MAX_SERIES]):
        diff = {c.run_id: diff_link(s.runs[c.index - 1].run_id, c.run_id) for c in s.change_points if c.index >= 1}
        items = "".join(f'<li><a href="{html_text(diff[c.run_id])}">{html_text(c.summary())}</a>: '
                        f"{html_text(c.text)}</li>" if c.run_id in diff else
                        f"<li>{html_text(c.summary())}: {html_text(c.text)}</li>" for c in s.change_points)
        note = f'<p class="note">{html_text(s.note)}</p>' if s.note else ""
        out.append(f'<section class="series" id="series-{n}"><h2>{label(s.name)}</h2>'
                   f"{chart(chart_specs.history(s, diff))}{note}"
                   f'<ul class="changes">{items or "<li>no change point</li>"}</ul></section>')
    if len(shown) > MAX_SERIES:
        out.append(f'<p class="note">The first {MAX_SERIES} of {len(shown)} series: choose labels to see others.</p>')
    return "\n".join(out)


# The series a History page draws before it asks for a narrower choice.
MAX_SERIES = 60


def diff_link(before: int, after: int) -> str:
    return f"/diff?{urlencode([('before', before), ('after', after)])}"


def _change(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"


def _compared(c: LevelComparison) -> str:
    """A level of a diff: each run's figure, the change, its 95 % interval and the verdict,
    as `compare` gives them; a level not comparable says why instead."""
    figure = html_text(c.metric) + (f" (capacity at {html_text(c.slo)})" if c.slo else
                                    f" (at {metric.rate_shown(c.offered_tps)} TPS offered)" if c.offered_tps is not None else "")
    within = ("-" if c.ratio_ci_low is None or c.ratio_ci_high is None
              else f"{_change(c.ratio_ci_low)} .. {_change(c.ratio_ci_high)}")
    verdict = html_text(c.verdict_text)
    return (f"<tr><td>{html_text(c.engine)}</td><td>{html_text(c.workload)}</td>"
            f"<td>{label(c.variant) if c.variant else ''}</td><td>{c.threads}</td><td>{figure}</td>"
            f"<td>{num(c.a_mean)}</td><td>{num(c.b_mean)}</td><td>{_change(c.ratio)}</td><td>{within}</td>"
            f"<td>{f'<strong>{verdict}</strong>' if c.significant else verdict}</td></tr>")


def diff_page(before: StoredRun, after: StoredRun, changes: Sequence[tuple[str, str, str]],
              facts: Sequence[tuple[str, str | None, str | None]], compared: Sequence[LevelComparison],
              about: Sequence[str] = ()) -> str:
    """What differs between two runs: the facts that changed (stats/environment.py, the
    causes History names), the levels both measured as `compare` compares them (each run
    a label of its own, about the host and `about`: analysis.compare's rows), every fact
    side by side."""
    changed = "".join(f"<tr><td>{html_text(f)}</td><td>{html_text(a)}</td><td>{html_text(b)}</td></tr>"
                      for f, a, b in changes)
    levels = "".join(_compared(c) for c in compared)
    also = "".join(f" --about {html_text(a)}" for a in about)
    every = "".join(f"<tr><td>{html_text(f)}</td><td>{html_text(a if a is not None else '-')}</td>"
                    f"<td>{html_text(b if b is not None else '-')}</td></tr>" for f, a, b in facts)
    return "\n".join([
        f'<h1>Run {before.id} → run {after.id}</h1>',
        f'<p class="meta"><a href="/run/{before.id}">Run {before.id}</a> ({label(before.label)}, '
        f'{when(before.started_at)}) and <a href="/run/{after.id}">run {after.id}</a> ({label(after.label)}, '
        f"{when(after.started_at)}).</p>",
        "<h2>What changed</h2>",
        (_table(["fact", f"run {before.id}", f"run {after.id}"], [changed], "diff") if changed else
         '<p class="note">No recorded fact changed between these runs.</p>'),
        "<h2>Levels both measured</h2>",
        '<p class="note">Each run as a label of its own, compared as <code>dbarena compare</code> compares two '
        f"labels{also and f' with <code>{also.strip()}</code>'}: the change of run {after.id} against run "
        f"{before.id}, its 95 % interval over sessions and the verdict; a level whose configuration differs in "
        "anything else (the workload, its clients, the tool's options) is not compared.</p>",
        (_table(["engine", "workload", "variant", "threads", "figure", f"run {before.id}", f"run {after.id}",
                 "change", "95 % CI", "verdict"],
                [levels], "diff") if levels else '<p class="note">No level measured in both runs.</p>'),
        f"<details><summary>Every fact of both runs ({len(facts)})</summary>"
        f'{_table(["fact", f"run {before.id}", f"run {after.id}"], [every], "diff")}</details>'])
