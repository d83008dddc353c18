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
- against the baseline label: ratio, 95 % interval and verdict (stats.compare).
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

import math
import statistics
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from dbarena.stats import analysis
from dbarena.stats import configkey
from dbarena.stats import estimators as stats
from dbarena.stats.price import DEFAULT_CURRENCY, Price, with_currency
from dbarena.bulk import collector_paused
from dbarena.workloads import tpcc

SATURATION_GAIN = 0.05


@dataclass
class Section:
    """One engine x workload: what its charts and tables show."""

    engine: str
    workload: str
    metric: str
    labels: list[str]
    rows: list[dict]  # level rows of this section, label by label, threads ascending
    ranking: list[dict]  # study A's points
    usl: dict[str, dict]  # label -> fit
    series: dict[str, dict]  # label -> per-second series of a chosen point
    cheapest: dict | None = None


@dataclass
class Report:
    labels: list[str]
    baseline: str | None
    at_threads: int | None
    rows: list[dict]
    sections: list[Section]
    provenance: dict[str, dict] = field(default_factory=dict)


# ------------------------------------------------------------------ scaling


def usl(n, lam, sigma, kappa):
    n = np.asarray(n, dtype=float)
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


# The USL has 3 parameters: through 3 levels it passes exactly (R² 1 whatever the data),
# and 4 leave one degree of freedom. A fit is published from 5 distinct levels on.
USL_MIN_LEVELS = 5


def usl_fit(levels: list[int], values: list[float]) -> dict | None:
    """Least-squares USL fit; None with fewer than USL_MIN_LEVELS levels or when it does
    not converge. A peak below one thread (kappa tiny against sigma) is no peak."""
    if len(set(levels)) < USL_MIN_LEVELS or min(values) <= 0:
        return None
    # Imported here, not at the top: scipy.optimize takes about 0.4 s to import, a fifth
    # of a report's budget, and a report whose series have fewer than 3 levels fits nothing.
    from scipy.optimize import OptimizeWarning, curve_fit

    n, x = np.asarray(levels, dtype=float), np.asarray(values, dtype=float)
    lam0 = x[0] / n[0]
    try:
        with warnings.catch_warnings():
            # When the fit is exact scipy cannot estimate a covariance, which it warns
            # about; the parameters themselves are fine.
            warnings.simplefilter("ignore", OptimizeWarning)
            (lam, sigma, kappa), _ = curve_fit(usl, n, x, p0=(lam0, 0.05, 0.001),
                                              bounds=([0, 0, 0], [np.inf, 1, 1]), maxfev=20000)
    except (RuntimeError, ValueError):
        return None
    predicted = usl(n, lam, sigma, kappa)
    ss_res = float(np.sum((x - predicted) ** 2))
    ss_tot = float(np.sum((x - x.mean()) ** 2))
    peak_n = math.sqrt((1 - sigma) / kappa) if kappa > 1e-12 and sigma < 1 else None
    if peak_n is not None and peak_n < 1:
        peak_n = None
    return {
        "lambda": float(lam), "sigma": float(sigma), "kappa": float(kappa),
        "peak_threads": peak_n, "peak_tps": float(usl(peak_n, lam, sigma, kappa)) if peak_n else None,
        "r2": 1 - ss_res / ss_tot if ss_tot > 0 else None,
    }


def saturation(levels: list[int], values: list[float], gain: float = SATURATION_GAIN) -> int | None:
    """The first level whose next level adds less than `gain` (relative); None if
    throughput still grows at the last level measured."""
    for (n, x), x_next in zip(zip(levels, values), values[1:]):
        if x > 0 and x_next < x * (1 + gain):
            return n
    return None


CPU_SATURATED_PCT = 90.0


def cpu_saturation(rows) -> int | None:
    """The first level at which the machine's CPU was at least 90 % busy (study D: past
    it, more clients queue for CPU rather than add throughput); None if never."""
    for r in rows:
        if r.get("cpu_busy_pct") is not None and r["cpu_busy_pct"] >= CPU_SATURATED_PCT:
            return r["threads"]
    return None


def geomean_ratio(values: dict[int, float], baseline: dict[int, float]) -> float | None:
    """Geometric mean of values[N] / baseline[N] over the levels both have."""
    common = [n for n in values if n in baseline and values[n] > 0 and baseline[n] > 0]
    if not common:
        return None
    return math.exp(statistics.fmean(math.log(values[n] / baseline[n]) for n in common))


# ------------------------------------------------------------------ assembly


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def _tpcc_figures(ok: list[dict]) -> dict:
    """The TPC-C-like workload's own figures, means over repeats: New-Order transactions
    committed per minute (the tpmC-like figure), the mix of transaction types (% of
    all) and each type's average latency; None for other workloads."""
    details = [m.get("details") or {} for m in ok]
    details = [d for d in details if d.get("tpm_new_order") is not None]
    if not details:
        return {"tpm_new_order": None, "tpcc_mix_pct": None, "tpcc_latency_ms": None, "rollbacks": None}
    found = {k for d in details for k in d.get("per_type", {})}
    kinds = [k for k in tpcc.KINDS if k in found] + sorted(found - set(tpcc.KINDS))  # the specification's order
    return {
        "tpm_new_order": _mean(d["tpm_new_order"] for d in details),
        "tpcc_mix_pct": {k: _mean(d["per_type"].get(k, {}).get("share_pct") for d in details) for k in kinds},
        "tpcc_latency_ms": {k: _mean(d["per_type"].get(k, {}).get("latency_avg_ms") for d in details) for k in kinds},
        "rollbacks": _mean(d.get("rollbacks") for d in details),
    }


def server_is_local(run: dict) -> bool:
    """Did the server run on the measured host (a throwaway instance)?"""
    options = run.get("options", {})
    if "targets" in options:
        return run["engine"] not in options["targets"]
    return options.get("target", "throwaway") == "throwaway"


def label_prices(runs: list[dict], overrides: dict[str, Price]) -> dict[str, Price]:
    """Each label's price: the newest stored with its runs, unless the report gives one."""
    prices: dict[str, Price] = {}
    for run in runs:  # oldest first: the newest stored price wins
        if run.get("price_per_hour") is not None:
            prices[run["label"]] = Price(per_hour=run["price_per_hour"],
                                         currency=run.get("currency") or DEFAULT_CURRENCY)
    for label, given in overrides.items():
        stored = prices.get(label)
        prices[label] = with_currency(given, stored.currency if stored else None)
    return prices


def series_labels(rows: list[dict], order: list[str], baseline: str | None, prices: dict[str, Price]
                  ) -> tuple[list[dict], list[str], str | None, dict[str, Price]]:
    """A report draws one series per label in each engine x workload section; where a
    label holds several configurations there (variants, or runs of other parameters
    under one label), each is a series of its own, named "label [variant]" or
    "label [config 1a2b3c]", so that points of different configurations are never
    pooled."""
    # Each row's configuration digest, computed once (a digest hashes the whole
    # configuration, and a store can hold tens of thousands of points).
    row_keys = [configkey.digest(configkey.ignoring(r.get("config") or {}, ("threads", "clients"))) for r in rows]
    keys: dict[tuple, dict[tuple[str, str], None]] = defaultdict(dict)  # (label, engine, workload) -> (variant, key)
    for r, key in zip(rows, row_keys):
        keys[(r["label"], r["engine"], r["workload"])].setdefault((r.get("variant") or "", key))

    # How many configurations each (label, engine, workload, variant) holds.
    per_variant: dict[tuple, int] = defaultdict(int)
    for series, found in keys.items():
        for variant, _ in found:
            per_variant[(*series, variant)] += 1

    def name(r: dict, key: str) -> str:
        series = (r["label"], r["engine"], r["workload"])
        variant = r.get("variant") or ""
        if len(keys[series]) == 1:
            return r["label"]
        return r["label"] + (f" [{variant}]" if variant else "") + \
            (f" [config {key[:6]}]" if per_variant[(*series, variant)] > 1 else "")

    out = [{**r, "label": name(r, key), "_label": r["label"]} for r, key in zip(rows, row_keys)]
    new_order = list(dict.fromkeys(r["label"] for label in order for r in out if r["_label"] == label))
    new_prices = {r["label"]: prices[r["_label"]] for r in out if r["_label"] in prices}
    new_baseline = next((r["label"] for r in out if r["_label"] == baseline), baseline)
    return out, new_order, new_baseline, new_prices


def _differs(row: dict, base: dict) -> list[str]:
    """Fields in which a row's configuration differs from the baseline's, apart from
    what the comparison is about: the host when the labels differ, the variant (and
    its settings) when the variants differ."""
    ignore: set[str] = {"threads", "clients"}
    if row["_label"] != base["_label"]:
        ignore.update(configkey.ABOUT["host"])
    if row["_variant"] != base["_variant"]:
        ignore.update(configkey.ABOUT["variant"])
    return configkey.differing(row["_config"], base["_config"], ignore)


def build(rows: list[dict], runs: list[dict], *, baseline: str | None = None, prices: dict[str, Price] | None = None,
          at_threads: int | None = None, labels: list[str] | None = None,
          histograms: Callable[[list[int]], dict[int, dict]] | None = None) -> Report:
    """rows: analysis.load(...) points; runs: store.runs(); histograms: point ids ->
    their latency histograms (store.latency_histograms), read per group of repeats."""
    with collector_paused():
        return _build(rows, runs, baseline=baseline, prices=prices, at_threads=at_threads, labels=labels,
                      histograms=histograms)


def _build(rows: list[dict], runs: list[dict], *, baseline: str | None, prices: dict[str, Price] | None,
           at_threads: int | None, labels: list[str] | None,
           histograms: Callable[[list[int]], dict[int, dict]] | None = None) -> Report:
    prices = label_prices(runs, prices or {})
    runs_by_id = {r["id"]: r for r in runs}
    order = labels or list(dict.fromkeys(r["label"] for r in rows))
    rows = [r for r in rows if r["label"] in order]
    if baseline is None and order:
        baseline = order[0]
    rows, order, baseline, prices = series_labels(rows, order, baseline, prices)
    summaries = {(s["label"], s["engine"], s["workload"], s["threads"]): s
                 for s in analysis.summaries(rows, histograms=histograms)}
    origin_label = {r["label"]: r["_label"] for r in rows}
    for s_ in summaries.values():
        s_["_label"] = origin_label[s_["label"]]
    members: dict[tuple, list[dict]] = defaultdict(list)
    ok_series: dict[tuple, list[dict]] = defaultdict(list)  # (label, engine, workload) -> its ok points
    for r in rows:
        members[(r["label"], r["engine"], r["workload"], r["threads"])].append(r)
        if r["status"] == "ok":
            ok_series[(r["label"], r["engine"], r["workload"])].append(r)

    # Hardware of each label's server, from its runs (a label is one machine): the
    # measured host for a throwaway instance, what --server-cores/--server-threads said
    # for a remote target.
    hardware: dict[str, dict] = {}
    for r in rows:
        run = runs_by_id[r["run_id"]]
        placed = (run.get("options") or {}).get("cpus")
        if placed and server_is_local(run):
            # [cpus]: the cores and threads the variant's server was confined to.
            hardware.setdefault(r["label"], {"physical_cores": placed.get("server_cores"),
                                             "hardware_threads": placed.get("server_threads")})
        elif server_is_local(run):
            facts = run["host_facts"]
            # What the run could use (taskset, cpuset, quota), else the machine's.
            hardware.setdefault(r["label"], {
                "physical_cores": facts.get("usable_physical_cores") or facts.get("physical_cores"),
                "hardware_threads": facts.get("effective_hardware_threads") or facts.get("hardware_threads")})
        elif run["target_facts"].get("server_physical_cores") or run["target_facts"].get("server_hardware_threads"):
            facts = run["target_facts"]
            hardware.setdefault(r["label"], {"physical_cores": facts.get("server_physical_cores"),
                                             "hardware_threads": facts.get("server_hardware_threads")})

    level_rows = []
    for key, summary in summaries.items():
        label, engine, workload, threads = key
        ok = [m for m in members[key] if m["status"] == "ok"]
        label_price = prices.get(label)
        price = label_price.per_hour if label_price else None
        tps = summary["mean"] if summary["metric"] == "tps" else None
        qps = _mean(m.get("qps") for m in ok)
        seconds = _mean(m.get("run_avg_s") for m in ok) if summary["metric"] != "tps" else None
        # Each tool's own figure: mysqlslap's is the seconds it took to run its queries
        # (lower is better), as study A publishes it; the others' their throughput.
        metric = "seconds" if seconds is not None else summary["metric"]
        value = seconds if metric == "seconds" else summary["mean"]
        hw = hardware.get(label, {})
        level_rows.append({
            "label": label, "engine": engine, "workload": workload, "threads": threads, "metric": metric,
            "seconds": seconds,
            # The figure the tool printed (mean over repeats) beside dbarena's steady-state mean.
            "printed_tps": _mean(m.get("tps") for m in ok) if tps is not None else None,
            **_tpcc_figures(ok),
            **{k: _mean(m.get(k) for m in ok) for k in analysis.SYSTEM_FIELDS},
            "n": summary["n"], "failed": summary["failed"],
            "tps": tps, "tps_ci_low": summary["ci_low"] if tps is not None else None,
            "tps_ci_high": summary["ci_high"] if tps is not None else None,
            "qps": qps, "value": value,
            "transactions": _mean(m.get("transactions") for m in ok),
            "queries": _mean(m.get("queries") for m in ok),
            "time_s": _mean(m.get("duration_s") for m in ok) if tps is not None else _mean(m.get("run_avg_s") for m in ok),
            **{k: summary[k] for k in (*analysis.LATENCY_FIELDS, "latency_avg_ms", "latency_pooled")},
            "price_per_hour": price, "currency": label_price.currency if label_price else None,
            "price_per_month": label_price.per_month if label_price else None,
            "price": label_price.shown() if label_price else None,
            "price_per_100_tps": price / (tps / 100) if price and tps else None,
            # mysqlslap: what one run of its queries costs at that hourly price.
            "price_per_run": price * seconds / 3600 if price and seconds else None,
            "tps_per_dollar_hour": tps / price if price and tps else None,
            "physical_cores": hw.get("physical_cores"), "hardware_threads": hw.get("hardware_threads"),
            "tps_per_core": tps / hw["physical_cores"] if tps and hw.get("physical_cores") else None,
            "tps_per_thread": tps / hw["hardware_threads"] if tps and hw.get("hardware_threads") else None,
            "scaling_efficiency": None, "ratio_to_baseline": None, "ratio_ci_low": None, "ratio_ci_high": None,
            "verdict": None, "reason": None, "verdict_text": None, "interval": summary["interval"],
            "warnings": [w["code"] for w in summary["warnings"]],
            "_estimate": summary["_estimate"], "_config": summary["config"] or {}, "_variant": summary["variant"],
            "_label": summary["_label"],
        })

    by_series: dict[tuple, dict[int, dict]] = defaultdict(dict)
    for row in level_rows:
        by_series[(row["label"], row["engine"], row["workload"])][row["threads"]] = row
    for (label, engine, workload), levels in by_series.items():
        one = levels.get(1)
        for n, row in levels.items():
            if one and one["value"] and row["value"]:
                # The share of N times one thread's speed: for seconds (a fixed amount of
                # work split among N clients) the inverse ratio of times.
                row["scaling_efficiency"] = (one["value"] / (n * row["value"]) if row["metric"] == "seconds"
                                             else row["value"] / (n * one["value"]))
            base = by_series.get((baseline, engine, workload), {}).get(n)
            differs = _differs(row, base) if base and label != baseline else []
            if differs:
                row["reason"] = row["verdict_text"] = "not comparable: " + ", ".join(differs)
            elif base and base["value"] and row["value"] is not None:
                row["ratio_to_baseline"] = row["value"] / base["value"]
                if label != baseline and base["_estimate"] is not None and row["_estimate"] is not None:
                    c = stats.compare(base["_estimate"], row["_estimate"])
                    row.update(ratio_ci_low=c.ci_low, ratio_ci_high=c.ci_high,
                               verdict=c.verdict.value if c.verdict else None, reason=c.reason, verdict_text=c.text)

    sections = []
    for engine, workload in dict.fromkeys((r["engine"], r["workload"]) for r in level_rows):
        sec_rows = sorted((r for r in level_rows if (r["engine"], r["workload"]) == (engine, workload)),
                          key=lambda r: (order.index(r["label"]), r["threads"]))
        sec_labels = [l for l in order if any(r["label"] == l for r in sec_rows)]
        ranking, fits, series = [], {}, {}
        base_levels = {n: r["value"] for n, r in by_series.get((baseline, engine, workload), {}).items()
                       if r["value"] is not None}
        # The per-second chart compares one level: --at-threads, else the highest level
        # every label measured; only when the labels share none, each its own highest.
        shared = set.intersection(*({r["threads"] for r in ok_series[(label, engine, workload)]}
                                    for label in sec_labels)) if sec_labels else set()
        shown_level = at_threads if at_threads is not None else (max(shared) if shared else None)
        lower_is_better = sec_rows[0]["metric"] == "seconds"
        price_field = "price_per_run" if lower_is_better else "price_per_100_tps"
        for label in sec_labels:
            levels = by_series[(label, engine, workload)]
            ns = sorted(n for n in levels if levels[n]["value"] is not None)
            values = [levels[n]["value"] for n in ns]
            pick = min if lower_is_better else max
            peak_n = pick(ns, key=lambda n: levels[n]["value"]) if ns else None
            peak = levels[peak_n] if peak_n is not None else None
            ranking.append({
                "label": label, "sum": sum(values), "levels": ns,
                "geomean_ratio_to_baseline": geomean_ratio({n: levels[n]["value"] for n in ns}, base_levels),
                # Saturation and the USL describe throughput growing with threads.
                "saturation_threads": None if lower_is_better else saturation(ns, values),
                "peak_threads": peak_n, "peak_value": peak["value"] if peak else None,
                "peak_tps_per_core": peak["tps_per_core"] if peak else None,
                "peak_tps_per_thread": peak["tps_per_thread"] if peak else None,
                "hardware_threads": peak["hardware_threads"] if peak else None,
                "price_at": levels[at_threads][price_field] if at_threads in levels else None,
                "cpu_saturated_from": cpu_saturation(levels[n] for n in ns),
            })
            fit = None if lower_is_better else usl_fit(ns, values)
            if fit:
                fits[label] = fit
            series[label] = _chosen_series(ok_series[(label, engine, workload)], shown_level)
        # Study A's ranking: most throughput, or (mysqlslap) fewest seconds, over the levels.
        ranking.sort(key=lambda r: r["sum"] if lower_is_better else -r["sum"])
        for rank, r in enumerate(ranking, start=1):
            r["rank"] = rank
        for r in ranking:
            r["price"] = prices[r["label"]].shown() if r["label"] in prices else None
        priced = [r for r in ranking if r["price_at"]]
        currencies = sorted({prices[r["label"]].currency for r in priced})
        cheapest = None
        if at_threads is not None and len(priced) >= 2 and len(currencies) == 1:
            best = min(priced, key=lambda r: r["price_at"])
            cheapest = {"label": best["label"], "threads": at_threads, "others": {
                r["label"]: r["price_at"] / best["price_at"] - 1
                for r in priced if r is not best}}
        elif at_threads is not None and len(currencies) > 1:
            # No exchange rate is a measurement: prices in two currencies are not compared.
            cheapest = {"label": None, "threads": at_threads, "others": {}, "currencies": currencies}
        sections.append(Section(engine=engine, workload=workload, metric=sec_rows[0]["metric"], labels=sec_labels,
                                rows=sec_rows, ranking=ranking, usl=fits, series=series, cheapest=cheapest))

    provenance: dict[str, dict] = {}
    origin = {r["label"]: (r["_label"], r.get("variant") or "") for r in rows}
    for name in order:
        label, variant = origin.get(name, (name, ""))
        for run in runs:
            if run["label"] == label and (run.get("variant") or "") == variant:
                provenance.setdefault(name, {})[run["engine"]] = run
    return Report(labels=order, baseline=baseline, at_threads=at_threads, rows=level_rows, sections=sections,
                  provenance=provenance)


def at_text(report: Report) -> str:
    """The report header's sentence about the level of the price verdict."""
    if report.at_threads is None:
        return "Price/performance at every level; the cheapest label is named at --at-threads N."
    return f"Price/performance at {report.at_threads} threads (--at-threads), the cheapest label named."


def _chosen_series(candidates: list[dict], level: int | None) -> dict:
    """The per-second series shown for a label: of its ok points (candidates), the one at
    `level` (first repeat; none if the label has no point there), or without a level
    its highest; samples are attached by the caller."""
    if not candidates:
        return {}
    if level is None:
        level = max(c["threads"] for c in candidates)
    chosen = [r for r in candidates if r["threads"] == level]
    if not chosen:
        return {}
    point = min(chosen, key=lambda r: r.get("repeat", 0))
    return {"point_id": point["point_id"], "threads": point["threads"], "steady_start_s": point.get("steady_start_s"),
            "dips_s": point.get("dips_s", [])}


PUBLIC_FIELDS = (
    "label", "engine", "workload", "threads", "metric", "n", "failed", "tps", "tps_ci_low", "tps_ci_high",
    "printed_tps", "qps", "seconds", "tpm_new_order", "transactions", "queries", "time_s", "latency_avg_ms", "latency_p50_ms", "latency_p90_ms", "latency_p95_ms",
    "latency_p99_ms", "latency_p999_ms", "latency_max_ms", "latency_pooled", "price", "currency", "price_per_hour",
    "price_per_month", "price_per_100_tps", "price_per_run", "cpu_busy_pct", "cpu_iowait_pct", "server_cpu",
    "loadgen_cpu",
    "tps_per_dollar_hour", "physical_cores", "hardware_threads", "tps_per_core", "tps_per_thread",
    "scaling_efficiency", "ratio_to_baseline", "ratio_ci_low", "ratio_ci_high", "verdict", "reason",
)


def public_rows(report: Report) -> list[dict]:
    """One flat record per label x engine x workload x threads, for CSV and JSON."""
    out = []
    for section in report.sections:
        for row in section.rows:
            record = {k: row[k] for k in PUBLIC_FIELDS}
            record["warnings"] = ";".join(row["warnings"])
            out.append(record)
    return out
