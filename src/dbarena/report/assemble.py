"""A report from a store, for `dbarena report` and any other caller: build the model
(report.data.Report) from what was asked for, draw its charts, render it as text.

    report = assemble.build(store, assemble.Selection(labels=("arm", "x86"), at_threads=16))
    drawn = assemble.draw(store, report, "html")
    text = assemble.render(report, "html", Path("report.html"), drawn)

A selection the store cannot answer (a label it does not hold, no points, a level no
point was measured at, --png for a format without charts) is a UsageError saying so in
one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dbarena.errors import ToolMissing, UsageError
from dbarena.limits import listed, quoted
from dbarena.report import charts, data, export, html, levelprofiles, markdown
from dbarena.report import history as history_view
from dbarena.report.escaping import html_text
from dbarena.stats import analysis, history
from dbarena.stats.price import Price
from dbarena.interfaces import ResultStore
from dbarena.records import AnalysedPoint, LentSession
from dbarena.report.shown import Shown

FORMATS = ("html", "md", "csv", "json")
CHART_FORMATS = ("html", "md")  # CSV and JSON carry figures only


@dataclass(frozen=True)
class Selection:
    """What a report shows: these labels in this order (none: every label, in the
    store's order), against `baseline` (default: the first label), with these prices
    (label -> price, over those stored with the runs), the price verdict and the
    per-second chart at `at_threads` threads."""

    labels: tuple[str, ...] = ()
    baseline: str | None = None
    prices: Mapping[str, Price] = field(default_factory=dict)
    at_threads: int | None = None
    # What else the labels' comparisons are about (configkey.ABOUT's names): `report
    # --about settings` compares labels whose settings differ, as `compare` does.
    about: tuple[str, ...] = ()


@dataclass
class Drawn:
    """A report's charts: (engine, workload) -> chart name -> SVG text, and the same
    charts as PNG when asked for (None otherwise)."""

    svg: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    png: dict[tuple[str, str], dict[str, bytes]] | None = None
    history: str = ""  # the HTML report's History section (report/history.py), if any
    profiles: str = ""  # the HTML report's On CPU section (report/profileview.py), if any
    # The Markdown and JSON reports' pooled profiles of every profiled level, and each
    # label's against the baseline's (report/levelprofiles.py); none where none was profiled.
    level_profiles: list[levelprofiles.LevelProfile] = field(default_factory=list)
    profile_changes: list[levelprofiles.ProfileDifference] = field(default_factory=list)


def build(store: ResultStore, selection: Selection) -> data.Report:
    """The report model of the selection's points in the store."""
    return build_shown(store, selection)[0]


def build_shown(store: ResultStore, selection: Selection) -> tuple[data.Report, Shown]:
    """The report model, and what it links each level to (its points, for a view that
    opens them: `dbarena serve`; the profiled ones it pools), under the names the report
    gives its series (data.series_labels: "label [config 1a2b3c]"): made from what the
    store keeps of each shown label's configurations over their sessions
    (analysis.stored_groups), or where those cannot make it (a search's offered rates, a
    level two groups hold) from what it keeps of their points by session
    (analysis.stored_points), each point named once; never from the points' rows but
    for the whole records of those a decision's "why" names."""
    baseline, labels, at_threads = selection.baseline, selection.labels, selection.at_threads
    _check_labels(store, selection)
    if baseline and labels and baseline not in labels:
        labels = (baseline, *labels)
    runs = store.runs()

    def lent(order: list[str]) -> list[LentSession]:
        # The other labels lend the spread between sessions of the shown groups'
        # configurations, as they do to `compare` (read only where some label is not shown):
        # from the summaries the store keeps of their sessions, not their points.
        shown = set(order)
        others = tuple(dict.fromkeys(r.label for r in runs if r.label not in shown))
        return analysis.lent_sessions(store, others) if labels and others else []

    def records(ids: Sequence[int]) -> list[AnalysedPoint]:
        return analysis.load(store, point_ids=tuple(ids))

    groups = analysis.stored_groups(store, tuple(labels))
    if groups is not None:
        if not groups:
            raise UsageError(f"no points to report in {store.location}")
        _check_level(at_threads, {g.summary.threads for g in groups})
        order = list(labels) or list(dict.fromkeys(g.summary.label for g in groups))  # (as stored)
        made = data.build_groups(groups, runs, baseline=baseline, prices=dict(selection.prices),
                                 at_threads=at_threads, labels=order, lent=lent(order), about=selection.about,
                                 records=records)
        if made is not None:
            return made
    # Each point made once, under the name the report gives its series.
    rows = analysis.stored_points(store, labels=tuple(labels), named=data.series_names)
    if not rows:
        raise UsageError(f"no points to report in {store.location}")
    _check_level(at_threads, {r.threads for r in rows})
    order = list(labels) or list(dict.fromkeys(r.series_label for r in rows))  # (as stored)
    report, named = data.build_named(rows, runs, baseline=baseline, prices=dict(selection.prices),
                                     at_threads=at_threads, labels=order, histograms=store.latency_histograms,
                                     named=True, lent=lent(order), about=selection.about, records=records)
    return report, Shown.of_points(named)


def _check_level(at_threads: int | None, measured: set[int]) -> None:
    if at_threads is not None and at_threads not in measured:
        raise UsageError(f"--at-threads {at_threads}: no point was measured at {at_threads} threads "
                         f"(levels: {', '.join(map(str, sorted(measured)))})")


def _check_labels(store: ResultStore, selection: Selection) -> None:
    """Every label named (to show, to price, as the baseline) is one the store holds."""
    stored = {r.label for r in store.runs()}
    named = (*selection.labels, *selection.prices, *([selection.baseline] if selection.baseline else []))
    for label in named:
        if label not in stored:
            raise UsageError(f"no results labelled {quoted(label)} in {store.location} "
                             f"(labels: {listed(sorted(stored))})")


def draw(store: ResultStore, report: data.Report, fmt: str, png: bool = False,
         profiled: levelprofiles.Profiled | None = None) -> Drawn:
    """The charts of the report in format `fmt` (none for CSV and JSON), also as PNG
    with `png`; the per-second series they show are read from the store in one go.
    `profiled`: the report's profiled points by level (build_shown's), whose profiles
    the HTML, Markdown and JSON reports pool (none given: no profiles)."""
    profiled = profiled or {}
    if fmt not in CHART_FORMATS:
        if png:
            raise UsageError(f"--png: {fmt} has no charts (give -o FILE.md or FILE.html)")
        return _listed(store, report, Drawn(), profiled) if fmt == "json" else Drawn()
    wanted = [info.point_id for section in report.sections for info in section.series.values() if info]
    series = store.samples_of(wanted)
    # The server's own series of those points, overlaid on their per-second throughput.
    server = store.server_series(wanted)
    drawn = Drawn(png={} if png else None)
    for section in report.sections:
        key = (section.engine, section.workload)
        samples = {label: series.get(info.point_id, []) for label, info in section.series.items() if info}
        overlay = {label: record for label, info in section.series.items()
                   if info and info.point_id in server and isinstance(record := server[info.point_id].record, dict)}
        raster = drawn.png.setdefault(key, {}) if drawn.png is not None else None
        drawn.svg[key] = charts.charts(section, samples, png=raster, server=overlay)
    if fmt == "html":
        from dbarena.report import profileview

        drawn.history = _history(store, report.labels)
        drawn.profiles = profileview.section(store, report, profiled)
        return drawn
    return _listed(store, report, drawn, profiled)


def _listed(store: ResultStore, report: data.Report, drawn: Drawn, profiled: levelprofiles.Profiled) -> Drawn:
    """The Markdown or JSON report's pooled profiles (every profiled level's, and the
    differentials against the baseline) added to `drawn`."""
    if profiled:
        # In the report's order: its sections', each section's labels', levels ascending.
        place = {(s.engine, s.workload, label): (at, s.labels.index(label))
                 for at, s in enumerate(report.sections) for label in s.labels}
        pools = sorted(levelprofiles.read(store, profiled),
                       key=lambda p: (place.get(p.key[:3], (len(place), 0)), p.key))
        drawn.level_profiles = levelprofiles.summaries(pools)
        drawn.profile_changes = levelprofiles.differences(pools, report.baseline, report.compared)
    return drawn


def _history(store: ResultStore, shown: list[str]) -> str:
    """The History section, when a shown label has runs enough to make a history (looked
    up in the runs first: most stores hold one run a label and pay nothing for it). A
    label the report splits by configuration ('nightly [config 28ea06]') is one history."""
    runs: dict[str, int] = {}
    for r in store.runs():
        runs[r.label] = runs.get(r.label, 0) + 1
    labels = tuple(label for label, n in runs.items() if n >= history_view.MIN_CHART_RUNS
                   and any(s == label or s.startswith(f"{label} [") for s in shown))
    if not labels:
        return ""
    try:
        return history_view.section(history.of_store(store, history.Filter(labels=labels)))
    except ToolMissing as exc:  # without the optional change-point library: the rest of the report still
        return f'<section id="history"><h2>History</h2><p class="note">{html_text(str(exc))}</p></section>'



def render(report: data.Report, fmt: str, output: Path, drawn: Drawn | None = None) -> str:
    """The report as text in `fmt` (one of FORMATS). Markdown writes its chart files into
    `<output stem>_files/` beside `output`; HTML inlines them."""
    drawn = drawn or Drawn()
    if fmt == "html":
        return html.render(report, drawn.svg, drawn.png, history=drawn.history, profiles=drawn.profiles)
    if fmt == "md":
        return markdown.render(report, drawn.svg, output, drawn.png, level_profiles=drawn.level_profiles,
                               profile_changes=drawn.profile_changes)
    if fmt == "csv":
        return export.to_csv(report)
    if fmt == "json":
        return export.to_json(report, drawn.level_profiles, drawn.profile_changes)
    raise UsageError(f"no report format {fmt!r} (formats: {', '.join(FORMATS)})")
