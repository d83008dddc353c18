"""The charts of `dbarena serve`'s pages as data, drawn in the browser by
static/charts.js (shipped in the package: no CDN, no inline script).

Why not the report's matplotlib SVG: drawing a section's charts took about 20 s a
request on a loaded 2-CPU machine, and a cache keyed by the store's data version would
still pay that on the first view of every choice of labels (every address is a view).
The figures here are the report's own (report.data's LevelRow, stats/history.py's
Series, stats/bound's waiting): this module only lays them out as points, bands and
marks, with each point's hover text and link; the browser draws a few hundred SVG
elements in milliseconds, and zooms a per-second series without asking the server.

    spec = charts.sweep(section, links)    # a dict: JSON for the element's data-chart

A chart's spec: {"title", "x", "y", "zoom", "group", "xticks" (optional: where the x
axis is labelled), "integer" (optional: whole x ticks only), "xlabels" (optional: [[x, text]],
the x axis labelled with these texts where it is, e.g. a run's id at its place), "series": [{"name", "i" (colour),
"cls" (the report's label class, for the label toggles), "dash", "points": [[x, y,
tip, href]], "band": [[x, low, high]]}], "marks": [{"x", "text", "href"}]}. Pure:
records in, dicts out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from dbarena.model import Sample
from dbarena.records import JSONObject, StoredSystemSample
from dbarena.report.escaping import html_text
from dbarena.report.charts import CURVE_LATENCIES, MAX_TOGGLED, PERCENTILE_CHARTS, label_class
from dbarena.report.curves import Curve
from dbarena.report.data import Section
from dbarena.report.levels import LevelRow
from dbarena.stats import metric as metrics
from dbarena.stats.history import Series

Spec = dict[str, Any]
# (label, threads) -> the ids of the points measured there (their repeats), first first
Links = Mapping[tuple[str, int], Sequence[int]]


def as_attribute(spec: Spec) -> str:
    """The spec as the text of a data-chart attribute (escaped by the caller's
    html_text); compact, and never NaN (JSON has none)."""
    return json.dumps(spec, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


def _cls(section: Section, label: str) -> str:
    # The class the report's label toggles hide (report/html.py's toggles), where it tags.
    return label_class(label) if len(section.labels) <= MAX_TOGGLED else ""


def _figure_of(section: Section) -> str:
    return section.metric if section.metric in ("tps", "seconds") else "qps"


def _level_tip(label: str, row: LevelRow, field: str, value: float, points: Sequence[int], what: str = "") -> str:
    """A level's hover text: its series, level and exact figure (with its interval), its
    repeats and bound, and which point a click opens."""
    unit = {"tps": "TPS", "qps": "QPS", "seconds": "s"}.get(field, "ms" if field.startswith("latency") else "")
    text = f"{label}, {row.threads} threads: {value:,.{3 if unit in ('s', 'ms') else 1}f} {unit}".rstrip()
    text += f" ({what})" if what else ""
    if field == "tps" and row.tps_ci_low is not None and row.tps_ci_high is not None:
        text += f" (95 % CI {max(row.tps_ci_low, 0):,.1f} .. {row.tps_ci_high:,.1f})"
    text += f", {row.n} repeat(s)" if row.n else ""
    text += f", bound: {row.bound}" if row.bound else ""
    return text + (f"; click: point {points[0]}" if points else "")


def _point_href(points: Sequence[int]) -> str | None:
    return f"/point/{points[0]}" if points else None


def sweep(section: Section, links: Links) -> Spec | None:
    """The section's figure (TPS, QPS, or mysqlslap's seconds) against threads, a line
    per label, its 95 % interval as a band where repeats give one; each level's point
    opens the first point measured there."""
    field = _figure_of(section)
    series = []
    for i, label in enumerate(section.labels):
        rows, points = _level_points(section, links, label, field)
        if not rows:
            continue
        band = [[r.threads, max(r.tps_ci_low, 0.0), r.tps_ci_high] for r in rows
                if field == "tps" and r.tps_ci_low is not None and r.tps_ci_high is not None]
        series.append({"name": label, "i": i, "cls": _cls(section, label), "dash": False, "points": points,
                       "band": band if len(band) >= 2 else []})
    if not series:
        return None
    axis = _axis(field)
    return {"title": f"{section.engine} {section.workload}: {axis} against threads (band: 95 % CI)",
            "x": "threads", "y": axis, "zoom": False, "group": "", "series": series, "marks": [],
            "xticks": _levels(series)}


def _axis(field: str) -> str:
    return {"tps": "TPS (steady state)", "seconds": "seconds (lower is better)"}.get(field, field.upper())


def curve(engine: str, workload: str, label: str, metric: str, levels: Sequence[tuple[int, float]]) -> Spec | None:
    """One result's sweep as `dbarena site`'s result page draws it (with charts.js, as
    serve draws a sweep): its figure against threads, axes named with their units, a
    point per level with its figure as hover text. `levels`: (threads, figure)."""
    field = "tps" if metric == "tps" else "seconds" if metric == "seconds" else "qps"
    unit = {"tps": "TPS", "qps": "QPS", "seconds": "s"}[field]
    points = [[threads, value, f"{label}, {threads} threads: {value:,.{3 if field == 'seconds' else 1}f} {unit}", None]
              for threads, value in sorted(levels)]
    if not points:
        return None
    series = [{"name": label, "i": 0, "cls": "", "dash": False, "points": points, "band": []}]
    return {"title": f"{engine} {workload}: {_axis(field)} against threads", "x": "threads", "y": _axis(field),
            "zoom": False, "group": "", "series": series, "marks": [], "xticks": _levels(series)}


def _level_points(section: Section, links: Links, label: str, field: str, what: str = ""
                  ) -> tuple[list[LevelRow], list[list[Any]]]:
    """The label's levels that have the figure, by threads, and each as a chart point:
    threads, value, its tip, and the link to the first point measured there."""
    rows = sorted((r for r in section.rows if r.label == label and r.figure(field) is not None),
                  key=lambda r: r.threads)
    points: list[list[Any]] = []
    for r in rows:
        value = r.figure(field)
        assert value is not None
        mine = links.get((label, r.threads), ())
        points.append([r.threads, value, _level_tip(label, r, field, value, mine, what), _point_href(mine)])
    return rows, points


def _levels(series: Sequence[Spec]) -> list[float]:
    return sorted({p[0] for s in series for p in s["points"]})


def percentiles(section: Section, links: Links) -> Spec | None:
    """The latency percentiles against threads: per label a line per percentile (p50
    solid, the higher ones dashed), each point opening the first point of its level."""
    series = []
    for i, label in enumerate(section.labels):
        for n, (_, field, what) in enumerate(PERCENTILE_CHARTS):
            rows, points = _level_points(section, links, label, field, what)
            if not rows:
                continue
            series.append({"name": f"{label} {what}", "i": i, "cls": _cls(section, label), "dash": n > 0,
                           "points": points, "band": []})
    if not series:
        return None
    return {"title": f"{section.engine} {section.workload}: latency percentiles against threads (ms; "
                     f"{', '.join(what for _, _, what in PERCENTILE_CHARTS[1:])} dashed)",
            "x": "threads", "y": "latency (ms)", "zoom": False, "group": "", "series": series, "marks": [],
            "xticks": _levels(series)}


def _numbers(rows: Sequence[Sample | StoredSystemSample], field: str) -> list[tuple[float, float]]:
    """(second, the figure `field`) of each row that holds that figure."""
    return [(float(s.second), float(figure)) for s in rows
            if isinstance(figure := getattr(s, field), (int, float))]


def _line(name: str, i: int, pairs: Sequence[tuple[float, float]], unit: str, digits: int = 1) -> JSONObject:
    return {"name": name, "i": i, "cls": "", "dash": False, "band": [],
            "points": [[x, y, f"second {x:g}: {y:,.{digits}f} {unit} ({name})", None] for x, y in pairs]}


def per_second(samples: Sequence[Sample], steady_start: float | None) -> Spec | None:
    """A point's throughput second by second (and its latency where the tool printed
    one a second), the warm-up cut marked; zoomable with the point's other charts."""
    tps = _numbers(samples, "tps")
    if not tps:
        return None
    marks = ([{"x": steady_start, "text": f"steady state from second {steady_start:g}", "href": None}]
             if steady_start is not None else [])
    return {"title": "Throughput per second (dotted: where the steady state starts)", "x": "second",
            "y": "TPS", "zoom": True, "group": "point", "series": [_line("tps", 0, tps, "TPS")], "marks": marks}


def latency(samples: Sequence[Sample]) -> Spec | None:
    lat = _numbers(samples, "latency_ms")
    if not lat:
        return None
    return {"title": "Latency per second (the tool's mean in that second, ms)", "x": "second", "y": "ms",
            "zoom": True, "group": "point", "series": [_line("latency", 1, lat, "ms", 3)], "marks": []}


# The machine's figures a point's page draws: (column, name, unit, scale).
CPU = (("cpu_user_pct", "user", "%"), ("cpu_system_pct", "system", "%"), ("cpu_iowait_pct", "iowait", "%"),
       ("cpu_steal_pct", "steal", "%"))
DISK = (("disk_read_bytes_per_s", "read"), ("disk_write_bytes_per_s", "write"))


def machine(system: Sequence[StoredSystemSample]) -> list[Spec]:
    """The machine's CPU (user, system, iowait, steal: % of all CPUs) and its disks' I/O
    (MiB/s read and written) second by second, as the sampler stored them."""
    out: list[Spec] = []
    cpu = [_line(name, i, pairs, unit) for i, (field, name, unit) in enumerate(CPU)
           if (pairs := _numbers(system, field))]
    if cpu:
        out.append({"title": "The machine's CPU per second (% of all its CPUs)", "x": "second", "y": "%",
                    "zoom": True, "group": "point", "series": cpu, "marks": []})
    disk = [_line(name, i, [(x, y / 2 ** 20) for x, y in pairs], "MiB/s") for i, (field, name) in enumerate(DISK)
            if (pairs := _numbers(system, field))]
    if disk:
        out.append({"title": "The machine's disk I/O per second (MiB/s)", "x": "second", "y": "MiB/s",
                    "zoom": True, "group": "point", "series": disk, "marks": []})
    return out


# The wait events a point's page draws one line each: the most frequent (more would be
# a tangle of lines nobody can tell apart; the rest are summed in the waiting line).
TOP_WAITS = 6


def waits(record: Mapping[str, Any]) -> Spec | None:
    """The server's waits second by second (stats/bound: what the family of its engine
    counts as waiting, and the most frequent wait events, each its own line), its
    checkpoints marked."""
    from dbarena.serverside.series import WAIT
    from dbarena.stats import bound

    readings = bound.readings(record)
    seconds = list(readings.seconds)
    if not seconds:
        return None
    what, values = bound.waiting(readings)
    lines = [_line(what, 0, [(s, v) for s, v in zip(seconds, values) if v is not None], "")]
    events = sorted(((sum(v or 0 for v in column), name) for name, column in readings.series.items()
                     if name.startswith(WAIT)), reverse=True)
    for i, (total, name) in enumerate(events[:TOP_WAITS], start=1):
        if total:
            column = readings.series[name]
            lines.append(_line(name.removeprefix(WAIT), i, [(s, float(v)) for s, v in zip(seconds, column)
                                                             if v is not None], "sessions", 0))
    marks = [{"x": s, "text": f"checkpoint at second {s}", "href": None}
             for s in bound.checkpoint_seconds(readings.series, seconds)]
    return {"title": f"The server's waits per second ({what}; the most frequent wait events; "
                     "dotted: checkpoints)", "x": "second", "y": "sessions waiting", "zoom": True,
            "group": "point", "series": [line for line in lines if line["points"]], "marks": marks}


def history(series: Series, diff: Mapping[int, str]) -> Spec | None:
    """A history series: each run's value (x: its place in the series; hover: its date)
    with its 95 % interval as a band, each run opening its page; each change point a
    dotted line that opens the diff of the runs on either side (`diff`: run id of the
    first run after it -> the address)."""
    runs = [(n, r) for n, r in enumerate(series.runs, start=1) if r.mean is not None]
    if not runs:
        return None
    judged = series.metric
    points = [[n, r.mean, f"run {r.run_id} ({r.started_at[:16].replace('T', ' ')}): "
               f"{metrics.shown(r.mean, judged)}" + (f" (95 % CI {metrics.shown(r.ci_low, judged)} .. "
                                                      f"{metrics.shown(r.ci_high, judged)})"
                                                      if r.ci_low is not None and r.ci_high is not None else ""),
               f"/run/{r.run_id}"] for n, r in runs]
    band = [[n, max(r.ci_low, 0.0), r.ci_high] for n, r in runs if r.ci_low is not None and r.ci_high is not None]
    marks = [{"x": c.index + 0.5, "text": f"{c.summary()}: {c.text} (click: what differs between runs "
                                          f"{series.runs[c.index - 1].run_id} and {c.run_id})",
              "href": diff.get(c.run_id)} for c in series.change_points if c.index >= 1]
    # A run sits at its place in the series (evenly spaced: runs days apart or minutes
    # apart alike) and is labelled with its id, as `dbarena history`, its page and every
    # other view name it (run 4, not "the 2nd").
    return {"title": series.name, "x": "run id, oldest first", "y": metrics.MEANING[series.metric], "zoom": False,
            "group": "", "integer": True, "xlabels": [[n, str(r.run_id)] for n, r in runs], "series": [{"name": series.label, "i": 0, "cls": "", "dash": False, "points": points,
                                     "band": band if len(band) >= 2 else []}], "marks": marks}


# Dashes of a curve's percentiles as charts.js draws them (the report's: p50 dotted, p95
# dashed, p99 solid), and of the objective's own statistic where it is none of them.
_PATTERNS = {":": "1 3", "--": "5 3", "-": "none", "-.": "6 2 1 2"}


def _point_link(ids: Sequence[int]) -> str | None:
    return f"/point/{ids[0]}" if ids else None


def _curve_tip(c: Curve, offered: float, tps: float | None, lat: Sequence[float | None], meets: bool,
               why: str, ids: Sequence[int]) -> str:
    shown = " / ".join("-" if v is None else f"{v:,.3g}" for v in lat)
    return (f"{c.label}, {c.threads} threads: offered {offered:,.0f} TPS, achieved "
            f"{'-' if tps is None else f'{tps:,.0f}'} TPS; p50 / p95 / p99 {shown} ms; "
            f"{'met' if meets else 'missed'} {c.slo}: {why}" + (f"; click: point {ids[0]}" if ids else ""))


def _curve_latencies(c: Curve, i: int, cls: str, tips: list[str]) -> list[Spec]:
    """A search's latency series against offered rate: p50 / p95 / p99, and the
    objective's own statistic if another; a rate that missed, open on the objective's."""
    own = capacity_field(c)
    fields: list[tuple[str, str, str]] = [*CURVE_LATENCIES]
    if own not in {f for f, _, _ in fields}:
        fields.append((own, c.slo.split(" ", 1)[0], "-."))
    out: list[Spec] = []
    for field, name, dashes in fields:
        points = [[p.offered, value, tip, _point_link(p.point_ids), 0 if p.meets or field != own else 1]
                  for p, tip in zip(c.points, tips)
                  if (value := (p.latency_ms if field == own else getattr(p, field))) is not None]
        if points:
            out.append({"name": f"{c.label} {name}", "i": i, "cls": cls, "dash": dashes != "-",
                        "pattern": _PATTERNS[dashes], "band": [], "points": points})
    return out


def _curve_closed(c: Curve, i: int, cls: str, tps_series: list[Spec], lat_series: list[Spec]) -> float:
    """A search's closed-loop point as a star in both charts; its TPS (0: none)."""
    closed, tip = c.closed, c.closed_tip()
    if closed is None or closed.tps is None or tip is None:
        return 0.0
    link = _point_link(closed.point_ids)
    star = {"name": f"{c.label} closed loop", "i": i, "cls": cls, "dash": False, "band": [], "line": False,
            "star": True}
    tps_series.append({**star, "points": [[closed.tps, closed.tps, tip, link]]})
    if closed.latency_ms is not None:
        lat_series.append({**star, "points": [[closed.tps, closed.latency_ms, tip, link]]})
    return closed.tps


def _capacity_mark(c: Curve) -> Spec | None:
    """The capacity's rate as a mark named with its figure (None: no rate met)."""
    met, failed = c.bracket()
    if met is None:
        return None
    tps = c.capacity_tps
    text = (f"{c.label}: capacity at {c.slo} {'-' if tps is None else f'{tps:,.0f}'} TPS (met at "
            f"{met:,.0f} offered" + (f", missed at {failed:,.0f}" if failed is not None else "") + ")")
    return {"x": met, "text": text, "href": None, "label": f"{c.label}: {'-' if tps is None else f'{tps:,.0f}'}"}


def capacity(section: Section, threads: int) -> list[Spec]:
    """The searches of one level (--slo, report/curves.py) as `dbarena serve` draws them,
    the report's curve in two charts sharing the offered-rate axis (from 0): achieved TPS
    (a dotted diagonal: all that was offered carried) and latency p50 / p95 / p99 on a log
    scale, the objective a red horizontal line named; per label the capacity's rate a
    mark named with its figure, a rate that missed an open marker, the closed-loop point a
    star (at its throughput). Each rate opens its first point."""
    found = [c for c in section.curves if c.threads == threads and c.points]
    if not found:
        return []
    tps_series: list[Spec] = []
    lat_series: list[Spec] = []
    marks: list[Spec] = []
    highest = 0.0
    for c in found:
        i = section.labels.index(c.label) if c.label in section.labels else 0
        cls = _cls(section, c.label)
        tips = [_curve_tip(c, p.offered, p.tps, (p.latency_p50_ms, p.latency_p95_ms, p.latency_p99_ms), p.meets,
                           p.why, p.point_ids) for p in c.points]
        tps_series.append({"name": c.label, "i": i, "cls": cls, "dash": False, "band": [],
                           "points": [[p.offered, p.tps, tip, _point_link(p.point_ids), 0 if p.meets else 1]
                                      for p, tip in zip(c.points, tips) if p.tps is not None]})
        lat_series += _curve_latencies(c, i, cls, tips)
        highest = max([highest, *(p.offered for p in c.points), *(p.tps or 0.0 for p in c.points)])
        highest = max(highest, _curve_closed(c, i, cls, tps_series, lat_series))
        if (mark := _capacity_mark(c)) is not None:
            marks.append(mark)
    top = highest * 1.05
    tps_series.append({"name": "all that was offered", "i": 7, "cls": "", "dash": True, "pattern": "1 3",
                       "band": [], "line": True, "dots": False, "points": [[0, 0, "", None], [top, top, "", None]]})
    slos = list(dict.fromkeys((c.slo, c.limit_ms) for c in found))
    where = f"{section.engine} {section.workload} at {threads} threads"
    shared = {"x": "offered TPS (open loop; star: the closed-loop point at its throughput)", "zoom": False,
              "group": "", "xmin": 0, "xmax": top, "marks": marks}
    return [
        {**shared, "title": f"{where}: achieved TPS against offered rate (capacity at "
                            f"{' / '.join(slo for slo, _ in slos)}; open: missed it)", "y": "achieved TPS",
         "series": tps_series},
        {**shared, "title": f"{where}: latency against offered rate (log scale; p50 dotted, p95 dashed, p99 solid)",
         "y": "latency (ms)", "ylog": True, "series": lat_series,
         "hlines": [{"y": limit, "text": f"objective {slo}"} for slo, limit in slos]},
    ]


def capacity_field(c: Curve) -> str:
    """The latency field of a curve's objective (stats/capacity.STATISTICS)."""
    from dbarena.stats.capacity import STATISTICS

    return STATISTICS[c.statistic]


def html(spec: Spec | None) -> str:
    """A chart as a page holds it: its title, its data in an attribute (escaped), drawn by
    serve's static/charts.js under the title (`dbarena serve`'s pages and the site's)."""
    if spec is None:
        return ""
    zoom = " data-zoom" if spec.get("zoom") else ""
    return (f'<div class="chart" data-chart="{html_text(as_attribute(spec))}"{zoom}>'
            f'<p class="title">{html_text(spec["title"])}</p></div>')
