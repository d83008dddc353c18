"""What a report's level row shows of a closed-loop group's ok repeats besides its
summary (records.LevelMeans): each figure's mean over them, the TPC-C-like workload's
own figures, and the bound they had. Made from the points where a view reads them
(report/data.py), and kept with a group's summary in the store (analysis.own_summaries)
where a view reads those instead: one derivation for both."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from dbarena.model import TPCC_KINDS
from dbarena.records import JSON, LevelMeans, LevelSummary, Summarised, json_object
from dbarena.stats import bound as point_bound

__all__ = ["of_group"]


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _number(value: JSON) -> float | None:
    """A figure of a point's details (decoded JSON): a number, else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def of_group(summary: LevelSummary, ok: Sequence[Summarised]) -> LevelMeans:
    """The means of a group's ok points (`ok`, in the points' order) its level row shows,
    given the group's summary (which says what its figure is)."""
    tps = summary.mean if summary.metric == "tps" else None
    tpm, mix, latency, rollbacks = _tpcc_figures(ok)
    return LevelMeans(
        seconds=_mean(m.run_avg_s for m in ok) if summary.metric != "tps" else None,
        printed_tps=_mean(m.tps for m in ok) if tps is not None else None,
        tpm_new_order=tpm, tpcc_mix_pct=mix, tpcc_latency_ms=latency, rollbacks=rollbacks,
        cpu_busy_pct=_mean(m.cpu_busy_pct for m in ok), cpu_iowait_pct=_mean(m.cpu_iowait_pct for m in ok),
        server_cpu=_mean(m.server_cpu for m in ok), loadgen_cpu=_mean(m.loadgen_cpu for m in ok),
        bound=point_bound.of_group(m.bound for m in ok),  # each point's, from the server's view
        bound_kind=point_bound.most_frequent(m.bound for m in ok),
        qps=_mean(m.qps for m in ok),
        # Transactions, queries and time of a point, means over its ok repeats: the time
        # a run of mysqlslap's queries took where there is no throughput.
        transactions=_mean(m.transactions for m in ok), queries=_mean(m.queries for m in ok),
        time_s=_mean(m.duration_s if tps is not None else m.run_avg_s for m in ok),
    )


def _tpcc_figures(ok: Sequence[Summarised]) -> tuple[float | None, dict[str, float | None] | None,
                                                     dict[str, float | None] | None, float | None]:
    """The TPC-C-like workload's own figures, means over repeats: New-Order transactions
    committed per minute (the tpmC-like figure), the mix of transaction types (% of
    all), each type's average latency and the rollbacks; None for other workloads."""
    details = [d for m in ok if (d := m.details).get("tpm_new_order") is not None]
    if not details:
        return None, None, None, None
    per_type = [json_object(d.get("per_type")) for d in details]
    found = {k for types in per_type for k in types}
    kinds = [k for k in TPCC_KINDS if k in found] + sorted(found - set(TPCC_KINDS))  # the specification's order

    def of_type(kind: str, figure: str) -> float | None:
        return _mean(_number(json_object(types.get(kind)).get(figure)) for types in per_type)

    return (_mean(_number(d["tpm_new_order"]) for d in details), {k: of_type(k, "share_pct") for k in kinds},
            {k: of_type(k, "latency_avg_ms") for k in kinds}, _mean(_number(d.get("rollbacks")) for d in details))
