"""On-CPU profiles of a point's server (--profile, [profile]): perf sampling the
server's processes during the point's measured run, folded stacks after it.

`perf record -e cpu-clock:I -F FREQ -g -a` samples every CPU (its idle task left out)
while the tool runs, and only the server's samples are read back: those of its main
process (the postmaster, mariadbd) and of every process descended from it, found in the
recording's own record of forks (`perf report --tasks`), so that the backends
PostgreSQL forks as the tool connects are in, whenever they start, and another server's
or the tool's are not. Per-CPU sampling rather than perf following the server's
processes (`-p PID` with inheritance, which samples the same processes): per-task
events are switched out and in, with their timer, at every context switch of every
sampled process, which cost the server 10 to 16 % more CPU per transaction of a
select-only point here (bench/README.md), per-CPU ones nothing measurable. perf starts
with its events disabled (`-D -1`) and is told to enable them through its control FIFO;
its acknowledgement means it samples, and only then does the tool start. When the tool
exits the events are disabled, perf is stopped (SIGINT: it writes its file), and `perf
script --pid` prints the server's samples with their functions, folded by
stats/profiles.py. cpu-clock is a timer on each CPU, the same in a VM without hardware
counters as on a bare machine, so a sample is 1/FREQ s of a CPU's time wherever it ran.

Everything starts through the Executor; the files (perf.data, the FIFOs, perf's log)
are in the point's work directory, removed with it. Where perf is missing or may not
sample, `check` says why in a few words (run/session.py says it once and the run goes
on, or refuses where the study requires profiles).
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dbarena import execute
from dbarena.errors import ToolMissing
from dbarena.interfaces import Executor
from dbarena.model import Profile
from dbarena.stats import profiles

__all__ = ["Profiler", "Recording", "DEFAULT_FREQUENCY_HZ", "symbol_source", "SCRIPT_FIELDS"]

PERF = "perf"
# Samples a second of each CPU's time a server process takes (bench/overhead --profile
# and --cost measured what it costs: 10 to 40 us of CPU a sample, 0.1 to 0.4 % of a busy
# CPU at 99 Hz; an odd number, so that it does not beat in step with a timer of the
# server's).
DEFAULT_FREQUENCY_HZ = 99
# What `perf script` prints of each sample: what stats/profiles.fold reads.
SCRIPT_FIELDS = "comm,pid,tid,ip,sym,dso"
# The event sampled: each CPU's clock, its idle task left out (the I modifier).
EVENT = "cpu-clock:I"
_ATTACH_S = 30.0  # how long perf may take to attach to the server's processes
_DEBUG = Path("/usr/lib/debug")


def _first_line(text: str) -> str:
    """perf's own words on why it failed: its first line that says something (not its
    progress lines "[ perf record: ... ]")."""
    for line in text.splitlines():
        line = " ".join(line.split())
        if line and not line.startswith("[ perf record:") and not line.startswith("Events "):
            return line[:300]
    return "no reason given"


class Profiler:
    """Profiles the points of a run at `frequency_hz` through `executor`."""

    def __init__(self, executor: Executor, frequency_hz: int = DEFAULT_FREQUENCY_HZ, perf: str = PERF):
        self.executor = executor
        self.frequency_hz = frequency_hz
        self.perf = perf
        self.version = ""  # perf's version line, once check() has read it

    def sampling(self) -> list[str]:
        """perf record's options that say what it samples: every CPU's time but its idle
        task's, FREQ times a second, with the call chains."""
        return ["-e", EVENT, "-F", str(self.frequency_hz), "-g", "--no-buildid-cache", "-a"]

    def argv(self, work_dir: Path) -> list[str]:
        return [self.perf, "record", *self.sampling(), "-D", "-1",
                "--control", f"fifo:{work_dir / 'perf.ctl'},{work_dir / 'perf.ack'}", "-o", str(work_dir / "perf.data")]

    def check(self) -> str | None:
        """Why this machine cannot profile (perf missing, not permitted to sample, too old
        for a control FIFO), in a few words; None: it can. Samples `true` for an instant,
        as a point's server is sampled."""
        try:
            done = self.executor.run([self.perf, "--version"], timeout=30)
        except ToolMissing:
            return f"{self.perf} is not installed (not on PATH; Debian and Ubuntu: linux-perf or linux-tools)"
        if done.returncode != 0:
            return f"{self.perf} --version failed: {_first_line(done.stderr or done.stdout)}"
        self.version = " ".join(done.stdout.split())
        with tempfile.TemporaryDirectory(prefix="dbarena-perf-") as tmp:
            try:
                done = self.executor.run([self.perf, "record", *self.sampling(), "-o", str(Path(tmp) / "check.data"),
                                          "--", "true"], timeout=60, cwd=tmp)
            except ToolMissing:
                return f"{self.perf} is not installed (not on PATH)"
            if done.returncode != 0:
                why = _first_line(done.stderr or done.stdout)
                paranoid = _paranoid()
                return (f"{self.perf} may not sample here: {why}"
                        + (f" (kernel.perf_event_paranoid is {paranoid}: every CPU is sampled, which takes root, "
                           "CAP_PERFMON or a setting of 0 or less)"
                           if paranoid is not None and paranoid > 0 and os.geteuid() != 0 else ""))
        return None

    def start(self, server_pid: int, work_dir: Path) -> Recording | str:
        """perf sampling, in `work_dir`, for the server whose main process is `server_pid`;
        or why not."""
        import psutil  # (here: only a profiled point reads the server's process)

        try:
            binary = psutil.Process(server_pid).exe()
        except psutil.Error as exc:
            return f"the server's process could not be read ({exc})"
        for name in ("perf.ctl", "perf.ack"):
            os.mkfifo(work_dir / name, 0o600)
        # Its acknowledgements' reader first: perf may refuse a FIFO nobody reads yet.
        ack = os.open(work_dir / "perf.ack", os.O_RDONLY | os.O_NONBLOCK)
        try:
            proc = self.executor.spawn(self.argv(work_dir), log_path=work_dir / "perf.log")
        except ToolMissing:
            os.close(ack)
            return f"{self.perf} is not installed (not on PATH)"
        recording = Recording(self, proc, work_dir, server_pid, symbol_source(Path(binary)), ack=ack)
        problem = recording.enable()
        if problem is not None:
            recording.abandon()
            return problem
        return recording


def _paranoid() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    except (OSError, ValueError):
        return None


@dataclass
class Recording:
    """perf recording a point's server: enabled, then disabled when the tool exits,
    stopped, and read."""

    profiler: Profiler
    proc: subprocess.Popen[bytes]
    work_dir: Path
    server_pid: int  # the server's main process: its samples and its descendants' are read
    symbols: str
    control: int | None = None  # the control FIFO, written
    ack: int | None = None  # its acknowledgements, read

    def _log(self) -> str:
        try:
            return (self.work_dir / "perf.log").read_text(errors="replace")
        except OSError:
            return ""

    def _say(self, command: str, deadline: float) -> str | None:
        """A command to perf's control FIFO, and its acknowledgement awaited; why not."""
        assert self.control is not None and self.ack is not None
        os.write(self.control, f"{command}\n".encode())
        got = b""
        while b"ack" not in got:
            if self.proc.poll() is not None:
                return f"perf ended: {_first_line(self._log())}"
            left = deadline - time.monotonic()
            if left <= 0:
                return f"perf did not answer {command!r} within {_ATTACH_S:.0f} s"
            ready, _, _ = select.select([self.ack], [], [], min(left, 0.2))
            if ready:
                with contextlib.suppress(BlockingIOError):
                    got += os.read(self.ack, 64)
        return None

    def enable(self) -> str | None:
        """The FIFOs opened (once perf has them open) and the events enabled: every
        process attached. Why not, if not."""
        deadline = time.monotonic() + _ATTACH_S
        while self.control is None:
            try:
                self.control = os.open(self.work_dir / "perf.ctl", os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # (ENXIO: perf has not opened it yet)
                    raise
                if self.proc.poll() is not None:
                    return f"perf could not start: {_first_line(self._log())}"
                if time.monotonic() > deadline:
                    return f"perf did not start within {_ATTACH_S:.0f} s"
                time.sleep(0.02)
        return self._say("enable", deadline)

    def disable(self) -> None:
        """Sampling stopped (the tool has exited); perf still runs. Best effort: stop() ends it anyway."""
        if self.control is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                self._say("disable", time.monotonic() + 5)

    def _close(self) -> None:
        for fd in (self.control, self.ack):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.control = self.ack = None

    def abandon(self) -> None:
        """perf stopped, nothing read (a profile that could not start)."""
        self._close()
        execute.stop(self.proc, grace_s=10, first_signal=signal.SIGINT)

    def stop(self) -> None:
        """perf stopped as it stops on Ctrl-C: its file written whole."""
        self._close()
        execute.stop(self.proc, grace_s=120, first_signal=signal.SIGINT)

    def read(self) -> Profile | str:
        """The server's samples folded, with where their names came from; or why there
        are none."""
        data = self.work_dir / "perf.data"
        if not data.is_file():
            return f"perf wrote no samples: {_first_line(self._log())}"
        perf, run = self.profiler.perf, self.profiler.executor.run
        try:
            # The processes the recording saw, each with its parent: the server's are its
            # main process's descendants.
            tasks = run([perf, "report", "-i", str(data), "--tasks"], timeout=600, cwd=self.work_dir)
            if tasks.returncode != 0:
                return f"perf report --tasks failed: {_first_line(tasks.stderr or tasks.stdout)}"
            pids = profiles.descendants(tasks.stdout, self.server_pid)
            done = run([perf, "script", "-i", str(data), "--pid", ",".join(map(str, sorted(pids))),
                        "-F", SCRIPT_FIELDS], timeout=600, cwd=self.work_dir)
        except ToolMissing:
            return f"{perf} is no longer installed"
        if done.returncode != 0:
            return f"perf script failed: {_first_line(done.stderr or done.stdout)}"
        stacks = profiles.fold(done.stdout)
        if not stacks:
            return "perf took no sample of the server (it took no CPU time while the tool ran)"
        version = self.profiler.version or "perf"
        return Profile(folded=profiles.folded_text(stacks), frequency_hz=float(self.profiler.frequency_hz),
                       symbols=f"{version}; {self.symbols}")


# ------------------------------------------------------------------ symbols


def _sections(path: Path) -> tuple[set[str], str | None]:
    """An ELF file's section names and its GNU build id (hex), read from its section
    headers; (empty, None) where it is not an ELF file that reads."""
    try:
        with path.open("rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] not in (1, 2) or head[5] not in (1, 2):
                return set(), None
            wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
            if wide:
                shoff, = struct.unpack_from(order + "Q", head, 0x28)
                shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", head, 0x3A)
            else:
                shoff, = struct.unpack_from(order + "I", head, 0x20)
                shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", head, 0x2E)
            if not shoff or not shnum or shstrndx >= shnum or shnum > 10_000:
                return set(), None
            f.seek(shoff)
            table = f.read(shentsize * shnum)
            headers = []
            for k in range(shnum):
                at = k * shentsize
                if wide:
                    name, _, _, _, offset, size = struct.unpack_from(order + "IIQQQQ", table, at)
                else:
                    name, _, _, _, offset, size = struct.unpack_from(order + "IIIIII", table, at)
                headers.append((name, offset, size))
            _, str_offset, str_size = headers[shstrndx]
            f.seek(str_offset)
            strings = f.read(min(str_size, 1 << 20))
            names: dict[str, tuple[int, int]] = {}
            for name, offset, size in headers:
                end = strings.find(b"\0", name)
                names[strings[name:end if end >= 0 else None].decode("ascii", "replace")] = (offset, size)
            build_id = None
            if ".note.gnu.build-id" in names:
                offset, size = names[".note.gnu.build-id"]
                f.seek(offset)
                note = f.read(min(size, 4096))
                namesz, descsz, _ = struct.unpack_from(order + "III", note, 0)
                start = 12 + (namesz + 3) // 4 * 4
                build_id = note[start:start + descsz].hex() or None
            return set(names), build_id
    except (OSError, struct.error):
        return set(), None


def symbol_source(binary: Path) -> str:
    """Where perf finds the server binary's function names, in words: its symbol table,
    separate debug information, or its dynamic symbols alone (functions it does not
    export are then frames named by the binary, [postgres])."""
    sections, build_id = _sections(binary)
    if ".symtab" in sections:
        return f"{binary}: symbol table (.symtab)"
    if build_id is not None:
        debug = _DEBUG / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
        if debug.is_file():
            return f"{binary}: separate debug information ({debug})"
    if ".dynsym" in sections:
        return (f"{binary}: dynamic symbols only (.dynsym: functions it does not export show as "
                f"[{binary.name}])")
    return f"{binary}: no symbols perf can read"
