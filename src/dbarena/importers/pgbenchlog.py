"""pgbench's log files (`-l`) -> a point: its latencies and its per-second series, as
dbarena's own runs read them (workloads/pgbench_log.py reads the per-transaction log).

- **Per-transaction log** (`client_id transaction_no time script_no time_epoch time_us
  [schedule_lag] [retries]`, one file per pgbench thread): every logged latency into an
  HDR histogram (its percentiles, exact mean, minimum and maximum), `skipped` (--rate
  with --latency-limit) and `failed` / `serialization` / `deadlock` (PostgreSQL 15 on)
  counted as outcomes, the transactions completed each second (time_epoch) as the
  series. With --sampling-rate only a share of the transactions is logged: the log does
  not say which, but each client numbers its transactions, so the share is the lines
  logged over the numbers they span; the counts and the series are the logged ones over
  that share (an estimate, said in the details and a note), the percentiles those of the
  sample. The point's clients are the client ids logged, its threads 1 (a file is one
  thread's log: give a run's files to `import --together` for the run); its duration the
  time the log spans, rounded as a measured time is (durations.py).
- **Aggregate log** (`--aggregate-interval`: `interval_start num_transactions
  sum_latency sum_latency_2 min_latency max_latency ...`): the series, one sample per
  interval (its transactions per second, mean and standard deviation), and over the
  whole log the transactions, the mean and pooled standard deviation, the minimum and
  maximum. An aggregate log keeps no transaction's own latency: no percentiles. Its
  interval is the step between its lines' starts. PostgreSQL 15 added the failures after
  the sixth column (one, or serialization and deadlock with --failures-detailed); those
  forms (7 or 8 columns) are read; of the others only the first six columns.

Neither log says what ran: the workload is `pgbench` unless --workload names it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from dbarena.errors import ParseError
from dbarena.importers import durations
from dbarena.importers.common import ImportedPoint, ImportProblem, parse_problem, result_fields
from dbarena.model import Measurement, PointResult, PointSpec, Sample
from dbarena.stats.latency import Latencies
from dbarena.workloads import pgbench_log

TOOL = "pgbench-log"
UNNAMED = "pgbench"
_OUTCOME_WORDS = ("skipped", "failed", "serialization", "deadlock")
_TRANSACTION = re.compile(r"\A(?:client_id transaction_no |\d+ \d+ (?:\d+|skipped|failed|serialization|deadlock) "
                          r"\d+ \d{9,} \d+(?: \d+){0,2}\n)")
_AGGREGATE = re.compile(r"\A\d{9,} \d+ \d+ \d+ \d+ \d+(?: \d+)*\n")


def looks_like(text: str) -> bool:
    """Whether a text starts as a pgbench log does."""
    return _TRANSACTION.match(text) is not None or _AGGREGATE.match(text) is not None


def read(name: str, parts: Iterable[str], label: str, workload: str | None) -> Iterator[ImportedPoint]:
    """The file's one point (a log is one run, or one thread's part of it)."""
    held = iter(parts)
    first = next(held, "")
    while first and not first.strip():
        first = next(held, "")
    lines_iter = _lines([first], held)
    if _AGGREGATE.match(first) and not _TRANSACTION.match(first):
        yield _aggregate(name, lines_iter, label, workload)
    else:
        yield _per_transaction(name, lines_iter, label, workload)


def _lines(*sources: Iterable[str]) -> Iterator[str]:
    for source in sources:
        for part in source:
            yield from part.splitlines()


def _per_transaction(name: str, lines: Iterator[str], label: str, workload: str | None) -> ImportedPoint:
    latencies = Latencies(source="pgbench log")
    per_second: Counter[int] = Counter()
    # client -> [lowest number, highest, distinct numbers logged, the last one]: pgbench
    # 15 numbers a skipped transaction, earlier ones log it under the next one's number.
    numbers: dict[str, list[int]] = {}
    columns = 0
    first_start: float | None = None
    last_end = 0.0
    n = 0
    block: list[str] = []
    block_first = 1

    def flush() -> None:
        nonlocal block, block_first
        if block:
            try:
                pgbench_log.read_block(("\n".join(block) + "\n").encode(), latencies, name, block_first, columns)
            except ParseError as exc:
                raise parse_problem(name, 1, exc) from None
        block_first += len(block)
        block = []

    for n, line in enumerate(lines, start=1):
        if n == 1 and line.startswith("client_id "):
            block_first = 2
            continue
        fields = line.split(" ")
        if not columns:
            columns = len(fields)
        if len(fields) != columns or not 6 <= columns <= 8:
            flush()
            raise ImportProblem(name, n, f"{len(fields)} columns where the log has {columns} (client, transaction, "
                                         "time, script, epoch, microseconds[, lag][, retries])")
        block.append(line)
        if len(block) >= 100_000:
            flush()
        try:
            client, number, time, epoch, micro = fields[0], int(fields[1]), fields[2], int(fields[4]), int(fields[5])
        except ValueError:
            flush()  # (the reader names the line)
            raise ImportProblem(name, n, f"not a pgbench log line: {line[:80]!r}") from None
        end = epoch + micro / 1e6
        last_end = max(last_end, end)
        span = numbers.setdefault(client, [number, number, 0, -1])
        span[0], span[1] = min(span[0], number), max(span[1], number)
        if number != span[3]:
            span[2], span[3] = span[2] + 1, number
        if time.isdigit():
            start = end - int(time) / 1e6
            first_start = start if first_start is None else min(first_start, start)
            per_second[epoch] += 1
    flush()
    if not latencies.count and not latencies.outcomes:
        raise ImportProblem(name, None, "a pgbench log without a transaction")
    logged = sum(s[2] for s in numbers.values())
    spanned = sum(s[1] - s[0] + 1 for s in numbers.values())
    share = logged / spanned if spanned else 1.0
    sampled = share < 0.999
    failed = sum(latencies.outcomes.get(w, 0) for w in ("failed", "serialization", "deadlock"))
    begin = first_start if first_start is not None else last_end
    measured = max(last_end - begin, 0.0)
    duration = durations.asked(None, None, measured)
    completed = latencies.count / share if sampled else latencies.count
    if sampled:
        latencies.sampling_rate = round(share, 6)
    found = latencies.percentiles_ms()
    details: dict[str, Any] = {"log": "per-transaction", "columns": columns,
                               "outcomes": dict(sorted(latencies.outcomes.items()))}
    if sampled:
        details["sampling_rate_estimated"] = round(share, 6)
    scale = 1 / share if sampled else 1.0
    origin = int(begin)
    samples = tuple(Sample(second=float(second - origin + 1), tps=count * scale)
                    for second, count in sorted(per_second.items()))
    measurement = Measurement(
        tps=completed / measured if measured > 0 else None,
        transactions=round(completed), failed_transactions=round(failed * scale),
        latency_avg_ms=latencies.mean_ms, latency_min_ms=(latencies.min_us or 0) / 1000 if latencies.count else None,
        latency_max_ms=found["max"], latency_p50_ms=found["p50"], latency_p90_ms=found["p90"],
        latency_p95_ms=found["p95"], latency_p99_ms=found["p99"], latency_p999_ms=found["p999"],
        details=details, latency_histogram=latencies.encode())
    clients = max(len(numbers), 1)
    spec = PointSpec(engine="postgres", workload=workload or UNNAMED, threads=1, clients=clients,
                     duration_s=duration.asked_s if duration else 0)
    note = None
    if sampled:
        note = (f"a sampled pgbench log (--sampling-rate {share:.4g}, from the transaction numbers it skips): "
                "counts and series scaled by it, percentiles of the sample")
    return ImportedPoint(result=PointResult(spec=spec, status="ok", measurement=measurement, samples=samples,
                                            **result_fields(None, TOOL, f"pgbench per-transaction log, {n} lines\n")),
                         label=label, first_line=1, last_line=n, tool=TOOL, note=note, duration=duration)


def _aggregate_rows(name: str, lines: Iterator[str]) -> tuple[list[list[int]], int]:
    """An aggregate log's rows (whole numbers, as many on every line as on the first) and
    their column count."""
    rows: list[list[int]] = []
    columns = 0
    for n, line in enumerate(lines, start=1):
        fields = line.split(" ")
        if not columns:
            columns = len(fields)
        if len(fields) != columns or not all(f.isdigit() for f in fields):
            raise ImportProblem(name, n, f"not a line of the aggregate log ({columns} whole numbers): {line[:80]!r}")
        rows.append([int(f) for f in fields])
    return rows, columns


def _aggregate_sample(row: list[int], start: int, interval: int) -> Sample:
    """One interval of an aggregate log as a per-interval sample: its throughput, and its
    latency's mean and standard deviation from the sums the row keeps."""
    count = row[1]
    if not count:
        return Sample(second=float(row[0] - start + interval), tps=0.0, latency_ms=None, latency_stddev_ms=None)
    mean = row[2] / count
    sd = math.sqrt(max(row[3] / count - mean ** 2, 0.0))
    return Sample(second=float(row[0] - start + interval), tps=count / interval, latency_ms=mean / 1000,
                  latency_stddev_ms=sd / 1000)


# The failures an aggregate log's columns hold after the sixth, by its column count
# (pgbench 15+): 7, the failures; 8 (--failures-detailed), serialization and deadlock
# failures apart.
_FAILED_COLUMNS = {7: (6,), 8: (6, 7)}


def _aggregate(name: str, lines: Iterator[str], label: str, workload: str | None) -> ImportedPoint:
    rows, columns = _aggregate_rows(name, lines)
    n = len(rows)
    starts = [r[0] for r in rows]
    steps = [b - a for a, b in zip(starts, starts[1:]) if b > a]
    interval = min(steps) if steps else 1
    total = sum(r[1] for r in rows)
    if not total:
        raise ImportProblem(name, None, "an aggregate pgbench log without a transaction")
    sum_us, sum2 = sum(r[2] for r in rows), sum(r[3] for r in rows)
    mean_us = sum_us / total
    stddev_us = math.sqrt(max(sum2 / total - mean_us ** 2, 0.0))
    failed = sum(r[c] for r in rows for c in _FAILED_COLUMNS[columns]) if columns in _FAILED_COLUMNS else None
    samples = tuple(_aggregate_sample(r, starts[0], interval) for r in rows)
    measured = float(starts[-1] - starts[0] + interval)
    duration = durations.asked(None, None, measured)
    details: dict[str, Any] = {"log": "aggregate", "columns": columns, "interval_s": interval}
    note = "an aggregate pgbench log keeps no transaction's own latency: no percentiles"
    if columns not in (6, 7, 8):
        note += f"; of its {columns} columns only the first six are read"
    measurement = Measurement(
        tps=total / measured, transactions=total, failed_transactions=failed, latency_avg_ms=mean_us / 1000,
        latency_stddev_ms=stddev_us / 1000, latency_min_ms=min(r[4] for r in rows if r[1]) / 1000,
        latency_max_ms=max(r[5] for r in rows if r[1]) / 1000, details=details)
    spec = PointSpec(engine="postgres", workload=workload or UNNAMED, threads=1, clients=1,
                     duration_s=duration.asked_s if duration else 0)
    return ImportedPoint(result=PointResult(spec=spec, status="ok", measurement=measurement, samples=samples,
                                            **result_fields(None, TOOL, f"pgbench aggregate log, {n} lines\n")),
                         label=label, first_line=1, last_line=n, tool=TOOL,
                         note=note + "; the clients are not logged: stored as 1", duration=duration)
