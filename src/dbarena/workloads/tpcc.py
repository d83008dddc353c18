"""tpcc-like: dbarena's TPC-C-like workload (tpcc_like.lua) run by sysbench.

Command lines and parsing are pure; `verify` runs the TPC-C consistency conditions
1 to 4 (specification clause 3.3.2) on a database connection after a run: a run that
corrupts data is not a benchmark result. Named "TPC-C-like", never "TPC-C": not
audited, no pricing, no keying or think time.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from dbarena.errors import DatabaseError, ParseError
from dbarena.interfaces import Client, ConsistencyCheck, DbApiConnection
from dbarena.model import TPCC_KINDS, Measurement, PointSpec, Sample, ToolParam
from dbarena.records import JSONObject
from dbarena.workloads import sysbench
from dbarena.workloads.base import ToolBase

TOOL = "tpcc-like"
BINARY = "sysbench"
# A warehouse is about 100 MB on disk with its indexes.
PARAMS: tuple[ToolParam, ...] = (ToolParam("warehouses", 1, "tpcc-like scale: warehouses (about 100 MB each)", quick=1,
                    bytes_per_unit=100_000_000),)
SCRIPT = Path(__file__).with_name("tpcc_like.lua")
KINDS = TPCC_KINDS
MIX = {"new_order": 45, "payment": 43, "order_status": 4, "delivery": 4, "stock_level": 4}

_THREAD_LINE = re.compile(
    r"^dbarena-tpcc thread=(?P<thread>\d+) rollbacks=(?P<rollbacks>\d+) (?P<kinds>(?:\w+=\d+:[\d.]+:[\d.]+ ?)+)$"
)
_KIND = re.compile(r"(?P<kind>\w+)=(?P<count>\d+):(?P<sum>[\d.]+):(?P<max>[\d.]+)")

# Clause 3.3.2: each query counts the rows (warehouses or districts) that violate the
# condition; 0 everywhere means consistent. Standard SQL, the same on both engines.
CONSISTENCY = {
    1: ("W_YTD = sum(D_YTD) of the warehouse's districts",
        "SELECT COUNT(*) FROM warehouse w WHERE w.w_ytd <> "
        "(SELECT SUM(d.d_ytd) FROM district d WHERE d.d_w_id = w.w_id)"),
    2: ("D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) in each district",
        "SELECT COUNT(*) FROM district d WHERE "
        "d.d_next_o_id - 1 <> (SELECT MAX(o.o_id) FROM orders o WHERE o.o_w_id = d.d_w_id AND o.o_d_id = d.d_id) "
        "OR d.d_next_o_id - 1 <> (SELECT MAX(n.no_o_id) FROM new_order n "
        "WHERE n.no_w_id = d.d_w_id AND n.no_d_id = d.d_id)"),
    3: ("max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER, per district",
        "SELECT COUNT(*) FROM (SELECT MAX(no_o_id) - MIN(no_o_id) + 1 AS span, COUNT(*) AS n FROM new_order "
        "GROUP BY no_w_id, no_d_id) t WHERE t.span <> t.n"),
    4: ("sum(O_OL_CNT) = rows in ORDER-LINE, per district",
        "SELECT COUNT(*) FROM (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS s FROM orders GROUP BY o_w_id, o_d_id) o "
        "JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS c FROM order_line GROUP BY ol_w_id, ol_d_id) l "
        "ON o.o_w_id = l.ol_w_id AND o.o_d_id = l.ol_d_id WHERE o.s <> l.c"),
}


@dataclass(frozen=True)
class KindTotals:
    """One transaction type's figures, summed over a run's threads."""

    count: int = 0
    sum_ms: float = 0.0  # of their latencies
    max_ms: float = 0.0


@dataclass(frozen=True)
class ThreadTotals:
    """The per-thread lines the script prints at the end of a run, summed."""

    threads: int
    rollbacks: int
    per_kind: dict[str, KindTotals]  # every one of KINDS


def parse_threads(stdout: str) -> ThreadTotals:
    """Sum the per-thread lines the script prints at the end of a run."""
    per_kind = {k: KindTotals() for k in KINDS}
    rollbacks = threads = 0
    for lineno, line in enumerate(stdout.splitlines(), start=1):
        if not line.startswith("dbarena-tpcc "):
            continue
        m = _THREAD_LINE.match(line.rstrip())
        if m is None:
            raise ParseError(TOOL, "unreadable per-thread line", lineno, line)
        threads += 1
        rollbacks += int(m["rollbacks"])
        for k in _KIND.finditer(m["kinds"]):
            if k["kind"] not in per_kind:
                raise ParseError(TOOL, f"unknown transaction type {k['kind']!r}", lineno, line)
            s = per_kind[k["kind"]]
            per_kind[k["kind"]] = KindTotals(count=s.count + int(k["count"]), sum_ms=s.sum_ms + float(k["sum"]),
                                             max_ms=max(s.max_ms, float(k["max"])))
    if threads == 0:
        raise ParseError(TOOL, "no 'dbarena-tpcc' per-thread lines (did the run finish?)")
    return ThreadTotals(threads=threads, rollbacks=rollbacks, per_kind=per_kind)


def read(stdout: str, stderr: str, spec: PointSpec | None = None) -> tuple[Measurement, tuple[Sample, ...]]:
    report = sysbench.parse(stdout, stderr)
    threads = parse_threads(stdout)
    total = sum(s.count for s in threads.per_kind.values())
    minutes = (report.total_time_s or 0) / 60
    per_type: JSONObject = {
        kind: {"count": s.count, "share_pct": 100 * s.count / total if total else None,
               "latency_avg_ms": s.sum_ms / s.count if s.count else None, "latency_max_ms": s.max_ms}
        for kind, s in threads.per_kind.items()
    }
    new_orders = threads.per_kind["new_order"].count - threads.rollbacks
    measurement = report.to_measurement()
    details: JSONObject = {
        **measurement.details,
        "per_type": per_type,
        "rollbacks": threads.rollbacks,
        # New-Order transactions committed per minute: the tpmC-like figure.
        "tpm_new_order": new_orders / minutes if minutes else None,
        "new_orders_committed": new_orders,
    }
    return replace(measurement, details=details), report.samples


class TpccLike(ToolBase):
    """The TPC-C-like driver, run by sysbench: its connection arguments, interval
    reports and histogram; a three-step load; the consistency checks after each point."""

    name = TOOL
    binary = BINARY
    open_loop_refusal: str | None = ("runs a mix of five transaction kinds, whose objective TPC-C states per "
                                      "kind (New-Order's 90th percentile): --slo searches one kind's rate (pgbench, "
                                      "sysbench) for now")
    params = PARAMS
    passthrough = True
    verifies = True
    reserved = {**sysbench.reserved_options(), "warehouses": "the dataset's warehouses",
                "tpcc_step": "dbarena's loading steps"}
    defaults = sysbench.Sysbench.defaults
    interval_option: str | None = sysbench.Sysbench.interval_option

    def secret_file(self, protocol: str, password: str) -> str | None:
        return sysbench.TOOL_IMPL.secret_file(protocol, password)

    def _base(self, client: Client, spec: PointSpec) -> list[str]:
        return [client.binary, str(SCRIPT), *sysbench.connection_args(client),
                f"--warehouses={spec.param('warehouses')}"]

    def prepare_argv(self, client: Client, spec: PointSpec) -> list[list[str]]:
        """Three steps: schema and items; warehouses loaded in parallel; indexes."""
        loaders = max(1, min(spec.param("warehouses"), os.cpu_count() or 1))
        return [
            [*self._base(client, spec), "--tpcc_step=schema", "--threads=1", "prepare"],
            [*self._base(client, spec), "--tpcc_step=load", f"--threads={loaders}", "prepare"],
            [*self._base(client, spec), "--tpcc_step=index", "--threads=1", "prepare"],
        ]

    def cleanup_argv(self, client: Client, spec: PointSpec) -> list[list[str]]:
        return [[*self._base(client, spec), "cleanup"]]

    def point_argv(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> list[str]:
        return [*self._base(client, spec), f"--threads={spec.threads}", f"--time={spec.duration_s}",
                "--histogram=on", *sysbench.option_args(spec, self.defaults), "run"]

    def read(self, stdout: str, stderr: str, spec: PointSpec | None) -> tuple[Measurement, tuple[Sample, ...]]:
        return read(stdout, stderr, spec)

    def read_samples(self, stdout: str, stderr: str) -> tuple[Sample, ...]:
        return sysbench.read_samples(stdout, stderr)

    def parse_progress_line(self, line: str, lineno: int | None = None) -> Sample | None:
        return sysbench.parse_progress_line(line, lineno)

    def verify(self, connection: DbApiConnection) -> dict[str, ConsistencyCheck]:
        return verify(connection)

    def estimate_prepare_s(self, spec: PointSpec) -> float:
        return 10 + 60 * spec.param("warehouses") / max(1, os.cpu_count() or 1)



def verify(connection: DbApiConnection) -> dict[str, ConsistencyCheck]:
    """Consistency conditions 1-4 on an open DB-API connection (psycopg or PyMySQL)."""
    results: dict[str, ConsistencyCheck] = {}
    for number, (what, query) in CONSISTENCY.items():
        cur = connection.cursor()
        try:
            cur.execute(query)
            row = cur.fetchone()
            if row is None:  # (COUNT(*) always returns its row)
                raise DatabaseError(f"consistency condition {number}: the query returned no row")
            violations = int(row[0])
        finally:
            cur.close()
        results[str(number)] = {"condition": what, "violations": violations, "ok": violations == 0}
    return results


TOOL_IMPL = TpccLike()
