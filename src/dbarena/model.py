"""Frozen records passed between planning, running, storing and reporting. No I/O here.

Units are in the field names (`_ms`, `_s`); times are UTC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Sample:
    """One interval report of a benchmark tool (pgbench -P 1: one per second).

    `second` is the tool's elapsed time at the end of the interval. A latency the
    tool printed as NaN (an interval without a finished transaction) is None.
    """

    second: float
    tps: float
    latency_ms: float | None = None
    latency_stddev_ms: float | None = None
    failed: int | None = None
    lag_ms: float | None = None
    skipped: int | None = None
    retried: int | None = None
    retries: int | None = None


@dataclass(frozen=True)
class Measurement:
    """The figures of one finished point, tool-independent.

    A figure the tool (or its version) does not print is None, never 0.
    `details` keeps tool-specific facts (transaction type, query mode ...).
    """

    tps: float
    transactions: int
    failed_transactions: int | None = None
    retried_transactions: int | None = None
    retries: int | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    initial_connection_ms: float | None = None
    details: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PointSpec:
    """One point of a sweep: which workload, at which concurrency, for how long."""

    engine: str
    workload: str
    threads: int
    clients: int
    duration_s: int
    scale: int


@dataclass(frozen=True)
class PointResult:
    """What happened when a point ran. `measurement` is None when it failed."""

    spec: PointSpec
    status: str  # "ok" or "failed"
    started_at: datetime
    ended_at: datetime
    command: tuple[str, ...]
    exit_code: int | None
    stdout: str
    stderr: str
    measurement: Measurement | None = None
    samples: tuple[Sample, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class RunInfo:
    """One invocation of `dbarena run`, as stored (never holds a secret)."""

    label: str
    host: str
    engine: str
    target: str
    started_at: datetime
    server_version: str | None
    tool_versions: dict
    options: dict
    host_facts: dict
