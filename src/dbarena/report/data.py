"""Everything a report shows, computed from the store. Pure functions; renderers only render.

Figures per label x engine x workload x threads (over that point's repeats):
- throughput: the steady-state TPS (analysis), or QPS for mysqlslap, with its interval;
- study E's table: transactions, queries, time, average latency and its percentiles
  (p50, p90, p95, p99, p99.9, max: over repeats, of their merged histograms);
- each tool's own figure: throughput (higher is better), or for mysqlslap the seconds
  it took to run its queries (lower is better: ranked ascending, priced per run);
- the tool's printed figure beside dbarena's steady-state mean;
- price/performance (study E): price per 100 TPS = hourly price / (TPS / 100), and
  TPS per dollar-hour; mysqlslap: the price of one run of its queries;
- per core (study C): TPS per physical core and per hardware thread of the machine
  the server ran on (throwaway instances only: a remote server's cores are unknown);
- scaling efficiency: TPS(N) / (N x TPS(1 thread)); mysqlslap, whose N clients share a
  fixed number of queries: seconds(1 thread) / (N x seconds(N));
- against the baseline label: ratio, 95 % interval and verdict, as `compare` gives them
  (stats/levelcompare.py), or why the configurations are not comparable.
Per label x engine x workload:
- study A's "points": the sum of TPS over all of the label's levels, and next to it a
  fairer score, the geometric mean of the per-level ratios to the baseline over the
  levels both measured;
- the saturation point: the first level after which more threads add less than 5 %;
- the Universal Scalability Law (Gunther, "Guerrilla Capacity Planning", 2007):
  X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1)), fitted by least squares;
  sigma is contention, kappa coherency delay, and the throughput peaks at
  N* = sqrt((1 - sigma) / kappa).
"""

from __future__ import annotations

from collections import defaultdict
import math
import operator
import statistics
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Sequence

from dbarena.records import JSONObject, Summarised, Configured, LentSession, LevelMeans, LevelSummary, SeriesKey, \
    ShownPoint, StoredGroup, StoredRun, json_object, renamed
from dbarena.stats import capacity
from dbarena.stats import analysis
from dbarena.stats import configkey, decision, levelcompare, levelmeans, steadystate
from dbarena.stats.decision import Decision
from dbarena.stats.price import DEFAULT_CURRENCY, Price, with_currency
from dbarena.bulk import collector_paused
from dbarena.report import levels as level_figures
from dbarena.report.curves import Curve
from dbarena.report.shown import Shown
from dbarena.report.ratelevels import RateLevel, rate_levels
from dbarena.report import curves as search_curves
from dbarena.report.levels import PUBLIC_FIELDS as PUBLIC_FIELDS, LevelRow
# Also read as data.server_is_local, data.usl, data.USL_MIN_LEVELS ... by tests.
from dbarena.report.levels import server_is_local as server_is_local
from dbarena.report.scaling import (CPU_SATURATED_PCT as CPU_SATURATED_PCT, SATURATION_GAIN as SATURATION_GAIN,
                                    USL_MIN_LEVELS as USL_MIN_LEVELS, UslFit, cpu_saturation, geomean_ratio,
                                    saturation, usl as usl, usl_fit)


@dataclass(frozen=True)
class Ranking:
    """Study A's points of one label in a section: its rank among the section's labels
    (most throughput over the levels first, or for seconds fewest), its sum over the
    levels, its peak, and its price (as shown, and at --at-threads)."""

    label: str
    sum: float
    levels: list[int]
    geomean_ratio_to_baseline: float | None
    saturation_threads: int | None
    peak_threads: int | None
    peak_value: float | None
    peak_tps_per_core: float | None
    peak_tps_per_thread: float | None
    hardware_threads: int | None
    price_at: float | None  # per 100 TPS at --at-threads, or for seconds per run
    cpu_saturated_from: int | None
    rank: int
    price: str | None

    def as_json(self) -> JSONObject:
        """The entry as the report's JSON exports it, in this order."""
        return {"label": self.label, "sum": self.sum, "levels": list(self.levels),
                "geomean_ratio_to_baseline": self.geomean_ratio_to_baseline,
                "saturation_threads": self.saturation_threads, "peak_threads": self.peak_threads,
                "peak_value": self.peak_value, "peak_tps_per_core": self.peak_tps_per_core,
                "peak_tps_per_thread": self.peak_tps_per_thread, "hardware_threads": self.hardware_threads,
                "price_at": self.price_at, "cpu_saturated_from": self.cpu_saturated_from, "rank": self.rank,
                "price": self.price}


@dataclass(frozen=True)
class Cheapest:
    """The cheapest label at --at-threads, and how much more each other priced label
    costs there (a share); where the prices are in several currencies, none is named
    (label None) and `currencies` names them."""

    label: str | None
    threads: int
    others: dict[str, float]
    currencies: list[str] | None = None

    def as_json(self) -> JSONObject:
        """As the report's JSON exports it: `currencies` only where there are several."""
        out: JSONObject = {"label": self.label, "threads": self.threads, "others": dict(self.others)}
        if self.currencies is not None:
            out["currencies"] = list(self.currencies)
        return out


@dataclass(frozen=True, slots=True)
class ShownSeries:
    """The point whose per-second series a section's chart shows for a label."""

    point_id: int
    threads: int
    steady_start_s: float | None
    dips_s: list[float]


@dataclass(frozen=True)
class Section:
    """One engine x workload: what its charts and tables show."""

    engine: str
    workload: str
    metric: str
    labels: list[str]
    rows: list[LevelRow]  # level rows of this section, label by label, threads ascending
    ranking: list[Ranking]  # study A's points
    usl: dict[str, UslFit]  # label -> fit
    series: dict[str, ShownSeries | None]  # label -> per-second series of a chosen point (None: none there)
    cheapest: Cheapest | None = None
    # --slo: each search's latency-throughput curve (report/curves.py), label by label,
    # threads ascending; none in a section without a search.
    curves: list[Curve] = field(default_factory=list)

    def as_json(self) -> JSONObject:
        """The section as the report's JSON exports it: what it is, its ranking, its fits
        and its cheapest label (its rows are the report's, its charts' series are not
        exported); and where it has searches (--slo), their curves."""
        out: JSONObject = {"engine": self.engine, "workload": self.workload, "metric": self.metric,
                           "ranking": [r.as_json() for r in self.ranking],
                           "usl": {label: fit.as_json() for label, fit in self.usl.items()},
                           "cheapest": self.cheapest.as_json() if self.cheapest is not None else None}
        if self.curves:
            out["curves"] = [c.as_json() for c in self.curves]
        return out


# (label, engine, workload) -> threads -> its level row
BySeries = dict[tuple[str, str, str], dict[int, LevelRow]]


@dataclass(frozen=True)
class Report:
    labels: list[str]
    baseline: str | None
    at_threads: int | None
    rows: list[LevelRow]
    sections: list[Section]
    provenance: dict[str, dict[str, StoredRun]] = field(default_factory=dict)  # label -> engine -> its run
    # The decision (stats/decision.py): each label against the baseline, worst first,
    # and each label's line across workloads.
    decisions: list[Decision] = field(default_factory=list)
    overall: list[Decision] = field(default_factory=list)
    # The levels offered a fixed rate (--rate), compared by their p95 latency there.
    rate_levels: list[RateLevel] = field(default_factory=list)

    def as_json(self) -> JSONObject:
        """The report as its JSON export writes it (export.to_json, which rounds its
        figures): what was asked, the decisions, one row per label x engine x workload x
        threads (the sections' rows, in their order) and each section. Its provenance is
        the page's, not exported."""
        return {"labels": list(self.labels), "baseline": self.baseline, "at_threads": self.at_threads,
                "decisions": [d.as_dict() for d in self.decisions],
                "overall": [d.as_dict() for d in self.overall],
                "rows": [row.as_json() for s in self.sections for row in s.rows],
                "sections": [s.as_json() for s in self.sections],
                # (Only where there is one: a report without fixed rates as before.)
                **({"rate_levels": [r.as_json() for r in self.rate_levels]} if self.rate_levels else {})}

    def compared(self, engine: str, workload: str, label: str, threads: int) -> bool:
        """Whether the label's level was compared with the baseline's (its row has a
        ratio): not where the configurations differ (the row says "not comparable: ..."),
        whose profiles' differential would be of other configurations too."""
        return any(r.ratio_to_baseline is not None for r in self.rows
                   if (r.engine, r.workload, r.label, r.threads) == (engine, workload, label, threads))


# ------------------------------------------------------------------ assembly


def label_prices(runs: list[StoredRun], overrides: dict[str, Price]) -> dict[str, Price]:
    """Each label's price: the newest stored with its runs, unless the report gives one."""
    prices: dict[str, Price] = {}
    for run in runs:  # oldest first: the newest stored price wins
        if run.price_per_hour is not None:
            options = run.options
            # A monthly rent as given: recorded since runs store it, else in the flags.
            monthly = options.get("price_per_month") or json_object(options.get("flags")).get("price_per_month")
            prices[run.label] = Price(per_hour=run.price_per_hour, currency=run.currency or DEFAULT_CURRENCY,
                                      per_month=float(monthly) if isinstance(monthly, (int, float, str)) and monthly
                                      else None)
    for label, given in overrides.items():
        stored = prices.get(label)
        prices[label] = with_currency(given, stored.currency if stored else None)
    return prices


def series_labels(rows: Sequence[Summarised], order: list[str], baseline: str | None, prices: dict[str, Price]
                  ) -> tuple[list[Summarised], list[str], str | None, dict[str, Price]]:
    """A report draws one series per label in each engine x workload section; where a
    label holds several configurations there (variants, or runs of other parameters
    under one label), each is a series of its own, named "label [variant]" or
    "label [config 1a2b3c]" (series_names), so that points of different configurations
    are never pooled. The rows under those names, and the order, baseline and prices
    of the series."""
    names = series_names(rows, [r.series_label for r in rows])
    # A copy only where the name changes: copying 100 k rows of 70 fields costs more than
    # the rest of this function (records.relabelled: the fast copy; analysis.load names
    # them as it makes them, series_names given as `named`, and none is copied here).
    out = [r if new == r.label else renamed(r, new) for r, new in zip(rows, names)]
    return (out, *_renamed(zip(map(_LABEL, out), map(_SERIES_LABEL, out)), order, baseline, prices))


def series_names(points: Sequence[Configured], stored: Sequence[str] | None = None) -> list[str]:
    """The name of each point's series in a report (series_labels): its label, or
    "label [variant]", "label [config 1a2b3c]" where its label holds several
    configurations in its engine x workload. `stored`: each point's label as stored,
    where its `label` may be a series name already (Summarised.series_label);
    default: their labels. analysis.load takes it as `named`: each record is then made
    once, under its name."""
    labels = stored if stored is not None else [p.label for p in points]
    # Each row's configuration digest but for its level. A digest hashes the whole
    # configuration and a store can hold 100 k points, but they share a few hundred
    # stored keys (which include the level): one digest per stored key.
    by_key: dict[str | None, str] = {}

    def level_free(r: Configured) -> str:
        stored = r.config_key
        if stored is None or stored not in by_key:
            # Clients per thread stays in: two series at the same levels with 1 and 4
            # clients a thread are two configurations, not one. An offered rate (--slo's
            # search) is a step of its closed-loop point's series, not a series of its own.
            config = capacity.closed_loop(r.config or {})
            clients, threads = config.get("clients"), config.get("threads")
            per_thread = (round(clients / threads, 6) if isinstance(clients, int) and isinstance(threads, int)
                          and clients and threads else None)
            found = configkey.digest({**configkey.ignoring(config, ("threads", "clients")),
                                      "clients_per_thread": per_thread})
            if stored is None:
                return found
            by_key[stored] = found
        return by_key[stored]

    row_keys = [level_free(r) for r in points]
    keys: dict[tuple[str, str, str], dict[tuple[str, str], None]] = defaultdict(dict)  # (label, engine, workload) -> (variant, key)
    for r, label, key in zip(points, labels, row_keys):
        keys[(label, r.engine, r.workload)].setdefault((r.variant or "", key))

    # How many configurations each (label, engine, workload, variant) holds.
    per_variant: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for series, found in keys.items():
        for variant, _ in found:
            per_variant[(*series, variant)] += 1

    def name(r: Configured, label: str, key: str) -> str:
        series = (label, r.engine, r.workload)
        variant = r.variant or ""
        if len(keys[series]) == 1:
            return label
        return label + (f" [{variant}]" if variant else "") + \
            (f" [config {key[:6]}]" if per_variant[(*series, variant)] > 1 else "")

    return [name(r, label, key) for r, label, key in zip(points, labels, row_keys)]


def _renamed(named: Iterable[tuple[str, str]], order: list[str], baseline: str | None, prices: dict[str, Price]
             ) -> tuple[list[str], str | None, dict[str, Price]]:
    """The order, baseline and prices of the series the rows are shown under (`named`:
    each row's name, series_names', and its label as stored, in the rows' order), from
    those of their labels as stored."""
    # (Each name with its label as stored, in the order the rows first give it: one pass.)
    names = list(dict.fromkeys(named))
    new_order = list(dict.fromkeys(name for label in order for name, stored in names if stored == label))
    new_prices = {name: prices[stored] for name, stored in names if stored in prices}
    new_baseline = next((name for name, stored in names if stored == baseline), baseline)
    return new_order, new_baseline, new_prices


def build(rows: Sequence[Summarised], runs: list[StoredRun], *, baseline: str | None = None, prices: dict[str, Price] | None = None,
          at_threads: int | None = None, labels: list[str] | None = None,
          histograms: Callable[[list[int]], dict[int, JSONObject]] | None = None, about: Sequence[str] = ()) -> Report:
    """rows: analysis.load(...) points (those of labels not shown lend only their spread
    between sessions, as `history` does); runs: store.runs(); histograms: point ids ->
    their latency histograms (store.latency_histograms), read per group of repeats."""
    return build_named(rows, runs, baseline=baseline, prices=prices, at_threads=at_threads, labels=labels,
                       histograms=histograms, about=about)[0]


def build_named(rows: Sequence[Summarised], runs: list[StoredRun], *, baseline: str | None = None,
                prices: dict[str, Price] | None = None, at_threads: int | None = None,
                labels: list[str] | None = None,
                histograms: Callable[[list[int]], dict[int, JSONObject]] | None = None, named: bool = False,
                history: Sequence[Summarised] = (), lent: Sequence[LentSession] = (), about: Sequence[str] = (),
                records: decision.Records | None = None) -> tuple[Report, list[Summarised]]:
    """The report (build), and the points it shows as it names their series
    (series_labels): what a view that links each level to its points needs, without
    naming 100 k points a second time. `named`: the rows carry those names already
    (analysis.load with series_names as `named`, over the points of these labels).
    `history`: the store's points of the labels not shown, read only for the spread
    between sessions of the shown groups' configurations, as `compare` reads them
    (analysis.compare's `history`): a comparison in the report is then the one
    `compare` makes of its pair, whichever labels the report shows. `lent`: what the
    sessions of those labels lend (analysis.lent_sessions), the same without their points.
    `about`: what else the labels' comparisons are about (configkey.ABOUT's names, as
    `compare --about`): fields their configurations may differ in besides the host.
    `records`: where the rows are what the store's session summaries hold of the points
    (analysis.stored_points), the whole records of the points a decision's "why" names."""
    with collector_paused():
        return _build(rows, runs, baseline=baseline, prices=prices, at_threads=at_threads, labels=labels,
                      histograms=histograms, named=named, history=history, lent=lent, about=about,
                      records=records)


def _build(rows: Sequence[Summarised], runs: list[StoredRun], *, baseline: str | None, prices: dict[str, Price] | None,
           at_threads: int | None, labels: list[str] | None,
           histograms: Callable[[list[int]], dict[int, JSONObject]] | None = None, named: bool = False,
           history: Sequence[Summarised] = (), lent: Sequence[LentSession] = (), about: Sequence[str] = (),
           records: decision.Records | None = None) -> tuple[Report, list[Summarised]]:
    # (Checked first: an unknown name is the user's error, before any work.)
    levelcompare.ignoring("label", about)
    prices = label_prices(runs, prices or {})
    runs_by_id = {r.id: r for r in runs}
    # (Labels as stored: series_label, which is the label itself until the series are named.)
    order = labels or list(dict.fromkeys(r.series_label for r in rows))
    shown = set(order)
    history = [*history, *(r for r in rows if r.series_label not in shown)]
    rows = [r for r in rows if r.series_label in shown]
    if baseline is None and order:
        baseline = order[0]
    stored = (order, baseline)
    if named:
        order, baseline, prices = _renamed(zip(map(_LABEL, rows), map(_SERIES_LABEL, rows)), order, baseline, prices)
    else:
        rows, order, baseline, prices = series_labels(rows, order, baseline, prices)
    # The labels not shown lend their sessions' spread (as `compare`'s history does):
    # the store's summaries of theirs, then those of the points read but not shown,
    # in the order their points would have come.
    borrowed = [*lent, *map(analysis.lend, analysis.session_summaries(history))]
    every = analysis.summaries(rows, histograms=histograms, lent=borrowed)
    members, ok_series = _grouped([r for r in rows if r.target_tps is None])
    closed_loop = [r for r in rows if r.target_tps is None]
    parts = _Parts(
        order=order, baseline=baseline, prices=prices, stored=stored, every=every,
        # An open-loop point (--slo: a step of its closed-loop point's search) is no level of
        # its own: its series' curve shows it (report/curves.py), its level the capacity.
        curves=search_curves.curves(rows, every),
        means={key: levelmeans.of_group(s, [m for m in members[key] if m.status == "ok"])
               for s in every if s.target_tps is None for key in (_LEVEL(s),)},
        ok_series=defaultdict(list, {key: [_point_shown(p) for p in points] for key, points in ok_series.items()}),
        hardware=level_figures.hardware(dict.fromkeys(zip(map(_LABEL, rows), map(_RUN_ID, rows))), runs_by_id),
        # (The last row's of each name: a name's rows share both.)
        origin=dict(zip(map(_LABEL, rows), map(_ORIGIN, rows))), closed_loop=closed_loop)
    return _assembled(parts, runs, at_threads, about, records), rows


def build_groups(groups: Sequence[StoredGroup], runs: list[StoredRun], *, baseline: str | None = None,
                 prices: dict[str, Price] | None = None, at_threads: int | None = None,
                 labels: list[str] | None = None, lent: Sequence[LentSession] = (), about: Sequence[str] = (),
                 records: decision.Records | None = None) -> tuple[Report, Shown] | None:
    """The report build_named makes of the groups' points (analysis.stored_groups: what the
    store keeps of each shown label's configurations, in the order of their first points),
    made from the groups alone, and what it links each level to (serve's links, the
    profiles it pools). None where the groups cannot make it as the points would: a label
    not shown, a level of a series held by two groups, or a several-hosts warning whose
    text names a label the report shows under another name (build_named then makes it
    from the points)."""
    levelcompare.ignoring("label", about)
    prices = label_prices(runs, prices or {})
    order = labels or list(dict.fromkeys(g.summary.label for g in groups))
    if any(g.summary.label not in order for g in groups):
        return None
    if baseline is None and order:
        baseline = order[0]
    stored = (order, baseline)
    named = _named(groups)
    if named is None:
        return None
    order, baseline, prices = _renamed(((g.summary.label, g.summary.series_label) for g in named),
                                       order, baseline, prices)
    met = sorted((first, g.summary.label, run_id) for g in named for run_id, first in g.runs)
    runs_by_id = {r.id: r for r in runs}
    parts = _Parts(
        order=order, baseline=baseline, prices=prices, stored=stored, every=analysis.of_groups(named, lent=lent),
        curves=[], means={_LEVEL(g.summary): g.level for g in named if g.level is not None},
        ok_series=_shown_points(named),
        hardware=level_figures.hardware(dict.fromkeys((name, run) for _, name, run in met), runs_by_id),
        origin={g.summary.label: (g.summary.series_label, g.summary.variant) for g in named},
        located=lambda engine, workload, threads: sorted(
            i for g in named if (g.summary.engine, g.summary.workload, g.summary.threads) == (engine, workload, threads)
            for i in g.links))
    return _assembled(parts, runs, at_threads, about, records), Shown.of_groups(named)


def _named(groups: Sequence[StoredGroup]) -> list[StoredGroup] | None:
    """The groups under the names the report gives their series (series_names); None
    where a level of a series would be two groups', or a several-hosts warning (whose
    text names the label) would be of a renamed series."""
    names = series_names([SeriesKey(g.summary.label, g.summary.engine, g.summary.workload, g.summary.variant,
                                    g.summary.config, g.summary.config_key) for g in groups])
    several = steadystate.Warning_.SEVERAL_HOSTS.value
    if any(name != g.summary.label and any(w["code"] == several for w in g.summary.warnings)
           for g, name in zip(groups, names)):
        return None
    named = [g if name == g.summary.label else replace(g, summary=replace(g.summary, label=name))
             for g, name in zip(groups, names)]
    levels = {_LEVEL(g.summary) for g in named}
    return named if len(levels) == len(named) else None


def _shown_points(groups: Sequence[StoredGroup]) -> dict[tuple[str, str, str], list[ShownPoint]]:
    """Each series' points its chart may show (a group's own: its ok point of the least
    repeat), in the points' order."""
    found = [(g.shown, (g.summary.label, g.summary.engine, g.summary.workload)) for g in groups
             if g.shown is not None]
    out: dict[tuple[str, str, str], list[ShownPoint]] = defaultdict(list)
    for point, series in sorted(found, key=lambda one: one[0].point_id):
        out[series].append(point)
    return out


@dataclass(frozen=True)
class _Parts:
    """What a report is assembled from (_assembled), made from the points (_build) or
    from what the store keeps of their groups (build_groups): the series' order,
    baseline and prices under their names, and as stored; every group's summary under
    its series' name; the searches' curves; each level's means; each series' ok points
    a chart may show (in the points' order); each series' hardware; each series' label
    as stored and variant; and the closed-loop points' ids at a level (a "why" reads them)."""

    order: list[str]
    baseline: str | None
    prices: dict[str, Price]
    stored: tuple[list[str], str | None]
    every: list[LevelSummary]
    curves: list[Curve]
    means: dict[tuple[str, str, str, int], LevelMeans]
    ok_series: dict[tuple[str, str, str], list[ShownPoint]]
    hardware: dict[str, level_figures.Hardware]
    origin: dict[str, tuple[str, str]]
    closed_loop: Sequence[Summarised] = ()  # (the points, where made from them)
    located: decision.Located | None = None  # (where made from their groups)


def _assembled(parts: _Parts, runs: list[StoredRun], at_threads: int | None, about: Sequence[str],
               records: decision.Records | None) -> Report:
    summaries = {_LEVEL(s): s for s in parts.every if s.target_tps is None}
    level_rows = _compare([level_figures.level_row(key, summary, parts.means[key], parts.prices.get(key[0]),
                                                   parts.hardware.get(key[0], level_figures.Hardware()))
                           for key, summary in summaries.items()], parts.baseline, summaries, about)
    by_series = _by_series(level_rows)
    # The decisions compare the labels as stored: the same groups of points under their
    # stored labels (a summary's points share one configuration key, so renaming a
    # label's configurations apart changes no group), not a second summaries() pass.
    groups = [s if s.label == s.series_label else replace(s, label=s.series_label) for s in parts.every]
    decisions, overall = _decisions(*parts.stored, level_rows, groups, about, parts.closed_loop, parts.located,
                                    records)
    picked = _Picked(order=parts.order, baseline=parts.baseline, at_threads=at_threads, prices=parts.prices)
    sections = [_section(engine, workload, level_rows, by_series, parts.ok_series, picked, parts.curves)
                for engine, workload in dict.fromkeys((r.engine, r.workload) for r in level_rows)]
    return Report(labels=parts.order, baseline=parts.baseline, at_threads=at_threads, rows=level_rows,
                  sections=sections, provenance=_provenance(parts.origin, parts.order, runs), decisions=decisions,
                  overall=overall, rate_levels=rate_levels(parts.every, parts.order, parts.baseline, about))


def _point_shown(p: Summarised) -> ShownPoint:
    return ShownPoint(p.point_id, p.threads, p.repeat, p.steady_start_s, tuple(p.dips_s))


def _price_note(d: Decision, level_rows: list[LevelRow]) -> str | None:
    """What the same work costs on each side, derived from the decision itself (one
    answer: the throughput ratio and its interval over the levels the decision counts)
    and each side's price per hour: cost ratio = price ratio / throughput ratio, with the
    interval the throughput's gives it, and those levels named. The cheaper is named only
    where the interval lies on one side of "the same cost". None without a figure or a
    price for both; None too at an offered rate (--rate), where both did the same work and
    the ratio is of latency."""
    if d.ratio is None or not d.levels or d.offered_tps is not None:
        return None
    counted = {level.threads for level in d.levels}
    hourly: dict[str, tuple[float, str | None]] = {}
    for name in (d.label, d.baseline):
        # A decision names the labels as stored; a level row, its series (a label whose
        # configurations the report shows apart, "a [config 1a2b3c]", still has its price).
        mine = [(float(price), r.currency) for r in level_rows if r.series_label == name and r.engine == d.engine
                and r.workload == d.workload and r.threads in counted and (price := r.price_per_hour)]
        if not mine:
            return None
        hourly[name] = mine[0]
    (p_label, cur_label), (p_base, cur_base) = hourly[d.label], hourly[d.baseline]
    if cur_label != cur_base:
        return (f"cost: {d.label} priced in {cur_label}, {d.baseline} in {cur_base}: prices in two currencies are "
                "not compared")
    levels = f"at {', '.join(str(level.threads) for level in d.levels)} thread(s)"
    # (--slo: the decision's ratio is of capacities, the work done within the objective.)
    if d.slo:
        levels += f" within {d.slo}"
    # The label's cost of a unit of work against the baseline's (throughput, or runs of
    # mysqlslap's queries: d.ratio is of speed either way).
    cost = (p_label / p_base) / d.ratio
    interval = (None if d.ci_low is None or d.ci_high is None
                else ((p_label / p_base) / d.ci_high, (p_label / p_base) / d.ci_low))
    dearer, cheaper = (d.label, d.baseline) if cost >= 1 else (d.baseline, d.label)
    more = cost if cost >= 1 else 1 / cost
    if interval is not None:
        low, high = interval if cost >= 1 else (1 / interval[1], 1 / interval[0])
        bounds = f"95 % CI {(low - 1) * 100:+.0f} % to {(high - 1) * 100:+.0f} %"
        said = (f"{cheaper} is the cheaper for the same work {levels}: {dearer} costs {more - 1:.0%} more ({bounds})"
                if low > 1 else
                f"which is cheaper for the same work {levels} is inconclusive: {dearer} costs {more - 1:.0%} more "
                f"({bounds}, which includes the same cost)")
    else:
        said = (f"{dearer} costs {more - 1:.0%} more for the same work {levels} (no interval: fewer than 3 runs "
                "a side)")
    figure = f"capacity at {d.slo}" if d.slo else "throughput"
    return (f"{said}; prices {p_label:.4g} ({d.label}) and {p_base:.4g} ({d.baseline}) {cur_label}/h, "
            f"{figure} {d.label} / {d.baseline} {d.ratio:.3f}")


def _decisions(order: list[str], baseline: str | None, level_rows: list[LevelRow], groups: list[LevelSummary],
               about: Sequence[str], closed_loop: Sequence[Summarised], located: decision.Located | None,
               records: decision.Records | None = None) -> tuple[list[Decision], list[Decision]]:
    """Each stored label against the baseline (the labels as stored: analysis.compare
    matches configurations itself, apart from the host), with what each costs; groups:
    analysis.summaries of the shown points; what bound each side at a level, from the
    closed-loop points (a search's steps are not its levels), or their ids (`located`)."""
    decisions: list[Decision] = []
    overall: list[Decision] = []
    if baseline is None:
        return decisions, overall
    for label in order:
        if label == baseline:
            continue
        decided = decision.decide(analysis.compare((), baseline, label, about=about, groups=groups),
                                  closed_loop, records, located)
        decided = [replace(d, price=_price_note(d, level_rows)) for d in decided]
        decisions.extend(decided)
        line = decision.overall(decided)
        if line is not None:
            overall.append(line)
    return decisions, overall


def _grouped(rows: list[Summarised]
             ) -> tuple[dict[tuple[str, str, str, int], list[Summarised]], dict[tuple[str, str, str], list[Summarised]]]:
    """The points of each (label, engine, workload, threads), and the ok points of each
    (label, engine, workload)."""
    members: dict[tuple[str, str, str, int], list[Summarised]] = defaultdict(list)
    ok_series: dict[tuple[str, str, str], list[Summarised]] = defaultdict(list)  # its ok points
    for key, r in zip(map(_LEVEL, rows), rows):
        members[key].append(r)
        if r.status == "ok":
            ok_series[key[:3]].append(r)
    return members, ok_series


# (Read in C over a view's points: a report of 100 k points reads each several times.)
_LABEL, _SERIES_LABEL = operator.attrgetter("label"), operator.attrgetter("series_label")
_ORIGIN = operator.attrgetter("series_label", "variant")
_LEVEL = operator.attrgetter("label", "engine", "workload", "threads")
_RUN_ID = operator.attrgetter("run_id")


# ------------------------------------------------------------------ comparisons


def _by_series(level_rows: list[LevelRow]) -> BySeries:
    by_series: BySeries = defaultdict(dict)
    for row in level_rows:
        by_series[(row.label, row.engine, row.workload)][row.threads] = row
    return by_series


# (label, engine, workload, threads) -> the closed-loop group a level row shows
Summaries = dict[tuple[str, str, str, int], LevelSummary]


def _compare(level_rows: list[LevelRow], baseline: str | None, summaries: Summaries,
             about: Sequence[str] = ()) -> list[LevelRow]:
    """Each level row against one thread of its series (scaling efficiency) and against
    the baseline's row at the same level (ratio, interval, verdict: its group's against
    the baseline's, stats/levelcompare.py)."""
    by_series = _by_series(level_rows)
    compared = []
    for row in level_rows:
        one = by_series[(row.label, row.engine, row.workload)].get(1)
        base = by_series.get((baseline, row.engine, row.workload), {}).get(row.threads) if baseline else None
        row = replace(row, scaling_efficiency=_scaling_efficiency(row, row.threads, one))
        compared.append(_against_baseline(row, base, summaries, about))
    return compared


def _scaling_efficiency(row: LevelRow, n: int, one: LevelRow | None) -> float | None:
    if not (one and one.value and row.value):
        return None
    # The share of N times one thread's speed: for seconds (a fixed amount of
    # work split among N clients) the inverse ratio of times.
    return (one.value / (n * row.value) if row.metric == "seconds"
            else row.value / (n * one.value))


def _against_baseline(row: LevelRow, base: LevelRow | None, summaries: Summaries,
                      about: Sequence[str] = ()) -> LevelRow:
    """The row with its comparison to the baseline's row at its level: the one `compare`
    makes of the pair (levelcompare.level), about the host where their labels differ,
    the variant where their variants do and `about` (report --about); any other field
    of their configurations that differs (the clients too) makes them not comparable,
    and the row says which."""
    if base is None:
        return row
    if base.label == row.label:
        # The baseline's own row: 1 by definition, nothing to decide.
        return replace(row, ratio_to_baseline=1.0) if row.value else row
    found = levelcompare.against(summaries[_key(base)], summaries[_key(row)], about)
    if found is None:
        return row
    return replace(row, ratio_to_baseline=found.ratio, ratio_ci_low=found.ratio_ci_low,
                   ratio_ci_high=found.ratio_ci_high, verdict=found.verdict, reason=found.reason,
                   verdict_text=found.verdict_text)


def _key(row: LevelRow) -> tuple[str, str, str, int]:
    return row.label, row.engine, row.workload, row.threads


# ------------------------------------------------------------------ sections


@dataclass(frozen=True)
class _Picked:
    """What the report was asked for, as series_labels named it."""

    order: list[str]
    baseline: str | None
    at_threads: int | None
    prices: dict[str, Price]


def _section(engine: str, workload: str, level_rows: list[LevelRow], by_series: BySeries,
             ok_series: dict[tuple[str, str, str], list[ShownPoint]], picked: _Picked,
             curves: Sequence[Curve] = ()) -> Section:
    order = picked.order
    sec_rows = sorted((r for r in level_rows if (r.engine, r.workload) == (engine, workload)),
                      key=lambda r: (order.index(r.label), r.threads))
    sec_labels = [l for l in order if any(r.label == l for r in sec_rows)]
    fits: dict[str, UslFit] = {}
    series: dict[str, ShownSeries | None] = {}
    base_levels = {n: r.value for n, r in by_series.get((picked.baseline or "", engine, workload), {}).items()
                   if r.value is not None}
    shown_level = _shown_level([ok_series[(label, engine, workload)] for label in sec_labels], picked.at_threads)
    lower_is_better = sec_rows[0].metric == "seconds"
    # Each label's figure at each level that has one, levels ascending.
    measured = {label: {n: value for n in sorted(levels) if (value := levels[n].value) is not None}
                for label in sec_labels for levels in (by_series[(label, engine, workload)],)}
    # Study A's ranking: most throughput, or (mysqlslap) fewest seconds, over the levels.
    totals = {label: sum(figures.values()) for label, figures in measured.items()}
    ranked = sorted(sec_labels, key=lambda label: totals[label] if lower_is_better else -totals[label])
    ranking = [_ranking_entry(label, rank, by_series[(label, engine, workload)], measured[label], base_levels,
                              lower_is_better, picked.at_threads, picked.prices.get(label))
               for rank, label in enumerate(ranked, start=1)]
    for label in sec_labels:
        fit = None if lower_is_better else usl_fit(list(measured[label]), list(measured[label].values()))
        if fit:
            fits[label] = fit
        series[label] = _chosen_series(ok_series[(label, engine, workload)], shown_level)
    mine = sorted((c for c in curves if (c.engine, c.workload) == (engine, workload) and c.label in sec_labels),
                  key=lambda c: (sec_labels.index(c.label), c.threads))
    return Section(engine=engine, workload=workload, metric=sec_rows[0].metric, labels=sec_labels,
                   rows=sec_rows, ranking=ranking, usl=fits, series=series,
                   cheapest=_cheapest(ranking, picked.at_threads, picked.prices), curves=mine)


def _shown_level(ok_points: list[list[ShownPoint]], at_threads: int | None) -> int | None:
    """The level of the per-second chart, given each label's ok points."""
    # The per-second chart compares one level: --at-threads, else the highest level
    # every label measured; only when the labels share none, each its own highest.
    shared = set.intersection(*({r.threads for r in points} for points in ok_points)) if ok_points else set()
    return at_threads if at_threads is not None else (max(shared) if shared else None)


def _ranking_entry(label: str, rank: int, levels: dict[int, LevelRow], measured: dict[int, float],
                   base_levels: dict[int, float], lower_is_better: bool, at_threads: int | None,
                   price: Price | None) -> Ranking:
    """Study A's points of one label, its peak and its price at --at-threads; measured:
    its figure at each level that has one, levels ascending."""
    ns, values = list(measured), list(measured.values())
    pick = min if lower_is_better else max
    peak_n = pick(ns, key=lambda n: measured[n]) if ns else None
    peak = levels[peak_n] if peak_n is not None else None
    at = levels.get(at_threads) if at_threads is not None else None
    return Ranking(
        label=label, sum=sum(values), levels=ns,
        geomean_ratio_to_baseline=geomean_ratio(measured, base_levels),
        # Saturation and the USL describe throughput growing with threads.
        saturation_threads=None if lower_is_better else saturation(ns, values),
        peak_threads=peak_n,
        peak_value=peak.value if peak else None, peak_tps_per_core=peak.tps_per_core if peak else None,
        peak_tps_per_thread=peak.tps_per_thread if peak else None,
        hardware_threads=peak.hardware_threads if peak else None,
        price_at=(at.price_per_run if lower_is_better else at.price_per_100_tps) if at else None,
        cpu_saturated_from=cpu_saturation(levels[n] for n in ns),
        rank=rank, price=price.shown() if price is not None else None,
    )


def _cheapest(ranking: list[Ranking], at_threads: int | None, prices: dict[str, Price]) -> Cheapest | None:
    """The cheapest label at --at-threads, and how much more each other one costs."""
    priced = [(r.label, price) for r in ranking if (price := r.price_at)]
    currencies = sorted({prices[label].currency for label, _ in priced})
    if at_threads is not None and len(priced) >= 2 and len(currencies) == 1:
        best, lowest = min(priced, key=lambda lp: lp[1])
        return Cheapest(label=best, threads=at_threads,
                        others={label: price / lowest - 1 for label, price in priced if label != best})
    if at_threads is not None and len(currencies) > 1:
        # No exchange rate is a measurement: prices in two currencies are not compared.
        return Cheapest(label=None, threads=at_threads, others={}, currencies=currencies)
    return None


def _provenance(origin: dict[str, tuple[str, str]], order: list[str], runs: list[StoredRun]
                ) -> dict[str, dict[str, StoredRun]]:
    """Each series' runs by engine: those of its label and variant (`origin`: each
    series' label as stored and its variant)."""
    provenance: dict[str, dict[str, StoredRun]] = {}
    for name in order:
        label, variant = origin.get(name, (name, None))
        variant = variant or ""
        for run in runs:
            if run.label == label and run.variant == variant:
                provenance.setdefault(name, {})[run.engine] = run
    return provenance


def at_text(report: Report) -> str:
    """The report header's sentence about the level of the price verdict."""
    if report.at_threads is None:
        return "Price/performance at every level; the cheapest label is named at --at-threads N."
    return f"Price/performance at {report.at_threads} threads (--at-threads), the cheapest label named."


def _chosen_series(candidates: list[ShownPoint], level: int | None) -> ShownSeries | None:
    """The per-second series shown for a label: of its ok points (candidates), the one at
    `level` (first repeat; none if the label has no point there), or without a level
    its highest; samples are attached by the caller."""
    if not candidates:
        return None
    if level is None:
        level = max(c.threads for c in candidates)
    chosen = [r for r in candidates if r.threads == level]
    if not chosen:
        return None
    point = min(chosen, key=lambda r: r.repeat)
    return ShownSeries(point_id=point.point_id, threads=point.threads, steady_start_s=point.steady_start_s,
                       dips_s=list(point.dips_s))

