"""The figures of one label x engine x workload x threads, over its repeats (a report's
level row, LevelRow), and the hardware of each label's server they are divided by."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Iterable
from typing import TypedDict

from dbarena.records import JSON, JSONObject, LevelMeans, LevelSummary, MeanEstimate, StoredRun, json_object
from dbarena.stats.price import Price

__all__ = ["LevelRow", "Hardware", "PUBLIC_FIELDS", "CAPACITY_FIELDS", "level_row", "hardware", "server_is_local"]


def _number(value: JSON) -> float | None:
    """A figure of a point's details (decoded JSON): a number, else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _count(value: JSON) -> int | None:
    """A count of cores or threads from a run's facts (decoded JSON): an integer, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# The row as the report's CSV and JSON export it, in their order (then its warnings and
# its figures over repeats: LevelRow.as_json).
PUBLIC_FIELDS = (
    "label", "engine", "workload", "threads", "metric", "n", "failed", "tps", "tps_ci_low", "tps_ci_high",
    "printed_tps", "qps", "seconds", "tpm_new_order", "transactions", "queries", "time_s", "latency_avg_ms", "latency_p50_ms", "latency_p90_ms", "latency_p95_ms",
    "latency_p99_ms", "latency_p999_ms", "latency_max_ms", "latency_pooled", "price", "currency", "price_per_hour",
    "price_per_month", "price_per_100_tps", "price_per_run", "cpu_busy_pct", "cpu_iowait_pct", "server_cpu",
    "loadgen_cpu",
    "tps_per_dollar_hour", "physical_cores", "hardware_threads", "tps_per_core", "tps_per_thread",
    "scaling_efficiency", "ratio_to_baseline", "ratio_ci_low", "ratio_ci_high", "verdict", "reason",
    "bound",
)
# --slo (docs/capacity.md): a closed-loop level whose search found a capacity at a latency
# objective has these too, after the public fields (a row without one: as before --slo).
CAPACITY_FIELDS = ("slo", "capacity_tps", "capacity_ci_low", "capacity_ci_high", "price_per_1000_tps_at_slo",
                   "capacity_per_core", "capacity_per_thread")


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelRow:
    """The figures of one label x engine x workload x threads over its repeats, as the
    report's tables, charts and exports show them. The comparison fields (against one
    thread of its series and against the baseline's row at its level) are None until
    report.data compares the rows (dataclasses.replace)."""

    label: str
    engine: str
    workload: str
    threads: int
    # Each tool's own figure: "seconds" for mysqlslap (lower is better), else the
    # summary's metric; `value` is that figure.
    metric: str
    seconds: float | None
    # The figure the tool printed (mean over repeats) beside dbarena's steady-state mean.
    printed_tps: float | None
    # The TPC-C-like workload's own figures (None for other workloads): tpmC-like, the
    # mix of transaction types (% of all) and each type's average latency.
    tpm_new_order: float | None
    tpcc_mix_pct: dict[str, float | None] | None
    tpcc_latency_ms: dict[str, float | None] | None
    rollbacks: float | None
    # analysis.SYSTEM_FIELDS, means over the ok repeats.
    cpu_busy_pct: float | None
    cpu_iowait_pct: float | None
    server_cpu: float | None
    loadgen_cpu: float | None
    bound: str | None  # each point's, from the server's view (bound.of_group)
    bound_kind: str | None  # the most frequent of them
    n: int
    failed: int
    tps: float | None
    tps_ci_low: float | None
    tps_ci_high: float | None
    qps: float | None
    value: float | None
    transactions: float | None
    queries: float | None
    time_s: float | None
    latency_p50_ms: float | None
    latency_p90_ms: float | None
    latency_p95_ms: float | None
    latency_p99_ms: float | None
    latency_p999_ms: float | None
    latency_max_ms: float | None
    latency_avg_ms: float | None
    latency_pooled: str | None
    over_repeats: dict[str, JSONObject]  # figure -> repeats.OverRepeats.as_dict
    price_per_hour: float | None
    currency: str | None
    price_per_month: float | None
    price: str | None  # the price as shown (Price.shown)
    price_per_100_tps: float | None
    price_per_run: float | None  # mysqlslap: what one run of its queries costs
    tps_per_dollar_hour: float | None
    physical_cores: int | None
    hardware_threads: int | None
    tps_per_core: float | None
    tps_per_thread: float | None
    # Against one thread of its series, and against the baseline (report.data).
    scaling_efficiency: float | None = None
    ratio_to_baseline: float | None = None
    ratio_ci_low: float | None = None
    ratio_ci_high: float | None = None
    verdict: str | None = None
    reason: str | None = None
    verdict_text: str | None = None
    interval: str | None
    warnings: tuple[str, ...]  # the codes of the summary's warnings
    # --slo: the objective its search was for (Objective.text, "p99 <= 5 ms"), the capacity
    # there (the mean over sessions, its 95 % interval between them), what 1,000 TPS at the
    # objective cost an hour (hourly price / (capacity / 1,000): price_per_100_tps's
    # counterpart within the objective), and the capacity per physical core and hardware
    # thread of the label's server. None without a search.
    slo: str | None = None
    capacity_tps: float | None = None
    capacity_ci_low: float | None = None
    capacity_ci_high: float | None = None
    price_per_1000_tps_at_slo: float | None = None
    capacity_per_core: float | None = None
    capacity_per_thread: float | None = None
    # What one transaction cost (stats/efficiency.py: server CPU us, context switches, KB
    # read and written, WAL or redo bytes, buffer reads ...), each figure's mean over the
    # ok repeats that have it (LevelSummary.efficiency); exported only where known.
    efficiency: JSONObject | None = None
    # Not exported: what comparisons use (the summary's estimate, configuration, variant
    # and the label its points' series had as stored: Summarised.series_label).
    estimate: MeanEstimate | None
    config: JSONObject
    variant: str
    series_label: str

    def as_json(self) -> JSONObject:
        """The row as the report's JSON (and, flattened, CSV) exports it."""
        out: JSONObject = {name: getattr(self, name) for name in PUBLIC_FIELDS}
        if self.slo is not None:
            out.update({name: getattr(self, name) for name in CAPACITY_FIELDS})
        out["warnings"] = ";".join(self.warnings)
        # Every figure over the repeats, labelled (stats/repeats.py); CSV flattens it.
        out["over_repeats"] = {figure: figures for figure, figures in self.over_repeats.items()}
        if self.efficiency:
            out["efficiency"] = dict(self.efficiency)
        return out

    def figure(self, name: str) -> float | None:
        """One of its figures by name, where a chart or table picks the figure at run
        time (the section's metric, a latency percentile)."""
        value = getattr(self, name)
        if value is not None and not isinstance(value, (int, float)):
            raise TypeError(f"{name} is not a figure of a level row")
        return value


# Set by report.data, against one thread and against the baseline.
COMPARISON_FIELDS = ("scaling_efficiency", "ratio_to_baseline", "ratio_ci_low", "ratio_ci_high", "verdict",
                     "reason", "verdict_text")


@dataclass(frozen=True, slots=True)
class Hardware:
    """The cores and hardware threads of a label's server (None: not known)."""

    physical_cores: int | None = None
    hardware_threads: int | None = None


def server_is_local(run: StoredRun) -> bool:
    """Did the server run on the measured host (a throwaway instance)?"""
    options = run.options
    if "targets" in options:  # engine -> the URL given (run/provenance.py)
        return run.engine not in json_object(options["targets"])
    return options.get("target", "throwaway") == "throwaway"


def hardware(met: Iterable[tuple[str, int]], runs_by_id: dict[int, StoredRun]) -> dict[str, Hardware]:
    """Hardware of each label's server, from its runs (a label is one machine): the
    measured host for a throwaway instance, what --server-cores/--server-threads said
    for a remote target. `met`: each (label, run) once, in the order the label's points
    meet its runs (the first run that knows its hardware gives it)."""
    hardware: dict[str, Hardware] = {}
    for label, run_id in met:
        if label not in hardware and (found := _server_hardware(runs_by_id[run_id])) is not None:
            hardware[label] = found
    return hardware


def _server_hardware(run: StoredRun) -> Hardware | None:
    """The cores and hardware threads of one run's server; None when unknown (a remote
    target the run was told nothing about)."""
    placed = run.options.get("cpus")
    if placed and server_is_local(run):
        # [cpus]: the cores and threads the variant's server was confined to.
        confined = json_object(placed)
        return Hardware(_count(confined.get("server_cores")), _count(confined.get("server_threads")))
    if server_is_local(run):
        facts = run.host_facts
        # What the run could use (taskset, cpuset, quota), else the machine's.
        return Hardware(_count(facts.get("usable_physical_cores") or facts.get("physical_cores")),
                        _count(facts.get("effective_hardware_threads") or facts.get("hardware_threads")))
    if run.target_facts.get("server_physical_cores") or run.target_facts.get("server_hardware_threads"):
        facts = run.target_facts
        return Hardware(_count(facts.get("server_physical_cores")), _count(facts.get("server_hardware_threads")))
    return None


def level_row(key: tuple[str, str, str, int], summary: LevelSummary, means: LevelMeans,
              label_price: Price | None, hw: Hardware) -> LevelRow:
    """The figures of one label x engine x workload x threads, over its repeats: its
    summary's, and the means of its ok points (stats/levelmeans.of_group)."""
    label, engine, workload, threads = key
    tps = summary.mean if summary.metric == "tps" else None
    seconds = means.seconds
    # Each tool's own figure: mysqlslap's is the seconds it took to run its queries
    # (lower is better), as study A publishes it; the others' their throughput.
    metric = "seconds" if seconds is not None else summary.metric
    return LevelRow(
        label=label, engine=engine, workload=workload, threads=threads, metric=metric, seconds=seconds,
        printed_tps=means.printed_tps, tpm_new_order=means.tpm_new_order, tpcc_mix_pct=means.tpcc_mix_pct,
        tpcc_latency_ms=means.tpcc_latency_ms, rollbacks=means.rollbacks,
        cpu_busy_pct=means.cpu_busy_pct, cpu_iowait_pct=means.cpu_iowait_pct,
        server_cpu=means.server_cpu, loadgen_cpu=means.loadgen_cpu,
        bound=means.bound, bound_kind=means.bound_kind,
        n=summary.n, failed=summary.failed,
        tps=tps, **_tps_interval(summary, tps),
        qps=means.qps, value=seconds if metric == "seconds" else summary.mean,
        transactions=means.transactions, queries=means.queries, time_s=means.time_s,
        latency_p50_ms=summary.latency_p50_ms, latency_p90_ms=summary.latency_p90_ms,
        latency_p95_ms=summary.latency_p95_ms, latency_p99_ms=summary.latency_p99_ms,
        latency_p999_ms=summary.latency_p999_ms, latency_max_ms=summary.latency_max_ms,
        latency_avg_ms=summary.latency_avg_ms, latency_pooled=summary.latency_pooled,
        over_repeats=summary.over_repeats,
        **_price_figures(label_price, tps, seconds),
        **_per_hardware(tps, hw),
        interval=summary.interval,
        warnings=tuple(w["code"] for w in summary.warnings),
        estimate=summary.estimate, config=summary.config or {}, variant=summary.variant,
        series_label=summary.series_label,
        **_capacity_figures(summary.capacity, label_price, hw),
        efficiency=dict(summary.efficiency) if summary.efficiency else None,
    )


class _TpsInterval(TypedDict):
    tps_ci_low: float | None
    tps_ci_high: float | None


def _tps_interval(summary: LevelSummary, tps: float | None) -> _TpsInterval:
    """The level's throughput interval, where its figure is a throughput."""
    if tps is None:
        return {"tps_ci_low": None, "tps_ci_high": None}
    return {"tps_ci_low": summary.ci_low, "tps_ci_high": summary.ci_high}


class _PerHardware(TypedDict):
    physical_cores: int | None
    hardware_threads: int | None
    tps_per_core: float | None
    tps_per_thread: float | None


def _per_hardware(tps: float | None, hw: Hardware) -> _PerHardware:
    """The server's cores and hardware threads, and the throughput per each."""
    return {"physical_cores": hw.physical_cores, "hardware_threads": hw.hardware_threads,
            "tps_per_core": tps / hw.physical_cores if tps and hw.physical_cores else None,
            "tps_per_thread": tps / hw.hardware_threads if tps and hw.hardware_threads else None}


class _CapacityFigures(TypedDict):
    slo: str | None
    capacity_tps: float | None
    capacity_ci_low: float | None
    capacity_ci_high: float | None
    price_per_1000_tps_at_slo: float | None
    capacity_per_core: float | None
    capacity_per_thread: float | None


def _capacity_figures(found: JSONObject | None, label_price: Price | None, hw: Hardware) -> _CapacityFigures:
    """A closed-loop level's capacity at its objective (LevelSummary.capacity: --slo), its
    price per 1,000 TPS there and per core; all None without a search."""
    slo = found.get("slo") if found is not None else None
    if found is None or not isinstance(slo, str):
        return {"slo": None, "capacity_tps": None, "capacity_ci_low": None, "capacity_ci_high": None,
                "price_per_1000_tps_at_slo": None, "capacity_per_core": None, "capacity_per_thread": None}
    tps = _number(found.get("tps"))
    price = label_price.per_hour if label_price is not None else None
    return {
        "slo": slo, "capacity_tps": tps, "capacity_ci_low": _number(found.get("ci_low")),
        "capacity_ci_high": _number(found.get("ci_high")),
        "price_per_1000_tps_at_slo": price / (tps / 1000) if price and tps else None,
        "capacity_per_core": tps / hw.physical_cores if tps and hw.physical_cores else None,
        "capacity_per_thread": tps / hw.hardware_threads if tps and hw.hardware_threads else None,
    }


class _PriceFigures(TypedDict):
    price_per_hour: float | None
    currency: str | None
    price_per_month: float | None
    price: str | None
    price_per_100_tps: float | None
    price_per_run: float | None
    tps_per_dollar_hour: float | None


def _price_figures(label_price: Price | None, tps: float | None, seconds: float | None) -> _PriceFigures:
    if label_price is None:
        return {"price_per_hour": None, "currency": None, "price_per_month": None, "price": None,
                "price_per_100_tps": None, "price_per_run": None, "tps_per_dollar_hour": None}
    price = label_price.per_hour
    return {
        "price_per_hour": price, "currency": label_price.currency, "price_per_month": label_price.per_month,
        "price": label_price.shown(),
        "price_per_100_tps": price / (tps / 100) if price and tps else None,
        # mysqlslap: what one run of its queries costs at that hourly price.
        "price_per_run": price * seconds / 3600 if price and seconds else None,
        "tps_per_dollar_hour": tps / price if price and tps else None,
    }
