"""Records for unit tests of the views: an `AnalysedPoint` as analysis.load makes one,
a `LevelComparison` as analysis.compare does, a `StoredRun` as the store reads one, a
report's `LevelRow` as report/levels.py does,
every field at a plain default, the test's own values on top. A test states only what it
is about; the record's types still hold."""

from __future__ import annotations

from typing import Any

from dataclasses import fields as dataclass_fields

from dbarena.records import AnalysedPoint, LevelComparison, StoredRun
from dbarena.report.levels import LevelRow

_DEFAULTS: dict[str, Any] = {
    "point_id": 1, "run_id": 1, "label": "a", "host": "box", "target": "postgresql://dbarena@127.0.0.1:1/dbarena",
    "server_version": "17.2", "engine": "postgres", "workload": "pgbench-tpcb", "threads": 1, "clients": 1,
    "duration_s": 60, "repeat": 0, "scale": 1, "params": {}, "status": "ok", "error": None,
    "started_at": "2026-11-01T00:00:00+00:00", "ended_at": "2026-11-01T00:01:00+00:00", "source": None,
    "phase": "measured", "details": {}, "variant": "", "options": {}, "warmup_s": 0, "config": None,
    "config_key": None, "study": None, "histogram": False,
    **dict.fromkeys(("tps", "transactions", "qps", "queries", "failed_transactions", "retried_transactions",
                     "retries", "errors", "reconnects", "latency_avg_ms", "latency_stddev_ms", "latency_min_ms",
                     "latency_max_ms", "latency_p50_ms", "latency_p95_ms", "latency_p99_ms",
                     "initial_connection_ms", "run_avg_s", "run_min_s", "run_max_s", "latency_p90_ms",
                     "latency_p999_ms")),
    **dict.fromkeys(("cpu_busy_pct", "cpu_iowait_pct", "cv", "loadgen_cpu", "neighbour_cpu", "server_cpu",
                     "steady_start_s", "steady_tps", "steal_cpu", "tps_ci_high", "tps_ci_low", "trend_pct", "bound",
                     "bound_evidence", "server_figures")),
    "dips_s": [], "metric": "tps", "samples": 0, "warnings": [], "lower_is_better": False, "adaptive": False,
    "hardware_threads_usable": 2, "machine_threads": 2,
}


def point(**fields: Any) -> AnalysedPoint:
    """A point with these fields (`series_label` follows `label` unless given)."""
    values = {**_DEFAULTS, **fields}
    values.setdefault("series_label", values["label"])
    return AnalysedPoint(**values)


_COMPARISON: dict[str, Any] = {
    "engine": "postgres", "workload": "pgbench-tpcb", "threads": 1, "metric": "tps", "lower_is_better": False,
    "a": "a", "b": "b", "by": "label", "label": None, "a_mean": None, "a_n": 3, "b_mean": None, "b_n": 3, "a_sessions": 3, "b_sessions": 3,
    "ratio": None, "ratio_ci_low": None, "ratio_ci_high": None, "p_value": None, "significant": False,
    "differs": [], "unverified": [], "verdict": None, "reason": None, "verdict_text": "", "log_se": None,
    "log_df": None,
}


def comparison(**fields: Any) -> LevelComparison:
    """A comparison row (of two labels at one level) with these fields."""
    return LevelComparison(**{**_COMPARISON, **fields})


_RUN_DEFAULTS: dict[str, Any] = {
    "id": 1, "label": "a", "host": "box", "engine": "postgres", "target": "postgresql://dbarena@127.0.0.1:1/dbarena",
    "server_version": "17.2", "tool_versions": {}, "options": {}, "host_facts": {}, "dbarena_version": None,
    "started_at": "2026-11-01T00:00:00+00:00", "ended_at": "2026-11-01T00:01:00+00:00", "status": "finished",
    "target_facts": {}, "price_per_hour": None, "study_sha256": None, "variant": "", "flavour": "postgresql",
    "currency": None, "invocation": None, "status_reason": None, "uuid": None, "host_fingerprint": None,
}


def run(**fields: Any) -> StoredRun:
    """A run with these fields."""
    return StoredRun(**{**_RUN_DEFAULTS, **fields})


_LEVEL_ROW: dict[str, Any] = {
    **{f.name: None for f in dataclass_fields(LevelRow)},
    "label": "a", "engine": "postgres", "workload": "pgbench-tpcb", "threads": 1, "metric": "tps", "n": 1,
    "failed": 0, "over_repeats": {}, "warnings": (), "config": {}, "variant": "",
}


def level_row(**fields: Any) -> LevelRow:
    """A report's level row with these fields (every other figure None; `series_label`
    follows `label` unless given)."""
    values = {**_LEVEL_ROW, **fields}
    values["series_label"] = values["series_label"] or values["label"]
    return LevelRow(**values)
