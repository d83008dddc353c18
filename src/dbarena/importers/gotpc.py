"""go-tpc outputs -> points: a TPC-C run's tpmC as go-tpc printed it.

go-tpc (PingCAP's TPC-C and CH-benCHmark kit, `tiup bench`) prints a `[Current]` line per
transaction type every 10 s, and at the end a `[Summary]` line per type (`Takes(s)`,
`Count`, `TPM`, `Sum(ms)`, `Avg(ms)`, percentiles; `NEW_ORDER_ERR` and the like count the
failed ones) and `tpmC: 1577.2, tpmTotal: 3507.9, efficiency: 3066.2%` (before 2022
without tpmTotal; before v1.0 without the line: tpmC is then NEW_ORDER's summary TPM,
the figure go-tpc's line prints, tpcc/workload.go). A point holds the tpmC (details
`tpmC`, its metric: stats/metric.py, never compared with a TPS), tpmTotal and the
efficiency where printed, every type's summary (details `transaction_types`), the
transactions and the failed ones (the `_ERR` rows); its latency figures are NEW_ORDER's.

go-tpc prints neither its threads nor its warehouses: an echoed command line (`go-tpc
tpcc --warehouses 4 -T 16 run`) gives them; else the warehouses follow from the
efficiency, which go-tpc computes as 100 * tpmC / (12.86 * warehouses), where its printed
digits allow one whole number only, and the threads are stored as 1 with a note. A
CH-benCHmark run (`tiup bench ch`: `Finished: 50 OLTP workers, 1 OLAP workers`, and a
`[Summary] Q1 - Count: 11, Sum(ms): ..., Avg(ms): ...` line per TPC-H query) is the
workload go-tpc-ch: its TPC-C part's tpmC is the figure, the OLAP workers an option, and
each query's count and times are kept (details `tpch_queries`).

A file of interval reports only (no `[Summary]`) holds no figure for a whole run and is
refused in one line saying so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
import re
from typing import Any

from dbarena.importers import durations
from dbarena.importers.common import Command, ImportedPoint, ImportProblem, result_fields
from dbarena.importers.figures import seconds
from dbarena.model import Measurement, PointResult, PointSpec

TOOL = "go-tpc"
TPCC, CH = "go-tpc-tpcc", "go-tpc-ch"
# go-tpc's efficiency: 100 * tpmC / (SPEC_WAREHOUSE_FACTOR * warehouses) (tpcc/workload.go).
SPEC_WAREHOUSE_FACTOR = 12.86

_ROW = re.compile(r"^\[(?P<kind>Current|Summary)\] (?P<name>[A-Z][A-Z_0-9]*) +- (?P<figures>.*)$")
_FIGURE = re.compile(r"(?P<key>Takes\(s\)|Count|TPM|Sum\(ms\)|Avg\(ms\)|50th\(ms\)|90th\(ms\)|95th\(ms\)|99th\(ms\)|"
                     r"99\.9th\(ms\)|Max\(ms\)): (?P<value>[\d.]+)")
_KEYS = {"Takes(s)": "takes_s", "Count": "count", "TPM": "tpm", "Sum(ms)": "sum_ms", "Avg(ms)": "avg_ms",
         "50th(ms)": "p50_ms", "90th(ms)": "p90_ms", "95th(ms)": "p95_ms", "99th(ms)": "p99_ms",
         "99.9th(ms)": "p999_ms", "Max(ms)": "max_ms"}
_TPMC = re.compile(r"^tpmC: (?P<tpmc>[\d.]+)(?:, tpmTotal: (?P<total>[\d.]+))?, efficiency: (?P<eff>[\d.]+)%")
_WORKERS = re.compile(r"^Finished: (?P<oltp>\d+) OLTP workers, (?P<olap>\d+) OLAP workers")
_QUERY = re.compile(r"^Q\d+$")


def ends_run(line: str) -> bool:
    """Whether a line ends a run: its tpmC line."""
    return line.startswith("tpmC: ")


def continues_run(line: str) -> bool:
    """Whether a line after the tpmC line still belongs to its run: CH-benCHmark's
    TPC-H queries' summaries."""
    return not line.strip() or re.match(r"^\[Summary\] Q\d+ ", line) is not None


def _go_duration(value: str | None) -> int | None:
    """A Go duration as go-tpc's --time takes it (`10m`, `1h30m`, `600s`), in seconds."""
    if not value:
        return None
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", value)
    if parts is None or not any(parts.groups()):
        return None
    h, m, s = (int(g or 0) for g in parts.groups())
    return h * 3600 + m * 60 + s


def warehouses_of(tpmc: float, efficiency_pct: float) -> int | None:
    """The warehouses a run's printed tpmC and efficiency (one decimal each) imply: the
    one whole number within their rounding, or None where several are (or none)."""
    low_eff, high_eff = efficiency_pct - 0.05, efficiency_pct + 0.05
    if low_eff <= 0:
        return None
    low = 100 * max(tpmc - 0.05, 0) / (SPEC_WAREHOUSE_FACTOR * high_eff)
    high = 100 * (tpmc + 0.05) / (SPEC_WAREHOUSE_FACTOR * low_eff)
    candidates = range(max(1, math.ceil(low)), math.floor(high) + 1)
    return candidates[0] if len(candidates) == 1 else None


@dataclass
class _Seen:
    """What one run's lines hold: summary rows by transaction type, TPC-H queries' rows,
    the tpmC line and the CH-benCHmark workers line."""

    summary: dict[str, dict[str, Any]] = field(default_factory=dict)
    queries: dict[str, dict[str, Any]] = field(default_factory=dict)
    tpmc_line: re.Match[str] | None = None
    workers: re.Match[str] | None = None


def _measurement(seen: _Seen, tpmc: float, efficiency: float | None) -> Measurement:
    """The run's figures: transactions and failures counted over the summary's rows, the
    latencies NEW_ORDER's (the transaction tpmC counts), the rest in details."""
    summary, new_order = seen.summary, seen.summary.get("NEW_ORDER", {})
    ok_rows = {k: v for k, v in summary.items() if not k.endswith("_ERR")}
    errors = {k: v for k, v in summary.items() if k.endswith("_ERR")}
    details: dict[str, Any] = {"tpmC": tpmc, "transaction_types": summary}
    if seen.tpmc_line is not None and seen.tpmc_line["total"] is not None:
        details["tpmTotal"] = float(seen.tpmc_line["total"])
    if efficiency is not None:
        details["efficiency_pct"] = efficiency
    if seen.queries:
        details["tpch_queries"] = seen.queries
    return Measurement(
        transactions=sum(int(v.get("count", 0)) for v in ok_rows.values()) or None,
        failed_transactions=sum(int(v.get("count", 0)) for v in errors.values()) if summary else None,
        latency_avg_ms=new_order.get("avg_ms"), latency_p50_ms=new_order.get("p50_ms"),
        latency_p90_ms=new_order.get("p90_ms"), latency_p95_ms=new_order.get("p95_ms"),
        latency_p99_ms=new_order.get("p99_ms"), latency_p999_ms=new_order.get("p999_ms"),
        latency_max_ms=new_order.get("max_ms"), details=details)


class Reader:
    """A file's go-tpc runs, one at a time; what it saw, for a file of none."""

    def __init__(self, name: str, label: str, engine: str | None, workload: str | None):
        self.name, self.label, self.engine, self.workload = name, label, engine, workload
        self.intervals = 0  # [Current] lines seen
        self.queries = 0  # of them, single TPC-H queries'

    def nothing(self) -> str:
        """Why a file read as go-tpc's holds no point."""
        if self.queries:
            return (f"go-tpc CH-benCHmark interval reports only ({self.intervals} [Current] line(s), TPC-H queries' "
                    "times among them): no [Summary] and no tpmC line, so no single figure for the run")
        if self.intervals:
            return (f"go-tpc interval reports only ({self.intervals} [Current] line(s)): no [Summary] and no tpmC "
                    "line, so no figure for the whole run")
        return "no go-tpc result found (no [Summary] lines and no 'tpmC: ...' line)"

    def read_run(self, lines: list[str], first: int, args: list[str] | None) -> list[ImportedPoint]:
        """The point of a run (lines from line `first` on), none where they hold no summary."""
        last = first + len(lines) - 1
        seen = self._scan(lines)
        if not seen.summary and seen.tpmc_line is None:
            return []
        cmd = Command(args, self.name, first)
        notes: list[str] = []
        tpmc = self._tpmc(seen, notes, first, last)
        efficiency = float(seen.tpmc_line["eff"]) if seen.tpmc_line is not None else None
        spec, duration = self._spec(seen, cmd, tpmc, efficiency, notes, first, last)
        measurement = _measurement(seen, tpmc, efficiency)
        return [ImportedPoint(result=PointResult(spec=spec, status="ok", measurement=measurement,
                                                 **result_fields(args, TOOL, "\n".join(lines) + "\n")),
                              label=self.label, first_line=first, last_line=last, tool=TOOL,
                              note="; ".join(notes) or None, duration=duration)]

    def _scan(self, lines: list[str]) -> _Seen:
        """A run's summary rows, TPC-H queries' rows, tpmC and workers lines; its interval
        reports counted (for a file of no summary: nothing())."""
        seen = _Seen()
        for line in lines:
            if (m := _ROW.match(line)) is not None:
                figures = {_KEYS[f["key"]]: float(f["value"]) for f in _FIGURE.finditer(m["figures"])}
                if "count" in figures:
                    figures["count"] = int(figures["count"])
                if m["kind"] == "Current":
                    self.intervals += 1
                    self.queries += bool(_QUERY.match(m["name"]))
                elif _QUERY.match(m["name"]):
                    seen.queries[m["name"]] = figures
                else:
                    seen.summary[m["name"]] = figures
            elif (m := _TPMC.match(line)) is not None:
                seen.tpmc_line = m
            elif (m := _WORKERS.match(line)) is not None:
                seen.workers = m
        return seen

    def _tpmc(self, seen: _Seen, notes: list[str], first: int, last: int) -> float:
        """The run's tpmC: its tpmC line's, else NEW_ORDER's summary TPM (said in a note)."""
        if seen.tpmc_line is not None:
            return float(seen.tpmc_line["tpmc"])
        tpmc = seen.summary.get("NEW_ORDER", {}).get("tpm")
        if tpmc is None:
            raise ImportProblem(self.name, first, f"the go-tpc run on lines {first}-{last} has no NEW_ORDER summary "
                                                  "and no tpmC line: no tpmC")
        notes.append("go-tpc printed no tpmC line: tpmC is NEW_ORDER's summary TPM, the figure that line prints")
        return float(tpmc)

    def _spec(self, seen: _Seen, cmd: Command, tpmc: float, efficiency: float | None, notes: list[str], first: int,
              last: int) -> tuple[PointSpec, durations.Duration | None]:
        """The point's configuration (engine, workload, threads, warehouses) and duration."""
        engine = self._engine(cmd, first, last)
        ch = bool(seen.queries) or seen.workers is not None or bool(cmd.args and "ch" in cmd.args[:1])
        threads = cmd.number("-T", "--threads") or (int(seen.workers["oltp"]) if seen.workers is not None else None)
        if threads is None:
            notes.append("go-tpc prints no thread count: stored as 1 thread (echo its command line before the output "
                         "to give it)")
        warehouses = cmd.number("--warehouses")
        if warehouses is None and efficiency is not None:
            warehouses = warehouses_of(tpmc, efficiency)
            if warehouses is not None:
                notes.append("go-tpc prints no warehouse count: taken from its efficiency (100 * tpmC / (12.86 * "
                             "warehouses))")
        takes = max((row["takes_s"] for row in seen.summary.values() if "takes_s" in row), default=None)
        measured = seconds(takes, self.name, first, "the summary's Takes(s)") if takes is not None else None
        duration = durations.asked(None, _go_duration(cmd.value("--time")), measured)
        options = (("olap_workers", seen.workers["olap"]),) if seen.workers is not None else ()
        spec = PointSpec(engine=engine, workload=self.workload or (CH if ch else TPCC), threads=threads or 1,
                         clients=threads or 1, duration_s=duration.asked_s if duration else 0,
                         params=(("scale", warehouses),) if warehouses else (), options=options)
        return spec, duration

    def _engine(self, cmd: Command, first: int, last: int) -> str:
        """The engine: the command line's driver (go-tpc's default is mysql), else --engine."""
        if cmd.args is not None:
            driver = cmd.value("-d", "--driver") or "mysql"
            return "postgres" if driver in ("postgres", "pg", "postgresql") else "mysql"
        if self.engine is None:
            raise ImportProblem(self.name, first, f"the go-tpc run on lines {first}-{last} does not say which database "
                                                  "it drove (go-tpc prints no driver without its command line): pass "
                                                  "--engine")
        return self.engine
