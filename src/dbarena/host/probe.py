"""A host probe: a few seconds of CPU, memory bandwidth and fsync latency measured with
sysbench on the machine that runs the server, so that a machine slower than its kind
(a noisy neighbour, a throttled or degraded cloud instance: two instances of one type
measured 1.6-2x apart in a public report) is seen before its results are trusted.

The parsers are pure (sysbench's text in, numbers out) and tested on captured outputs
(tests/fixtures/probe/); `probe` runs the tools; `planned_seconds` is the rule for how
long the probe before a study takes.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from dbarena import execute
from dbarena.errors import EnvironmentProblem
from dbarena.host import datadir, hostinfo

# About 30 seconds, as the issue asks: long enough for each part to run a few seconds
# past its start-up, short beside a study of minutes to hours.
DEFAULT_SECONDS = 30
# Each of the three parts needs at least one whole second (sysbench's --time is whole
# seconds): a shorter probe is none.
MIN_SECONDS = 3
# Before a study, the probe takes at most this share of the study's estimated time: a
# 40 s trial (--quick, an e2e test) is not made 75 % longer by its probe.
SHARE_OF_STUDY = 0.1
# The fsync part writes this block and fsyncs after each write, as a WAL flush does
# (PostgreSQL's WAL block), to a file of FILE_BYTES rewritten in a loop: small, so
# that preparing it costs nothing and it fits on any file system dbarena runs on.
BLOCK_BYTES = 8192
FILE_BYTES = 16 * 1024 * 1024
# The latency percentile the fsync part reports.
PERCENTILE = 99
# Shares of the probe's time: the fsync latency varies most, so it gets the most.
_SHARES = (("cpu", 1 / 3), ("memory", 1 / 6), ("fsync", 1 / 2))
# How long a part may take past its asked time (start-up, the file's preparation)
# before it is stopped and reported as a problem.
_GRACE_S = 60


class ProbeOutputError(ValueError):
    """sysbench printed something the parser does not recognise."""


@dataclass(frozen=True)
class Probe:
    """What one probe measured; a part that could not run is None, and `problems` says why."""

    seconds: int  # as asked (the three parts' --time together)
    threads: int  # the CPU and memory parts' threads: the hardware threads dbarena may use
    cpu_events_per_s: float | None  # sysbench cpu (primes up to 10000), all threads together
    memory_mib_per_s: float | None  # sysbench memory, 1 MiB blocks written, all threads together
    fsync_per_s: float | None  # sysbench fileio, one thread: a write and an fsync per event
    fsync_p99_ms: float | None  # the 99th percentile of one write + fsync
    directory: str  # where the fsync part wrote (the file system the server's data would use)
    fs: str | None  # that directory's file system type
    tool: str  # "sysbench 1.0.20"
    elapsed_s: float = 0.0  # how long the probe took, start-ups included
    # The best one-second rate of the CPU and memory parts (sysbench --report-interval=1):
    # what the machine can do when nothing else takes it, which other people's load on
    # a shared machine hardly moves, where it moves the mean 2x (tests/fixtures/probe/).
    # A throttled or degraded machine is slow in every second. None: no whole second.
    cpu_best_events_per_s: float | None = None
    memory_best_mib_per_s: float | None = None
    problems: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["problems"] = list(self.problems)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Probe:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        known["problems"] = tuple(known.get("problems") or ())
        return cls(**known)


# ------------------------------------------------------------------ parsers (pure)

_VERSION = re.compile(r"^sysbench (\S+)", re.MULTILINE)
_CPU = re.compile(r"^\s*events per second:\s*([0-9.]+)\s*$", re.MULTILINE)
_MEMORY = re.compile(r"^\s*[0-9.]+ MiB transferred \(([0-9.]+) MiB/sec\)\s*$", re.MULTILINE)
_FSYNCS = re.compile(r"^\s*fsyncs/s:\s*([0-9.]+)\s*$", re.MULTILINE)
# Interval reports: "[ 1s ] thds: 2 eps: 867.09 lat (ms,95%): 0.29", "[ 1s ] 46474.33 MiB/sec".
_CPU_SECOND = re.compile(r"^\[ *\d+s \] thds: \d+ eps: ([0-9.]+)", re.MULTILINE)
_MEMORY_SECOND = re.compile(r"^\[ *\d+s \] ([0-9.]+) MiB/sec\s*$", re.MULTILINE)
_PERCENTILE = re.compile(r"^\s*(\d+)(?:st|nd|rd|th) percentile:\s*([0-9.]+)\s*$", re.MULTILINE)


def _first(pattern: re.Pattern[str], text: str, what: str) -> str:
    m = pattern.search(text)
    if m is None:
        raise ProbeOutputError(f"sysbench printed no {what}")
    return m.group(1)


def parse_version(text: str) -> str:
    """'sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)' -> '1.0.20'."""
    return _first(_VERSION, text, "version")


def parse_cpu(text: str) -> float:
    """`sysbench cpu run` output -> events per second (all threads together)."""
    return float(_first(_CPU, text, "'events per second'"))


def best_second(pattern: re.Pattern[str], text: str) -> float | None:
    """The highest one-second rate of a part's interval reports; None without any."""
    rates = [float(m) for m in pattern.findall(text)]
    return max(rates) if rates else None


def parse_cpu_seconds(text: str) -> tuple[float, float | None]:
    """`sysbench cpu --report-interval=1 run` -> (events per second over the run, the
    best one-second rate)."""
    return parse_cpu(text), best_second(_CPU_SECOND, text)


def parse_memory_seconds(text: str) -> tuple[float, float | None]:
    """`sysbench memory --report-interval=1 run` -> (MiB per second over the run, the
    best one-second rate)."""
    return parse_memory(text), best_second(_MEMORY_SECOND, text)


def parse_memory(text: str) -> float:
    """`sysbench memory run` output -> MiB per second (all threads together)."""
    return float(_first(_MEMORY, text, "'MiB transferred'"))


def parse_fileio(text: str) -> tuple[float, int, float]:
    """`sysbench fileio run` output -> (fsyncs per second, the latency percentile
    reported (--percentile), that percentile in ms)."""
    fsyncs = float(_first(_FSYNCS, text, "'fsyncs/s'"))
    m = _PERCENTILE.search(text)
    if m is None:
        raise ProbeOutputError("sysbench printed no latency percentile")
    return fsyncs, int(m.group(1)), float(m.group(2))


# ------------------------------------------------------------------ the rule before a study


def planned_seconds(asked: int | None, study_s: float) -> int:
    """How long the probe before a study takes: `asked` when given (0: none), else
    DEFAULT_SECONDS or SHARE_OF_STUDY of the study's estimated time, whichever is
    shorter; under MIN_SECONDS, none."""
    seconds = asked if asked is not None else min(DEFAULT_SECONDS, int(study_s * SHARE_OF_STUDY))
    if seconds <= 0:
        return 0
    return max(seconds, MIN_SECONDS) if asked is not None else (seconds if seconds >= MIN_SECONDS else 0)


def split(seconds: int) -> dict[str, int]:
    """The probe's seconds shared among its parts, each at least one: 30 -> cpu 10,
    memory 5, fsync 15."""
    parts = {name: max(1, round(seconds * share)) for name, share in _SHARES[:-1]}
    parts[_SHARES[-1][0]] = max(1, seconds - sum(parts.values()))
    return parts


# ------------------------------------------------------------------ running it


def _sysbench(argv: list[str], cwd: str | None, timeout: float) -> str:
    done = execute.run(["sysbench", *argv], env={**os.environ, "LC_ALL": "C"}, cwd=cwd, timeout=timeout)
    if done.timed_out:
        raise ProbeOutputError(f"sysbench {argv[0]} did not end within {timeout:.0f} s")
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise ProbeOutputError(f"sysbench {argv[0]} failed: {last}")
    return done.stdout


def probe(seconds: int = DEFAULT_SECONDS, where: Path | None = None, threads: int | None = None,
          say: Callable[[str], None] | None = None) -> Probe:
    """Probe this machine for about `seconds`: sysbench cpu and memory on `threads`
    (default: the hardware threads dbarena may use), then one thread writing and
    fsyncing in a temporary directory made in `where` (default: the temporary
    directory, where throwaway instances keep their data unless told otherwise).
    A part that fails is None, with why in `problems`; no sysbench at all is an
    EnvironmentProblem."""
    if shutil.which("sysbench") is None:
        raise EnvironmentProblem("sysbench not found: the host probe runs it (apt-get install sysbench)")
    seconds = max(seconds, MIN_SECONDS)
    threads = threads or hostinfo.hardware_threads()
    parent = where or Path(tempfile.gettempdir())
    parts = split(seconds)
    problems: list[str] = []
    started = time.monotonic()
    version = ""
    values: dict[str, Any] = {}

    def part(name: str, argv: list[str], parse: Callable[[str], Any], cwd: str | None = None) -> None:
        nonlocal version
        if say is not None:
            say(f"probe: {name}, {parts[name]} s")
        try:
            text = _sysbench(argv, cwd, parts[name] + _GRACE_S)
            values[name] = parse(text)
            version = version or parse_version(text)
        except (ProbeOutputError, OSError) as exc:
            problems.append(f"{name}: {exc}")

    part("cpu", ["cpu", f"--threads={threads}", f"--time={parts['cpu']}", "--report-interval=1", "run"],
         parse_cpu_seconds)
    # 1 MiB blocks, a total no run reaches: the time ends the test, not the size.
    part("memory", ["memory", f"--threads={threads}", f"--time={parts['memory']}", "--memory-block-size=1M",
                    "--memory-total-size=1000T", "--report-interval=1", "run"], parse_memory_seconds)
    # One file, written block after block with an fsync after each write (seqwr wraps
    # round at its end), prepared first; in a directory of its own, removed after.
    fileio = ["fileio", "--file-num=1", f"--file-total-size={FILE_BYTES}"]
    directory = None
    try:
        directory = tempfile.mkdtemp(prefix="dbarena-probe-", dir=parent)
        _sysbench([*fileio, "prepare"], directory, _GRACE_S)
    except (ProbeOutputError, OSError) as exc:
        problems.append(f"fsync: cannot write in {parent}: {getattr(exc, 'strerror', None) or exc}")
    else:
        part("fsync", [*fileio, "--file-test-mode=seqwr", f"--file-block-size={BLOCK_BYTES}", "--file-fsync-all=on",
                       f"--percentile={PERCENTILE}", "--threads=1", f"--time={parts['fsync']}", "run"],
             parse_fileio, cwd=directory)
    finally:
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
    fsync = values.get("fsync")
    cpu, memory = values.get("cpu") or (None, None), values.get("memory") or (None, None)
    return Probe(
        seconds=seconds, threads=threads, cpu_events_per_s=cpu[0], memory_mib_per_s=memory[0],
        cpu_best_events_per_s=cpu[1], memory_best_mib_per_s=memory[1],
        fsync_per_s=fsync[0] if fsync else None, fsync_p99_ms=fsync[2] if fsync else None,
        directory=str(parent), fs=datadir.mount_of(str(parent.resolve()), _mounts()).get("fs"),
        tool=f"sysbench {version}" if version else "sysbench", elapsed_s=round(time.monotonic() - started, 1),
        problems=tuple(problems))


def _mounts() -> str:
    try:
        return Path("/proc/mounts").read_text()
    except OSError:
        return ""


# ------------------------------------------------------------------ words


def rows(p: Probe) -> list[tuple[str, str]]:
    """The probe as (what, value) rows, for the table `dbarena probe` prints."""
    def num(value: float | None, unit: str, digits: int = 0) -> str:
        return "-" if value is None else f"{value:,.{digits}f} {unit}"

    def best(value: float | None, mean: float | None, part: str, unit: str) -> str:
        # A part of one second reports no whole second (sysbench's report at 1 s and its
        # end coincide): said, not left as a bare dash beside a measured mean.
        if value is None and mean is not None:
            return f"- (its {split(p.seconds)[part]} s part had no whole second)"
        return num(value, unit)

    out = [
        (f"CPU ({p.threads} threads)", num(p.cpu_events_per_s, "events/s")),
        ("CPU, best second", best(p.cpu_best_events_per_s, p.cpu_events_per_s, "cpu", "events/s")),
        (f"memory write ({p.threads} threads)", num(p.memory_mib_per_s, "MiB/s")),
        ("memory write, best second", best(p.memory_best_mib_per_s, p.memory_mib_per_s, "memory", "MiB/s")),
        (f"fsync after each {BLOCK_BYTES // 1024} KiB write", num(p.fsync_per_s, "/s")),
        (f"fsync p{PERCENTILE}", num(p.fsync_p99_ms, "ms", 2)),
        ("fsync written in", f"{p.directory} ({p.fs or '?'})"),
        ("tool", p.tool),
        ("took", f"{p.elapsed_s:.0f} s"),
    ]
    out += [("problem", text) for text in p.problems]
    return out


def summary(p: Probe) -> str:
    """One line: what a run says once its probe is done."""
    parts = [f"CPU {p.cpu_events_per_s:,.0f} events/s" if p.cpu_events_per_s is not None else "CPU -",
             f"memory {p.memory_mib_per_s:,.0f} MiB/s" if p.memory_mib_per_s is not None else "memory -",
             f"fsync p{PERCENTILE} {p.fsync_p99_ms:.2f} ms" if p.fsync_p99_ms is not None else "fsync -"]
    tail = f" ({'; '.join(p.problems)})" if p.problems else ""
    return f"host probe: {', '.join(parts)} in {p.directory}{tail}"
