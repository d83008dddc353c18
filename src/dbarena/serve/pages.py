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
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from dbarena import __version__
from dbarena.masking import masked
from dbarena.records import AnalysedPoint, JSON, StoredPoint, StoredRun
from dbarena.report import html as report_html
from dbarena.report.data import Report
from dbarena.report.escaping import html_text
from dbarena.report.tables import num, run_provenance
from dbarena.serve.live import Plan, progress_text

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
        '<link rel="stylesheet" href="/static/report.css"><link rel="stylesheet" href="/static/serve.css">',
        '<script src="/static/serve.js" defer></script></head><body>',
        '<nav class="top"><a href="/">Home</a> <a href="/decide">Decide</a> '
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


def _when(stamp: str | None) -> str:
    """A stored UTC timestamp as the page shows it: date and time to the second."""
    return "-" if not stamp else stamp.replace("T", " ").removesuffix("+00:00")[:19]


@dataclass(frozen=True)
class RunLine:
    """A run as Home lists it: the run, its study's name, its progress."""

    run: StoredRun
    study: str | None
    points: int
    failed: int
    plan: Plan | None


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
    out.append(_runs_table(running) if running else '<p class="note">No run is running.</p>')
    out.append("</section>")
    out.append(_labels(newest))
    out.append(_studies(newest))
    out.append(_hosts(newest))
    out.append(f'<section id="runs"><h2>Runs, newest first</h2>{_runs_table(newest)}</section>')
    return "\n".join(out)


def _runs_table(lines: Sequence[RunLine]) -> str:
    rows = []
    for line in lines:
        r = line.run
        variant = f" [{label(r.variant)}]" if r.variant else ""
        rows.append(
            f'<tr data-run="{r.id}"><td><a href="/run/{r.id}">{r.id}</a></td><td>{label(r.label)}{variant}</td>'
            f"<td>{html_text(r.host)}</td><td>{html_text(r.engine)}</td><td>{html_text(line.study or '-')}</td>"
            f"<td>{_when(r.started_at)}</td><td>{_when(r.ended_at)}</td>"
            f'<td class="status">{html_text(r.status)}</td><td class="points">'
            f"{html_text(progress_text(line.points, line.failed, line.plan, r.status == 'running'))}</td></tr>")
    return _table(["run", "label", "host", "engine", "study", "started (UTC)", "ended", "status", "points"], rows,
                  "runs")


def decide_link(baseline: str | None, labels: Sequence[str] = ()) -> str:
    """The address of a Decide view: every choice in the query, so that a link
    reproduces it and the back button returns to the one before."""
    query = ([("baseline", baseline)] if baseline else []) + [("label", item) for item in labels]
    return "/decide" + (f"?{urlencode(query)}" if query else "")


def _labels(newest: Sequence[RunLine]) -> str:
    seen: dict[str, list[RunLine]] = {}
    for line in newest:
        seen.setdefault(line.run.label, []).append(line)
    rows = [f'<tr><td><a href="{html_text(decide_link(name))}">{label(name)}</a></td><td>{len(mine)}</td>'
            f"<td>{sum(line.points for line in mine)}</td>"
            f"<td>{html_text(', '.join(sorted({line.run.host for line in mine})))}</td>"
            f"<td>{_when(mine[0].run.started_at)}</td></tr>" for name, mine in seen.items()]
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
            f"<td>{_when(mine[0].run.started_at)}</td></tr>" for sha, mine in seen.items()]
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
           problem: str | None = None) -> str:
    """The choice (a baseline, the labels against it: a GET form, so that the address
    holds it), the command that writes the same view as a file, then the report itself
    as `dbarena report` renders it (its decision first), or the line that says why not."""
    options = "".join(f'<option value="{html_text(item)}"{" selected" if item == baseline else ""}>'
                      f"{html_text(item)}</option>" for item in stored)
    boxes = "".join(f'<label><input type="checkbox" name="label" value="{html_text(item)}"'
                    f'{" checked" if item in chosen else ""}> {label(item)}</label> ' for item in stored)
    # autocomplete off: going back, the browser would restore the choice made since
    # rather than show the one the address (and the report below) holds.
    out = ['<form class="choose" method="get" action="/decide" autocomplete="off">',
           f'<label>Baseline <select name="baseline">{options}</select></label>',
           f'<fieldset><legend>Labels (none ticked: every label)</legend>{boxes}</fieldset>',
           '<button type="submit">Show</button></form>']
    if problem is not None:
        out.append(f'<p class="error">{html_text(problem)}</p>')
        return "\n".join(out)
    assert report is not None
    argv = ["dbarena", "report", *(["--baseline", baseline] if baseline else []),
            *(a for item in chosen for a in ("--label", item)), "-o", "decide.html"]
    # The report's own first section is the decision (or the line saying there is none):
    # the first screen answers; the command that writes the same file comes last.
    out.append(f'<div class="report">{report_html.body(report, {})}</div>')
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
        f"started {_when(run.started_at)}, ended {_when(run.ended_at)}, <span class=\"status\">"
        f"{html_text(run.status)}</span>"
        f"{': ' + html_text(run.status_reason) if run.status_reason else ''}; points: "
        f"{html_text(progress_text(total, failed, plan, run.status == 'running'))}.</p>",
        f'<p><a href="{html_text(decide_link(run.label))}">Decide with {label(run.label)} as the baseline</a></p>',
        "<h2>Points</h2>",
        _table(["point", "engine", "workload", "variant", "threads", "repeat", "phase", "status", "printed tps",
                "steady tps", "bound", "warnings"], rows, "points"), more,
        report_html.table(run_provenance(run), "provenance")])


def point_page(point: StoredPoint, run: StoredRun, analysed: AnalysedPoint | None, samples: Sequence[Mapping[str, Any]],
               command: list[str] | None, stdout: str | None, stderr: str | None, raw_problem: str | None) -> str:
    """A point: its figures, its per-second series, the command it ran, its
    configuration key and provenance, and its raw output (passwords masked), with a
    download of it."""
    steady = analysed.steady_start_s if analysed is not None else None
    figures: list[tuple[str, str]] = [
        ("status", point.status + (f": {point.error}" if point.error else "")),
        ("started (UTC)", _when(point.started_at)), ("ended", _when(point.ended_at)),
        ("threads / clients", f"{point.threads} / {point.clients}"), ("duration", f"{point.duration_s} s"),
        ("repeat", str(point.repeat + 1)), ("phase", point.phase),
        ("printed tps", num(point.tps)), ("printed qps", num(point.qps)),
        ("latency avg / p95 / p99 ms", f"{num(point.latency_avg_ms, 3)} / {num(point.latency_p95_ms, 3)} / "
                                       f"{num(point.latency_p99_ms, 3)}"),
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
        "<h2>Per second</h2>", series_svg(samples, steady),
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


def _pretty(value: JSON) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) if value is not None else "-"


def raw_text(point: StoredPoint, stdout: str, stderr: str) -> str:
    """The download: both streams, passwords masked, each under a line naming it."""
    return (f"# dbarena point {point.point_id}: {point.engine} {point.workload} threads={point.threads}\n"
            f"# stdout\n{masked(stdout)}\n# stderr\n{masked(stderr)}\n")


# The chart's box, in SVG units (it scales to the page's width).
WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 800, 260, 64, 30, 12, 12


def series_svg(samples: Sequence[Mapping[str, Any]], steady_start: float | None) -> str:
    """A point's throughput second by second as a line, its warm-up cut marked; each
    second's value in a <title> (hover). Drawn here, small: no library, no inline style
    (the style sheet colours it)."""
    pairs = [(float(s["second"]), float(s["tps"])) for s in samples
             if isinstance(s.get("second"), (int, float)) and isinstance(s.get("tps"), (int, float))]
    if not pairs:
        return '<p class="note">No per-second series stored for this point.</p>'
    x0, x1 = min(x for x, _ in pairs), max(x for x, _ in pairs)
    top = max(y for _, y in pairs) or 1.0
    span = (x1 - x0) or 1.0

    def at(x: float, y: float) -> tuple[float, float]:
        return (LEFT + (x - x0) / span * (WIDTH - LEFT - RIGHT), HEIGHT - BOTTOM - y / top * (HEIGHT - BOTTOM - TOP))

    line = " ".join(f"{px:.1f},{py:.1f}" for px, py in (at(x, y) for x, y in pairs))
    dots = "".join(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5"><title>second {x:g}: {y:,.1f} tps</title></circle>'
                   for (x, y), (px, py) in ((p, at(*p)) for p in pairs))
    axes = (f'<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}"/>'
            f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}"/>'
            f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end">{top:,.0f}</text>'
            f'<text x="{LEFT - 6}" y="{HEIGHT - BOTTOM}" text-anchor="end">0</text>'
            f'<text x="{LEFT}" y="{HEIGHT - 8}">{x0:g} s</text>'
            f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end">{x1:g} s</text>'
            f'<text x="{LEFT + 6}" y="{TOP + 10}">tps</text>')
    cut = ""
    if steady_start is not None and x0 < steady_start <= x1:
        cx = at(steady_start, 0)[0]
        cut = (f'<line class="cut" x1="{cx:.1f}" y1="{TOP}" x2="{cx:.1f}" y2="{HEIGHT - BOTTOM}">'
               f"<title>steady state from second {steady_start:g}</title></line>")
    return (f'<figure class="series"><svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-label="throughput per second">{axes}{cut}<polyline points="{line}"/>'
            f'<g class="dots">{dots}</g></svg><figcaption>{len(pairs)} seconds; the dotted line: where the '
            "steady state starts (the warm-up before it is cut).</figcaption></figure>")
