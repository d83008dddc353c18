"""pgbench: command lines and the output parser. Pure functions, no I/O.

The parser reads pgbench 9.3 to 18. The summary format changed over the years:
- 9.5 and older: `latency average: X ms` (colon); 9.6 on: `latency average = X ms`;
- 9.6 on: `<builtin: ...>` transaction types;
- 14 on: a `pgbench (14.0)` banner, `initial connection time = X ms` and a single
  `tps = X (without initial connection time)` instead of including/excluding lines;
- 15 on: `maximum number of tries`, `number of failed transactions`, retries, and
  progress lines that end in `, N failed` (plus `, N retried, N retries` when
  --max-tries is not 1).
A line that starts like a known field but whose value cannot be read raises
ParseError naming the line; a field the version does not print stays None.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from dbarena.errors import ParseError, UsageError
from dbarena.interfaces import Client
from dbarena.stats.latency import Latencies
from dbarena.model import Measurement, PointSpec, Sample, ToolParam
from dbarena.workloads import pgbench_log, series
from dbarena.workloads.base import ToolBase, option_value

TOOL = "pgbench"
# The PointSpec.params this tool reads. Scale 1 is 100,000 accounts, about 15 MB with
# its indexes (16 MB rounded up).
PARAMS: tuple[ToolParam, ...] = (ToolParam("scale", 10, "pgbench scale factor (100,000 accounts rows each)", quick=1,
                    bytes_per_unit=16_000_000),)

# pgbench prints "nan"/"-nan" for the latency of an interval without a finished
# transaction (before 13 it divided by zero); such a value becomes None.
_NUM = r"-?(?:\d+(?:\.\d+)?|nan|inf)"

_PROGRESS = re.compile(
    rf"^progress: (?P<second>\d+(?:\.\d+)?) s, (?P<tps>{_NUM}) tps, "
    rf"lat (?P<lat>{_NUM}) ms stddev (?P<stddev>{_NUM})"
    r"(?:, (?P<failed>\d+) failed)?"
    rf"(?:, lag (?P<lag>{_NUM}) ms)?"
    r"(?:, (?P<skipped>\d+) skipped)?"
    r"(?:, (?P<retried>\d+) retried, (?P<retries>\d+) retries)?$",
    re.IGNORECASE,
)

_BANNER = re.compile(r"^pgbench \((?P<version>\d[\w.~-]*)(?P<rest>.*)\)$")
_BANNER_SERVER = re.compile(r", server (?P<server>.+)$")

_PCT = r"\((?P<pct>\d+(?:\.\d+)?) ?%\)"

# prefix -> anchored pattern for the whole line. A line that starts with a prefix
# must match its pattern, or the output is not what we think it is.
_SUMMARY: dict[str, re.Pattern[str]] = {
    "transaction type:": re.compile(r"^transaction type: (?P<v>.+)$"),
    "scaling factor:": re.compile(r"^scaling factor: (?P<v>\d+)$"),
    "query mode:": re.compile(r"^query mode: (?P<v>\w+)$"),
    "number of clients:": re.compile(r"^number of clients: (?P<v>\d+)$"),
    "number of threads:": re.compile(r"^number of threads: (?P<v>\d+)$"),
    "maximum number of tries:": re.compile(r"^maximum number of tries: (?P<v>\d+)$"),
    "duration:": re.compile(r"^duration: (?P<v>\d+) s$"),
    "number of transactions per client:": re.compile(r"^number of transactions per client: (?P<v>\d+)$"),
    "number of transactions actually processed:": re.compile(
        r"^number of transactions actually processed: (?P<v>\d+)(?:/(?P<planned>\d+))?$"
    ),
    "number of failed transactions:": re.compile(rf"^number of failed transactions: (?P<v>\d+) {_PCT}$"),
    "number of serialization failures:": re.compile(rf"^number of serialization failures: (?P<v>\d+) {_PCT}$"),
    "number of deadlock failures:": re.compile(rf"^number of deadlock failures: (?P<v>\d+) {_PCT}$"),
    "number of transactions retried:": re.compile(rf"^number of transactions retried: (?P<v>\d+) {_PCT}$"),
    "total number of retries:": re.compile(r"^total number of retries: (?P<v>\d+)$"),
    "number of transactions skipped:": re.compile(rf"^number of transactions skipped: (?P<v>\d+) {_PCT}$"),
    "latency average": re.compile(r"^latency average(?: =|:) (?P<v>\d+(?:\.\d+)?) ms$"),
    "latency stddev": re.compile(r"^latency stddev(?: =|:) (?P<v>\d+(?:\.\d+)?) ms$"),
    "initial connection time": re.compile(r"^initial connection time = (?P<v>\d+(?:\.\d+)?) ms$"),
    "average connection time": re.compile(r"^average connection time = (?P<v>\d+(?:\.\d+)?) ms$"),
    "tps =": re.compile(
        r"^tps = (?P<v>\d+(?:\.\d+)?) \((?P<basis>without initial connection time|"
        r"excluding connections establishing|including connections establishing|"
        r"including reconnection times)\)$"
    ),
}

_FIELD_NAMES = {
    "transaction type:": "transaction_type",
    "scaling factor:": "scale",
    "query mode:": "query_mode",
    "number of clients:": "clients",
    "number of threads:": "threads",
    "maximum number of tries:": "max_tries",
    "duration:": "duration_s",
    "number of transactions per client:": "transactions_per_client",
    "number of transactions actually processed:": "transactions",
    "number of failed transactions:": "failed_transactions",
    "number of serialization failures:": "serialization_failures",
    "number of deadlock failures:": "deadlock_failures",
    "number of transactions retried:": "retried_transactions",
    "total number of retries:": "retries",
    "number of transactions skipped:": "skipped_transactions",
    "latency average": "latency_avg_ms",
    "latency stddev": "latency_stddev_ms",
    "initial connection time": "initial_connection_ms",
    "average connection time": "average_connection_ms",
}

_INT_FIELDS = {
    "scale", "clients", "threads", "max_tries", "duration_s", "transactions_per_client",
    "transactions", "failed_transactions", "serialization_failures", "deadlock_failures",
    "retried_transactions", "retries", "skipped_transactions",
}


@dataclass(frozen=True)
class PgbenchReport:
    """Everything pgbench printed about one run, as it printed it."""

    tps: float
    tps_basis: str  # which tps line: "without initial connection time", ...
    transactions: int
    version: str | None = None
    server_version: str | None = None
    transaction_type: str | None = None
    scale: int | None = None
    query_mode: str | None = None
    clients: int | None = None
    threads: int | None = None
    max_tries: int | None = None
    duration_s: int | None = None
    transactions_per_client: int | None = None
    transactions_planned: int | None = None
    failed_transactions: int | None = None
    serialization_failures: int | None = None
    deadlock_failures: int | None = None
    retried_transactions: int | None = None
    retries: int | None = None
    skipped_transactions: int | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    initial_connection_ms: float | None = None
    average_connection_ms: float | None = None
    tps_including_connections: float | None = None
    samples: tuple[Sample, ...] = field(default=())

    def to_measurement(self) -> Measurement:
        details = {
            k: getattr(self, k)
            for k in (
                "version", "server_version", "transaction_type", "scale", "query_mode",
                "clients", "threads", "max_tries", "duration_s", "tps_basis",
                "tps_including_connections", "serialization_failures",
                "deadlock_failures", "skipped_transactions", "average_connection_ms",
            )
            if getattr(self, k) is not None
        }
        return Measurement(
            tps=self.tps,
            transactions=self.transactions,
            failed_transactions=self.failed_transactions,
            retried_transactions=self.retried_transactions,
            retries=self.retries,
            latency_avg_ms=self.latency_avg_ms,
            latency_stddev_ms=self.latency_stddev_ms,
            initial_connection_ms=self.initial_connection_ms,
            details=details,
        )


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    value = float(text)
    return value if math.isfinite(value) else None


# The shape nearly every progress line has (no failures, lag or retries; figures
# neither NaN nor negative), read without _PROGRESS's optional groups: an import of
# 10 000 runs reads 600 000 of them. Any other line takes the full expression.
# (At most 15 digits before the point: a longer figure could round to infinity, which
# the full expression's reading says as such.)
_PLAIN_PROGRESS = re.compile(
    r"progress: (\d{1,15}(?:\.\d+)?) s, (\d{1,15}(?:\.\d+)?) tps, lat (\d{1,15}(?:\.\d+)?) ms "
    r"stddev (\d{1,15}(?:\.\d+)?)")


def parse_progress_line(line: str, lineno: int | None = None) -> Sample | None:
    """A `-P` progress line as a Sample; None for a line that is not one."""
    line = line.rstrip("\r\n")
    if not line.startswith("progress: "):
        return None
    plain = _PLAIN_PROGRESS.fullmatch(line)
    if plain is not None:
        second, tps, lat, stddev = plain.groups()
        return Sample.read(float(second), float(tps), float(lat), float(stddev))
    return read_progress_line(line, lineno)


def read_progress_line(line: str, lineno: int | None = None) -> Sample:
    """A progress line (without its line end) of any shape pgbench prints, by the full
    expression (tests check parse_progress_line's shortcut against it)."""
    m = _PROGRESS.match(line)
    if m is None:
        raise ParseError(TOOL, "unreadable progress line", lineno, line)
    second, tps_text, lat, stddev, failed, lag, skipped, retried, retries = m.group(*_PROGRESS_GROUPS)
    tps = _number(tps_text)
    if tps is None:
        raise ParseError(TOOL, "progress line without a tps figure", lineno, line)
    # Positional, in Sample's field order (an import builds hundreds of thousands).
    return Sample.read(float(second), tps, _number(lat), _number(stddev),
                  int(failed) if failed is not None else None, _number(lag),
                  int(skipped) if skipped is not None else None,
                  int(retried) if retried is not None else None,
                  int(retries) if retries is not None else None)


_PROGRESS_GROUPS = ("second", "tps", "lat", "stddev", "failed", "lag", "skipped", "retried", "retries")


def parse_progress(text: str) -> tuple[Sample, ...]:
    """Every progress line in text (pgbench writes them to stderr)."""
    samples = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        sample = parse_progress_line(line, lineno)
        if sample is not None:
            samples.append(sample)
    return tuple(samples)


def _summary_prefix(line: str) -> str | None:
    for prefix in _SUMMARY:
        if line.startswith(prefix):
            return prefix
    return None


def parse(stdout: str, stderr: str = "") -> PgbenchReport:
    """Read a finished pgbench run. stdout has the summary; progress lines may be in
    either stream (a terminal capture interleaves them), so both are searched.

    Raises ParseError when a known field is unreadable or the run's tps or
    transaction count is missing (pgbench did not finish).
    """
    # What the summary says, by PgbenchReport's field names, a dict per type.
    texts: dict[str, str] = {}
    ints: dict[str, int] = {}
    floats: dict[str, float] = {}
    tps_by_basis: dict[str, float] = {}
    samples: list[Sample] = []
    for stream_text in (stdout, stderr):
        for lineno, raw in enumerate(stream_text.splitlines(), start=1):
            line = raw.rstrip("\r")
            sample = parse_progress_line(line, lineno)
            if sample is not None:
                samples.append(sample)
                continue
            banner = _BANNER.match(line)
            if banner:
                texts["version"] = banner["version"]
                server = _BANNER_SERVER.search(banner["rest"])
                # pgbench names the server's version only when it differs from its own
                # (printVersion in pgbench.c): one version means both are that version.
                texts["server_version"] = server["server"] if server else banner["version"]
                continue
            prefix = _summary_prefix(line)
            if prefix is None:
                continue  # vacuum notes, warnings, per-statement latencies ...
            m = _SUMMARY[prefix].match(line)
            if m is None:
                raise ParseError(TOOL, f"unreadable '{prefix.rstrip(':= ')}' line", lineno, line)
            if prefix == "tps =":
                tps_by_basis[m["basis"]] = float(m["v"])
                continue
            name = _FIELD_NAMES[prefix]
            if name in _INT_FIELDS:
                ints[name] = int(m["v"])
            elif name == "transaction_type" or name == "query_mode":
                texts[name] = m["v"]
            else:
                floats[name] = float(m["v"])
            if name == "transactions" and m["planned"] is not None:
                ints["transactions_planned"] = int(m["planned"])

    if "transactions" not in ints:
        raise ParseError(TOOL, "no 'number of transactions actually processed' line (did pgbench finish?)")
    # The tps that excludes connection set-up is the benchmark's figure; with -C
    # (a new connection per transaction) pgbench prints only the including one.
    for basis in (
        "without initial connection time",
        "excluding connections establishing",
        "including reconnection times",
    ):
        if basis in tps_by_basis:
            break
    else:
        raise ParseError(TOOL, "no 'tps = ... (without initial connection time)' line (did pgbench finish?)")
    return PgbenchReport(
        tps=tps_by_basis[basis],
        tps_basis=basis,
        transactions=ints["transactions"],
        version=texts.get("version"),
        server_version=texts.get("server_version"),
        transaction_type=texts.get("transaction_type"),
        scale=ints.get("scale"),
        query_mode=texts.get("query_mode"),
        clients=ints.get("clients"),
        threads=ints.get("threads"),
        max_tries=ints.get("max_tries"),
        duration_s=ints.get("duration_s"),
        transactions_per_client=ints.get("transactions_per_client"),
        transactions_planned=ints.get("transactions_planned"),
        failed_transactions=ints.get("failed_transactions"),
        serialization_failures=ints.get("serialization_failures"),
        deadlock_failures=ints.get("deadlock_failures"),
        retried_transactions=ints.get("retried_transactions"),
        retries=ints.get("retries"),
        skipped_transactions=ints.get("skipped_transactions"),
        latency_avg_ms=floats.get("latency_avg_ms"),
        latency_stddev_ms=floats.get("latency_stddev_ms"),
        initial_connection_ms=floats.get("initial_connection_ms"),
        average_connection_ms=floats.get("average_connection_ms"),
        tps_including_connections=tps_by_basis.get("including connections establishing"),
        samples=tuple(samples),
    )


def read(stdout: str, stderr: str, spec: PointSpec | None = None) -> tuple[Measurement, tuple[Sample, ...]]:
    """A finished point's figures and its per-second series."""
    report = parse(stdout, stderr)
    return report.to_measurement(), report.samples


# pgbench's meta-commands that run a shell command (its docs, "Meta Commands").
_SHELL_META = re.compile(r"^\s*\\(?:shell|setshell)\b", re.MULTILINE | re.IGNORECASE)

LOG_PREFIX = "pgbench_log"  # its files: pgbench_log.<pid>[.<thread>]

# Rows of pgbench_accounts per scale unit, and a rough loading rate for estimates.
_LOAD_SCALE_PER_S = 8.0


def instruments(progress: bool, sampling: float | None) -> tuple[str, ...]:
    """The options point_argv and with_latency_log add for a point with its own
    per-second report (-P 1) and that share of its transactions logged."""
    found: tuple[str, ...] = ("-P 1",) if progress else ()
    if sampling:
        found += ("-l",) if sampling >= 1 else ("-l", f"--sampling-rate {sampling!r}")
    return found


class Pgbench(ToolBase):
    """pgbench: `-i` prepares the tables at the point's scale; each point runs
    `-j T -c C -T S -P 1` and the workload's mode (-S, -N or script files)."""

    name = TOOL
    binary = "pgbench"
    # -R RATE: a Poisson schedule, each transaction's latency from its scheduled start
    # (pgbench.c's processXactStats: latency = now - txn_scheduled; docs/capacity.md).
    open_loop_refusal: str | None = None
    params = PARAMS
    reserved = {
        "client": "threads x clients_per_thread", "jobs": "the sweep's levels", "time": "duration_s",
        "progress": "always 1 s", "scale": "the dataset's scale", "transactions": "duration_s",
    }
    known = {
        "protocol": "-M: simple, extended or prepared",
        "report-per-command": "-r: latency of every statement (true/false)",
        "file": "-f: custom script files (a list; 'path@weight'), relative to the study file",
        "connect": "-C: a new connection per transaction (true/false)",
        "max-tries": "--max-tries (PostgreSQL 15+)",
        "rate": "-R: target transactions per second",
        "latency-limit": "-L: milliseconds",
        "no-vacuum": "-n: no vacuum before the run (true/false)",
    }
    _FLAGS = {"report-per-command": "-r", "connect": "-C", "no-vacuum": "-n"}

    def check_option(self, name: str, value: Any, base_dir: Path | None) -> str:
        if name == "protocol":
            if not isinstance(value, str) or value not in ("simple", "extended", "prepared"):
                raise UsageError(f"pgbench option 'protocol': expected simple, extended or prepared, not {value!r}")
            return value
        if name in self._FLAGS:
            if not isinstance(value, bool):
                raise UsageError(f"pgbench option {name!r}: expected true or false, not {value!r}")
            return "on" if value else "off"
        if name == "file":
            files = [value] if isinstance(value, str) else value
            if not isinstance(files, list) or not files or not all(isinstance(f, str) and f for f in files):
                raise UsageError("pgbench option 'file': expected a script path or a list of them")
            resolved = []
            for item in files:
                path, at, weight = item.partition("@")
                if at and not weight.isdigit():
                    raise UsageError(f"pgbench option 'file': {item!r}: the weight after @ must be a whole number")
                full = Path(path) if base_dir is None else (base_dir / path)
                if not full.is_file():
                    raise UsageError(f"pgbench option 'file': no script file {str(full)!r}")
                resolved.append(str(full.resolve()) + (f"@{weight}" if at else ""))
            return "\n".join(resolved)
        text = option_value(name, value)
        try:
            if float(text) <= 0:
                raise ValueError
        except ValueError:
            raise UsageError(f"pgbench option {name!r}: expected a positive number, not {value!r}") from None
        return text

    def code_option(self, name: str, value: str) -> str | None:
        """A script file with \\shell or \\setshell (pgbench's meta-commands that run a
        shell command, as the user running pgbench) runs commands."""
        if name != "file":
            return None
        for item in value.splitlines():
            weighted = re.fullmatch(r"(?P<path>.*)@\d+", item)  # check_option's 'path@weight'
            path = weighted["path"] if weighted else item
            try:
                text = Path(path).read_text(errors="replace")
            except OSError:
                return "a script file that cannot be read to check it"
            if _SHELL_META.search(text):
                return f"runs shell commands (\\shell or \\setshell in {path})"
        return None

    def prepare_argv(self, client: Client, spec: PointSpec) -> list[list[str]]:
        """`pgbench -i`: (re)create the pgbench tables at the point's scale, quietly.

        pgbench takes the connection URI (never with a password) in place of the
        database name; the password comes from PGPASSWORD or a passfile.
        """
        return [[client.binary, "-i", "-q", "-s", str(spec.param("scale")), client.conn.url]]

    def point_argv(self, client: Client, spec: PointSpec, mode_args: Sequence[str]) -> list[str]:
        """One point: -j threads, -c clients, -T seconds, a progress line every second,
        the workload's mode and the study's options."""
        options = dict(spec.options)
        extra: list[str] = []
        if "protocol" in options:
            extra += ["-M", options["protocol"]]
        for name, flag in self._FLAGS.items():
            if options.get(name) == "on":
                extra.append(flag)
        for name, flag in (("max-tries", "--max-tries"), ("rate", "-R"), ("latency-limit", "-L")):
            if name in options:
                extra += [flag, options[name]]
        for script in options.get("file", "").splitlines():
            extra += ["-f", script]
        return [
            client.binary,
            "-j", str(spec.threads),
            "-c", str(spec.clients),
            "-T", str(spec.duration_s),
            "-P", "1",
            *mode_args,
            *extra,
            client.conn.url,
        ]

    def with_latency_log(self, argv: list[str], log_dir: Path, sampling_rate: float) -> list[str]:
        """-l with --log-prefix into the point's own directory (one file per pgbench
        thread), and --sampling-rate below 1. Before the connection URI, which
        point_argv puts last."""
        log = ["-l", "--log-prefix", str(log_dir / LOG_PREFIX)]
        if sampling_rate < 1:
            log += ["--sampling-rate", repr(sampling_rate)]
        return [*argv[:-1], *log, argv[-1]]

    def without_progress(self, argv: list[str]) -> list[str] | None:
        """The point without -P 1: with it, pgbench reads the clock around every
        transaction and keeps its latency sums, which cost 5-6 % of the throughput of a
        CPU-bound select-only point on a 2-CPU machine (bench/README.md); bare, as the
        seed studies ran it, it does neither."""
        for i in range(len(argv) - 1):
            if argv[i] == "-P" and argv[i + 1] == "1":
                return [*argv[:i], *argv[i + 2:]]
        return None

    def instruments(self, progress: bool, sampling: float | None) -> tuple[str, ...]:
        return instruments(progress, sampling)

    def read_latency_log(self, log_dir: Path, sampling_rate: float) -> Latencies | None:
        files = sorted(log_dir.glob(f"{LOG_PREFIX}.*"))
        if not files:
            return None
        latencies = pgbench_log.read_files(files)
        latencies.sampling_rate = sampling_rate
        return latencies

    def read(self, stdout: str, stderr: str, spec: PointSpec | None) -> tuple[Measurement, tuple[Sample, ...]]:
        return read(stdout, stderr, spec)

    def read_samples(self, stdout: str, stderr: str) -> tuple[Sample, ...]:
        """The interval series of a run that failed."""
        return series.tolerant(stdout + stderr, parse_progress_line)

    def parse_progress_line(self, line: str, lineno: int | None = None) -> Sample | None:
        return parse_progress_line(line, lineno)

    def estimate_prepare_s(self, spec: PointSpec) -> float:
        return 2 + spec.param("scale") / _LOAD_SCALE_PER_S



TOOL_IMPL = Pgbench()
