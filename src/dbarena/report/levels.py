"""The figures of one label x engine x workload x threads, over its repeats (a report's
level row), and the hardware of each label's server they are divided by."""

from __future__ import annotations

import statistics
from typing import Any

from dbarena.records import AnalysedPoint, LevelSummary, StoredRun, json_object
from dbarena.stats import analysis
from dbarena.stats import bound as point_bound
from dbarena.stats.price import Price
from dbarena.workloads import tpcc


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def _tpcc_figures(ok: list[AnalysedPoint]) -> dict:
    """The TPC-C-like workload's own figures, means over repeats: New-Order transactions
    committed per minute (the tpmC-like figure), the mix of transaction types (% of
    all) and each type's average latency; None for other workloads."""
    details: list[Any] = [d for m in ok if (d := m.details).get("tpm_new_order") is not None]
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


def server_is_local(run: StoredRun) -> bool:
    """Did the server run on the measured host (a throwaway instance)?"""
    options = run.options
    if "targets" in options:  # engine -> the URL given (provenance.py)
        return run.engine not in json_object(options["targets"])
    return options.get("target", "throwaway") == "throwaway"


def hardware(rows: list[AnalysedPoint], runs_by_id: dict[int, StoredRun]) -> dict[str, dict]:
    """Hardware of each label's server, from its runs (a label is one machine): the
    measured host for a throwaway instance, what --server-cores/--server-threads said
    for a remote target."""
    hardware: dict[str, dict] = {}
    # Each run once, in the rows' order (a run holds thousands of points of a big store).
    for label, run_id in dict.fromkeys((r.label, r.run_id) for r in rows):
        if label not in hardware and (found := _server_hardware(runs_by_id[run_id])) is not None:
            hardware[label] = found
    return hardware


def _server_hardware(run: StoredRun) -> dict | None:
    """The cores and hardware threads of one run's server; None when unknown (a remote
    target the run was told nothing about)."""
    placed = run.options.get("cpus")
    if placed and server_is_local(run):
        # [cpus]: the cores and threads the variant's server was confined to.
        placed = json_object(placed)
        return {"physical_cores": placed.get("server_cores"), "hardware_threads": placed.get("server_threads")}
    if server_is_local(run):
        facts = run.host_facts
        # What the run could use (taskset, cpuset, quota), else the machine's.
        return {"physical_cores": facts.get("usable_physical_cores") or facts.get("physical_cores"),
                "hardware_threads": facts.get("effective_hardware_threads") or facts.get("hardware_threads")}
    if run.target_facts.get("server_physical_cores") or run.target_facts.get("server_hardware_threads"):
        facts = run.target_facts
        return {"physical_cores": facts.get("server_physical_cores"),
                "hardware_threads": facts.get("server_hardware_threads")}
    return None


def level_row(key: tuple[str, str, str, int], summary: LevelSummary, members: list[AnalysedPoint],
              label_price: Price | None, hw: dict[str, Any]) -> dict[str, Any]:
    """The figures of one label x engine x workload x threads, over its repeats."""
    label, engine, workload, threads = key
    ok = [m for m in members if m.status == "ok"]
    tps = summary.mean if summary.metric == "tps" else None
    qps = _mean(m.qps for m in ok)
    seconds = _mean(m.run_avg_s for m in ok) if summary.metric != "tps" else None
    # Each tool's own figure: mysqlslap's is the seconds it took to run its queries
    # (lower is better), as study A publishes it; the others' their throughput.
    metric = "seconds" if seconds is not None else summary.metric
    value = seconds if metric == "seconds" else summary.mean
    return {
        "label": label, "engine": engine, "workload": workload, "threads": threads, "metric": metric,
        "seconds": seconds,
        # The figure the tool printed (mean over repeats) beside dbarena's steady-state mean.
        "printed_tps": _mean(m.tps for m in ok) if tps is not None else None,
        **_tpcc_figures(ok),
        **{k: _mean(getattr(m, k) for m in ok) for k in analysis.SYSTEM_FIELDS},
        "bound": point_bound.of_group(m.bound for m in ok),  # each point's, from the server's view
        "bound_kind": point_bound.most_frequent(m.bound for m in ok),
        "n": summary.n, "failed": summary.failed,
        **_tps_interval(summary, tps),
        "qps": qps, "value": value,
        **_amounts(ok, tps),
        **{k: getattr(summary, k) for k in (*analysis.LATENCY_FIELDS, "latency_avg_ms", "latency_pooled",
                                            "over_repeats")},
        **_price_figures(label_price, tps, seconds),
        **_per_core(hw, tps),
        **dict.fromkeys(COMPARISON_FIELDS), "interval": summary.interval,
        "warnings": [w["code"] for w in summary.warnings],
        "_estimate": summary.estimate, "_config": summary.config or {}, "_variant": summary.variant,
        "_label": summary.series_label,
    }


# Filled in by _compare, against one thread and against the baseline.
COMPARISON_FIELDS = ("scaling_efficiency", "ratio_to_baseline", "ratio_ci_low", "ratio_ci_high", "verdict",
                      "reason", "verdict_text")


def _tps_interval(summary: LevelSummary, tps: float | None) -> dict[str, float | None]:
    if tps is None:
        return {"tps": tps, "tps_ci_low": None, "tps_ci_high": None}
    return {"tps": tps, "tps_ci_low": summary.ci_low, "tps_ci_high": summary.ci_high}


def _amounts(ok: list[AnalysedPoint], tps: float | None) -> dict:
    """Transactions, queries and time of a point, means over its ok repeats: the time a
    run of mysqlslap's queries took where there is no throughput."""
    return {
        "transactions": _mean(m.transactions for m in ok),
        "queries": _mean(m.queries for m in ok),
        "time_s": _mean(m.duration_s for m in ok) if tps is not None else _mean(m.run_avg_s for m in ok),
    }


_PRICE_FIELDS = ("price_per_hour", "currency", "price_per_month", "price", "price_per_100_tps", "price_per_run",
                 "tps_per_dollar_hour")


def _price_figures(label_price: Price | None, tps: float | None, seconds: float | None) -> dict:
    if label_price is None:
        return dict.fromkeys(_PRICE_FIELDS)
    price = label_price.per_hour
    return {
        "price_per_hour": price, "currency": label_price.currency, "price_per_month": label_price.per_month,
        "price": label_price.shown(),
        "price_per_100_tps": price / (tps / 100) if price and tps else None,
        # mysqlslap: what one run of its queries costs at that hourly price.
        "price_per_run": price * seconds / 3600 if price and seconds else None,
        "tps_per_dollar_hour": tps / price if price and tps else None,
    }


def _per_core(hw: dict, tps: float | None) -> dict:
    return {
        "physical_cores": hw.get("physical_cores"), "hardware_threads": hw.get("hardware_threads"),
        "tps_per_core": tps / hw["physical_cores"] if tps and hw.get("physical_cores") else None,
        "tps_per_thread": tps / hw["hardware_threads"] if tps and hw.get("hardware_threads") else None,
    }
