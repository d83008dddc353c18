"""The HTML report: one self-contained file (inline CSS and SVG charts, no network),
readable on a laptop and printable. Every text from the store is escaped. Hovering a
point shows its exact values (SVG <title>s: no script needed); each chart has a link
that saves it as an .svg file. That link is the page's one script (SAVE, allowed by its
hash in the CSP, so no other script can run): it hands the browser the chart already in
the page, where a data: link would hold every chart a second time in base64 (more than
half of a report's bytes).

Labels can be hidden and shown again in every chart at once, with no script: a checkbox
per label in a bar at the top of the page, and per label a CSS rule (`body:has(#show-X:
not(:checked)) .X`) that hides the elements charts.py gave the label's class (lines,
markers, bands, bars, hover points) and dims its legend entries. The class is a digest
of the label (charts.label_class), so no label text reaches the CSS. A saved SVG holds
every label: what is hidden is hidden in this page only."""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import datetime, timezone

from dbarena import __version__
from dbarena.report import data
from dbarena.report.decision import html as decision_html
from dbarena.report.charts import MAX_TOGGLED, label_class
from dbarena.report.data import Report
from dbarena.report.escaping import html_text
from dbarena.report.tables import TableSpec, how_to_read, provenance, rate_levels, section_tables, what_differs

# A click on a "save as SVG" link: the link gets a blob: URL of its figure's SVG just
# before the browser follows it (a download, which loads nothing into the page).
SAVE = ("document.addEventListener('click',e=>{const a=e.target.closest('a.save-svg');if(!a)return;"
        "const svg=a.closest('figure').querySelector('svg');"
        "a.href=URL.createObjectURL(new Blob([new XMLSerializer().serializeToString(svg)],"
        "{type:'image/svg+xml'}));});")

# Forbids every network request and every script but SAVE: the report works offline by
# construction, and a label like "<script>" could not run even if it slipped through.
CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-"
       + base64.b64encode(hashlib.sha256(SAVE.encode()).digest()).decode() + "'")

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
       max-width: 1400px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; margin-top: 1.4em; }
.meta { color: #555; } nav ul { columns: 2; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
.charts { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 0 2em; align-items: start; }
@media (max-width: 1000px) { .charts { grid-template-columns: minmax(0, 1fr); } }
details.table { margin: 0.4em 0; } details.table summary { cursor: pointer; }
details.table summary h3 { display: inline; margin: 0; font-size: 1.05em; }
#reading summary { cursor: pointer; } #reading summary h2 { display: inline; border: 0; }
#reading dt { font-weight: 600; margin-top: 0.5em; } #reading dd { margin-left: 0; color: #444; max-width: 60em; }
figcaption { font-size: 12px; } a.save { color: #555; }
.hover circle:hover { fill-opacity: 0.25; }
table { border-collapse: collapse; font-size: 12.5px; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: right; vertical-align: top; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
.note { color: #555; font-size: 12px; max-width: 60em; }
.toggles { position: sticky; top: 0; z-index: 1; background: #fff; border-bottom: 1px solid #ddd;
           padding: 0.3em 0; font-size: 13px; }
.toggles label { margin-right: 1.2em; white-space: nowrap; cursor: pointer; }
.provenance td { text-align: left; max-width: 28em; overflow-wrap: anywhere; }
#decision h2 { margin-top: 1em; } .decision td { text-align: left; } .decision td.num { text-align: right; }
.verdict-slower td:nth-child(7), .overall .verdict-slower strong { color: #b00020; }
.verdict-faster td:nth-child(7), .overall .verdict-faster strong { color: #0a6b2d; }
.overall { padding-left: 1.2em; } .why { font-size: 12.5px; color: #555; }
@media print { body { max-width: none; margin: 0; } section { break-before: page; } nav { display: none; }
               .charts { grid-template-columns: minmax(0, 1fr); }
               a.save { display: none; } }
"""


def _table(spec: TableSpec, css: str = "", folded: bool = False) -> str:
    """A table with its own note (what explains every table of its kind is in "How to
    read this"); folded: in a <details> whose summary is the table's title."""
    head = "".join(f"<th>{html_text(h)}</th>" for h in spec.headers)
    body = "".join("<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in row) + "</tr>" for row in spec.rows)
    note = f'<p class="note">{html_text(spec.note)}</p>' if spec.note else ""
    table = f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}'
    if folded:
        return f'<details class="table"><summary><h3>{html_text(spec.title)}</h3></summary>{table}</details>'
    return f"<h3>{html_text(spec.title)}</h3>{table}"


def table(spec: TableSpec, css: str = "", folded: bool = False) -> str:
    """A table as the report draws it, for another page to show (`dbarena serve`)."""
    return _table(spec, css, folded)


# The table of a section shown open: its figures, level by level; the others are folded.
KEY_TABLE = "Results"


def _reading(report: Report) -> str:
    """What each table and the charts show, once for the whole report: folded (a
    <details>), so that the first screen is the decision, not a page of explanations."""
    items = "".join(f"<dt>{html_text(what)}</dt><dd>{html_text(text)}</dd>" for what, text in how_to_read(report))
    return (f'<details id="reading"><summary><h2>How to read this</h2></summary><dl>{items}</dl></details>')


def _decision(report: Report) -> str:
    """The decision, or where there is none, the one line that says why: either way the
    report's first section (the answer first)."""
    if report.decisions:
        return decision_html(report.decisions, report.overall)
    # The labels as stored (the decision compares those: one label whose configurations
    # the report shows apart is still one label).
    stored = {run.label for runs in report.provenance.values() for run in runs.values()}
    why = ("One label: nothing to decide. A report of two labels or more judges each against the baseline."
           if len(stored) < 2 else
           "Nothing to decide: no workload was measured under the baseline and another label alike.")
    return f'<section id="decision"><h2>Decision</h2><p class="none">{html_text(why)}</p></section>'


def _differs(report: Report) -> str:
    """What differs between the labels, the identical facts folded below it."""
    split = what_differs(report)
    if split is None:
        return ""
    differ, same = split
    return (f'<section id="differs"><h2>What differs</h2>{_table(differ, "provenance")}'
            f"<details><summary>{len(same.rows)} facts and settings the same for every label</summary>"
            f'{_table(same, "provenance")}</details></section>')


def toggles(labels: list[str]) -> tuple[str, str]:
    """The bar of checkboxes that show and hide each label in every chart, and its CSS:
    (html, css). Nothing for one label, or for more than charts.MAX_TOGGLED (whose charts
    are not tagged)."""
    if not 2 <= len(labels) <= MAX_TOGGLED:
        return "", ""
    boxes = [f'<label><input type="checkbox" id="show-{label_class(label)}" checked> {html_text(label)}</label>'
             for label in labels]
    bar = ('<nav class="toggles" aria-label="labels shown in the charts">Show in the charts: '
           + " ".join(boxes) + "</nav>")
    return bar, toggle_rules([label_class(label) for label in labels])


def toggle_rules(classes: list[str]) -> str:
    """The CSS that hides a label's chart elements (and dims its legend entries) while
    its checkbox is cleared; classes: charts.label_class of each label (a digest: no
    label text reaches the CSS). `dbarena serve` serves them as a style sheet of its own."""
    return "\n".join(f"body:has(#show-{cls}:not(:checked)) .{cls}:not(.key) {{ display: none; }}\n"
                     f"body:has(#show-{cls}:not(:checked)) .{cls}.key {{ opacity: 0.3; }}" for cls in classes)


def render(report: Report, charts: dict[tuple[str, str], dict[str, str]],
           pngs: dict[tuple[str, str], dict[str, bytes]] | None = None, history: str = "",
           profiles: str = "") -> str:
    """charts: (engine, workload) -> chart name -> SVG text (from report.charts);
    pngs, when given (--png), the same charts as PNG, offered for saving too; history:
    the History section (report/history.py), placed before the provenance."""
    labels = ", ".join(html_text(l) for l in report.labels)
    _, rules = toggles(report.labels)
    parts = [
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>dbarena report: {labels}</title><style>{STYLE}{rules}</style></head><body>",
        body(report, charts, pngs, history, profiles=profiles),
        f"<script>{SAVE}</script></body></html>",
    ]
    return "\n".join(parts)


def body(report: Report, charts: dict[tuple[str, str], dict[str, str]],
         pngs: dict[tuple[str, str], dict[str, bytes]] | None = None, history: str = "",
         after_decision: str = "", profiles: str = "") -> str:
    """The report's content, from its header to its provenance, without the document
    around it: what render() wraps into a file and `dbarena serve` into its Decide page
    (one renderer, two front ends). Without charts (serve draws none yet) neither the
    bar that hides labels in them nor their empty grids. `after_decision`: a view the
    front end asked for (serve's per core or per price), right below the decision, so
    that the answer stays the first thing on the page."""
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    labels = ", ".join(html_text(l) for l in report.labels)
    bar, _ = toggles(report.labels) if charts else ("", "")
    parts = [
        f"<header><h1>dbarena report</h1><p class=\"meta\">Labels: {labels}. Baseline: "
        f"{html_text(report.baseline or '-')}. {data.at_text(report)} "
        f"Generated {generated} by dbarena {html_text(__version__)}.</p></header>",
        # The answer first: the decision above every chart (the first screen).
        _decision(report), *([after_decision] if after_decision else []), _differs(report), _reading(report), bar,
        "<nav><ul>",
    ]
    at_rate = rate_levels(report)
    if at_rate is not None:
        parts.append('<li><a href="#at-rate">Latency at offered rates</a></li>')
    for s in report.sections:
        parts.append(f'<li><a href="#{html_text(s.engine)}-{html_text(s.workload)}">{html_text(s.engine)} '
                     f"{html_text(s.workload)}</a></li>")
    if profiles:
        parts.append('<li><a href="#profiles">On CPU</a></li>')
    if history:
        parts.append('<li><a href="#history">History</a></li>')
    parts.append('<li><a href="#reading">How to read this</a></li><li><a href="#provenance">Provenance</a></li></ul></nav>')
    if at_rate is not None:
        parts.append(f'<section id="at-rate"><h2>Latency at offered rates</h2>{_table(at_rate)}</section>')
    for s in report.sections:
        parts.append(f'<section id="{html_text(s.engine)}-{html_text(s.workload)}"><h2>{html_text(s.engine)} '
                     f'{html_text(s.workload)}</h2>')
        drawn = charts.get((s.engine, s.workload), {})
        if drawn:
            parts.append('<div class="charts">')
        for name, svg in drawn.items():
            # SVG from matplotlib: its text nodes are XML-escaped by matplotlib itself.
            # The link saves the chart as an .svg file for an article (SAVE fills in its
            # address when it is clicked).
            file = re.sub(r"[^\w.-]+", "_", f"{s.engine}-{s.workload}-{name}") + ".svg"
            link = f'<a class="save save-svg" download="{html_text(file)}" href="#">save as SVG</a>'
            png = (pngs or {}).get((s.engine, s.workload), {}).get(name)
            if png:
                link += (f' <a class="save" download="{html_text(file[:-4])}.png" href="data:image/png;base64,'
                         f'{base64.b64encode(png).decode()}">save as PNG</a>')
            parts.append(f'<figure class="chart chart-{name}">{svg}<figcaption>{link}</figcaption></figure>')
        if drawn:
            parts.append("</div>")
        parts.extend(_table(t, folded=t.title != KEY_TABLE) for t in section_tables(s, report))
        parts.append("</section>")
    parts.append(profiles)
    parts.append(history)
    parts.append(f'<section id="provenance"><h2>Provenance</h2>{_table(provenance(report), "provenance")}</section>')
    return "\n".join(parts)
