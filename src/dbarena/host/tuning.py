"""The kernel's settings that decided real results, read from /proc and /sys.

The CPU and memory say what a machine is; these say how its kernel was told to run it,
and each has moved a published figure on its own: huge pages (the kernel's pool; the
server's own setting is among its target facts), transparent huge pages and their
defragmentation, the preemption model (PostgreSQL halved its pgbench throughput on a
Linux that changed it), the CPU frequency governor and driver, the idle states a CPU may
sleep in, automatic NUMA balancing, and whether irqbalance spreads the interrupts.

Every fact has a value: what the file says, or NOT_EXPOSED where this machine has no
such file (a VM shows no cpufreq, a kernel built without NUMA balancing no sysctl).
The parsers are pure (a file's text in, a value out) and tested on captures of real
files (tests/fixtures/hostinfo/SOURCES.tsv); `read` is the only part that touches the
machine, under a root that tests point at a tree of fixtures.
"""

from __future__ import annotations

import dataclasses
import gzip
import platform
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

# The value of a fact whose file this machine does not have (or lets no one read).
NOT_EXPOSED = "not exposed"

# Preemption models, as the kernel names them (kernel/sched/core.c preempt_modes[]).
_MODELS = ("none", "voluntary", "full", "lazy")


@dataclass(frozen=True)
class Tuning:
    """The facts, each a count or a word, NOT_EXPOSED where missing. The names are the
    keys of the host facts they become (`facts()`)."""

    hugepages_total: int | str      # HugePages_Total: the pool of the default huge page size
    hugepages_free: int | str       # HugePages_Free, when dbarena looked (before the server started)
    hugepage_size_kib: int | str    # Hugepagesize: the default huge page size
    nr_hugepages: int | str         # /proc/sys/vm/nr_hugepages: the persistent pool asked for
    transparent_hugepage: str       # the bracketed choice of .../transparent_hugepage/enabled
    transparent_hugepage_defrag: str
    kernel_preemption: str          # none, voluntary, full, lazy, rt, or what could be told
    kernel_preemption_source: str   # where that came from (debugfs, the boot line, the config, uname)
    frequency_governor: str         # scaling_governor of every CPU ("performance (0-3), powersave (4-7)")
    frequency_driver: str           # scaling_driver (intel_pstate, acpi-cpufreq, amd-pstate-epp ...)
    idle_driver: str                # /sys/devices/system/cpu/cpuidle/current_driver
    idle_governor: str
    idle_states: str                # cpu0's states in order, "(disabled)" after those switched off
    numa_balancing: str             # off, on, memory tiering, or both
    irqbalance: str                 # running, not running, or not visible from here

    def facts(self) -> dict[str, int | str]:
        return dataclasses.asdict(self)


# Host facts that are these (stats/environment.py names them in what changed between runs).
FIELDS = tuple(f.name for f in dataclasses.fields(Tuning))


# ------------------------------------------------------------------ parsers (pure)

def parse_hugepages(meminfo: str, nr_hugepages: str) -> dict[str, int | str]:
    """The huge page pool from /proc/meminfo (HugePages_Total, HugePages_Free,
    Hugepagesize) and /proc/sys/vm/nr_hugepages; NOT_EXPOSED for each missing (a kernel
    without hugetlbfs prints no HugePages_ lines)."""
    values: dict[str, str] = {}
    for line in meminfo.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            values[key.strip()] = value.strip()

    def count(text: str | None) -> int | str:
        word = (text or "").split()
        return int(word[0]) if word and word[0].isdigit() else NOT_EXPOSED

    return {"hugepages_total": count(values.get("HugePages_Total")),
            "hugepages_free": count(values.get("HugePages_Free")),
            "hugepage_size_kib": count(values.get("Hugepagesize")),  # the kernel says "2048 kB"
            "nr_hugepages": count(nr_hugepages)}


def bracketed(text: str, open_: str = "[", close: str = "]") -> str:
    """The choice a sysfs file marks among its alternatives: 'always [madvise] never'
    -> 'madvise'; NOT_EXPOSED for an empty or unmarked file."""
    m = re.search(re.escape(open_) + r"([^" + re.escape(close) + r"]+)" + re.escape(close), text)
    return m[1].strip() if m else NOT_EXPOSED


def parse_sched_preempt(text: str) -> str | None:
    """/sys/kernel/debug/sched/preempt: the models this kernel can switch between, the
    current one in parentheses ('none voluntary (full) lazy '); None for no file."""
    found = bracketed(text, "(", ")")
    return None if found == NOT_EXPOSED else found


def parse_boot_preempt(cmdline: str) -> str | None:
    """The preempt= parameter of /proc/cmdline (a PREEMPT_DYNAMIC kernel's model at boot)."""
    for word in cmdline.split():
        if word == "--":  # what follows is init's, not the kernel's
            break
        if word.startswith("preempt="):
            return word.partition("=")[2] or None
    return None


def parse_config_preempt(config: str) -> tuple[str | None, bool]:
    """The preemption model a kernel config builds (CONFIG_PREEMPT_NONE=y ... _RT=y),
    and whether the kernel can switch it at boot or later (CONFIG_PREEMPT_DYNAMIC=y)."""
    chosen = {line.partition("=")[0] for line in config.splitlines() if line.endswith("=y")}
    model = next((name for name, option in (("rt", "CONFIG_PREEMPT_RT"), ("lazy", "CONFIG_PREEMPT_LAZY"),
                                            ("full", "CONFIG_PREEMPT"), ("voluntary", "CONFIG_PREEMPT_VOLUNTARY"),
                                            ("none", "CONFIG_PREEMPT_NONE"))
                  if option in chosen), None)
    return model, "CONFIG_PREEMPT_DYNAMIC" in chosen


def parse_uname_preempt(version: str) -> tuple[str | None, bool]:
    """What `uname -v` (/proc/sys/kernel/version) tells: init/Makefile writes PREEMPT_RT,
    PREEMPT_DYNAMIC or PREEMPT (a kernel built preemptible: full or lazy) after SMP, and
    nothing for none or voluntary. (model, dynamic)."""
    words = version.split()
    if "PREEMPT_RT" in words:
        return "rt", False
    if "PREEMPT_DYNAMIC" in words:
        return None, True
    if "PREEMPT" in words:
        return "full or lazy", False
    return ("none or voluntary", False) if words else (None, False)


def preemption(debugfs: str, cmdline: str, config: str, uname_version: str) -> tuple[str, str]:
    """(model, where it was read). The kernel's own answer where debugfs shows it; for a
    kernel that can switch, the model the boot line asked for, else the config's (both
    at boot: a switch through debugfs since is not seen); for one that cannot, its
    config, else what uname says."""
    rt = "PREEMPT_RT" in uname_version.split() or parse_config_preempt(config)[0] == "rt"
    live = parse_sched_preempt(debugfs)
    if live is not None:
        return (f"rt ({live})" if rt else live), "debugfs"
    configured, dynamic_config = parse_config_preempt(config)
    named, dynamic_uname = parse_uname_preempt(uname_version)
    if dynamic_config or dynamic_uname:
        boot = parse_boot_preempt(cmdline)
        if boot is not None:
            return boot, "boot parameter preempt="
        if configured is not None:
            return configured, "kernel config (the boot default)"
        return "switchable (PREEMPT_DYNAMIC), model not exposed", "uname"
    if configured is not None:
        return configured, "kernel config"
    if named is not None:
        return named, "uname"
    return NOT_EXPOSED, NOT_EXPOSED


def per_cpu(values: Mapping[int, str]) -> str:
    """One value for all CPUs ('performance'), or each value with its CPUs
    ('performance (0-3), powersave (4-7)'); NOT_EXPOSED for none."""
    found = {cpu: text.strip() for cpu, text in values.items() if text.strip()}
    if not found:
        return NOT_EXPOSED
    by_value: dict[str, list[int]] = {}
    for cpu in sorted(found):
        by_value.setdefault(found[cpu], []).append(cpu)
    if len(by_value) == 1:
        return next(iter(by_value))
    return ", ".join(f"{value} ({_ranges(cpus)})" for value, cpus in by_value.items())


def _ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (the kernel's notation; hostinfo.cpu_list's, which this
    module below hostinfo cannot import)."""
    runs: list[list[int]] = []
    for cpu in sorted(cpus):
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def idle_states(states: Iterable[tuple[str, str]]) -> str:
    """cpu0's idle states in their order, from each one's name and disable file: 'POLL,
    C1, C1E, C6 (disabled)'; NOT_EXPOSED for none (no cpuidle driver)."""
    names = [f"{name.strip()}{' (disabled)' if disable.strip() not in ('', '0') else ''}"
             for name, disable in states if name.strip()]
    return ", ".join(names) or NOT_EXPOSED


def numa_balancing(text: str) -> str:
    """kernel.numa_balancing, a bit mask (Documentation/admin-guide/sysctl/kernel.rst):
    1 balances memory among nodes, 2 promotes hot pages to faster memory tiers."""
    value = text.strip()
    if not value.isdigit():
        return NOT_EXPOSED
    bits = int(value)
    words = [w for bit, w in ((1, "on"), (2, "memory tiering")) if bits & bit]
    return ", ".join(words) or "off"


def irqbalance(process_names: Iterable[str]) -> str:
    """Whether an irqbalance daemon runs, from the names of the processes this one can
    see; where it sees no kernel thread (kthreadd), it is in a PID namespace of its own
    (a container) and cannot tell."""
    names = set(process_names)
    if "irqbalance" in names:
        return "running"
    if "kthreadd" in names:
        return "not running"
    return "not visible (a PID namespace of its own)"


# ------------------------------------------------------------------ the machine

def _read(path: Path) -> str:
    try:
        if path.suffix == ".gz":
            return gzip.decompress(path.read_bytes()).decode(errors="replace")
        return path.read_text(errors="replace")
    except (OSError, EOFError, gzip.BadGzipFile):
        return ""


def _numbered(directory: Path, pattern: str, prefix: str) -> list[tuple[int, Path]]:
    """Entries named prefix<N> under directory, in numeric order (state10 after state9)."""
    try:
        found = [(int(p.name[len(prefix):]), p) for p in directory.glob(pattern)
                 if p.name[len(prefix):].isdigit()]
    except OSError:
        return []
    return sorted(found)


def _process_names() -> list[str]:
    import psutil

    names = []
    for process in psutil.process_iter(["name"]):
        name = process.info.get("name")
        if isinstance(name, str):
            names.append(name)
    return names


def read(root: Path = Path("/"), process_names: Iterable[str] | None = None) -> Tuning:
    """These facts of the machine under `root` ('/': this one); process names from psutil
    unless given."""
    proc, cpu = root / "proc", root / "sys/devices/system/cpu"
    huge = parse_hugepages(_read(proc / "meminfo"), _read(proc / "sys/vm/nr_hugepages"))
    thp = root / "sys/kernel/mm/transparent_hugepage"
    if not thp.is_dir():  # Red Hat Enterprise Linux 6 named it its own way
        thp = root / "sys/kernel/mm/redhat_transparent_hugepage"
    version = _read(proc / "sys/kernel/version") or (platform.version() if root == Path("/") else "")
    release = _read(proc / "sys/kernel/osrelease").strip()
    config = _read(root / f"boot/config-{release}") if release else ""
    model, source = preemption(_read(root / "sys/kernel/debug/sched/preempt"), _read(proc / "cmdline"),
                               config or _read(proc / "config.gz"), version)
    cpus = _numbered(cpu, "cpu[0-9]*", "cpu")
    states = [(_read(p / "name"), _read(p / "disable")) for _, p in
              _numbered(cpu / "cpu0/cpuidle", "state[0-9]*", "state")]
    governor = _read(cpu / "cpuidle/current_governor") or _read(cpu / "cpuidle/current_governor_ro")
    return Tuning(
        hugepages_total=huge["hugepages_total"], hugepages_free=huge["hugepages_free"],
        hugepage_size_kib=huge["hugepage_size_kib"], nr_hugepages=huge["nr_hugepages"],
        transparent_hugepage=bracketed(_read(thp / "enabled")),
        transparent_hugepage_defrag=bracketed(_read(thp / "defrag")),
        kernel_preemption=model, kernel_preemption_source=source,
        frequency_governor=per_cpu({n: _read(p / "cpufreq/scaling_governor") for n, p in cpus}),
        frequency_driver=per_cpu({n: _read(p / "cpufreq/scaling_driver") for n, p in cpus}),
        idle_driver=_read(cpu / "cpuidle/current_driver").strip() or NOT_EXPOSED,
        idle_governor=governor.strip() or NOT_EXPOSED,
        idle_states=idle_states(states),
        numa_balancing=numa_balancing(_read(proc / "sys/kernel/numa_balancing")),
        irqbalance=irqbalance(_process_names() if process_names is None else process_names),
    )


def facts() -> dict[str, int | str]:
    """This machine's facts; never an exception (provenance must not stop a benchmark)."""
    try:
        return read().facts()
    except Exception:  # whatever a strange /sys does, the benchmark goes on
        return {}
