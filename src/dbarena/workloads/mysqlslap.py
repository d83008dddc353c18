"""mysqlslap (or MariaDB's mariadb-slap): command lines and the output parser.

mysqlslap runs a fixed number of auto-generated queries and reports the seconds it
took (average, minimum and maximum over --iterations). It prints one `Benchmark`
block per concurrency level; MySQL 5.6 and MariaDB may add `Running for engine X`;
5.7+ indents with tabs. Queries per second are derived: clients x average queries
per client / average seconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from dbarena.errors import ParseError
from dbarena.model import Connection, Measurement, PointSpec, Sample

TOOL = "mysqlslap"
PARAMS = ("iterations", "queries")
# mysqlslap drops and recreates its schema: use a name no one else uses.
SCHEMA = "dbarena_mysqlslap"

_SECONDS = r"(?P<v>\d+(?:\.\d+)?) seconds"
_FIELDS: dict[str, tuple[str, re.Pattern]] = {
    "Average number of seconds to run all queries:": ("avg_s", re.compile(rf"^Average number of seconds to run all queries: {_SECONDS}$")),
    "Minimum number of seconds to run all queries:": ("min_s", re.compile(rf"^Minimum number of seconds to run all queries: {_SECONDS}$")),
    "Maximum number of seconds to run all queries:": ("max_s", re.compile(rf"^Maximum number of seconds to run all queries: {_SECONDS}$")),
    "Number of clients running queries:": ("clients", re.compile(r"^Number of clients running queries: (?P<v>\d+)$")),
    "Average number of queries per client:": ("queries_per_client", re.compile(r"^Average number of queries per client: (?P<v>\d+)$")),
    "Running for engine": ("engine", re.compile(r"^Running for engine (?P<v>\S+)$")),
}


@dataclass(frozen=True)
class SlapBenchmark:
    avg_s: float
    min_s: float
    max_s: float
    clients: int
    queries_per_client: int
    engine: str | None = None

    @property
    def queries(self) -> int:
        return self.clients * self.queries_per_client

    @property
    def qps(self) -> float | None:
        # mysqlslap prints milliseconds resolution: a 0.000 s run has no rate.
        return self.queries / self.avg_s if self.avg_s > 0 else None


def parse(stdout: str, stderr: str = "") -> list[SlapBenchmark]:
    """Every Benchmark block, in order. Raises ParseError for an unreadable field, a
    block missing one, or an output without any block."""
    blocks: list[dict] = []
    starts: list[int] = []
    for lineno, raw in enumerate(stdout.splitlines(), start=1):
        line = raw.strip()
        if line == "Benchmark":
            blocks.append({})
            starts.append(lineno)
            continue
        for prefix, (name, pattern) in _FIELDS.items():
            if line.startswith(prefix):
                if not blocks:
                    raise ParseError(TOOL, "figure outside a Benchmark block", lineno, raw)
                m = pattern.match(line)
                if m is None:
                    raise ParseError(TOOL, f"unreadable '{prefix.rstrip(':')}' line", lineno, raw)
                blocks[-1][name] = m["v"]
                break
    if not blocks:
        raise ParseError(TOOL, "no 'Benchmark' block (did mysqlslap finish?)")
    result = []
    for start, block in zip(starts, blocks):
        missing = [n for n, _ in _FIELDS.values() if n != "engine" and n not in block]
        if missing:
            raise ParseError(TOOL, f"Benchmark block without {', '.join(missing)}", start, "Benchmark")
        result.append(SlapBenchmark(
            avg_s=float(block["avg_s"]), min_s=float(block["min_s"]), max_s=float(block["max_s"]),
            clients=int(block["clients"]), queries_per_client=int(block["queries_per_client"]),
            engine=block.get("engine"),
        ))
    return result


def parse_progress_line(line: str, lineno: int | None = None) -> Sample | None:
    return None  # mysqlslap reports nothing while it runs


def read_samples(stdout: str, stderr: str) -> tuple[Sample, ...]:
    return ()


def read(stdout: str, stderr: str, spec: PointSpec | None = None) -> tuple[Measurement, tuple[Sample, ...]]:
    blocks = parse(stdout, stderr)
    block = blocks[-1]
    if spec is not None:
        matching = [b for b in blocks if b.clients == spec.clients]
        if not matching:
            raise ParseError(TOOL, f"no Benchmark block for {spec.clients} clients")
        block = matching[-1]
    return Measurement(
        qps=block.qps, queries=block.queries, run_avg_s=block.avg_s, run_min_s=block.min_s,
        run_max_s=block.max_s,
        details={"clients": block.clients, "queries_per_client": block.queries_per_client,
                 **({"engine": block.engine} if block.engine else {})},
    ), ()


def prepare_argv(binary: str, conn: Connection, spec: PointSpec) -> None:
    return None  # mysqlslap creates and drops its own schema


def cleanup_argv(binary: str, conn: Connection, spec: PointSpec) -> None:
    return None


def point_argv(binary: str, conn: Connection, spec: PointSpec, mode_args: Sequence[str]) -> list[str]:
    """Study A's mysqlslap: auto-generated SQL, spec.threads concurrent clients."""
    argv = [binary]
    if conn.mysql_defaults_file:
        # Must come first; holds the password so it stays off the command line.
        argv.append(f"--defaults-extra-file={conn.mysql_defaults_file}")
    return [
        *argv,
        f"--host={conn.host}",
        f"--port={conn.port}",
        f"--user={conn.user}",
        "--protocol=tcp",
        "--auto-generate-sql",
        f"--create-schema={SCHEMA}",
        f"--concurrency={spec.threads}",
        f"--iterations={spec.param('iterations')}",
        f"--number-of-queries={spec.param('queries')}",
        *mode_args,
    ]
