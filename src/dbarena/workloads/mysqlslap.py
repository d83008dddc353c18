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
import os
from pathlib import Path
from typing import Any, Sequence

from dbarena.errors import ParseError
from dbarena.interfaces import Client
from dbarena.model import Measurement, PointSpec, Sample, ToolParam
from dbarena.workloads.base import ToolBase, option_value

TOOL = "mysqlslap"
PARAMS: tuple[ToolParam, ...] = (ToolParam("iterations", 1, "mysqlslap --iterations"),
          ToolParam("queries", 100000, "mysqlslap --number-of-queries (in total over all clients)", quick=1000,
                    flag_name="number-of-queries"))
# mysqlslap drops and recreates its schema: use a name no one else uses.
SCHEMA = "dbarena_mysqlslap"

_SECONDS = r"(?P<v>\d+(?:\.\d+)?) seconds"
_FIELDS: dict[str, tuple[str, re.Pattern[str]]] = {
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
    blocks: list[dict[str, str]] = []  # field name -> its text, per block
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


# mysqlslap's points are bounded by queries, not seconds. For estimates: auto-generated
# queries per second and client. Measured with `dbarena run --study seed-a --quick` on
# MariaDB 10.11, 2 cores: 3,135 qps at 1 client, 4,651 at 2 (so about 3,000 per client
# up to the cores); a faster server only makes the estimate pessimistic.
QUERIES_PER_S_PER_CLIENT = 3000.0


class Mysqlslap(ToolBase):
    """Study A's mysqlslap: auto-generated SQL at T concurrent clients, a fixed number
    of queries; the figure is the seconds they take. Other options of the study
    (--auto-generate-sql-load-type, --number-char-cols, --engine ...) are passed
    through."""

    name = TOOL
    open_loop_refusal: str | None = "runs a number of queries as fast as it can and offers no rate"
    binary = "mysqlslap"
    params = PARAMS
    timed = False
    passthrough = True
    extra_connections = 1  # its own, open while the --concurrency client threads run
    reserved = {
        "concurrency": "the sweep's levels", "iterations": "the 'iterations' parameter",
        "number-of-queries": "the 'queries' parameter", "host": "the target", "port": "the target",
        "user": "the target", "password": "the target's private option file", "socket": "the target",
        "protocol": "always tcp", "create-schema": f"always {SCHEMA}", "defaults-file": "the target",
        "defaults-extra-file": "the target", "auto-generate-sql": "always on",
    }

    # mysqlslap --help: system() strings, and client-side plugins it loads.
    code_options = {"pre-system": "runs a shell command", "post-system": "runs a shell command",
                    "plugin-dir": "chooses where client plugins are loaded from",
                    "default-auth": "loads a client plugin"}

    def check_option(self, name: str, value: Any, base_dir: Path | None) -> str:
        return option_value(name, value, true="on", false="off")

    def secret_file(self, protocol: str, password: str) -> str | None:
        escaped = password.replace("\\", "\\\\").replace('"', '\\"')
        return f'[client]\npassword="{escaped}"\n'

    def point_argv(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> list[str]:
        """auto-generated SQL, spec.threads concurrent clients, the study's options."""
        argv = [client.binary]
        if client.secret_file:
            # Must come first; holds the password so it stays off the command line.
            argv.append(f"--defaults-extra-file={client.secret_file}")
        conn = client.conn
        if conn.tls is not None:
            # TLS, the server's certificate verified against this CA (its host name
            # is not: --ssl-verify-server-cert would check it).
            argv.append(f"--ssl-ca={conn.tls.ca}")
        extra = []
        for name, value in spec.options:
            # A boolean option is a bare flag when on, and left out when off.
            extra += [f"--{name}"] if value == "on" else [] if value == "off" else [f"--{name}={value}"]
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
            *extra,
        ]

    def read(self, stdout: str, stderr: str, spec: PointSpec | None) -> tuple[Measurement, tuple[Sample, ...]]:
        return read(stdout, stderr, spec)

    def estimate_s(self, spec: PointSpec) -> float:
        # --number-of-queries is the total over all clients; each iteration runs them
        # all again, and creates and drops the schema (about a second).
        clients = max(1, min(spec.threads, os.cpu_count() or 1))
        per_iteration = spec.param("queries") / (QUERIES_PER_S_PER_CLIENT * clients)
        return spec.param("iterations") * (per_iteration + 1.0)



TOOL_IMPL = Mysqlslap()
