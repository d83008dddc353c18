"""Stored points -> steady-state figures, summaries per point of the plan, comparisons.

Computed when asked, from what the store keeps verbatim (per-second series, system
samples), never stored as edited numbers: a better estimator re-reads old runs.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from dbarena import stats
from dbarena.store import Store

GROUP_KEY = ("label", "engine", "workload", "threads")


def _metric(row: dict) -> str:
    """The throughput figure of a point: tps, or qps for mysqlslap (no transactions)."""
    return "tps" if row.get("tps") is not None else "qps"


def analyse_point(row: dict, samples: list[dict], system: list[dict], hardware_threads: int) -> dict:
    """The steady-state fields of one stored point (added to its results row)."""
    out = {"metric": _metric(row), "steady_start_s": None, "steady_tps": None, "tps_ci_low": None,
           "tps_ci_high": None, "cv": None, "dips_s": [], "trend_pct": None, "warnings": []}
    if row["status"] != "ok":
        return out
    series = [s["tps"] for s in samples]
    flags: list[stats.Flag] = []
    if series and row.get("tps") is not None:
        steady = stats.steady_state([s["second"] for s in samples], series, row["duration_s"])
        out.update(steady_start_s=steady.steady_start_s, steady_tps=steady.mean, tps_ci_low=steady.ci_low,
                   tps_ci_high=steady.ci_high, cv=steady.cv, dips_s=list(steady.dips_s), trend_pct=steady.trend_pct)
        out["_steady"] = steady
        flags.extend(steady.flags)
    flags.extend(stats.loadgen_flags(system, row["threads"], hardware_threads))
    out["warnings"] = [f.as_dict() for f in flags]
    return out


def load(store: Store, *, run_id: int | None = None, labels: tuple[str, ...] = ()) -> list[dict]:
    """Stored points with their steady-state fields."""
    rows = store.points(run_id=run_id, labels=labels)
    threads_of_run: dict[int, int] = {}
    for row in rows:
        if row["run_id"] not in threads_of_run:
            facts = store.run(row["run_id"])["host_facts"]
            threads_of_run[row["run_id"]] = facts.get("hardware_threads") or 1
        row.update(analyse_point(row, store.samples(row["point_id"]), store.system_samples(row["point_id"]),
                                 threads_of_run[row["run_id"]]))
    return rows


def public(row: dict) -> dict:
    """A row without the in-memory helper objects (for JSON)."""
    return {k: v for k, v in row.items() if not k.startswith("_")}


def _value(row: dict) -> float | None:
    # The steady-state mean where a series exists (warm-up excluded), else the tool's figure.
    if row.get("steady_tps") is not None:
        return row["steady_tps"]
    return row.get(row["metric"])


def summaries(rows: Iterable[dict]) -> list[dict]:
    """One summary per (label, engine, workload, threads) over its repeats."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for row in rows:
        groups[tuple(row[k] for k in GROUP_KEY)].append(row)
    out = []
    for key, members in groups.items():
        ok = [m for m in members if m["status"] == "ok" and _value(m) is not None]
        values = [_value(m) for m in ok]
        single = ok[0].get("_steady") if len(ok) == 1 else None
        summary = stats.summarize(values, failed=len(members) - len(ok), single_run=single)
        # Point-level warnings that matter for the whole group (deduplicated by code).
        seen = {f.code.value for f in summary.flags}
        point_flags = []
        for m in ok:
            for w in m["warnings"]:
                if w["code"] not in seen:
                    seen.add(w["code"])
                    point_flags.append(w)
        out.append({
            **dict(zip(GROUP_KEY, key)),
            "metric": ok[0]["metric"] if ok else members[0]["metric"],
            "n": summary.n, "failed": summary.failed, "median": summary.median, "mean": summary.mean,
            "stdev": summary.stdev, "ci_low": summary.ci_low, "ci_high": summary.ci_high, "cv": summary.cv,
            "warnings": [f.as_dict() for f in summary.flags] + point_flags,
            "_estimate": summary.estimate,
        })
    return out


def compare_labels(rows: Iterable[dict], a: str, b: str) -> list[dict]:
    """b against a at every (engine, workload, threads) both have measured."""
    by_key: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for s in summaries(rows):
        by_key[(s["engine"], s["workload"], s["threads"])][s["label"]] = s
    out = []
    for (engine, workload, threads), sides in sorted(by_key.items()):
        if a not in sides or b not in sides:
            continue
        sa, sb = sides[a], sides[b]
        if sa["_estimate"] is None or sb["_estimate"] is None:
            continue
        c = stats.compare(sa["_estimate"], sb["_estimate"])
        out.append({
            "engine": engine, "workload": workload, "threads": threads, "metric": sa["metric"],
            "a": a, "b": b, "a_mean": sa["mean"], "b_mean": sb["mean"], "a_n": sa["n"], "b_n": sb["n"],
            "ratio": c.ratio, "ratio_ci_low": c.ci_low, "ratio_ci_high": c.ci_high, "p_value": c.p_value,
            "significant": c.significant, "verdict": c.verdict,
        })
    return out
