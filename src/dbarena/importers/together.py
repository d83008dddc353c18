"""`import --together`: the outputs of load generators that ran at once against one
server (each process's output kept apart: two pgbench clients on two machines against one
RDS instance) as the one point they measured, as `fleet run --together` makes one.

Each file holds one run; the runs must be of one configuration apart from their threads
and clients (engine, workload, asked duration, warm-up, tool parameters and options),
else the import is refused naming what differs. The point:

- **threads and clients**: the parts' sums; `load_generators` (its details, and its
  configuration key) the number of parts.
- **throughput**: the sum of the figures each part printed (TPS, QPS; a TPC-C kit's NOPM,
  TPM or tpmC), which is what the published total is: 7,079.73 + 6,946.35 TPS. Nothing
  says when each output started, so no common window is cut as a fleet run's is.
- **counts** (transactions, queries, failures, retries) summed; **latency** pooled by the
  rules a fleet run's are (stats/pooling.py): the average weighted by transactions, the
  standard deviation pooled, minimum and maximum over the parts, and the percentiles
  those of the parts' merged histograms where every part has one (a per-transaction
  log); a figure some part lacks is None.
- **series**: the parts' interval reports summed second by second (by the seconds each
  tool counted from its own start), over the seconds every part reports.
- each part kept with its own figures in the details' `together.parts` (its file and
  lines, threads, clients, TPS, latency ...), as a fleet run keeps each host's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

from dbarena.importers.common import ImportedPoint, ImportProblem
from dbarena.model import Measurement, PointResult, Sample
from dbarena.stats.latency import Latencies, merged
from dbarena.stats import pooling
from dbarena.stats.pooling import summed

# The details of a TPC-C kit's point that are throughputs: summed like TPS.
_DETAIL_RATES = ("nopm", "tpm", "tpmC", "tpmTotal")
_KEPT = ("tps", "transactions", "qps", "queries", "failed_transactions", "errors", "latency_avg_ms",
         "latency_stddev_ms", "latency_min_ms", "latency_max_ms", "latency_p50_ms", "latency_p95_ms",
         "latency_p99_ms", "initial_connection_ms")


def _configuration(point: ImportedPoint) -> dict[str, Any]:
    spec = point.result.spec
    return {"engine": spec.engine, "workload": spec.workload, "duration": spec.duration_s,
            "warm-up": spec.warmup_s, "parameters": dict(spec.params), "options": dict(spec.options),
            "tool": point.tool}


def combine(parts: Sequence[tuple[str, ImportedPoint]], name: str) -> ImportedPoint:
    """The one point of runs that ran together: `parts` are (file name, its point).
    ImportProblem (named `name`) where a part failed or the configurations differ."""
    if len(parts) < 2:
        raise ImportProblem(name, None, "--together takes the outputs of two or more load generators")
    for file, point in parts:
        if not point.result.ok or point.result.measurement is None:
            raise ImportProblem(file, point.first_line, f"--together: this run failed ({point.result.error}); a point "
                                                        "of several load generators needs each one's figures")
    first_file, first = parts[0]
    want = _configuration(first)
    for file, point in parts[1:]:
        got = _configuration(point)
        differs = [k for k in want if want[k] != got[k]]
        if differs:
            said = "; ".join(f"{k} {want[k]} in {first_file}, {got[k]} in {file}" for k in differs)
            raise ImportProblem(name, None, f"--together: the runs are not of one configuration ({said})")
    points = [p for _, p in parts]
    measurements = [p.result.measurement for p in points if p.result.measurement is not None]
    histograms = [m.latency_histogram for m in measurements]
    pooled = _measurement(measurements)
    latencies = merged(Latencies.decode(h) for h in histograms if h is not None) \
        if all(h is not None for h in histograms) else None
    if latencies is not None:
        found = latencies.percentiles_ms()
        pooled = replace(pooled, latency_histogram=latencies.encode(), latency_p50_ms=found["p50"],
                         latency_p90_ms=found["p90"], latency_p95_ms=found["p95"], latency_p99_ms=found["p99"],
                         latency_p999_ms=found["p999"])
    details = {**pooled.details, "load_generators": len(parts), "together": {
        "from": "import --together: throughput summed, latency pooled (no common window: the outputs do not say "
                "when each started)",
        "parts": [_part(file, p) for file, p in parts]}}
    pooled = replace(pooled, details=details)
    spec = replace(first.result.spec, threads=sum(p.result.spec.threads for p in points),
                   clients=sum(p.result.spec.clients for p in points))
    result = PointResult(spec=spec, status="ok", started_at=first.result.started_at, ended_at=first.result.ended_at,
                         command=first.result.command, exit_code=None,
                         stdout="".join(f"==> {file} <==\n{p.result.stdout}" for file, p in parts), stderr="",
                         measurement=pooled, samples=_series([p.result.samples for p in points]))
    notes = sorted({p.note for p in points if p.note})
    server = next((p for p in points if p.server_version is not None), first)
    return ImportedPoint(result=result, label=first.label, first_line=first.first_line, last_line=first.last_line,
                         tool=first.tool, price_per_hour=first.price_per_hour, server_version=server.server_version,
                         flavour=server.flavour, note="; ".join(notes) or None, duration=first.duration)


def _measurement(ms: Sequence[Measurement]) -> Measurement:
    details: dict[str, Any] = {k: v for k, v in ms[0].details.items()
                               if k not in ("histogram", "together", "load_generators", *_DETAIL_RATES)}
    for key in _DETAIL_RATES:
        values = [m.details.get(key) for m in ms]
        if any(v is not None for v in values):
            total = summed([v if isinstance(v, (int, float)) and not isinstance(v, bool) else None for v in values])
            if total is not None:
                details[key] = round(total, 6) if isinstance(total, float) else total
    tps = summed([m.tps for m in ms])
    return pooling.pooled(ms, tps=round(tps, 6) if tps is not None else None, qps=summed([m.qps for m in ms]),
                          details=details)


def _series(parts: Sequence[tuple[Sample, ...]]) -> tuple[Sample, ...]:
    """The parts' interval reports summed at the seconds every part reports."""
    if not parts or not all(parts):
        return ()
    by_second = [{s.second: s for s in samples} for samples in parts]
    out = []
    for second in sorted(set.intersection(*(set(found) for found in by_second))):
        samples = [found[second] for found in by_second]
        tps = sum(s.tps for s in samples)
        latencies = [s.latency_ms for s in samples]
        latency = (sum(s.tps * (s.latency_ms or 0.0) for s in samples) / tps
                   if tps > 0 and all(v is not None for v in latencies) else None)
        out.append(Sample(second=second, tps=tps, latency_ms=latency, failed=summed([s.failed for s in samples]),
                          skipped=summed([s.skipped for s in samples]), threads=summed([s.threads for s in samples]),
                          qps=summed([s.qps for s in samples]),
                          errors_per_s=summed([s.errors_per_s for s in samples])))
    return tuple(out)


def _part(file: str, point: ImportedPoint) -> dict[str, Any]:
    """A part as the point's details keep it: where it came from and its own figures."""
    assert point.result.measurement is not None
    figures = asdict(point.result.measurement)
    own = {k: point.result.measurement.details[k] for k in _DETAIL_RATES if k in point.result.measurement.details}
    return {"host": file, "label": point.label, "file": file, "lines": [point.first_line, point.last_line],
            "threads": point.result.spec.threads, "clients": point.result.spec.clients,
            **{k: figures[k] for k in _KEPT}, **own,
            "samples": [[s.second, s.tps] for s in point.result.samples],
            "latency_histogram": point.result.measurement.latency_histogram}
