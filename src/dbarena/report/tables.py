"""The report's tables as plain strings, shared by the HTML and Markdown renderers
(each escapes for its own format)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, TypeGuard

from dbarena.report import data, reading
from dbarena.report.data import Cheapest, Ranking, Report, Section
from dbarena.report.levels import LevelRow, server_is_local
from dbarena.report.scaling import CPU_SATURATED_PCT
from dbarena.records import JSON, JSONObject, StoredRun, json_object
from dbarena.report.reading import Explanation
from dbarena.stats import environment
from dbarena.stats.metric import rate_shown


@dataclass(frozen=True)
class TableSpec:
    """A table: its note says what is particular to it (this section's saturation level,
    cheapest label ...); `explain` what every table of its kind shows, said once in the
    report's "How to read this" (report.reading)."""

    title: str
    headers: list[str]
    rows: list[list[str]]
    note: str | None = None
    explain: Explanation | None = None


def num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.{digits}f}"


def sig(value: float | None, digits: int = 3) -> str:
    """Significant digits, for prices that can be 0.00043 or 12.5."""
    return "-" if value is None else f"{value:.{digits}g}"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def interval(low: float | None, high: float | None, digits: int = 1) -> str:
    """A 95 % interval of a quantity that cannot be negative (throughput, seconds): a
    t-interval over few repeats can reach below zero, which says only that the data
    bound it loosely; it is shown from 0."""
    if low is None or high is None:
        return "-"
    return f"{max(low, 0.0):,.{digits}f} .. {high:,.{digits}f}"


PERCENTILE_COLUMNS = ("latency_p50_ms", "latency_p95_ms", "latency_p99_ms", "latency_p999_ms")
# Beside a percentile that is the mean of those its runs printed (reading._LATENCY).
PRINTED_MEAN = "\u2021"


def percentile(r: LevelRow, column: str) -> str:
    """A level's percentile: of its merged histograms (or its one run); else the mean of
    the ones its runs printed, marked."""
    pooled: float | None = getattr(r, column)
    if pooled is not None:
        return num(pooled, 2)
    over = r.over_repeats.get(column)
    if over is None:
        return "-"
    mean = over["mean"]
    return num(mean if isinstance(mean, (int, float)) and not isinstance(mean, bool) else None, 2) + PRINTED_MEAN


def results(section: Section) -> TableSpec:
    """Study E's table, per label: threads, transactions, queries, time, latencies; the
    tool's own figure (mysqlslap: seconds), dbarena's steady-state TPS beside the printed."""
    seconds = section.metric == "seconds"
    rows = []
    for r in section.rows:
        figures = ([num(r.seconds, 3), num(r.qps)] if seconds else [
            num(r.tps) + (f" ({interval(r.tps_ci_low, r.tps_ci_high)}"
                             f"{'*' if r.interval == 'within one run' else ''})" if r.tps_ci_low else ""),
            num(r.printed_tps), num(r.qps)])
        rows.append([
            r.label, str(r.threads), num(r.transactions, 0), num(r.queries, 0), num(r.time_s, 1),
            num(r.latency_avg_ms, 2), *(percentile(r, c) for c in PERCENTILE_COLUMNS), *figures,
            str(r.n) + (f" (+{r.failed} failed)" if r.failed else ""),
        ])
    figure_headers = ["seconds to run the queries", "QPS"] if seconds else ["TPS (95 % CI)", "printed TPS", "QPS"]
    return TableSpec("Results", ["label", "threads", "transactions", "queries", "time (s)", "avg latency (ms)",
                                 "p50 (ms)", "p95 (ms)", "p99 (ms)", "p99.9 (ms)", *figure_headers, "repeats"],
                     rows, explain=reading.RESULTS_SECONDS if seconds else reading.RESULTS)


def ranking(section: Section, report: Report) -> TableSpec:
    seconds = section.metric == "seconds"
    metric = "seconds" if seconds else section.metric.upper()
    rent = any(r.price for r in section.ranking)  # study A: the rent beside the totals
    rows = [[
        str(r.rank), r.label, num(r.sum, 3 if seconds else 1), ", ".join(map(str, r.levels)),
        num(r.geomean_ratio_to_baseline, 3),
        *(() if seconds else (str(r.saturation_threads or "not reached"),)),
        f"{num(r.peak_value, 3 if seconds else 1)} at {r.peak_threads}" if r.peak_threads is not None
        else "-",
        *(() if seconds else (num(r.peak_tps_per_core), num(r.peak_tps_per_thread))),
        *((r.price or "-",) if rent else ()),
    ] for r in section.ranking]
    if seconds:
        return TableSpec(
            "Points and best", ["rank", "label", "sum of seconds over levels", "levels",
                                f"geomean ratio to {report.baseline}", "fewest seconds",
                                *(("price",) if rent else ())], rows,
            # The one metric where lower is better: said where it is read, not only once above.
            note="mysqlslap: seconds to run all its queries, lower is better (ranked fewest first).",
            explain=reading.RANKING_SECONDS)
    return TableSpec(
        "Points and peak",
        ["rank", "label", f"sum of {metric} over levels", "levels", f"geomean ratio to {report.baseline}",
         "saturates at threads", f"peak {metric}", "peak per core", "peak per hardware thread",
         *(("price",) if rent else ())], rows, explain=reading.RANKING)


def _threads(n: int) -> str:
    return f"{n} thread{'' if n == 1 else 's'}"


def _tool(name: str, version: object) -> str:
    """A tool and its version as printed: the name once (mysqlslap prints its path,
    "/usr/bin/mysqlslap  Ver 1.0 Distrib ..."), runs of spaces as one."""
    text = " ".join(str(version).split())
    first = text.split(" ", 1)[0]
    return text if first.rsplit("/", 1)[-1] == name or text.startswith(name) else f"{name} {text}"


def _change(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"


def against_baseline(section: Section, report: Report) -> TableSpec | None:
    rows = [[r.label, str(r.threads), num(r.ratio_to_baseline, 3), _change(r.ratio_to_baseline),
             interval(r.ratio_ci_low, r.ratio_ci_high, 3), r.verdict_text or "-"]
            for r in section.rows
            # (A row not comparable with the baseline's has no ratio: it says why.)
            if r.label != report.baseline and (r.ratio_to_baseline is not None or r.verdict_text)]
    if not rows:
        return None
    # (--slo: as `compare` and the decision, the capacities where both sides searched one.)
    slo = _objective(section.rows)
    note = (f"Level by level; where both sides searched a capacity at {slo}, the ratio is of those capacities "
            "(the table 'Capacity at the objective'), as `compare` and the decision compare them." if slo else None)
    return TableSpec(f"Against the baseline ({report.baseline})", ["label", "threads", "ratio", "change", "95 % CI",
                                                                   "verdict"], rows, note,
                     explain=reading.AGAINST_SECONDS if section.metric == "seconds" else reading.AGAINST)


def _money(value: float | None, currency: str | None) -> str:
    return "-" if value is None else f"{sig(value)} {currency or ''}".rstrip()


def _price_cells(r: LevelRow, seconds: bool, slo: str | None = None) -> list[str]:
    if seconds:
        return [r.label, str(r.threads), r.price or "-", num(r.seconds, 3),
                _money(r.price_per_run, r.currency)]
    # (--slo: the price of 1,000 TPS within the objective, beside 100 TPS at saturation;
    # a row searched at another objective than the column's names its own.)
    at = [] if slo is None else [_money(r.price_per_1000_tps_at_slo, r.currency)
                                 + (f" (at {r.slo})" if r.slo and r.slo != slo else "")]
    return [r.label, str(r.threads), r.price or "-", _money(r.price_per_hour, r.currency),
            _money(r.price_per_100_tps, r.currency), *at, num(r.tps_per_dollar_hour, 0)]


def _price_headers(seconds: bool, slo: str | None = None) -> list[str]:
    if seconds:
        return ["label", "threads", "price", "seconds", "per run"]
    if slo is None:
        return ["label", "threads", "price", "per hour", "per hour per 100 TPS", "TPS per currency unit-hour"]
    return ["label", "threads", "price", "per hour", "per hour per 100 TPS at saturation",
            f"per hour per 1,000 TPS at {slo}", "TPS per currency unit-hour"]


def _objective(rows: list[LevelRow]) -> str | None:
    """The objective of a section's capacities (--slo; the most frequent where they
    differ), None where it has none."""
    found = [r.slo for r in rows if r.slo is not None]
    return max(dict.fromkeys(found), key=found.count) if found else None


def _price_of(r: LevelRow, seconds: bool) -> float | None:
    """What a level's work costs: a run of mysqlslap's queries, or 100 TPS for an hour."""
    return r.price_per_run if seconds else r.price_per_100_tps


def price(section: Section, report: Report) -> TableSpec | None:
    """Price/performance in each label's own currency: at every level, or at the level
    of --at-threads only, cheapest first, with what each other label costs more and the
    cheapest named (among prices in one currency). A section that did not measure that
    level says so in one line and shows every level."""
    seconds = section.metric == "seconds"
    priced = [r for r in section.rows if r.price_per_hour is not None
              and (r.seconds if seconds else r.tps) is not None]
    if not priced:
        return None
    slo = None if seconds else _objective(priced)
    headers, how = _price_headers(seconds, slo), reading.PRICE_SECONDS if seconds else reading.PRICE
    n = report.at_threads
    if n is None:
        return TableSpec("Price / performance", headers, [_price_cells(r, seconds, slo) for r in priced],
                         explain=how)
    at = sorted((r for r in priced if r.threads == n and _price_of(r, seconds) is not None),
                key=lambda r: _price_of(r, seconds) or 0.0)
    if not at:
        levels = ", ".join(str(level) for level in sorted({r.threads for r in priced}))
        return TableSpec("Price / performance", headers, [_price_cells(r, seconds, slo) for r in priced],
                         f"No price at {_threads(n)} (--at-threads) in {section.engine} {section.workload}: no "
                         f"priced label measured that level here (levels: {levels}); every level is shown.", how)
    return _price_at(section, n, at, headers, how, slo)


def _price_at(section: Section, n: int, at: list[LevelRow], headers: list[str], how: Explanation,
              slo: str | None = None) -> TableSpec:
    """The price table at --at-threads N: the priced rows of that level (at), cheapest first."""
    seconds = section.metric == "seconds"
    c = section.cheapest
    others = c.others if c else {}

    def against(r: LevelRow) -> str:
        if c and r.label == c.label:
            return "cheapest"
        return f"{others[r.label] * 100:+.1f} %" if r.label in others else "-"

    verdict = _price_verdict(c, others, at, seconds)
    missing = [label for label in section.labels if label not in {r.label for r in at}]
    return TableSpec(f"Price / performance at {_threads(n)}", [*headers, "against the cheapest"],
                     [[*_price_cells(r, seconds, slo), against(r)] for r in at],
                     f"At {_threads(n)} (--at-threads){', cheapest first' if len(at) > 1 else ''}. {verdict} "
                     + (f"Not at this level (no point or no price): {', '.join(missing)}. " if missing else "")
                     + "Every level: the report without --at-threads, or the CSV/JSON.", how)


def _price_verdict(c: Cheapest | None, others: dict[str, float], at: list[LevelRow], seconds: bool) -> str:
    """Which label is cheapest at that level (c: the section's cheapest), in one sentence."""
    what = "per run" if seconds else "for the same throughput"
    if c and (currencies := c.currencies):
        return (f"No cheapest label named: the prices are in {' and '.join(currencies)}, and dbarena "
                "converts no currency.")
    if c and c.label:
        return (f"{c.label} is cheapest {what}: "
                + "; ".join(f"{label} costs {share:.0%} more" for label, share in others.items()) + ".")
    return f"Only {at[0].label} has a price and a {'time' if seconds else 'throughput'} there: nothing to compare."


def per_core(section: Section) -> TableSpec | None:
    """TPS per core and hardware thread, scaling efficiency; with capacities (--slo), the
    capacity at the objective per core and hardware thread beside them."""
    slo = _objective(section.rows)
    rows = [[r.label, str(r.threads), num(r.tps_per_core), num(r.tps_per_thread),
             pct(r.scaling_efficiency), f"{r.physical_cores or '-'} / {r.hardware_threads or '-'}",
             *(() if slo is None else (num(r.capacity_per_core) + (f" (at {r.slo})" if r.slo and r.slo != slo else ""),
                                       num(r.capacity_per_thread)))]
            for r in section.rows if r.tps is not None]
    if not any(row[2] != "-" or row[4] != "-" for row in rows):
        return None
    return TableSpec("Per core and scaling", ["label", "threads", "TPS per physical core", "TPS per hardware thread",
                                              "scaling efficiency", "cores / hardware threads",
                                              *(() if slo is None else (f"capacity at {slo} per physical core",
                                                                        "per hardware thread"))], rows,
                     explain=reading.PER_CORE)


def capacity(section: Section) -> TableSpec | None:
    """Each search's capacity at its objective (--slo): the capacity with its interval
    between sessions, the bracket of offered rates, the closed-loop throughput it started
    from and the share of it carried within the objective, the rates tried, and the
    price of 1,000 TPS there; a search without a capacity says why."""
    if not section.curves:
        return None
    by_level = {(r.label, r.threads): r for r in section.rows}
    rows = []
    for c in section.curves:
        found = c.capacity or {}
        met, failed = c.bracket()
        tps = c.capacity_tps
        low, high = found.get("ci_low"), found.get("ci_high")
        level = by_level.get((c.label, c.threads))
        # (The closed-loop figure as the report gives it everywhere: its steady-state mean.)
        closed = level.tps if level is not None and level.tps is not None else c.closed.tps if c.closed else None
        reason = found.get("reason") if c.capacity is not None else "no closed-loop point of this search"
        rows.append([
            c.label, str(c.threads), c.slo,
            num(tps, 0) + (f" ({interval(low, high, 0)})" if isinstance(low, (int, float))
                           and isinstance(high, (int, float)) else "") if tps is not None else "none",
            num(met, 0), num(failed, 0), num(closed, 0), pct(tps / closed) if tps and closed else "-",
            str(len(c.points)),
            _money(level.price_per_1000_tps_at_slo, level.currency) if level is not None else "-",
            str(reason) if reason else "-"])
    return TableSpec("Capacity at the objective", ["label", "threads", "objective", "capacity TPS (95 % CI)",
                                                   "met at (offered)", "missed at (offered)", "closed-loop TPS",
                                                   "share of closed loop", "rates tried",
                                                   "price per hour per 1,000 TPS there", "note"], rows,
                     explain=reading.CAPACITY)


def usl_table(section: Section) -> TableSpec | None:
    if not section.usl:
        return None
    rows = [[label, num(f.sigma, 4), num(f.kappa, 6), num(f.lambda_, 1),
             num(f.peak_threads, 1) if f.peak_threads else "no retrograde", num(f.peak_tps),
             num(f.r2, 3)] for label, f in section.usl.items()]
    return TableSpec("Universal Scalability Law fit", ["label", "sigma (contention)", "kappa (coherency)",
                                                       "lambda (TPS of one thread)", "predicted peak threads",
                                                       "predicted peak TPS", "R²"], rows,
                     explain=reading.USL)


def _kv(mapping: JSON) -> str:
    """An object's keys and values, sorted; "-" for none (or not an object)."""
    return ", ".join(f"{k}={v}" for k, v in sorted(json_object(mapping).items())) or "-"


def _tool_version(report: Report, label: str, engine: str, workload: str) -> str:
    from dbarena.workloads import WORKLOADS

    known = WORKLOADS.get(workload)
    binary = getattr(known.tool, "binary", known.tool.name) if known else workload.split("-")[0]
    run = report.provenance.get(label, {}).get(engine)
    version = run.tool_versions.get(binary) if run is not None else None
    return " ".join(str(version).split()) if version else "-"


def _is_number(value: JSON) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parameters(section: Section, report: Report) -> TableSpec:
    """Everything that shapes the numbers of a section, label by label, so that a reader
    can run it again: dataset, duration, warm-up, clients per thread, the tool's options
    and version, the server settings applied, repeats, and what flags changed in the
    study (e.g. --quick)."""
    rows = []
    for label in section.labels:
        mine = [r for r in section.rows if r.label == label]
        configs = [r.config for r in mine]

        def values(get: Callable[[JSONObject], str]) -> str:
            found = list(dict.fromkeys(get(c) for c in configs))
            return " | ".join(str(v) for v in found)

        ratios = sorted({clients / threads for c in configs
                         if _is_number(clients := c.get("clients")) and _is_number(threads := c.get("threads"))
                         and clients and threads})
        run = report.provenance.get(label, {}).get(section.engine)
        changed = run.options.get("changes") if run is not None else None
        changes = [c for c in (changed if isinstance(changed, list) else [])
                   if isinstance(c, str) and c.startswith(section.workload + " ")]
        rows.append([
            label, values(lambda c: _kv(c.get("params") or {})),
            values(lambda c: "bounded by queries" if c.get("duration_s") is None else f"{c['duration_s']} s"),
            values(lambda c: f"{c.get('warmup_s') or 0} s"),
            ", ".join(f"{r:g}" for r in ratios) or "-",
            values(lambda c: _kv(c.get("options") or {})), values(lambda c: _kv(c.get("settings") or {})),
            _tool_version(report, label, section.engine, section.workload),
            ", ".join(str(r.threads) for r in mine),
            ", ".join(sorted({str(r.n) for r in mine})),
            "; ".join(c.split(" ", 1)[1] for c in changes) or "-",
        ])
    return TableSpec("Parameters", ["label", "dataset", "duration per point", "warm-up", "clients per thread",
                                    "tool options", "server settings applied", "tool", "thread levels", "repeats",
                                    "changed by flags"], rows, explain=reading.PARAMETERS)


def tpcc(section: Section) -> TableSpec | None:
    """The TPC-C-like workload's own table: New-Order rate, the mix, each type's latency."""
    rows = [r for r in section.rows if r.tpm_new_order is not None]
    if not rows:
        return None
    kinds = list(dict.fromkeys(k for r in rows for k in (r.tpcc_mix_pct or {})))
    body = [[r.label, str(r.threads), _kv(r.config.get("params") or {}), num(r.tpm_new_order),
             num(r.tps), num(r.rollbacks, 1),
             " / ".join(f"{(r.tpcc_mix_pct or {}).get(k) or 0:.1f}" for k in kinds),
             *(num((r.tpcc_latency_ms or {}).get(k), 2) for k in kinds)] for r in rows]
    short = {"new_order": "New-Order", "payment": "Payment", "order_status": "Order-Status",
             "delivery": "Delivery", "stock_level": "Stock-Level"}
    return TableSpec("TPC-C-like: New-Order rate, mix and latency per transaction type",
                     ["label", "threads", "dataset", "New-Order per minute (tpmC-like)", "TPS (all types)",
                      "rollbacks", "mix % (" + " / ".join(short.get(k, k) for k in kinds) + ")",
                      *(f"{short.get(k, k)} avg (ms)" for k in kinds)], body, explain=reading.TPCC)


def system(section: Section) -> TableSpec | None:
    """Where the CPU went at each level (study D): the machine busy, iowait, the server's
    and the load generator's processes, with the level the CPU saturated from."""
    rows = [r for r in section.rows if r.cpu_busy_pct is not None]
    if not rows:
        return None
    bounds = any(r.bound for r in rows)
    body = [[r.label, str(r.threads), num(r.cpu_busy_pct, 0), num(r.cpu_iowait_pct, 1),
             num(r.server_cpu, 2), num(r.loadgen_cpu, 2), str(r.hardware_threads or "-"),
             *([r.bound or "-"] if bounds else [])] for r in rows]
    saturated = [f"{r.label}: CPU saturated from {_threads(r.cpu_saturated_from)}" if r.cpu_saturated_from
                 else f"{r.label}: CPU never {CPU_SATURATED_PCT:.0f} % busy" for r in section.ranking]
    # The bound column: each point's bound as stats/bound.py derives it from its stored
    # series (stats/analysis), the one answer every view shows.
    return TableSpec("System view", ["label", "threads", "machine CPU busy %", "iowait %", "server CPU (cores)",
                                     "load generator CPU (cores)", "hardware threads",
                                     *(["bound (per point)"] if bounds else [])], body,
                     "; ".join(saturated) + "." if saturated else None,
                     reading.SYSTEM_SECONDS if section.metric == "seconds" else reading.SYSTEM)


# The costs per transaction (stats/efficiency.FIGURES) as the table heads them, with
# the digits each is shown to.
_COSTS = {"server_cpu_us_per_tx": ("server CPU us/tx", 1), "loadgen_cpu_us_per_tx": ("load generator CPU us/tx", 1),
          "context_switches_per_tx": ("context switches/tx", 2), "read_kb_per_tx": ("read KB/tx", 3),
          "write_kb_per_tx": ("write KB/tx", 3), "wal_bytes_per_tx": ("WAL bytes/tx", 0),
          "redo_bytes_per_tx": ("redo bytes/tx", 0), "buffer_reads_per_tx": ("buffer reads/tx", 3)}


def _cost(row: LevelRow, name: str) -> float | None:
    value = (row.efficiency or {}).get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def cost_per_transaction(section: Section) -> TableSpec | None:
    """What one transaction cost at each level (stats/efficiency.py), the figures some
    level has; None where none has any."""
    rows = [r for r in section.rows if r.efficiency]
    names = [name for name in _COSTS if any(_cost(r, name) is not None for r in rows)]
    if not names:
        return None
    body = [[r.label, str(r.threads), *(num(_cost(r, name), _COSTS[name][1]) for name in names)] for r in rows]
    return TableSpec("Cost per transaction", ["label", "threads", *(_COSTS[name][0] for name in names)], body,
                     None, reading.COST)


_CORES = re.compile(r"^(?P<base>.*?)(?P<cores>\d+)cores?(?:_smt-(?P<smt>on|off|\d))?\]$")


def _smt_order(mode: str | None) -> tuple[int, int]:
    """SMT modes from fewest threads per core: off, on; or POWER's 1, 2, 4, 8."""
    if mode is None:
        return (0, 0)
    return (1, int(mode)) if mode.isdigit() else (0, 0 if mode == "off" else 1)


def cores_and_smt(section: Section) -> TableSpec | None:
    """Study C's table, for series of a [cpus] study ("label [2cores_smt-on]"): the best
    throughput of each core count and SMT mode, per physical core and per hardware
    thread, the scaling efficiency against one core (same SMT mode), and the gain of
    SMT on over off (same cores)."""
    # (base label, cores, SMT mode) -> its ranking entry and its peak
    found: dict[tuple[str, int, str | None], tuple[Ranking, float]] = {}
    for r in section.ranking:
        m = _CORES.match(r.label)
        if m and r.peak_value is not None:
            found[(m["base"], int(m["cores"]), m["smt"])] = (r, r.peak_value)
    if not found or section.metric == "seconds":
        return None
    rows = []
    ordered = sorted(found.items(), key=lambda kv: (kv[0][0], kv[0][1], _smt_order(kv[0][2])))
    for (base, cores, smt), (r, peak) in ordered:
        one = found.get((base, 1, smt))
        # The SMT step below this one on the same cores: off -> on, or SMT2 -> SMT4.
        below = [v for (b, c, m), v in ordered if (b, c) == (base, cores) and m is not None and smt is not None
                 and _smt_order(m) < _smt_order(smt)]
        lower = below[-1] if below else None
        gain = "-"
        if lower and lower[1]:
            # Cores without siblings (a VM, Ampere): "on" ran on the very CPUs "off" did,
            # and a difference between them is noise, not SMT.
            same = r.hardware_threads is not None and r.hardware_threads == lower[0].hardware_threads
            gain = "same CPUs (no SMT siblings)" if same else _change(peak / lower[1])
        rows.append([r.label, str(cores), smt or "-", f"{num(peak)} at {r.peak_threads}",
                     num(r.peak_tps_per_core), num(r.peak_tps_per_thread),
                     pct(peak / (cores * one[1])) if one and one[1] else "-",
                     gain])
    return TableSpec("Cores and SMT", ["series", "physical cores", "SMT", f"best {section.metric.upper()}",
                                      "per physical core", "per hardware thread", "scaling efficiency",
                                      "gain over the SMT step below"], rows, explain=reading.CORES_SMT)


def rate_levels(report: Report) -> TableSpec | None:
    """The levels offered a fixed rate (report/ratelevels.py), each label's p95 there
    against the baseline's; None where there are none."""
    if not report.rate_levels:
        return None
    rows = [[r.label, r.engine, r.workload, str(r.threads), rate_shown(r.offered_tps), num(r.achieved_tps),
             num(r.p95_ms, 2), f"{r.runs}/{r.sessions}", num(r.ratio_to_baseline, 3),
             interval(r.ratio_ci_low, r.ratio_ci_high, 3),
             r.verdict_text or (f"fell short: {r.short}" if r.short else "-")]
            for r in report.rate_levels]
    return TableSpec("Each label's p95 at each offered rate", ["label", "engine", "workload", "threads", "offered TPS",
                                                  "achieved TPS", "p95 ms", "runs/sessions",
                                                  f"p95 / {report.baseline}", "95 % CI", "verdict"],
                     rows, explain=reading.RATE_LEVELS)


def section_tables(section: Section, report: Report) -> list[TableSpec]:
    return [t for t in (parameters(section, report), results(section), capacity(section), tpcc(section),
                        ranking(section, report), cores_and_smt(section), system(section),
                        cost_per_transaction(section),
                        against_baseline(section, report), price(section, report), per_core(section),
                        usl_table(section)) if t is not None]


def how_to_read(report: Report) -> list[Explanation]:
    """What the report's tables and charts show, each said once, in the order the report
    first shows them."""
    at_rate = [t.explain for t in (rate_levels(report),) if t is not None]
    kinds = [*at_rate, *(t.explain for s in report.sections for t in section_tables(s, report))]
    pgbench = [reading.PGBENCH] if any(_tool_of(s.workload) == "pgbench" for s in report.sections) else []
    return list(dict.fromkeys(e for e in [reading.CHARTS, *kinds, *pgbench, reading.PROVENANCE] if e is not None))


def _tool_of(workload: str) -> str | None:
    from dbarena.workloads import WORKLOADS  # (a report of an imported workload dbarena does not run has none)

    known = WORKLOADS.get(workload)
    return known.tool.name if known is not None else None


_HOST_FIELDS = (
    ("CPU", "cpu_model"), ("vendor", "cpu_vendor"), ("architecture", "architecture"), ("sockets", "sockets"),
    ("physical cores", "physical_cores"), ("hardware threads", "hardware_threads"),
    ("CPUs the run could use", "usable_cpus"), ("their physical cores", "usable_physical_cores"),
    ("CPU quota (cores)", "cpu_quota_cores"),
    ("threads per core (SMT)", "threads_per_core"), ("NUMA nodes", "numa_nodes"), ("max MHz", "max_mhz"),
    ("L3 cache", "l3_cache"), ("hypervisor", "hypervisor"),
    ("cloud", "cloud"), ("instance type", "instance_type"), ("container", "container"), ("kernel", "kernel"),
    ("distribution", "distribution"), *((words, key) for key, words in environment.HOST_SETTINGS),
)


def provenance(report: Report) -> TableSpec:
    """What was measured, label by label, side by side."""
    labels = [l for l in report.labels if l in report.provenance]
    rows = _machine_rows([_run_of(report, l) for l in labels])
    engines = sorted({e for l in labels for e in report.provenance[l]})
    for engine in engines:
        rows += _engine_rows(engine, [report.provenance[l].get(engine) for l in labels])
    return TableSpec("Provenance", ["", *labels], rows, explain=reading.PROVENANCE)


def run_provenance(run: StoredRun) -> TableSpec:
    """What one run measured on, as the report's provenance gives it for a label:
    its machine, then its engine's server, target, settings, tools and price."""
    return TableSpec(f"Provenance of run {run.id}", ["", run.label],
                     _machine_rows([run]) + _engine_rows(run.engine, [run]), explain=reading.PROVENANCE)


def what_differs(report: Report) -> tuple[TableSpec, TableSpec] | None:
    """The provenance split for a reader comparing labels: the facts and settings whose
    values differ between them (with the price each was given), and the rest, which
    the page folds away. None with a single label. What differs on every throwaway
    instance (its port, its data directory's path) does not make a row differ, and the
    settings row names only the settings that differ, from the one derivation of what
    changed between runs (stats/environment.py)."""
    full = provenance(report)
    labels = full.headers[1:]
    if len(labels) < 2:
        return None
    rows = list(full.rows)
    prices = {r.label: r.price for r in report.rows if r.price}
    if prices:
        # The price the report judges by (the stored one, or the report's --price): said
        # once, not again per engine as stored.
        rows = [r for r in rows if not r[0].endswith(": price per hour")]
        rows.append(["price"] + [prices.get(label) or "-" for label in labels])
    differ, same = [], []
    for row in rows:
        if row[0] == "machine described below" or len({_as_compared(row[0], v) for v in row[1:]}) == 1:
            same.append(row)
        elif row[0].endswith(": settings"):
            engine = row[0][:-len(": settings")]
            differ.append([row[0]] + _differing_settings([report.provenance[l].get(engine) for l in labels]))
        else:
            differ.append(row)
    return (TableSpec("What differs between the labels", full.headers, differ,
                      None if differ else "Nothing recorded differs: the labels ran on alike machines and settings."),
            TableSpec("The same for every label", full.headers, same))


def _as_compared(title: str, cell: str) -> str:
    """A provenance cell as What differs compares it: without what every throwaway
    instance has of its own (the port of its address, the path of its data directory)."""
    if title.endswith(": target"):
        return re.sub(r":\d+(?=/|$)", "", cell)
    if title.endswith(": data directory"):
        return cell.split(": ", 1)[-1]
    return cell


def _differing_settings(runs: list[StoredRun | None]) -> list[str]:
    """Per label, only the settings whose values differ between the labels ("default"
    where a server left one at it, "?" where a run did not record its settings)."""
    found = [environment.of_run(r, {}) if r else None for r in runs]
    names = sorted({f for e in found if e for f in e.facts if f.startswith("setting ")})

    def value(env: environment.Environment | None, fact: str) -> str:
        if env is None:
            return "-"
        return env.facts.get(fact) or env.absent(fact) or "?"

    differing = [f for f in names if len({value(e, f) for e in found}) > 1]
    return [", ".join(f"{f.removeprefix('setting ')}={value(e, f)}" for f in differing) or "-" for e in found]


def _run_of(report: Report, label: str) -> StoredRun:
    runs = report.provenance[label]
    return runs[sorted(runs)[0]]


def _machine_rows(runs: list[StoredRun]) -> list[list[str]]:
    """The machine of each label's first run (by engine), one row per fact."""
    # For a remote target the facts below are the load generator's (where dbarena ran):
    # said in so many words, with what the user told of the server, or "unknown".
    local = [server_is_local(run) for run in runs]
    rows = [["machine described below"] + ["server and load generator (throwaway instance)" if here else
                                           "the load generator only: the server is a remote target"
                                           for here in local]]
    if not all(local):
        rows.append(["server cores / threads"] + [_server_cpu(run, here) for run, here in zip(runs, local)])
    together = [json_object(run.options.get("together")) for run in runs]
    if any(together):
        # fleet run --together: the machine below is the first of them (each the same kind).
        rows.append(["load generators"] + [_load_generators(t) if t else "1" for t in together])
    for title, key in _HOST_FIELDS:
        values = [run.host_facts.get(key) for run in runs]
        if any(v is not None for v in values):
            rows.append([title] + ["-" if v is None else str(v) for v in values])
    memory = [run.host_facts.get("memory_bytes") for run in runs]
    rows.append(["memory"] + [f"{m / 1024 ** 3:.1f} GiB" if isinstance(m, (int, float)) and m else "-"
                              for m in memory])
    return rows + _probe_rows(runs)


def _load_generators(together: JSONObject) -> str:
    hosts = together.get("hosts")
    return f"{together.get('load_generators')} at once: {', '.join(map(str, hosts if isinstance(hosts, list) else []))}"


# The host probe's figures (host/probe.py), as the runs' options hold them.
_PROBE_FIELDS = (
    ("probe: CPU events/s", "cpu_events_per_s", "{:,.0f}"),
    ("probe: CPU best second", "cpu_best_events_per_s", "{:,.0f}"),
    ("probe: memory MiB/s", "memory_mib_per_s", "{:,.0f}"),
    ("probe: memory best second", "memory_best_mib_per_s", "{:,.0f}"),
    ("probe: fsync p99 ms", "fsync_p99_ms", "{:.2f}"),
)


def _probe_rows(runs: list[StoredRun]) -> list[list[str]]:
    """The host probe before each label's study, and a fleet's flag of a host far from
    its kind (stats/outliers.py); no rows when no run was probed."""
    probes = [json_object(run.options.get("probe")) for run in runs]
    if not any(probes):
        return []
    rows = [[title] + ["-" if p.get(key) is None else fmt.format(p[key]) for p in probes]
            for title, key, fmt in _PROBE_FIELDS]
    flags = [run.options.get("probe_outlier") for run in runs]
    if any(flags):
        rows.append(["probe: far from its kind"] + [str(f) if f else "no" for f in flags])
    return rows


def _server_cpu(run: StoredRun, here: bool) -> str:
    if here:
        return "as below"
    facts = run.target_facts
    cores, threads = facts.get("server_physical_cores"), facts.get("server_hardware_threads")
    if cores is None and threads is None:
        return "unknown (run --server-cores/--server-threads say it)"
    return f"{cores or '-'} cores / {threads or '-'} hardware threads (as given)"


def _engine_rows(engine: str, runs: list[StoredRun | None]) -> list[list[str]]:
    """An engine's rows: a cell per label, from its run of that engine ("-" without one)."""
    cells: tuple[tuple[str, Callable[[StoredRun], str]], ...] = (
        ("server", lambda r: str(r.target_facts.get("version_string") or r.server_version or "-")),
        ("target", lambda r: r.target),
        ("data checksums", lambda r: str(r.target_facts.get("data_checksums", "-"))),
        ("data directory", _data_dir),
        ("settings", _settings),
        ("tools", lambda r: ", ".join(_tool(k, v) for k, v in sorted(r.tool_versions.items()))),
        ("price per hour", lambda r: "-" if r.price_per_hour is None else
         _money(r.price_per_hour, r.currency or "USD")),
    )
    return [[f"{engine}: {title}"] + [cell(r) if r else "-" for r in runs] for title, cell in cells]


def _data_dir(run: StoredRun) -> str:
    d = json_object(run.options.get("data_dir"))
    if not d:
        return "-"
    return f"{d.get('path')}: {d.get('fs', '?')} on {d.get('device', '?')} ({d.get('mount_options', '?')})"


def _settings(run: StoredRun) -> str:
    facts = run.target_facts
    variables = json_object(facts.get("non_default_settings") or facts.get("key_variables"))
    # A throwaway instance's own port and directories explain nothing (stats/environment.py).
    return ", ".join(f"{k}={v}" for k, v in sorted(variables.items())
                     if k.lower() not in environment.PER_INSTANCE) or "-"
